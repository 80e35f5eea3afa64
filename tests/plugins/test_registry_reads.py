"""Registry manifest rules apply to every effect a pattern can match: reads by grep (its
include glob), git_show (``REV:path``), read_many_files and the glob tool, and paths reached
through symlinks.  The oracle: the secret's bytes never appear in any request the fake
provider received."""

from __future__ import annotations

import json
import subprocess

import pytest
from fakeprovider import Reply

from agent.testing import collect, make_boot, make_session
from plugins_builtin.registry import lock

SECRET = "hunter2-canary"

NO_SECRET_READS = {
    "name": "no-secret-reads",
    "description": "Keep the agent from reading secrets/",
    "deny": [{"tools": ["read_file"], "pathPattern": "secrets/*",
              "reason": "secrets/ is off limits"}],
}


def install_manifest(home, manifest: dict) -> None:
    directory = home / "registry" / "plugins"
    directory.mkdir(parents=True, exist_ok=True)
    text = json.dumps(manifest)
    (directory / f"{manifest['name']}.json").write_text(text)
    lock.record(home / "registry", "plugin", manifest["name"], text, source="test",
                index_sha256="")


def git(ws, *argv):
    subprocess.run(["git", *argv], cwd=ws, check=True, capture_output=True,
                   env={"GIT_AUTHOR_NAME": "a", "GIT_AUTHOR_EMAIL": "a@x",
                        "GIT_COMMITTER_NAME": "a", "GIT_COMMITTER_EMAIL": "a@x",
                        "PATH": "/usr/bin:/bin", "HOME": str(ws)})


@pytest.fixture
def world(tmp_path):
    ws, home = tmp_path / "ws", tmp_path / "home"
    ws.mkdir()
    home.mkdir()
    (ws / "secrets").mkdir()
    (ws / "secrets" / "token.txt").write_text(f"token = {SECRET}\n")
    (ws / "src").mkdir()
    (ws / "src" / "app.py").write_text("print('token = public')\n")
    (ws / "link").symlink_to(ws / "secrets")
    git(ws, "init", "-q", "-b", "main")
    git(ws, "add", "secrets", "src")
    git(ws, "commit", "-q", "-m", "first")
    install_manifest(home, NO_SECRET_READS)
    return ws, home


CALLS = [
    ("read_file", {"path": "link/token.txt"}),
    ("read_many_files", {"files": [{"path": "src/app.py"}, {"path": "secrets/token.txt"}]}),
    ("grep", {"pattern": "token"}),
    ("grep", {"pattern": "token", "include": "*.txt"}),
    ("grep", {"pattern": "token", "include": "link/**"}),
    ("glob", {"pattern": "secrets/**"}),
    ("git_show", {"ref": "HEAD:secrets/token.txt"}),
    ("git_show", {"ref": "HEAD:link/token.txt"}),
]


@pytest.mark.parametrize("yolo", [False, True])
async def test_every_read_a_rule_can_match_is_denied(world, fake_provider, yolo):
    ws, home = world
    config, hooks = make_boot(ws, home, builtins=["openai", "files", "git", "registry"],
                              flags={"yolo": yolo})
    fake_provider.script(Reply(tool_calls=[(n, a, f"c{i}") for i, (n, a) in enumerate(CALLS)]),
                         Reply.text("done"))
    events = await collect(make_session(config, hooks, base_url=fake_provider.openai_url),
                           "find the token")
    denied = {e.id: e for e in events if e.type == "tool-denied"}
    assert sorted(denied) == sorted(f"c{i}" for i in range(len(CALLS))), [
        (e.type, getattr(e, "id", ""), getattr(e, "output", "")[:80]) for e in events]
    assert all(e.by == "guard" and "secrets/ is off limits" in e.reason
               for e in denied.values())
    assert "narrow it to paths outside" in denied["c2"].reason
    assert SECRET not in json.dumps([r.body for r in fake_provider.requests])


async def test_reads_the_rule_cannot_match_still_run(world, fake_provider):
    ws, home = world
    config, hooks = make_boot(ws, home, builtins=["openai", "files", "git", "registry"])
    calls = [("grep", {"pattern": "token", "include": "src/**"}),
             ("read_many_files", {"files": [{"path": "src/app.py"}]}),
             ("git_show", {"ref": "HEAD:src/app.py"}),
             ("glob", {"pattern": "src/*.py"})]
    fake_provider.script(Reply(tool_calls=[(n, a, f"c{i}") for i, (n, a) in enumerate(calls)]),
                         Reply.text("done"))
    events = await collect(make_session(config, hooks, base_url=fake_provider.openai_url),
                           "look")
    results = {e.id: e.output for e in events if e.type == "tool-result"}
    assert sorted(results) == ["c0", "c1", "c2", "c3"], events
    assert "token = public" in results["c0"] and "token = public" in results["c2"]
    assert SECRET not in json.dumps([r.body for r in fake_provider.requests])


def test_glob_overlap_is_exact_enough_and_never_misses():
    from plugins_builtin.registry.globs import globs_overlap

    reach = [("secrets/*", "**"), ("secrets/*", "*.py"), ("*.env", "src/**"),
             ("secrets/*", "s?crets/**"), ("secrets/*", "{src,secrets}/**"),
             ("secrets/*", "[st]ecrets/*"), ("*/id_rsa", "**/id_*")]
    miss = [("secrets/*", "src/**/*.ts"), ("secrets/*", "src/*.py"), ("*.env", "src/**/*.py"),
            ("secrets/*", "[ab]/*")]
    assert all(globs_overlap(p, g) for p, g in reach)
    assert not any(globs_overlap(p, g) for p, g in miss)
