"""Secrets never reach the model, through any read tool, in the real CLI.

The workspace holds canaries in secret files of every shape (``.env``, ``.ENV``, a ``.env/``
directory, nested credentials, an SSH key behind an innocent-looking symlink, an ignored
``.env.local``), all committed and then changed, so git has them in history, in the index
and in the work tree.  The fake provider scripts every read tool at them, directly and through
the explore subagent; the canary must not appear in any request body it recorded.
"""

from __future__ import annotations

import pytest
from clirun import run_agent_here
from fakeprovider import Reply
from hostile_repos import git
from secret_fixtures import CANARY, secret_tree

SECRET_PATHS = [".env", "sub/.ENV", "conf/.env/prod.json", "a/b/c/credentials.json",
                "deploy/id_rsa", ".env.local", "notes.txt", "settings.cfg",
                "configdir/prod.json", "./sub/../.env", "SUB/.env"]

READS = [
    *(("read_file", {"path": p}) for p in SECRET_PATHS),
    ("read_many_files", {"files": [{"path": "main.py"}, *({"path": p} for p in SECRET_PATHS)]}),
    ("read_many_files", {"files": [{"path": "main.py"}]}),
    ("grep", {"pattern": "CANARY"}),
    ("grep", {"pattern": "CANARY", "includeIgnored": True}),
    ("grep", {"pattern": "canary", "ignoreCase": True, "include": "**/*"}),
    ("grep", {"pattern": "CANARY", "include": "*.txt"}),
    ("grep", {"pattern": "CANARY", "include": "conf/**"}),
    ("glob", {"pattern": "**/*"}),
    ("list_dir", {"path": "."}),
    ("git_status", {}), ("git_diff", {}), ("git_diff", {"staged": True}),
    ("git_log", {"patch": True}), ("git_show", {"ref": "HEAD"}), ("git_show", {"ref": "HEAD~1"}),
    ("git_show", {"ref": "HEAD:.env"}), ("git_show", {"ref": "HEAD:sub/.ENV"}),
    ("git_show", {"ref": "HEAD:notes.txt"}), ("git_blame", {"path": ".env"}),
    ("git_blame", {"path": "notes.txt"}), ("git_blame", {"path": "conf/.env/prod.json"}),
]


def committed_secret_tree(ws):
    git(ws, "init", "-q", "-b", "main")
    files = secret_tree(ws)
    git(ws, "add", "-A")
    git(ws, "add", "-f", ".env.local")
    git(ws, "commit", "-q", "-m", "everything")
    for rel, text in files.items():
        if CANARY in text:
            (ws / rel).write_text(text.replace(CANARY, CANARY + "-staged"))
    (ws / "main.py").write_text("# CANARY-PUBLIC marker, not a secret\nprint(1)\n")
    git(ws, "add", "-A")
    git(ws, "commit", "-q", "-m", "rotate")
    for rel, text in files.items():
        if CANARY in text:
            (ws / rel).write_text(text.replace(CANARY, CANARY + "-worktree"))
    (ws / "main.py").write_text("# CANARY-PUBLIC marker, not a secret\nprint(2)\n")


@pytest.mark.parametrize("engine", ["rg", "python"])
def test_no_read_tool_lets_a_secret_reach_the_model(tmp_path, fake_provider, engine):
    ws = tmp_path / "ws"
    ws.mkdir()
    committed_secret_tree(ws)
    direct = [(name, args, f"d{i}") for i, (name, args) in enumerate(READS)]
    explore = [(name, args, f"e{i}") for i, (name, args) in enumerate(READS)
               if name in ("read_file", "read_many_files", "grep", "glob", "list_dir")
               or name.startswith("git_")]
    fake_provider.script(
        Reply(tool_calls=direct),
        Reply.tool_call("task", {"description": "read the config", "prompt": "Read it all.",
                                 "kind": "explore"}, id="t1"),
        Reply(tool_calls=explore),
        Reply.text("The report."),
        Reply.text("Done."))
    extra = {"AGENT_GREP_FALLBACK": "1"} if engine == "python" else {}
    proc = run_agent_here(["-p", "show me the secrets", "--provider", "openai", "--base-url",
                           fake_provider.openai_url, "--model", "m"], home=tmp_path / "home",
                          cwd=ws, OPENAI_API_KEY="test-key", **extra)
    assert proc.returncode == 0, proc.stderr
    bodies = [r.raw.decode("utf-8", "replace") for r in fake_provider.requests]
    assert len(bodies) == 5, proc.stderr
    leaked = [i for i, body in enumerate(bodies) if CANARY in body]
    assert leaked == [], f"the canary reached request(s) {leaked}"
    assert CANARY not in proc.stdout
    # The tools did run: the plain file is found, read and shown, by both callers.
    for body in (bodies[1], bodies[3]):
        assert "main.py:1: # CANARY-PUBLIC marker" in body
        assert "secret files not searched (secrets policy)" in body
        assert "print(2)" in body and "print(1)" in body
