"""Rejected hunks for each edit tool, run through the real files plugin."""

from __future__ import annotations

import pytest

from agent.testing import make_boot, run_tool
from agent.ui import approvals

TEXT = "".join(f"line {i}\n" for i in range(1, 21))


@pytest.fixture
def files(tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.txt").write_text(TEXT)
    config, hooks = make_boot(ws, tmp_path / "home", builtins=["files"])
    return config, hooks.tools(config)


def hunk_of(ds, text: str) -> int:
    """The number of the hunk whose excerpt contains ``text``."""
    return next(h.number for h in ds.hunks if text in ds.excerpt(h))


async def apply(files, name, args, reject_text):
    config, tools = files
    ds = approvals.diffs_for(tools[name], args, config.workspace)
    part = approvals.partial(tools[name], args, ds, {hunk_of(ds, reject_text)},
                             config.workspace)
    assert part is not None
    if name == "write_file":  # it replaces only a file the model has read
        await run_tool(tools["read_file"], {"path": args["path"]}, config)
    result = await run_tool(tools[name], part.arguments, config)
    assert not result.is_error, result.output
    return config.workspace, part


async def test_multi_edit_drops_the_rejected_edit(files):
    args = {"path": "a.txt", "edits": [
        {"oldString": "line 3\n", "newString": "LINE 3\n"},
        {"oldString": "line 15\n", "newString": "LINE 15\n"}]}
    ws, part = await apply(files, "multi_edit", args, "LINE 15")
    text = (ws / "a.txt").read_text()
    assert "LINE 3\n" in text and "line 15\n" in text
    assert len(part.arguments["edits"]) == 1
    assert "a.txt (edit 2)" in part.note


async def test_write_file_keeps_the_rejected_region(files):
    new = TEXT.replace("line 2\n", "LINE 2\n").replace("line 19\n", "LINE 19\n")
    ws, part = await apply(files, "write_file", {"path": "a.txt", "content": new}, "LINE 2")
    text = (ws / "a.txt").read_text()
    assert "line 2\n" in text and "LINE 19\n" in text


async def test_apply_patch_without_the_rejected_file(files):
    patch = ("*** Begin Patch\n*** Update File: a.txt\n@@\n line 4\n-line 5\n+LINE 5\n"
             "*** Add File: b.txt\n+new file\n*** End Patch\n")
    ws, part = await apply(files, "apply_patch", {"patch": patch}, "new file")
    assert "LINE 5\n" in (ws / "a.txt").read_text()
    assert not (ws / "b.txt").exists()


async def test_apply_patch_without_one_hunk_of_an_update(files):
    patch = ("*** Begin Patch\n*** Update File: a.txt\n@@\n line 4\n-line 5\n+LINE 5\n"
             "@@\n line 16\n-line 17\n+LINE 17\n*** End Patch\n")
    ws, part = await apply(files, "apply_patch", {"patch": patch}, "LINE 17")
    text = (ws / "a.txt").read_text()
    assert "LINE 5\n" in text and "line 17\n" in text and "LINE 17" not in text
    assert "rejected 1 of 2 hunks" in part.note


def test_rejecting_everything_is_no_partial(files):
    config, tools = files
    args = {"path": "a.txt", "oldString": "line 1\n", "newString": "LINE 1\n"}
    ds = approvals.diffs_for(tools["edit_file"], args, config.workspace)
    assert approvals.partial(tools["edit_file"], args, ds, {1}, config.workspace) is None
