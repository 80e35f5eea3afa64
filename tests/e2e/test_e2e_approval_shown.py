"""The approval dialog in a real 80x24 terminal shows exactly what would run: every line
before a "yes", and characters a terminal would hide or reorder spelled out."""

from __future__ import annotations

import time

import pytest
from fakeprovider import Reply
from pty_term import Term

pytestmark = pytest.mark.e2e  # a real terminal (docs/testing.md)

IDLE = "ask agent... (/ commands, @ files)"
PAGE_DOWN = "\x1b[6~"


def _hidden_line(screen: str) -> str:
    return next((line for line in screen.splitlines() if "not shown yet" in line), "")


def _wait_until(ok, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not ok():
        assert time.monotonic() < deadline, "the screen did not change"
        time.sleep(0.02)


@pytest.fixture
def small_term(tmp_path, fake_provider):
    ws = tmp_path / "ws"
    ws.mkdir()
    home = tmp_path / "home"
    home.mkdir()
    (home / "config.toml").write_text("approval_guard = 0\n")
    terms: list[Term] = []

    def start() -> Term:
        term = Term(["--provider", "openai", "--base-url", fake_provider.openai_url,
                     "--model", "m"], cwd=ws, home=home, cols=80, rows=24,
                    env={"OPENAI_API_KEY": "x"})
        terms.append(term)
        return term

    yield start, ws
    for term in terms:
        term.close()


def test_a_diff_that_does_not_fit_takes_no_yes_until_every_line_was_shown(
        small_term, fake_provider):
    start, ws = small_term
    content = "".join(f"row {i:02d}\n" for i in range(1, 41))
    fake_provider.script(
        Reply.tool_call("write_file", {"path": "long.txt", "content": content}, id="w1"),
        Reply.text("Written after you read it."))
    term = start()
    term.wait_for(IDLE)
    term.type("write it")
    screen = term.wait_for("not shown yet")
    assert "Write long.txt" in screen
    hidden = [line for line in screen.splitlines() if "not shown yet" in line][0]
    count = int(hidden.split("│")[1].split()[0])
    assert count > 20 and "row 40" not in screen  # the tail is off screen, and counted
    term.send("y")
    screen = term.wait_for("not shown yet")  # refused: the lines were never shown
    assert "Write long.txt" in screen
    assert not (ws / "long.txt").exists()
    for _ in range(8):  # page down until every line was on screen
        before = _hidden_line(term.text())
        if not before:
            break
        term.send(PAGE_DOWN)
        _wait_until(lambda was=before: _hidden_line(term.text()) != was)
    screen = term.wait_for("all shown")
    assert "row 40" in screen and "not shown yet" not in screen
    term.send("y")
    term.wait_for("Written after you read it.")
    assert (ws / "long.txt").read_text() == content
    term.send("\x15")
    term.type("/exit")
    assert term.wait_exit(timeout=30) == 0


def test_a_command_with_a_bidi_override_is_shown_with_it_visible(small_term, fake_provider):
    start, ws = small_term
    command = "touch 'safe\u202e.txt' # looks harmless"
    fake_provider.script(Reply.tool_call("bash", {"command": command}, id="b1"),
                         Reply.text("Not run."))
    term = start()
    term.wait_for(IDLE)
    term.type("run it")
    screen = term.wait_for("hidden, control or reordering")
    assert "touch 'safe⟨U+202E⟩.txt' # looks harmless" in screen
    assert "\u202e" not in term.output()  # the raw override never reached the terminal
    term.send("n")
    term.wait_for("Not run.")
    assert list(ws.iterdir()) == []
    term.type("/exit")
    assert term.wait_exit(timeout=30) == 0
