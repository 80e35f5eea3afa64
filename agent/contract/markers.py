"""The marker plugins decorate their hook implementations with (``from agent import hookimpl``).

Its own module so that ``import agent`` imports nothing: the public names are loaded on first
use (see :mod:`agent`), and ``hookimpl`` is the one a plugin module asks for first.
"""

from __future__ import annotations

import pluggy

#: Decorator marking a plugin's hook implementations.
hookimpl = pluggy.HookimplMarker("agent")
