"""A damaged state database loses only what is damaged: one bad message row is skipped (and
named) when the session is resumed, the rest of the session goes to the model intact and
valid.  Real files, the real CLI in process, the real openai SDK against the fake provider."""

from __future__ import annotations

import sqlite3

from clirun import run_agent_here
from fakeprovider import Reply
from wirecheck import assert_valid_request

ENV = {"OPENAI_API_KEY": "x", "AGENT_OPENAI_API": "chat"}


def arguments(url: str, *args: str) -> list[str]:
    return [*args, "--provider", "openai", "--base-url", url, "--model", "gpt-5"]


def make_session(fake_provider, home, ws) -> None:
    """user, assistant (a tool call), tool (its result), assistant (text)."""
    fake_provider.script(Reply.tool_call("current_time", {}, id="call_1"),
                         Reply.text("it is late"))
    first = run_agent_here(arguments(fake_provider.openai_url, "-p", "what time is it"),
                           home=home, cwd=ws, **ENV)
    assert first.returncode == 0, first.stderr


def damage(db, seq: int) -> None:
    conn = sqlite3.connect(db)
    with conn:
        conn.execute("UPDATE messages SET body = substr(body, 1, 17) WHERE seq = ?", (seq,))
    conn.close()


def test_a_damaged_row_is_skipped_with_a_note_and_the_rest_resumes(tmp_path, fake_provider):
    home, ws = tmp_path / "home", tmp_path / "ws"
    ws.mkdir()
    make_session(fake_provider, home, ws)
    db = home / "state" / "agent.db"
    damage(db, 3)  # the tool result: half a JSON object

    fake_provider.script(Reply.text("still here"))
    again = run_agent_here(arguments(fake_provider.openai_url, "-c", "-p", "and now?"),
                           home=home, cwd=ws, **ENV)
    assert again.returncode == 0, again.stderr
    assert "1 damaged message(s) of session" in again.stderr
    request = fake_provider.requests[-1]
    assert_valid_request(request)  # the call whose result was lost is answered
    wire = request.body["messages"]
    assert [m["role"] for m in wire] == ["system", "user", "assistant", "tool", "assistant",
                                         "user"]
    assert wire[1]["content"] == "what time is it" and wire[4]["content"] == "it is late"
    assert "damaged" in wire[3]["content"]
    # The store now holds the mended history and this turn, in order.
    conn = sqlite3.connect(db)
    roles = [r for (r,) in conn.execute("SELECT role FROM messages ORDER BY seq")]
    conn.close()
    assert roles == ["user", "assistant", "tool", "assistant", "user", "assistant"]


def test_a_damaged_prompt_row_loses_only_that_prompt(tmp_path, fake_provider):
    home, ws = tmp_path / "home", tmp_path / "ws"
    ws.mkdir()
    make_session(fake_provider, home, ws)
    db = home / "state" / "agent.db"
    damage(db, 4)  # the final answer

    fake_provider.script(Reply.text("ok"))
    again = run_agent_here(arguments(fake_provider.openai_url, "-c", "-p", "go on"),
                           home=home, cwd=ws, **ENV)
    assert again.returncode == 0, again.stderr
    assert "1 damaged message(s)" in again.stderr
    wire = fake_provider.requests[-1].body["messages"]
    assert [m["role"] for m in wire] == ["system", "user", "assistant", "tool", "user"]
    assert_valid_request(fake_provider.requests[-1])
    conn = sqlite3.connect(db)
    rows = conn.execute("SELECT seq, role FROM messages ORDER BY seq").fetchall()
    conn.close()
    # The damaged row stays where it was (doctor --repair may still read it); the new
    # messages come after it.
    assert rows == [(1, "user"), (2, "assistant"), (3, "tool"), (4, "assistant"),
                    (5, "user"), (6, "assistant")]


def build_database(home, ws, sessions: int = 40) -> list[str]:
    """A real state database of ``sessions`` sessions of 4 messages (2 KB each), written
    through the store and closed (the WAL checkpointed into the file)."""
    import time

    from agent.state.store import SessionRecord, Store

    ids = []
    with Store.open(home / "state") as store:
        for n in range(sessions):
            sid = f"01900000-0000-7000-8000-{n:012d}"
            now = time.time() + n
            record = SessionRecord(id=sid, cwd=str(ws), created_at=now, updated_at=now,
                                   title=f"session {n}")
            for seq in range(4):
                role = "user" if seq % 2 == 0 else "assistant"
                store.append_message(sid, {"role": role, "parts": [
                    {"type": "text", "text": f"{n}.{seq} " + "x" * 2000}]},
                    new_session=record if seq == 0 else None)
            ids.append(sid)
    return ids


def corrupt_page(db, marker: bytes) -> None:
    """Overwrite the page holding ``marker`` (a message's text) with garbage."""
    data = bytearray(db.read_bytes())
    page = int.from_bytes(data[16:18], "big")
    at = data.index(marker) // page * page
    data[at:at + page] = b"\xff" * page
    db.write_bytes(bytes(data))


def test_doctor_finds_a_damaged_database_and_repair_salvages_every_readable_session(
        tmp_path, fake_provider):
    home, ws = tmp_path / "home", tmp_path / "ws"
    ws.mkdir()
    ids = build_database(home, ws)
    db = home / "state" / "agent.db"
    corrupt_page(db, b"20.1 xxxx")
    damaged = db.read_bytes()

    found = run_agent_here(["doctor", "--no-provider"], home=home, cwd=ws)
    assert found.returncode == 1, found.stdout + found.stderr
    line = next(x for x in found.stdout.splitlines() if x.split()[1:2] == ["database"])
    assert line.startswith("FAIL") and "is damaged" in line and "--repair" in line
    assert db.read_bytes() == damaged  # looking changes nothing

    repaired = run_agent_here(["doctor", "--repair"], home=home, cwd=ws)
    assert repaired.returncode == 0, repaired.stdout + repaired.stderr
    aside = next(x for x in repaired.stdout.splitlines() if "moved aside to " in x
                 ).split("moved aside to ", 1)[1].strip()
    assert aside.startswith(str(db) + ".damaged-")
    from pathlib import Path

    # The old file is kept, byte for byte, where it says.
    assert Path(aside).read_bytes() == damaged
    conn = sqlite3.connect(db)
    try:
        assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
        saved = conn.execute("SELECT session_id, seq, body FROM messages").fetchall()
        sessions = {r[0] for r in conn.execute("SELECT id FROM sessions")}
    finally:
        conn.close()
    # Every row that was readable came over: what is missing is what sat on the bad page.
    import json

    texts = {json.loads(body)["parts"][0]["text"].split()[0] for _, _, body in saved}
    assert "20.1" not in texts  # the message on the bad page is gone ...
    assert 40 * 4 - len(texts) <= 2  # ... with at most its neighbour on that 4 KB page
    assert sessions == set(ids)
    assert f"{len(ids)} session(s)" in repaired.stdout
    # The repaired database works: doctor is happy, and a session continues.
    again = run_agent_here(["doctor", "--no-provider"], home=home, cwd=ws)
    line = next(x for x in again.stdout.splitlines() if x.split()[1:2] == ["database"])
    assert line.startswith("ok"), line
    fake_provider.script(Reply.text("still here"))
    cont = run_agent_here(arguments(fake_provider.openai_url, "-c", "-p", "go on"), home=home,
                          cwd=ws, **ENV)
    assert cont.returncode == 0, cont.stderr
    assert_valid_request(fake_provider.requests[-1])
