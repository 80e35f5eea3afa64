"""A bracketed paste of any size arrives whole: typed into a real pseudo-terminal, it is
shown folded in the prompt, and the request the model receives holds every byte of it."""

from __future__ import annotations

import pytest
from fakeprovider import Reply
from pty_term import Term

pytestmark = pytest.mark.e2e  # a real terminal (docs/testing.md)

IDLE = "ask agent... (/ commands, @ files)"


def payload(size: int) -> str:
    """``size`` characters of lines (a terminal sends a pasted line break as CR)."""
    lines, total, i = [], 0, 0
    while total < size:
        line = f"line {i:06d} caf\u00e9 \u2192 {'x' * (i % 50)} end"
        lines.append(line)
        total += len(line) + 1
        i += 1
    return "\n".join(lines)[:size]


@pytest.mark.parametrize("size", [5_000, 100_000, 1_000_000])
def test_a_paste_of_any_size_reaches_the_model_whole(tmp_path, fake_provider, size):
    ws, home = tmp_path / "ws", tmp_path / "home"
    ws.mkdir()
    fake_provider.script(Reply.text("Got it."))
    term = Term(["--provider", "openai", "--base-url", fake_provider.openai_url, "--model",
                 "m"], cwd=ws, home=home, env={"OPENAI_API_KEY": "x"})
    try:
        term.wait_for(IDLE)
        term.send("look at this: ")
        term.wait_for("> look at this:")
        text = payload(size)
        term.send(b"\x1b[200~" + text.replace("\n", "\r").encode() + b"\x1b[201~")
        screen = term.wait_for(f"[pasted {len(text):,} chars]", timeout=60)
        assert "line 000001" not in screen  # folded, not laid out in the prompt
        term.send(" thanks")
        term.wait_for("chars] thanks")
        term.send("\r")
        term.wait_for("Got it.", timeout=60)
        sent = fake_provider.requests[0].body["messages"][-1]["content"]
        if isinstance(sent, list):
            sent = "".join(part.get("text", "") for part in sent)
        assert sent == f"look at this: {text} thanks"
    finally:
        term.close()
