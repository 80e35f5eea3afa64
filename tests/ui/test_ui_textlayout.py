"""The ASCII wrapping path lays text out exactly as urwid's standard layout does."""

from __future__ import annotations

import urwid
from hypothesis import given, settings
from hypothesis import strategies as st

from agent.ui.textlayout import FastLayout

STANDARD = urwid.StandardTextLayout()
FAST = FastLayout()

#: words, runs of spaces and line ends: what makes wrapping decisions differ
ascii_text = st.lists(st.one_of(st.text("abcXYZ.,`*", min_size=1, max_size=30),
                                st.sampled_from([" ", "  ", "   ", "\n", "\n\n", " \n"])),
                      max_size=40).map("".join)


@settings(max_examples=400, deadline=None)
@given(text=ascii_text, width=st.integers(1, 40), wrap=st.sampled_from(["space", "any"]),
       align=st.sampled_from(["left", "center", "right"]))
def test_ascii_layout_matches_the_standard_layout(text, width, wrap, align):
    assert FAST.layout(text, width, align, wrap) == STANDARD.layout(text, width, align, wrap)


def test_other_text_goes_to_the_standard_layout():
    for text in ("wide 漢字漢字 and more words", "tab\there", "e\u0301 combining", "bell\x07"):
        for width in (1, 3, 7):
            assert FAST.layout(text, width, "left", "space") == \
                STANDARD.layout(text, width, "left", "space")


def test_a_text_widget_shows_the_same_rows():
    text = "a long line of plain words that wraps " * 5 + "\n" + "x" * 90
    fast = urwid.Text(text, layout=FAST).render((33,)).text
    standard = urwid.Text(text, layout=STANDARD).render((33,)).text
    assert fast == standard and len(fast) > 5
