"""Finding and reading Claude Code's and Codex's setup files.

Project (the workspace, so a cloned repository's): ``.mcp.json``, ``.claude/settings.json``,
``.claude/settings.local.json``.  User (the home directory, the person's own):
``~/.claude.json`` (``mcpServers``, and ``projects.<workspace>.mcpServers``),
``~/.claude/settings.json`` and ``~/.codex/config.toml`` (``[mcp_servers]``).

Everything read is kept with where it came from; what has no counterpart here is listed in
``ignored``, one line per item.  A file that cannot be parsed is named there too and
contributes nothing.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .rules import Translated, server_name, translate

#: the project files whose content the one-time approval covers, relative to the workspace
PROJECT_FILES = (".mcp.json", ".claude/settings.json", ".claude/settings.local.json")
#: settings keys read here; any other top-level key of a settings file is reported
SETTINGS_KEYS = frozenset({"permissions", "hooks", "$schema"})

_ENV_REF = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")


@dataclass
class Hook:
    """One command hook: its event, tool matcher, command, timeout and where it came from."""

    event: str
    matcher: str
    command: str
    timeout: float | None
    where: str
    on_error: str = "deny"


@dataclass
class Setup:
    """What the other agents' files hold, split by who wrote them."""

    user_servers: dict[str, dict[str, Any]] = field(default_factory=dict)  # Claude Code's
    codex_servers: dict[str, dict[str, Any]] = field(default_factory=dict)
    project_servers: dict[str, dict[str, Any]] = field(default_factory=dict)
    user_rules: Translated = field(default_factory=Translated)
    project_rules: Translated = field(default_factory=Translated)
    user_hooks: list[Hook] = field(default_factory=list)
    project_hooks: list[Hook] = field(default_factory=list)
    ignored: list[str] = field(default_factory=list)
    #: commands, skills and subagents read in place by their plugins (lines for /compat)
    in_place: list[str] = field(default_factory=list)
    #: the project files found (relative paths), which the approval covers
    project_files: list[str] = field(default_factory=list)
    digest: str = ""

    @property
    def needs_approval(self) -> bool:
        """True when the project's files ask for something only an approval gives."""
        return bool(self.project_servers or self.project_rules.allow or self.project_hooks)


class _Keep(dict):  # type: ignore[type-arg]
    """An environment that expands nothing: every ``${VAR}`` stays as written."""

    def get(self, key: Any, default: Any = None) -> Any:
        return None


def _expand_env(value: Any, env: dict[str, str]) -> Any:
    """``${VAR}`` and ``${VAR:-default}`` in strings, as Claude Code expands ``.mcp.json``."""
    if isinstance(value, str):
        if isinstance(env, _Keep):
            return value
        return _ENV_REF.sub(lambda m: env.get(m.group(1), m.group(2) or ""), value)
    if isinstance(value, list):
        return [_expand_env(v, env) for v in value]
    if isinstance(value, dict):
        return {k: _expand_env(v, env) for k, v in value.items()}
    return value


def server_table(name: str, raw: Any, where: str, env: dict[str, str],
                 ignored: list[str]) -> dict[str, Any] | None:
    """One server of ``.mcp.json``/``~/.claude.json``/Codex as our ``[mcp_servers.NAME]``."""
    if not isinstance(raw, dict):
        ignored.append(f"{where}: MCP server {name!r} is not a table; ignored")
        return None
    raw = _expand_env(raw, env)
    kind = str(raw.get("type") or raw.get("transport") or "").lower()
    out: dict[str, Any] = {}
    if raw.get("url"):
        out["url"] = str(raw["url"])
        if kind == "sse":
            out["type"] = "sse"
        if isinstance(raw.get("headers"), dict):
            out["headers"] = {str(k): str(v) for k, v in raw["headers"].items()}
        token_var = raw.get("bearer_token_env_var")
        if isinstance(token_var, str) and env.get(token_var):
            out.setdefault("headers", {})["Authorization"] = f"Bearer {env[token_var]}"
    elif raw.get("command"):
        out["command"] = str(raw["command"])
        if isinstance(raw.get("args"), list):
            out["args"] = [str(a) for a in raw["args"]]
        if isinstance(raw.get("env"), dict):
            out["env"] = {str(k): str(v) for k, v in raw["env"].items()}
        if isinstance(raw.get("cwd"), str):
            out["cwd"] = raw["cwd"]
    else:
        ignored.append(f"{where}: MCP server {name!r} has neither command nor url; ignored")
        return None
    for theirs, ours in (("startup_timeout_sec", "startup_timeout"),
                         ("tool_timeout_sec", "timeout")):
        if isinstance(raw.get(theirs), (int, float)):
            out[ours] = raw[theirs]
    known = {"type", "transport", "url", "headers", "command", "args", "env", "cwd",
             "startup_timeout_sec", "tool_timeout_sec", "bearer_token_env_var"}
    for key in sorted(set(raw) - known):
        ignored.append(f"{where}: MCP server {name!r}: {key} is not used")
    return out


def _servers(table: Any, where: str, env: dict[str, str], ignored: list[str]
             ) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    if not isinstance(table, dict):
        return out
    for name, raw in table.items():
        ours = server_name(str(name))
        if ours != name:
            ignored.append(f"{where}: MCP server {name!r} is named {ours!r} here "
                           "(our names use letters, digits and hyphens)")
        server = server_table(str(name), raw, where, env, ignored)
        if server is not None:
            out[ours] = server
    return out


def _read_json(path: Path, ignored: list[str]) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        ignored.append(f"{path}: cannot be read ({exc}); nothing from it is used")
        return None


def _hooks(table: Any, where: str, ignored: list[str]) -> list[Hook]:
    from .hooks import EVENTS

    out: list[Hook] = []
    if not isinstance(table, dict):
        return out
    for event, groups in table.items():
        if event not in EVENTS:
            ignored.append(f"{where}: hooks.{event} is not an event we run; ignored")
            continue
        for group in groups if isinstance(groups, list) else []:
            if not isinstance(group, dict):
                continue
            matcher = str(group.get("matcher") or "")
            for hook in group.get("hooks") or []:
                if not isinstance(hook, dict) or hook.get("type", "command") != "command" \
                        or not hook.get("command"):
                    ignored.append(f"{where}: a {event} hook that is not a command is "
                                   "ignored")
                    continue
                timeout = hook.get("timeout")
                on_error = hook.get("on_error", "deny")
                out.append(Hook(event, matcher, str(hook["command"]),
                                float(timeout) if isinstance(timeout, (int, float)) else None,
                                where, "allow" if on_error == "allow" else "deny"))
    return out


def _settings(path: Path, label: str, home: str, ignored: list[str]
              ) -> tuple[Translated, list[Hook]]:
    data = _read_json(path, ignored)
    if not isinstance(data, dict):
        return Translated(), []
    rules = translate(data.get("permissions"), label, home)
    ignored.extend(rules.problems)
    for key in sorted(set(data) - SETTINGS_KEYS):
        ignored.append(f"{label}: {key} is not used (no counterpart here)")
    return rules, _hooks(data.get("hooks"), label, ignored)


#: subagent kinds of our own, which an agent file of the same name does not replace
BUILTIN_KINDS = frozenset({"explore", "review", "worker"})


def text_of(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return ""


#: what is read from a ``.claude`` directory; anything else in it is reported
CLAUDE_ENTRIES = frozenset({"settings.json", "settings.local.json", "commands", "skills",
                            "agents", "hooks"})


def files_in_place(workspace: Path, home: Path) -> tuple[list[str], list[str]]:
    """The commands, skills and agents read where they are (by their own plugins), as
    lines for ``/compat``, and what of them is not used."""
    from agent.lib import frontmatter
    from agent.lib.agentfiles import read_dirs

    used: list[str] = []
    ignored: list[str] = []
    for root, label in ((home / ".claude", "~/.claude"), (workspace / ".claude", ".claude")):
        commands = root / "commands"
        for path in sorted(commands.rglob("*.md")) if commands.is_dir() else []:
            name = ":".join(path.relative_to(commands).with_suffix("").parts)
            used.append(f"command /{name} ({label}/commands)")
            try:
                meta = frontmatter.parse(path.read_text(encoding="utf-8"), lenient=True).meta
            except (OSError, UnicodeDecodeError):
                continue
            if "!`" in text_of(path):
                ignored.append(f"{label}/commands/{path.relative_to(commands)}: its !`command` "
                               "lines are sent as text, not run")
            for key in ("allowed-tools", "model", "disable-model-invocation"):
                if key in meta:
                    ignored.append(f"{label}/commands/{path.relative_to(commands)}: {key} "
                                   "is not used (the command runs under your rules and model)")
        skills = root / "skills"
        for path in sorted(skills.glob("*/SKILL.md")) if skills.is_dir() else []:
            used.append(f"skill {path.parent.name} ({label}/skills)")
        agents, skipped = read_dirs([root / "agents"])
        for name, agent in agents.items():
            if name not in BUILTIN_KINDS:
                used.append(f"subagent kind {name} for task ({label}/agents)")
            if agent.model and agent.model != "inherit":
                ignored.append(f"{label}/agents/{agent.path.name}: model {agent.model} is not "
                               "used (subagents use subagent_model or the session's model)")
        ignored += [f"{label}/agents: {line}" for line in skipped]
        for name in BUILTIN_KINDS & set(agents):
            ignored.append(f"{label}/agents: {name} is a builtin subagent kind here; the "
                           "builtin one is used")
    for path, why in ((workspace / "CLAUDE.local.md", "CLAUDE.local.md"),
                      (home / ".claude" / "CLAUDE.md", "~/.claude/CLAUDE.md")):
        if path.is_file():
            ignored.append(f"{why} is not read (instruction files here: AGENTS.md, CLAUDE.md, "
                           ".agent.md in the workspace and its parents)")
    prompts = home / ".codex" / "prompts"
    for path in sorted(prompts.glob("*.md")) if prompts.is_dir() else []:
        used.append(f"command /prompts:{path.stem} (~/.codex/prompts)")
    try:
        entries = sorted(p.name for p in (workspace / ".claude").iterdir())
    except OSError:
        entries = []
    for entry in entries:
        if entry not in CLAUDE_ENTRIES:
            ignored.append(f".claude/{entry} is not used (no counterpart here)")
    return used, ignored


def digest(workspace: Path) -> tuple[str, list[str]]:
    """A hash of the project's setup files (names and bytes) and the files found."""
    h = hashlib.sha256()
    found = []
    for rel in PROJECT_FILES:
        try:
            data = (workspace / rel).read_bytes()
        except OSError:
            continue
        found.append(rel)
        h.update(rel.encode() + b"\0" + str(len(data)).encode() + b"\0" + data)
    return (h.hexdigest() if found else ""), found


def read_setup(workspace: Path, home: Path, env: dict[str, str] | None = None, *,
               expand: bool = True) -> Setup:
    """Everything the Claude Code and Codex files in ``workspace`` and ``home`` hold.
    Without ``expand``, ``${VAR}`` references in server tables stay as written (``agent
    import`` must not write a secret from the environment into a config file)."""
    env = dict(os.environ if env is None else env)
    if not expand:
        env = _Keep()
    env.setdefault("CLAUDE_PROJECT_DIR", str(workspace))
    setup = Setup()
    ig = setup.ignored
    home_text = str(home)
    # user level
    claude_json = _read_json(home / ".claude.json", ig)
    if isinstance(claude_json, dict):
        setup.user_servers.update(_servers(claude_json.get("mcpServers"), "~/.claude.json",
                                           env, ig))
        projects = claude_json.get("projects")
        mine = projects.get(str(workspace)) if isinstance(projects, dict) else None
        if isinstance(mine, dict):
            setup.user_servers.update(_servers(mine.get("mcpServers"),
                                               f"~/.claude.json (project {workspace})", env, ig))
            if mine.get("allowedTools"):
                ig.append(f"~/.claude.json (project {workspace}): allowedTools is not used "
                          "(put rules in ~/.claude/settings.json or our [permission])")
    codex = home / ".codex" / "config.toml"
    try:
        codex_data = tomllib.loads(codex.read_text(encoding="utf-8"))
    except FileNotFoundError:
        codex_data = {}
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        ig.append(f"{codex}: cannot be read ({exc}); nothing from it is used")
        codex_data = {}
    setup.codex_servers = _servers(codex_data.get("mcp_servers"), "~/.codex/config.toml",
                                   env, ig)
    for key in sorted(set(codex_data) - {"mcp_servers"}):
        ig.append(f"~/.codex/config.toml: {key} is not used (no counterpart here)")
    rules, hooks = _settings(home / ".claude" / "settings.json", "~/.claude/settings.json",
                             home_text, ig)
    setup.user_rules, setup.user_hooks = rules, hooks
    # project level
    mcp = _read_json(workspace / ".mcp.json", ig)
    if isinstance(mcp, dict):
        setup.project_servers = _servers(mcp.get("mcpServers"), ".mcp.json", env, ig)
    for rel in (".claude/settings.json", ".claude/settings.local.json"):
        rules, hooks = _settings(workspace / rel, rel, home_text, ig)
        setup.project_rules.extend(rules)
        setup.project_hooks.extend(hooks)
    setup.in_place, more = files_in_place(workspace, home)
    setup.ignored.extend(more)
    setup.digest, setup.project_files = digest(workspace)
    return setup
