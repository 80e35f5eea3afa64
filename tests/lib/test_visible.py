"""What a person is shown is what runs: hidden characters spelled out, and escape
sequences removed from text printed for a terminal."""

from __future__ import annotations

import pytest

from agent.lib.visible import hidden_count, strip_controls, visible


@pytest.mark.parametrize("ch", [
    "\u202e", "\u202d", "\u2066", "\u2067", "\u2068", "\u2069", "\u200e", "\u200f",  # bidi
    "\u061c", "\u200b", "\u200c", "\u200d", "\u2060", "\ufeff",  # zero-width, BOM
    "\x1b", "\r", "\x00", "\x07", "\x7f", "\x85", "\x9b",  # C0, DEL, C1
    "\u2028", "\u2029", "\u00a0", "\u3000", "\u115f", "\u3164", "\ufe0f", "\U000e0041"])
def test_every_hidden_or_reordering_character_is_spelled_out(ch):
    text = f"rm x{ch}y"
    shown = visible(text)
    assert shown == f"rm x⟨U+{ord(ch):04X}⟩y"
    assert ch not in shown and hidden_count(text) == 1


def test_ordinary_text_is_left_as_it_is():
    text = "grep -n 'café' src/*.py\n\techo 日本語 ✓ — done"
    assert visible(text) == text and hidden_count(text) == 0


def test_escape_sequences_are_removed_whole():
    osc52 = "\x1b]52;c;ZWNobyBwd25lZA==\x07"
    title = "\x1b]0;owned\x1b\\"
    text = f"a{osc52}b\x1b[2J\x1b[H{title}c\x1b[31mred\x1b[0m\x9b1;2Hd\x1bPq#0\x1b\\e\r\nf"
    assert strip_controls(text) == "abcredde\nf"


def test_a_sequence_cut_between_two_chunks_leaves_nothing_a_terminal_would_act_on():
    chunks = ["before \x1b]52;c;ZWNobw", "== after\x07 end", " \x1b[", "2J done"]
    out = "".join(strip_controls(c) for c in chunks)
    assert "\x1b" not in out and "\x07" not in out
    assert out.startswith("before ") and out.endswith("done")


def test_text_without_controls_is_unchanged():
    text = "plain answer\n\twith a tab, ünïcödé and \u202e kept (not a control sequence)"
    assert strip_controls(text) == text
