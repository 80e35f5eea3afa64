"""``!command``: a shell command the person runs from the prompt, its output kept for the model.

The command is a call of the ``bash`` tool with ``origin="user"`` and ``by_user=True``.  It goes
through the same gate as the model's calls (guards, deny rules, plan mode: a deny still
wins) and runs through the same tool, so it is sandboxed and its environment is scrubbed
exactly as the model's commands are.  Typing it was the person's approval, so what the rules
would ask about runs without a dialog.

The command and its output (or why it was refused) are appended to the history as a user
message, so the next request carries them; nothing is sent to the model now.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING

from agent.contract import events as ev
from agent.contract.messages import Message, ToolResultPart
from agent.contract.tools import ToolCall
from agent.contract.validate import check_arguments

if TYPE_CHECKING:
    from agent.loop.session import Session

#: the tool a ``!command`` is a call of
SHELL_TOOL = "bash"
#: the origin its events and the gate's callers see
USER_ORIGIN = "user"


def history_text(command: str, output: str, *, refused: bool = False,
                 failed: bool = False) -> str:
    """The user message that keeps a ``!command`` for the next turn (Claude Code's tags, so a
    model used to them reads them the same way)."""
    if refused:
        return (f"<bash-input>{command}</bash-input>\n"
                f"<bash-refused>{output}</bash-refused>")
    tag = "bash-error" if failed else "bash-output"
    return f"<bash-input>{command}</bash-input>\n<{tag}>{output}</{tag}>"


async def run_user_command(session: Session, command: str) -> AsyncIterator[ev.Event]:
    """Gate and run ``command`` as the person's own bash call; yields the call's events and
    appends the command and its result to the history."""
    tool = session.tools.get(SHELL_TOOL)
    if tool is None:
        yield ev.ErrorEvent("!command runs the bash tool, and no plugin provides it here "
                            "(is the bash plugin disabled?)", "internal")
        return
    args = {"command": command}
    call = ToolCall(f"user_{uuid.uuid4().hex[:16]}", tool.name, dict(args),
                    origin=USER_ORIGIN, by_user=True)
    yield ev.ToolCallEvent(call.id, tool.name, dict(args), USER_ORIGIN)
    try:
        check_arguments(tool, args)
        effects = tool.effects(args)
    except Exception as exc:  # the tool cannot say what the command does: it does not run
        message = f"{tool.name} could not work out what this command would do: {exc}"
        yield ev.ToolErrorEvent(call.id, tool.name, message)
        session._append(Message.user(history_text(command, message, failed=True)))
        return
    decision = await session.gate.decide(call, tool, effects, session)
    for text in decision.notices:
        yield ev.NoticeEvent(text)
    if not decision.allowed:
        yield ev.ToolDeniedEvent(call.id, tool.name, decision.message, decision.by)
        session._append(Message.user(history_text(command, decision.message, refused=True)))
        return
    results: dict[str, ToolResultPart] = {}
    session._allowed_by[call.id] = decision.allowed_by  # typed by the person: "user"
    session.busy = True
    try:
        async for event in session._execute_batch([(call, tool, args, effects)], results):
            yield event
    finally:
        session.busy = False
        part = results.get(call.id)
        if part is not None:
            session._append(Message.user(history_text(command, part.output,
                                                      failed=part.is_error)))
