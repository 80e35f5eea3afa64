"""The types a plugin annotates with are exported from ``agent`` without making the import
heavier: they load on first use."""

from __future__ import annotations

import subprocess
import sys

PROBE = """
import sys
import agent
loaded_early = sorted(m for m in ("agent.loop.session", "agent.ui.context", "urwid")
                      if m in sys.modules)
from agent import CommandContext, Config, Session
from agent.boot.config import Config as ConfigClass
from agent.loop.session import Session as SessionClass
from agent.ui.context import CommandContext as ContextClass
print(loaded_early, Session is SessionClass, Config is ConfigClass, CommandContext is ContextClass)
try:
    agent.NoSuchThing
except AttributeError as exc:
    print(exc)
"""


def test_session_config_and_command_context_load_on_first_use():
    proc = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == ["[] True True True",
                                        "module 'agent' has no attribute 'NoSuchThing'"]


def test_the_exported_types_are_in_all():
    import agent

    assert {"Session", "Config", "CommandContext"} <= set(agent.__all__)


def test_a_plugin_annotated_with_the_exported_types_is_really_checked():
    """mypy --strict (the project's settings) passes a well-typed plugin and reports exactly
    the mistakes marked ``# error: CODE`` in the other: a misspelled import, a missing
    attribute, a wrong return type (so the exported names are real types, not ``Any``)."""
    import re
    from pathlib import Path

    root = Path(__file__).parents[2]
    fixtures = Path("tests/fixtures/typed_plugins")
    proc = subprocess.run([sys.executable, "-m", "mypy", "--no-warn-unused-configs",
                           "--no-error-summary", str(fixtures / "good.py"),
                           str(fixtures / "bad.py")],
                          cwd=root, capture_output=True, text=True, timeout=300)
    found = set(re.findall(r"^(\S+\.py):(\d+): error: .*\[([a-z-]+)\]$", proc.stdout, re.M))
    expected = set()
    for number, line in enumerate((root / fixtures / "bad.py").read_text().splitlines(), 1):
        for code in re.findall(r"# error: ([a-z-]+)", line):
            expected.add((str(fixtures / "bad.py"), str(number), code))
    assert len(expected) == 3
    assert found == expected, proc.stdout + proc.stderr


def test_every_public_name_loads_and_import_agent_imports_nothing_else():
    """``import agent`` is on the way to ``--version``: it must not import its API up front,
    and every name in ``__all__`` must still resolve (each loads its module on first use)."""
    import agent

    probe = ("import sys, agent; before = sorted(m for m in sys.modules if m.startswith('agent'))"
             "; [getattr(agent, n) for n in agent.__all__]; print(before)")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                         check=True).stdout
    assert out.strip() == "['agent']"
    assert set(agent.__all__) == set(agent._EXPORTS) | {"__version__"}
