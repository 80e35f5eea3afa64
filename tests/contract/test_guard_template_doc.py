"""The guard plugin template in docs/plugins/guard-template works as documented: laid out as
an installed distribution for a subprocess only, its own tests pass, and `agent plugins list`
then shows it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from clirun import run_agent
from conftest import lay_out_distribution

pytestmark = pytest.mark.e2e  # runs the agent as a process (docs/testing.md)

TEMPLATE = Path(__file__).parents[2] / "docs" / "plugins" / "guard-template"


def test_the_template_plugins_own_tests_pass_and_it_is_listed(tmp_path):
    site = tmp_path / "site"
    site.mkdir()
    lay_out_distribution(TEMPLATE, site)
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(site), env.get("PYTHONPATH")]))
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           str(TEMPLATE / "tests")], cwd=TEMPLATE, env=env,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    assert "8 passed" in proc.stdout
    listed = run_agent(["plugins", "list"], home=tmp_path / "h", cwd=tmp_path,
                       PYTHONPATH=env["PYTHONPATH"])
    assert any(line.split()[:2] == ["guard-template", "enabled"]
               for line in listed.stdout.splitlines()), listed.stdout
