"""Resuming a long session: the transcript shows its last page, and scrolling up past the
top brings the earlier messages in a page at a time, in order, down to the first."""

from __future__ import annotations

import time

from ui_harness import idle, make_app, press, screen

from agent.contract.messages import Message, TextPart
from agent.state.store import SessionRecord, Store
from agent.ui import turns

COUNT = 1_000


def saved_session(home, cwd) -> str:
    """COUNT messages saved through the store: prompts MSG-0000, MSG-0002... each answered."""
    from agent.loop.session import new_session_id

    messages = []
    for n in range(0, COUNT, 2):
        messages.append(Message.user(f"MSG-{n:04d} question"))
        messages.append(Message("assistant", [TextPart(f"MSG-{n + 1:04d} answer")]))
    sid = new_session_id()
    with Store.open(home / "state") as store:
        now = time.time()
        store.create_session(SessionRecord(sid, str(cwd), now, now, title="long",
                                           provider="openai", model="m"))
        store.replace_messages(sid, [m.to_dict() for m in messages])
    return sid


def shown(app) -> list[int]:
    return [int(word[4:8]) for row in screen(app).splitlines() for word in row.split()
            if word.startswith("MSG-")]


async def test_a_long_resumed_session_shows_its_last_page_and_scrolls_to_its_start(
        tmp_path, fake_provider):
    (tmp_path / "ws").mkdir()
    (tmp_path / "home").mkdir()
    sid = saved_session(tmp_path / "home", (tmp_path / "ws").resolve())
    app = make_app(tmp_path, fake_provider.openai_url, builtins=["sessions"])
    app.config.resume_session_id = sid
    app.start()
    await idle(app)
    assert len(app.session.messages) == COUNT
    # the last page only: blocks for REPLAY_PAGE messages (plus the header), not COUNT
    assert len(app.transcript) <= turns.REPLAY_PAGE + 1
    rows = shown(app)
    assert rows and rows[-1] == COUNT - 1 and rows == sorted(rows)
    assert rows == list(range(rows[0], COUNT))  # consecutive: nothing skipped or repeated

    seen = set(rows)
    for _ in range(COUNT):  # page up until the start of the session is on screen
        await press(app, "page up")
        rows = shown(app)
        assert rows == list(range(rows[0], rows[0] + len(rows))), rows
        seen.update(rows)
        if rows[0] == 0:
            break
    assert rows[0] == 0 and "resumed 1000 messages" in screen(app)  # the header, on top
    assert seen == set(range(COUNT))
    assert len(app.transcript) == COUNT + 1  # every message now has its block, once

    await press(app, "ctrl end")  # back to the end: the last message again
    assert shown(app)[-1] == COUNT - 1


async def test_scrolling_to_the_top_of_a_long_resumed_session_reaches_its_first_message(
        tmp_path, fake_provider):
    (tmp_path / "ws").mkdir()
    (tmp_path / "home").mkdir()
    sid = saved_session(tmp_path / "home", (tmp_path / "ws").resolve())
    app = make_app(tmp_path, fake_provider.openai_url, builtins=["sessions"])
    app.config.resume_session_id = sid
    app.start()
    await idle(app)
    tops = []
    for _ in range(COUNT // turns.REPLAY_PAGE + 2):  # each press brings one earlier page
        await press(app, "ctrl home")
        tops.append(shown(app)[0])
    assert tops[:5] == [800, 600, 400, 200, 0] and tops[5:] == [0] * (len(tops) - 5)
    rows = screen(app).splitlines()
    assert any("resumed 1000 messages" in row for row in rows[:8])  # the header, on top
    assert shown(app) == list(range(0, len(shown(app))))
    assert len(app.transcript) == COUNT + 1
