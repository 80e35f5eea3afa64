"""Verdicts: what a guard or a permission rule says about one tool call."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Decision = Literal["allow", "ask", "deny"]
DECISIONS: tuple[str, ...] = ("allow", "ask", "deny")
_STRENGTH = {"allow": 0, "ask": 1, "deny": 2}


@dataclass(frozen=True)
class Verdict:
    """``decision`` is ``allow``, ``ask`` or ``deny``.  ``reason`` is shown to the user and, on
    a denial, given to the model, so it should say what to do instead.  ``source`` names who
    decided (a plugin name or ``rule <tool>: "<pattern>"``)."""

    decision: Decision
    reason: str = ""
    source: str = ""

    @classmethod
    def deny(cls, reason: str, source: str = "") -> Verdict:
        return cls("deny", reason, source)

    @classmethod
    def ask(cls, reason: str, source: str = "") -> Verdict:
        return cls("ask", reason, source)

    @classmethod
    def allow(cls, reason: str = "", source: str = "") -> Verdict:
        return cls("allow", reason, source)


def strongest(verdicts: list[Verdict]) -> Verdict | None:
    """The most restrictive verdict (deny > ask > allow); the first of equals wins."""
    best: Verdict | None = None
    for v in verdicts:
        if best is None or _STRENGTH[v.decision] > _STRENGTH[best.decision]:
            best = v
    return best
