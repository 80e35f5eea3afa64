"""The threads guards run on (agent/loop/guards.py): reused once idle, never while busy."""

from __future__ import annotations

import threading

from agent.contract.verdict import Verdict
from agent.loop.guards import GuardRunner


def test_calls_one_after_the_other_run_on_one_thread_that_is_not_the_callers():
    seen: list[int] = []

    def guard(tool_name):
        seen.append(threading.get_ident())
        return Verdict.deny(f"no {tool_name}", "counting") if tool_name == 7 else None

    runner = GuardRunner(lambda message: None)
    answers = [runner.run_sync([("counting", guard, ("tool_name",))], {"tool_name": i}, 5.0)
               for i in range(20)]
    assert [a for a in answers if a] == [[Verdict.deny("no 7", "counting")]]
    assert len(seen) == 20 and len(set(seen)) == 1
    assert threading.get_ident() not in seen


def test_a_hung_guard_keeps_its_thread_and_a_later_call_runs_on_another():
    release = threading.Event()
    hung_on: list[int] = []
    later_on: list[int] = []

    def hanger():
        hung_on.append(threading.get_ident())
        release.wait(30)

    def quick():
        later_on.append(threading.get_ident())
        return Verdict.deny("quick says no", "quick")

    runner = GuardRunner(lambda message: None)
    try:
        [first] = runner.run_sync([("hanger", hanger, ())], {}, 0.3)  # expected to time out
        assert first.decision == "deny" and "did not answer within 0.3 s" in first.reason
        assert runner.run_sync([("quick", quick, ())], {}, 10.0) == [
            Verdict.deny("quick says no", "quick")]
        assert hung_on and later_on and hung_on[0] != later_on[0]
        [busy] = runner.run_sync([("hanger", hanger, ())], {}, 10.0)  # refused at once
        assert "has not answered an earlier call" in busy.reason and len(hung_on) == 1
    finally:
        release.set()


def test_a_guard_that_raises_system_exit_leaves_its_worker_serving():
    idents: list[int] = []

    def quits():
        idents.append(threading.get_ident())
        raise SystemExit(3)

    runner = GuardRunner(lambda message: None)
    for _ in range(3):
        [verdict] = runner.run_sync([("quitter", quits, ())], {}, 5.0)
        assert verdict.decision == "deny" and "SystemExit" in verdict.reason
    # Each worker that ran it is still alive, serving.  Which worker takes a call is not
    # asserted: the pool is the process's, and a worker from an earlier test (a guard that
    # hung past its timeout) can become idle between two of these calls.
    alive = {thread.ident for thread in threading.enumerate() if thread.is_alive()}
    assert len(idents) == 3 and set(idents) <= alive


def test_an_idle_worker_keeps_nothing_of_the_call_it_served():
    """The guard's arguments reach the session and its whole history: a worker waiting for
    its next call must not hold them (or the guard, or its answer) alive."""
    import gc
    import weakref

    class Held:
        pass

    def guard(tool_args):
        return Verdict.deny("no", "holder")

    runner = GuardRunner(lambda message: None)
    args, answer_box = Held(), []
    watched = weakref.ref(args)
    answer_box.append(runner.run_sync([("holder", guard, ("tool_args",))],
                                      {"tool_args": args}, 5.0))
    assert answer_box == [[Verdict.deny("no", "holder")]]
    del args, answer_box
    gc.collect()
    assert watched() is None, gc.get_referrers(watched())
