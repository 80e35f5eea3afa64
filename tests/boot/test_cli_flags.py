"""Every ``--no-*`` flag: its help says it turns something off, and running with it does.

The table is keyed by the flags ``agent --help`` prints, so a new ``--no-*`` flag without a
row here fails the first test.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from clirun import run_agent, run_agent_here
from fakeprovider import Reply

OFF_WORDS = re.compile(r"\b(no|not|off|skip|skips|ignore|ignores|without|only)\b")


def help_lines(tmp_path: Path) -> dict[str, str]:
    proc = run_agent_here(["--help"], home=tmp_path / "h", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    helps: dict[str, str] = {}
    current = None
    for line in proc.stdout.splitlines():
        match = re.match(r"\s{2}(--no-[\w-]+)\s*(.*)", line)
        if match:
            current = match.group(1)
            helps[current] = match.group(2)
        elif current and line.startswith(" " * 10) and not line.strip().startswith("-"):
            helps[current] += " " + line.strip()
        else:
            current = None
    return helps


def request_tools(fake_provider) -> set[str]:
    return {t["function"]["name"] for t in fake_provider.requests[0].body["tools"]}


def sent_messages(fake_provider) -> str:
    """The system prompt and the user message of the first request, as JSON text."""
    return json.dumps(fake_provider.requests[0].body["messages"])


def marker_server(tmp_path: Path) -> Path:
    """A config with one stdio MCP server that leaves a marker when it is started."""
    marker = tmp_path / "mcp-started"
    home = tmp_path / "h"
    home.mkdir(exist_ok=True)
    # A shell, not Python: the marker must be written within the startup timeout even on a
    # loaded machine, where an interpreter's own start can take seconds.
    script = f"touch '{marker}'; exec cat >/dev/null"
    (home / "config.toml").write_text(
        f'[mcp_servers.probe]\ncommand = "/bin/sh"\nargs = ["-c", {script!r}]\n'
        # It never answers: the run waits this long for it, not the default 10 s.
        'startup_timeout = 3\n')
    return marker


# flag -> (what the run with the flag must show is off, and without it on)
EFFECTS = {
    "--no-subagent": lambda tools, prompt, tmp: "task" in tools,
    "--no-skills": lambda tools, prompt, tmp: "skill" in tools,
    "--no-memory": lambda tools, prompt, tmp: "remember" in tools,
    "--no-instructions": lambda tools, prompt, tmp: "follow the house style" in prompt,
    "--no-plugins": lambda tools, prompt, tmp: "scribble" in tools,
    "--no-mcp": lambda tools, prompt, tmp: (tmp / "mcp-started").exists(),
    "--no-stdin": lambda tools, prompt, tmp: "<stdin>\\npiped words" in prompt,
    "--no-compat": lambda tools, prompt, tmp: "house-release" in prompt,
}


def test_every_no_flag_has_a_row_and_help_that_says_off(tmp_path):
    helps = help_lines(tmp_path)
    assert set(helps) == set(EFFECTS), "add a row to EFFECTS for each --no-* flag"
    for flag, text in helps.items():
        said = text.lower().split("(default", 1)[0].split("[config", 1)[0]
        assert OFF_WORDS.search(said), f"{flag}: help does not say what it turns off: {text}"


@pytest.mark.parametrize("flag", sorted(EFFECTS))
def test_each_no_flag_turns_its_feature_off(flag, tmp_path, fake_provider):
    """In process (``run_agent_here``): what a flag turns off is the CLI's decision."""
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "AGENTS.md").write_text("Always follow the house style.\n")
    skill = ws / ".claude" / "skills" / "house-release"  # Claude Code's, read by compat
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text("---\nname: house-release\ndescription: cut a release"
                                    "\n---\nTag, build, publish.\n")
    results = {}
    for with_flag in (False, True):
        run = tmp_path / ("with" if with_flag else "without")
        run.mkdir()
        if flag == "--no-mcp":
            marker_server(run)
        fake_provider.requests.clear()
        fake_provider.script(Reply.text("ok"))
        args = ["-p", "hi", "--provider", "openai", "--base-url", fake_provider.openai_url,
                "--model", "m"] + ([flag] if with_flag else [])
        proc = run_agent_here(args, home=run / "h", cwd=ws, input="piped words",
                              OPENAI_API_KEY="x")
        assert proc.returncode == 0, proc.stderr
        results[with_flag] = EFFECTS[flag](request_tools(fake_provider),
                                           sent_messages(fake_provider), run)
    assert results == {False: True, True: False}, f"{flag}: on without it, off with it"


# ---- agent -v says where it runs from --------------------------------------------------------


@pytest.mark.e2e
def test_version_names_the_editable_checkout_it_runs_from(tmp_path):
    proc = run_agent(["-v"], home=tmp_path / "h", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    first, where = proc.stdout.splitlines()
    assert first.startswith("agent ") and " python " in first
    checkout = Path(__file__).resolve().parents[2]
    assert where == f"editable install of the source checkout: {checkout}"


def test_version_names_an_installed_package_and_its_location(tmp_path):
    # An installed copy is the package inside an interpreter's site-packages: lay one out in
    # a fresh virtual environment and ask that interpreter.
    import shutil
    import subprocess
    import venv

    env_dir = tmp_path / "venv"
    venv.EnvBuilder(with_pip=False, system_site_packages=True).create(env_dir)
    python = env_dir / "bin" / "python"
    site = subprocess.run([python, "-c", "import sysconfig; print(sysconfig.get_paths()"
                                         "['purelib'])"], capture_output=True, text=True,
                          check=True).stdout.strip()
    source = Path(__file__).resolve().parents[2] / "agent"
    shutil.copytree(source, Path(site) / "agent", ignore=shutil.ignore_patterns("__pycache__"))
    proc = subprocess.run([python, "-c", "from agent.boot.cli import main; main(['-v'])"],
                          capture_output=True, text=True, cwd=tmp_path,
                          env={"PATH": "/usr/bin:/bin"})
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[1] == f"installed package: {Path(site).resolve() / 'agent'}"
