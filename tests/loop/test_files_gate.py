"""The file tools' effects reach the gate: default approvals, secret reads, every patch path."""

from __future__ import annotations

import pytest
from files_support import boot_files

from agent.testing import gate_decision, make_boot


@pytest.fixture
def env(tmp_path):
    return boot_files(tmp_path)


async def _decide(env, name, args, **kw):
    return await gate_decision(env.config, env.hooks, env.tools[name], args, **kw)


async def _never_asked(request):
    raise AssertionError(f"asked about {request}")


@pytest.mark.parametrize("name, args", [
    ("read_file", {"path": "src/a.py"}),
    ("read_file", {"path": "config/.env.example"}),
    ("read_many_files", {"files": [{"path": "a"}, {"path": "b"}]}),
    ("glob", {"pattern": "**/*.py"}),
    ("grep", {"pattern": "TODO"}),
    ("list_dir", {}),
])
async def test_reads_are_allowed_without_asking(env, name, args):
    decision = await _decide(env, name, args, approver=_never_asked)
    assert decision.allowed


@pytest.mark.parametrize("name, args", [
    ("read_file", {"path": ".env"}),
    ("read_file", {"path": "deploy/key.pem"}),
    ("read_file", {"path": "app/.env.production"}),
    ("read_many_files", {"files": [{"path": "README.md"}, {"path": ".env"}]}),
    ("grep", {"pattern": "API_KEY", "include": "*.env"}),
    ("glob", {"pattern": "**/*.pem"}),
])
async def test_secret_reads_are_denied(env, name, args):
    decision = await _decide(env, name, args, approver=_never_asked, yolo=True)
    assert not decision.allowed and "secrets" in decision.message


@pytest.mark.parametrize("name, args", [
    ("write_file", {"path": "a.txt", "content": "x"}),
    ("edit_file", {"path": "a.txt", "oldString": "x", "newString": "y"}),
    ("multi_edit", {"path": "a.txt", "edits": [{"oldString": "x", "newString": "y"}]}),
    ("apply_patch", {"patch": "*** Add File: a.txt\n+x\n"}),
    ("apply_patch", {"patch": "not a patch"}),
    ("move_file", {"from": "a.txt", "to": "b.txt"}),
    ("delete_file", {"path": "a.txt"}),
])
async def test_changes_are_asked_about_and_denied_headless(tmp_path, name, args):
    env = boot_files(tmp_path)
    config, hooks = make_boot(env.workspace, env.home, builtins=["files"], headless=True)
    decision = await gate_decision(config, hooks, env.tools[name], args)
    assert not decision.allowed and decision.by == "headless"


async def test_a_rule_on_a_move_target_or_patch_path_applies(tmp_path):
    env = boot_files(tmp_path, permission={
        "apply_patch": {"*": "allow", "protected/*": "deny"},
        "move_file": {"*": "allow", "protected/*": "deny"}})
    for name, args in [
        ("apply_patch", {"patch": "*** Update File: src/a.py\n*** Move to: protected/a.py\n"
                                  "-x\n+y\n"}),
        ("apply_patch", {"patch": "*** Add File: ok.txt\n+x\n*** Delete File: protected/b\n"}),
        ("move_file", {"from": "protected/a.py", "to": "src/a.py"}),
        ("move_file", {"from": "src/a.py", "to": "protected/a.py"}),
    ]:
        decision = await _decide(env, name, args, approver=_never_asked)
        assert not decision.allowed and '"protected/*" = deny' in decision.message, args
    decision = await _decide(env, "apply_patch", {"patch": "*** Add File: ok.txt\n+x\n"},
                             approver=_never_asked)
    assert decision.allowed
