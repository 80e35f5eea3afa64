"""Custom commands: template expansion, files jailed to the workspace, discovery and running."""

from __future__ import annotations

import os

import pytest

from agent.testing import make_boot
from plugins_builtin import custom_commands as cc
from plugins_builtin.custom_commands import IncludeError, expand


def reader(files: dict[str, str]):
    def read(path: str) -> str:
        if path not in files:
            raise IncludeError("no such file", missing=True)
        return files[path]
    return read


# ---- arguments ----------------------------------------------------------------------------


def test_arguments_whole_and_positional():
    out = expand("all=[$ARGUMENTS] one=[$1] two=[$2] nine=[$9]", '  fix "the login bug" 12  ')
    assert out.text == 'all=[fix "the login bug" 12] one=[fix] two=[the login bug] nine=[]'


def test_positional_words_follow_shell_quoting():
    assert cc.split_arguments("a 'b c' \"d e\" f\\ g") == ["a", "b c", "d e", "f g"]
    assert cc.split_arguments("it's unbalanced") == ["it's", "unbalanced"]
    assert cc.split_arguments("") == []


def test_only_one_digit_and_escapes_are_literal():
    out = expand(r"$10 costs \$5, mail me\@host \@ann, keep $HOME and $ARGUMENTSX", "a b")
    assert out.text == "a0 costs $5, mail me@host @ann, keep $HOME and a bX"


def test_substituted_text_is_never_expanded_again():
    files = {"notes.md": "file says $1 and @other.md"}
    out = expand("run $1 with $ARGUMENTS then @notes.md", "$2 @notes.md $ARGUMENTS",
                 reader({**files, "other.md": "SHOULD NOT APPEAR"}))
    assert out.text == ('run $2 with $2 @notes.md $ARGUMENTS then <file path="notes.md">\n'
                        "file says $1 and @other.md\n</file>")
    assert out.included == ["notes.md"]


# ---- @path ------------------------------------------------------------------------------------


def test_path_inclusion_keeps_trailing_punctuation_and_dedups():
    out = expand("Compare @a.py, then @a.py.\n(@b.py) and me@c.py", "",
                 reader({"a.py": "A\n", "b.py": "B"}))
    assert out.text == ('Compare <file path="a.py">\nA\n</file>, then a.py (included above).'
                        "\n(@b.py) and me@c.py")
    assert out.problems == []


def test_missing_files_are_reported_but_decorators_are_not():
    out = expand("@dataclass\n@docs/missing.md\n@missing.txt", "", reader({}))
    assert out.text == "@dataclass\n@docs/missing.md\n@missing.txt"
    assert out.problems == ["@docs/missing.md not included: no such file",
                            "@missing.txt not included: no such file"]


def test_without_a_reader_paths_stay_as_written():
    assert expand("see @a.py", "x").text == "see @a.py"


def test_total_and_count_caps():
    files = {f"f{i}.txt": "x" * 40 for i in range(5)}
    out = expand(" ".join(f"@f{i}.txt" for i in range(5)), "", reader(files), total_cap=100)
    assert out.included == ["f0.txt", "f1.txt"]
    assert out.text.endswith("@f2.txt @f3.txt @f4.txt")
    assert len(out.problems) == 3 and "would exceed" in out.problems[0]
    out = expand("@f0.txt @f1.txt @f2.txt", "", reader(files), max_includes=2)
    assert out.included == ["f0.txt", "f1.txt"]
    assert out.problems == ["@f2.txt not included: more than 2 files"]


def test_workspace_reader_jails_and_refuses(tmp_path):
    ws = tmp_path / "ws"
    (ws / "src").mkdir(parents=True)
    (ws / "src" / "app.py").write_text("print('hi')\n")
    (ws / ".env").write_text("TOKEN=secret\n")
    (ws / "blob.bin").write_bytes(b"abc\x00def")
    (ws / "big.txt").write_text("y" * 50)
    (tmp_path / "outside.txt").write_text("OUTSIDE")
    os.symlink(tmp_path / "outside.txt", ws / "link.txt")
    read = cc.workspace_reader(ws, cap=20)
    out = expand("@src/app.py @../outside.txt @link.txt @/etc/hostname @.env @blob.bin @src "
                 "@big.txt", "", read)
    assert '<file path="src/app.py">\nprint(\'hi\')\n</file>' in out.text
    assert "OUTSIDE" not in out.text and "TOKEN" not in out.text
    assert "y" * 20 + "\n[... cut at 20 characters; the file has 50 bytes]" in out.text
    reasons = {p.split(" not included: ")[0]: p.split(" not included: ")[1]
               for p in out.problems}
    assert reasons["@../outside.txt"].startswith("Path escapes workspace")
    assert reasons["@link.txt"].startswith("Path escapes workspace")
    assert reasons["@/etc/hostname"].startswith("Path escapes workspace")
    assert reasons["@.env"] == "the permission rules deny reading it"
    assert reasons["@blob.bin"] == "binary file"
    assert reasons["@src"] == "not a file"


def test_workspace_reader_refuses_every_secret_even_when_rules_allow(tmp_path):
    ws = tmp_path / "ws"
    (ws / "conf" / ".env").mkdir(parents=True)
    (ws / "conf" / ".env" / "prod.json").write_text("CANARY-envdir")
    (ws / ".ENV").write_text("CANARY-upper")
    (ws / "deploy").mkdir()
    (ws / "deploy" / "id_rsa").write_text("CANARY-key")
    os.symlink("deploy/id_rsa", ws / "notes.txt")
    read = cc.workspace_reader(ws, {"read_file": "allow"})
    out = expand("@conf/.env/prod.json @.ENV @notes.txt @deploy/id_rsa", "", read)
    assert out.included == [] and "CANARY" not in out.text
    assert all("the secrets policy refuses it" in p for p in out.problems), out.problems
    opened = expand("@.ENV", "", cc.workspace_reader(ws, secrets_allow=[".env"]))
    assert "CANARY-upper" in opened.text


def test_workspace_reader_follows_the_users_permission_rules(tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "private.md").write_text("keep out")
    read = cc.workspace_reader(ws, {"read_file": {"*": "allow", "private.md": "deny"}})
    out = expand("@private.md", "", read)
    assert out.included == [] and "keep out" not in out.text


# ---- files and discovery ------------------------------------------------------------------------


def write(path, text):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


@pytest.fixture
def places(tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    home = tmp_path / "home"
    home.mkdir()
    return ws, home


def test_project_commands_override_user_ones(places):
    ws, home = places
    write(home / "commands" / "fix.md", "---\ndescription: user fix\n---\nUser fix $1")
    write(home / "commands" / "mine.md", "Summarise the diff.\nThen stop.")
    write(ws / ".agent" / "commands" / "fix.md",
          "---\ndescription: \"project fix\"\nagent: plan\n---\nProject fix $1")
    write(ws / ".agent" / "commands" / "bad name.md", "x")
    write(ws / ".agent" / "commands" / "empty.md", "---\ndescription: nothing\n---\n\n")
    found, skipped = cc.discover(ws, home)
    assert set(found) == {"fix", "mine"}
    assert (found["fix"].origin, found["fix"].description, found["fix"].agent,
            found["fix"].body) == ("project", "project fix", "plan", "Project fix $1")
    assert found["mine"].description == "Summarise the diff."
    assert sorted(s.split(": ", 1)[1] for s in skipped) == [
        "'bad name' is not a command name (letters, digits, . _ -; at most 64)",
        "the template is empty"]


class Front:
    """A minimal front end: records what a command did with it."""

    def __init__(self):
        self.prompts: list[str] = []
        self.warnings: list[str] = []

    def run_prompt(self, text):
        self.prompts.append(text)

    def warn(self, text):
        self.warnings.append(text)


async def test_registered_command_expands_and_starts_a_turn(places):
    ws, home = places
    write(ws / "README.md", "Read me first.")
    path = write(ws / ".agent" / "commands" / "review-pr.md",
                 "---\ndescription: review a PR\n---\nReview PR $1 ($ARGUMENTS). "
                 "Context: @README.md @nope/x.md")
    config, hooks = make_boot(ws, home, builtins=["custom_commands"])
    command = hooks.commands(config).get("review-pr")
    assert command.summary == "review a PR (.agent/commands)" and command.takes_args
    front = Front()
    assert await command.run(front, '42 "be strict"') is None
    assert front.prompts == ['Review PR 42 (42 "be strict"). Context: <file path="README.md">'
                             "\nRead me first.\n</file> @nope/x.md"]
    assert front.warnings == ["@nope/x.md not included: no such file"]
    path.write_text("Edited: $1")  # the template is re-read on every run
    await command.run(front, "7")
    assert front.prompts[-1] == "Edited: 7"
    assert await command.run(object(), "9") == "Edited: 9"  # no front end: the text comes back


async def test_custom_commands_never_replace_other_commands(places):
    ws, home = places
    write(ws / ".agent" / "commands" / "skills.md", "hijack")
    write(ws / ".agent" / "commands" / "context.md", "hijack")
    write(ws / ".agent" / "commands" / "ok.md", "fine")
    config, hooks = make_boot(ws, home, builtins=["custom_commands", "skills", "instructions"])
    registry = hooks.commands(config)
    assert registry.get("skills").plugin == "skills"
    assert registry.get("context").plugin == "instructions"
    assert registry.get("ok").plugin == "custom_commands"


async def test_agent_frontmatter_switches_through_the_agent_command(places):
    ws, home = places
    write(ws / ".agent" / "commands" / "plan-it.md", "---\nagent: plan\n---\nPlan $ARGUMENTS")
    config, hooks = make_boot(ws, home, builtins=["custom_commands"])
    registry = hooks.commands(config)
    calls = []

    class WithAgents(Front):
        commands = registry

    from agent import SlashCommand
    registry.register(SlashCommand("agent", "switch", lambda app, args: calls.append(args)))
    front = WithAgents()
    await registry.get("plan-it").run(front, "the migration")
    assert calls == ["plan"] and front.prompts == ["Plan the migration"]
