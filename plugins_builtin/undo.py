"""Checkpoints the workspace before each change a prompt makes; /undo and /redo, git or not.

Before each approved call that may change files (``agent_before_tool_call``) the files it
could touch are snapshotted into a content-addressed store, ``<state dir>/undo/objects``.  A
named path (write, edit, delete, move) is copied if it exists; a shell command or a tool of
unknown effect snapshots the whole workspace (files the ignore-aware walker lists), copying
only files whose size, mtime or inode changed since the last snapshot.  What the prompt
changed is worked out when the turn ends, by comparing with the files then.

Checkpoints are per prompt and kept per workspace (the newest 100).  ``/undo`` puts every file
a prompt changed back as it was before the prompt (modified files byte for byte, created files
deleted, deleted files recreated, modes restored); ``/redo`` reverses the last undo;
``/undo conversation`` also drops that prompt and everything after it from the conversation.
Not covered: symlinks, files over 20 MB, and ignored files a shell command touches (name them
in a write or delete to cover them).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import time
import uuid
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from agent import AtomicWriteError, Option, SlashCommand, Staged, atomic_write, hookimpl
from agent.contain.paths import is_inside
from agent.contract import events as ev
from agent.contract.commands import show

MAX_FILE_BYTES = 20 * 1024 * 1024

#: A file's state: {"sha": hex, "mode": int}, or None when the file does not exist.
State = dict[str, Any] | None


# ---- the object store and the per-workspace index -----------------------------------------


def _atomic_write(path: Path, data: bytes) -> None:
    atomic_write(path, data, make_parents=True)


class RestoreError(Exception):
    """An undo or redo that could not be done; no file was changed."""


class Objects:
    """Blobs by SHA-256 under ``root`` (shared by every workspace)."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def path(self, sha: str) -> Path:
        return self.root / sha[:2] / sha

    def put(self, data: bytes) -> str:
        sha = hashlib.sha256(data).hexdigest()
        target = self.path(sha)
        if not target.exists():
            _atomic_write(target, data)
        return sha

    def get(self, sha: str) -> bytes:
        return self.path(sha).read_bytes()

    def has(self, sha: str) -> bool:
        return self.path(sha).exists()

    def collect(self, keep: set[str]) -> int:
        """Delete every object not in ``keep``; returns how many went."""
        gone = 0
        if not self.root.is_dir():
            return 0
        for sub in self.root.iterdir():
            if not sub.is_dir():
                continue
            for blob in sub.iterdir():
                if blob.name not in keep and not blob.name.startswith(".tmp-"):
                    with contextlib.suppress(OSError):
                        blob.unlink()
                        gone += 1
        return gone


@dataclass
class Checkpoint:
    """What one prompt changed: each file's state before it (``before``) and after the
    turn (``after``); ``redo`` holds the states an undo replaced."""

    id: str
    prompt: str
    created: float
    session: str
    message_index: int
    before: dict[str, State] = field(default_factory=dict)
    after: dict[str, State] = field(default_factory=dict)
    skipped: list[str] = field(default_factory=list)
    undone: bool = False
    redo: dict[str, State] | None = None


@dataclass
class Pending:
    """The open checkpoint of the running prompt."""

    checkpoint: Checkpoint
    session: Any
    scanned: bool = False  # a whole-workspace snapshot was taken this turn


class Recorder:
    """Snapshots, checkpoints, undo and redo for one workspace.  Registered as a plugin
    object by ``agent_configure``, so its hooks see every session of the run."""

    def __init__(self, workspace: Path, state_dir: Path, max_checkpoints: int = 100) -> None:
        self.workspace = Path(os.path.realpath(workspace))
        self.state_dir = state_dir
        self.base = state_dir / "undo"
        self.objects = Objects(self.base / "objects")
        key = hashlib.sha256(str(self.workspace).encode()).hexdigest()[:16]
        self.dir = self.base / key
        self.max_checkpoints = max_checkpoints
        self.pending: Pending | None = None
        self._index: dict[str, list[Any]] | None = None
        self._index_on_disk: str | None = None  # what the file holds, as _save_index writes it
        self.stashed: dict[str, list[Any]] = {}  # checkpoint id -> messages /undo dropped
        #: the session of the last closed prompt and the files it changed (agent -p's result)
        self.last_turn: tuple[Any, list[str]] | None = None

    # ---- files and their states ----

    def _rel(self, path: str) -> str | None:
        """The workspace-relative posix path of a tool's path, or None if it is outside."""
        raw = Path(os.path.expanduser(path))
        full = raw if raw.is_absolute() else self.workspace / raw
        # Resolve the parent only: the entry itself may be a link or not exist yet.
        real = Path(os.path.realpath(full.parent)) / full.name
        if not is_inside(self.workspace, real) or real == self.workspace:
            return None
        return real.relative_to(self.workspace).as_posix()

    def _files(self) -> Iterator[str]:
        """The files a whole-workspace snapshot covers (ignore rules honoured)."""
        from agent.lib.walk import walk_entries

        state_real = Path(os.path.realpath(self.state_dir))
        inner = (state_real.relative_to(self.workspace).as_posix() + "/"
                 if is_inside(self.workspace, state_real) else None)
        for entry in walk_entries(self.workspace):
            if entry.is_symlink or (inner and (entry.path + "/").startswith(inner)):
                continue  # links are not covered; our own store is not the user's work
            yield entry.path

    def _files_under(self, rel: str) -> Iterator[str]:
        """Every file below a directory a tool names (ignored ones too: it names them)."""
        from agent.lib.walk import walk_entries

        for entry in walk_entries(self.workspace, start=rel, include_ignored=True):
            if not entry.is_symlink:
                yield entry.path

    @property
    def index(self) -> dict[str, list[Any]]:
        """rel -> [mtime_ns, size, inode, sha, mode] as of the last snapshot."""
        if self._index is None:
            try:
                self._index = json.loads((self.dir / "index.json").read_text())
                self._index_on_disk = json.dumps(self._index)
            except FileNotFoundError:
                # no file reads as an empty index: an empty one is not written (a run that
                # changed no file costs no write and no fsync)
                self._index = {}
                self._index_on_disk = json.dumps(self._index)
            except (OSError, ValueError):
                self._index = {}
        return self._index

    def state(self, rel: str) -> State | str:
        """A file's state now (copying it into the store if it changed since indexed);
        ``"skipped"`` for what cannot be snapshotted (too big, a link, unreadable)."""
        path = self.workspace / rel
        try:
            st = os.lstat(path)
        except FileNotFoundError:
            self.index.pop(rel, None)
            return None
        except OSError:
            return "skipped"
        if not os.path.isfile(path) or os.path.islink(path):
            return None if os.path.isdir(path) else "skipped"
        mode = st.st_mode & 0o7777
        known = self.index.get(rel)
        if known and known[:3] == [st.st_mtime_ns, st.st_size, st.st_ino] \
                and self.objects.has(known[3]):
            return {"sha": known[3], "mode": mode}
        if st.st_size > MAX_FILE_BYTES:
            return "skipped"
        try:
            sha = self.objects.put(path.read_bytes())
        except OSError:
            return "skipped"
        self.index[rel] = [st.st_mtime_ns, st.st_size, st.st_ino, sha, mode]
        return {"sha": sha, "mode": mode}

    def _save_index(self) -> None:
        if self._index is None:
            return
        text = json.dumps(self._index)
        if text != self._index_on_disk:  # a prompt that changed nothing costs no fsync
            _atomic_write(self.dir / "index.json", text.encode())
            self._index_on_disk = text

    # ---- recording ----

    def open(self, session: Any, prompt: str) -> None:
        """A prompt starts: close the previous checkpoint, open one for this prompt."""
        if self.pending is not None:
            owner = self.pending.session
            if owner is not session and getattr(owner, "busy", False):
                return  # a nested session (subagent): its changes belong to this prompt
            self.close()
        index = max(len(getattr(session, "messages", [])) - 1, 0)
        self.pending = Pending(Checkpoint(uuid.uuid4().hex[:12], prompt, time.time(),
                                          getattr(session, "id", ""), index), session)

    def before_call(self, effects: Any, session: Any) -> None:
        """Snapshot what ``effects`` may change, first touch in the prompt winning."""
        if not effects.mutating:
            return
        if self.pending is None:
            self.open(session, "(outside a prompt)")
        pending = self.pending
        assert pending is not None
        before = pending.checkpoint.before
        rels: list[str] = []
        for raw in effects.changed_paths:
            rel = self._rel(raw) if raw else None
            if rel is None:
                continue
            if (self.workspace / rel).is_dir() and not (self.workspace / rel).is_symlink():
                rels.extend(self._files_under(rel))
            else:
                rels.append(rel)
        for rel in rels:
            if rel not in before:
                self._record(pending, rel)
        if effects.command is not None or effects.opaque:
            for rel in self._files():
                if rel in before:
                    continue
                if pending.scanned:
                    before[rel] = None  # not there at the first scan: made this prompt
                else:
                    self._record(pending, rel)
            pending.scanned = True
        self._save_index()

    def _record(self, pending: Pending, rel: str) -> None:
        state = self.state(rel)
        if state == "skipped":
            if rel not in pending.checkpoint.skipped:
                pending.checkpoint.skipped.append(rel)
            return
        pending.checkpoint.before[rel] = state  # type: ignore[assignment]

    def close(self) -> Checkpoint | None:
        """The prompt is over: keep what changed (if anything) as a checkpoint."""
        pending, self.pending = self.pending, None
        if pending is None:
            return None
        cp = pending.checkpoint
        if pending.scanned:
            for rel in self._files():
                cp.before.setdefault(rel, None)
        changed: dict[str, State] = {}
        after: dict[str, State] = {}
        for rel, old in cp.before.items():
            now = self.state(rel)
            if now == "skipped":
                cp.skipped.append(rel)
                continue
            if now != old:
                changed[rel], after[rel] = old, now  # type: ignore[assignment]
        self._save_index()
        self.last_turn = (pending.session, sorted(changed))
        if not changed:
            return None
        cp.before, cp.after = changed, after
        with self._locked():
            checkpoints = [c for c in self.load() if not c.undone]  # redo ends here
            checkpoints.append(cp)
            trimmed = len(checkpoints) > self.max_checkpoints
            self._store(checkpoints[-self.max_checkpoints:])
        if trimmed:
            self.collect_garbage()
        return cp

    # ---- persistence ----

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        """An exclusive lock on this workspace's checkpoint list (two agents, one repo)."""
        self.dir.mkdir(parents=True, exist_ok=True)
        with open(self.dir / "lock", "w") as handle:
            try:
                import fcntl

                fcntl.flock(handle, fcntl.LOCK_EX)
            except ImportError:  # no fcntl (Windows): last writer wins
                pass
            yield

    def load(self) -> list[Checkpoint]:
        try:
            raw = json.loads((self.dir / "checkpoints.json").read_text())
        except (OSError, ValueError):
            return []
        fields = Checkpoint.__dataclass_fields__
        return [Checkpoint(**{k: v for k, v in item.items() if k in fields}) for item in raw
                if isinstance(item, dict)]

    def _store(self, checkpoints: list[Checkpoint]) -> None:
        data = json.dumps([asdict(c) for c in checkpoints], indent=1)
        _atomic_write(self.dir / "checkpoints.json", data.encode())

    def collect_garbage(self) -> int:
        """Delete objects no checkpoint or index of any workspace refers to."""
        keep: set[str] = set()
        if not self.base.is_dir():
            return 0
        for ws_dir in self.base.iterdir():
            if ws_dir.name == "objects" or not ws_dir.is_dir():
                continue
            try:
                items = json.loads((ws_dir / "checkpoints.json").read_text())
            except (OSError, ValueError):
                items = []
            for item in items:
                for key in ("before", "after", "redo"):
                    for state in (item.get(key) or {}).values():
                        if isinstance(state, dict):
                            keep.add(state.get("sha", ""))
            try:
                index = json.loads((ws_dir / "index.json").read_text())
            except (OSError, ValueError):
                index = {}
            keep.update(entry[3] for entry in index.values() if len(entry) > 3)
        if self._index is not None:
            keep.update(entry[3] for entry in self._index.values())
        return self.objects.collect(keep)

    # ---- undo and redo ----

    def restore(self, states: dict[str, State]) -> list[str]:
        """Put each file in ``states`` back; returns one line per file touched.

        All or nothing for the writes: every file's old content is staged beside it first
        (written and synced under a temporary name), so a full or read-only disk raises
        :class:`RestoreError` before any file changed.
        """
        lines: dict[str, str] = {}
        staged: list[tuple[str, Staged, bool]] = []
        deletions: list[tuple[str, Path]] = []
        try:
            for rel in sorted(states):
                target = self.workspace / rel
                if self._rel(rel) != rel:  # a tampered record must not write outside
                    lines[rel] = f"skipped {rel} (outside the workspace)"
                    continue
                state = states[rel]
                existed = target.exists() or target.is_symlink()
                if state is None:
                    if existed and not target.is_dir():
                        deletions.append((rel, target))
                    continue
                try:
                    data = self.objects.get(state["sha"])
                except OSError:
                    lines[rel] = f"could not restore {rel}: its snapshot is missing"
                    continue
                if target.is_symlink() or target.is_dir():
                    lines[rel] = f"could not restore {rel}: a link or directory is there now"
                    continue
                staged.append((rel, Staged(target, data, shown=rel, mode=state.get("mode", 0o644),
                                           make_parents=True), existed))
        except AtomicWriteError as exc:
            for _, each, _ in staged:
                each.discard()
            raise RestoreError(str(exc)) from None
        for rel, each, existed in staged:
            try:
                each.commit()
                lines[rel] = f"{'restored' if existed else 'recreated'} {rel}"
            except AtomicWriteError as exc:
                lines[rel] = f"could not restore {rel}: {exc}"
        for rel, target in deletions:
            try:
                target.unlink()
            except OSError as exc:
                lines[rel] = f"could not delete {rel}: {exc.strerror or exc}"
                continue
            lines[rel] = f"deleted {rel}"
            self._prune_dirs(target.parent)
        return [lines[rel] for rel in sorted(lines)]

    def _prune_dirs(self, directory: Path) -> None:
        """Remove directories a deleted file leaves empty (never the workspace)."""
        while directory != self.workspace and is_inside(self.workspace, directory):
            try:
                directory.rmdir()
            except OSError:
                return
            directory = directory.parent

    def undo(self, session: Any = None, conversation: bool = False) -> str:
        if session is not None and getattr(session, "busy", False):
            return "The agent is working; undo after the turn ends (or press esc first)."
        self.close()
        with self._locked():
            checkpoints = self.load()
            live = [c for c in checkpoints if not c.undone]
            if not live:
                text = "Nothing to undo: no prompt in this workspace has changed files yet."
                if conversation and session is not None:
                    text += "\n" + self._rewind_last_turn(session)
                return text
            cp = live[-1]
            now = {rel: self.state(rel) for rel in cp.before}
            held = sorted(rel for rel, state in now.items() if state == "skipped")
            # A file that cannot be snapshotted now is left alone, so /redo can undo the undo.
            cp.redo = {rel: state for rel, state in now.items() if state != "skipped"}
            try:
                lines = self.restore({rel: cp.before[rel] for rel in cp.redo})
            except RestoreError as exc:
                return f"Nothing was undone: {exc}"
            cp.undone = True
            self._store(checkpoints)
        self._save_index()
        head = f'Undid prompt "{_clip(cp.prompt)}" ({_count(lines)}):'
        out = [head, *(f"  {line}" for line in lines)]
        if held:
            out.append("  left alone (too big to snapshot now): " + ", ".join(held))
        if cp.skipped:
            out.append("  not covered (too big, links or unreadable): " + ", ".join(cp.skipped))
        if conversation:
            out.append(self._rewind(session, cp))
        out.append("/redo puts the changes back.")
        return "\n".join(out)

    def _rewind(self, session: Any, cp: Checkpoint) -> str:
        if session is None or cp.session != getattr(session, "id", None):
            return "The conversation was left as it is: that prompt is from another session."
        index = cp.message_index
        if index > len(session.messages):
            return "The conversation was left as it is: it no longer reaches that prompt."
        dropped = session.messages[index:]
        del session.messages[index:]
        _resave(session)
        self.stashed[cp.id] = dropped
        return f"Dropped {len(dropped)} messages from the conversation."

    def _rewind_last_turn(self, session: Any) -> str:
        starts = [i for i, m in enumerate(session.messages) if m.role == "user"]
        if not starts:
            return "The conversation is empty."
        dropped = len(session.messages) - starts[-1]
        del session.messages[starts[-1]:]
        _resave(session)
        return f"Dropped the last prompt ({dropped} messages) from the conversation."

    def redo(self, session: Any = None) -> str:
        if session is not None and getattr(session, "busy", False):
            return "The agent is working; redo after the turn ends."
        self.close()
        with self._locked():
            checkpoints = self.load()
            undone = [c for c in checkpoints if c.undone]
            if not undone:
                return "Nothing to redo."
            cp = undone[0]  # the most recent undo (undone ones are the newest, in order)
            try:
                lines = self.restore(cp.redo or cp.after)
            except RestoreError as exc:
                return f"Nothing was redone: {exc}"
            cp.undone, cp.redo = False, None
            self._store(checkpoints)
        self._save_index()
        out = [f'Redid prompt "{_clip(cp.prompt)}" ({_count(lines)}):',
               *(f"  {line}" for line in lines)]
        stash = self.stashed.pop(cp.id, None)
        if stash is not None and session is not None and len(session.messages) == cp.message_index:
            session.messages.extend(stash)
            _resave(session)
            out.append(f"Restored {len(stash)} messages to the conversation.")
        return "\n".join(out)

    def history(self) -> str:
        checkpoints = self.load()
        if not checkpoints:
            return "No checkpoints in this workspace yet."
        lines = ["Checkpoints, newest first:"]
        for cp in reversed(checkpoints[-15:]):
            when = time.strftime("%m-%d %H:%M", time.localtime(cp.created))
            mark = " (undone)" if cp.undone else ""
            lines.append(f'  {when}  "{_clip(cp.prompt)}"  {len(cp.before)} files{mark}')
        return "\n".join(lines)

    # ---- hooks (this object is registered as a plugin) ----

    @hookimpl
    def agent_event(self, event, session):
        if isinstance(event, ev.TurnStartEvent):
            self.open(session, event.prompt)
        elif isinstance(event, ev.DoneEvent) and self.pending is not None \
                and self.pending.session is session:
            self.close()

    @hookimpl
    def agent_turn_files_changed(self, session):
        if self.last_turn is None or self.last_turn[0] is not session:
            return None
        return list(self.last_turn[1])

    @hookimpl
    def agent_before_tool_call(self, call, effects, session):
        self.before_call(effects, session)

    @hookimpl
    def agent_register_commands(self, register, config):
        register(SlashCommand("undo", "put back the files the last prompt changed",
                              self._run_undo, args="[conversation|list]", takes_args=True))
        register(SlashCommand("redo", "re-apply what the last /undo reverted", self._run_redo))

    @hookimpl
    def agent_unconfigure(self, config):
        self.close()
        with contextlib.suppress(OSError):
            self.collect_garbage()

    def _run_undo(self, app: Any, args: str) -> str | None:
        word = args.strip().lower()
        if word in ("list", "history"):
            return show(app, self.history())
        if word not in ("", "conversation", "conv", "chat"):
            return show(app, "usage: /undo [conversation|list]")
        return show(app, self.undo(getattr(app, "session", None), conversation=bool(word)))

    def _run_redo(self, app: Any, args: str) -> str | None:
        return show(app, self.redo(getattr(app, "session", None)))


def _resave(session: Any) -> None:
    """Tell the session's recorder (if any) that the history was edited in place."""
    recorder = getattr(session, "recorder", None)
    if recorder is not None and hasattr(recorder, "rewrite"):
        with contextlib.suppress(Exception):  # saving is best effort; the rewind stands
            recorder.rewrite(session)


def _clip(text: str, limit: int = 60) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _count(lines: list[str]) -> str:
    return f"{len(lines)} file{'s' if len(lines) != 1 else ''}"


@hookimpl
def agent_addoption(options):
    options.add(Option("undo_checkpoints", type="int", default=100,
                       help="how many prompts /undo can go back, per workspace"))


@hookimpl
def agent_configure(config):
    recorder = Recorder(config.workspace, config.state_dir,
                        max(1, int(config.get("undo_checkpoints") or 100)))
    if config.plugins is not None:
        config.plugins.register(recorder, "undo-recorder")
