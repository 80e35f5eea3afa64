"""The ASCII wrapping path lays text out exactly as urwid's standard layout does."""

from __future__ import annotations

import urwid
from hypothesis import given, settings
from hypothesis import strategies as st
from lanes import examples

from agent.ui.textlayout import FastLayout

STANDARD = urwid.StandardTextLayout()
FAST = FastLayout()

#: words, runs of spaces and line ends: what makes wrapping decisions differ
ascii_text = st.lists(st.one_of(st.text("abcXYZ.,`*", min_size=1, max_size=30),
                                st.sampled_from([" ", "  ", "   ", "\n", "\n\n", " \n"])),
                      max_size=40).map("".join)


@settings(max_examples=examples(400), deadline=None)
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


#: a zero-width character between a letter and a spacing mark (U+1C24): urwid's standard
#: layout measures the pieces (1 column), its canvas the whole line by grapheme (2 columns)
UNEVEN = ["0\x08\u1c24", "0\u200b\u1c24", "0\xad\u1c24", "0\ufeff\u1c24",
          "xxxxx0\x08\u1c24yyyyy", "ab 0\u200b\u1c24 cd", "a\n0\x08\u1c24\nb"]


def test_text_the_standard_layout_measures_unevenly_still_draws_at_every_width():
    import pytest

    with pytest.raises(urwid.CanvasError):  # what model text did to the screen before
        urwid.Text(UNEVEN[0], layout=STANDARD).render((1,))
    for text in UNEVEN:
        for width in range(1, 9):
            canvas = urwid.Text(text, layout=FAST).render((width,))
            assert canvas.cols() == width
        shown = b"".join(urwid.Text(text, layout=FAST).render((3,)).text).decode()
        assert all(ch in shown for ch in text if ch.isalnum() and ch.isascii()), (text, shown)
