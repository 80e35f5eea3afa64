"""Instruction files (AGENTS.md, CLAUDE.md, .agent.md) reach the system prompt on the wire."""

from __future__ import annotations

import pytest
from clirun import run_agent_here
from fakeprovider import Reply

from agent.testing import collect, make_boot, make_session
from plugins_builtin import instructions


@pytest.fixture
def repo(tmp_path):
    """A git repo (``.git`` marks the root) with a nested package as the workspace."""
    root = tmp_path / "repo"
    (root / ".git").mkdir(parents=True)
    ws = root / "pkg" / "sub"
    ws.mkdir(parents=True)
    (tmp_path / "AGENTS.md").write_text("ABOVE THE REPO: must not be read\n")
    (root / "AGENTS.md").write_text("root rule: run make test\n")
    (root / "pkg" / "CLAUDE.md").write_text("pkg rule: tabs\n")
    (ws / ".agent.md").write_text("sub rule: no network\n")
    (ws / "AGENTS.md").write_text("sub agents rule\n")
    return root, ws


def system_of(request) -> str:
    return request.body["messages"][0]["content"]


async def test_files_from_git_root_down_are_sent_outermost_first(repo, tmp_path, fake_provider):
    root, ws = repo
    config, hooks = make_boot(ws, tmp_path / "home", builtins=["openai", "instructions"])
    fake_provider.script(Reply.text("ok"))
    await collect(make_session(config, hooks, base_url=fake_provider.openai_url), "hi")
    system = system_of(fake_provider.requests[0])
    assert "ABOVE THE REPO" not in system
    headers = ["--- ../../AGENTS.md ---", "--- ../CLAUDE.md ---", "--- AGENTS.md ---",
               "--- .agent.md ---"]
    positions = [system.index(h) for h in headers]
    assert positions == sorted(positions)
    assert "root rule: run make test" in system and "sub rule: no network" in system
    assert "standing orders" in system and "never override the safety rules" in system


async def test_each_file_is_capped(tmp_path, fake_provider):
    ws = tmp_path / "ws"
    (ws / ".git").mkdir(parents=True)
    (ws / "AGENTS.md").write_text("A" * 11_990 + "TAIL-MARKER" + "B" * 5000)
    config, hooks = make_boot(ws, tmp_path / "home", builtins=["openai", "instructions"])
    fake_provider.script(Reply.text("ok"))
    await collect(make_session(config, hooks, base_url=fake_provider.openai_url), "hi")
    system = system_of(fake_provider.requests[0])
    assert "A" * 11_990 + "TAIL-MARKE" in system and "TAIL-MARKER" not in system
    assert "5,001 more characters not shown" in system


async def test_an_agents_md_written_mid_session_is_picked_up(tmp_path, fake_provider):
    ws = tmp_path / "ws"
    (ws / ".git").mkdir(parents=True)
    config, hooks = make_boot(ws, tmp_path / "home", builtins=["openai", "instructions"])
    session = make_session(config, hooks, base_url=fake_provider.openai_url)
    fake_provider.script(Reply.text("one"), Reply.text("two"))
    await collect(session, "first")
    (ws / "AGENTS.md").write_text("fresh rule\n")
    await collect(session, "second")
    assert "fresh rule" not in system_of(fake_provider.requests[0])
    assert "--- AGENTS.md ---\nfresh rule" in system_of(fake_provider.requests[1])


def test_no_instructions_flag_keeps_them_out_of_the_prompt(repo, tmp_path, fake_provider):
    _, ws = repo
    args = ["-p", "hi", "--provider", "openai", "--base-url", fake_provider.openai_url,
            "--model", "m"]
    fake_provider.script(Reply.text("with"), Reply.text("without"))
    first = run_agent_here(args, home=tmp_path / "home", cwd=ws, OPENAI_API_KEY="x")
    second = run_agent_here([*args, "--no-instructions"], home=tmp_path / "home", cwd=ws,
                            OPENAI_API_KEY="x")
    assert first.returncode == 0 and second.returncode == 0, first.stderr + second.stderr
    assert "root rule: run make test" in system_of(fake_provider.requests[0])
    assert "root rule" not in system_of(fake_provider.requests[1])
    assert "Project instructions" not in system_of(fake_provider.requests[1])


def test_no_git_means_every_ancestor_up_to_the_filesystem_root(tmp_path):
    ws = tmp_path / "a" / "b"
    ws.mkdir(parents=True)
    (tmp_path / "a" / "AGENTS.md").write_text("outer\n")
    labels = [f.label for f in instructions.find_files(ws)]
    assert "../AGENTS.md" in labels
    assert str(instructions.search_dirs(ws)[0]) == ws.anchor


def test_context_command_lists_files_or_says_how_to_make_one(repo, tmp_path):
    _, ws = repo
    config, hooks = make_boot(ws, tmp_path / "home", builtins=["instructions"])
    context = hooks.commands(config).get("context")
    listing = context.run(object(), "")
    assert listing.splitlines()[1:] == [
        "  ../../AGENTS.md  (25 characters)", "  ../CLAUDE.md  (15 characters)",
        "  AGENTS.md  (16 characters)", "  .agent.md  (21 characters)"]

    empty = tmp_path / "empty"
    (empty / ".git").mkdir(parents=True)
    config, hooks = make_boot(empty, tmp_path / "home", builtins=["instructions"])

    class App:
        shown: list[str] = []

        def info(self, text):
            self.shown.append(text)

    app = App()
    hooks.commands(config).get("context").run(app, "")
    assert app.shown == ["No AGENTS.md, CLAUDE.md, or .agent.md found. Run /init to write one."]


async def test_init_submits_the_investigation_prompt_as_a_turn(tmp_path, fake_provider):
    ws = tmp_path / "ws"
    (ws / ".git").mkdir(parents=True)
    config, hooks = make_boot(ws, tmp_path / "home", builtins=["openai", "instructions"])
    session = make_session(config, hooks, base_url=fake_provider.openai_url)
    submitted: list[str] = []

    class App:
        def run_prompt(self, prompt):
            submitted.append(prompt)

    hooks.commands(config).get("init").run(App(), "focus on the tests")
    fake_provider.script(Reply.text("wrote AGENTS.md"))
    await collect(session, submitted[0])
    user = fake_provider.requests[0].body["messages"][-1]["content"]
    assert "AGENTS.md" in user and "Under 100 lines" in user and "verified" in user
    assert user.endswith("Also: focus on the tests")


def test_many_workspaces_keep_a_bounded_cache_and_each_its_own_text(tmp_path):
    """prompt_text of more workspaces than CACHE_KEPT: each gets its own file's text, the
    cache holds no more than CACHE_KEPT, and the first (dropped) is read again alike."""
    workspaces = []
    for n in range(instructions.CACHE_KEPT * 3):
        ws = tmp_path / f"ws{n}"
        (ws / ".git").mkdir(parents=True)
        (ws / "AGENTS.md").write_text(f"rule number {n}\n")
        workspaces.append(ws)
        text = instructions.prompt_text(ws)
        assert text.rstrip().endswith(f"--- AGENTS.md ---\nrule number {n}"), text
        assert len(instructions._cache) <= instructions.CACHE_KEPT
    assert instructions.prompt_text(workspaces[0]).rstrip().endswith("rule number 0")


def test_a_linked_workspace_and_a_git_file_find_the_same_files(tmp_path):
    """The search runs on the workspace's real path (a link to it finds what it finds), and
    a ``.git`` file (a git worktree's) marks the root as a ``.git`` folder does."""
    repo = tmp_path / "repo"
    (repo / "pkg").mkdir(parents=True)
    (repo / ".git").write_text("gitdir: /elsewhere/.git/worktrees/repo\n")
    (tmp_path / "AGENTS.md").write_text("OUTSIDE-THE-WORKTREE\n")
    (repo / "AGENTS.md").write_text("worktree rule\n")
    (repo / "pkg" / "CLAUDE.md").write_text("pkg rule\n")
    link = tmp_path / "link"
    link.symlink_to(repo / "pkg")
    expected = [repo.resolve(), (repo / "pkg").resolve()]
    assert instructions.search_dirs(repo / "pkg") == expected
    assert instructions.search_dirs(link) == expected
    for where in (repo / "pkg", link):
        text = instructions.prompt_text(where)
        assert "worktree rule" in text and "pkg rule" in text
        assert "OUTSIDE-THE-WORKTREE" not in text
