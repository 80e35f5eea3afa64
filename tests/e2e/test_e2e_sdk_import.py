"""The screen never freezes on a provider's SDK import.

A provider imports its SDK (0.3-2 s) on first use, and the UI warms it on a thread after the
first frame.  A prompt sent while that import is still under way must not make the event
loop wait for the import lock: keys typed then echo at once.  The provider here is a real
plugin distribution whose "SDK" is a module that cannot finish importing until the test says
so, and which records every thread that asked for it.
"""

from __future__ import annotations

import textwrap
import time
from pathlib import Path

import pytest
from pty_term import Term

pytestmark = pytest.mark.e2e  # a real terminal (docs/testing.md)

IDLE = "ask agent... (/ commands, @ files)"

SDK = '''
"""A provider SDK that takes as long to import as the test wants."""
import os
import pathlib
import sys
import threading
import time

_here = pathlib.Path(os.environ["SLOW_SDK_DIR"])


def _importers():
    """The threads importing this module: this one, and those waiting on its import lock."""
    names = {threading.current_thread().name}
    by_id = {t.ident: t.name for t in threading.enumerate()}
    for ident, frame in sys._current_frames().items():
        while frame is not None:
            code = frame.f_code
            # _find_and_load: the first import; _lock_unlock_module: one that finds the
            # module in sys.modules, half-initialised, and waits for its lock
            if code.co_name in ("_find_and_load", "_lock_unlock_module") \\
                    and frame.f_locals.get("name") == __name__:
                names.add(by_id.get(ident, str(ident)))
                break
            frame = frame.f_back
    return sorted(names)


_deadline = time.monotonic() + 120
while not (_here / "release").exists() and time.monotonic() < _deadline:
    (_here / "importers.tmp").write_text("\\n".join(_importers()))
    os.replace(_here / "importers.tmp", _here / "importers")
    time.sleep(0.01)
(_here / "imported").write_text("done")
GREETING = "hello from the slow sdk"
'''

PLUGIN = '''
"""A provider whose SDK is slow_sdk."""
from agent import ProviderSpec, hookimpl
from agent.contract.messages import Message, TextPart
from agent.contract.providers import StepFinished, TextDelta, Usage


class SlowProvider:
    label = "slow sdk"

    def __init__(self, settings):
        self.settings = settings

    async def stream(self, request):
        import slow_sdk  # what a provider does: its SDK, on first use

        yield TextDelta(slow_sdk.GREETING)
        yield StepFinished(Message("assistant", [TextPart(slow_sdk.GREETING)]),
                           Usage(input_tokens=3, output_tokens=5))

    async def list_models(self):
        return ["m"]


@hookimpl
def agent_register_providers(register):
    register(ProviderSpec(name="slowsdk", create=SlowProvider, keyless=True,
                          default_model="m", warm_modules=("slow_sdk",)))
'''


def slow_provider_site(site: Path) -> None:
    """The plugin and its "SDK" as an installed distribution (what pip would write)."""
    site.mkdir()
    (site / "slow_sdk.py").write_text(textwrap.dedent(SDK))
    (site / "slow_provider.py").write_text(textwrap.dedent(PLUGIN))
    info = site / "slow_provider-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: slow-provider\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text("[agent.plugins]\nslow_provider = slow_provider\n")


def wait_until(check, what: str, term: Term, timeout: float = 60.0):
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}; screen:\n{term.text()}")
        time.sleep(0.02)


def test_keys_typed_while_the_turn_waits_for_the_sdk_import_echo_at_once(tmp_path):
    ws, home, site, sdk = (tmp_path / n for n in ("ws", "home", "site", "sdk"))
    ws.mkdir()
    sdk.mkdir()
    slow_provider_site(site)
    term = Term(["--provider", "slowsdk"], cwd=ws, home=home,
                env={"PYTHONPATH": str(site), "SLOW_SDK_DIR": str(sdk)})
    try:
        term.wait_for(IDLE, timeout=60)
        term.type("go")

        def turn_waits() -> list[str]:
            # Besides the warm-up thread, someone else (the turn) asked for the import.
            path = sdk / "importers"
            names = path.read_text().split() if path.exists() else []
            return [n for n in names if n != "warmup"]

        others = wait_until(turn_waits, "the turn to ask for the SDK", term)
        term.send("typed while importing")
        term.wait_for("> typed while importing", timeout=30)
        assert not (sdk / "imported").exists()  # the import was still under way
        importers = (sdk / "importers").read_text().split()
        assert "MainThread" not in importers, importers  # the event loop never waited on it
        assert others
        # The warm-up after the first frame asks for the same module (first, or waiting).
        wait_until(lambda: "warmup" in (sdk / "importers").read_text().split(),
                   "the warm-up thread to import the SDK", term)
        term.send("\x15")  # ctrl-u: clear the prompt
        (sdk / "release").write_text("go on")
        term.wait_for("hello from the slow sdk", timeout=60)
        term.wait_for(IDLE, timeout=30)
        term.type("/exit")
        assert term.wait_exit(timeout=30) == 0
    finally:
        term.close()


def test_quitting_while_the_sdk_still_imports_does_not_wait_for_it(tmp_path):
    ws, home, site, sdk = (tmp_path / n for n in ("ws", "home", "site", "sdk"))
    ws.mkdir()
    sdk.mkdir()
    slow_provider_site(site)
    term = Term(["--provider", "slowsdk"], cwd=ws, home=home,
                env={"PYTHONPATH": str(site), "SLOW_SDK_DIR": str(sdk)})
    try:
        term.wait_for(IDLE, timeout=60)
        term.type("go")
        path = sdk / "importers"
        wait_until(lambda: path.exists() and set(path.read_text().split()) - {"warmup"},
                   "the turn to ask for the SDK", term)
        term.send("\x03")  # ctrl-c: no command runs, so it cancels the turn
        term.wait_for("interrupted", timeout=30)
        term.send("\x03")  # idle and empty: twice quits
        term.wait_for("press ctrl-c again to quit", timeout=30)
        term.send("\x03")
        # The import cannot finish for another two minutes: the agent leaves without it.
        assert term.wait_exit(timeout=30) == 0
        assert not (sdk / "imported").exists()
    finally:
        term.close()
