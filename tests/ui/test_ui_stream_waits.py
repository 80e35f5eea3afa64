"""esc returns control at once while the model keeps the turn waiting: a stream that sends
only keep-alives, and a retry wait the server asked for.  Keys typed into the real root
widget; the bound on each wait is a poll limit, not a timing assertion."""

from __future__ import annotations

from fakeprovider import Reply
from ui_harness import idle, make_app, press, type_text, wait_for

#: Deadlines far beyond the test: only esc can end these waits.
PATIENT = {"stream_idle_timeout": 600, "request_deadline": 600}


async def test_esc_ends_a_keepalive_stream_and_keeps_what_arrived(tmp_path, fake_provider):
    fake_provider.script(Reply.keepalive(after=3, reply=Reply("partial words here", pieces=4)))
    app = make_app(tmp_path, fake_provider.openai_url, flags=PATIENT)
    app.start()
    await type_text(app, "one", enter=True)
    await wait_for(app, "partial", timeout=30)
    await press(app, "esc")
    rows = await idle(app, timeout=5)
    assert "interrupted" in rows
    assert app.session.messages[-1].text.startswith("partial")
    assert len(fake_provider.requests) == 1


async def test_esc_ends_a_retry_wait(tmp_path, fake_provider):
    fake_provider.script(Reply.error(429, headers={"retry-after": "300"}))
    app = make_app(tmp_path, fake_provider.openai_url,
                   flags={**PATIENT, "max_retries": 2, "retry_after_cap": 600})
    app.start()
    await type_text(app, "one", enter=True)
    await wait_for(app, "retrying in 300 s", timeout=30)
    await press(app, "esc")
    rows = await idle(app, timeout=5)
    assert "interrupted" in rows
    assert len(fake_provider.requests) == 1  # the retry never went out
