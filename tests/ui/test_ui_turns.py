"""Approvals, the prompt queue, esc and ctrl-c, with keys typed into the real root widget."""

from __future__ import annotations

import os
import threading

from fakeprovider import Reply
from ui_harness import idle, make_app, press, screen, type_text, wait_for

TWENTY = "".join(f"line {i}\n" for i in range(1, 21))


def tool_messages(request) -> list[dict]:
    return [m for m in request.body["messages"] if m["role"] == "tool"]


def edit_app(tmp_path, fake, text=TWENTY):
    app = make_app(tmp_path, fake.openai_url, builtins=["files"])
    (app.workspace / "a.txt").write_text(text)
    app.approval_guard = 0.0
    app.start()
    return app


async def test_approval_shows_numbered_diff_and_y_applies(tmp_path, fake_provider):
    edit = {"path": "a.txt", "oldString": "line 2\nline 3\n", "newString": "line 2\nLINE 3\n"}
    fake_provider.script(Reply.tool_call("edit_file", edit, id="e1"), Reply.text("Edited."))
    app = edit_app(tmp_path, fake_provider)
    await type_text(app, "edit it", enter=True)
    rows = await wait_for(app, "Edit a.txt (+")
    lines = rows.splitlines()
    assert any(line.startswith("│a.txt  +1 -1") for line in lines)
    assert any(line.startswith("│ 2   line 2") for line in lines)  # real file line numbers
    assert any(line.startswith("│ 3 - line 3") for line in lines)
    assert any(line.startswith("│ 3 + LINE 3") for line in lines)
    assert "y yes once  a always  n no (esc)" in rows
    await press(app, "y")
    await idle(app)
    assert (app.workspace / "a.txt").read_text() == TWENTY.replace("line 3\n", "LINE 3\n")
    assert "Replaced 1 occurrence" in tool_messages(fake_provider.requests[1])[0]["content"]
    assert "Edited." in screen(app)


async def test_esc_in_approval_denies_and_nothing_is_written(tmp_path, fake_provider):
    edit = {"path": "a.txt", "oldString": "line 1\n", "newString": "changed\n"}
    fake_provider.script(Reply.tool_call("edit_file", edit, id="e1"), Reply.text("OK."))
    app = edit_app(tmp_path, fake_provider)
    await type_text(app, "edit", enter=True)
    await wait_for(app, "Edit a.txt (+")
    await press(app, "esc")
    await idle(app)
    assert (app.workspace / "a.txt").read_text() == TWENTY
    assert "denied" in tool_messages(fake_provider.requests[1])[0]["content"].lower()
    assert "x edit_file" in screen(app)


async def test_rejecting_one_hunk_applies_the_rest_and_tells_the_model(tmp_path, fake_provider):
    new = TWENTY.replace("line 2\n", "LINE 2\n").replace("line 18\n", "LINE 18\n")
    edit = {"path": "a.txt", "oldString": TWENTY, "newString": new}
    fake_provider.script(Reply.tool_call("edit_file", edit, id="e1"), Reply.text("OK."))
    app = edit_app(tmp_path, fake_provider)
    await type_text(app, "edit", enter=True)
    rows = await wait_for(app, "hunk 1/2 accepted")
    await press(app, "down", " ")
    rows = await wait_for(app, "hunk 2/2 rejected")
    assert "1 rejected: the rest is applied" in rows
    await press(app, "y")
    await idle(app)
    text = (app.workspace / "a.txt").read_text()
    assert "LINE 2\n" in text and "line 18\n" in text and "LINE 18" not in text
    told = tool_messages(fake_provider.requests[1])[0]["content"]
    assert "rejected 1 of 2 hunks" in told and "+LINE 18" in told
    # The transcript keeps the applied diff, folded, with the rejected hunk marked...
    rows = screen(app)
    assert "> diff  a.txt  +1 \u22121  (1 of 2 hunks rejected)  ctrl o to expand" in rows
    assert "+ LINE 2" not in rows
    await press(app, "ctrl o")  # ...and ctrl-o shows it in full
    rows = screen(app)
    assert "rejected, not applied: hunk 2 (a.txt" in rows
    assert "2 + LINE 2" in rows and "18 + LINE 18" in rows
    await press(app, "ctrl o")
    assert "2 + LINE 2" not in screen(app)


class SteppedClock:
    """A monotonic clock that moves only when the test moves it."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


async def test_keys_typed_ahead_never_answer_the_dialog(tmp_path, fake_provider):
    edit = {"path": "a.txt", "oldString": "line 1\n", "newString": "changed\n"}
    fake_provider.script(Reply.tool_call("edit_file", edit, id="e1"), Reply.text("OK."),
                         Reply.text("the queued prompt ran"))
    app = edit_app(tmp_path, fake_provider)
    app.approval_guard = 0.4
    clock = SteppedClock()  # the guard's intervals pass by stepping it, not by sleeping
    app.clock = clock
    await type_text(app, "edit", enter=True)
    await wait_for(app, "Edit a.txt (+1 \u22121)?")
    await type_text(app, "yes\n")  # lands in the prompt and, with enter, in the queue
    assert app.modal is not None and app.queue == [("yes", False)]
    # Still typing: every key starts the quiet interval again, so keys keep going to the
    # prompt long after the dialog appeared.
    for _ in range(6):
        clock.now += 0.15
        await press(app, "y")
    assert app.modal is not None and app.editor.text == "yyyyyy"
    assert "typing goes to the prompt: ctrl t to answer this dialog" in screen(app)
    assert (app.workspace / "a.txt").read_text() == TWENTY
    clock.now += 3.0  # a pause, however long, does not hand the dialog keys typed after it
    await press(app, "y")
    assert app.modal is not None and app.editor.text == "yyyyyyy"
    await press(app, "ctrl t", "n")  # the deliberate switch, then the answer
    await wait_for(app, "the queued prompt ran")
    await idle(app)
    assert (app.workspace / "a.txt").read_text() == TWENTY
    assert app.editor.text == "yyyyyyy"  # what was typed is still there


async def test_with_an_empty_prompt_the_dialog_answers_after_a_quiet_interval(
        tmp_path, fake_provider):
    edit = {"path": "a.txt", "oldString": "line 1\n", "newString": "changed\n"}
    fake_provider.script(Reply.tool_call("edit_file", edit, id="e1"), Reply.text("OK."))
    app = edit_app(tmp_path, fake_provider)
    app.approval_guard = 0.4
    clock = SteppedClock()
    app.clock = clock
    await type_text(app, "edit", enter=True)
    await wait_for(app, "Edit a.txt (+1 \u22121)?")
    await press(app, "ctrl u")  # an editing key typed at once goes to the (empty) prompt
    assert "typing goes to the prompt: pause to answer" in screen(app)
    clock.now += 0.45
    await press(app, "y")
    await wait_for(app, "OK.")
    assert (app.workspace / "a.txt").read_text() == TWENTY.replace("line 1\n", "changed\n")


async def test_prompt_typed_mid_turn_is_queued_and_runs_after(tmp_path, fake_provider):
    queued = threading.Event()
    fake_provider.script(Reply.held(queued, reply=Reply.text("first answer")),
                         Reply.text("second answer"))
    app = make_app(tmp_path, fake_provider.openai_url)
    app.start()
    await type_text(app, "one", enter=True)
    await wait_for(app, lambda: app.busy)
    await type_text(app, "two", enter=True)
    rows = await wait_for(app, "queued: 1")
    assert "1. two" in rows
    queued.set()
    await wait_for(app, "second answer")
    await idle(app)
    first, second = fake_provider.requests
    assert first.body["messages"][-1]["content"] == "one"
    assert second.body["messages"][-1]["content"] == "two"
    assert [m["content"] for m in second.body["messages"] if m["role"] == "assistant"] == [
        "first answer"]


async def test_slash_command_typed_mid_turn_is_queued_too(tmp_path, fake_provider):
    queued = threading.Event()
    fake_provider.script(Reply.held(queued, reply=Reply.text("slow")))
    app = make_app(tmp_path, fake_provider.openai_url)
    app.start()
    await type_text(app, "go", enter=True)
    await wait_for(app, lambda: app.busy)
    await type_text(app, "/help", enter=True)
    await wait_for(app, "queued: 1")
    assert app.info_panel is None
    queued.set()
    await idle(app)
    await wait_for(app, lambda: app.info_panel is not None)
    assert "type / for the menu" in screen(app)


async def test_esc_aborts_the_turn_and_clears_the_queue(tmp_path, fake_provider):
    fake_provider.script(Reply.stall(10.0, after=2, reply=Reply.text("partial text here",
                                                                      pieces=4)),
                         Reply.text("three ran"))
    app = make_app(tmp_path, fake_provider.openai_url)
    app.start()
    await type_text(app, "one", enter=True)
    await wait_for(app, "parti")
    await type_text(app, "two", enter=True)
    await wait_for(app, "queued: 1")
    await press(app, "esc")
    rows = await idle(app)
    # Interrupted, not ended by the stall: that would be a timeout error after 10 s.
    assert "interrupted" in rows and "queued" not in rows and "timed out" not in rows
    await type_text(app, "three", enter=True)
    await wait_for(app, "three ran")
    await idle(app)
    # "two" never ran: left in the queue, it would have gone before "three".
    assert [r.body["messages"][-1]["content"] for r in fake_provider.requests] == [
        "one", "three"]


def _sleeping(token: str) -> list[int]:
    """Live ``sleep TOKEN`` processes, seen from the host."""
    found = []
    for name in os.listdir("/proc"):
        try:
            with open(f"/proc/{name}/cmdline", "rb") as f:
                argv = f.read().split(b"\0")
            with open(f"/proc/{name}/stat") as f:
                state = f.read().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if len(argv) > 1 and argv[0].endswith(b"sleep") and argv[1] == token.encode() \
                and state != "Z":
            found.append(int(name))
    return found


async def test_ctrl_c_kills_the_running_command_and_the_turn_goes_on(tmp_path, fake_provider):
    token = f"30.{os.getpid() % 100000}1"  # found by its argument: $$ is the namespace's pid
    command = f"echo started > pid.txt; sleep {token}; echo done > after.txt"
    fake_provider.script(Reply.tool_call("bash", {"command": command}, id="b1"),
                         Reply.text("the command was interrupted"))
    app = make_app(tmp_path, fake_provider.openai_url, builtins=["bash"])
    app.approval_guard = 0.0
    app.start()
    await type_text(app, "run it", enter=True)
    await wait_for(app, f"Run `{command}`?")
    await press(app, "y")
    pid_file = app.workspace / "pid.txt"
    await wait_for(app, lambda: pid_file.exists() and pid_file.read_text().strip() != "")
    await press(app, "ctrl c")
    rows = await wait_for(app, "the command was interrupted")
    await idle(app)
    assert "interrupted: echo started > pid.txt" in rows
    assert not (app.workspace / "after.txt").exists()
    assert not _sleeping(token)
    told = tool_messages(fake_provider.requests[1])[0]["content"]
    assert "interrupted" in told.lower()
    assert not app.exit.is_set()  # ctrl-c with a command running never quits


async def test_ctrl_c_twice_with_nothing_running_quits(tmp_path, fake_provider):
    app = make_app(tmp_path, fake_provider.openai_url)
    app.start()
    await press(app, "ctrl c")
    assert not app.exit.is_set()  # the first one says how to quit
    await press(app, "ctrl c")
    assert app.exit.is_set()


async def test_exit_command_quits_even_mid_turn(tmp_path, fake_provider):
    answering = threading.Event()  # never set: the turn is still running at /exit
    fake_provider.script(Reply.held(answering, reply=Reply.text("slow")))
    app = make_app(tmp_path, fake_provider.openai_url)
    app.start()
    await type_text(app, "go", enter=True)
    await wait_for(app, lambda: app.busy)
    await type_text(app, "/exit", enter=True)
    assert app.exit.is_set() and not app.queue


async def test_provider_error_is_a_red_line_and_the_app_stays_usable(tmp_path, fake_provider):
    fake_provider.script(Reply.error(401, message="Incorrect API key provided"),
                         Reply.text("fine now"))
    app = make_app(tmp_path, fake_provider.openai_url)
    app.start()
    await type_text(app, "hello", enter=True)
    rows = await wait_for(app, "error:")
    await idle(app)
    assert "Incorrect API key provided" in rows
    await type_text(app, "again", enter=True)
    await wait_for(app, "fine now")


async def test_at_80x24_the_dialog_fits_with_panels_folded_and_every_hunk_reachable(
        tmp_path, fake_provider):
    forty = "".join(f"line {i}\n" for i in range(1, 41))
    edits = [{"oldString": f"line {n}\n", "newString": f"LINE {n}\n"} for n in (3, 20, 37)]
    todos = [{"content": f"task {i}", "status": "pending"} for i in range(8)]
    fake_provider.script(Reply.tool_call("todo_write", {"todos": todos}, id="t1"),
                         Reply.tool_call("multi_edit", {"path": "a.txt", "edits": edits},
                                         id="m1"),
                         Reply.text("Edited."))
    app = make_app(tmp_path, fake_provider.openai_url, builtins=["files", "todos"],
                   size=(80, 24))
    (app.workspace / "a.txt").write_text(forty)
    app.approval_guard = 0.0
    app.start()
    await type_text(app, "edit", enter=True)
    rows = await wait_for(app, "Edit a.txt: 3 edits (+3 \u22123)?")
    assert "asks because it changes a.txt (the default policy)" in rows
    lines = rows.splitlines()
    assert len(lines) == 24
    assert "task 7" not in rows and "folded while the dialog is open" in rows
    assert any("y yes once" in line for line in lines)  # the dialog's last line is on screen
    assert lines[-1].startswith("m  default/medium")  # and the status bar under it
    seen = set()
    for _ in range(3):
        rows = screen(app)
        seen |= {n for n in (3, 20, 37) if f"+ LINE {n}" in rows}
        await press(app, "down")
    assert seen == {3, 20, 37}  # every hunk can be brought into view
    await press(app, "y")
    await wait_for(app, "Edited.")
    assert "task 7" in screen(app)  # the panel is back once the dialog closed


async def test_always_shows_the_patterns_it_grants_and_saves_them_as_edited(
        tmp_path, fake_provider):
    fake_provider.script(Reply.tool_call("bash", {"command": "git init -q a"}, id="b1"),
                         Reply.tool_call("bash", {"command": "git init -q a"}, id="b2"),
                         Reply.tool_call("bash", {"command": "git init -q b"}, id="b3"),
                         Reply.text("done"))
    app = make_app(tmp_path, fake_provider.openai_url, builtins=["bash"])
    app.approval_guard = 0.0
    app.start()
    ws = app.workspace
    await type_text(app, "init", enter=True)
    rows = await wait_for(app, "a always (git init *)")
    await press(app, "a")  # not saved yet: the patterns are shown, editable
    rows = await wait_for(app, "always: git init *")
    assert "enter always allow these patterns" in rows
    assert not (ws / "a").exists()
    await press(app, "backspace")
    await type_text(app, "-q a")
    await wait_for(app, "always: git init -q a")
    await press(app, "enter")
    # The second call is covered by the edited grant; the third is not, and asks.
    rows = await wait_for(app, "git init -q b")
    assert "a always (git init *)" in rows
    assert (ws / "a" / ".git").is_dir() and not (ws / "b").exists()
    assert len(fake_provider.requests) == 3  # the second call ran without a dialog
    await press(app, "n")
    await wait_for(app, "done")
    assert not (ws / "b").exists()


async def test_a_guard_refusal_is_shown_whole_with_what_would_allow_it(tmp_path, fake_provider):
    fake_provider.script(Reply.tool_call("bash", {"command": "rm -rf build"}, id="b1"),
                         Reply.text("I will ask you instead."))
    app = make_app(tmp_path, fake_provider.openai_url, builtins=["bash", "guard"])
    (app.workspace / "build").mkdir()
    app.approval_guard = 0.0
    app.start()
    await type_text(app, "clean", enter=True)
    await wait_for(app, "I will ask you instead.")
    shown = " ".join(screen(app).split())
    # The tool line is cut to fit; the whole reason follows it, with the way out.
    assert "Ask the user to run it themselves if it is really needed." in shown
    assert "to allow it: no rule, \"always\" or --yolo lifts a guard's refusal" in shown
    assert "--disable guard" in shown
    assert (app.workspace / "build").is_dir()
