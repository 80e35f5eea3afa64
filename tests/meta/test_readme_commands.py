"""README's two set-up commands work where the system's Python is externally managed (PEP 668),
and CI runs exactly the test command README gives."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _readme_blocks() -> list[str]:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    return re.findall(r"```sh\n(.*?)```", text, flags=re.S)


def _command(heading: str) -> str:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text.split(f"## {heading}\n", 1)[1]
    block = re.search(r"```sh\n(.*?)```", section, flags=re.S)
    assert block, f"README's '{heading}' section has no command block"
    return block.group(1).strip().splitlines()[0]


def test_ci_runs_the_readme_test_command_verbatim():
    test_command = _command("Test")
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    assert test_command in ci, f"{test_command!r} is not a line of .ci/run"


def test_ci_runs_the_readme_install_command_with_version_for_the_ui():
    install = _command("Install and run")
    assert install.endswith(".venv/bin/agent")
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    assert f"{install} --version" in ci


def test_readme_commands_never_pip_install_into_the_system_python():
    # `python3 -m pip install` straight into the system's interpreter is what PEP 668 refuses.
    for command in (_command("Install and run"), _command("Test")):
        assert command.startswith("python3 -m venv .venv && .venv/bin/python -m pip install")
        assert "python3 -m pip" not in command
