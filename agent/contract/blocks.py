"""Blocks: units of the transcript that renderer plugins turn into widgets."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class Block:
    """``kind`` names what it is (``markdown``, ``diff``, ``tool``, ``user``, ``error``,
    ``info``...); ``text`` is its main text and ``data`` anything else a renderer needs.
    ``final`` is False while the block is still streaming."""

    kind: str
    text: str = ""
    data: dict[str, Any] = field(default_factory=dict)
    final: bool = True
