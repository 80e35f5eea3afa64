"""The collector is held off while the CLI boots and running again once the work begins."""

from __future__ import annotations

import gc
import threading
import time

from clirun import run_agent_here

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
