"""A third-party plugin can do what a builtin does, with the public API only.

``tests/bookmarks_plugin`` is laid out as an installed distribution with an ``agent.plugins``
entry point (as conftest.py does for the example plugin) and found through it.  It adds a
tool with its own transcript line, a live panel, its own table and a persisted session key;
this test checks the outcomes: rows on screen, the table on disk, the key back on resume.
"""

from __future__ import annotations

import importlib
import sqlite3
import sys
from pathlib import Path

import pytest
from conftest import lay_out_distribution
from fakeprovider import Reply
from ui_harness import idle, make_app, screen, type_text, wait_for

from agent.ui.screen import _shutdown

SOURCE = Path(__file__).resolve().parent.parent / "bookmarks_plugin"


@pytest.fixture
def installed(tmp_path):
    target = tmp_path / "site"
    target.mkdir()
    lay_out_distribution(SOURCE, target)
    sys.path.insert(0, str(target))
    importlib.invalidate_caches()
    yield target
    sys.path.remove(str(target))
    sys.modules.pop("agent_bookmarks", None)
    importlib.invalidate_caches()


async def test_a_third_party_plugin_has_a_tool_line_a_panel_a_table_and_a_saved_key(
        tmp_path, fake_provider, installed):
    from importlib.metadata import entry_points

    assert "bookmarks" in {ep.name for ep in entry_points(group="agent.plugins")}
    fake_provider.script(
        Reply.tool_call("bookmark", {"url": "https://docs.example/api", "title": "API docs"}),
        Reply.text("saved it"))
    app = make_app(tmp_path, fake_provider.openai_url, builtins=["bookmarks"],
                   flags={"yolo": True})
    app.start()
    await type_text(app, "bookmark the docs", enter=True)
    await wait_for(app, "saved it", timeout=60)
    rows = await idle(app)
    # The tool's own transcript line (Tool.describe), not the generic fallback's JSON.
    assert "* bookmark  API docs <https://docs.example/api>" in rows, rows
    assert '{"url"' not in rows
    assert "bookmarks this session: API docs" in rows  # the plugin's live panel
    told = [m for m in fake_provider.requests[1].body["messages"] if m["role"] == "tool"]
    assert told[0]["content"] == "Bookmarked API docs; this session: API docs"
    session_id = app.session.id
    await _shutdown(app)
    app.session.recorder.close()

    db = tmp_path / "home" / "state" / "agent.db"
    conn = sqlite3.connect(db)
    try:
        assert conn.execute("SELECT url, title FROM bookmarks").fetchall() == [
            ("https://docs.example/api", "API docs")]
        assert conn.execute("SELECT version FROM plugin_schema WHERE plugin = 'bookmarks'"
                            ).fetchall() == [(1,)]
    finally:
        conn.close()

    # Resumed in a new front end: the persisted key is back, so the panel shows at once.
    again = make_app(tmp_path, fake_provider.openai_url, builtins=["bookmarks"],
                     flags={"yolo": True})
    again.config.resume_session_id = session_id
    again.start()
    rows = await wait_for(again, "bookmarks this session: API docs", timeout=30)
    assert again.session.id == session_id
    assert again.session.data["bookmarks"] == ["API docs"]
    assert "bookmarks this session" in screen(again)
