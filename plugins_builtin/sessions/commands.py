"""The commands of saved sessions: ``agent sessions``/``agent usage`` and ``/sessions``,
``/resume``, ``/save``, ``/clear``, ``/title``.

The command logic is pure functions over the store and the session that return the text to
show; the slash command wrappers pass it to ``app.info`` when the front end has one.  The
slash commands expect the front end's command context to expose the running session as
``app.session`` (its ``recorder`` carries the store).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import Any

from agent.contract.commands import show
from agent.lib.money import format_usd
from agent.state.store import Store, StoreError

from .saved import clear, open_store, resume, session_line, short_id, title_of

SLASH_LIMIT = 15
CLI_LIMIT = 50

# ---- listing --------------------------------------------------------------------------------


def sessions_text(store: Store, cwd: str, *, every_dir: bool = False,
                  limit: int = SLASH_LIMIT) -> str:
    """Saved sessions, newest first: this directory's, or every directory's."""
    records = store.sessions(None if every_dir else cwd, limit=limit)
    if not records:
        return "no saved sessions" + ("" if every_dir else " in this directory")
    return "\n".join(session_line(store, r, with_cwd=every_dir) for r in records)


def sessions_json(store: Store, cwd: str, *, every_dir: bool = False,
                  limit: int = CLI_LIMIT) -> str:
    """``agent sessions --json``: the saved sessions, newest first, as a JSON array of
    objects (``session_id``, ``title``, ``cwd``, ``created_at``/``updated_at`` in ISO 8601
    UTC, ``message_count``, ``provider``, ``model``, ``agent``)."""
    records = store.sessions(None if every_dir else cwd, limit=limit)
    return json.dumps([{
        "session_id": r.id, "title": r.title, "cwd": r.cwd,
        "created_at": _iso(r.created_at), "updated_at": _iso(r.updated_at),
        "message_count": r.message_count, "provider": r.provider, "model": r.model,
        "agent": r.agent} for r in records], ensure_ascii=False, indent=1)


def _iso(when: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(when))


# ---- usage report ---------------------------------------------------------------------------

GROUPINGS = ("day", "model", "tool", "subagent")


def parse_since(text: str) -> float:
    """``YYYY-MM-DD`` → the epoch seconds of local midnight that day (ValueError if bad)."""
    return time.mktime(time.strptime(text.strip(), "%Y-%m-%d"))


def _cost_cell(row: dict[str, Any]) -> str:
    unpriced = int(row.get("unpriced") or 0)
    if row.get("cost_usd") is None:
        return "unpriced"
    text = format_usd(float(row["cost_usd"]))
    return f"{text} (+{unpriced} unpriced)" if unpriced else text


def usage_text(store: Store, by: str = "day", since: float | None = None) -> str:
    """A table of requests, tokens and cost from the ledger, grouped ``by``, with a total."""
    rows = store.usage_groups(by, since=since)
    if not rows:
        what = {"tool": "requests made by tools", "subagent": "subagent requests"}.get(
            by, "model requests")
        return f"no {what} recorded" + (" in that period" if since is not None else " yet")
    header = (by, "requests", "input", "cached", "output", "cost")
    table = [header] + [
        (str(r["key"]), f"{r['requests']:,}", f"{r['input_tokens'] or 0:,}",
         f"{r['cached_tokens'] or 0:,}", f"{r['output_tokens'] or 0:,}", _cost_cell(r))
        for r in rows]
    total = _sum(rows)
    table.append(("total", f"{total['requests']:,}", f"{total['input_tokens'] or 0:,}",
                  f"{total['cached_tokens'] or 0:,}", f"{total['output_tokens'] or 0:,}",
                  _cost_cell(total)))
    widths = [max(len(row[i]) for row in table) for i in range(len(header))]
    lines = []
    for row in table:
        numbers = zip(row[1:-1], widths[1:-1], strict=True)
        cells = [row[0].ljust(widths[0])] + [c.rjust(w) for c, w in numbers]
        lines.append("  ".join(cells + [row[-1]]).rstrip())
    return "\n".join(lines)


def _sum(rows: list[dict[str, Any]]) -> dict[str, Any]:
    total: dict[str, Any] = {k: sum(int(r[k] or 0) for r in rows)
                             for k in ("requests", "input_tokens", "output_tokens",
                                       "cached_tokens", "unpriced")}
    priced = [float(r["cost_usd"]) for r in rows if r["cost_usd"] is not None]
    total["cost_usd"] = sum(priced) if priced else None
    return total


# ---- shell subcommands ----------------------------------------------------------------------


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> Any:  # usage problems exit 2 with one clear line
        raise _UsageError(f"{self.prog}: {message}")


class _UsageError(Exception):
    pass


def _open(boot: Any) -> Store | None:
    try:
        return open_store(boot.config)
    except StoreError as exc:
        print(f"agent: {exc}", file=sys.stderr)
        return None


def cmd_sessions(argv: list[str], boot: Any) -> int:
    """``agent sessions [--all] [-n N]``."""
    parser = _Parser(prog="agent sessions", add_help=True)
    parser.add_argument("--all", action="store_true", help="every directory, not only this one")
    parser.add_argument("-n", "--limit", type=int, default=CLI_LIMIT,
                        help=f"how many to list (default {CLI_LIMIT})")
    parser.add_argument("--json", action="store_true",
                        help="a JSON array for scripts, newest first (docs/sessions.md)")
    try:
        args = parser.parse_args(argv)
    except _UsageError as exc:
        print(f"agent: {exc}", file=sys.stderr)
        return 2
    except SystemExit as exc:  # --help
        return int(exc.code or 0)
    store = _open(boot)
    if store is None:
        return 1
    with store:
        if args.json:
            print(sessions_json(store, str(boot.config.workspace), every_dir=args.all,
                                limit=max(1, args.limit)))
        else:
            print(sessions_text(store, str(boot.config.workspace), every_dir=args.all,
                                limit=max(1, args.limit)))
    return 0


def cmd_usage(argv: list[str], boot: Any) -> int:
    """``agent usage [--by day|model|tool|subagent] [--since YYYY-MM-DD]``."""
    parser = _Parser(prog="agent usage", add_help=True)
    parser.add_argument("--by", choices=GROUPINGS, default="day",
                        help="group by local day (default), model, tool or subagent kind")
    parser.add_argument("--since", metavar="YYYY-MM-DD",
                        help="only requests from that local day on")
    try:
        args = parser.parse_args(argv)
    except _UsageError as exc:
        print(f"agent: {exc}", file=sys.stderr)
        return 2
    except SystemExit as exc:
        return int(exc.code or 0)
    since = None
    if args.since:
        try:
            since = parse_since(args.since)
        except ValueError:
            print(f'agent: --since needs a date like 2026-01-31, got "{args.since}"',
                  file=sys.stderr)
            return 2
    store = _open(boot)
    if store is None:
        return 1
    with store:
        print(usage_text(store, args.by, since))
    return 0


# ---- slash commands -------------------------------------------------------------------------


def _session(app: Any) -> Any:
    return getattr(app, "session", None)


NOT_SAVED = "sessions are not being saved in this run"


def slash_sessions(session: Any, args: str) -> str:
    """``/sessions`` (this directory) or ``/sessions all``: the last 15."""
    recorder = getattr(session, "recorder", None)
    if recorder is None:
        return NOT_SAVED
    every = args.strip() == "all"
    if args.strip() and not every:
        return "usage: /sessions [all]"
    return sessions_text(recorder.store, recorder.cwd, every_dir=every)


def slash_save(session: Any) -> str:
    """``/save``: write the session now (messages are already committed as they happen)."""
    recorder = getattr(session, "recorder", None)
    if recorder is None:
        return NOT_SAVED
    if not session.messages:
        return "nothing to save yet: this session has no messages"
    if not recorder.save(session):
        return f"could not save the session: {recorder.error}"
    return f"saved {session.id}"


def slash_title(session: Any, args: str) -> str:
    """``/title TEXT`` names the session; bare ``/title`` shows the name."""
    recorder = getattr(session, "recorder", None)
    if recorder is None:
        return NOT_SAVED
    text = " ".join(args.split())
    if not text:
        current = recorder.title
        return f"title: {current}" if current else "usage: /title <text>"
    recorder.set_title(session, text)
    if recorder.error:
        return f"could not save the title: {recorder.error}"
    sid = short_id(recorder.store, session.id) if session.messages else session.id[:8]
    return f"session {sid} is now titled: {text}"


def run_sessions(app: Any, args: str) -> str | None:
    return show(app, slash_sessions(_session(app), args))


def age(seconds: float) -> str:
    """``just now``, ``12 min ago``, ``3 h ago``, ``5 days ago``."""
    if seconds < 60:
        return "just now"
    if seconds < 3600:
        return f"{int(seconds // 60)} min ago"
    if seconds < 86400:
        return f"{int(seconds // 3600)} h ago"
    days = int(seconds // 86400)
    return f"{days} day{'s' if days != 1 else ''} ago"


def session_choices(session: Any, now: float | None = None) -> list[tuple[str, str, str]]:
    """This directory's other saved sessions for a picker: (title, id, "age  N msgs  $cost"),
    newest first."""
    recorder = session.recorder
    store = recorder.store
    now = time.time() if now is None else now
    costs = {g["key"]: g for g in store.usage_groups("session")}
    out = []
    for record in store.sessions(recorder.cwd, limit=200):
        if record.id == session.id or not record.message_count:
            continue
        spend = costs.get(record.id) or {}
        usd = spend.get("cost_usd")
        cost = format_usd(usd) if usd else ("unpriced" if spend.get("unpriced") else "$0.00")
        out.append((title_of(record), record.id,
                    f"{age(now - record.updated_at)}  {record.message_count} msgs  {cost}"))
    return out


async def _pick_and_resume(app: Any, session: Any) -> str | None:
    choices = session_choices(session)
    if not choices:
        return show(app, "no other saved session in this directory")
    chosen = await app.pick(f"Resume a session ({len(choices)} in this directory)", choices,
                            filterable=True)
    if not chosen:
        return None
    return run_resume(app, chosen)


def run_resume(app: Any, args: str) -> Any:
    session = _session(app)
    if session is None:
        return show(app, NOT_SAVED)
    if not args.strip() and callable(getattr(app, "pick", None)) \
            and getattr(session, "recorder", None) is not None:
        return _pick_and_resume(app, session)  # arrows, typing to filter, enter resumes
    text = resume(session, args)
    if text.startswith("resumed "):
        wipe = getattr(app, "clear_transcript", None)
        if callable(wipe):
            wipe()
        reload = getattr(app, "show_history", None)
        if callable(reload):
            reload()
    return show(app, text)


def run_save(app: Any, args: str) -> str | None:
    return show(app, slash_save(_session(app)))


def run_clear(app: Any, args: str) -> str | None:
    session = _session(app)
    if session is None:
        return show(app, NOT_SAVED)
    if getattr(session, "busy", False):
        return show(app, "a turn is running; wait for it (or press esc) before clearing")
    text = clear(session)
    wipe = getattr(app, "clear_screen", None) or getattr(app, "clear_transcript", None)
    if callable(wipe):
        wipe()
    return show(app, text)


def run_title(app: Any, args: str) -> str | None:
    return show(app, slash_title(_session(app), args))
