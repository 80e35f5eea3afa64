"""Palettes for every colour depth register with a real urwid screen."""

from __future__ import annotations

import pytest
import urwid

from agent.ui.palette import STYLES, color_depth, palette


@pytest.mark.parametrize("depth", [1, 16, 256, 2**24])
def test_palette_registers_at_every_depth(depth):
    screen = urwid.display.raw.Screen()
    screen.set_terminal_properties(colors=depth)
    screen.register_palette(palette(depth))
    assert {entry[0] for entry in palette(depth)} == set(STYLES)


def test_high_colour_entries_differ_from_16_colour_ones():
    sixteen = {e[0]: e for e in palette(16)}
    true = {e[0]: e for e in palette(2**24)}
    assert sixteen["diff-add"][4] == "light green"
    assert true["diff-add"][4].startswith("#")


@pytest.mark.parametrize(("env", "setting", "expected"), [
    ({"TERM": "xterm-256color"}, None, 256),
    ({"TERM": "xterm", "COLORTERM": "truecolor"}, None, 2**24),
    ({"TERM": "xterm"}, None, 16),
    ({"TERM": "xterm-256color", "NO_COLOR": "1"}, None, 1),
    ({"TERM": "xterm"}, "truecolor", 2**24),
    ({"TERM": "xterm-256color"}, "16", 16),
])
def test_colour_depth_detection(env, setting, expected):
    assert color_depth(env, setting) == expected
