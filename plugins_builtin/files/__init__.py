"""File tools: read, write, edit, patch, move, delete (to a trash), list, glob and grep.

Every path is jailed to the workspace (``agent.contain.paths``); listing and search go through the
ignore-aware walker (``agent.lib.walk``); ``grep`` runs ripgrep with a pure-Python fallback.
Deleted files are kept in a per-session trash: ``/trash`` and ``agent trash`` list and
restore them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agent import Option, SlashCommand, hookimpl

from . import describe, trash
from .edit import EDIT_FILE, MULTI_EDIT, WRITE_FILE
from .fsops import DELETE_FILE, MOVE_FILE
from .listing import GLOB, LIST_DIR
from .patch import APPLY_PATCH
from .read import READ_FILE, READ_MANY_FILES
from .search import GREP

TOOLS = (READ_FILE, WRITE_FILE, EDIT_FILE, GLOB, GREP,  # core
         READ_MANY_FILES, MULTI_EDIT, APPLY_PATCH, MOVE_FILE, DELETE_FILE, LIST_DIR)  # edit-plus
describe.attach(TOOLS)  # transcript lines and approval wording (Tool.describe)


@hookimpl
def agent_addoption(options):
    options.add(Option("grep_fallback", type="bool", default=False, env="AGENT_GREP_FALLBACK",
                       help="grep with the built-in Python search instead of ripgrep"))
    options.add(Option("rg_path", help="path of the ripgrep binary grep runs (default: the "
                                       "one next to Python, then PATH)"))


@hookimpl
def agent_register_tools(register, config):
    for tool in TOOLS:
        register(tool)


@hookimpl
def agent_register_mentions(register, config):
    from .mention import source

    register(source(config))


def trash_command_text(config: Any, args: str, session_id: str | None = None) -> str:
    """What ``/trash [list [--all] | restore ID]`` prints."""
    text, _ = trash.command_text(Path(config.state_dir), Path(config.workspace), args,
                                 session_id=session_id)
    return text


@hookimpl
def agent_register_commands(register, config):
    def run(app: Any, args: str) -> str | None:
        session = getattr(app, "session", None)
        text = trash_command_text(config, args, getattr(session, "id", None))
        info = getattr(app, "info", None)
        if callable(info):
            info(text)
            return None
        return text

    register(SlashCommand("trash", "list and restore deleted files", run=run,
                          args="[list [--all] | restore ID]", takes_args=True))


def trash_cli(argv: list[str], boot: Any) -> int:
    """``agent trash [list [--all] | restore ID]``."""
    config = boot.config
    text, ok = trash.command_text(Path(config.state_dir), Path(config.workspace), argv)
    print(text)
    return 0 if ok else 1


@hookimpl
def agent_register_cli_commands(register):
    register("trash", trash_cli, "list and restore deleted files", usage=[
        ("[list [--all]]", "files deleted in this workspace (--all: everywhere)"),
        ("restore ID", "put a deleted file back")])
