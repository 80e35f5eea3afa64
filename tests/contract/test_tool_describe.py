"""Tools describe their own calls (Tool.describe): the transcript line and the approval
question; the UI's generic fallback covers tools that do not."""

from __future__ import annotations

from agent import Description, Tool
from agent.ui import toolfmt


async def _run(args, ctx):
    return "ok"


def test_builtin_tools_say_what_will_happen():
    import plugins_builtin.bash as bash
    import plugins_builtin.files as files
    import plugins_builtin.web_fetch as web_fetch

    tools = {t.name: t for t in files.TOOLS}
    edit = tools["edit_file"].description_of(
        {"path": "calc.py", "oldString": "    return 1\n", "newString": "    return 2\n"})
    assert edit.question == "Edit calc.py (+1 \u22121)?"
    assert edit.details == ("calc.py", "-     return 1")
    patch = "*** Begin Patch\n*** Update File: a.py\n@@\n-x = 1\n+x = 2\n+y = 3\n*** End Patch"
    assert tools["apply_patch"].description_of({"patch": patch}).question == \
        "Patch a.py (+2 \u22121)?"
    assert tools["write_file"].description_of({"path": "n.txt", "content": "a\nb\n"}) \
        .question == "Write n.txt (2 lines)?"
    assert tools["delete_file"].description_of({"path": "old.py"}).question.startswith(
        "Delete old.py")
    assert bash.BASH.description_of({"command": "pytest -q"}).question == "Run `pytest -q`?"
    assert bash.BASH.description_of({"command": "a\nb"}).question == \
        "Run `a` and 1 more lines?"
    fetch = web_fetch.WebFetch().tool().description_of({"url": "https://example.com/x"})
    assert fetch.question == "Fetch https://example.com/x?"
    # garbage arguments never break a description
    assert tools["multi_edit"].description_of({"path": 3, "edits": "no"}).question


def test_tools_without_a_description_get_the_generic_line_and_question():
    plain = Tool(name="mine", description="d", run=_run)
    assert toolfmt.question("mine", {"target": "x"}, plain) == "allow mine?"
    assert toolfmt.details("mine", {"target": "x", "n": 2}, plain) == ["x"]

    def broken(args):
        raise RuntimeError("boom")

    failing = Tool(name="mine", description="d", run=_run, describe=broken)
    assert toolfmt.question("mine", {}, failing) == "allow mine?"
    own = Tool(name="mine", description="d", run=_run,
               describe=lambda args: Description(("one", "two"), "Do the thing?"))
    assert toolfmt.question("mine", {}, own) == "Do the thing?"
    assert toolfmt.details("mine", {}, own) == ["one", "two"]
