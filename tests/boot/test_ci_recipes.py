"""The CI recipes in docs/ci/ work: their command lines, taken from the workflow files as
written, run through bash in a real git checkout with the installed ``agent`` on PATH,
against the fake provider instead of the real one.  What is checked is what a CI job would
see: the files the steps write, the checkout's files, and the exit status."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from clirun import agent_env
from fakeprovider import Reply

pytestmark = pytest.mark.e2e  # runs the agent as a process, from bash (docs/testing.md)

DOCS = Path(__file__).parents[2] / "docs" / "ci"
BUGGY = "def add(a, b):\n    return a - b\n"
TEST = "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n"

if shutil.which("jq") is None:  # the recipes read the result record with jq, as CI runners do
    pytest.skip("jq is not installed", allow_module_level=True)


def git(ws: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=ws, check=True, capture_output=True,
                          text=True, env={**os.environ, "GIT_AUTHOR_NAME": "t",
                                          "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
                                          "GIT_COMMITTER_EMAIL": "t@t"}).stdout


def checkout(tmp_path: Path, *, change: bool) -> Path:
    """A clone of a repository whose ``main`` holds ``calc.py`` (buggy) and its test; with
    ``change``, HEAD is one commit ahead on a branch, as a pull request's checkout is."""
    origin, ws = tmp_path / "origin.git", tmp_path / "ws"
    ws.mkdir()
    (ws / "calc.py").write_text(BUGGY)
    (ws / "tests").mkdir()
    (ws / "tests" / "test_calc.py").write_text(TEST)
    (ws / ".gitignore").write_text("__pycache__/\n.pytest_cache/\n*.json\n*.md\n*.txt\n")
    git(ws, "init", "-q", "-b", "main")
    git(ws, "add", ".")
    git(ws, "commit", "-qm", "calc")
    git(tmp_path, "init", "-q", "--bare", str(origin))
    git(ws, "remote", "add", "origin", str(origin))
    git(ws, "push", "-q", "origin", "main")
    git(ws, "fetch", "-q", "origin")
    if change:
        git(ws, "switch", "-qc", "feature")
        (ws / "calc.py").write_text(BUGGY + "\n\ndef double(x):\n    return x * 3\n")
        git(ws, "commit", "-qam", "double")
    return ws


def run_lines(script: str, ws: Path, home: Path, fake_provider, env: dict[str, str]):
    """``script`` as a CI runner runs it (``bash -e``), with the provider pointed here."""
    path = os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])
    full = agent_env(home, **{k: v for k, v in env.items() if "${{" not in str(v)},
                     OPENAI_API_KEY="sk-test", AGENT_BASE_URL=fake_provider.openai_url,
                     PATH=path)
    return subprocess.run(["bash", "-e", "-c", script], cwd=ws, env=full, capture_output=True,
                          text=True, timeout=300)


def github_step(name: str) -> tuple[str, dict[str, str]]:
    workflow = yaml.safe_load((DOCS / "github-actions.yml").read_text())
    for job in workflow["jobs"].values():
        for step in job["steps"]:
            if step.get("name") == name:
                return step["run"], {**workflow["env"], **step.get("env", {})}
    raise AssertionError(f"no step {name!r} in github-actions.yml")


def gitlab_job(name: str) -> tuple[str, dict[str, str]]:
    pipeline = yaml.safe_load((DOCS / "gitlab-ci.yml").read_text())
    return "\n".join(pipeline[name]["script"]), dict(pipeline["variables"])


def review_script(fake_provider) -> None:
    fake_provider.script(Reply.text("double() triples its argument; add a test for it."))


def fix_script(fake_provider) -> None:
    fake_provider.script(
        Reply.tool_call("edit_file", {"path": "calc.py", "oldString": "a - b",
                                      "newString": "a + b"}, id="e1"),
        Reply.tool_call("bash", {"command": "python -m pytest -q"}, id="p1"),
        Reply.text("add() subtracted; it adds now."))


def check_review(ws: Path, proc, fake_provider) -> None:
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert (ws / "review.md").read_text() == (
        "double() triples its argument; add a test for it.\n")
    record = json.loads((ws / "review.json").read_text())
    assert record["stop_reason"] == "done" and record["cost_usd"] > 0  # gpt-5 is priced
    (request,) = fake_provider.requests
    sent = request.body["messages"][-1]["content"]
    assert "<stdin>\ndiff --git a/calc.py b/calc.py" in sent and "+    return x * 3" in sent


def check_fix(ws: Path, proc, fake_provider) -> None:
    assert proc.returncode == 0, proc.stdout + proc.stderr  # the step's own pytest passed
    assert (ws / "calc.py").read_text() == "def add(a, b):\n    return a + b\n"
    record = json.loads((ws / "fix.json").read_text())
    assert (record["stop_reason"], record["exit_code"], record["files_changed"]) == (
        "done", 0, ["calc.py"])
    first = fake_provider.requests[0].body["messages"][-1]["content"]
    assert "<stdin>" in first and "assert -1 == 5" in first  # the failure was piped in
    ran = [m["content"] for m in fake_provider.requests[-1].body["messages"]
           if m["role"] == "tool"][-1]
    assert "1 passed" in ran  # the allowed pytest ran, in the sandbox


# recipe -> (its command lines and variables, what the CI system sets, a pull request's
# checkout or main's, the model's replies, the check)
RECIPES = {
    "github review": (lambda: github_step("Review the diff"), {"BASE": "main"}, True,
                      review_script, check_review),
    "github fix": (lambda: github_step("Fix the failing test"), {}, False, fix_script,
                   check_fix),
    "gitlab review": (lambda: gitlab_job("agent-review"),
                      {"CI_MERGE_REQUEST_TARGET_BRANCH_NAME": "main"}, True, review_script,
                      check_review),
    "gitlab fix": (lambda: gitlab_job("agent-fix"), {}, False, fix_script, check_fix),
}


@pytest.mark.parametrize("recipe", sorted(RECIPES))
def test_recipe_runs_as_written(recipe, tmp_path, fake_provider):
    lines, ci_env, pull_request, replies, check = RECIPES[recipe]
    ws = checkout(tmp_path, change=pull_request)
    replies(fake_provider)
    script, env = lines()
    proc = run_lines(script, ws, tmp_path / "home", fake_provider, {**env, **ci_env})
    check(ws, proc, fake_provider)
