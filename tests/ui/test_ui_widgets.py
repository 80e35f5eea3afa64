"""Widgets rendered to a canvas, compared row by row (wide characters included)."""

from __future__ import annotations

import urwid

import plugins_builtin.diff as diff_plugin
import plugins_builtin.markdown as md
from agent.contract.blocks import Block
from agent.ui.diffing import DiffSet, FileDiff
from agent.ui.widgets.blocks import plain
from agent.ui.widgets.editor import History, PromptEditor
from agent.ui.widgets.lists import Item, SelectList
from agent.ui.widgets.status import LiveArea, StatusBar
from agent.ui.widgets.transcript import Transcript


def rows(widget, cols: int, height: int | None = None, focus: bool = False) -> list[str]:
    size = (cols,) if height is None else (cols, height)
    canvas = widget.render(size, focus=focus)
    out = [r.decode("utf-8") for r in canvas.text]
    for row in out:  # no row is ever wider or narrower than the screen
        assert urwid.calc_width(row, 0, len(row)) == cols, repr(row)
    return [r.rstrip() for r in out]


def attrs_of(widget, cols: int, needle: str) -> set:
    """The attributes of the runs containing ``needle``."""
    found = set()
    for row in widget.render((cols,)).content():
        for attr, _cs, text in row:
            if needle.encode() in text:
                found.add(attr)
    return found


def test_user_line_wraps_wide_characters_without_splitting_them():
    w = plain(Block("user", "中文字中文字abc😀ef"))
    assert rows(w, 10) == ["> 中文字中", "文字abc😀", "ef"]


def test_tool_line_with_details_and_outcome():
    data = {"name": "edit_file", "details": ["a.txt", "- old line  (+2 lines)"],
            "status": "ok", "summary": "Replaced 1 occurrence(s) in a.txt"}
    w = plain(Block("tool", "edit_file", data))
    assert rows(w, 60) == ["* edit_file  a.txt", "    - old line  (+2 lines)",
                           "  -> Replaced 1 occurrence(s) in a.txt"]
    assert attrs_of(w, 60, "-> Replaced") == {"tool-result"}


def test_failed_tool_line_is_red():
    data = {"name": "bash", "details": ["make"], "status": "error", "summary": "exit 2"}
    w = plain(Block("tool", "bash", data))
    assert rows(w, 40) == ["x bash  make", "  x exit 2"]
    assert attrs_of(w, 40, "x bash") == {"tool-error"}


def test_error_block_is_red():
    w = plain(Block("error", "the stream broke"))
    assert rows(w, 30) == ["error: the stream broke"]
    assert attrs_of(w, 30, "error:") == {"error"}


def test_transcript_follows_the_bottom_of_a_tall_block_and_scrolling_stops_it():
    t = Transcript(lambda block, width: plain(block))
    t.spacing = False
    for i in range(3):
        t.add(Block("info", f"item {i}"))
    t.add(Block("info", "\n".join(f"big {i}" for i in range(20))))
    assert rows(t, 20, 4) == ["big 16", "big 17", "big 18", "big 19"]
    t.scroll("scroll-up")
    assert not t.follow
    assert rows(t, 20, 4)[-1] != "big 19"
    t.add(Block("info", "new"))
    assert "new" not in rows(t, 20, 4)  # scrolled back: new output does not yank the view
    t.scroll("scroll-bottom")
    assert rows(t, 20, 4)[-1] == "new"


def test_short_transcript_sits_at_the_top():
    t = Transcript(lambda block, width: plain(block))
    t.spacing = False
    t.add(Block("info", "a"))
    assert rows(t, 10, 3) == ["a", "", ""]


def test_editor_placeholder_then_wide_text_and_cursor():
    e = PromptEditor(placeholder="ask agent...", history=History())
    assert rows(e, 20, focus=True) == ["> ask agent..."]
    e.set("日本語のテキスト")
    canvas = e.render((10,), focus=True)
    assert [r.decode().rstrip() for r in canvas.text] == ["> 日本語の", "テキスト"]
    assert canvas.cursor == (8, 1)


def test_select_list_highlights_and_windows():
    items = [Item(f"/cmd{i}", i, f"hint {i}") for i in range(12)]
    s = SelectList(items, max_rows=3, index=0)
    assert rows(s, 30) == ["> /cmd0  hint 0", "  /cmd1  hint 1", "  /cmd2  hint 2",
                           "  ... 9 more below"]
    s.move(-1)  # wraps to the last
    assert rows(s, 30) == ["  ... 9 more above", "  /cmd9  hint 9", "  /cmd10  hint 10",
                           "> /cmd11  hint 11"]


def test_status_bar_colours_context_by_threshold():
    bar = StatusBar()
    bar.update(model="gpt-5", agent="default", thinking="high", tools=14, context_pct=70,
               cost=0.0042)
    assert rows(bar, 80) == ["gpt-5  default/high  14 tools  70% ctx  $0.0042"]
    assert attrs_of(bar, 80, "70% ctx") == {"status-warn"}
    bar.update(context_pct=93, cost=None, priced=False)
    assert rows(bar, 80) == ["gpt-5  default/high  14 tools  93% ctx compacting soon  unpriced"]
    assert attrs_of(bar, 80, "93% ctx") == {"status-bad"}


def test_live_area_reasoning_collapsed_and_expanded():
    live = LiveArea()
    live.reasoning = "First I read the file.\nThen I think.\n" * 3
    live.refresh()
    assert rows(live, 60) == ["thinking... ~27 tokens  ctrl-r to expand"]
    live.reasoning_open = True
    live.refresh()
    out = rows(live, 60)
    assert out[0] == "thinking (~27 tokens)  ctrl-r to collapse"
    assert out[1:] == ["  First I read the file.", "  Then I think."] * 3


def test_live_area_shows_the_last_lines_of_command_output():
    from agent.ui.widgets.status import ActiveTool

    live = LiveArea()
    live.tools["b1"] = ActiveTool("b1", "bash", ["make test"])
    live.add_output("b1", "".join(f"out {i}\n" for i in range(20)))
    live.refresh()
    out = rows(live, 40)
    assert out[0].endswith("bash  make test")
    assert out[1:] == [f"  | out {i}" for i in range(12, 20)]


def test_diff_renderer_numbers_collapses_and_strikes_rejected_hunks():
    old = "".join(f"l{i}\n" for i in range(1, 13))
    new = old.replace("l2\n", "L2\n").replace("l11\n", "L11\n")
    ds = DiffSet([FileDiff("f.py", old, new)])
    widget = diff_plugin.agent_render_block(Block("diff", data={"diff": ds, "rejected": {2},
                                                                 "selected": 2}), 40, None)
    assert rows(widget, 40) == [
        "f.py  +2 -2",
        "  1   l1", "  2 - l2", "  2 + L2", "  3   l3", "  4   l4",
        "    ... lines 5-8 unchanged",
        "▌ 9   l9", "▌10   l10", "▌11 - l11", "▌11 + L11", "▌12   l12",
    ]
    assert attrs_of(widget, 40, "- l11") == {"diff-rejected"}
    assert attrs_of(widget, 40, "+ L2") == {"diff-add"}


def test_markdown_list_items_hang_their_wrapped_lines():
    w = md.render("- 一二三四五六七八九十 word\n- b")
    assert rows(w, 12) == ["- 一二三四五", "  六七八九十", "  word", "- b"]


def test_markdown_unclosed_fence_is_a_growing_code_block():
    first = rows(md.render("Intro\n\n```sh\nls -la"), 30)
    assert first[:4] == ["Intro", "", "── sh " + "─" * 24, "ls -la"]
    second = rows(md.render("Intro\n\n```sh\nls -la\nmake test"), 30)
    assert second[3:5] == ["ls -la", "make test"]


def test_markdown_keeps_snake_case_and_code_spans_literal():
    w = md.render("call `do_it(*args)` on my_var_name and **bold**")
    assert rows(w, 60) == ["call do_it(*args) on my_var_name and bold"]
    assert attrs_of(w, 60, "do_it(*args)") == {"md-code"}
    assert attrs_of(w, 60, "bold") == {"md-bold"}


def test_markdown_with_breaks_keeps_panel_lines():
    w = md.render("`/help` list\n`/exit` quit\nplain line", breaks=True)
    assert rows(w, 30) == ["/help list", "/exit quit", "plain line"]
    assert rows(md.render("a\nb"), 10) == ["a b"]


def test_a_block_whose_widget_fails_to_draw_is_shown_plainly():
    class Broken(urwid.Text):
        def render(self, size, focus=False):
            raise RuntimeError("cannot draw")

    t = Transcript(lambda block, width: Broken("x") if block.kind == "user" else plain(block))
    t.spacing = False
    t.add(Block("user", "hello"))
    t.add(Block("info", "after"))
    assert rows(t, 20, 3) == ["> hello", "after", ""]
