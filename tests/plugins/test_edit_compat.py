"""The vendored peer fixtures (Codex apply-patch scenarios, opencode and aider edit cases) pass
through our real tools; a deliberate deviation must produce its documented outcome."""

from __future__ import annotations

import pytest
from compat_suites import DEVIATIONS, SUITES, codex_cases, run_case

ALL = [case for load in SUITES.values() for case in load()]


@pytest.mark.parametrize("case", ALL, ids=[case.key for case in ALL])
async def test_peer_fixture(case, tmp_path):
    outcome = await run_case(case, tmp_path)
    assert outcome.passed, f"{case.key}: {outcome.detail}\n--- tool output ---\n{outcome.output}"


def test_every_codex_scenario_is_vendored_and_deviations_are_few():
    names = [case.name for case in codex_cases()]
    assert len(names) == 23
    codex_deviations = [key for key in DEVIATIONS if key.startswith("codex/")]
    assert len(codex_deviations) <= 2
    assert all(key.split("/", 1)[1] in names for key in codex_deviations)


def test_deviations_are_documented():
    from pathlib import Path

    doc = (Path(__file__).resolve().parents[2] / "docs" / "tools.md").read_text()
    for key in DEVIATIONS:
        assert key.split("/", 1)[1] in doc, f"{key} is not listed in docs/tools.md"
