"""Custom commands: markdown prompt templates in .agent/commands and the config dir as /commands.

``.agent/commands/review-pr.md`` becomes ``/review-pr``; running it fills the template with the
command's arguments and sends the result as a normal prompt.  A project file overrides a user
file of the same name; neither can replace a built-in or plugin command.  See
``docs/commands.md``.
"""

from __future__ import annotations

import inspect
import logging
import os
import re
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agent import SlashCommand, hookimpl
from agent.contain.paths import jail
from agent.contain.secrets import SecretsPolicy
from agent.contract.tools import Effects, ToolError
from agent.lib import frontmatter
from agent.loop import permissions
from agent.shell.parse import split_words

log = logging.getLogger("agent.custom_commands")

NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:-]{0,63}$")
#: Templates larger than this are not read (bytes).
TEMPLATE_CAP = 200_000
#: Characters of one included file, of all included files, and how many files.
INCLUDE_CAP = 30_000
TOTAL_INCLUDE_CAP = 100_000
MAX_INCLUDES = 20
DESCRIPTION_CAP = 100

# One pass over the template finds every placeholder, so text that a substitution brings in
# (arguments, file contents) is never itself expanded.
_TOKEN = re.compile(r"\\(?P<escaped>[$@])|\$(?P<all>ARGUMENTS)|\$(?P<index>[1-9])"
                    r"|(?<!\S)@(?P<path>\S+)")
# Punctuation that ends a sentence rather than a path ("see @README.md.").
_TRAILING = ".,;:!?)]}'\"`"


# ---- expansion (pure) ---------------------------------------------------------------------------


class IncludeError(Exception):
    """Why a file cannot be included; ``missing`` for a path that does not exist."""

    def __init__(self, message: str, *, missing: bool = False) -> None:
        super().__init__(message)
        self.missing = missing


#: ``read(path) -> text`` for ``@path``; raises :class:`IncludeError`.
Reader = Callable[[str], str]


@dataclass
class Expansion:
    """The prompt a template expands to, the files it inlined, and what went wrong."""

    text: str
    included: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


def split_arguments(arguments: str) -> list[str]:
    """Shell-like words: quotes group (``"a b" c`` → ``a b``, ``c``); an unbalanced quote
    falls back to splitting on whitespace."""
    return split_words(arguments)


def expand(template: str, arguments: str, read: Reader | None = None, *,
           total_cap: int = TOTAL_INCLUDE_CAP, max_includes: int = MAX_INCLUDES) -> Expansion:
    """Fill ``template``: ``$ARGUMENTS`` is the whole argument text, ``$1``..``$9`` its words
    (empty when missing), ``@path`` the contents of that file (through ``read``; without a
    reader it stays as written), ``\\$`` and ``\\@`` a literal ``$`` and ``@``."""
    words = split_arguments(arguments)
    result = Expansion("")
    budget = [total_cap]
    seen: set[str] = set()

    def substitute(m: re.Match[str]) -> str:
        if m.group("escaped"):
            return m.group("escaped")
        if m.group("all"):
            return arguments.strip()
        if m.group("index"):
            i = int(m.group("index")) - 1
            return words[i] if i < len(words) else ""
        return _include(m.group("path"), read, result, budget, seen, max_includes)

    result.text = _TOKEN.sub(substitute, template)
    return result


def _include(raw: str, read: Reader | None, result: Expansion, budget: list[int],
             seen: set[str], max_includes: int) -> str:
    path = raw.rstrip(_TRAILING)
    trail = raw[len(path):]
    if read is None or not path:
        return "@" + raw
    if path in seen:
        return f"{path} (included above){trail}"
    if len(result.included) >= max_includes:
        result.problems.append(f"@{path} not included: more than {max_includes} files")
        return "@" + raw
    try:
        text = read(path)
    except IncludeError as exc:
        # "@decorator" or "@user" in prose is not a path; stay quiet about those.
        if not (exc.missing and "/" not in path and "." not in path):
            result.problems.append(f"@{path} not included: {exc}")
        return "@" + raw
    if len(text) > budget[0]:
        result.problems.append(f"@{path} not included: the included files would exceed "
                               f"{TOTAL_INCLUDE_CAP:,} characters")
        return "@" + raw
    budget[0] -= len(text)
    seen.add(path)
    result.included.append(path)
    return f'<file path="{path}">\n{text.rstrip()}\n</file>{trail}'


# ---- reading files from the workspace -------------------------------------------------------


def workspace_reader(workspace: Path, user_rules: Any = None, project_rules: Any = None, *,
                     cap: int = INCLUDE_CAP, secrets_allow: Any = ()) -> Reader:
    """A :data:`Reader` jailed to ``workspace`` that refuses what the permission rules deny
    ``read_file`` (``.env`` files and keys by default) and what the secrets policy refuses
    (only ``secrets_allow`` opens a secret: a project's command file is untrusted text),
    binary files and directories, and cuts files at ``cap`` characters."""
    user = permissions.parse_rules(user_rules or {})
    project = permissions.strip_allows(permissions.parse_rules(project_rules or {}))
    policy = SecretsPolicy(workspace, secrets_allow or ())

    def read(path: str) -> str:
        try:
            real = jail(workspace, path)
        except ToolError as exc:
            raise IncludeError(str(exc)) from None
        verdict = permissions.decide("read_file", Effects(reads=(path,)), user, project)
        if verdict.decision == "deny":
            raise IncludeError("the permission rules deny reading it")
        secret = policy.check(path)
        if secret is not None:
            raise IncludeError(f"the secrets policy refuses it ({secret.why})")
        if not real.exists():
            raise IncludeError("no such file", missing=True)
        if not real.is_file():
            raise IncludeError("not a file")
        try:
            with open(real, "rb") as fh:
                data = fh.read(cap * 4 + 1)
        except OSError as exc:
            raise IncludeError(f"cannot be read: {exc.strerror or exc}") from None
        if b"\x00" in data[:8192]:
            raise IncludeError("binary file")
        text = data.decode("utf-8", errors="replace")
        if len(text) > cap or len(data) > cap * 4:
            size = real.stat().st_size
            text = text[:cap] + (f"\n[... cut at {cap:,} characters; the file has "
                                 f"{size:,} bytes]")
        return text

    return read


# ---- command files ----------------------------------------------------------------------------


@dataclass(frozen=True)
class CustomCommand:
    """One template file: ``origin`` is ``project`` or ``user``."""

    name: str
    path: Path
    origin: str
    description: str = ""
    agent: str = ""
    body: str = ""
    hint: str = ""  # argument-hint: what the arguments are, for the menu


#: origins whose files are Claude Code's or Codex's (frontmatter read leniently, as they do)
FOREIGN = frozenset({"claude project", "claude user", "codex"})


def read_command(path: Path, origin: str, name: str | None = None) -> CustomCommand | str:
    """The command in ``path`` (called ``name``, default the file's stem), or why it is not
    one."""
    if name is None:
        name = path.name[:-len(".md")] if path.name.endswith(".md") else path.name
    if not NAME_RE.match(name):
        return f"{name!r} is not a command name (letters, digits, . _ -; at most 64)"
    try:
        if path.stat().st_size > TEMPLATE_CAP:
            return f"larger than {TEMPLATE_CAP:,} bytes"
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        return f"cannot be read: {exc}"
    doc = frontmatter.parse(text, lenient=origin in FOREIGN)
    if doc.problem:
        return doc.problem
    body = doc.body.strip()
    if not body:
        return "the template is empty"
    description = " ".join(doc.meta.get("description", "").split())
    if not description:
        first = next((ln.strip() for ln in body.splitlines() if ln.strip()), "")
        description = first.lstrip("#").strip()
    if len(description) > DESCRIPTION_CAP:
        description = description[:DESCRIPTION_CAP - 3].rstrip() + "..."
    hint = " ".join(doc.meta.get("argument-hint", "").split())
    return CustomCommand(name, path, origin, description, doc.meta.get("agent", "").strip(),
                         body, hint)


def command_dirs(workspace: Path, config_dir: Path,
                 home: Path | None = None) -> list[tuple[str, Path]]:
    """``(origin, directory)`` in override order (the project's win; ours win over Claude
    Code's and Codex's).  ``home`` adds ``~/.codex/prompts``, ``~/.claude/commands`` and the
    project's ``.claude/commands``."""
    dirs: list[tuple[str, Path]] = []
    if home is not None:
        dirs += [("codex", Path(home) / ".codex" / "prompts"),
                 ("claude user", Path(home) / ".claude" / "commands")]
    dirs.append(("user", Path(config_dir) / "commands"))
    if home is not None:
        dirs.append(("claude project", Path(workspace) / ".claude" / "commands"))
    dirs.append(("project", Path(workspace) / ".agent" / "commands"))
    return dirs


def _files(origin: str, directory: Path) -> list[tuple[str, Path]]:
    """``(command name, file)`` of one directory: Claude Code's nest (``frontend/x.md`` is
    ``/frontend:x``), Codex's prompts are ``/prompts:x``, ours are flat."""
    try:
        if origin in ("claude project", "claude user"):
            paths = sorted(p for p in directory.rglob("*.md"))
        else:
            paths = sorted(p for p in directory.iterdir() if p.name.endswith(".md"))
    except OSError:
        return []
    out = []
    for path in paths:
        parts = path.relative_to(directory).with_suffix("").parts
        name = ":".join(parts)
        if origin == "codex":
            name = "prompts:" + name
        out.append((name, path))
    return out


def claude_home(config: Any) -> Path | None:
    """The home whose Claude Code and Codex commands are read (None: ``compat = false``)."""
    if config.get("compat") is False:
        return None
    return Path(config.get("compat_home") or os.path.expanduser("~"))


def discover(workspace: Path, config_dir: Path, home: Path | None = None
             ) -> tuple[dict[str, CustomCommand], list[str]]:
    """Every command file, by name, and the files skipped (with the reason)."""
    found: dict[str, CustomCommand] = {}
    skipped: list[str] = []
    for origin, directory in command_dirs(workspace, config_dir, home):
        for name, path in _files(origin, directory):
            if not path.is_file():
                continue
            command = read_command(path, origin, name)
            if isinstance(command, str):
                skipped.append(f"{path}: {command}")
                log.warning("custom command %s skipped: %s", path, command)
            else:
                found[command.name] = command
    return found, skipped


# ---- running ------------------------------------------------------------------------------------


def _reader_for(config: Any) -> Reader:
    return workspace_reader(Path(config.workspace), config.get("permission", {}),
                            config.project_permission,
                            secrets_allow=config.get("secrets_allow") or ())


async def run_command(app: Any, args: str, command: CustomCommand, config: Any) -> str | None:
    """Re-read the template (edits apply without a restart), expand it and start the turn."""
    current = read_command(command.path, command.origin, command.name)
    if isinstance(current, str):
        return _fail(app, f"/{command.name}: {command.path} {current}")
    expansion = expand(current.body, args, _reader_for(config))
    warn = getattr(app, "warn", None)
    for problem in expansion.problems:
        if callable(warn):
            warn(problem)
    if current.agent:
        switch = getattr(getattr(app, "commands", None), "get", lambda name: None)("agent")
        if switch is None:
            if callable(warn):
                warn(f"/{command.name} asks for agent {current.agent}, but there is no /agent "
                     "command; running with the current agent")
        else:
            out = switch.run(app, current.agent)
            if inspect.isawaitable(out):
                out = await out
            if isinstance(out, str) and callable(getattr(app, "notice", None)):
                app.notice(out)
    # run_prompt starts the turn without echoing the (possibly long) prompt as typed input,
    # and never reads it as a slash command.
    for name in ("run_prompt", "submit"):
        start = getattr(app, name, None)
        if callable(start):
            start(expansion.text)
            return None
    return expansion.text


def _fail(app: Any, message: str) -> str | None:
    error = getattr(app, "error", None)
    if callable(error):
        error(message)
        return None
    return message


def _taken_names(config: Any) -> set[str]:
    """Names and aliases of every command the other plugins register (custom commands never
    replace them).  Their ``agent_register_commands`` is called with a recording
    ``register``: registering commands only builds objects."""
    taken: set[str] = set()
    host = getattr(config, "plugins", None)
    pm = getattr(host, "pm", None)
    if pm is None:
        return taken
    me = sys.modules[__name__]

    def record(cmd: SlashCommand) -> None:
        taken.add(cmd.name)
        taken.update(cmd.aliases)

    _recording.active = True
    try:
        for impl in pm.hook.agent_register_commands.get_hookimpls():
            if impl.plugin is me or impl.hookwrapper or impl.wrapper:
                continue
            kwargs = {"register": record, "config": config}
            try:
                impl.function(**{k: kwargs[k] for k in impl.argnames})
            except Exception:  # that plugin's own registration reports its failure
                continue
    finally:
        _recording.active = False
    return taken


#: set while :func:`_taken_names` records the other plugins' commands: this plugin's own
#: registration, reached through its lazy stand-in (which is not this module), then adds
#: nothing, so its commands never count as taken by themselves
_recording = threading.local()


@hookimpl
def agent_register_commands(register, config):
    if getattr(_recording, "active", False):
        return
    commands, _ = discover(Path(config.workspace), Path(config.paths.config_dir),
                           claude_home(config))
    taken = _taken_names(config) if commands else set()
    for command in commands.values():
        if command.name in taken:
            log.warning("custom command %s ignored: /%s is already a command",
                        command.path, command.name)
            continue

        def run(app: Any, args: str, _command: CustomCommand = command) -> Any:
            return run_command(app, args, _command, config)

        where = WHERE.get(command.origin, "your commands")
        register(SlashCommand(command.name, f"{command.description} ({where})", run,
                              args=command.hint or "[arguments]", takes_args=True,
                              expands=True))


WHERE = {"project": ".agent/commands", "claude project": ".claude/commands",
         "claude user": "~/.claude/commands", "codex": "~/.codex/prompts"}

