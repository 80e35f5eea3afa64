"""Hostile repositories against every git tool: no program the repository names ever runs.

For each mechanism (``tests/hostile_repos.py``): plain git on a fresh copy does run the
program (the fixture is armed), and then the real ``agent`` CLI (``agent.boot.cli.main``, in
this process: the sandbox and the hardening apply to the git processes it starts, not to
its own) in headless default mode calls every git tool, directly and through the explore
subagent, with the fake provider scripting the calls; the marker the program would create
never appears.  A repository that leads outside the workspace is refused with a message,
and nothing from outside reaches the model.
"""

from __future__ import annotations

import asyncio
import json
import os

import pytest
from clirun import run_agent_here
from fakeprovider import Reply
from hostile_repos import FACTORIES, Built, run_control

from agent.contain import safegit
from agent.testing import collect, make_boot, make_session

NAMES = sorted(FACTORIES)


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """The hostile repositories, each built once for this module (four tests use each) and
    handed to every test as built (what the last test changed is put back first)."""
    return Built(tmp_path_factory.mktemp("hostile"))

DIRECT = [
    ("git_status", {}), ("git_diff", {}), ("git_diff", {"staged": True}),
    ("git_diff", {"path": "a.txt"}), ("git_log", {}), ("git_log", {"patch": True}),
    ("git_log", {"path": "a.txt", "patch": True}), ("git_show", {"ref": "HEAD"}),
    ("git_show", {"ref": "HEAD:a.txt"}), ("git_show", {"ref": "HEAD:b.txt"}),
    ("git_show", {"ref": "HEAD~1"}), ("git_blame", {"path": "a.txt"}),
    ("git_blame", {"path": "b.txt"}), ("git_branch", {"remote": True}),
]
EXPLORE_PROMPT = "Look at the repository with the git tools and report."


def calls(items, prefix):
    return [(name, args, f"{prefix}{i}") for i, (name, args) in enumerate(items)]


def script_for(fake):
    """Parent: every git tool; then a task for the explore subagent, which calls every git
    read tool; then git_commit_message (its nested model call, if it gets that far, takes
    the next text reply; the parent's last answer takes whatever is left)."""
    fake.script(
        Reply(tool_calls=calls(DIRECT, "d")),
        Reply.tool_call("task", {"description": "look around", "prompt": EXPLORE_PROMPT,
                                 "kind": "explore"}, id="t1"),
        Reply(tool_calls=calls(DIRECT, "e")),             # the subagent's first step
        Reply.text("The explore report."),                # the subagent's answer
        Reply.tool_call("git_commit_message", {}, id="m1"),
        Reply.text("Add a third line"),                   # nested request, or the final
        Reply.text("All done."),
    )


@pytest.mark.parametrize("name", NAMES)
def test_the_fixture_is_armed(built, name):
    hostile = built.get(name)
    assert hostile.fired() == []
    assert run_control(hostile), f"plain git did not trigger {name}: the fixture is not armed"


def _tool_results(requests):
    """tool_call_id -> content, from every chat request the fake provider received."""
    out = {}
    for request in requests:
        for message in (request.body or {}).get("messages", []):
            if message.get("role") == "tool":
                out[message["tool_call_id"]] = message.get("content") or ""
    return out


def check_run(hostile, requests, log=""):
    """The oracles of one run: no marker, every call answered, nothing from outside sent,
    a refusal where the repository leads out, real answers where it does not."""
    assert hostile.fired() == [], log
    bodies = [r.raw.decode("utf-8", "replace") for r in requests]
    results = _tool_results(requests)
    # Every direct call and every explore call ran and answered.
    assert {f"d{i}" for i in range(len(DIRECT))} <= set(results), log
    assert {f"e{i}" for i in range(len(DIRECT))} <= set(results), log
    assert "m1" in results
    for canary in hostile.outside:
        assert not any(canary in body for body in bodies), canary
    if hostile.refused:
        for call_id, text in results.items():
            if call_id != "t1":
                assert "Refusing to run git here" in text, (call_id, text)
    else:
        assert results["d0"].startswith("On main"), results["d0"]
        assert "first" in results["d4"], results["d4"]


@pytest.mark.parametrize("name", NAMES)
def test_every_git_tool_headless_and_through_explore(tmp_path, built, fake_provider, name):
    """The real CLI, headless, default mode (git under the read-only sandbox)."""
    hostile = built.get(name)
    script_for(fake_provider)
    proc = run_agent_here(["-p", "inspect the repository", "--provider", "openai",
                           "--base-url", fake_provider.openai_url, "--model", "m"],
                          home=tmp_path / "home", cwd=hostile.ws, OPENAI_API_KEY="test-key")
    check_run(hostile, fake_provider.requests, proc.stdout + proc.stderr)
    assert proc.returncode == 0, proc.stderr


@pytest.mark.parametrize("name", NAMES)
async def test_every_git_tool_with_the_sandbox_off(tmp_path, built, fake_provider, name):
    """The same calls with ``sandbox = off``: a sandboxed git could not even write the
    marker, so here the hardening alone must hold.  In process (the real openai SDK against
    the fake provider, a headless session) to keep the suite quick; the CLI path is the one
    above."""
    hostile = built.get(name)
    script_for(fake_provider)
    config, hooks = make_boot(hostile.ws, tmp_path / "home", flags={"sandbox": "off"},
                              headless=True)
    session = make_session(config, hooks, base_url=fake_provider.openai_url)
    events = await collect(session, "inspect the repository")
    # what the turn said when it ended, so a run that never reached the provider says why
    said = "\n".join(repr(event) for event in events[-3:])
    check_run(hostile, fake_provider.requests, said)


# ---- the mechanism below the tools ----------------------------------------------------------

@pytest.mark.parametrize("name", NAMES)
async def test_safegit_refuses_or_neutralises_without_the_sandbox(tmp_path, built, name):
    hostile = built.get(name)
    config, _ = make_boot(hostile.ws, tmp_path / "home", builtins=["git"],
                          flags={"sandbox": "off"})
    commands = [["status", "--porcelain"], ["diff", "--no-textconv", "--no-ext-diff"],
                ["log", "-p", "-3", "--no-textconv", "--no-ext-diff"], ["show", "HEAD:b.txt"],
                ["blame", "--no-textconv", "a.txt"], ["-p", "log", "-1"]]
    # All at once, as the tools of one model step run (they share the config listing).
    outcomes = await asyncio.gather(
        *(safegit.run(hostile.ws, argv, config=config) for argv in commands),
        return_exceptions=True)
    for argv, outcome in zip(commands, outcomes, strict=True):
        if isinstance(outcome, safegit.GitRefused):
            assert hostile.refused, f"{name}: refused without cause: {outcome}"
            assert "outside the workspace" in str(outcome)
            continue
        if isinstance(outcome, BaseException) and not isinstance(outcome, safegit.GitFailed):
            raise outcome
        # it ran, or git failed (a missing promised object, a bad signature): either is fine
        assert not hostile.refused, f"{name}: {argv} ran although the repository leads out"
    assert hostile.fired() == []


def test_a_linked_worktree_and_a_submodule_checkout_are_accepted(tmp_path):
    from hostile_repos import base, git

    main = base(tmp_path)
    git(main, "commit", "-q", "-m", "second")
    git(main, "worktree", "add", "-q", str(tmp_path / "wt"), "-b", "side")
    repo = safegit.locate(tmp_path / "wt")
    assert repo.work_tree == tmp_path / "wt"
    src = tmp_path / "src"
    src.mkdir()
    git(src, "init", "-q")
    git(src, "commit", "-q", "--allow-empty", "-m", "s")
    git(main, "-c", "protocol.file.allow=always", "submodule", "add", "-q", str(src), "sub")
    repo = safegit.locate(main / "sub")  # its git dir is in main/.git/modules/sub
    assert repo.git_dir == main / ".git" / "modules" / "sub"


def test_a_trusted_outside_repository_is_used(tmp_path):
    hostile = FACTORIES["git_file"](tmp_path)
    with pytest.raises(safegit.GitRefused, match="git_trusted_dirs"):
        safegit.locate(hostile.ws)

    class Config:
        def get(self, key, default=None):
            return [str(tmp_path / "outside")] if key == "git_trusted_dirs" else default

    repo = safegit.locate(hostile.ws, Config())
    assert repo.git_dir == tmp_path / "outside" / "repo" / ".git"


async def test_a_trusted_include_is_read_and_its_programs_still_do_not_run(tmp_path):
    hostile = FACTORIES["include_path"](tmp_path)
    with pytest.raises(safegit.GitRefused, match="git_trusted_dirs"):
        await safegit.run(hostile.ws, ["status"])
    config, _ = make_boot(hostile.ws, tmp_path / "home", builtins=["git"],
                          file_data={"git_trusted_dirs": [str(tmp_path / "outside")]},
                          flags={"sandbox": "off"})
    out, _ = await safegit.run(hostile.ws, ["status", "--porcelain"], config=config)
    assert "a.txt" in out
    assert hostile.fired() == []


def test_config_listing_parses_values_with_newlines():
    raw = b"local\0file:.git/config\0filter.a b.clean\nrm -rf /\nx\0global\0file:/h\0x.y\0"
    entries = safegit.parse_config_list(raw)
    assert [(e.scope, e.key, e.value) for e in entries] == [
        ("local", "filter.a b.clean", "rm -rf /\nx"), ("global", "x.y", None)]
    assert safegit.neutralising(entries) == [("filter.a b.clean", "")]
    assert json.dumps(safegit.FIXED_OVERRIDES)  # plain data, documented in docs/security.md


def test_a_git_inside_the_workspace_is_never_the_one_that_runs(tmp_path):
    from hostile_repos import base

    ws = base(tmp_path)
    for where in (ws / "bin", ws):
        where.mkdir(exist_ok=True)
        (where / "git").write_text(f"#!/bin/sh\ntouch '{tmp_path / 'markers' / 'fakegit'}'\n")
        (where / "git").chmod(0o755)
    path = os.pathsep.join([".", "bin", str(ws / "bin"), str(ws), os.environ["PATH"]])
    found = safegit.git_binary(ws, path)
    assert not found.startswith(str(ws)) and os.path.isabs(found)
    with pytest.raises(safegit.GitMissing):
        safegit.git_binary(ws, os.pathsep.join([".", str(ws / "bin")]))


def test_a_repository_handed_out_again_is_the_build_whatever_the_last_test_did(tmp_path):
    """Built hands out an untouched tree as it is, and puts the build back over one that
    changed in any way: a marker, a rewritten index, a touched mtime, a file removed, a
    mode, new directories, a file turned into a directory or into a link."""
    from hostile_repos import Built, picture

    built = Built(tmp_path)
    first = built.get("fsmonitor")
    build = picture(first.root)
    assert built.get("fsmonitor").root == first.root and built.restored == 0
    changes = [
        lambda root: (root / "markers" / "fsmonitor").touch(),
        lambda root: run_control(first),                       # plain git rewrites the index
        lambda root: os.utime(root / "ws" / "a.txt", (1, 1)),
        lambda root: (root / "ws" / "b.txt").unlink(),
        lambda root: (root / "ws" / ".git" / "config").chmod(0o600),
        lambda root: (root / "ws" / "new" / "deeper").mkdir(parents=True),
        lambda root: ((root / "ws" / "a.txt").unlink(), (root / "ws" / "a.txt").mkdir()),
        lambda root: ((root / "bin" / "fsmonitor").unlink(),
                      (root / "bin" / "fsmonitor").symlink_to("/bin/true")),
    ]
    for count, change in enumerate(changes, 1):
        change(first.root)
        assert picture(first.root) != build
        again = built.get("fsmonitor")
        assert built.restored == count
        assert picture(again.root) == build and again.fired() == []
