"""The git tools against real repositories."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest

from agent import Effects, ToolError
from agent.contract.messages import Message, TextPart
from agent.contract.providers import StepFinished, TextDelta, Usage
from agent.loop.session import Runtime, Session
from agent.testing import gate_decision, make_boot, run_tool, tool_context
from plugins_builtin.git import (
    DIFF_FOR_MESSAGE,
    NOTHING_STAGED_FOR_MESSAGE,
    git,
    message_prompt,
    unwrap_message,
)

GIT_TOOLS = ("git_status", "git_diff", "git_log", "git_show", "git_blame", "git_branch",
             "git_commit_message")


@pytest.fixture(autouse=True)
def isolated_git(tmp_path, monkeypatch):
    home = tmp_path / "userhome"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(home / "gitconfig"))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    for who in ("AUTHOR", "COMMITTER"):
        monkeypatch.setenv(f"GIT_{who}_NAME", "Ann Dev")
        monkeypatch.setenv(f"GIT_{who}_EMAIL", "ann@example.com")


class Repo:
    def __init__(self, root: Path, home: Path, **flags: str) -> None:
        self.root = root
        self.config, self.hooks = make_boot(root, home, builtins=["git"], flags=flags)
        self.tools = self.hooks.tools(self.config)
        self.clock = 1_700_000_000

    def git(self, *argv: str) -> str:
        return subprocess.run(["git", *argv], cwd=self.root, check=True, capture_output=True,
                              text=True).stdout

    def write(self, path: str, text: str) -> None:
        target = self.root / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)

    def commit(self, message: str, **files: str) -> None:
        for path, text in files.items():
            self.write(path, text)
        self.git("add", "-A")
        self.clock += 86_400
        stamp = f"{self.clock} +0000"
        env = {**os.environ, "GIT_AUTHOR_DATE": stamp, "GIT_COMMITTER_DATE": stamp}
        subprocess.run(["git", "commit", "-qm", message], cwd=self.root, check=True, env=env)

    def history(self, commits: list[tuple[str, dict[str, str]]]) -> None:
        """Many commits in one ``git fast-import`` (then the work tree checked out), dated
        a day apart as :meth:`commit` dates them: one process instead of two a commit."""
        name = os.environ["GIT_AUTHOR_NAME"]
        email = os.environ["GIT_AUTHOR_EMAIL"]
        stream = []
        for message, files in commits:
            self.clock += 86_400
            data = message.encode()
            stream.append(f"commit refs/heads/main\ncommitter {name} <{email}> "
                          f"{self.clock} +0000\ndata {len(data)}\n".encode() + data + b"\n")
            for path, text in files.items():
                blob = text.encode()
                stream.append(f"M 100644 inline {path}\ndata {len(blob)}\n".encode()
                              + blob + b"\n")
        if (self.root / ".git" / "refs" / "heads" / "main").exists():
            stream.insert(1, b"from refs/heads/main^0\n")
        subprocess.run(["git", "fast-import", "--quiet"], cwd=self.root, check=True,
                       input=b"".join(stream), capture_output=True)
        self.git("reset", "-q", "--hard")

    async def run(self, name: str, args: dict | None = None, session=None):
        return await run_tool(self.tools[name], args or {}, self.config, session=session)


@pytest.fixture
def repo(tmp_path):
    root = tmp_path / "repo"
    root.mkdir()
    subprocess.run(["git", "init", "-q", "-b", "main"], cwd=root, check=True)
    return Repo(root, tmp_path / "agenthome")


@pytest.fixture
def not_a_repo(tmp_path):
    root = tmp_path / "plain"
    root.mkdir()
    return Repo(root, tmp_path / "agenthome")


# ---- common behaviour -------------------------------------------------------------------------

async def test_outside_a_repository_every_tool_says_so(not_a_repo):
    args = {"git_show": {"ref": "HEAD"}, "git_blame": {"path": "a.txt"}}
    for name in GIT_TOOLS:
        result = await not_a_repo.run(name, args.get(name))
        assert result.is_error, name
        assert result.output == f"{not_a_repo.root} is not a git repository.", name


async def test_git_missing_from_path(repo, monkeypatch, tmp_path):
    empty = tmp_path / "emptybin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    result = await repo.run("git_status")
    assert result.is_error and result.output == "git is not installed or not on PATH."


async def test_a_slow_git_is_stopped_at_the_timeout(repo, monkeypatch, tmp_path):
    fake = tmp_path / "slowbin"
    fake.mkdir()
    finished = tmp_path / "finished"
    (fake / "git").write_text(f"#!/bin/sh\nsleep 20\ntouch '{finished}'\n")
    (fake / "git").chmod(0o755)
    monkeypatch.setenv("PATH", f"{fake}:{os.environ['PATH']}")
    with pytest.raises(ToolError, match=r"git status took longer than 0s and was stopped"):
        await git(tool_context(repo.config, "git_status"), "status", timeout=0.3)
    assert not finished.exists()  # stopped, not waited out


def test_tools_are_read_only_git_set_and_auto_approved(repo):
    for name in GIT_TOOLS:
        tool = repo.tools[name]
        assert tool.tool_set == "git" and tool.read_only, name
    assert repo.tools["git_log"].effects({"path": "src"}) == Effects(reads=("src",))
    assert repo.tools["git_status"].effects({}) == Effects(reads=(".",))


async def test_gate_allows_them_without_asking(repo):
    for name, args in (("git_status", {}), ("git_log", {"path": "x"}),
                       ("git_commit_message", {})):
        decision = await gate_decision(repo.config, repo.hooks, repo.tools[name], args)
        assert decision.allowed, name


# ---- git_status -----------------------------------------------------------------------------

async def test_status_clean_and_on_an_unborn_branch(repo):
    assert (await repo.run("git_status")).output == "On main, working tree clean."
    repo.commit("init", **{"a.txt": "a\n"})
    assert (await repo.run("git_status")).output == "On main, working tree clean."


async def test_status_names_every_kind_of_change(repo):
    repo.commit("init", **{"a.txt": "a\n", "b.txt": "b\n", "c.txt": "c\n", "d.txt": "d\n"})
    repo.write("a.txt", "a2\n")                          # modified, unstaged
    repo.write("b.txt", "b2\n")
    repo.git("add", "b.txt")                             # staged modified
    repo.write("b.txt", "b3\n")                          # ... and modified again
    (repo.root / "c.txt").unlink()                       # deleted
    repo.git("mv", "d.txt", "renamed.txt")               # renamed
    repo.write("new file.txt", "n\n")                    # untracked, with a space
    repo.write("added.txt", "x\n")
    repo.git("add", "added.txt")                         # staged added
    result = await repo.run("git_status")
    assert result.output.splitlines() == [
        "On main, 6 changed:",
        "a.txt  (modified)",
        "added.txt  (staged added)",
        "b.txt  (staged modified, modified)",
        "c.txt  (deleted)",
        "d.txt -> renamed.txt  (staged renamed)",
        "new file.txt  (untracked)",
    ]


async def test_status_lists_at_most_200_paths(repo):
    for i in range(205):
        repo.write(f"f{i:03}.txt", "x")
    lines = (await repo.run("git_status")).output.splitlines()
    assert lines[0] == "On main, 205 changed:"
    assert len(lines) == 1 + 200 + 1 and lines[-1] == "... and 5 more"


async def test_status_on_another_branch(repo):
    repo.commit("init", **{"a.txt": "a\n"})
    repo.git("checkout", "-qb", "feature/x")
    assert (await repo.run("git_status")).output == "On feature/x, working tree clean."


# ---- git_diff -------------------------------------------------------------------------------

async def test_diff_unstaged_staged_and_empty(repo):
    repo.commit("init", **{"a.txt": "one\n", "b.txt": "bee\n"})
    repo.git("config", "color.ui", "always")
    assert (await repo.run("git_diff")).output == "No uncommitted changes."
    assert (await repo.run("git_diff", {"staged": True})).output == "Nothing staged."
    repo.write("a.txt", "two\n")
    repo.write("b.txt", "bee!\n")
    repo.git("add", "b.txt")
    unstaged = (await repo.run("git_diff")).output
    assert unstaged.startswith("diff --git a/a.txt b/a.txt") and "+two" in unstaged
    assert "b.txt" not in unstaged and "\x1b[" not in unstaged
    staged = (await repo.run("git_diff", {"staged": True})).output
    assert "+bee!" in staged and "a.txt" not in staged
    assert (await repo.run("git_diff", {"path": "b.txt"})).output == "No uncommitted changes."


async def test_diff_never_rewrites_the_index_even_without_the_sandbox(tmp_path):
    """With the work tree's stat data stale (files copied or touched since the index was
    written), plain ``git diff`` rewrites .git/index to refresh it; the read-only tool
    leaves it as it was, byte for byte, and still shows only the real change."""
    root = tmp_path / "repo"
    root.mkdir()
    subprocess.run(["git", "init", "-q", "-b", "main"], cwd=root, check=True)
    repo = Repo(root, tmp_path / "agenthome", sandbox="off")  # only the hardening holds
    repo.commit("init", **{"a.txt": "one\n", "b.txt": "bee\n", "c.txt": "sea\n"})
    repo.write("a.txt", "two\n")
    for name in ("b.txt", "c.txt"):
        os.utime(root / name, (1_800_000_000, 1_800_000_000))  # stat-dirty, same content
    index = root / ".git" / "index"
    before = (index.read_bytes(), index.stat().st_mtime_ns, index.stat().st_ino)
    diff = (await repo.run("git_diff")).output
    assert diff.startswith("diff --git a/a.txt b/a.txt") and "+two" in diff
    assert "b.txt" not in diff and "c.txt" not in diff
    assert (index.read_bytes(), index.stat().st_mtime_ns, index.stat().st_ino) == before


# ---- git_log --------------------------------------------------------------------------------

async def test_log_format_order_limit_and_path(repo):
    assert (await repo.run("git_log")).output == "No commits."
    repo.history([(f"Change {i}", {f"f{i % 3}.txt": str(i)}) for i in range(20)])
    lines = (await repo.run("git_log")).output.splitlines()
    assert len(lines) == 15
    assert re.fullmatch(r"[0-9a-f]{7,}  \d{4}-\d\d-\d\d  Ann Dev  Change 19", lines[0])
    assert lines[-1].endswith("Change 5")
    assert len((await repo.run("git_log", {"limit": 40})).output.splitlines()) == 20
    only_f0 = (await repo.run("git_log", {"path": "f0.txt", "limit": 3})).output.splitlines()
    assert [line.split("  ")[-1] for line in only_f0] == ["Change 18", "Change 15", "Change 12"]
    bad = await repo.run("git_log", {"limit": 41})
    assert bad.is_error and "Invalid arguments" in bad.output


async def test_arguments_never_reach_a_shell(repo):
    repo.commit("init", **{"a.txt": "a\n"})
    result = await repo.run("git_log", {"path": "; touch pwned.txt"})
    assert result.output == "No commits."
    await repo.run("git_diff", {"path": "$(touch pwned2.txt)"})
    await repo.run("git_blame", {"path": "`touch pwned3.txt`"})
    assert not list(repo.root.glob("pwned*"))


async def test_refs_that_look_like_options_are_refused(repo):
    repo.commit("init", **{"a.txt": "a\n"})
    target = repo.root / "leak.txt"
    result = await repo.run("git_show", {"ref": f"--output={target}"})
    assert result.is_error and result.output == f'ref must not start with "-": --output={target}'
    assert not target.exists()


# ---- git_show / git_blame / git_branch --------------------------------------------------------

async def test_show_a_commit_and_errors_pass_through(repo):
    repo.commit("Add greeting", **{"hello.txt": "hello\n"})
    shown = (await repo.run("git_show", {"ref": "HEAD"})).output
    assert "Author: Ann Dev <ann@example.com>" in shown and "Add greeting" in shown
    assert "+hello" in shown
    blob = (await repo.run("git_show", {"ref": "HEAD:hello.txt"})).output
    assert blob == "hello"
    missing = await repo.run("git_show", {"ref": "nosuchref"})
    assert missing.is_error and "unknown revision" in missing.output


async def test_show_nothing(repo):
    repo.commit("empty file", **{"empty.txt": ""})
    result = await repo.run("git_show", {"ref": "HEAD:empty.txt"})
    assert result.output == "Nothing to show."

def _logging_git(tmp_path: Path, monkeypatch, hold: Path | None = None) -> Path:
    """A ``git`` first on PATH (outside the workspace) that logs its arguments, one line
    per process, then runs the real one.  With ``hold``, a config listing waits (at most
    20 s) for that file to exist before it runs."""
    import shutil

    real = shutil.which("git")
    folder = tmp_path / "logbin"
    folder.mkdir()
    log = tmp_path / "git.log"
    wait = (f'case "$*" in *" config --list "*) i=0; while [ ! -e \'{hold}\' ] && '
            f'[ $i -lt 2000 ]; do sleep 0.01; i=$((i+1)); done;; esac\n') if hold else ""
    (folder / "git").write_text(f"#!/bin/sh\nprintf '%s\\n' \"$*\" >> '{log}'\n{wait}"
                                f"exec '{real}' \"$@\"\n")
    (folder / "git").chmod(0o755)
    monkeypatch.setenv("PATH", f"{folder}:{os.environ['PATH']}")
    return log



def _greeting_repo(tmp_path):
    """A repository with one commit of hello.txt and an unstaged second line, its git run
    without the sandbox (the git log the tests read is outside the workspace)."""
    root = tmp_path / "repo"
    root.mkdir()
    subprocess.run(["git", "init", "-q", "-b", "main"], cwd=root, check=True)
    repo = Repo(root, tmp_path / "agenthome", sandbox="off")
    repo.commit("Add greeting", **{"hello.txt": "hello\n"})
    repo.write("hello.txt", "hello\nworld\n")
    return repo

async def test_show_and_commit_message_list_the_config_once_for_their_two_commands(
        tmp_path, monkeypatch):
    """git_show asks for the object's type (unless the ref names a path), then shows it;
    git_commit_message reads the staged diff, then the recent subjects.  Each lists the
    config once for its two commands (three git processes, not four), and both commands
    carry the overrides."""
    repo = _greeting_repo(tmp_path)
    repo.git("add", "hello.txt")
    log = _logging_git(tmp_path, monkeypatch)

    def commands() -> list[str]:
        lines = log.read_text().splitlines()
        log.write_text("")
        assert all("-c core.fsmonitor=false" in line for line in lines), lines
        return [re.sub(r"^--no-pager( -c \S+)*\s*", "", line).split()[0] for line in lines]

    shown = await repo.run("git_show", {"ref": "HEAD"})
    assert "Add greeting" in shown.output
    assert commands() == ["config", "cat-file", "show"]
    # rev:path names its path (judged before git runs): no need to ask for the type
    shown = await repo.run("git_show", {"ref": "HEAD:hello.txt"})
    assert shown.output == "hello"
    assert commands() == ["config", "show"]

    session = Session(Runtime(repo.config, repo.hooks, repo.tools,
                              ReplyingProvider("Add a world line")), origin="model")
    message = await repo.run("git_commit_message", session=session)
    assert message.output == "Add a world line"
    assert commands() == ["config", "diff", "log"]


async def test_concurrent_calls_share_the_listing_in_flight_and_a_later_call_lists_again(
        tmp_path, monkeypatch):
    """The read-only calls of one model step run together: one config listing serves all
    of them.  A call after they finished lists again, and so sees a filter added since:
    its command carries that filter's override."""
    import asyncio

    repo = _greeting_repo(tmp_path)
    log = _logging_git(tmp_path, monkeypatch)

    status, diff, history = await asyncio.gather(
        repo.run("git_status"), repo.run("git_diff"), repo.run("git_log"))
    assert status.output == "On main, 1 changed:\nhello.txt  (modified)"
    assert "+world" in diff.output and "Add greeting" in history.output
    lines = log.read_text().splitlines()
    listings = [line for line in lines if " config --list " in line]
    assert len(listings) == 1 and len(lines) == 4, lines
    assert all("-c core.fsmonitor=false" in line for line in lines), lines

    repo.git("config", "filter.late.clean", "touch /nonexistent/late")
    log.write_text("")
    assert "+world" in (await repo.run("git_diff")).output
    lines = log.read_text().splitlines()
    assert len(lines) == 2 and " config --list " in lines[0], lines
    assert "-c filter.late.clean= " in lines[1], lines


async def test_a_cancelled_call_leaves_the_shared_listing_to_the_others(tmp_path, monkeypatch):
    """Two calls wait on one listing (held until the test lets it go); the one that
    started it is cancelled; the other still gets its answer, from that same listing."""
    import asyncio

    from waiting import until

    root = tmp_path / "repo"
    root.mkdir()
    subprocess.run(["git", "init", "-q", "-b", "main"], cwd=root, check=True)
    repo = Repo(root, tmp_path / "agenthome", sandbox="off")
    repo.commit("Add greeting", **{"hello.txt": "hello\n"})
    go = tmp_path / "go"
    log = _logging_git(tmp_path, monkeypatch, hold=go)
    first = asyncio.create_task(repo.run("git_log"))
    await until(lambda: log.exists() and log.read_text(), "the first listing to start")
    second = asyncio.create_task(repo.run("git_log"))
    await asyncio.sleep(0)  # the second call runs up to its wait on the listing
    first.cancel()
    go.touch()
    assert "Add greeting" in (await second).output
    with pytest.raises(asyncio.CancelledError):
        await first
    lines = log.read_text().splitlines()
    assert [" config --list " in line for line in lines] == [True, False], lines


async def test_a_config_git_cannot_read_is_answered_in_gits_words_by_every_tool(repo):
    """The config listing every command starts with fails on a broken .git/config: each
    tool answers with git's complaint, as an error result (not an exception)."""
    repo.commit("init", **{"a.txt": "a\n"})
    with open(repo.root / ".git" / "config", "a") as config:
        config.write("[broken\n")
    for name, args in (("git_status", {}), ("git_diff", {}), ("git_log", {}),
                       ("git_log", {"patch": True}), ("git_show", {"ref": "HEAD"}),
                       ("git_blame", {"path": "a.txt"}), ("git_branch", {})):
        result = await repo.run(name, args)
        assert result.is_error and "bad config line" in result.output, (name, result)


async def test_blame_ranges(repo):
    repo.commit("lines", **{"long.txt": "".join(f"line {i}\n" for i in range(1, 101))})
    whole = (await repo.run("git_blame", {"path": "long.txt"})).output.splitlines()
    assert len(whole) == 100 and re.search(r"Ann Dev \d{4}-\d\d-\d\d +1\) line 1$", whole[0])
    from_10 = (await repo.run("git_blame", {"path": "long.txt", "startLine": 10})).output
    assert len(from_10.splitlines()) == 41 and from_10.splitlines()[-1].endswith("line 50")
    exact = (await repo.run("git_blame", {"path": "long.txt", "startLine": 3,
                                          "endLine": 4})).output
    assert [line.split(") ")[-1] for line in exact.splitlines()] == ["line 3", "line 4"]
    backwards = await repo.run("git_blame", {"path": "long.txt", "startLine": 5, "endLine": 2})
    assert backwards.is_error and backwards.output == "endLine (2) is before startLine (5)."


async def test_branches_sorted_by_date_with_the_current_marked(repo):
    assert (await repo.run("git_branch")).output == "No branches yet."
    repo.commit("first", **{"a.txt": "1"})
    repo.git("branch", "old")
    repo.commit("second", **{"a.txt": "2"})
    repo.git("checkout", "-qb", "newest")
    repo.commit("third", **{"a.txt": "3"})
    repo.git("checkout", "-q", "main")
    repo.git("update-ref", "refs/remotes/origin/main", "HEAD")
    repo.git("symbolic-ref", "refs/remotes/origin/HEAD", "refs/remotes/origin/main")
    lines = (await repo.run("git_branch")).output.splitlines()
    assert [re.sub(r"\d{4}-\d\d-\d\d", "DATE", line) for line in lines] == [
        "  newest  DATE  third", "* main  DATE  second", "  old  DATE  first"]
    with_remote = (await repo.run("git_branch", {"remote": True})).output
    assert "  origin/main  " in with_remote and "origin/HEAD" not in with_remote
    assert "origin" not in (await repo.run("git_branch")).output


# ---- git_commit_message ---------------------------------------------------------------------

async def test_commit_message_with_nothing_staged(repo):
    repo.commit("init", **{"a.txt": "a"})
    repo.write("a.txt", "changed but not staged")
    result = await repo.run("git_commit_message")
    assert not result.is_error and result.output == NOTHING_STAGED_FOR_MESSAGE


async def test_commit_message_without_a_model_is_a_clear_error(repo):
    repo.write("a.txt", "a")
    repo.git("add", "a.txt")
    result = await repo.run("git_commit_message")
    assert result.is_error and "needs a model" in result.output


class ReplyingProvider:
    label = "scripted"

    def __init__(self, reply: str) -> None:
        self.reply = reply
        self.requests: list = []

    async def stream(self, request):
        self.requests.append(request)
        half = len(self.reply) // 2
        yield TextDelta(self.reply[:half])
        yield TextDelta(self.reply[half:])
        yield StepFinished(Message("assistant", [TextPart(self.reply)]), Usage())


async def test_commit_message_asks_the_model_and_never_commits(repo):
    repo.commit("Add the parser", **{"a.txt": "a"})
    repo.write("b.txt", "bee\n")
    repo.git("add", "b.txt")
    provider = ReplyingProvider('Sure:\n```\n"Add b.txt with a bee"\n```\n')
    session = Session(Runtime(repo.config, repo.hooks, repo.tools, provider), origin="model")
    result = await repo.run("git_commit_message", session=session)
    assert result.output == "Add b.txt with a bee"
    [request] = provider.requests
    prompt = request.messages[0].text
    assert "Add the parser" in prompt and "+bee" in prompt and request.tools == []
    assert "one line" in request.system
    assert repo.git("log", "--format=%s").splitlines() == ["Add the parser"]
    assert repo.git("diff", "--staged", "--name-only").strip() == "b.txt"


async def test_commit_message_empty_reply_is_an_error(repo):
    repo.write("b.txt", "bee\n")
    repo.git("add", "b.txt")
    provider = ReplyingProvider("```\n```")
    session = Session(Runtime(repo.config, repo.hooks, repo.tools, provider))
    result = await repo.run("git_commit_message", session=session)
    assert result.is_error
    assert result.output == "the model returned no message; ask again or write one yourself"
    assert "(no commits yet)" in provider.requests[0].messages[0].text


@pytest.mark.parametrize(("reply", "expected"), [
    ("Fix the parser", "Fix the parser"),
    ("\n\n  Fix the parser  \nMore detail\n", "Fix the parser"),
    ('"Fix the parser"', "Fix the parser"),
    ("'Fix the parser'", "Fix the parser"),
    ("`Fix the parser`", "Fix the parser"),
    ("\u201cFix the parser\u201d", "Fix the parser"),
    ("Here it is:\n```text\nFix the parser\n```\nHope it helps", "Fix the parser"),
    ("```\n\nFix the parser\n", "Fix the parser"),
    ("x" * 100, "x" * 72),
    ("", ""),
    ("```\n```", ""),
    ('""', ""),
])
def test_unwrap_message(reply, expected):
    assert unwrap_message(reply) == expected


def test_message_prompt_truncates_the_diff():
    prompt = message_prompt("d" * (DIFF_FOR_MESSAGE + 500), "(no commits yet)")
    assert "d" * DIFF_FOR_MESSAGE in prompt and "d" * (DIFF_FOR_MESSAGE + 1) not in prompt
    assert "[diff truncated: 500 more chars]" in prompt
    assert prompt.startswith("Recent commit subjects, newest first:\n(no commits yet)")
