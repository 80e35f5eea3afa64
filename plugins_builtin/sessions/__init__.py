"""Saved sessions: every message committed to the state database as it happens, ``-c``/``-r``
and ``/resume`` to continue one, ``agent sessions``/``agent usage``, ``/sessions``, ``/save``,
``/clear`` and ``/title``.

This package is the whole feature: :mod:`.recorder` (writing a session as it runs),
:mod:`.saved` (finding, loading and closing one) and :mod:`.commands`; here, the hooks.  The
core reaches it only through ``agent_find_session``, ``agent_open_session``,
``agent_close_session`` and ``agent_farewell``.  Disabled (``--disable sessions``), nothing
is saved, ``-c``/``-r`` exit 2 saying no enabled plugin keeps saved sessions, and these
commands are gone.
"""

from __future__ import annotations

import sqlite3
from typing import Any

from agent import SlashCommand, hookimpl
from agent.loop.session import SessionLookupError
from agent.state.store import REPAIR_HINT, StoreError, is_damage

from . import saved
from .commands import (
    cmd_sessions,
    cmd_usage,
    run_clear,
    run_resume,
    run_save,
    run_sessions,
    run_title,
)


@hookimpl
def agent_find_session(config: Any, continue_: bool, resume: str | None) -> str | None:
    if not (continue_ or resume):
        return None
    try:
        with saved.open_store(config) as store:
            return saved.find_session(store, str(config.workspace), continue_=continue_,
                                      resume=resume).id
    except StoreError as exc:
        raise SessionLookupError(str(exc)) from None
    except sqlite3.DatabaseError as exc:
        if not is_damage(exc):
            raise
        raise SessionLookupError(f"{exc}; {REPAIR_HINT}") from None


@hookimpl
def agent_open_session(runtime: Any, session_id: str | None) -> Any:
    try:
        return saved.open_session(runtime, session_id=session_id,
                                  provider=runtime.provider_name)
    except sqlite3.DatabaseError as exc:
        if not is_damage(exc):
            raise
        raise SessionLookupError(f"cannot open the saved session: {exc}; {REPAIR_HINT}"
                                 ) from None


@hookimpl
def agent_close_session(session: Any) -> Any:
    return saved.close(session)


@hookimpl
def agent_farewell(session: Any) -> str:
    return saved.farewell(session)


@hookimpl
def agent_persisted_keys(config):
    # the id a run continuing this session in another process was forked off, so that
    # process finds the fork (see SessionRecorder)
    return ["forked_from"]


@hookimpl
def agent_register_cli_commands(register):
    register("sessions", cmd_sessions, "list saved sessions", usage=[
        ("[--all] [--json]", "saved sessions of this directory (resume with -c or -r ID); "
                            "--json: a JSON array for scripts")])
    register("usage", cmd_usage, "tokens and cost from the usage ledger", usage=[
        ("[--by day|model|tool|subagent] [--since YYYY-MM-DD]",
         "tokens and cost from the usage ledger")])


@hookimpl
def agent_register_commands(register, config):
    register(SlashCommand("sessions", "list saved sessions (this directory; 'all' for every)",
                          run_sessions, args="[all]", info=True))
    register(SlashCommand("resume", "load a saved session by id or id prefix", run_resume,
                          args="<id>", takes_args=True))
    register(SlashCommand("save", "save the session now", run_save, info=True))
    register(SlashCommand("clear", "start a fresh session (the old one stays saved)",
                          run_clear, info=True))
    register(SlashCommand("title", "name this session", run_title, args="<text>",
                          takes_args=True, info=True))

