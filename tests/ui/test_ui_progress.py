"""The live panels the todos and subagents plugins publish, the live area that shows them, and
the status bar, rendered to rows (exact) and styles."""

from __future__ import annotations

from types import SimpleNamespace

import urwid

from agent import LiveState, Panel
from agent.ui.widgets.status import ActiveTool, LiveArea, StatusBar
from plugins_builtin.subagents import agent_live_panels as subagent_panels
from plugins_builtin.subagents import subagent_markup
from plugins_builtin.todos import agent_live_panels as todo_panels
from plugins_builtin.todos import todo_markup

TODOS = [{"content": "write the parser", "status": "done"},
         {"content": "wire it in", "status": "in_progress"},
         {"content": "deploy", "status": "blocked", "note": "no credentials"},
         {"content": "docs", "status": "pending"}]


def rows(widget, cols: int) -> list[str]:
    canvas = widget.render((cols,))
    out = [r.decode("utf-8") for r in canvas.text]
    for row in out:
        assert urwid.calc_width(row, 0, len(row)) == cols, repr(row)
    return [r.rstrip() for r in out]


def styles(widget, cols: int) -> dict[str, set]:
    """text run -> the attributes it is drawn with."""
    found: dict[str, set] = {}
    for row in widget.render((cols,)).content():
        for attr, _cs, text in row:
            key = text.decode("utf-8").strip()
            if key:
                found.setdefault(key, set()).add(attr)
    return found


def test_task_list_panel_has_a_40_char_bar_counts_and_coloured_items():
    w = urwid.Text(todo_markup(TODOS))
    assert rows(w, 80) == [
        "tasks  " + "#" * 10 + "." * 30 + "  1/4  1 blocked",
        "  [x] write the parser",
        "  [~] wire it in",
        "  [!] deploy (no credentials)",
        "  [ ] docs",
    ]
    s = styles(w, 80)
    assert s["#" * 10] == {"todo-bar"} and s["." * 30] == {"todo-rest"}
    assert s["[x] write the parser"] == {"todo-done"}  # struck through in the palette
    assert s["[~] wire it in"] == {"todo-active"}
    assert s["[!] deploy (no credentials)"] == {"todo-blocked"}
    assert s["1 blocked"] == {"todo-blocked"}


def test_task_list_panel_all_done_full_bar_and_no_blocked_count():
    done = [{"content": f"step {i}", "status": "done"} for i in range(3)]
    assert rows(urwid.Text(todo_markup(done)), 70)[0] == "tasks  " + "#" * 40 + "  3/3"


def test_empty_task_list_has_no_panel():
    assert todo_markup([]) is None
    assert todo_markup(None) is None
    live = LiveArea()
    live.panels["todos"] = todo_markup(TODOS)
    live.refresh()
    assert rows(live, 60)[0].startswith("tasks  #")
    live.panels.pop("todos")
    live.refresh()
    assert live.rows((60,)) == 0


def test_subagent_panel_states_kinds_steps_and_last_four_calls():
    calls = [{"id": f"c{i}", "tool": "grep", "summary": f"pattern {i}", "status": "ok"}
             for i in range(5)]
    calls[-1] = {"id": "c9", "tool": "read_file", "summary": "x" * 70, "status": "running"}
    records = [
        {"id": "t1", "kind": "explore", "description": "find the loader", "status": "running",
         "steps": 3, "calls": calls},
        {"id": "t2", "kind": "worker", "description": "fix the bug", "status": "failed",
         "steps": 1, "calls": [], "error": "RuntimeError: boom"},
        {"id": "t3", "kind": "review", "description": "check the diff", "status": "done",
         "steps": 1, "calls": [{"id": "c", "tool": "git_diff", "summary": "", "status": "ok"}]},
    ]
    w = urwid.Text(subagent_markup(records, "⠋"))
    assert rows(w, 80) == [
        "⠋ explore: find the loader  3 steps",
        "    grep(pattern 1)",  # pattern 0 is the fifth call back: not shown
        "    grep(pattern 2)",
        "    grep(pattern 3)",
        "    read_file(" + "x" * 55 + "...)",  # the summary is kept to 58 characters
        "x worker (writes): fix the bug  1 step",
        "    RuntimeError: boom",
        "* review: check the diff  1 step",
        "    git_diff()",
    ]
    s = styles(w, 80)
    assert s["explore"] == {"sub-explore"} and s["review"] == {"sub-review"}
    assert s["worker (writes)"] == {"sub-worker"}
    assert s["*"] == {"sub-done"} and s["x"] == {"sub-failed"}


def test_live_area_shows_subagents_instead_of_their_task_call():
    live = LiveArea()
    live.tools["t1"] = ActiveTool("t1", "task", ["explore: find the loader"],
                                  output="explore:   grep load_config\n")
    live.tools["b1"] = ActiveTool("b1", "bash", ["make"])
    session = SimpleNamespace(data={"subagents": [
        {"id": "t1", "kind": "explore", "description": "find the loader", "status": "running",
         "steps": 1, "calls": [], "started": 100.0}]})
    live.set_plugin_panels([subagent_panels(session, LiveState(True, 50.0, "*"))])
    out = rows(live, 60)
    assert out == [f"{out[0][0]} bash  make", f"{out[1][0]} explore: find the loader  1 step"]
    live.stop()
    live.refresh()
    assert live.rows((60,)) == 0


def test_status_bar_spend_with_cap_and_unpriced():
    bar = StatusBar()
    bar.update(model="gpt-5", agent="plan", thinking="high", tools=9, context_pct=12,
               cost=0.0045, cap=5.0)
    assert rows(bar, 80) == ["gpt-5  plan/high  9 tools  12% ctx  $0.0045 / $5.00"]
    bar.update(cost=0.0, priced=False, cap=None, context_pct=66)
    assert rows(bar, 80) == ["gpt-5  plan/high  9 tools  66% ctx  unpriced"]
    assert styles(bar, 80)["66% ctx"] == {"status-warn"}
    bar.update(context_pct=90, cap=0.5)
    assert rows(bar, 80) == ["gpt-5  plan/high  9 tools  90% ctx compacting soon  "
                             "unpriced / $0.50"]
    assert styles(bar, 80)["90% ctx compacting soon"] == {"status-bad"}


def test_the_task_list_panel_shows_during_a_turn_and_while_a_task_is_unfinished():
    done = SimpleNamespace(data={"todos": [{"content": "a", "status": "done"}]})
    assert todo_panels(done, LiveState(busy=False)) is None  # all done, between turns
    panel = todo_panels(done, LiveState(busy=True))
    assert isinstance(panel, Panel) and panel.key == "todos"
    open_ = SimpleNamespace(data={"todos": TODOS})
    assert todo_panels(open_, LiveState(busy=False)).markup == todo_markup(TODOS)
    assert todo_panels(SimpleNamespace(data={}), LiveState(busy=True)) is None


def test_the_subagent_panel_shows_only_this_turns_subagents_while_it_runs():
    records = [{"id": "old", "kind": "explore", "description": "earlier", "status": "done",
                "steps": 1, "calls": [], "started": 10.0},
               {"id": "new", "kind": "review", "description": "now", "status": "running",
                "steps": 2, "calls": [], "started": 60.0}]
    session = SimpleNamespace(data={"subagents": records})
    panel = subagent_panels(session, LiveState(True, 50.0, "+"))
    assert panel.calls == ("new",) and rows(urwid.Text(panel.markup), 40) == [
        "+ review: now  2 steps"]
    assert subagent_panels(session, LiveState(False, 50.0, "+")) is None
