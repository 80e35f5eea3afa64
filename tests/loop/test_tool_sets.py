"""Tool sets: a withheld tool is absent from the request and from the system prompt."""

from __future__ import annotations

import pytest
from fakeprovider import Reply

from agent.testing import collect, make_boot, make_session

BUILTINS = ["openai", "files", "bash", "git", "web_fetch", "time", "todos", "core"]
CORE = {"read_file", "write_file", "edit_file", "glob", "grep", "bash"}
EDIT_PLUS = {"read_many_files", "multi_edit", "apply_patch", "move_file", "delete_file",
             "list_dir"}
GIT = {"git_status", "git_diff", "git_log", "git_show", "git_blame", "git_branch",
       "git_commit_message"}
NO_SET = {"current_time", "todo_write"}  # plugin and session tools are never withheld


async def offered(tmp_path, fake_provider, tool_sets):
    ws = tmp_path / "ws"
    ws.mkdir()
    data = {} if tool_sets is None else {"tool_sets": tool_sets}
    config, hooks = make_boot(ws, tmp_path / "h", builtins=BUILTINS, file_data=data)
    fake_provider.script(Reply.text("ok"))
    await collect(make_session(config, hooks, base_url=fake_provider.openai_url), "hi")
    body = fake_provider.requests[0].body
    return {t["function"]["name"] for t in body["tools"]}, body["messages"][0]["content"]


@pytest.mark.parametrize("tool_sets,expected", [
    (None, CORE | EDIT_PLUS | GIT | NO_SET),          # default: edit-plus + git, no net
    ([], CORE | NO_SET),                               # exactly the six core tools
    (["git"], CORE | GIT | NO_SET),
    (["net", "no-such-set"], CORE | {"web_fetch"} | NO_SET),  # unknown names ignored
])
async def test_tool_sets_shape_the_request(tmp_path, fake_provider, tool_sets, expected):
    names, system = await offered(tmp_path, fake_provider, tool_sets)
    assert names == expected
    described = {n for n in CORE | EDIT_PLUS | GIT | {"web_fetch"} if f"- {n}:" in system}
    assert described and described <= expected
    for withheld in (CORE | EDIT_PLUS | GIT | {"web_fetch"}) - expected:
        assert f"- {withheld}:" not in system  # the prompt never describes a withheld tool
