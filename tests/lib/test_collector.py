"""The collector is held off while the CLI boots and running again once the work begins."""

from __future__ import annotations

import gc
import threading
import time

import pytest
from clirun import run_agent, run_agent_here

from agent.testing.fakeprovider import Reply


def test_the_boot_runs_without_the_collector_and_leaves_it_on(tmp_path):
    """A plugin on a site of its own writes down, as it is imported and registers its
    options (both the boot's work), whether the collector may run."""
    site, ws = tmp_path / "site", tmp_path / "ws"
    site.mkdir()
    ws.mkdir()
    seen = tmp_path / "seen"
    (site / "gcprobe.py").write_text(f"""
import gc
from agent import hookimpl
with open({str(seen)!r}, "a") as out:
    out.write(f"import {{gc.isenabled()}}\\n")

@hookimpl
def agent_addoption(options):
    with open({str(seen)!r}, "a") as out:
        out.write(f"options {{gc.isenabled()}}\\n")
""")
    info = site / "gcprobe-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: gcprobe\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text("[agent.plugins]\ngcprobe = gcprobe\n")
    assert gc.isenabled()
    proc = run_agent_here(["--help"], home=tmp_path / "h", cwd=ws, PYTHONPATH=str(site))
    assert proc.returncode == 0 and "commands:" in proc.stdout, proc.stderr
    assert seen.read_text().split("\n")[:2] == ["import False", "options False"]
    assert gc.isenabled()


def test_the_headless_turn_runs_with_the_collector_on(tmp_path, fake_provider):
    """Seen from the fake provider's side while the answer streams (held until seen)."""
    ws = tmp_path / "ws"
    ws.mkdir()
    during: list[bool] = []
    done, seen = threading.Event(), threading.Event()

    def watch():
        while not done.is_set():
            if fake_provider.requests:
                during.append(gc.isenabled())
                seen.set()
                return
            time.sleep(0.001)

    watcher = threading.Thread(target=watch)
    watcher.start()
    fake_provider.script(Reply.held(seen, reply=Reply.text("ok then")))
    try:
        proc = run_agent_here(["-p", "hi", "--provider", "openai", "--base-url",
                               fake_provider.openai_url, "--model", "m"],
                              home=tmp_path / "h", cwd=ws, OPENAI_API_KEY="x")
    finally:
        done.set()
        watcher.join()
    assert proc.returncode == 0, proc.stderr
    assert "ok then" in proc.stdout
    assert during == [True]
    assert gc.isenabled()


def _restore(enabled: bool) -> None:
    gc.unfreeze()  # what a hold froze goes back to the collector (this process lives on)
    (gc.enable if enabled else gc.disable)()


def test_a_resume_asked_for_while_held_waits_for_the_hold_to_end():
    """The SDK import's hold keeps the collector off even if the turn resumes it meanwhile."""
    from agent.lib import collector

    before = gc.isenabled()
    try:
        gc.disable()
        with collector.held():
            collector.resume()
            assert not gc.isenabled()
            with collector.held():  # holds nest
                pass
            assert not gc.isenabled()
        assert gc.isenabled()
        assert gc.get_freeze_count() > 0  # what existed was moved out of its reach
    finally:
        _restore(before)


def test_a_hold_gives_back_the_collector_as_it_found_it():
    from agent.lib import collector

    before = gc.isenabled()
    try:
        for running in (True, False):
            (gc.enable if running else gc.disable)()
            with collector.held():
                assert not gc.isenabled()
            assert gc.isenabled() is running
    finally:
        _restore(before)


def test_a_hold_begun_on_another_thread_after_the_resume_still_ends_with_it_on():
    """The warm-up thread may start its hold only after the CLI resumed the collector."""
    from agent.lib import collector

    before = gc.isenabled()
    try:
        gc.disable()
        collector.resume()  # the turn begins before the thread got going
        inside: list[bool] = []

        def warm() -> None:
            with collector.held():
                inside.append(gc.isenabled())

        thread = threading.Thread(target=warm)
        thread.start()
        thread.join(timeout=30)
        assert inside == [False] and gc.isenabled()
    finally:
        _restore(before)


@pytest.mark.e2e  # a new process: the SDK import on the warm-up thread is the point
@pytest.mark.parametrize("warmup", ["1", "0"])
def test_a_real_run_imports_the_sdk_without_collecting_and_requests_with_the_collector_on(
        tmp_path, fake_provider, warmup):
    """A plugin writes down, when the request is done (the SDK imported by the warm-up
    thread or, without it, just before the request), whether the collector runs and whether
    what the import made was moved out of its reach.  The second run is the one that counts:
    the first one has no plugin description to guess the provider from, so no warm-up."""
    site, ws = tmp_path / "site", tmp_path / "ws"
    site.mkdir()
    ws.mkdir()
    seen = tmp_path / "seen"
    (site / "gcseen.py").write_text(f"""
import gc, sys
from agent import hookimpl

@hookimpl
def agent_request_done(session, model, usage, nested):
    with open({str(seen)!r}, "a") as out:
        frozen = gc.get_freeze_count() > 0
        out.write(f"{{'openai' in sys.modules}} {{gc.isenabled()}} {{frozen}}\\n")
""")
    info = site / "gcseen-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: gcseen\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text("[agent.plugins]\ngcseen = gcseen\n")
    fake_provider.script(Reply.text("fine"), Reply.text("fine"))
    for _ in range(2):
        proc = run_agent(["-p", "hi", "--provider", "openai", "--base-url",
                          fake_provider.openai_url, "--model", "m"], home=tmp_path / "h",
                         cwd=ws, OPENAI_API_KEY="x", PYTHONPATH=str(site),
                         AGENT_SDK_WARMUP=warmup)
        assert proc.returncode == 0, proc.stderr
        assert proc.stdout == "fine\n"
    assert seen.read_text().splitlines() == ["True True True"] * 2
