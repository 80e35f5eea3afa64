"""An MCP server on the SDK's low-level ``Server`` that uses the client features: it asks for
the client's roots, elicits an answer, reports progress, and publishes tool annotations.

Tools: ``whereami`` (the roots it was given), ``pick_color`` (asks the user, enum), ``slow``
(three progress notifications), ``peek`` (readOnlyHint), ``wipe`` (destructiveHint),
``make_report`` (returns a resource link); two ``memo://`` resources; a ``review`` prompt;
``summarise`` (asks the client's model through sampling); ``snapshot`` (text, a PNG image and
structured content); the ``memo://logo.png`` resource is a PNG.
Run: ``python mcp_features_server.py`` (stdio); ``make_server().streamable_http_app()`` is
the same server over Streamable HTTP.
"""

import json

import anyio
import mcp_types as types
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

EMPTY = {"type": "object", "properties": {}}

TOOLS = [
    types.Tool(name="whereami", description="The client's roots.", input_schema=EMPTY),
    types.Tool(name="pick_color", description="Ask the user for a colour.", input_schema=EMPTY),
    types.Tool(name="slow", description="Reports progress.", input_schema=EMPTY),
    types.Tool(name="peek", description="Reads only.", input_schema=EMPTY,
               annotations=types.ToolAnnotations(read_only_hint=True)),
    types.Tool(name="wipe", description="Deletes everything.", input_schema=EMPTY,
               annotations=types.ToolAnnotations(destructive_hint=True)),
    types.Tool(name="make_report", description="Writes a report, returns a link to it.",
               input_schema=EMPTY),
    types.Tool(name="summarise", description="Asks the client's model for a summary.",
               input_schema=EMPTY),
    types.Tool(name="snapshot", description="A picture of the screen.", input_schema=EMPTY),
]

#: A 1x1 red PNG.
PNG = ("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU"
       "5ErkJggg==")

RESOURCES = {
    "memo://notes/today": ("today", "text/plain", "buy tea\ncall Ada"),
    "memo://report/1": ("report 1", "text/markdown", "# Report\nall green"),
}


async def list_resources(ctx, params):
    return types.ListResourcesResult(resources=[
        types.Resource(uri=uri, name=name, mime_type=mime)
        for uri, (name, mime, _) in RESOURCES.items()] + [
        types.Resource(uri="memo://logo.png", name="logo", mime_type="image/png")])


async def read_resource(ctx, params):
    if str(params.uri) == "memo://logo.png":
        return types.ReadResourceResult(contents=[types.BlobResourceContents(
            uri="memo://logo.png", mime_type="image/png", blob=PNG)])
    name, mime, body = RESOURCES[str(params.uri)]
    return types.ReadResourceResult(contents=[
        types.TextResourceContents(uri=str(params.uri), mime_type=mime, text=body)])


def text(value) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=value)])


async def list_tools(ctx, params):
    return types.ListToolsResult(tools=TOOLS)


async def call_tool(ctx, params):
    if params.name == "whereami":
        roots = await ctx.session.list_roots()
        return text(json.dumps([str(r.uri) for r in roots.roots]))
    if params.name == "pick_color":
        answer = await ctx.session.elicit(
            "Which colour should the theme use?",
            {"type": "object", "properties": {
                "color": {"type": "string", "title": "colour", "enum": ["red", "blue"]}},
             "required": ["color"]}, related_request_id=ctx.request_id)
        return text(json.dumps({"action": answer.action, "content": answer.content}))
    if params.name == "slow":
        token = ctx.meta.get("progress_token") if isinstance(ctx.meta, dict) else \
            getattr(ctx.meta, "progress_token", None)
        for step in (1, 2, 3):
            if token is not None:
                await ctx.session.send_progress_notification(
                    token, step, 3, f"step {step}", related_request_id=ctx.request_id)
        return text("slow done")
    if params.name == "summarise":
        try:
            answer = await ctx.session.create_message(
                [types.SamplingMessage(role="user", content=types.TextContent(
                    type="text", text="Summarise: tea, milk, sugar."))],
                max_tokens=50, system_prompt="Be brief.", related_request_id=ctx.request_id)
        except Exception as exc:  # the client declined or failed: say so
            return text(json.dumps({"error": str(exc)}))
        return text(json.dumps({"model": answer.model, "text": answer.content.text}))
    if params.name == "snapshot":
        return types.CallToolResult(content=[
            types.TextContent(type="text", text="the screen now"),
            types.ImageContent(type="image", data=PNG, mime_type="image/png")],
            structured_content={"width": 1, "height": 1})
    if params.name == "make_report":
        return types.CallToolResult(content=[
            types.TextContent(type="text", text="report written"),
            types.ResourceLink(type="resource_link", uri="memo://report/1", name="report 1")])
    return text(f"{params.name} ran")


PROMPTS = [types.Prompt(name="review", description="Review a file", arguments=[
    types.PromptArgument(name="file", description="the file", required=True),
    types.PromptArgument(name="focus", description="what to look at", required=False)])]


async def list_prompts(ctx, params):
    return types.ListPromptsResult(prompts=PROMPTS)


async def get_prompt(ctx, params):
    args = params.arguments or {}
    wording = f"Review {args['file']} for {args.get('focus', 'correctness')}."
    return types.GetPromptResult(messages=[types.PromptMessage(
        role="user", content=types.TextContent(type="text", text=wording))])


def make_server() -> Server:
    """The server, for stdio (``main``) or Streamable HTTP (``server.streamable_http_app()``,
    served by the tests in a thread)."""
    return Server("features", on_list_tools=list_tools, on_call_tool=call_tool,
                  on_list_resources=list_resources, on_read_resource=read_resource,
                  on_list_prompts=list_prompts, on_get_prompt=get_prompt)


async def main() -> None:
    server = make_server()
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


if __name__ == "__main__":
    anyio.run(main)
