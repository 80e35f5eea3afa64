"""Project memory: remember, recall and forget notes that outlive the session; /notes,
/memory, /remember (and ``#note`` typed at the start of a prompt).

Notes live in the state database (``memory`` table, one project per absolute workspace path),
with an FTS5 full-text index where SQLite has it; the plugin owns the table through its store
schema (:data:`SCHEMA`, the ``agent_store_schema`` hook).  At the start of a session the 20
most used (then newest) notes go into the system prompt with a caveat to verify them against
the code.
``--no-memory`` (or ``memory = false``) turns it all off: nothing is loaded, nothing written,
and the tools are not offered.
"""

from __future__ import annotations

import logging
import re
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any

from agent import (
    NO_EFFECTS,
    Description,
    Fragment,
    HeaderLine,
    Option,
    SlashCommand,
    Tool,
    ToolError,
    hookimpl,
)
from agent.contract.commands import show
from agent.contract.messages import Message
from agent.contract.providers import ProviderRequest, StepFinished, TextDelta
from agent.loop.session import new_session_id
from agent.state.store import Store, StoreSchema

log = logging.getLogger("agent.memory")

KINDS = ("fact", "decision", "gotcha", "command")
MAX_TEXT = 400
MAX_NOTES = 300  # per project, newest kept
RECALL_LIMIT = 15
BOOT_LIMIT = 20

BOOT_HEADER = ("What you learned about this project in earlier sessions. Trust it, but verify "
               "anything that contradicts what you can see in the code now:")

COMPACT_SYSTEM = """\
You tidy the notes a coding agent saved about one project. You get notes that were never used.
Merge duplicates and near-duplicates, drop notes that are trivial or contradicted by another
note, and keep every fact that is still useful. Answer with the notes only, one per line, in
the form `[kind] text`, where kind is fact, decision, gotcha or command and text is at most
400 characters. No other lines."""

#: The plugin's tables, versioned on their own (agent.state.schema).  v1 adopts the table the
#: core's schema v3 created in databases from before the plugin owned it (hence IF NOT
#: EXISTS): their notes stay where they are.  Append migrations; never edit a shipped one.
SCHEMA = StoreSchema("memory", (
    """
    CREATE TABLE IF NOT EXISTS memory (
        n           INTEGER PRIMARY KEY AUTOINCREMENT,
        id          TEXT NOT NULL UNIQUE,
        project     TEXT NOT NULL,
        kind        TEXT NOT NULL,
        text        TEXT NOT NULL,
        created_at  REAL NOT NULL,
        hits        INTEGER NOT NULL DEFAULT 0,
        last_hit    REAL
    );
    CREATE UNIQUE INDEX IF NOT EXISTS memory_by_text ON memory (project, text);
    CREATE INDEX IF NOT EXISTS memory_by_project ON memory (project, created_at);
    """,
))

# The full-text index is derived data, created where SQLite has FTS5 (not a migration, so a
# build without FTS5 can still open the database).
FTS_SCHEMA = (
    "CREATE VIRTUAL TABLE IF NOT EXISTS memory_fts USING fts5 ("
    "text, content='memory', content_rowid='n', tokenize='unicode61 remove_diacritics 2')",
    "CREATE TRIGGER IF NOT EXISTS memory_fts_insert AFTER INSERT ON memory BEGIN "
    "INSERT INTO memory_fts (rowid, text) VALUES (new.n, new.text); END",
    "CREATE TRIGGER IF NOT EXISTS memory_fts_delete AFTER DELETE ON memory BEGIN "
    "INSERT INTO memory_fts (memory_fts, rowid, text) VALUES ('delete', old.n, old.text); END",
    "CREATE TRIGGER IF NOT EXISTS memory_fts_update AFTER UPDATE OF text ON memory BEGIN "
    "INSERT INTO memory_fts (memory_fts, rowid, text) VALUES ('delete', old.n, old.text); "
    "INSERT INTO memory_fts (rowid, text) VALUES (new.n, new.text); END",
)


class Memory:
    """The notes of one project in one state database."""

    def __init__(self, store: Store, project: str) -> None:
        self.store = store
        self.project = project
        self.fts = _ensure_fts(store)

    # ---- reading ----

    def count(self) -> int:
        return int(self.store.query("SELECT COUNT(*) FROM memory WHERE project = ?",
                                    (self.project,))[0][0])

    def notes(self) -> list[sqlite3.Row]:
        """Every note, newest first."""
        return self.store.query(
            "SELECT * FROM memory WHERE project = ? ORDER BY created_at DESC, n DESC",
            (self.project,))

    def top(self, limit: int = BOOT_LIMIT) -> list[sqlite3.Row]:
        """The most used notes, then the newest."""
        return self.store.query(
            "SELECT * FROM memory WHERE project = ? ORDER BY hits DESC, created_at DESC, n DESC "
            "LIMIT ?", (self.project, limit))

    # ---- the tools' logic ----

    def remember(self, kind: str, text: str) -> str:
        text = text.strip()
        if not text:
            raise ToolError("Nothing to remember: text is empty.")
        if kind not in KINDS:
            raise ToolError(f'Unknown kind "{kind}". Use one of: {", ".join(KINDS)}.')
        if len(text) > MAX_TEXT:
            raise ToolError(f"Too long ({len(text)} characters); a note holds at most "
                            f"{MAX_TEXT}. Keep only the fact itself.")
        with self.store.transaction() as conn:
            if conn.execute("SELECT 1 FROM memory WHERE project = ? AND text = ?",
                            (self.project, text)).fetchone():
                return f"Already recorded: {text}"
            conn.execute("INSERT INTO memory (id, project, kind, text, created_at) "
                         "VALUES (?, ?, ?, ?, ?)",
                         (new_session_id(), self.project, kind, text, time.time()))
            conn.execute(
                "DELETE FROM memory WHERE project = ? AND n NOT IN (SELECT n FROM memory "
                "WHERE project = ? ORDER BY created_at DESC, n DESC LIMIT ?)",
                (self.project, self.project, MAX_NOTES))
            stored = conn.execute("SELECT COUNT(*) FROM memory WHERE project = ?",
                                  (self.project,)).fetchone()[0]
        return f"Remembered as {kind} ({stored} stored): {text}"

    def search(self, query: str) -> list[sqlite3.Row]:
        """Notes where every term is a word prefix (full-text index) or a substring
        (case-insensitive), newest first."""
        terms = query.lower().split()
        if not terms:
            return []
        ids: set[int] = set()
        if self.fts:
            match = " AND ".join('"' + t.replace('"', '""') + '"*' for t in terms)
            try:
                ids.update(r[0] for r in self.store.query(
                    "SELECT m.n FROM memory_fts f JOIN memory m ON m.n = f.rowid "
                    "WHERE memory_fts MATCH ? AND m.project = ?", (match, self.project)))
            except sqlite3.Error as exc:  # an odd query must not break recall
                log.debug("fts query %r failed: %s", match, exc)
        for row in self.notes():
            low = row["text"].lower()
            if all(t in low for t in terms):
                ids.add(row["n"])
        if not ids:
            return []
        marks = ",".join("?" * len(ids))
        return self.store.query(
            f"SELECT * FROM memory WHERE n IN ({marks}) ORDER BY created_at DESC, n DESC",
            tuple(ids))

    def recall(self, query: str) -> str:
        if not query.strip():
            raise ToolError("recall needs a query: the words to look for.")
        found = self.search(query)
        if not found:
            return f'Nothing recorded about "{query.strip()}".'
        with self.store.transaction() as conn:
            marks = ",".join("?" * len(found))
            conn.execute(f"UPDATE memory SET hits = hits + 1, last_hit = ? WHERE n IN ({marks})",
                         (time.time(), *(r["n"] for r in found)))
        return "\n".join(f"({r['kind']}) {r['text']}" for r in found[:RECALL_LIMIT])

    def forget(self, text: str) -> str:
        needle = text.strip().lower()
        if not needle:
            raise ToolError("forget needs the text (or part of it) of the note to remove.")
        gone = [r["n"] for r in self.notes() if needle in r["text"].lower()]
        if not gone:
            return f'No memory matches "{text.strip()}".'
        with self.store.transaction() as conn:
            conn.execute(f"DELETE FROM memory WHERE n IN ({','.join('?' * len(gone))})",
                         tuple(gone))
        return f"Forgot {len(gone)} {'memory' if len(gone) == 1 else 'memories'}."

    # ---- compaction ----

    def unused(self) -> list[sqlite3.Row]:
        return [r for r in self.notes() if r["hits"] == 0]

    def replace_unused(self, notes: list[tuple[str, str]]) -> int:
        """Swap every unused note for ``notes`` in one transaction; returns how many are
        stored for the project afterwards."""
        with self.store.transaction() as conn:
            conn.execute("DELETE FROM memory WHERE project = ? AND hits = 0", (self.project,))
            now = time.time()
            for offset, (kind, text) in enumerate(notes):
                conn.execute(
                    "INSERT OR IGNORE INTO memory (id, project, kind, text, created_at) "
                    "VALUES (?, ?, ?, ?, ?)",
                    (new_session_id(), self.project, kind, text, now + offset * 1e-6))
            return int(conn.execute("SELECT COUNT(*) FROM memory WHERE project = ?",
                                    (self.project,)).fetchone()[0])


def _ensure_fts(store: Store) -> bool:
    """Create the full-text index if this SQLite has FTS5 (rebuilt when new)."""
    try:
        existed = bool(store.query(
            "SELECT 1 FROM sqlite_master WHERE name = 'memory_fts'"))
        with store.transaction() as conn:
            for statement in FTS_SCHEMA:
                conn.execute(statement)
            if not existed:
                conn.execute("INSERT INTO memory_fts (memory_fts) VALUES ('rebuild')")
        return True
    except sqlite3.Error as exc:
        log.info("no full-text index for memory (substring search only): %s", exc)
        return False


def parse_notes(text: str) -> list[tuple[str, str]]:
    """``[kind] text`` lines from a model's answer; anything else is ignored."""
    notes: list[tuple[str, str]] = []
    seen: set[str] = set()
    for line in text.splitlines():
        m = re.match(r"^\s*(?:[-*]\s*)?\[(\w+)\]\s*(.+?)\s*$", line)
        if not m or m.group(1).lower() not in KINDS:
            continue
        body = m.group(2)[:MAX_TEXT]
        if body not in seen:
            seen.add(body)
            notes.append((m.group(1).lower(), body))
    return notes


async def compact_memory(memory: Memory, session: Any) -> str:
    """``/memory``: the model merges the unused notes; used ones are kept verbatim.  A bad
    or empty answer leaves the store exactly as it was."""
    unused = memory.unused()
    if len(unused) < 2:
        return f"Nothing to compact: {len(unused)} unused note{'s' if len(unused) != 1 else ''}."
    if session is None:
        return "Memory compaction needs a model: set up a provider first (/provider)."
    listing = "\n".join(f"[{r['kind']}] {r['text']}" for r in reversed(unused))
    request = ProviderRequest(model=session.model, system=COMPACT_SYSTEM,
                              messages=[Message.user(listing)], tools=[], thinking="off",
                              max_tokens=8000, metadata={"purpose": "memory"})
    chunks: list[str] = []
    final = ""
    try:
        async for item in session.runtime.provider.stream(request):
            if isinstance(item, TextDelta):
                chunks.append(item.text)
            elif isinstance(item, StepFinished):
                final = item.message.text
                recorder = getattr(session, "recorder", None)
                if recorder is not None and hasattr(recorder, "record_usage"):
                    recorder.record_usage(item.usage, model=item.model or session.model,
                                          cause="command:memory")
    except Exception as exc:
        return f"Memory compaction failed, notes unchanged: {exc}"
    notes = parse_notes("".join(chunks) or final)
    if not notes:
        return "The model's answer had no `[kind] text` lines; notes unchanged."
    before = memory.count()
    after = memory.replace_unused(notes)
    return (f"Compacted {len(unused)} unused notes into {len(notes)}; "
            f"{before} notes before, {after} now.")


def notes_report(memory: Memory) -> str:
    rows = memory.notes()
    if not rows:
        return "No notes about this project yet. The agent saves them with the remember tool."
    lines = [f"{len(rows)} notes about this project, newest first:"]
    for r in rows:
        used = f", used {r['hits']}x" if r["hits"] else ""
        lines.append(f"  ({r['kind']}{used}) {r['text']}")
    return "\n".join(lines)


# ---- opening the store once per state dir ---------------------------------------------------

_stores: dict[Path, Store] = {}
_lock = threading.Lock()


def memory_for(config: Any) -> Memory:
    """The project's notes (the store is opened once per state directory)."""
    path = Path(config.state_dir)
    with _lock:
        store = _stores.get(path)
        if store is None:
            store = _stores[path] = Store.for_config(config)
    return Memory(store, str(Path(config.workspace).resolve()))


def enabled(config: Any) -> bool:
    return bool(config.get("memory"))


# ---- tools ----------------------------------------------------------------------------------


async def _remember(args: dict[str, Any], ctx: Any) -> str:
    return memory_for(ctx.config).remember(str(args.get("kind", "")), str(args.get("text", "")))


async def _recall(args: dict[str, Any], ctx: Any) -> str:
    return memory_for(ctx.config).recall(str(args.get("query", "")))


async def _forget(args: dict[str, Any], ctx: Any) -> str:
    return memory_for(ctx.config).forget(str(args.get("text", "")))


def _describe(verb: str, *keys: str) -> Any:
    def describe(args: dict[str, Any]) -> Description:
        value = next((str(args[k]) for k in keys if args.get(k)), "")
        kind = args.get("kind")
        line = f"{kind}: {value}" if kind else value
        return Description((line,), f"{verb} {value!r}?")
    return describe


REMEMBER = Tool(
    name="remember",
    describe=_describe("Remember", "text"),
    description=("Save a short note about this project for future sessions: a fact, a "
                 "decision, a gotcha, or a command that works. One fact per note, at most "
                 "400 characters. Exact duplicates are refused."),
    run=_remember,
    parameters={"type": "object", "properties": {
        "kind": {"type": "string", "enum": list(KINDS)},
        "text": {"type": "string", "description": "the note, self-contained"}},
        "required": ["kind", "text"], "additionalProperties": False},
    effects=lambda args: NO_EFFECTS,
    subjectless=True,
    prompt="save what a later session would otherwise rediscover (verified facts only).",
)

RECALL = Tool(
    name="recall",
    describe=_describe("Search the notes for", "query"),
    description=("Search the project notes saved in earlier sessions. Every word of the query "
                 "must match; returns up to 15 notes, newest first."),
    run=_recall,
    parameters={"type": "object", "properties": {
        "query": {"type": "string", "description": "words to look for"}},
        "required": ["query"], "additionalProperties": False},
    effects=lambda args: NO_EFFECTS,
    subjectless=True,
    read_only=True,
    prompt="check the notes before re-investigating something.",
)

FORGET = Tool(
    name="forget",
    describe=_describe("Forget the notes containing", "text"),
    description=("Delete project notes that are wrong or obsolete: every note containing the "
                 "given text (case-insensitive) is removed."),
    run=_forget,
    parameters={"type": "object", "properties": {
        "text": {"type": "string", "description": "text the notes to remove contain"}},
        "required": ["text"], "additionalProperties": False},
    effects=lambda args: NO_EFFECTS,
    subjectless=True,
)


# ---- hooks ----------------------------------------------------------------------------------


@hookimpl
def agent_addoption(options):
    options.add(Option("memory", type="bool", default=True, flag="--no-memory", negate=True,
                       help="turn project memory off: no notes loaded or saved, no "
                            "remember/recall/forget tools"))


@hookimpl
def agent_store_schema(config):
    return SCHEMA


@hookimpl
def agent_register_tools(register, config):
    if enabled(config):
        for tool in (REMEMBER, RECALL, FORGET):
            register(tool)


def header_line(config: Any) -> str:
    """The startup header's line: how many notes this project has."""
    if not enabled(config):
        return "memory: off (--no-memory)"
    try:
        count = memory_for(config).count()
    except Exception as exc:  # a broken database must not stop the session
        log.warning("memory unavailable: %s", exc)
        return "memory: unavailable (see the log)"
    return f"memory: {count} note{'' if count == 1 else 's'} about this project"


@hookimpl
def agent_header_lines(config, session):
    return HeaderLine(header_line(config), order=70) if session is not None else None


@hookimpl
def agent_prompt_fragments(session):
    """The top notes, read once per session so the prompt stays byte-stable."""
    if not enabled(session.config):
        return None
    data = session.data.setdefault("memory", {})
    if "boot" not in data:
        try:
            rows = memory_for(session.config).top()
        except Exception as exc:  # a broken database must not stop the session
            log.warning("memory unavailable: %s", exc)
            rows = []
        data["boot"] = (BOOT_HEADER + "\n" + "\n".join(
            f"- ({r['kind']}) {r['text']}" for r in rows)) if rows else ""
    return Fragment("memory", data["boot"], order=210) if data["boot"] else None


OFF = "Project memory is off for this run (--no-memory)."


@hookimpl
def agent_register_commands(register, config):
    def notes(app: Any, args: str) -> str | None:
        return show(app, notes_report(memory_for(config)) if enabled(config) else OFF)

    async def compact(app: Any, args: str) -> str | None:
        if not enabled(config):
            return show(app, OFF)
        return show(app, await compact_memory(memory_for(config), getattr(app, "session", None)))

    def remember(app: Any, args: str) -> str | None:
        """``/remember TEXT`` (and ``#TEXT`` typed at the start of a prompt): a note the
        person saves themselves, as a fact, never sent to the model."""
        if not enabled(config):
            return show(app, OFF)
        kind, _, rest = args.strip().partition(" ")
        if kind.strip("[]") in KINDS and rest.strip():  # "/remember gotcha ..." names a kind
            kind, text = kind.strip("[]"), rest
        else:
            kind, text = "fact", args
        try:
            return show(app, memory_for(config).remember(kind, text))
        except ToolError as exc:
            return show(app, str(exc))

    register(SlashCommand("notes", "list what the agent remembers about this project", notes,
                          info=True))
    register(SlashCommand("remember", "save a project note yourself (also: #note at the start "
                                      "of a prompt)", remember, args="[kind] TEXT", info=True,
                          takes_args=True))
    register(SlashCommand("memory", "merge unused project notes with the model", compact))


@hookimpl
def agent_unconfigure(config):
    with _lock:
        store = _stores.pop(Path(config.state_dir), None)
    if store is not None:
        store.close()
