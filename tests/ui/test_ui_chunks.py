"""Answers of any shape cut into chunks: the chunks stream the same as the whole, and drawn one
under the other they read like the whole answer drawn at once."""

from __future__ import annotations

import plugins_builtin.markdown as md
from agent.contract.blocks import Block
from agent.ui import pieces
from agent.ui.widgets.transcript import Transcript

LIST = "".join(f"- item {i} with `code_{i}` and **bold**\n" for i in range(120))
ORDERED = "".join(f"{i}. step {i}\n   more about step {i}\n" for i in range(1, 60))
CODE = "```python\n" + "".join(f"def f{i}(x):\n    return x + {i}\n" for i in range(200)) + "```"
TABLE = "| name | value |\n|---|---|\n" + "".join(f"| row {i} | {i * 7} |\n" for i in range(90))
PARA = " ".join(f"Sentence {i} has **bold**, `code` and [a link](https://x.test/{i})."
                for i in range(400))
MIXED = f"Intro line.\n\n{LIST}\nBetween.\n\n{CODE}\n\n{TABLE}\n{PARA}\n\nThe end."


def streamed(text: str, step: int) -> list[pieces.Chunk]:
    chunker = pieces.Chunker()
    out: list[pieces.Chunk] = []
    for end in range(step, len(text) + step, step):
        done, _tail = chunker.advance(text[:end])
        out += done
    return out + chunker.finish(text)


def transcript_rows(blocks: list[Block], cols: int = 60) -> list[str]:
    transcript = Transcript(lambda block, width: md.agent_render_block(block, width, None))
    for block in blocks:
        transcript.add(block)
    return transcript.plain_text().split("\n")


def test_every_shape_is_cut_into_bounded_chunks():
    for text, most in ((LIST, pieces.LIST_ITEMS), (CODE, pieces.CODE_LINES + 2),
                       (TABLE, pieces.TABLE_ROWS + 3)):
        chunks = pieces.chunks(text)
        assert len(chunks) > 3
        assert max(c.source.count("\n") + 1 for c in chunks) <= most
        assert all(c.join for c in chunks[1:]) and not chunks[0].join
    para = pieces.chunks(PARA)
    assert len(para) > 10 and max(len(c.text) for c in para) <= pieces.PARA_CHARS + 200
    # a paragraph is cut after a sentence, never inside code, bold or a link
    assert all(c.text.endswith(".") for c in para[:-1])
    assert all(pieces._balanced(c.text) for c in para)


def test_streaming_in_any_step_gives_the_chunks_of_the_whole_text():
    whole = pieces.chunks(MIXED)
    for step in (1, 7, 64, 1000):
        assert streamed(MIXED, step) == whole, step


def test_chunks_carry_what_makes_them_parse_alone():
    code = pieces.chunks(CODE)
    assert code[0].data() == {"fence_open": True}
    assert code[1].prefix == "```python\n" and code[1].data() == {
        "join": True, "fence_cont": True, "fence_open": True}
    assert code[-1].data() == {"join": True, "fence_cont": True}
    table = pieces.chunks(TABLE)
    assert table[1].prefix == "| name | value |\n|---|---|\n"
    assert table[1].data() == {"join": True, "table_cont": True, "table_open": True}
    assert table[0].data() == {"table_open": True}
    assert table[-1].data() == {"join": True, "table_cont": True}


def test_a_chunked_list_and_code_block_draw_exactly_like_the_whole():
    for text in (LIST, ORDERED, CODE, f"Intro:\n{LIST}"):
        whole = transcript_rows([Block("markdown", text)])
        cut = transcript_rows([Block("markdown", c.source, c.data())
                               for c in pieces.chunks(text)])
        assert cut == whole


def test_a_chunked_table_shows_its_header_once_and_every_row():
    rows = transcript_rows([Block("markdown", c.source, c.data())
                            for c in pieces.chunks(TABLE)])
    cells = [r.strip("│ ") for r in rows]
    assert sum(1 for c in cells if c.startswith("name")) == 1
    assert [c.split("│")[0].strip() for c in cells if c.startswith("row ")] == \
        [f"row {i}" for i in range(90)]
    # One box: a top border, one header rule and a bottom border, however many chunks.
    assert [r[0] for r in rows if r[:1] in ("┌", "├", "└")] == ["┌", "├", "└"]


def test_a_chunked_paragraph_keeps_every_word_in_order():
    rows = transcript_rows([Block("markdown", c.source, c.data())
                            for c in pieces.chunks(PARA)], cols=80)
    text = " ".join(r.strip() for r in rows if r.strip())
    expected = " ".join(f"Sentence {i} has bold, code and a link (https://x.test/{i})."
                        for i in range(400))
    assert text.split() == expected.split()


def drawn(text: str, cols: int) -> list[str]:
    """``text`` drawn by the markdown renderer at ``cols`` columns, row by row."""
    canvas = md.render(text).render((cols,))
    return [row.decode("utf-8").rstrip() for row in canvas.text]


def test_a_table_is_boxed_and_wrapped_to_the_width():
    text = ("| tool | what it does |\n|---|---|\n"
            "| read_file | reads a file with line numbers, 2,000 lines at a time |\n"
            "| bash | runs a command in the sandbox |\n")
    wide = drawn(text, 100)
    assert wide == [
        "┌───────────┬───────────────────────────────────────────────────────┐",
        "│ tool      │ what it does                                          │",
        "├───────────┼───────────────────────────────────────────────────────┤",
        "│ read_file │ reads a file with line numbers, 2,000 lines at a time │",
        "│ bash      │ runs a command in the sandbox                         │",
        "└───────────┴───────────────────────────────────────────────────────┘"]
    narrow = drawn(text, 40)
    assert max(len(r) for r in narrow) == 40
    assert narrow[0].startswith("┌───────────┬") and narrow[-1].startswith("└")
    # Every word of the long cell is there, in order, wrapped over several rows.
    first = [r.split("│")[1].strip() if "│" in r else "" for r in narrow]
    body = narrow[first.index("read_file"):first.index("bash")]
    assert " ".join(r.split("│")[2].strip() for r in body) == \
        "reads a file with line numbers, 2,000 lines at a time"
    assert len(body) > 1
    # Too narrow for the words: they are cut, never drawn past the width.
    assert all(len(r) <= 12 for r in drawn(text, 12))
