"""``/mcp`` (list, add wizard, remove) and ``agent mcp list|add|remove`` from the shell.

Adding and removing edit ``[mcp_servers]`` in the user's config file (comments kept) and take
effect at the next start: a session never connects or drops a server midway.
"""

from __future__ import annotations

import shlex
import sys
from pathlib import Path
from typing import Any

from agent import SlashCommand
from agent.boot.config import ConfigError, read_toml, update_file
from plugins_builtin.mcp.servers import (
    ServerConfig,
    check_name,
    new_entry,
    parse_headers,
    parse_server,
    parse_servers,
    split_args,
)

USAGE = "usage: /mcp [list|add|remove <name>]"
ADD_USAGE = ("usage: /mcp add (no arguments: the wizard) | /mcp add NAME -- COMMAND [ARGS...] "
             "| /mcp add NAME URL [--header 'KEY: value']...")
CANCELLED = "mcp setup cancelled"
KIND_ITEMS = [("local    a command on this machine, over stdio", "local"),
              ("remote   an http or sse endpoint", "remote")]


# ---- config file edits (the wizard and the shell share these) ------------------------------


def _config_file(config: Any) -> Path:
    return Path(getattr(config, "config_file", config))


def configured(config: Any) -> dict[str, Any]:
    """The ``[mcp_servers]`` table as the config file says now."""
    table = read_toml(_config_file(config)).get("mcp_servers", {})
    return table if isinstance(table, dict) else {}


def add_server(config: Any, name: str, kind: str, command_or_url: str,
               args_or_headers: list[str] | dict[str, str] | None = None) -> list[str]:
    """Validate and write ``[mcp_servers.NAME]``; returns the lines to show.

    ``config`` is the run's :class:`agent.boot.config.Config` (or the config file's path);
    ``kind`` is ``local`` (``command_or_url`` is the command, ``args_or_headers`` its
    arguments) or ``remote`` (a URL and its headers).  Raises ValueError with the message to
    show when the input is not acceptable."""
    path = _config_file(config)
    name = name.strip()
    problem = check_name(name, configured(path))
    if problem:
        raise ValueError(problem)
    entry = new_entry(kind, command_or_url, args_or_headers)
    try:
        update_file(path, {f"mcp_servers.{name}": entry})
    except ConfigError as exc:
        raise ValueError(str(exc)) from None
    where = parse_server(name, entry).where
    return [f"added mcp server {name} ({where})", f"saved to {path}",
            "restart agent to connect it"]


def remove_server(config: Any, name: str) -> list[str]:
    """Delete ``[mcp_servers.NAME]``; raises ValueError for an unknown name."""
    path = _config_file(config)
    if name not in configured(path):
        raise ValueError(f'no MCP server named "{name}"')
    try:
        update_file(path, {f"mcp_servers.{name}": None})
    except ConfigError as exc:
        raise ValueError(str(exc)) from None
    return [f"removed mcp server {name}", f"saved to {path}", "restart agent to disconnect it"]


def parse_add_args(argv: list[str]) -> tuple[str, str, str, Any]:
    """``NAME -- COMMAND ARGS...`` / ``NAME [--env K=V]... COMMAND ARGS...`` /
    ``NAME URL [--header 'K: v']...`` → (name, kind, target, extra).  Raises ValueError."""
    if len(argv) < 2:
        raise ValueError(ADD_USAGE)
    name, rest = argv[0], argv[1:]
    if rest[0] == "--":
        rest = rest[1:]
        if not rest:
            raise ValueError("a command is required after --")
        return name, "local", rest[0], rest[1:]
    if rest[0].startswith(("http://", "https://")):
        url, headers, tail = rest[0], [], rest[1:]
        while tail:
            if tail[0] in ("--header", "-H") and len(tail) >= 2:
                headers.append(tail[1])
                tail = tail[2:]
            else:
                raise ValueError(f"unexpected {tail[0]!r}; headers go as --header 'KEY: value'")
        return name, "remote", url, parse_headers(headers)
    return name, "local", rest[0], rest[1:]


# ---- the list ---------------------------------------------------------------------------------


def server_rows(config: Any) -> list[tuple[str, str, str, str]]:
    """(name, local|remote, status, command line or URL) for every server, configured in the
    file now or connected this session, sorted by name."""
    from plugins_builtin.mcp import state

    st = state(config)
    running = st.servers if st is not None else {}
    try:
        in_file = parse_servers(configured(config))
    except ConfigError:
        in_file = {}
    servers: dict[str, ServerConfig] = {**in_file, **running}
    rows = []
    for name in sorted(servers):
        server = servers[name]
        kind = "remote" if server.kind == "remote" else "local"
        rows.append((name, kind, _status(st, name, server, name in running),
                     server.where.strip()))
    return rows


def server_lines(config: Any) -> list[str]:
    """One markdown item per server: ``- `name` (local) - N tools`` and its command or URL."""
    lines = []
    for name, kind, status, where in server_rows(config):
        if where:  # a hard line break keeps the command under its server
            lines.append(f"- `{name}` ({kind}) - {status}\\")
            lines.append(f"  `{where}`")
        else:
            lines.append(f"- `{name}` ({kind}) - {status}")
    return lines


def offered_tools(st: Any, server: str) -> tuple[list[str], list[tuple[str, str]]]:
    """The server's tools the model is offered, and those it is not, each with the reason
    (a schema no provider takes, a tool the server runs only as a task)."""
    offered: list[str] = []
    left_out: list[tuple[str, str]] = []
    for definition in st.manager.tools.get(server, []):
        raw = str(definition["name"])
        if st.factory.tool(server, definition) is not None:
            offered.append(raw)
        else:
            left_out.append((raw, st.factory.rejected.get((server, raw), "not offered")))
    return offered, left_out


def _status(st: Any, name: str, server: ServerConfig, this_session: bool) -> str:
    if server.problem:
        return f"failed: {server.problem}"
    if not this_session or st is None:
        return "not connected this session"
    if not st.enabled:
        return "not connected (--no-mcp)"
    state, error = st.manager.state_of(name)
    offered, left_out = offered_tools(st, name)
    count = len(offered)
    tools = f"{count} tool{'s' if count != 1 else ''}"
    if left_out:
        tools += f" (+{len(left_out)} not offered)"
    if state == "connected":
        return tools
    if state in ("failed", "crashed"):
        return f"failed: {error}"
    if state == "not started":
        return "not connected this session"
    if state == "connecting":
        return f"connecting... ({tools} cached)" if name in st.manager.cached else "connecting..."
    return state


# ---- /mcp -----------------------------------------------------------------------------------


def slash_command() -> SlashCommand:
    return SlashCommand("mcp", "MCP servers: list, add (wizard), remove", run_mcp,
                        args="[list|add|remove <name>]", info=True, takes_args=True)


async def run_mcp(app: Any, args: str) -> str | None:
    try:
        words = shlex.split(args or "")
    except ValueError as exc:
        return f"error: {exc}"
    verb = words[0] if words else "list"
    verb = {"new": "add", "rm": "remove"}.get(verb, verb)
    if verb == "list" and len(words) <= 1:
        lines = server_lines(app.config)
        if not lines:
            app.info("mcp servers", "no MCP servers configured", hint="/mcp add to add one")
            return None
        lines.append("")
        lines.append(f"configured in {_config_file(app.config)}")
        app.info("mcp servers", "\n".join(lines), hint="/mcp add to add one")
        return None
    if verb == "add":
        if len(words) > 1:
            try:
                return "\n".join(add_server(app.config, *parse_add_args(words[1:])))
            except ValueError as exc:
                return f"error: {exc}"
        return await wizard(app)
    if verb == "remove" and len(words) == 2:
        try:
            return "\n".join(remove_server(app.config, words[1]))
        except ValueError as exc:
            return str(exc)
    return USAGE


async def wizard(app: Any) -> str:
    """The interactive add: kind, name, then command and arguments or URL and headers.  Bad
    input is explained and asked again; esc anywhere cancels."""
    existing = sorted(configured(app.config))
    hint = ("configured: " + ", ".join(existing)) if existing else "none configured yet"
    kind = await app.pick("add an mcp server", KIND_ITEMS, hint=hint)
    if kind is None:
        return CANCELLED

    async def ask(title: str, hint: str, check: Any) -> Any:
        text = ""
        while True:
            text = await app.prompt_text(title, hint=hint, default=text)
            if text is None:
                return None
            try:
                return check(text)
            except ValueError as exc:
                app.error(str(exc))

    def name_ok(text: str) -> str:
        problem = check_name(text, existing)
        if problem:
            raise ValueError(problem)
        return text.strip()

    name = await ask("name", "letters, digits and hyphens", name_ok)
    if name is None:
        return CANCELLED
    if kind == "local":
        command = await ask("command", "the program to run, e.g. npx or uvx",
                            lambda t: new_entry("local", t)["command"])
        if command is None:
            return CANCELLED
        extra = await ask("arguments", "separated by spaces, quotes keep spaces; empty for none",
                          split_args)
        target = command
    else:
        target = await ask("url", "http:// or https://", lambda t: new_entry("remote", t)["url"])
        if target is None:
            return CANCELLED
        extra = await ask("headers", "KEY: value, OTHER: value; empty for none", parse_headers)
    if extra is None:
        return CANCELLED
    try:
        return "\n".join(add_server(app.config, name, kind, target, extra))
    except ValueError as exc:
        return f"error: {exc}"


# ---- agent mcp ------------------------------------------------------------------------------


def cli_mcp(argv: list[str], boot: Any) -> int:
    """``agent mcp [list] | add NAME ... | remove NAME``."""
    import sys

    verb = argv[0] if argv else "list"
    verb = {"new": "add", "rm": "remove", "ls": "list"}.get(verb, verb)
    config = boot.config
    if verb in ("add", "remove"):
        try:
            if verb == "add":
                lines = add_server(config, *parse_add_args(argv[1:]))
            elif len(argv) == 2:
                lines = remove_server(config, argv[1])
            else:
                raise ValueError("usage: agent mcp remove NAME")
        except ValueError as exc:
            text = str(exc).replace("/mcp add", "agent mcp add")
            print(f"agent: {text}", file=sys.stderr)
            return 2
        print("\n".join(lines))
        return 0
    if verb == "login" and len(argv) == 2:
        return _cli_login(config, argv[1])
    if verb != "list" or len(argv) > 1:
        print("usage: agent mcp [list] | agent mcp add NAME -- COMMAND [ARGS...] | "
              "agent mcp add NAME URL [--header 'KEY: value']... | agent mcp remove NAME | "
              "agent mcp login NAME", file=sys.stderr)
        return 2
    return _cli_list(config)


def _cli_login(config: Any, name: str) -> int:
    """Sign in to an OAuth server: the URL is printed and opened, the token saved (0600)."""
    from plugins_builtin.mcp import state
    from plugins_builtin.mcp.oauth import stderr

    st = state(config)
    server = st.servers.get(name) if st is not None else None
    if server is None or server.auth != "oauth":
        print(f'agent: no MCP server "{name}" with auth = "oauth" is configured',
              file=sys.stderr)
        return 2
    status, error = st.manager.login(name, stderr)
    if status != "connected":
        print(f"agent: mcp {name}: {error or status}", file=sys.stderr)
        return 1
    print(f"signed in to {name}; the token is saved for later runs")
    return 0


def _cli_list(config: Any) -> int:
    from plugins_builtin.mcp import state

    st = state(config)
    if st is None:
        print("agent: the mcp plugin is not configured", flush=True)
        return 1
    if st.enabled and st.manager.servers:
        longest = max(s.startup_timeout for s in st.manager.servers.values())
        st.manager.wait(longest + 1)  # connect (and refresh the tools cache) to report
    rows = server_rows(config)
    if not rows:
        print("no MCP servers configured; add one with: agent mcp add NAME -- COMMAND [ARGS...]")
        return 0
    for name, kind, status, where in rows:
        print(f"- {name} ({kind}) - {status}")
        if where:
            print(f"  {where}")
        if st.manager.state_of(name)[0] == "connected":
            offered, left_out = offered_tools(st, name)
            print("  tools: " + ", ".join(offered))
            for tool, why in left_out:
                print(f"  not offered: {tool} ({why})")
    print(f"configured in {_config_file(config)}")
    return 0
