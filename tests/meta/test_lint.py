"""The tree stays clean under the project's ruff settings, and the core type-checks under
``mypy --strict`` (both configured in pyproject.toml)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).parents[2]


def test_ruff_finds_nothing():
    ruff = shutil.which("ruff") or str(Path(sys.executable).parent / "ruff")
    proc = subprocess.run([ruff, "check", "--output-format", "concise", "."], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_mypy_strict_finds_nothing_in_the_core():
    # pyproject.toml's [tool.mypy] names the files (agent/, without agent/ui) and strict mode;
    # the cache lives in the checkout (.mypy_cache, ignored by git), so a rerun takes seconds.
    proc = subprocess.run([sys.executable, "-m", "mypy", "--no-error-summary"], cwd=ROOT,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, (
        "mypy --strict found errors in the core; annotate the code (a `# type: ignore[code]` "
        "only where a dependency ships no types, with the reason):\n" + proc.stdout + proc.stderr)
    assert proc.stdout.strip() == "", proc.stdout
