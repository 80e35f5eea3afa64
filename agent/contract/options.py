"""Options: config keys (and their CLI flags and environment variables) declared as data.

The core declares its own; plugins declare theirs through ``agent_addoption``.  One table
drives parsing, validation, ``--help`` and ``docs/configuration.md``.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Option:
    """A config key.  ``type`` is one of ``str``, ``int``, ``float``, ``bool``, ``list``,
    ``dict``.  ``flag`` (e.g. ``--think``) and ``env`` (e.g. ``AGENT_THINK``) are optional
    ways to set it, with precedence file < env < flag.  ``choices`` restricts values.
    ``negate`` (bool options only) makes the flag store False instead of True, for switches
    that are on by default (``Option("memory", type="bool", default=True,
    flag="--no-memory", negate=True)``).  ``minimum`` bounds an ``int`` or ``float`` from
    below (``float`` values are never NaN)."""

    key: str
    type: str = "str"
    default: Any = None
    help: str = ""
    flag: str | None = None
    env: str | None = None
    choices: tuple[str, ...] | None = None
    metavar: str | None = None
    plugin: str = "core"
    negate: bool = False
    minimum: float | None = None


class OptionRegistry:
    """Declared options by key."""

    def __init__(self) -> None:
        self.options: dict[str, Option] = {}

    def add(self, option: Option) -> None:
        """Declare ``option``; a key declared twice keeps the first declaration."""
        self.options.setdefault(option.key, option)

    def __iter__(self) -> Iterator[Option]:
        return iter(self.options.values())

    def get(self, key: str) -> Option | None:
        return self.options.get(key)
