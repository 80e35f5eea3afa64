"""Adds ``current_time``: the date and time now, auto-approved."""

from __future__ import annotations

import datetime

from agent import NO_EFFECTS, Tool, hookimpl


async def _now(args, ctx) -> str:
    now = datetime.datetime.now().astimezone()
    return f"{now.isoformat(timespec='seconds')} (local: {now.strftime('%a %b %d %Y %H:%M:%S %Z')})"


CURRENT_TIME = Tool(
    name="current_time",
    description="The current date and time (ISO 8601, with the local time zone).",
    run=_now,
    parameters={"type": "object", "properties": {}, "additionalProperties": False},
    effects=lambda args: NO_EFFECTS,
    subjectless=True,
    read_only=True,
)


@hookimpl
def agent_register_tools(register, config):
    register(CURRENT_TIME)
