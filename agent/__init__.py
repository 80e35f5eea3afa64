"""agent: a terminal coding agent.  This module is the public plugin API.

Plugins import what they need from here::

    from agent import hookimpl, Tool, Effects, ToolError, Verdict, Fragment
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

import pluggy

if TYPE_CHECKING:
    from agent.loop.session import Session, SessionClosed, SessionLookupError
    from agent.ui.context import CommandContext

# Never let a log record reach the terminal by default: the screen belongs to the UI, stderr
# to headless diagnostics.  The CLI adds a file handler in the state dir.
logging.getLogger("agent").addHandler(logging.NullHandler())

__version__ = "0.1.0"

#: Decorator marking a plugin's hook implementations.
hookimpl = pluggy.HookimplMarker("agent")

from agent.boot.config import Config, ConfigError  # noqa: E402
from agent.contain.sandbox import (  # noqa: E402
    OFF,
    READ_ONLY,
    WORKSPACE_WRITE,
    Sandbox,
    SandboxProcess,
    sandbox_for,
)
from agent.contract.blocks import Block  # noqa: E402
from agent.contract.commands import SlashCommand  # noqa: E402
from agent.contract.mentions import Attachment, MentionEntry, MentionError, MentionSource  # noqa: E402
from agent.contract.messages import ImagePart  # noqa: E402
from agent.contract.options import Option  # noqa: E402
from agent.contract.panels import HeaderLine, LiveState, Panel, StatusInfo  # noqa: E402
from agent.contract.prompt import Fragment  # noqa: E402
from agent.contract.providers import (  # noqa: E402
    Preset,
    ProviderChoice,
    ProviderError,
    ProviderSettings,
    ProviderSpec,
)
from agent.contract.tools import (  # noqa: E402
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
from agent.contract.verdict import Verdict  # noqa: E402
from agent.lib.atomic import AtomicWriteError, Staged, atomic_move, atomic_write  # noqa: E402
from agent.lib.money import format_usd  # noqa: E402

__all__ = [
    "__version__", "hookimpl", "AtomicWriteError", "Staged", "atomic_move", "atomic_write",
    "Block", "SlashCommand", "ConfigError", "format_usd", "Option", "Fragment",
    "HeaderLine", "LiveState", "Panel", "StatusInfo",
    "ProviderError", "ProviderSettings", "ProviderSpec", "Preset", "ProviderChoice",
    "NO_EFFECTS", "UNKNOWN_EFFECTS",
    "Change", "Description", "Effects", "Tool", "ToolCall", "ToolContext", "ToolError",
    "ToolResult", "tool", "Verdict",
    "Sandbox", "SandboxProcess", "sandbox_for", "WORKSPACE_WRITE", "READ_ONLY", "OFF",
    "Session", "SessionLookupError", "SessionClosed", "Config", "CommandContext",
    "ImagePart", "Attachment", "MentionEntry", "MentionError", "MentionSource",
]

#: Types a plugin annotates with, imported on first use: ``import agent`` must stay cheap
#: (a plugin loads it before any session exists, and ``CommandContext`` pulls in urwid).
_LAZY = {"Session": "agent.loop.session", "SessionLookupError": "agent.loop.session",
         "SessionClosed": "agent.loop.session", "CommandContext": "agent.ui.context"}


if not TYPE_CHECKING:  # hidden from type checkers, so a misspelled import is an error there
    def __getattr__(name: str) -> Any:
        module = _LAZY.get(name)
        if module is None:
            raise AttributeError(f"module 'agent' has no attribute {name!r}")
        import importlib

        value = getattr(importlib.import_module(module), name)
        globals()[name] = value  # later lookups skip this function
        return value
