"""``agent acp``: serve the Agent Client Protocol on stdin/stdout, so an editor (Zed,
JetBrains, Neovim, Emacs) hosts the agent with the same session, gate and event stream as
the UI and headless mode.  The protocol SDK is imported only when the command runs."""

from __future__ import annotations

from typing import Any

from agent import hookimpl


def cli_acp(argv: list[str], boot: Any) -> int:
    """``agent acp``: serve one editor on stdin/stdout until it disconnects."""
    from plugins_builtin.acp.server import serve

    return serve(argv, boot)


@hookimpl
def agent_register_cli_commands(register):
    register("acp", cli_acp, "serve the Agent Client Protocol on stdin/stdout (editors)",
             usage=[("", "an ACP agent for Zed, JetBrains, Neovim, Emacs (docs/editors.md)")])
