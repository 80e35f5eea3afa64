"""Shared pieces of the fault tests: a session over the fake provider in each wire format,
and the check that the prompt after a failure works."""

from __future__ import annotations

import asyncio

from fakeprovider import Reply
from waiting import until
from wirecheck import assert_valid_request

from agent import NO_EFFECTS, Tool, hookimpl
from agent.contract import events as ev
from agent.testing import collect, make_boot, make_session

FORMATS = [("openai", "chat"), ("openai", "responses"), ("anthropic", "")]
IDS = ["chat", "responses", "anthropic"]

#: A deadline or timeout a test fires by moving the event loop's clock past it
#: (``waiting.LoopClock``): never reached in real time, however loaded the machine.
LONG = 30

#: SSE events to let through so that some, not all, of a 3- or 4-piece answer arrives.
MID_TEXT = {"chat": 3, "responses": 6, "anthropic": 4}


def mid_text(fmt) -> int:
    return MID_TEXT[fmt[1] or "anthropic"]


class Peek:
    """A read-only tool, so steps with tool calls run without approval."""

    @hookimpl
    def agent_register_tools(self, register, config):
        async def peek(args, ctx):
            return "peeked at " + args["what"]

        register(Tool("peek", "Look at something.", peek,
                      {"type": "object", "properties": {"what": {"type": "string"}},
                       "required": ["what"]},
                      effects=lambda a: NO_EFFECTS, read_only=True))


def open_session(tmp_path, srv, fmt, *, retries=0, extra=(), builtins=(), approver=None,
                 **config):
    """A session on ``fmt`` (``(provider, openai_api)``) against the fake server ``srv``;
    ``config`` keys go in the config file layer."""
    provider, api = fmt
    ws = tmp_path / "ws"
    ws.mkdir(exist_ok=True)
    file_data = {"openai_api": api} if api else {}
    file_data.update(config)
    cfg, hooks = make_boot(ws, tmp_path / "home",
                           builtins=["openai", "anthropic", *builtins],
                           extra=[("peek", Peek()), *extra], file_data=file_data)
    url = srv.openai_url if provider == "openai" else srv.base_url
    return make_session(cfg, hooks, provider=provider, base_url=url, max_retries=retries,
                        approver=approver)


def error_of(events) -> ev.ErrorEvent:
    """The turn's one error event (the turn ended on it)."""
    errors = [e for e in events if isinstance(e, ev.ErrorEvent)]
    assert len(errors) == 1, events
    assert events[-1].type == "done" and events[-1].reason == "error"
    return errors[0]


async def next_prompt_works(session, srv) -> list[str]:
    """Run a second prompt; it must succeed and its request must be valid.  Returns the
    roles (or item kinds) of that request."""
    srv.script(Reply.text("second answer"))
    before = len(srv.requests)
    events = await collect(session, "and now?")
    assert events[-1].reason == "end", events
    assert session.messages[-1].text == "second answer"
    assert len(srv.requests) == before + 1
    return assert_valid_request(srv.requests[-1])


def shown_text(events) -> str:
    return "".join(e.text for e in events if isinstance(e, ev.TextEvent))


class Turn:
    """A prompt's turn running as a task, its events collected as they come."""

    def __init__(self, session, prompt: str) -> None:
        self.events: list = []
        self.task = asyncio.ensure_future(self._run(session, prompt))

    async def _run(self, session, prompt: str) -> None:
        async for event in session.run(prompt):
            self.events.append(event)

    async def ended(self) -> list:
        """The events, once the turn ended (bounded in real time, not on the loop's clock)."""
        await until(self.task.done, "the turn to end")
        self.task.result()
        return self.events
