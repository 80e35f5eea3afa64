"""Edits know what they read: a change lands only over the bytes the model last saw.

In process: a person's edit between the model's read and its write is refused with a diff
and never overwritten; a file never read is not replaced whole; threads racing one file with
the same view end with exactly one winner.  The two-process trial is in
``tests/e2e/test_e2e_two_writers.py``.
"""

from __future__ import annotations

import asyncio
import threading
from types import SimpleNamespace

import pytest
from files_support import boot_files


@pytest.fixture
def env(tmp_path):
    return boot_files(tmp_path)


def session(sid: str) -> SimpleNamespace:
    return SimpleNamespace(id=sid)


async def test_write_file_never_replaces_a_file_it_has_not_read(env):
    env.write("notes.txt", "the user's notes\n")
    out = await env.err("write_file", {"path": "notes.txt", "content": "model text\n"})
    assert out.startswith("notes.txt already exists and you have not read it in this session")
    assert env.read("notes.txt") == "the user's notes\n"
    await env.look("notes.txt")
    await env.ok("write_file", {"path": "notes.txt", "content": "model text\n"})
    assert env.read("notes.txt") == "model text\n"
    # What it wrote itself it knows: a second write needs no read.
    await env.ok("write_file", {"path": "notes.txt", "content": "again\n"})
    assert env.read("notes.txt") == "again\n"


@pytest.mark.parametrize("tool", ["write_file", "edit_file", "multi_edit", "apply_patch"])
async def test_a_users_edit_after_the_read_is_never_overwritten(env, tool):
    env.write("app.py", "x = 1\ny = 2\nz = 3\n")
    await env.look("app.py")
    env.write("app.py", "x = 1\ny = 2\nz = 3\nuser = 'mine'\n")  # the person, in their editor
    args = {
        "write_file": {"path": "app.py", "content": "x = 10\ny = 2\nz = 3\n"},
        "edit_file": {"path": "app.py", "oldString": "x = 1", "newString": "x = 10"},
        "multi_edit": {"path": "app.py", "edits": [{"oldString": "x = 1", "newString": "x = 10"}]},
        "apply_patch": {"patch": "*** Update File: app.py\n-x = 1\n+x = 10\n"},
    }[tool]
    out = await env.err(tool, args)
    assert "app.py changed since you last read it" in out
    assert "nothing was written" in out.lower() or "no file of the patch was changed" in out.lower()
    assert "+user = 'mine'" in out  # the diff tells the model what changed
    assert env.read("app.py") == "x = 1\ny = 2\nz = 3\nuser = 'mine'\n"
    # Read again, and the same change lands over the person's edit, keeping it.
    await env.look("app.py")
    if tool == "write_file":
        args = {"path": "app.py", "content": "x = 10\ny = 2\nz = 3\nuser = 'mine'\n"}
    await env.ok(tool, args)
    assert env.read("app.py") == "x = 10\ny = 2\nz = 3\nuser = 'mine'\n"


async def test_each_session_has_its_own_view(env):
    env.write("f.txt", "one\n")
    a, b = session("A"), session("B")
    assert not (await env.call("read_file", {"path": "f.txt"}, session=a)).is_error
    assert not (await env.call("read_file", {"path": "f.txt"}, session=b)).is_error
    first = await env.call("edit_file", {"path": "f.txt", "oldString": "one", "newString": "1"},
                           session=a)
    assert not first.is_error
    second = await env.call("write_file", {"path": "f.txt", "content": "uno\n"}, session=b)
    assert second.is_error and "f.txt changed since you last read it" in second.output
    assert "-one\n+1" in second.output
    assert env.read("f.txt") == "1\n"


async def test_a_file_created_meanwhile_is_not_replaced(env):
    # The model saw the path missing (a failed read); someone creates it; write_file refuses.
    assert (await env.call("read_file", {"path": "late.txt"})).is_error
    env.write("late.txt", "made by someone else\n")
    out = await env.err("write_file", {"path": "late.txt", "content": "mine\n"})
    assert "already exists and you have not read it" in out
    assert env.read("late.txt") == "made by someone else\n"


async def test_moved_and_deleted_files_carry_what_was_seen(env):
    env.write("a.txt", "alpha\n")
    await env.look("a.txt")
    await env.ok("move_file", {"from": "a.txt", "to": "b.txt"})
    await env.ok("write_file", {"path": "b.txt", "content": "beta\n"})  # seen as a.txt
    await env.ok("delete_file", {"path": "b.txt"})
    env.write("b.txt", "new by the user\n")
    assert "have not read it" in await env.err("write_file", {"path": "b.txt", "content": "x\n"})


def test_racing_threads_with_one_view_have_exactly_one_winner(env):
    """Many sessions read the file, then all edit it at once: the check and the rename are
    one step, so exactly one edit lands and every other is refused."""
    env.write("race.txt", "".join(f"line {i}\n" for i in range(16)))
    sessions = [session(f"s{i}") for i in range(16)]
    for s in sessions:
        asyncio.run(env.call("read_file", {"path": "race.txt"}, session=s))
    start = threading.Barrier(len(sessions))
    results: dict[int, object] = {}

    def edit(i: int) -> None:
        start.wait()
        results[i] = asyncio.run(env.call("edit_file", {
            "path": "race.txt", "oldString": f"line {i}\n", "newString": f"LINE {i}\n"},
            session=sessions[i]))

    threads = [threading.Thread(target=edit, args=(i,)) for i in range(len(sessions))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    landed = [i for i, r in results.items() if not r.is_error]
    refused = [i for i, r in results.items() if r.is_error]
    assert len(landed) == 1
    assert all("changed since you last read it" in results[i].output for i in refused)
    text = env.read("race.txt")
    assert [i for i in range(16) if f"LINE {i}\n" in text] == landed


class _Session:
    """Hashable and weakly referable, as :class:`agent.loop.session.Session` is."""

    def __init__(self, sid: str) -> None:
        self.id = sid


async def test_what_a_finished_session_saw_goes_with_it(env):
    import gc

    from plugins_builtin.files.seen import Seen

    def seen_records() -> int:
        gc.collect()
        return sum(1 for obj in gc.get_objects() if type(obj) is Seen)

    for n in range(20):
        env.write(f"f{n}.txt", f"file {n}\n")
    baseline = seen_records()
    sessions = [_Session(f"long-lived-{i}") for i in range(5)]
    for s in sessions:
        for n in range(20):
            assert not (await env.call("read_file", {"path": f"f{n}.txt"}, session=s)).is_error
    assert seen_records() - baseline == 100  # 5 sessions x 20 files, while they live
    # A live session still knows what it read: it may replace the file.
    done = await env.call("write_file", {"path": "f0.txt", "content": "new\n"},
                          session=sessions[0])
    assert not done.is_error, done.output
    del sessions, s, done
    # A long-lived process (an editor's agent acp, a UI resuming session after session) keeps
    # nothing of sessions that are gone.
    assert seen_records() - baseline == 0
