"""Configuration: ``config.toml`` < environment < flags, with ``AGENT_HOME`` relocating all.

The file lives in the platformdirs config dir (or ``$AGENT_HOME/config.toml``); state
(sessions, memory, trash) in the platformdirs state dir (or ``$AGENT_HOME/state``).  Reading
uses the stdlib ``tomllib``; writing goes through ``tomlkit`` so a user's comments and key
order survive every edit the program makes.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agent.contract.options import Option, OptionRegistry

if TYPE_CHECKING:
    from agent.boot.plugins import PluginHost
    from agent.contain.sandbox import Sandbox
    from agent.loop.permission_flags import FlagRules
    from agent.state.schema import StoreSchema


class ConfigError(Exception):
    """A config problem the user must fix; the message names the file, line or key."""


#: Options every build has; plugins add theirs through ``agent_addoption``.
CORE_OPTIONS: tuple[Option, ...] = (
    Option("provider", help="provider protocol: openai or anthropic (or a plugin's)",
           flag="--provider", env="AGENT_PROVIDER", metavar="NAME"),
    Option("model", help="model id", flag="--model", env="AGENT_MODEL", metavar="ID"),
    Option("base_url", help="API root URL of the endpoint", flag="--base-url",
           env="AGENT_BASE_URL", metavar="URL"),
    Option("api_key", help="API key (prefer the provider's environment variable)",
           env="AGENT_API_KEY"),
    Option("thinking", default="medium", help="thinking level",
           flag="--think", env="AGENT_THINK",
           choices=("off", "low", "medium", "high", "max"), metavar="LEVEL"),
    Option("max_steps", type="int", default=50, help="model requests per turn before stopping",
           flag="--max-steps", env="AGENT_MAX_STEPS", metavar="N", minimum=1),
    Option("max_tokens", type="int", default=16000, help="output token cap per request",
           minimum=1),
    Option("max_retries", type="int", default=3, help="retries of a failed model request",
           minimum=0),
    Option("retry_after_cap", type="float", default=60.0,
           help="longest retry-after wait obeyed, in seconds; a server asking for more fails "
                "at once", minimum=0),
    Option("retry_backoff", type="float", default=0.5,
           help="seconds before the first retry when the server names no delay (retry-after); "
                "doubled for each further retry, at most 8 s", minimum=0),
    Option("request_timeout", type="float", default=600.0,
           help="seconds the HTTP layer waits to connect or for any bytes (per socket "
                "operation)", minimum=0.1),
    Option("stream_idle_timeout", type="float", default=60.0,
           help="seconds a model stream may go without content (keep-alives and pings do not "
                "count) before it is cut; a stall before any output is retried",
           env="AGENT_STREAM_IDLE_TIMEOUT", minimum=0.1),
    Option("request_deadline", type="float", default=1800.0,
           help="seconds one model request may take in all, retries and their waits included",
           env="AGENT_REQUEST_DEADLINE", minimum=0.1),
    Option("yolo", type="bool", default=False,
           help="approve every 'ask' that can be checked: deny rules and guards still apply, "
                "and a command that cannot be checked without running it (python3 -c ..., "
                "$CMD x) is denied, not approved (yolo_unresolved)", flag="--yolo"),
    Option("sandbox", default="workspace-write",
           help="walls around every process agent starts: workspace-write, read-only, or "
                "off (docs/security.md)",
           flag="--sandbox", env="AGENT_SANDBOX",
           choices=("workspace-write", "read-only", "off"), metavar="MODE"),
    Option("sandbox_network", type="bool", default=False,
           help="let sandboxed commands use the network without asking per command"),
    Option("sandbox_writable", type="list", default=[],
           help="extra directories sandboxed commands may write (caches, for example)"),
    Option("sandbox_env_passthrough", type="list", default=[],
           help="credential-looking environment variables commands still get (names; "
                "shell_env.include says the same with patterns)"),
    Option("shell_env", type="dict", default={},
           help="the environment of commands, git and hooks: include = [patterns] brings "
                "credential variables back, exclude = [patterns] takes more out, set = "
                "{NAME = value} adds (docs/security.md)"),
    Option("sandbox_bwrap", help="path of the bwrap binary to use (default: the bundled one, "
                                 "then bwrap on PATH)", metavar="PATH"),
    Option("permission_mode", default="default", choices=("default", "accept-edits", "plan"),
           help="default: rules and the default policy; accept-edits: also allow edits "
                "inside the workspace; plan: read-only (docs/permissions.md)",
           flag="--permission-mode", env="AGENT_PERMISSION_MODE", metavar="MODE"),
    Option("yolo_unresolved", default="deny", choices=("ask", "deny"),
           help="under --yolo, what happens to a command that cannot be checked without "
                "running it (a variable as the program, python -c, a function shadowing a "
                "command): deny it, or ask as without --yolo (docs/permissions.md)"),
    Option("approval_guard", type="float", default=0.4,
           help="seconds an approval dialog must be on screen, with no key typed, before a "
                "key answers it; keys typed sooner go to the prompt", minimum=0),
    Option("guard_timeout", type="float", default=2.0,
           help="seconds a guard plugin may take to judge one call; a slower guard denies it",
           minimum=0.01),
    Option("after_turn_timeout", type="float", default=120.0,
           help="seconds the next turn, and the end of a run, wait for a plugin's after-turn "
                "work (format); what still runs then is cancelled", minimum=0.1),
    Option("tool_sets", type="list", default=["core", "edit-plus", "git"],
           help="tool sets offered: core (always), edit-plus, git, net"),
    Option("stdin_max_bytes", type="int", default=256 * 1024,
           help="bytes of piped stdin agent -p attaches to its prompt; the rest is left out, "
                "with a note saying so", env="AGENT_STDIN_MAX_BYTES", minimum=0),
    Option("permission", type="dict", default={}, help="permission rules (docs/permissions.md)"),
    Option("secrets_allow", type="list", default=[],
           help="globs of secret-looking paths the tools may read and write anyway "
                "(user config only; docs/security.md)"),
    Option("plugins", type="dict", default={},
           help="plugins.disabled / plugins.enabled: lists of plugin names"),
)


@dataclass
class Paths:
    """Where config and state live."""

    config_dir: Path
    state_dir: Path
    home: Path | None = None

    @property
    def config_file(self) -> Path:
        return self.config_dir / "config.toml"

    @classmethod
    def resolve(cls, env: Mapping[str, str] | None = None) -> Paths:
        env = os.environ if env is None else env
        home = env.get("AGENT_HOME")
        if home:
            root = Path(home).expanduser().resolve()
            return cls(config_dir=root, state_dir=root / "state", home=root)
        import platformdirs

        return cls(
            config_dir=Path(platformdirs.user_config_dir("agent", appauthor=False)),
            state_dir=Path(platformdirs.user_state_dir("agent", appauthor=False)),
        )


def read_toml(path: Path) -> dict[str, Any]:
    """Parse a TOML file; a syntax error becomes one :class:`ConfigError` naming file and line."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: cannot be read: {exc}") from None
    import tomllib  # here: a start without a config file (--help in a fresh home) skips it

    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        # tomllib says "... (at line 3, column 7)": keep that, lead with the file.
        raise ConfigError(f"{path}: invalid TOML: {exc}") from None


_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}


def _coerce(option: Option, value: Any, where: str) -> Any:
    """Check (and, for strings from env/flags, convert) a value to the option's type."""
    kind = option.type
    try:
        if kind == "str":
            if not isinstance(value, str):
                raise TypeError
        elif kind == "int":
            if isinstance(value, str):
                value = int(value)
            if not isinstance(value, int) or isinstance(value, bool):
                raise TypeError
        elif kind == "float":
            if isinstance(value, str):
                value = float(value)
            if not isinstance(value, (int, float)) or isinstance(value, bool):
                raise TypeError
            value = float(value)
        elif kind == "bool":
            if isinstance(value, str):
                low = value.strip().lower()
                if low not in _TRUE | _FALSE:
                    raise ValueError
                value = low in _TRUE
            if not isinstance(value, bool):
                raise TypeError
        elif kind == "list":
            if isinstance(value, str):
                value = [v.strip() for v in value.split(",") if v.strip()]
            if not isinstance(value, list):
                raise TypeError
        elif kind == "dict":
            if not isinstance(value, dict):
                raise TypeError
    except (TypeError, ValueError):
        raise ConfigError(
            f"{where}: '{option.key}' must be {_article(kind)}, got {value!r}") from None
    if kind in ("int", "float"):
        if value != value:  # NaN
            raise ConfigError(f"{where}: '{option.key}' must be a number, got nan")
        if option.minimum is not None and value < option.minimum:
            raise ConfigError(f"{where}: '{option.key}' must be at least {option.minimum:g}, "
                              f"got {value!r}")
    if option.choices and value not in option.choices:
        raise ConfigError(
            f"{where}: '{option.key}' is {value!r}; expected one of {', '.join(option.choices)}")
    return value


def _article(kind: str) -> str:
    return {"int": "an integer", "float": "a number", "bool": "true or false",
            "list": "a list", "dict": "a table", "str": "a string"}[kind]


@dataclass
class Config:
    """The resolved configuration of one run.

    ``get(key)`` returns the effective value: flag, else env, else file, else the option's
    default.  ``source(key)`` says where it came from.  ``file_data`` is the raw file.
    Everything else a run carries is a declared field below, so core and plugins never pass
    values to each other through an untyped dictionary.
    """

    paths: Paths
    options: OptionRegistry
    file_data: dict[str, Any] = field(default_factory=dict)
    env_values: dict[str, Any] = field(default_factory=dict)
    flag_values: dict[str, Any] = field(default_factory=dict)
    workspace: Path = field(default_factory=Path.cwd)
    headless: bool = False
    plugins: PluginHost | None = None  # for plugins registering stateful objects
    notices: list[str] = field(default_factory=list)
    #: the enabled plugins' tables (``agent_store_schema``), collected by ``Hooks.configure``
    store_schemas: list[StoreSchema] = field(default_factory=list)
    #: the workspace's ``.agent/config.toml`` as read (empty when there is none)
    project_config: dict[str, Any] = field(default_factory=dict)
    #: its ``[permission]`` table: a project may tighten permissions, never loosen them
    project_permission: dict[str, Any] = field(default_factory=dict)
    #: this run's ``--allow``/``--deny`` rules (an :class:`agent.loop.permission_flags.FlagRules`)
    permission_flags: FlagRules | None = None
    #: ``--no-plugins``: only agent's own builtins (registry manifests stay out too)
    no_plugins: bool = False
    #: ``--allowedTools``/``--disallowedTools`` rules in Claude Code's syntax, by decision
    #: (``allow``/``deny``), as typed: a plugin that reads that syntax translates them into
    #: :attr:`permission_flags` and empties this; left over, the run does not start
    foreign_tool_rules: dict[str, list[str]] = field(default_factory=dict)
    #: the saved session ``-c``/``-r`` resolved to, for the front end to resume
    resume_session_id: str | None = None
    #: ``--session-id`` of a session not saved yet: the new session takes this id
    new_session_id: str | None = None
    #: the run's :class:`agent.contain.sandbox.Sandbox`, built on first use by ``sandbox_for``
    sandbox: Sandbox | None = None
    #: plugins' private run state, keyed by plugin name (no other plugin or the core reads it)
    extra: dict[str, Any] = field(default_factory=dict)

    def get(self, key: str, default: Any = None) -> Any:
        for layer in (self.flag_values, self.env_values, self.file_data):
            if key in layer:
                return layer[key]
        option = self.options.get(key)
        if option is not None and option.default is not None:
            return _copy(option.default)
        return default

    def __getitem__(self, key: str) -> Any:
        return self.get(key)

    def source(self, key: str) -> str:
        for name, layer in (("flag", self.flag_values), ("env", self.env_values),
                            ("file", self.file_data)):
            if key in layer:
                return name
        return "default"

    @property
    def state_dir(self) -> Path:
        return self.paths.state_dir

    @property
    def config_file(self) -> Path:
        return self.paths.config_file

    def plugin_list(self, which: str) -> list[str]:
        """``plugins.disabled`` or ``plugins.enabled`` from the file."""
        section = self.file_data.get("plugins", {})
        value = section.get(which, []) if isinstance(section, dict) else []
        return [str(v) for v in value] if isinstance(value, list) else []


def _copy(value: Any) -> Any:
    if isinstance(value, list):
        return list(value)
    if isinstance(value, dict):
        return dict(value)
    return value


def build(
    paths: Paths,
    options: OptionRegistry,
    file_data: dict[str, Any],
    flag_values: Mapping[str, Any],
    env: Mapping[str, str] | None = None,
    workspace: Path | None = None,
) -> Config:
    """Validate every layer against the declared options and assemble the :class:`Config`."""
    env = os.environ if env is None else env
    where = str(paths.config_file)
    checked_file: dict[str, Any] = {}
    for key, value in file_data.items():
        option = options.get(key)
        # Unknown keys are kept (a plugin not loaded this run may own them).
        checked_file[key] = _coerce(option, value, where) if option else value
    if "shell_env" in checked_file:
        from agent.contain.envpolicy import shell_env_problems

        for problem in shell_env_problems(checked_file["shell_env"]):
            raise ConfigError(f"{where}: {problem}")
    env_values: dict[str, Any] = {}
    flags: dict[str, Any] = {}
    for option in options:
        if option.env and env.get(option.env) not in (None, ""):
            env_values[option.key] = _coerce(option, env[option.env], f"${option.env}")
        if option.key in flag_values and flag_values[option.key] is not None:
            flags[option.key] = _coerce(option, flag_values[option.key], option.flag or "flag")
    return Config(paths=paths, options=options, file_data=checked_file, env_values=env_values,
                  flag_values=flags, workspace=(workspace or Path.cwd()).resolve())


def update_file(path: Path, changes: Mapping[str, Any]) -> None:
    """Set top-level keys (dotted keys reach into tables) in ``path``, keeping comments.

    A value of None removes the key.  The file is written atomically.
    """
    import tomlkit

    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        text = ""
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: cannot be read: {exc}") from None
    if text and not text.endswith("\n"):
        # tomlkit appends new keys straight after a last line without its newline
        # ("a.b = 1model = ..."): give the document one first.
        text += "\n"
    try:
        doc = tomlkit.parse(text)
    except Exception as exc:
        raise ConfigError(f"{path}: invalid TOML: {exc}") from None
    for dotted, value in changes.items():
        *parents, leaf = dotted.split(".")
        table: Any = doc
        for depth, part in enumerate(parents):
            if part not in table:
                table[part] = tomlkit.table()
            table = table[part]
            if not isinstance(table, dict):
                where = ".".join(parents[:depth + 1])
                raise ConfigError(f"{path}: '{where}' is not a table, so '{dotted}' cannot be "
                                  "set; fix or remove it")
        if value is None:
            if leaf in table:
                del table[leaf]
        else:
            table[leaf] = value
    updated = tomlkit.dumps(doc)
    import tomllib

    try:  # never replace a working file with one the loader would refuse
        tomllib.loads(updated)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: could not be updated without breaking it ({exc}); "
                          "edit it by hand") from None
    from agent.contain.private import private_dir, rewrite_mode
    from agent.lib.atomic import AtomicWriteError, atomic_write

    try:  # all or nothing: a full or read-only disk leaves the file as it was
        # The file may hold an API key: 0600 when new, and a rewrite keeps or tightens its
        # mode (never back to 0644); its directory is 0700.
        if not path.parent.exists():
            private_dir(path.parent)
        atomic_write(path, updated, make_parents=True, mode=rewrite_mode(path))
    except AtomicWriteError as exc:
        raise ConfigError(str(exc)) from None
