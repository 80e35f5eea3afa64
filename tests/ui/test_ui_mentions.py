"""The @ picker lists MCP resources (``@server:uri``) next to workspace files; choosing one
and sending the prompt attaches the resource's content (text, and images as image parts) to
the request the model gets."""

from __future__ import annotations

import asyncio

from fakeprovider import Reply
from mcp_features import features_server
from ui_harness import idle, make_app, press, screen, type_text, wait_for

from plugins_builtin.mcp import state

PNG = ("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU"
       "5ErkJggg==")


def mcp_app(tmp_path, fake_provider):
    servers = {"feat": features_server()}
    return make_app(tmp_path, fake_provider.openai_url, builtins=["mcp"],
                    file_data={"mcp_servers": servers, "mcp_startup_timeout": 120})


async def test_at_picker_lists_resources_and_the_chosen_one_is_attached(tmp_path,
                                                                         fake_provider):
    app = mcp_app(tmp_path, fake_provider)
    (app.workspace / "feature.txt").write_text("")
    fake_provider.script(Reply.text("noted"), Reply.text("a red dot"))
    app.start()
    try:
        await asyncio.to_thread(state(app.config).manager.wait, 60)
        await type_text(app, "read @fe")
        rows = await wait_for(app, "@feat:memo://notes/today")
        assert "feature.txt" in rows  # the files are listed too
        line = next(r for r in rows.splitlines() if "@feat:memo://notes/today" in r)
        assert "today (text/plain)" in line
        assert "@feat:memo://logo.png" in rows and "logo (image/png)" in rows
        await type_text(app, "at:memo://no")  # narrows to the one resource
        rows = await wait_for(app, lambda: [i.value for i in app.completion.list.items]
                              == ["@feat:memo://notes/today"])
        await press(app, "tab")
        assert app.editor.text == "read @feat:memo://notes/today "
        assert "@feat:memo://logo.png" not in screen(app)  # the picker closed
        await type_text(app, "please", enter=True)
        await idle(app, timeout=60)
        sent = fake_provider.requests[0].body["messages"][-1]
        assert sent == {"role": "user", "content": (
            "read @feat:memo://notes/today please\n\n"
            '<resource name="feat:memo://notes/today">\n'
            "[resource memo://notes/today]\nbuy tea\ncall Ada\n</resource>")}
        assert "read @feat:memo://notes/today please" in screen(app)  # as typed
        # An image resource goes as an image part of the prompt.
        await type_text(app, "what is @feat:memo://logo")
        await wait_for(app, lambda: [i.value for i in app.completion.list.items][:1]
                       == ["@feat:memo://logo.png"])
        await press(app, "enter")  # takes the highlighted entry
        assert app.editor.text == "what is @feat:memo://logo.png "
        await press(app, "enter")
        await idle(app, timeout=60)
        content = fake_provider.requests[1].body["messages"][-1]["content"]
        assert content[0]["type"] == "text" and content[0]["text"].startswith(
            "what is @feat:memo://logo.png\n\n<resource name=\"feat:memo://logo.png\">")
        assert content[1:] == [{"type": "image_url",
                                "image_url": {"url": f"data:image/png;base64,{PNG}"}}]
    finally:
        app.hooks.unconfigure(app.config)


async def test_a_mention_that_cannot_be_read_is_named_and_the_prompt_still_goes(
        tmp_path, fake_provider):
    app = mcp_app(tmp_path, fake_provider)
    fake_provider.script(Reply.text("ok"))
    app.start()
    try:
        await asyncio.to_thread(state(app.config).manager.wait, 60)
        await type_text(app, "see @feat:memo://nope and me@example.com", enter=True)
        await idle(app, timeout=60)
        assert fake_provider.requests[0].body["messages"][-1]["content"] == \
            "see @feat:memo://nope and me@example.com"
        await wait_for(app, "@feat:memo://nope is not attached: mcp server feat could not "
                            "do that")
    finally:
        app.hooks.unconfigure(app.config)
