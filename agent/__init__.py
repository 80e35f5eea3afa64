"""agent: a terminal coding agent.  This module is the public plugin API.

Plugins import what they need from here::

    from agent import hookimpl, Tool, Effects, ToolError, Verdict, Fragment

Every name is imported on first use (:pep:`562`), so ``import agent`` costs nothing: it is
on the way to ``agent --version`` and ``--help``, which must stay within a small multiple of
a bare ``python -c pass``.  Type checkers see ordinary imports.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

if TYPE_CHECKING:
    from agent.boot.config import Config, ConfigError
    from agent.contain.sandbox import (
        OFF,
        READ_ONLY,
        WORKSPACE_WRITE,
        Sandbox,
        SandboxProcess,
        sandbox_for,
    )
    from agent.contract.blocks import Block
    from agent.contract.commands import SlashCommand
    from agent.contract.markers import hookimpl
    from agent.contract.mentions import Attachment, MentionEntry, MentionError, MentionSource
    from agent.contract.messages import ImagePart
    from agent.contract.options import Option
    from agent.contract.panels import HeaderLine, LiveState, Panel, StatusInfo
    from agent.contract.prompt import Fragment
    from agent.contract.provider_spec import Preset, ProviderSpec
    from agent.contract.providers import ProviderChoice, ProviderError, ProviderSettings
    from agent.contract.tools import (
        NO_EFFECTS,
        UNKNOWN_EFFECTS,
        Change,
        Description,
        Effects,
        Tool,
        ToolCall,
        ToolContext,
        ToolError,
        ToolResult,
        tool,
    )
    from agent.contract.verdict import Verdict
    from agent.lib.atomic import AtomicWriteError, Staged, atomic_move, atomic_write
    from agent.lib.money import format_usd
    from agent.loop.session import Session, SessionClosed, SessionLookupError
    from agent.ui.context import CommandContext

#: Public name -> the module that defines it.
_EXPORTS: dict[str, str] = {
    "hookimpl": "agent.contract.markers",
    "Config": "agent.boot.config", "ConfigError": "agent.boot.config",
    **dict.fromkeys(("OFF", "READ_ONLY", "WORKSPACE_WRITE", "Sandbox", "SandboxProcess",
                     "sandbox_for"), "agent.contain.sandbox"),
    "Block": "agent.contract.blocks",
    "SlashCommand": "agent.contract.commands",
    **dict.fromkeys(("Attachment", "MentionEntry", "MentionError", "MentionSource"),
                    "agent.contract.mentions"),
    "ImagePart": "agent.contract.messages",
    "Option": "agent.contract.options",
    **dict.fromkeys(("HeaderLine", "LiveState", "Panel", "StatusInfo"), "agent.contract.panels"),
    "Fragment": "agent.contract.prompt",
    **dict.fromkeys(("Preset", "ProviderSpec"), "agent.contract.provider_spec"),
    **dict.fromkeys(("ProviderChoice", "ProviderError", "ProviderSettings"),
                    "agent.contract.providers"),
    **dict.fromkeys(("NO_EFFECTS", "UNKNOWN_EFFECTS", "Change", "Description", "Effects", "Tool",
                     "ToolCall", "ToolContext", "ToolError", "ToolResult", "tool"),
                    "agent.contract.tools"),
    "Verdict": "agent.contract.verdict",
    **dict.fromkeys(("AtomicWriteError", "Staged", "atomic_move", "atomic_write"),
                    "agent.lib.atomic"),
    "format_usd": "agent.lib.money",
    # urwid comes with CommandContext, a session's whole loop with Session
    **dict.fromkeys(("Session", "SessionLookupError", "SessionClosed"), "agent.loop.session"),
    "CommandContext": "agent.ui.context",
}

__all__ = [
    "__version__", "hookimpl", "Config", "ConfigError",
    "OFF", "READ_ONLY", "WORKSPACE_WRITE", "Sandbox", "SandboxProcess", "sandbox_for",
    "Block", "SlashCommand", "Attachment", "MentionEntry", "MentionError", "MentionSource",
    "ImagePart", "Option", "HeaderLine", "LiveState", "Panel", "StatusInfo", "Fragment",
    "Preset", "ProviderChoice", "ProviderError", "ProviderSettings", "ProviderSpec",
    "NO_EFFECTS", "UNKNOWN_EFFECTS", "Change", "Description", "Effects", "Tool", "ToolCall",
    "ToolContext", "ToolError", "ToolResult", "tool", "Verdict",
    "AtomicWriteError", "Staged", "atomic_move", "atomic_write", "format_usd",
    "Session", "SessionLookupError", "SessionClosed", "CommandContext",
]


def quiet_logging() -> None:
    """Never let a log record reach the terminal by default: the screen belongs to the UI,
    stderr to headless diagnostics (the CLI adds a file handler in the state dir).  Done on
    the first use of the API and by the CLI, not at import, which must stay free."""
    import logging

    logger = logging.getLogger("agent")
    if not any(isinstance(h, logging.NullHandler) for h in logger.handlers):
        logger.addHandler(logging.NullHandler())


if not TYPE_CHECKING:  # hidden from type checkers, so a misspelled import is an error there
    def __getattr__(name: str) -> Any:
        module = _EXPORTS.get(name)
        if module is None:
            raise AttributeError(f"module 'agent' has no attribute {name!r}")
        import importlib

        quiet_logging()
        value = getattr(importlib.import_module(module), name)
        globals()[name] = value  # later lookups skip this function
        return value

    def __dir__() -> list[str]:
        return sorted(set(globals()) | set(_EXPORTS))
