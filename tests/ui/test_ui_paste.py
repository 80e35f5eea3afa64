"""Bracketed paste read whole across reads, and large pastes folded in the prompt."""

from __future__ import annotations

from agent.ui.paste import BEGIN, END, Folds, Pasted, PasteReader, fold_label


def feed(reader: PasteReader, data: bytes, cuts: list[int]):
    """``data`` handed over in reads cut at ``cuts``; what the reader makes of each."""
    out = []
    start = 0
    for cut in [*cuts, len(data)]:
        pieces = reader.split(list(data[start:cut]))
        out.extend(pieces if pieces is not None else [list(data[start:cut])])
        start = cut
    return out


def test_a_paste_spanning_many_reads_comes_out_whole():
    text = "".join(f"line {i} caf\u00e9\r" for i in range(2000))
    data = b"ab" + BEGIN + text.encode() + END + b"cd"
    # Reads of 4 KB, like a pseudo-terminal's, and a cut inside the end marker (a start
    # marker cut short is an incomplete escape, which urwid holds until the rest arrives).
    cuts = list(range(4096, len(data), 4096)) + [len(data) - 4]
    pieces = feed(PasteReader(), data, sorted(set(cuts)))
    pasted = [p for p in pieces if isinstance(p, Pasted)]
    assert pasted == [text]
    keys = b"".join(bytes(p) for p in pieces if not isinstance(p, Pasted) and p)
    assert keys == b"abcd"


def test_input_without_a_paste_is_left_to_urwid():
    assert PasteReader().split(list(b"hello\x1b[A")) is None


def test_a_split_utf8_character_survives_the_cut():
    text = "\u00e9\u2192" * 3000
    data = BEGIN + text.encode() + END
    pieces = feed(PasteReader(), data, [len(BEGIN) + 1, len(BEGIN) + 4097])
    assert [p for p in pieces if isinstance(p, Pasted)] == [text]


def test_folds_expand_in_place_whatever_the_order():
    folds = Folds()
    first, second = "a" * 5000, "b" * 5000
    one, two = folds.add(first), folds.add(second)
    assert one == fold_label(first) == "[pasted 5,000 chars]"
    assert two == "[pasted 5,000 chars #2]"
    assert folds.expand(f"x {two} y {one} z") == f"x {second} y {first} z"
    assert folds.expand(f"only {one}") == f"only {first}"  # an edited-away label drops its paste
