"""MCP client: tools from the servers in [mcp_servers], as mcp__<server>__<tool>.

Servers connect in the background on a thread of their own (see :mod:`.manager`) and never
delay the first prompt.  Tool lists are cached per server and config, so a restart registers
the tools at once; a server seen for the first time adds its tools to the session's registry
when it connects (:func:`_sync`, run on every coarse event and before each step).  Every MCP
tool has opaque effects, so it is asked about on each call unless a permission rule says
otherwise.  ``--no-mcp`` skips all servers.  The SDK is imported only on the MCP thread.
"""

from __future__ import annotations

from typing import Any

from agent import Fragment, HeaderLine, Option, Verdict, hookimpl, sandbox_for
from plugins_builtin.mcp.manager import Manager
from plugins_builtin.mcp.servers import ServerConfig, parse_servers
from plugins_builtin.mcp.tools import PLUGIN, ToolFactory, sync_registry

STATE_KEY = "mcp_client"

#: With no server configured (and --no-mcp not given) every hook of this plugin that a run
#: calls does nothing, so the plugin is not even imported (agent.boot.lazy_plugins).
AGENT_IDLE_WHEN = {"config": {"mcp_servers": {}, "mcp": True}}

PROMPT = ("Tools from MCP servers are named mcp__<server>__<tool>. Each needs approval; read "
          "its own description before calling.")


class McpState:
    """What the plugin knows in one run: the configured servers and their manager."""

    def __init__(self, config: Any) -> None:
        self.enabled = bool(config.get("mcp", True))
        self.meta = bool(config.get("mcp_meta_tools", False))
        self.servers: dict[str, ServerConfig] = parse_servers(config.get("mcp_servers") or {})
        # Headless runs say on stderr when a server fails to start; the UI shows it in /mcp
        # (nothing may write to the terminal under the screen).
        self.manager = Manager(self.servers, workspace=config.workspace,
                               interactive=not config.headless,
                               state_dir=config.state_dir,
                               on_failed=_report_failure if config.headless else None,
                               sandbox=sandbox_for(config))
        self.factory = ToolFactory(
            self.manager, on_rejected=_report_rejected if config.headless else _log_rejected,
            trust_read_only=config.get("mcp_read_only", "ask") == "allow")
        self._synced: dict[int, int] = {}  # id(registry) -> manager.version last applied

    def start(self) -> None:
        if self.enabled and self.manager.servers:
            self.manager.start()

    def close(self) -> None:
        self.manager.close()

    def server_of(self, tool_name: str) -> str | None:
        origin = self.factory.origin.get(tool_name)
        return origin[0] if origin else None


def _report_failure(name: str, error: str) -> None:
    import sys

    print(f"agent: mcp {name} failed: {error}", file=sys.stderr, flush=True)


def _report_rejected(server: str, tool: str, reason: str) -> None:
    import sys

    print(f"agent: mcp {server}: tool {tool} is not offered: {reason}", file=sys.stderr,
          flush=True)


def _log_rejected(server: str, tool: str, reason: str) -> None:
    import logging

    logging.getLogger("agent.mcp").warning("mcp %s: tool %s is not offered: %s", server,
                                           tool, reason)


def startup_notices(st: McpState) -> list[str]:
    """Notices for the startup header: unusable config entries (none with --no-mcp)."""
    if not st.enabled:
        return []
    return [f"mcp {s.name} failed: {s.problem}" for s in st.servers.values() if s.problem]


def header_line(st: McpState) -> str | None:
    """The startup header's line: ``mcp: N configured`` or ``mcp: off (--no-mcp)``; None
    when no server is configured."""
    if not st.enabled:
        return "mcp: off (--no-mcp)"
    if not st.servers:
        return None
    return f"mcp: {len(st.servers)} configured"


def state(config: Any) -> McpState | None:
    """The plugin's state for ``config`` (None before ``agent_configure``)."""
    extra = getattr(config, "extra", None)
    return extra.get(STATE_KEY) if isinstance(extra, dict) else None


@hookimpl
def agent_addoption(options):
    options.add(Option("mcp_servers", type="dict", default={},
                       help="MCP servers: [mcp_servers.NAME] with command/args/env/cwd "
                            "(stdio) or url/headers (HTTP); timeout, startup_timeout "
                            "(docs/mcp.md)"))
    options.add(Option("mcp", type="bool", default=True, flag="--no-mcp", negate=True,
                       help="skip every MCP server this run"))
    options.add(Option("mcp_startup_timeout", type="float", default=10.0, minimum=0,
                       help="headless: how long the first request waits for an MCP server "
                            "with no cached tools (a server's own startup_timeout, when "
                            "set, overrides it)"))
    options.add(Option("mcp_read_only", default="ask", choices=("ask", "allow"),
                       help='"allow": run without asking the MCP tools their server marks '
                            "read-only (readOnlyHint) and not destructive; a server's own "
                            'claim, so opt-in (default "ask")'))
    options.add(Option("mcp_meta_tools", type="bool", default=False,
                       help="offer mcp_list/mcp_inspect/mcp_call instead of every MCP tool "
                            "(saves their schemas in every request)"))


@hookimpl
def agent_header_lines(config, session):
    st = state(config)
    line = header_line(st) if st is not None else None
    return HeaderLine(line, order=80) if line else None


@hookimpl
def agent_configure(config):
    st = McpState(config)
    config.extra[STATE_KEY] = st
    config.notices.extend(startup_notices(st))
    if config.headless:  # a session will run: connect as early as possible
        if st.enabled:
            for server in st.servers.values():
                if server.problem:
                    _report_failure(server.name, server.problem)
        st.start()


@hookimpl
def agent_unconfigure(config):
    st = state(config)
    if st is not None:
        st.close()


@hookimpl
def agent_late_tools(config):
    """Servers connect in the background: their tools come after the startup checks."""
    return ["mcp__*"]


@hookimpl
def agent_register_tools(register, config):
    st = state(config)
    if st is None or not st.enabled or not st.manager.servers:
        return
    st.start()  # tools are being gathered: a session is about to start
    if st.meta:
        from plugins_builtin.mcp.meta import meta_tools

        for tool in meta_tools(st):
            register(tool)
        return
    if config.headless:
        _wait_for_first_request(st, config)
    for tool in st.factory.all_tools().values():
        register(tool)


def _wait_for_first_request(st: McpState, config: Any) -> None:
    """Headless runs send their first request with every server's tools: a server whose
    tools are cached for this config is used at once; the others are waited for, in
    parallel, up to ``mcp_startup_timeout`` each (or the server's own ``startup_timeout``
    when its table sets one). The UI never waits: it picks tools up as servers connect."""
    default = float(config.get("mcp_startup_timeout", 10.0))
    waits = {name: (server.startup_timeout if "startup_timeout" in server.raw else default)
             for name, server in st.manager.servers.items()
             if name not in st.manager.cached}
    if not waits:
        return
    for name in st.manager.wait_for_tools(waits):
        state, error = st.manager.state_of(name)
        if state not in ("failed", "crashed"):  # those are reported when they fail
            _report_failure(name, f"not ready after {waits[name]:g} s; its tools are not "
                                  "offered in this run")


def _sync(session: Any) -> None:
    """Bring the session's registry in step with the servers' current tool lists.

    Only the main agent's registry (``runtime.tools``) is touched: a subagent with a tool
    dict of its own keeps exactly the tools it was given."""
    st = state(getattr(session, "config", None))
    if st is None or not st.enabled or st.meta or not st.manager.started:
        return
    runtime = getattr(session, "runtime", None)
    registry = getattr(session, "tools", None)
    if (getattr(session, "origin", "model") != "model" or runtime is None
            or registry is not getattr(runtime, "tools", None)):
        return
    version = st.manager.version
    if st._synced.get(id(registry)) == version:
        return
    sync_registry(registry, st.factory.all_tools())
    st._synced[id(registry)] = version


@hookimpl
def agent_event(event, session):
    _sync(session)


@hookimpl
def agent_offered_tools(tools, session):
    _sync(session)  # picked up by the next step; this one keeps what the filters chose
    return None


@hookimpl
def agent_prompt_fragments(session):
    st = state(getattr(session, "config", None))
    if st is None or not st.enabled:
        return None
    offered = getattr(session, "offered_tools", None) or []
    if st.meta:
        if any(t.name == "mcp_call" for t in offered):
            names = ", ".join(sorted(st.manager.servers)) or "none"
            return Fragment("mcp", "MCP servers are reached through mcp_list, mcp_inspect and "
                            f"mcp_call; each call needs approval. Servers: {names}.",
                            order=120)
        return None
    servers = sorted({s for t in offered if t.plugin == PLUGIN
                      and (s := st.server_of(t.name)) is not None})
    if not servers:
        return None
    return Fragment("mcp", f"{PROMPT} Servers: {', '.join(servers)}.", order=120)


@hookimpl
def agent_guard_tool_call(call, effects, session):
    st = state(getattr(session, "config", None))
    if st is not None and call.name in st.factory.destructive:
        server = st.server_of(call.name) or "its server"
        return Verdict.ask(f"the MCP server {server} marks {call.name} as destructive "
                           "(destructiveHint): it may delete or overwrite data")
    if call.name != "mcp_call":
        return None
    from plugins_builtin.mcp.meta import guard_meta_call

    return guard_meta_call(call, effects, session)


@hookimpl
def agent_register_commands(register, config):
    from plugins_builtin.mcp.commands import slash_command

    register(slash_command())
    st = state(config)
    if st is not None and st.enabled:
        from plugins_builtin.mcp.prompts import prompt_commands

        for command in prompt_commands(st):
            register(command)


@hookimpl
def agent_register_mentions(register, config):
    st = state(config)
    if st is not None and st.enabled:
        from plugins_builtin.mcp.mentions import mention_source

        register(mention_source(st))


@hookimpl
def agent_register_cli_commands(register):
    from plugins_builtin.mcp.commands import cli_mcp

    register("mcp", cli_mcp, "list, add and remove MCP servers", usage=[
        ("[list]", "MCP servers, connected to show their tools (docs/mcp.md)"),
        ("add NAME -- CMD ARGS", "add a stdio server (or: add NAME URL [--header 'K: v'])"),
        ("remove NAME", "remove a server")])
