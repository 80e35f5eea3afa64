"""An MCP server's prompts are slash commands in the run where the server first connects, not
only from the next start: the / menu lists them and a typed one runs."""

from __future__ import annotations

from fakeprovider import Reply
from mcp_features import features_server
from ui_harness import make_app, press, screen, type_text, wait_for

from plugins_builtin.mcp import state


async def test_a_new_servers_prompt_is_a_command_in_the_same_run(tmp_path, fake_provider):
    fake_provider.script(Reply.text("reviewed"))
    app = make_app(tmp_path, fake_provider.openai_url, builtins=["mcp"],
                   file_data={"mcp_servers": {"feat": features_server()},
                              "mcp_startup_timeout": 120})
    try:
        app.start()
        # Nothing is cached for this server yet: no command at start.
        assert app.commands.get("mcp__feat__review") is None
        state(app.config).manager.wait(120)
        assert state(app.config).manager.prompts.get("feat")
        await type_text(app, "/mcp__feat__rev")
        await wait_for(app, "/mcp__feat__review <file> [focus]")
        await press(app, "ctrl u")
        await type_text(app, "/mcp__feat__review app.py security", enter=True)
        await wait_for(app, "reviewed")
        sent = fake_provider.requests[-1].body
        assert "Review app.py for security." in str(sent)
        assert "unknown command" not in screen(app)
    finally:
        app.hooks.unconfigure(app.config)
