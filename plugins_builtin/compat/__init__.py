"""Claude Code's and Codex's setup, used as it is: MCP servers, permission rules and hooks.

At configure time (before the MCP plugin reads its servers) the plugin reads
``.mcp.json``, ``.claude/settings.json``, ``.claude/settings.local.json``,
``~/.claude.json``, ``~/.claude/settings.json`` and ``~/.codex/config.toml``
(:mod:`.found`) and adds what they hold to this run's config:

- MCP servers join ``mcp_servers`` (a server of our own config of the same name wins);
- permission rules are translated (:mod:`.rules`): allow and deny rules judge like
  ``--allow``/``--deny`` (an allow only turns an ask into allow; a deny wins over all but a
  guard), ask rules join the project's tighten-only rules;
- hooks run with Claude Code's protocol (:mod:`.hooks`): ``PreToolUse`` as a guard (it can
  deny or ask, never allow; a crash, timeout or other exit code denies unless
  ``on_error = "allow"``), ``PostToolUse`` on each result, ``UserPromptSubmit`` (it may
  refuse a prompt or add context), ``SessionStart``, ``SessionEnd``, ``Stop`` and
  ``SubagentStop``.

What a repository's files ask for that could hurt (servers, hooks, allow rules) is used only
after the person approves those files once (``/trust``, ``agent trust``), remembered by
content hash (:mod:`.trust`); deny and ask rules apply at once.  ``/compat`` lists every
mapping and every item not used; ``--no-compat`` (``compat = false``) reads none of it.
See docs/compat.md.
"""

from __future__ import annotations

import logging
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agent import HeaderLine, Option, SlashCommand, Verdict, hookimpl
from agent.contract.commands import show
from agent.loop.permission_flags import FlagRules

from . import hooks as hookrun
from .found import Hook, Setup, read_setup
from .trust import approve, approved

log = logging.getLogger("agent.compat")

STATE_KEY = "compat"


@dataclass
class CompatState:
    """What this run took from the other agents' files."""

    setup: Setup
    trusted: bool
    hooks: list[Hook] = field(default_factory=list)
    servers: list[str] = field(default_factory=list)


def state(config: Any) -> CompatState | None:
    extra = getattr(config, "extra", None)
    return extra.get(STATE_KEY) if isinstance(extra, dict) else None


def home_of(config: Any) -> Path:
    """The home whose ``~/.claude`` and ``~/.codex`` are read (``compat_home``, else $HOME)."""
    return Path(config.get("compat_home") or os.path.expanduser("~"))


@hookimpl
def agent_addoption(options):
    options.add(Option("compat", type="bool", default=True, flag="--no-compat", negate=True,
                       help="ignore Claude Code's and Codex's setup: no .mcp.json, "
                            ".claude/, ~/.claude or ~/.codex read (docs/compat.md)"))
    options.add(Option("compat_home", help="the home directory whose ~/.claude, "
                                           "~/.claude.json and ~/.codex are read (default: "
                                           "yours)"))
    options.add(Option("hooks", type="dict", default={},
                       help="hooks by event, Claude Code's protocol: [[hooks.PreToolUse]] "
                            "matcher, command, timeout, on_error (docs/compat.md)"))


def own_hooks(table: Any) -> tuple[list[Hook], list[str]]:
    """Our config's ``[hooks]``: per event a list of ``{matcher, command, timeout,
    on_error}`` (or Claude Code's ``{matcher, hooks = [...]}``)."""
    from .found import _hooks

    problems: list[str] = []
    if not isinstance(table, dict):
        return [], problems
    normal: dict[str, list[Any]] = {}
    for event, entries in table.items():
        groups = []
        for entry in entries if isinstance(entries, list) else [entries]:
            if isinstance(entry, dict) and "hooks" not in entry and entry.get("command"):
                entry = {"matcher": entry.get("matcher", ""), "hooks": [
                    {k: v for k, v in entry.items() if k != "matcher"}]}
            groups.append(entry)
        normal[str(event)] = groups
    return _hooks(normal, "config [hooks]", problems), problems


def _merge_asks(project: dict[str, Any], asks: list[tuple[str, str]]) -> dict[str, Any]:
    """The project's tighten-only rules with ``asks`` put first, so a rule the project
    wrote itself (a deny) still wins where both match (the last matching rule wins)."""
    out = dict(project)
    for tool in dict.fromkeys(t for t, _ in asks):
        mine = {p: "ask" for t, p in asks if t == tool}
        theirs = out.get(tool)
        if isinstance(theirs, str):
            theirs = {"*": theirs}
        out[tool] = {**mine, **(theirs if isinstance(theirs, dict) else {})}
    return out


def _take_typed_rules(config: Any) -> None:
    """``--allowedTools``/``--disallowedTools`` typed in Claude Code's syntax, as this run's
    --allow/--deny rules; a rule that cannot be said in ours stops the run (exit 2), never
    widened or dropped."""
    typed = getattr(config, "foreign_tool_rules", None) or {}
    if not typed:
        return
    from agent.boot.config import ConfigError

    from .rules import translate_rule

    found: dict[str, list[tuple[str, str]]] = {"allow": [], "deny": []}
    for which, rules in typed.items():
        flag = "--allowedTools" if which == "allow" else "--disallowedTools"
        for rule in rules:
            try:
                found[which] += translate_rule(rule, wide=which == "deny")
            except ValueError as exc:
                raise ConfigError(f"{flag} {rule!r}: {exc}") from None
    base = config.permission_flags or FlagRules()
    config.permission_flags = base.with_imported(found["allow"], found["deny"])
    config.foreign_tool_rules = {}


@hookimpl(tryfirst=True)
def agent_configure(config):
    _take_typed_rules(config)
    own, problems = own_hooks(config.get("hooks"))
    if not config.get("compat"):
        config.extra[STATE_KEY] = CompatState(Setup(ignored=problems), False, own)
        _room_for_hooks(config, own)
        return
    workspace = Path(config.workspace)
    setup = read_setup(workspace, home_of(config))
    setup.ignored[:0] = problems
    trusted = approved(Path(config.state_dir), workspace, setup.digest)
    st = CompatState(setup, trusted, own + setup.user_hooks)
    # MCP servers: the user's at once, the repository's once approved; ours win by name.
    servers = {**setup.codex_servers, **setup.user_servers}
    if trusted:
        servers.update(setup.project_servers)
        st.hooks += setup.project_hooks
    if servers:
        mine = config.get("mcp_servers") or {}
        config.file_data["mcp_servers"] = {**servers, **(mine if isinstance(mine, dict) else {})}
        st.servers = sorted(servers)
    # Rules: deny and ask at once wherever they come from; allow from a repository only
    # once approved.
    user, project = setup.user_rules, setup.project_rules
    allow = user.allow + (project.allow if trusted else [])
    deny = user.deny + project.deny
    if allow or deny:
        base = config.permission_flags or FlagRules()
        config.permission_flags = base.with_imported(allow, deny)
    asks = user.ask + project.ask
    if asks:
        config.project_permission = _merge_asks(config.project_permission or {}, asks)
    for hook in st.hooks:
        if hook.event not in hookrun.RUN:
            setup.ignored.append(f"{hook.where}: {hook.event} hooks are not run yet")
    st.hooks = [h for h in st.hooks if h.event in hookrun.RUN]
    config.extra[STATE_KEY] = st
    _room_for_hooks(config, st.hooks)
    if config.headless:  # the UI shows these in its header; nothing else may print there
        for line in notices(st):
            print(f"agent: compat: {line}", file=sys.stderr)


#: seconds a PreToolUse hook gets, within the guard deadline, when it names no timeout
PRE_TOOL_USE_TIMEOUT = 30.0


def _room_for_hooks(config: Any, hooks: list[Hook]) -> None:
    """PreToolUse hooks run as a guard, within ``guard_timeout`` (default 2 s, made for
    in-process checks): unless the person set it, it becomes the longest such hook's
    ``timeout`` (30 s when a hook names none), so a hook that starts an interpreter is not
    denied as a timeout.  A hook that is really stuck still denies, at its own deadline."""
    pre = [h for h in hooks if h.event == "PreToolUse"]
    if not pre or config.source("guard_timeout") != "default":
        return
    longest = max(h.timeout or PRE_TOOL_USE_TIMEOUT for h in pre)
    config.file_data["guard_timeout"] = max(float(config.get("guard_timeout") or 0), longest)


def notices(st: CompatState) -> list[str]:
    """One line per item not used, and one when the repository's files wait for approval."""
    lines = list(dict.fromkeys(st.setup.ignored))
    if st.setup.needs_approval and not st.trusted:
        lines.append(pending(st.setup))
    return lines


def pending(setup: Setup) -> str:
    parts = []
    if setup.project_servers:
        parts.append(f"{len(setup.project_servers)} MCP server(s)")
    if setup.project_rules.allow:
        parts.append(f"{len(setup.project_rules.allow)} allow rule(s)")
    if setup.project_hooks:
        parts.append(f"{len(setup.project_hooks)} hook(s)")
    files = ", ".join(setup.project_files)
    return (f"this repository's {files} ask for {', '.join(parts)}: not used until you "
            "approve them once with /trust (or `agent trust`)")


# ---- the UI's header and commands -----------------------------------------------------------


@hookimpl
def agent_header_lines(config, session):
    st = state(config)
    if st is None:
        return None
    out = [HeaderLine(f"compat: {line}", order=85) for line in notices(st)]
    return out or None


def report(config: Any) -> str:
    """What ``/compat`` and ``agent import`` show: every mapping and what is not used."""
    st = state(config)
    if st is None:
        return "compat: not configured"
    setup = st.setup
    lines = ["Claude Code / Codex setup in use:"]
    for name in st.servers:
        lines.append(f"  MCP server {name}")
    for label, rules, used in (("user", setup.user_rules, True),
                               ("project", setup.project_rules, st.trusted)):
        for decision, rule, pairs in rules.mapping:
            shown = ", ".join(f"{t}:{p}" for t, p in pairs)
            note = "" if used or decision != "allow" else " (waits for /trust)"
            lines.append(f"  {label} {decision} {rule} -> {shown}{note}")
    for hook in st.hooks:
        lines.append(f"  hook {hook.event} [{hook.matcher or '*'}] {hook.command} "
                     f"({hook.where})")
    lines += [f"  {line}" for line in setup.in_place]
    extra = notices(st)
    if extra:
        lines.append("Not used:")
        lines += [f"  {line}" for line in extra]
    return "\n".join(lines)


def trust_now(config: Any) -> str:
    """Approve the repository's files as they are now (``/trust``, ``agent trust``)."""
    from .found import digest

    workspace = Path(config.workspace)
    value, files = digest(workspace)
    if not value:
        return "Nothing to approve: no .mcp.json or .claude/settings*.json here."
    approve(Path(config.state_dir), workspace, value)
    return (f"Approved {', '.join(files)} as they are now (sha256 {value[:12]}); they apply "
            "from the next start. Any change to them needs a new approval.")


@hookimpl
def agent_register_commands(register, config):
    register(SlashCommand("compat", "what is used from Claude Code's and Codex's setup",
                          lambda app, args: show(app, report(config)), info=True))
    register(SlashCommand("trust", "approve this repository's .mcp.json and .claude settings "
                                   "(servers, hooks, allow rules) as they are now",
                          lambda app, args: show(app, trust_now(config)), info=True))


@hookimpl
def agent_register_cli_commands(register):
    from .cli import import_cli, trust_cli

    register("trust", trust_cli, "approve this repository's Claude Code setup (.mcp.json, "
             ".claude/settings*.json) once", usage=[("", "approve the files as they are now")])
    register("import", import_cli, "print (or --write) the config read from Claude Code or "
             "Codex", usage=[("--from claude|codex [--write]",
                              "the config our loader reads from their files")])


# ---- hooks ------------------------------------------------------------------------------------


def _hooks_for(session: Any, event: str) -> list[Hook]:
    st = state(session.config) if session is not None else None
    return [h for h in st.hooks if h.event == event] if st is not None else []


def _tool_hooks(event: str, call: Any, session: Any) -> tuple[list[Hook], dict[str, Any], str]:
    """The ``event`` hooks whose matcher takes ``call``, the payload Claude Code gives them
    (tool name as Claude Code spells it, input, call id) and the directory they run in."""
    hooks = [h for h in _hooks_for(session, event) if hookrun.matches(h, call.name)]
    if not hooks:
        return [], {}, ""
    cwd = str(session.workspace)
    payload = hookrun.base_payload(event, session, cwd)
    payload.update(tool_name=hookrun.CLAUDE_NAME.get(call.name, call.name),
                   tool_input=hookrun.tool_input(call.arguments), tool_use_id=call.id)
    return hooks, payload, cwd


@hookimpl
def agent_guard_tool_call(call, effects, session):
    hooks, payload, cwd = _tool_hooks("PreToolUse", call, session)
    if not hooks:
        return None
    asked = None
    for hook in hooks:
        out = hookrun.run_hook(hook, payload, cwd)
        if out.failed and hook.on_error != "allow":
            return Verdict.deny(f"{out.reason} (a PreToolUse hook that fails denies the call; "
                                'on_error = "allow" lets it through)', "hook")
        if out.block:
            return Verdict.deny(out.reason or "blocked by a PreToolUse hook", "hook")
        if out.ask and asked is None:
            asked = Verdict.ask(out.reason or "a PreToolUse hook asks", "hook")
    return asked


@hookimpl
def agent_tool_result(call, result, session):
    hooks, payload, cwd = _tool_hooks("PostToolUse", call, session)
    if not hooks:
        return None
    from dataclasses import replace

    payload["tool_response"] = {"output": result.output, "is_error": result.is_error}
    notes = []
    for hook in hooks:
        out = hookrun.run_hook(hook, payload, cwd)
        if out.failed:
            log.warning("%s", out.reason)
        elif out.block or out.context:
            notes.append("\n".join(x for x in (out.reason if out.block else "", out.context)
                                   if x))
    if not notes:
        return None
    return replace(result, output=result.output + "\n\n[PostToolUse hook]\n" + "\n".join(notes))


def _fire(session: Any, event: str, **fields: Any) -> None:
    hooks = _hooks_for(session, event)
    if not hooks:
        return
    cwd = str(session.workspace)
    payload = hookrun.base_payload(event, session, cwd)
    payload.update(fields)
    for hook in hooks:
        out = hookrun.run_hook(hook, payload, cwd)
        if out.failed:
            log.warning("%s", out.reason)


@hookimpl
def agent_prompt_submitted(prompt, session):
    hooks = _hooks_for(session, "UserPromptSubmit")
    if not hooks:
        return None
    cwd = str(session.workspace)
    payload = hookrun.base_payload("UserPromptSubmit", session, cwd)
    payload["prompt"] = prompt
    added = []
    for hook in hooks:
        out = hookrun.run_hook(hook, payload, cwd)
        if out.failed:
            log.warning("%s", out.reason)
        elif out.block:
            return Verdict.deny(f"The prompt was refused by a UserPromptSubmit hook: "
                                f"{out.reason or 'no reason given'}", "hook")
        elif out.context:
            added.append(out.context)
    return "\n\n".join(added) or None


@hookimpl
def agent_close_session(session):
    if getattr(session, "parent", None) is None:
        _fire(session, "SessionEnd", reason="exit")


@hookimpl
def agent_session_start(session):
    if getattr(session, "parent", None) is None:
        _fire(session, "SessionStart", source="startup")


@hookimpl
def agent_after_turn(session, done):
    event = "Stop" if getattr(session, "parent", None) is None else "SubagentStop"
    if not _hooks_for(session, event):
        return None

    async def fire() -> None:
        import asyncio

        await asyncio.to_thread(_fire, session, event, stop_hook_active=False)

    return fire()
