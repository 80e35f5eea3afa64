"""The ask tool: the model asks the user a question, optionally with choices, and waits.

The front end answers through ``Runtime.asker(question, options, multiple)`` (options are
``{"label", "detail"}`` dicts, the recommended one first); it returns the chosen label, a
list of labels, the user's own words, or None when the user dismissed the question.  For a
front end that predates ``asker``, ``runtime.ui.ask(question, options, multiple=...)`` is
used.  With neither (headless runs, tests without a channel) the tool is not offered, and
subagents never get it.

``ask`` changes nothing, so it is marked read-only and stays available in the plan and
review agents: a plan often hinges on a question only the user can answer.  Questions are
put one at a time, even when the model asks several in one step.
"""

from __future__ import annotations

import asyncio
import weakref
from typing import Any

from agent import NO_EFFECTS, Description, Tool, ToolError, hookimpl
from agent.loop.session import root_session

DISMISSED = "The user dismissed this; use your best judgement."
NO_CHANNEL = ("Nobody can answer questions in this session; decide yourself and say what you "
              "assumed.")

PARAMETERS = {
    "type": "object",
    "properties": {
        "question": {"type": "string", "minLength": 1,
                     "description": "One clear question, with the context needed to answer "
                                    "it."},
        "options": {
            "type": "array", "maxItems": 12,
            "description": "Suggested answers, your recommendation first. The user may also "
                           "type an answer of their own.",
            "items": {
                "type": "object",
                "properties": {"label": {"type": "string", "minLength": 1},
                               "detail": {"type": "string"}},
                "required": ["label"], "additionalProperties": False,
            },
        },
        "multiple": {"type": "boolean",
                     "description": "Let the user pick several options (default false)."},
    },
    "required": ["question"],
    "additionalProperties": False,
}


def asker_for(runtime: Any) -> Any:
    """The front end's question channel for ``runtime``, or None."""
    asker = getattr(runtime, "asker", None)
    if asker is not None:
        return asker
    ask = getattr(getattr(runtime, "ui", None), "ask", None)
    if ask is None:
        return None
    return lambda question, options, multiple: ask(question, options, multiple=multiple)


def render_answer(answer: Any) -> str:
    """What the model is told for the front end's ``answer``."""
    if answer is None:
        return DISMISSED
    if isinstance(answer, (list, tuple)):
        chosen = [str(a) for a in answer if str(a).strip()]
        if not chosen:
            return "The user chose none of the options."
        return "The user chose: " + "; ".join(chosen)
    text = str(answer).strip()
    return f"The user answered: {text}" if text else DISMISSED


_locks: weakref.WeakKeyDictionary[Any, tuple[Any, asyncio.Lock]] = weakref.WeakKeyDictionary()


def _lock(session: Any) -> asyncio.Lock:
    """One question at a time per main session (and event loop)."""
    root = root_session(session)
    loop = asyncio.get_running_loop()
    found = _locks.get(root)
    if found is None or found[0] is not loop:
        found = (loop, asyncio.Lock())
        _locks[root] = found
    return found[1]


async def run_ask(args: dict[str, Any], ctx: Any) -> str:
    session = ctx.session
    runtime = getattr(session, "runtime", None)
    asker = asker_for(runtime)
    if asker is None:
        raise ToolError(NO_CHANNEL)
    options = [{"label": str(o["label"]), "detail": str(o.get("detail") or "")}
               for o in args.get("options") or []]
    async with _lock(session):
        answer = await asker(str(args["question"]), options, bool(args.get("multiple")))
    return render_answer(answer)


@hookimpl
def agent_register_tools(register, config):
    register(Tool(
        name="ask", description="Ask the user a question and wait for the answer. Use it when "
        "a wrong guess would be costly; otherwise take the most reasonable reading and say so.",
        run=run_ask, parameters=PARAMETERS, effects=lambda args: NO_EFFECTS, read_only=True,
        subjectless=True,
        describe=lambda args: Description(
            (str(args.get("question") or "").split("\n", 1)[0],), "Ask you a question?"),
        prompt="only for decisions you cannot make yourself; offer options, your "
               "recommendation first."))


@hookimpl
def agent_offered_tools(tools, session):
    if session.origin == "model" and not session.config.headless \
            and asker_for(session.runtime) is not None:
        return None
    return [t for t in tools if t.name != "ask"]
