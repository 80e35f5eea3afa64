"""An MCP server built on the SDK's low-level ``Server`` whose tools publish the schemas real
servers publish: top-level ``anyOf``/``allOf``/``oneOf``, ``$ref``/``$defs`` (with a cycle),
plus tools no provider can take (a property name with a space, a 90 KB schema) and a
task-only tool.

Every callable tool answers with its arguments as JSON, so a test sees what arrived.
Run: ``python mcp_schema_server.py`` (stdio).
"""

import json

import anyio
import mcp_types as types
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

ITEM = {"type": "object", "properties": {"name": {"type": "string"},
                                         "child": {"$ref": "#/$defs/Item"}},
        "required": ["name"]}

TOOLS = [
    types.Tool(name="search", description="Search by query or by id.", input_schema={
        "$schema": "https://json-schema.org/draft/2020-12/schema", "type": "object",
        "anyOf": [
            {"type": "object", "properties": {"query": {"type": "string"},
                                              "limit": {"type": "integer"}},
             "required": ["query"]},
            {"type": "object", "properties": {"id": {"type": "integer"},
                                              "limit": {"type": "integer"}},
             "required": ["id"]}]}),
    types.Tool(name="create", description="Create an item tree.", input_schema={
        "type": "object", "properties": {"item": {"$ref": "#/$defs/Item"}},
        "required": ["item"], "$defs": {"Item": ITEM}}),
    types.Tool(name="merge", description="Both halves.", input_schema={
        "type": "object", "allOf": [{"type": "object", "properties": {"a": {"type": "string"}},
                   "required": ["a"]},
                  {"type": "object", "properties": {"b": {"type": "number"}},
                   "required": ["b"]}]}),
    types.Tool(name="pick", description="oneOf of refs.", input_schema={
        "type": "object",
        "oneOf": [{"$ref": "#/definitions/ByName"}, {"$ref": "#/definitions/ByTag"}],
        "definitions": {
            "ByName": {"type": "object", "properties": {"name": {"type": "string"}},
                       "required": ["name"]},
            "ByTag": {"type": "object", "properties": {"tag": {"type": "string"}},
                      "required": ["tag"]}}}),
    types.Tool(name="lookup", description="Give id or slug.", input_schema={
        # The usual "one of these arguments" schema: branches that only list what is required.
        "type": "object",
        "properties": {"id": {"type": "integer"}, "slug": {"type": "string"}},
        "oneOf": [{"required": ["id"]}, {"required": ["slug"]}]}),
    types.Tool(name="echo", description="Echo.", input_schema={
        "type": "object", "properties": {"text": {"type": "string"}}}),
    types.Tool(name="huge", description="A schema too large to send with every request.",
               input_schema={"type": "object", "properties": {
                   f"field_{n}": {"type": "string", "description": "x" * 200}
                   for n in range(400)}}),
    types.Tool(name="spaced", description="A property name providers refuse.",
               input_schema={"type": "object", "properties": {"bad key": {"type": "string"}}}),
    types.Tool(name="taskonly", description="Runs only as a task.",
               input_schema={"type": "object", "properties": {}},
               execution=types.ToolExecution(task_support="required")),
]


async def list_tools(ctx, params):
    return types.ListToolsResult(tools=TOOLS)


async def call_tool(ctx, params):
    text = json.dumps({"tool": params.name, "arguments": params.arguments or {}},
                      sort_keys=True)
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)])


async def main() -> None:
    server = Server("schemas", on_list_tools=list_tools, on_call_tool=call_tool)
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


if __name__ == "__main__":
    anyio.run(main)
