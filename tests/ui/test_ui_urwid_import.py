"""The UI imports urwid without its trio event loop (~0.1-0.4 s of the first frame when trio
is installed), and trio still imports afterwards for whoever needs it."""

from __future__ import annotations

import importlib.util
import subprocess
import sys

import pytest

CHECK = """
import sys
from agent.ui import import_urwid
import_urwid()
import agent.ui.app  # the whole UI module tree, as launch() imports it
assert "urwid" in sys.modules
assert "trio" not in sys.modules, "urwid pulled in trio"
import urwid
assert urwid.AsyncioEventLoop and not hasattr(urwid, "TrioEventLoop")
import trio
assert trio.run
print("ok")
"""


@pytest.mark.skipif(importlib.util.find_spec("trio") is None,
                    reason="trio is not installed here, so urwid cannot pull it in")
def test_the_ui_imports_urwid_without_trio_and_trio_still_imports_after():
    proc = subprocess.run([sys.executable, "-c", CHECK], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "ok\n"

