"""``kill -9`` at random moments of a headless turn (tool calls and a slow answer from the
fake provider): the database stays intact, nothing committed is lost, and ``agent -c`` carries
on with a valid history.  A few trials here; ``bench/kill_durability.py`` runs fifty."""

from __future__ import annotations

from killtrial import run_trials, summary


def test_kill_9_at_random_moments(tmp_path):
    home, ws = tmp_path / "home", tmp_path / "ws"
    ws.mkdir()
    # Seeded: the same moments every run (spread from startup to the tools and the answer).
    outcomes, final = run_trials(3, home, ws, seed=7, max_delay=2.0)
    report = "\n".join(summary(outcomes, final))
    assert not final and all(not o.problems for o in outcomes), report
    assert sum(o.killed for o in outcomes) >= 2, report
