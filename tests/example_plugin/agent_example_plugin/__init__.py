"""Example third-party plugin: a `scribble` tool, a guard, and a `/scribbles` command."""

from __future__ import annotations

from agent import Effects, SlashCommand, Tool, ToolError, Verdict, hookimpl


async def _scribble(args, ctx):
    target = ctx.resolve(args["path"])
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(args["text"], encoding="utf-8")
    return f"scribbled {len(args['text'])} chars into {args['path']}"


SCRIBBLE = Tool(
    name="scribble",
    description="Write a short note into a file in the workspace.",
    run=_scribble,
    parameters={
        "type": "object",
        "properties": {"path": {"type": "string"}, "text": {"type": "string"}},
        "required": ["path", "text"],
        "additionalProperties": False,
    },
    # The path is declared as a write, so the gate asks and every path guard applies.
    effects=lambda args: Effects(writes=(args["path"],)),
)


@hookimpl
def agent_register_tools(register, config):
    register(SCRIBBLE)


@hookimpl
def agent_guard_tool_call(call, effects, session):
    """Refuse any write into a `forbidden/` directory, whichever tool asks."""
    for path in effects.writes:
        if path.replace("\\", "/").lstrip("./").startswith("forbidden/"):
            return Verdict.deny(f"the example plugin forbids writing {path}; pick another place")
    return None


def _list_scribbles(app, args):
    if getattr(app, "config", None) is None:
        raise ToolError("no config")
    files = sorted(p.name for p in app.config.workspace.glob("*.note"))
    text = "\n".join(files) or "no scribbles yet"
    if hasattr(app, "info"):
        app.info("scribbles", text)
    return text


@hookimpl
def agent_register_commands(register, config):
    register(SlashCommand("scribbles", "list *.note files in the workspace", _list_scribbles,
                          info=True))
