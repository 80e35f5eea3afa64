"""Skills: discovery and overrides on disk, the catalogue on the wire, the skill tool, /skills."""

from __future__ import annotations

import logging

import pytest
from clirun import run_agent_here
from fakeprovider import Reply

from agent.lib import frontmatter
from agent.testing import collect, gate_decision, make_boot, make_session, run_tool
from plugins_builtin import skills
from plugins_builtin.skills import library

BUNDLED = ("commit", "debug", "migrate", "perf", "refactor", "review", "security", "test",
           "verify")


def write_skill(directory, name, description="does things", body="Do the thing.", *,
                filename=None):
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / (filename or f"{name}.md")
    path.write_text(f"---\nname: {name}\ndescription: {description}\n---\n{body}\n")
    return path


@pytest.fixture
def dirs(tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    home = tmp_path / "home"
    return ws, home


def system_of(request) -> str:
    return request.body["messages"][0]["content"]


def tool_names(request) -> list[str]:
    return [t["function"]["name"] for t in request.body.get("tools", [])]


# ---- frontmatter --------------------------------------------------------------------------


def test_frontmatter_reads_flat_keys_and_strips_quotes():
    doc = frontmatter.parse('---\nname: "quoted"\ndescription: \'single\'\n'
                            "tags:\n  - a\n  - b\nnested:\n  key: v\n# comment\n---\nBody\n")
    assert doc.meta == {"name": "quoted", "description": "single"}
    assert doc.body == "Body\n"


def test_multi_line_descriptions_are_read_as_yaml():
    for text in ("description: |\n  Review a change\n  for correctness.\n",
                 "description: >\n  Review a change\n  for correctness.\n",
                 "description: Review a change\n  for correctness.\n"):
        doc = frontmatter.parse(f"---\nname: multi\n{text}---\nbody\n")
        assert doc.problem == ""
        assert " ".join(doc.meta["description"].split()) == "Review a change for correctness."


def test_a_block_scalar_description_reaches_the_catalogue_the_model_sees(dirs, fake_provider):
    ws, home = dirs
    folder = ws / ".agent" / "skills"
    folder.mkdir(parents=True)
    (folder / "multi.md").write_text("---\nname: multi\ndescription: |\n  Two\n  lines\n---\n"
                                     "Do it.\n")
    fake_provider.script(Reply.text("ok"))
    proc = run_agent_here(["-p", "hi", "--provider", "openai", "--base-url",
                           fake_provider.openai_url, "--model", "m"], home=home, cwd=ws,
                          OPENAI_API_KEY="x")
    assert proc.returncode == 0, proc.stderr
    system = system_of(fake_provider.requests[0])
    assert "\n- multi: Two lines" in system and "- multi: |" not in system


def test_frontmatter_that_is_not_yaml_is_refused_with_its_line():
    text = "---\nname: bad\ndescription: |\n  fine\n bad: [unclosed\n---\nbody\n"
    reason = library.parse_skill(text, "project")
    assert isinstance(reason, str) and reason.startswith("frontmatter is not valid YAML")
    assert "line" in reason


def test_frontmatter_needs_both_fence_lines():
    assert frontmatter.parse("---\nname: x\nno closing line\n").meta == {}
    assert not frontmatter.parse("name: x\n---\n").has_frontmatter
    crlf = frontmatter.parse("\ufeff---\r\nname: win\r\n---\r\nbody\r\n")
    assert crlf.meta == {"name": "win"} and crlf.body.strip() == "body"


# ---- parsing and discovery ------------------------------------------------------------------


def test_name_and_description_are_both_required():
    assert library.parse_skill("---\nname: a\n---\nbody", "user") == \
        "frontmatter has no description"
    assert library.parse_skill("---\ndescription: d\n---\nbody", "user") == \
        "frontmatter has no name"
    assert library.parse_skill("no frontmatter at all", "user") == "no --- frontmatter"
    assert library.parse_skill('---\nname: a\ndescription: ""\n---\nbody', "user") == \
        "frontmatter has no description"


def test_body_is_trimmed_and_capped():
    skill = library.parse_skill("---\nname: big\ndescription: d\n---\n\n  " + "x" * 25_000
                                + "TAIL\n\n", "user")
    assert skill.body == "x" * 20_000
    small = library.parse_skill("---\nname: s\ndescription: d\n---\n\n  hello  \n\n", "user")
    assert small.body == "hello"


def test_the_nine_bundled_skills_are_substantial_and_name_our_tools():
    catalogue = library.load([("builtin", library.BUNDLED_DIR)])
    assert tuple(catalogue.skills) == BUNDLED
    assert catalogue.skipped == ()
    tools = ("read_file", "grep", "bash", "apply_patch", "edit_file", "todo_write", "remember",
             "git_diff", "git_status", "git_log", "glob")
    for skill in catalogue.skills.values():
        assert skill.origin == "builtin"
        assert 1_000 <= len(skill.body) <= 2_200, (skill.name, len(skill.body))
        assert "\n" not in skill.description and len(skill.description) < 160
        assert sum(t in skill.body for t in tools) >= 2, skill.name


def test_later_locations_override_earlier_by_name(dirs, caplog):
    ws, home = dirs
    write_skill(home / "registry" / "skills", "commit", "registry commit")
    write_skill(home / "registry" / "skills", "deploy", "registry deploy")
    write_skill(home / "skills", "deploy", "user deploy")
    write_skill(home / "skills", "lint", "user lint")
    write_skill(ws / ".agent" / "skills", "lint", "project lint", filename="other-file.md")
    (ws / ".agent" / "skills" / "broken.md").write_text("---\nname: broken\n---\nno desc\n")
    (ws / ".agent" / "skills" / "notes.txt").write_text("not markdown")
    with caplog.at_level(logging.WARNING, logger="agent.skills"):
        catalogue = library.Library(home, ws).current()
    got = {n: (s.origin, s.description) for n, s in catalogue.skills.items()}
    assert got["commit"] == ("registry", "registry commit")
    assert got["deploy"] == ("user", "user deploy")
    assert got["lint"] == ("project", "project lint")
    assert got["debug"] == ("builtin", library.parse_skill(
        (library.BUNDLED_DIR / "debug.md").read_text(), "builtin").description)
    assert list(catalogue.skills) == sorted(catalogue.skills)
    assert [s.reason for s in catalogue.skipped] == ["frontmatter has no description"]
    assert "broken.md skipped: frontmatter has no description" in caplog.text


def test_library_rereads_when_a_file_appears_changes_or_goes(dirs):
    ws, home = dirs
    lib = library.Library(home, ws)
    assert "fresh" not in lib.current().skills
    path = write_skill(home / "registry" / "skills", "fresh", "first words")
    assert lib.current().skills["fresh"].description == "first words"
    write_skill(home / "registry" / "skills", "fresh", "second, longer words")
    assert lib.current().skills["fresh"].description == "second, longer words"
    path.unlink()
    assert "fresh" not in lib.current().skills


# ---- the skill tool -------------------------------------------------------------------------


async def test_skill_tool_returns_the_body_and_names_unknown_ones(dirs):
    ws, home = dirs
    write_skill(ws / ".agent" / "skills", "house", "house rules", "Use tabs.\nNever push.")
    config, hooks = make_boot(ws, home, builtins=["skills"])
    tool = hooks.tools(config)["skill"]
    result = await run_tool(tool, {"name": "house"}, config)
    assert not result.is_error
    assert result.output == ('Skill "house" (project). Follow these instructions for this '
                             "task.\n\nUse tabs.\nNever push.")
    missing = await run_tool(tool, {"name": "nope"}, config)
    assert missing.is_error
    assert missing.output == ('No skill named "nope". Available: ' + ", ".join(
        sorted([*BUNDLED, "house"])) + ".")


async def test_skill_tool_is_approved_without_asking(dirs):
    ws, home = dirs
    config, hooks = make_boot(ws, home, builtins=["skills"], headless=True)
    tool = hooks.tools(config)["skill"]
    decision = await gate_decision(config, hooks, tool, {"name": "debug"})  # no approver
    assert decision.allowed and decision.by == "allow"


async def test_catalogue_in_the_prompt_and_body_through_the_tool(dirs, fake_provider):
    ws, home = dirs
    config, hooks = make_boot(ws, home, builtins=["openai", "skills"])
    fake_provider.script(Reply(tool_calls=[("skill", {"name": "debug"})]),
                         Reply.text("following it"))
    session = make_session(config, hooks, base_url=fake_provider.openai_url)
    await collect(session, "the tests fail")
    first, second = fake_provider.requests
    system = system_of(first)
    assert ("Skills available through the skill tool. Load one when its description matches "
            "the task, before you start working, and follow it as if the user had written "
            "it:") in system
    debug_body = library.parse_skill((library.BUNDLED_DIR / "debug.md").read_text(),
                                     "builtin").body
    for name in BUNDLED:
        assert f"\n- {name}: " in system
    assert debug_body[:200] not in system  # bodies stay out of the prompt
    assert "skill" in tool_names(first)
    tool_message = next(m for m in second.body["messages"] if m["role"] == "tool")
    assert tool_message["content"].startswith(
        'Skill "debug" (builtin). Follow these instructions for this task.\n\n')
    assert debug_body in tool_message["content"]


async def test_a_skill_installed_mid_session_is_offered_at_the_next_step(dirs, fake_provider,
                                                                        monkeypatch):
    ws, home = dirs
    empty = ws / "no-bundled"
    empty.mkdir()
    monkeypatch.setattr(library, "BUNDLED_DIR", empty)  # start with no skill at all
    skills._libraries.clear()
    config, hooks = make_boot(ws, home, builtins=["openai", "skills"])
    session = make_session(config, hooks, base_url=fake_provider.openai_url)
    fake_provider.script(Reply.text("one"), Reply.text("two"))
    await collect(session, "first")
    write_skill(home / "registry" / "skills", "release", "cut a release")
    await collect(session, "second")
    first, second = fake_provider.requests
    assert "skill" not in tool_names(first) and "Skills available" not in system_of(first)
    assert "skill" in tool_names(second)
    assert "\n- release: cut a release" in system_of(second)
    skills._libraries.clear()


def test_no_skills_flag_removes_tool_and_catalogue(dirs, fake_provider):
    ws, home = dirs
    args = ["-p", "hi", "--provider", "openai", "--base-url", fake_provider.openai_url,
            "--model", "m"]
    fake_provider.script(Reply.text("with"), Reply.text("without"))
    with_skills = run_agent_here(args, home=home, cwd=ws, OPENAI_API_KEY="x")
    without = run_agent_here([*args, "--no-skills"], home=home, cwd=ws, OPENAI_API_KEY="x")
    assert with_skills.returncode == 0 and without.returncode == 0, without.stderr
    first, second = fake_provider.requests
    assert "skill" in tool_names(first) and "- commit: " in system_of(first)
    assert "skill" not in tool_names(second) and "Skills available" not in system_of(second)


# ---- /skills ---------------------------------------------------------------------------------


def test_skills_command_lists_name_origin_description(dirs):
    ws, home = dirs
    write_skill(home / "skills", "mine", "my own skill")
    (home / "skills" / "bad.md").write_text("---\nname: bad skill!\ndescription: d\n---\nx\n")
    config, hooks = make_boot(ws, home, builtins=["skills"])
    command = hooks.commands(config).get("skills")
    text = command.run(object(), "")
    lines = text.splitlines()
    assert "`commit       builtin  ` Commit work to git" in lines[0]
    assert "`mine         user     ` my own skill" in lines
    assert any(ln.startswith("skipped ") and "bad.md: name 'bad skill!'" in ln for ln in lines)
    assert lines[-1] == "`/registry` to browse and install more"
    off, _ = make_boot(ws, home, builtins=["skills"], flags={"skills": False})
    assert skills.skills_report(off)[0] == "Skills are off for this run (--no-skills)."
    assert "skill" not in hooks.tools(off)


def test_a_process_working_in_many_workspaces_keeps_a_bounded_number_of_libraries(tmp_path):
    """Each workspace's library is right, and past LIBRARIES_KEPT workspaces the oldest are
    dropped (counted live, not weighed); one dropped and used again is read afresh."""
    import gc

    home = tmp_path / "home"
    workspaces = []
    for n in range(skills.LIBRARIES_KEPT * 3):
        ws = tmp_path / f"ws{n}"
        write_skill(ws / ".agent" / "skills", f"own-{n}")
        workspaces.append(ws)
        config, _hooks = make_boot(ws, home, builtins=["skills"])
        names = set(skills.library_for(config).current().skills)
        assert f"own-{n}" in names and f"own-{n - 1}" not in names
        assert set(BUNDLED) <= names
    gc.collect()
    alive = [o for o in gc.get_objects() if type(o) is library.Library]
    assert len(alive) <= skills.LIBRARIES_KEPT, len(alive)
    config, _hooks = make_boot(workspaces[0], home, builtins=["skills"])
    assert "own-0" in skills.library_for(config).current().skills
