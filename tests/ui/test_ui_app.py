"""The app with keys typed into its real root widget, against the fake provider."""

from __future__ import annotations

from fakeprovider import Reply
from ui_harness import idle, make_app, screen, type_text, wait_for


async def test_first_frame_shows_header_prompt_and_status(tmp_path, fake_provider):
    app = make_app(tmp_path, fake_provider.openai_url)
    app.start()
    rows = screen(app).splitlines()
    assert rows[1].startswith("agent ") and "openai/m" in rows[1]
    assert any(r.startswith("> ask agent... (/ commands, @ files)") for r in rows)
    assert rows[-1].startswith("m  default/medium")


async def test_streamed_markdown_answer(tmp_path, fake_provider):
    fake_provider.script(Reply.text("Here:\n\n```python\nprint('hi')\n```\nand **done**", pieces=8))
    app = make_app(tmp_path, fake_provider.openai_url)
    app.start()
    await type_text(app, "hello", enter=True)
    rows = await wait_for(app, "and done")
    await idle(app)
    rows = screen(app)
    assert "> hello" in rows
    assert "── python ─" in rows and "print('hi')" in rows
    assert "**" not in rows and "```" not in rows
    body = fake_provider.requests[0].body
    assert body["messages"][-1] == {"role": "user", "content": "hello"}
