"""Headless text mode prints the model's text for a terminal: what the model wrote cannot
drive that terminal (set the clipboard, retitle or clear it) unless ``--raw-output`` asks for
the text as it came; what the model asks to run is shown on stderr as it would run."""

from __future__ import annotations

import json

import pytest
from clirun import run_agent_here
from fakeprovider import Reply

OSC52 = "\x1b]52;c;ZWNobyBvd25lZA==\x07"  # "write this to the clipboard"
TITLE = "\x1b]0;not your shell\x1b\\"
CLEAR = "\x1b[2J\x1b[H"
HOSTILE = f"Here is the answer.{OSC52}{TITLE}{CLEAR}\x1b[31mred\x1b[0m\r\nDone.\x07\n"


@pytest.fixture
def dirs(tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    return tmp_path / "home", ws


def run(fake_provider, home, ws, *extra):
    return run_agent_here(["-p", "go", "--provider", "openai", "--base-url",
                           fake_provider.openai_url, "--model", "m", *extra],
                          home=home, cwd=ws, OPENAI_API_KEY="x")


def test_text_mode_strips_terminal_control_sequences_from_the_answer(dirs, fake_provider):
    home, ws = dirs
    fake_provider.script(Reply(HOSTILE, pieces=7))  # sequences cut across stream chunks
    proc = run(fake_provider, home, ws)
    assert proc.returncode == 0, proc.stderr
    assert "\x1b" not in proc.stdout and "\x07" not in proc.stdout and "\r" not in proc.stdout
    assert "Here is the answer." in proc.stdout and "red" in proc.stdout
    assert proc.stdout.rstrip("\n").endswith("Done.")


def test_raw_output_prints_the_answer_as_it_came(dirs, fake_provider):
    home, ws = dirs
    fake_provider.script(Reply(HOSTILE, pieces=7))
    proc = run(fake_provider, home, ws, "--raw-output")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == HOSTILE


def test_json_keeps_the_text_exact_and_escaped(dirs, fake_provider):
    home, ws = dirs
    fake_provider.script(Reply(HOSTILE))
    proc = run(fake_provider, home, ws, "--json")
    assert proc.returncode == 0, proc.stderr
    assert "\x1b" not in proc.stdout  # JSON escapes every control character
    text = "".join(e["text"] for e in map(json.loads, proc.stdout.splitlines())
                   if e["type"] == "text")
    assert text == HOSTILE


def test_raw_output_needs_p(dirs):
    home, ws = dirs
    proc = run_agent_here(["--raw-output"], home=home, cwd=ws)
    assert proc.returncode == 2 and "--raw-output only works with -p" in proc.stderr


def test_a_command_with_a_bidi_override_is_shown_visibly_on_stderr(dirs, fake_provider):
    home, ws = dirs
    command = "cat 'notes\u202etxt.sh'"
    fake_provider.script(Reply.tool_call("bash", {"command": command}, id="b1"),
                         Reply.text("ok"))
    proc = run(fake_provider, home, ws)
    assert proc.returncode == 0, proc.stderr
    assert "\u202e" not in proc.stderr
    assert "[tool] bash" in proc.stderr and "notes⟨U+202E⟩txt.sh" in proc.stderr
