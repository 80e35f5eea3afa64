"""The UI side of a Claude Code setup: the startup header says what waits for approval and
what is not used; /trust approves; /compat lists every mapping."""

from __future__ import annotations

import json

from ui_harness import make_app, type_text, wait_for


async def test_header_names_the_pending_approval_and_trust_records_it(tmp_path, fake_provider):
    home, ws = tmp_path / "userhome", tmp_path / "ws"
    home.mkdir()
    (ws / ".claude").mkdir(parents=True)
    (ws / ".mcp.json").write_text(json.dumps(
        {"mcpServers": {"docs": {"url": "http://127.0.0.1:9/mcp"}}}))
    (ws / ".claude" / "settings.json").write_text(json.dumps(
        {"permissions": {"allow": ["Bash(make:*)"], "deny": ["WebSearch"]},
         "statusLine": {"type": "command"}}))
    app = make_app(tmp_path, fake_provider.openai_url, builtins=["compat"],
                   file_data={"compat_home": str(home)})
    app.start()
    try:
        rows = await wait_for(app, "/trust")
        assert "compat: this repository's .mcp.json, .claude/settings.json ask for 1 MCP " \
               "server(s), 2 allow rule(s)" in rows
        assert "WebSearch" in rows and "statusLine is not used" in rows
        await type_text(app, "/trust", enter=True)
        await wait_for(app, "Approved .mcp.json, .claude/settings.json")
        await type_text(app, "/compat", enter=True)
        rows = await wait_for(app, "project allow Bash(make:*)")
        assert "bash:make" in rows
    finally:
        app.hooks.unconfigure(app.config)
