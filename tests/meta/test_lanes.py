"""The fast lane's property counts (tests/lanes.py): which runs are the fast lane, and that
every property test takes its count from ``examples()`` so the whole suite keeps the full one."""

from __future__ import annotations

import ast
from pathlib import Path

import lanes
import pytest
import sourcetrees

TESTS = Path(__file__).parents[1]


@pytest.mark.parametrize(("markexpr", "fast"), [
    ("", False),
    ("e2e", False),
    ("not e2e", True),
    ("not e2e and not slow", True),
    ("not (e2e or slow)", True),
    ("e2e or not e2e", False),
    ("not slow", False),
    ("not e2e2", False),
    ("not (", False),  # pytest reports the bad expression itself; counts stay full
])
def test_which_marker_expressions_are_the_fast_lane(markexpr, fast):
    assert lanes.deselects_e2e(markexpr) is fast


def test_a_quarter_of_the_examples_in_the_fast_lane_and_all_in_the_whole_suite(monkeypatch):
    monkeypatch.setattr(lanes, "_fast", False)
    assert [lanes.examples(n) for n in (8, 100, 1500)] == [8, 100, 1500]
    monkeypatch.setattr(lanes, "_fast", True)
    assert [lanes.examples(n) for n in (8, 100, 1500)] == [10, 25, 375]


def _literal_counts(tree: ast.Module) -> list[int]:
    """Lines where ``max_examples=`` is given something other than ``examples(...)``."""
    return [kw.value.lineno for node in sourcetrees.walk(tree) if isinstance(node, ast.Call)
            for kw in node.keywords if kw.arg == "max_examples"
            and not (isinstance(kw.value, ast.Call) and isinstance(kw.value.func, ast.Name)
                     and kw.value.func.id == "examples")]


def test_every_property_count_goes_through_the_lane():
    found = {str(path.relative_to(TESTS)): lines for path in sorted(TESTS.rglob("test_*.py"))
             if path.name != Path(__file__).name
             and (lines := _literal_counts(sourcetrees.parse(path)))}
    assert not found, (f"max_examples given without lanes.examples() (the fast lane would "
                       f"run the full count): {found}")


def test_the_count_checker():
    assert _literal_counts(ast.parse("settings(max_examples=50)")) == [1]
    assert _literal_counts(ast.parse("settings(max_examples=examples(50))")) == []
