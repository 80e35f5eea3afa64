"""The sandbox as the full-screen UI shows it: the header line, the status bar when commands
run without walls, and an approval that asks for the network."""

from __future__ import annotations

from fakeprovider import Reply
from ui_harness import idle, make_app, press, screen, type_text, wait_for


async def test_the_header_names_the_sandbox_and_the_status_bar_is_quiet(tmp_path,
                                                                      fake_provider):
    app = make_app(tmp_path, fake_provider.openai_url)
    app.start()
    rows = await wait_for(app, "sandbox:")
    assert "sandbox: workspace-write (bwrap), network off unless approved per command" in rows
    status = screen(app).splitlines()[-1]
    assert "sandbox" not in status


async def test_sandbox_off_shows_in_the_header_and_the_status_bar(tmp_path, fake_provider):
    app = make_app(tmp_path, fake_provider.openai_url, file_data={"sandbox": "off"})
    app.start()
    rows = await wait_for(app, "sandbox:")
    assert "sandbox: OFF (by choice): commands run with your full access" in rows
    assert "sandbox off" in screen(app).splitlines()[-1]


async def test_an_unavailable_sandbox_shows_in_the_header_and_the_status_bar(tmp_path,
                                                                           fake_provider):
    app = make_app(tmp_path, fake_provider.openai_url, file_data={"sandbox_bwrap": "/bin/false"})
    app.start()
    rows = await wait_for(app, "sandbox:")
    assert "sandbox: UNAVAILABLE (/bin/false: " in rows
    assert "no sandbox" in screen(app).splitlines()[-1]


async def test_an_approval_for_network_says_so(tmp_path, fake_provider):
    fake_provider.script(Reply.tool_call("bash", {"command": "echo hi > ran.txt",
                                                  "network": True}, id="c1"),
                         Reply.text("ok"))
    app = make_app(tmp_path, fake_provider.openai_url, builtins=["bash"])
    app.approval_guard = 0.0
    app.start()
    await type_text(app, "go", enter=True)
    rows = await wait_for(app, "with network access")
    assert "Run `echo hi > ran.txt` with network access?" in rows
    await press(app, "n")
    await idle(app)
    assert not (tmp_path / "ws" / "ran.txt").exists()  # denied: it never ran
