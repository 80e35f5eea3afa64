"""A server's prompts as slash commands: ``/mcp__<server>__<prompt> args``.

The command fetches the prompt with its arguments filled in and sends the text as the user's
prompt. Arguments are given in the order the server declares them, or as ``name=value``; a
missing required one is named in the error. Commands are registered from the prompts known now:
cached at the last connection (like tools) at start, and the server's own list once it has
connected, so a new server's prompts are commands in the same run (the UI asks again when its
/ menu opens and when a command is not found).
"""

from __future__ import annotations

import shlex
from typing import Any

from agent import SlashCommand

from .tools import tool_name


def parse_arguments(declared: list[dict[str, Any]], text: str) -> dict[str, str]:
    """``a b`` or ``name=value`` words → the prompt's arguments; raises ValueError naming a
    missing required argument or an unknown name."""
    try:
        words = shlex.split(text)
    except ValueError as exc:
        raise ValueError(f"cannot read the arguments: {exc}") from None
    names = [a["name"] for a in declared]
    values: dict[str, str] = {}
    positional = iter(names)
    for word in words:
        key, sep, value = word.partition("=")
        if sep and key in names:
            values[key] = value
            continue
        name = next((n for n in positional if n not in values), None)
        if name is None:
            raise ValueError(f"too many arguments: {word!r} (the prompt takes "
                             f"{', '.join(names) or 'none'})")
        values[name] = word
    missing = [a["name"] for a in declared if a.get("required") and a["name"] not in values]
    if missing:
        raise ValueError(f"missing argument: {', '.join(missing)}")
    return values


def prompt_commands(st: Any) -> list[SlashCommand]:
    """One command per cached prompt of every configured server."""
    commands = []
    for server in sorted(st.manager.servers):
        for prompt in st.manager.prompts.get(server, []):
            commands.append(_command(st, server, prompt))
    return commands


def _command(st: Any, server: str, prompt: dict[str, Any]) -> SlashCommand:
    declared = prompt.get("arguments") or []
    usage = " ".join(f"<{a['name']}>" if a.get("required") else f"[{a['name']}]"
                     for a in declared)

    async def run(app: Any, args: str) -> str | None:
        from .connection import CallFailed

        try:
            values = parse_arguments(declared, args)
            text = await st.manager.prompt(server, prompt["name"], values)
        except (ValueError, CallFailed) as exc:
            error = getattr(app, "error", None)
            if callable(error):
                error(f"/{tool_name(server, prompt['name'])}: {exc}")
                return None
            return str(exc)
        for name in ("run_prompt", "submit"):
            start = getattr(app, name, None)
            if callable(start):
                start(text)
                return None
        return text

    summary = prompt.get("description") or f"the {prompt['name']} prompt of {server}"
    return SlashCommand(tool_name(server, prompt["name"]), f"{summary} (MCP {server})", run,
                        args=usage, takes_args=bool(declared))
