"""MCP tools as :class:`agent.Tool` objects, and keeping a tool registry in step with the
servers as they connect.

Every tool is ``mcp__<server>__<tool>``, takes the server's input schema and description,
belongs to no tool set, and has opaque effects: it is asked about on every call unless a
permission rule (``"mcp__*"``, ``"mcp__git__*"``) says otherwise.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable
from typing import Any

from agent import UNKNOWN_EFFECTS, Description, Effects, Tool, ToolError, ToolResult
from agent.contract.toolschema import check_all_dialects

PREFIX = "mcp__"
PLUGIN = "mcp"
#: The longest tool name the providers accept (OpenAI: ^[a-zA-Z0-9_-]{1,64}$).
MAX_NAME = 64
MAX_DESCRIPTION = 4000

_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")


def tool_name(server: str, tool: str) -> str:
    """``mcp__<server>__<tool>``, with characters providers refuse replaced by ``_`` and
    over-long names shortened with a hash so they stay unique."""
    name = _UNSAFE.sub("_", f"{PREFIX}{server}__{tool}")
    if len(name) > MAX_NAME:
        digest = hashlib.sha256(name.encode()).hexdigest()[:8]
        name = f"{name[:MAX_NAME - 9]}_{digest}"
    return name


def split_name(name: str) -> tuple[str, str] | None:
    """(server, tool) of an ``mcp__server__tool`` name (as typed, unsanitised), or None."""
    if not name.startswith(PREFIX):
        return None
    server, sep, tool = name[len(PREFIX):].partition("__")
    return (server, tool) if sep and server and tool else None


def input_schema(schema: Any) -> dict[str, Any]:
    """The server's input schema, made a valid object schema if it is not one."""
    if not isinstance(schema, dict):
        return {"type": "object", "properties": {}}
    schema = dict(schema)
    schema.setdefault("type", "object")
    if schema.get("type") == "object" and not isinstance(schema.get("properties"), dict):
        schema["properties"] = {}
    return schema


class ToolFactory:
    """Builds (and remembers) the Tool for each server tool, so an unchanged tool keeps the
    same object and a registry update is a no-op."""

    def __init__(self, manager: Any,
                 on_rejected: Callable[[str, str, str], None] | None = None, *,
                 trust_read_only: bool = False) -> None:
        self.manager = manager
        #: ``mcp_read_only = "allow"``: a tool the server marks read-only (and not
        #: destructive) touches nothing the gate asks about
        self.trust_read_only = trust_read_only
        #: tool names the server marks destructive (asked about with that reason)
        self.destructive: set[str] = set()
        self._made: dict[tuple[str, str, str, str], Tool | None] = {}
        #: tool name -> (server, the server's own name for the tool)
        self.origin: dict[str, tuple[str, str]] = {}
        #: (server, tool) -> why the tool is not offered (its schema cannot be sent)
        self.rejected: dict[tuple[str, str], str] = {}
        #: called once per rejected tool with (server, tool, reason)
        self.on_rejected = on_rejected

    def tool(self, server: str, definition: dict[str, Any]) -> Tool | None:
        """The Tool for one server tool, or None when it cannot be offered: its input
        schema cannot be made into one every provider accepts (the reason is kept in
        :attr:`rejected` and reported once), or the server runs it only as a task."""
        raw_name = str(definition["name"])
        description = str(definition.get("description") or "")
        raw_schema = definition.get("input_schema")
        key = (server, raw_name, description,
               json.dumps([raw_schema, definition.get("hints"), definition.get("task_support"),
                           definition.get("title")], sort_keys=True, default=str))
        if key in self._made:
            return self._made[key]
        schema, problem = check_all_dialects(input_schema(raw_schema))
        if not problem and definition.get("task_support") == "required":
            problem = "the server runs it only as a long-running task, which agent does not " \
                      "support yet"
        made = None
        if problem:
            self.rejected[(server, raw_name)] = problem
            if self.on_rejected is not None:
                self.on_rejected(server, raw_name, problem)
        else:
            hints = definition.get("hints") or {}
            read_only = (self.trust_read_only and hints.get("read_only") is True
                         and hints.get("destructive") is not True)
            made = self._build(server, raw_name, description, schema, read_only=read_only,
                               kind=str(definition.get("agent_kind") or ""),
                               title=str(definition.get("title") or ""),
                               destructive=hints.get("destructive") is True)
            self.origin[made.name] = (server, raw_name)
            if hints.get("destructive") is True:
                self.destructive.add(made.name)
        self._made[key] = made
        return made

    def _build(self, server: str, raw_name: str, description: str,
               schema: dict[str, Any], *, read_only: bool = False, kind: str = "",
               title: str = "", destructive: bool = False) -> Tool:
        manager = self.manager

        async def run(args: dict[str, Any], ctx: Any) -> ToolResult:
            from plugins_builtin.mcp.connection import CallFailed

            runtime = getattr(getattr(ctx, "session", None), "runtime", None)
            try:
                if kind:  # one of the resource tools agent adds
                    text, is_error, images = await manager.resources(server, kind, args)
                else:
                    text, is_error, images = await manager.call(
                        server, raw_name, args, on_progress=ctx.emit_output,
                        asker=getattr(runtime, "asker", None),
                        session=getattr(ctx, "session", None))
            except CallFailed as exc:
                raise ToolError(str(exc)) from None
            return ToolResult(text, is_error=is_error, summary=f"mcp {server}", images=images)

        if len(description) > MAX_DESCRIPTION:
            description = description[:MAX_DESCRIPTION] + " [description truncated]"
        effects = (lambda args: Effects()) if read_only else (lambda args: UNKNOWN_EFFECTS)
        tool = Tool(name=tool_name(server, raw_name),
                    description=description or f"{raw_name} (from the MCP server {server})",
                    run=run, parameters=schema, effects=effects, tool_set=None,
                    read_only=read_only,
                    describe=call_describer(server, title or raw_name, destructive))
        tool.plugin = PLUGIN
        return tool

    def all_tools(self) -> dict[str, Tool]:
        """The tools of every server as currently known (cached or live), by name."""
        out: dict[str, Tool] = {}
        known = dict(self.manager.tools)  # one atomic copy: the MCP thread may add a server
        for server in sorted(known):
            for definition in known[server]:
                tool = self.tool(server, definition)
                if tool is not None:
                    out.setdefault(tool.name, tool)
        return out


def call_describer(server: str, title: str, destructive: bool
                   ) -> Callable[[dict[str, Any]], Description]:
    """How an MCP call reads in the approval dialog and the transcript: the tool's own title
    (the server's name for people) and one ``name: value`` line per argument, instead of a
    generic question over raw JSON."""

    def describe(args: dict[str, Any]) -> Description:
        lines = tuple(line for key, value in args.items() for line in _readable(key, value))
        warning = " It may delete or overwrite data (the server says so)." if destructive else ""
        return Description(details=lines,
                           question=f"Run {title!r} on the MCP server {server}?{warning}")

    return describe


def _readable(name: str, value: Any) -> list[str]:
    """``name: value`` lines for one argument, nested tables spelled as dotted names
    (``options.loud: True``) and lists of plain values joined, so every value shows as text."""
    if isinstance(value, dict) and value:
        return [line for key, inner in value.items() for line in _readable(f"{name}.{key}", inner)]
    if isinstance(value, list) and value:
        if all(not isinstance(item, dict | list) for item in value):
            return [f"{name}: " + ", ".join(str(item) for item in value)]
        return [line for n, item in enumerate(value) for line in _readable(f"{name}[{n}]", item)]
    if value is None or value in ({}, []):
        return [f"{name}: {json.dumps(value)}"]
    return [f"{name}: {value}"]


def sync_registry(registry: dict[str, Tool], wanted: dict[str, Tool]) -> bool:
    """Make the MCP tools in ``registry`` exactly ``wanted`` (other plugins' tools are never
    touched, and never replaced by a clashing MCP name).  True when something changed."""
    changed = False
    for name, tool in wanted.items():
        current = registry.get(name)
        if current is tool or (current is not None and current.plugin != PLUGIN):
            continue
        registry[name] = tool
        changed = True
    for name in [n for n, t in registry.items()
                 if n.startswith(PREFIX) and t.plugin == PLUGIN and n not in wanted]:
        del registry[name]
        changed = True
    return changed
