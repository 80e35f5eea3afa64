"""Meta-tools (``mcp_meta_tools = true``): ``mcp_list``, ``mcp_inspect`` and ``mcp_call``
instead of one tool per server tool, so requests do not carry every schema.

``mcp_call`` is asked about like any MCP tool (opaque effects), and the plugin's guard applies
the permission rules of the tool it reaches: ``"mcp__*" = "deny"`` or
``"mcp__git__*" = "deny"`` refuse ``mcp_call`` to those tools as well.
"""

from __future__ import annotations

import json
from typing import Any

from agent import NO_EFFECTS, UNKNOWN_EFFECTS, Tool, ToolError, ToolResult, Verdict
from plugins_builtin.mcp.tools import tool_name

_SERVER_TOOL = {
    "server": {"type": "string", "description": "the server's name, as mcp_list shows it"},
    "tool": {"type": "string", "description": "the tool's name on that server"},
}


def meta_tools(st: Any) -> list[Tool]:
    manager = st.manager

    async def known(server: str) -> list[dict[str, Any]]:
        """The server's tools; waits for a server still starting that has no cached list."""
        if server not in manager.servers:
            names = ", ".join(sorted(manager.servers)) or "none"
            raise ToolError(f'no MCP server named "{server}". Servers: {names}')
        if server not in manager.tools:
            await manager.wait_async(server)
        if server not in manager.tools:
            state, error = manager.state_of(server)
            raise ToolError(f'mcp server "{server}" is {state}' + (f": {error}" if error else ""))
        return manager.tools[server]

    async def find(server: str, tool: str) -> dict[str, Any]:
        tools = await known(server)
        for definition in tools:
            if definition["name"] == tool:
                return definition
        names = ", ".join(t["name"] for t in tools) or "none"
        raise ToolError(f'mcp server "{server}" has no tool "{tool}". Its tools: {names}')

    async def run_list(args: dict[str, Any], ctx: Any) -> str:
        lines = []
        for server in sorted(manager.servers):
            try:
                tools = await known(server)
            except ToolError as exc:
                lines.append(f"{server}: {exc}")
                continue
            lines.append(f"{server}:")
            for t in tools:
                first = (t.get("description") or "").strip().splitlines()
                lines.append(f"  {t['name']}: {first[0] if first else ''}".rstrip(": "))
        return "\n".join(lines) or "no MCP servers are configured"

    async def run_inspect(args: dict[str, Any], ctx: Any) -> str:
        definition = await find(args["server"], args["tool"])
        return (f"{definition['name']} (server {args['server']})\n\n"
                f"{definition.get('description') or '(no description)'}\n\ninput schema:\n"
                + json.dumps(definition.get("input_schema") or {}, indent=2))

    async def run_call(args: dict[str, Any], ctx: Any) -> ToolResult:
        from agent.contract.validate import check_arguments
        from plugins_builtin.mcp.connection import CallFailed

        server, tool = args["server"], args["tool"]
        definition = await find(server, tool)
        arguments = args.get("arguments") or {}
        check_arguments(st.factory.tool(server, definition), arguments)
        try:
            text, is_error, images = await manager.call(server, tool, arguments)
        except CallFailed as exc:
            raise ToolError(str(exc)) from None
        return ToolResult(text, is_error=is_error, summary=f"mcp {server}", images=images)

    return [
        Tool(name="mcp_list", description="List the MCP servers and their tools (name and "
             "first line of the description).", run=run_list,
             parameters={"type": "object", "properties": {}, "additionalProperties": False},
             effects=lambda args: NO_EFFECTS, read_only=True, subjectless=True),
        Tool(name="mcp_inspect", description="Show one MCP tool's full description and input "
             "schema; read it before mcp_call.", run=run_inspect,
             parameters={"type": "object", "properties": dict(_SERVER_TOOL),
                         "required": ["server", "tool"], "additionalProperties": False},
             effects=lambda args: NO_EFFECTS, read_only=True, subjectless=True),
        Tool(name="mcp_call", description="Call a tool of an MCP server with arguments that "
             "follow its input schema (see mcp_inspect). Needs approval.", run=run_call,
             parameters={"type": "object", "properties": {
                 **_SERVER_TOOL, "arguments": {"type": "object",
                                               "description": "the tool's arguments"}},
                 "required": ["server", "tool"], "additionalProperties": False},
             effects=lambda args: UNKNOWN_EFFECTS),
    ]


def guard_meta_call(call: Any, effects: Any, session: Any) -> Verdict | None:
    """Apply the rules of ``mcp__<server>__<tool>`` to an ``mcp_call`` that reaches it."""
    from agent.loop import permissions

    server, tool = call.arguments.get("server"), call.arguments.get("tool")
    config = getattr(session, "config", None)
    if not isinstance(server, str) or not isinstance(tool, str) or config is None:
        return None
    target = tool_name(server, tool)
    user = permissions.parse_rules(config.get("permission", {}))
    project = permissions.strip_allows(permissions.parse_rules(
        config.project_permission))
    verdict = permissions.decide(target, effects, user, project)
    if verdict.decision == "deny":
        return Verdict.deny(f"{target} (through mcp_call): {verdict.reason}", "mcp")
    return None
