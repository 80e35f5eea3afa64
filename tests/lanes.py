"""Which lane a run is, and how many examples a property test draws in it.

The whole suite (``pytest -n auto``, what CI and README run) draws every property test's full
``max_examples``. The fast lane (``-m "not e2e"``, the loop a developer runs while working)
draws a quarter of them: each property still runs on every change, its shrinker and its
example database (``.hypothesis/``, which replays a failure it found before) included, and
the full counts run before anything lands. This is Hypothesis's own advice: a small profile
for development, the full one for CI.

``AGENT_TEST_EXAMPLES=full`` draws the full counts in any lane, ``=fast`` the quarter.
"""

from __future__ import annotations

import os

import pytest
from _pytest.mark.expression import Expression

#: the fast lane draws 1/FAST_LANE_SHARE of each property test's examples ...
FAST_LANE_SHARE = 4
#: ... and never fewer than this
FAST_LANE_FLOOR = 10

_fast = False


def configure(config: pytest.Config) -> None:
    """Decide the lane from the run's options (before any test module is collected)."""
    global _fast
    choice = os.environ.get("AGENT_TEST_EXAMPLES", "")
    if choice not in ("", "full", "fast"):
        raise pytest.UsageError(f"AGENT_TEST_EXAMPLES={choice!r}: use 'full' or 'fast'")
    _fast = choice == "fast" or (not choice and deselects_e2e(config.option.markexpr))


def deselects_e2e(markexpr: str) -> bool:
    """Whether ``-m markexpr`` leaves out a test marked only ``e2e``.  An expression pytest
    cannot parse counts as the whole suite (pytest reports it itself)."""
    if not markexpr:
        return False
    try:
        return not Expression.compile(markexpr).evaluate(lambda name, **_: name == "e2e")
    except (SyntaxError, pytest.UsageError):
        return False


def fast_lane() -> bool:
    return _fast


def examples(full: int) -> int:
    """``max_examples`` for a property test whose full count is ``full``."""
    return max(FAST_LANE_FLOOR, full // FAST_LANE_SHARE) if _fast else full
