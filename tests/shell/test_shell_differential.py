"""The judge may be more cautious than bash, never less: generated commands it lets run
without a prompt are run under ``strace -f`` on a scratch copy (tests/shell_differential.py),
and must write nothing, change nothing and execute no program the judge did not name.

Bounded here (``examples``); ``python bench/shell_differential.py`` runs many more.
"""

from __future__ import annotations

import shutil
from random import Random

import pytest
import shell_differential as diff
from hypothesis import HealthCheck, given, reject, settings
from hypothesis import strategies as st
from lanes import examples

pytestmark = pytest.mark.skipif(shutil.which("strace") is None,
                                reason="strace is not installed (.ci/run installs it)")


@pytest.fixture(scope="module")
def original(tmp_path_factory):
    return diff.workspace(tmp_path_factory.mktemp("differential"))


@settings(max_examples=examples(24), deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture,
                                 HealthCheck.filter_too_much, HealthCheck.too_slow])
@given(rng=st.randoms(use_true_random=False))
def test_what_the_judge_lets_run_only_reads(rng, original):
    for _ in range(20):
        text = diff.command(rng)
        if diff.auto_allowed(text, original):
            assert diff.audit(text, original) == [], text
            return
    reject()


def test_the_generator_reaches_both_verdicts(original):
    """Not vacuous: a good share of generated commands run without a prompt, and the audit
    sees a writing one that the judge asks about."""
    rng = Random(28)
    allowed = sum(diff.auto_allowed(diff.command(rng), original) for _ in range(200))
    assert 40 <= allowed <= 160
    assert not diff.auto_allowed("sort -o out.txt a.txt", original)
    assert diff.audit("sort -o out.txt a.txt", original)  # the oracle sees a write
    assert diff.audit("find . -maxdepth 0 -exec touch pwn \\;", original)
    assert diff.audit("cat a.txt | xargs -r rev", original) == []
