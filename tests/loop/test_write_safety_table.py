"""Every write-capable tool against every refusal path: guard, secrets, protect, deny rules,
--yolo (which must not help) and headless mode.  A denied call must leave the disk exactly
as it was; each case runs through a real session and the fake provider."""

from __future__ import annotations

import pytest
from fakeprovider import Reply

from agent.contract import events as ev
from agent.testing import collect, make_boot, make_session

SEEDED = {
    ".env": "old\n", "package-lock.json": "old\n", "locked/f.txt": "old\n", "plain.txt": "old\n",
    "free.txt": "old\n", "locked/keep.txt": "old\n", ".git/HEAD": "ref: refs/heads/main\n",
}


def calls(target: str) -> dict[str, dict]:
    """Arguments for each write-capable tool that would change ``target``."""
    return {
        "write_file": {"path": target, "content": "new\n"},
        "edit_file": {"path": target, "oldString": "old", "newString": "new"},
        "multi_edit": {"path": target, "edits": [{"oldString": "old", "newString": "new"}]},
        "apply_patch": {"patch": f"*** Begin Patch\n*** Update File: {target}\n@@\n-old\n+new\n"
                                 "*** End Patch"},
        "move_file": {"from": target, "to": "moved-away.txt"},
        "delete_file": {"path": target},
        "bash": {"command": f"echo new > {target}"},
    }


FILE_TOOLS = ["write_file", "edit_file", "multi_edit", "apply_patch", "move_file", "delete_file"]

# (scenario, target, tools, permission, yolo, denied_by)
SCENARIOS = [
    ("secrets", ".env", FILE_TOOLS, {}, True, "guard"),
    ("protect", "package-lock.json", FILE_TOOLS, {}, True, "guard"),
    ("protect-git", ".git/HEAD", FILE_TOOLS, {}, True, "guard"),
    ("deny-rule+yolo", "locked/f.txt", FILE_TOOLS,
     {t: {"*": "allow", "locked/*": "deny"} for t in FILE_TOOLS}, True, "rule"),
    ("headless", "plain.txt", FILE_TOOLS + ["bash"], {}, False, "headless"),
    ("bash-deny-rule+yolo", "plain.txt", ["bash"], {"bash": "deny"}, True, "rule"),
]

CASES = [(name, target, tool, perm, yolo, by)
         for name, target, tools, perm, yolo, by in SCENARIOS for tool in tools]


def snapshot(root) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes()
            for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.mark.parametrize("scenario,target,tool,permission,yolo,denied_by", CASES,
                         ids=[f"{c[0]}-{c[2]}" for c in CASES])
async def test_denied_call_never_changes_the_disk(tmp_path, fake_provider, scenario, target,
                                                   tool, permission, yolo, denied_by):
    ws = tmp_path / "ws"
    for rel, text in SEEDED.items():
        (ws / rel).parent.mkdir(parents=True, exist_ok=True)
        (ws / rel).write_text(text)
    before = snapshot(ws)
    config, hooks = make_boot(ws, tmp_path / "home",
                              builtins=["openai", "files", "bash", "guard", "secrets", "protect"],
                              file_data={"permission": permission}, flags={"yolo": yolo})
    fake_provider.script(Reply.tool_call(tool, calls(target)[tool], id="c1"),
                         Reply.text("understood"))
    events = await collect(make_session(config, hooks, base_url=fake_provider.openai_url),
                           "change it")
    denied = [e for e in events if isinstance(e, ev.ToolDeniedEvent)]
    assert denied and denied[0].by == denied_by, [e.to_json() for e in events]
    assert snapshot(ws) == before
    told = [m for m in fake_provider.requests[1].body["messages"] if m["role"] == "tool"]
    assert told and told[0]["content"] == denied[0].reason


async def test_the_guard_refuses_irreversible_commands_even_with_yolo(tmp_path, fake_provider):
    ws = tmp_path / "ws"
    (ws / "build").mkdir(parents=True)
    (ws / "build" / "out.bin").write_text("keep")
    before = snapshot(ws)
    config, hooks = make_boot(ws, tmp_path / "home", builtins=["openai", "bash", "guard"],
                              flags={"yolo": True})
    fake_provider.script(Reply.tool_call("bash", {"command": "true && rm -rf build"}, id="c1"),
                         Reply.text("ok"))
    events = await collect(make_session(config, hooks, base_url=fake_provider.openai_url), "go")
    denied = [e for e in events if isinstance(e, ev.ToolDeniedEvent)]
    assert denied and denied[0].by == "guard" and "refusing" in denied[0].reason
    assert snapshot(ws) == before


async def test_control_the_same_call_runs_when_nothing_refuses_it(tmp_path, fake_provider):
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "plain.txt").write_text("old\n")
    config, hooks = make_boot(ws, tmp_path / "home",
                              builtins=["openai", "files", "guard", "secrets", "protect"],
                              flags={"yolo": True})
    fake_provider.script(Reply.tool_call("edit_file", calls("plain.txt")["edit_file"], id="c1"),
                         Reply.text("ok"))
    await collect(make_session(config, hooks, base_url=fake_provider.openai_url), "go")
    assert (ws / "plain.txt").read_text() == "new\n"
