"""``agent trust`` and ``agent import --from claude|codex [--write]``."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from agent.boot.config import update_file

from .found import Setup, read_setup
from .rules import Translated

USAGE = "usage: agent import --from claude|codex [--write]"


def trust_cli(argv: list[str], boot: Any) -> int:
    """``agent trust``: approve the repository's Claude Code files as they are now."""
    from . import report, trust_now

    print(trust_now(boot.config))
    print(report(boot.config))
    return 0


def _toml_value(value: Any) -> str:
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{_toml_key(k)} = {_toml_value(v)}"
                                for k, v in value.items()) + " }"
    if isinstance(value, list):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    return json.dumps(str(value), ensure_ascii=False)


def _toml_key(key: str) -> str:
    return key if key.replace("_", "").replace("-", "").isalnum() else json.dumps(key)


def permission_table(rules: Translated) -> dict[str, dict[str, str]]:
    """Translated rules as our ``[permission]`` tables (asks, then allows, then denies, so
    a deny wins where patterns overlap: the last matching rule wins)."""
    table: dict[str, dict[str, str]] = {}
    for decision in ("ask", "allow", "deny"):
        for tool, pattern in getattr(rules, decision):
            table.setdefault(tool, {})[pattern] = decision
    return table


def imported(setup: Setup, source: str) -> dict[str, Any]:
    """The config keys our loader would read from ``source``'s files."""
    out: dict[str, Any] = {}
    if source == "claude":
        servers = {**setup.user_servers, **setup.project_servers}
        rules = Translated()
        rules.extend(setup.user_rules)
        rules.extend(setup.project_rules)
        if rules.count:
            out["permission"] = permission_table(rules)
        hooks: dict[str, list[dict[str, Any]]] = {}
        for hook in setup.user_hooks + setup.project_hooks:
            entry: dict[str, Any] = {"matcher": hook.matcher, "command": hook.command}
            if hook.timeout:
                entry["timeout"] = hook.timeout
            hooks.setdefault(hook.event, []).append(entry)
        if hooks:
            out["hooks"] = hooks
    else:
        servers = dict(setup.codex_servers)
    if servers:
        out["mcp_servers"] = servers
    return out


def render(config: dict[str, Any], setup: Setup, source: str) -> str:
    lines = [f"# read from {'Claude Code' if source == 'claude' else 'Codex'}'s files by "
             "agent import"]
    for key in ("permission",):
        if key in config:
            lines.append(f"\n[{key}]")
            for tool, table in config[key].items():
                lines.append(f"{_toml_key(tool)} = {_toml_value(table)}")
    for name, server in config.get("mcp_servers", {}).items():
        lines.append(f"\n[mcp_servers.{_toml_key(name)}]")
        for k, v in server.items():
            lines.append(f"{_toml_key(k)} = {_toml_value(v)}")
    for event, entries in config.get("hooks", {}).items():
        for entry in entries:
            lines.append(f"\n[[hooks.{event}]]")
            for k, v in entry.items():
                lines.append(f"{_toml_key(k)} = {_toml_value(v)}")
    if source == "claude":
        lines.append("\n# read in place, nothing to import: .claude/commands/, "
                     "~/.claude/commands/, .claude/skills/, ~/.claude/skills/, CLAUDE.md")
    else:
        lines.append("\n# read in place, nothing to import: ~/.codex/prompts/, AGENTS.md")
    for problem in dict.fromkeys(setup.ignored):
        lines.append(f"# not imported: {problem}")
    for name, server in config.get("mcp_servers", {}).items():
        if "${" in json.dumps(server):
            lines.append(f"# mcp_servers.{name} refers to ${{VAR}}, which our config does not "
                         "expand: put the value in the file, or let agent read .mcp.json")
    from .hooks import RUN

    for event in config.get("hooks", {}):
        if event not in RUN:
            lines.append(f"# hooks.{event} is kept but not run yet")
    return "\n".join(lines) + "\n"


def import_cli(argv: list[str], boot: Any) -> int:
    """``agent import --from claude|codex [--write]``."""
    args = list(argv)
    write = "--write" in args
    args = [a for a in args if a != "--write"]
    source = None
    if len(args) == 2 and args[0] == "--from":
        source = args[1]
    elif len(args) == 1 and args[0].startswith("--from="):
        source = args[0].split("=", 1)[1]
    if source not in ("claude", "codex"):
        print(USAGE)
        return 2
    config = boot.config
    home = Path(config.get("compat_home") or os.path.expanduser("~"))
    setup = read_setup(Path(config.workspace), home, expand=False)
    table = imported(setup, source)
    print(render(table, setup, source), end="")
    if write:
        path = Path(config.paths.config_file)
        changes: dict[str, Any] = {}
        for name, server in table.get("mcp_servers", {}).items():
            changes[f"mcp_servers.{name}"] = server
        for tool, rules in table.get("permission", {}).items():
            changes[f"permission.{tool}"] = rules
        if "hooks" in table:
            changes["hooks"] = table["hooks"]
        update_file(path, changes)
        print(f"# written to {path}")
    return 0
