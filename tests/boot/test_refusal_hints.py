"""A refusal says, whole, why, and what would allow it (no answer and no --yolo can), and
--help says what --yolo does not approve."""

from __future__ import annotations

import json

import pytest
from clirun import run_agent_here
from fakeprovider import Reply


@pytest.fixture
def dirs(tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    home = tmp_path / "home"
    home.mkdir()
    return home, ws


def run(fake_provider, home, ws, *extra):
    return run_agent_here(["-p", "go", "--provider", "openai", "--base-url",
                           fake_provider.openai_url, "--model", "m", *extra],
                          home=home, cwd=ws, OPENAI_API_KEY="x")


def test_a_rule_refusal_names_the_rule_and_the_file_it_is_in(dirs, fake_provider):
    home, ws = dirs
    (home / "config.toml").write_text('[permission]\nbash = { "rm *" = "deny" }\n')
    (ws / "keep.txt").write_text("kept")
    fake_provider.script(Reply.tool_call("bash", {"command": "rm keep.txt"}, id="b1"),
                         Reply.text("ok"))
    proc = run(fake_provider, home, ws, "--yolo")
    assert proc.returncode == 0, proc.stderr
    assert (ws / "keep.txt").read_text() == "kept"
    line = next(x for x in proc.stderr.splitlines() if x.startswith("[denied] bash"))
    assert ('to allow it: remove or narrow the rule "rm *" = "deny" under [permission] bash '
            f"in {home / 'config.toml'}") in line


def test_a_guard_refusal_says_no_rule_lifts_it_and_how_to_turn_the_guard_off(
        dirs, fake_provider):
    home, ws = dirs
    (ws / "build").mkdir()
    fake_provider.script(Reply.tool_call("bash", {"command": "rm -rf build"}, id="b1"),
                         Reply.text("ok"))
    proc = run(fake_provider, home, ws, "--yolo", "--json")
    assert proc.returncode == 0, proc.stderr
    assert (ws / "build").is_dir()
    denied = next(e for e in map(json.loads, proc.stdout.splitlines())
                  if e["type"] == "tool-denied")
    assert denied["by"] == "guard"
    assert "lifts a guard's refusal" in denied["allow"]
    assert "--disable guard" in denied["allow"]
    assert 'plugins.disabled = ["guard"]' in denied["allow"]


def test_yolo_says_it_does_not_approve_a_command_it_cannot_check(dirs, fake_provider):
    home, ws = dirs
    marker = ws / "ran"
    command = f"python3 -c 'open(\"{marker}\", \"w\")'"
    fake_provider.script(Reply.tool_call("bash", {"command": command}, id="b1"),
                         Reply.text("ok"))
    proc = run(fake_provider, home, ws, "--yolo")
    assert proc.returncode == 0, proc.stderr
    assert not marker.exists()
    line = next(x for x in proc.stderr.splitlines() if x.startswith("[denied] bash"))
    assert "--yolo approves only the commands it can check; it does not approve this one" \
        in line
    assert 'to allow it: yolo_unresolved = "ask"' in line
    told = [m["content"] for m in fake_provider.requests[1].body["messages"]
            if m["role"] == "tool"][0]
    assert "it does not approve this one" in told and "to allow it" not in told


def test_help_says_what_yolo_does_not_approve(dirs):
    home, ws = dirs
    proc = run_agent_here(["--help"], home=home, cwd=ws)
    assert proc.returncode == 0
    text = " ".join(proc.stdout.split())
    assert "approve every 'ask' that can be checked" in text
    assert "cannot be checked without running it (python3 -c ..., $CMD x) is denied, not " \
           "approved" in text
