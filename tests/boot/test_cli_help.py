"""``agent --help`` lists subcommands from the plugins that registered them."""

from __future__ import annotations

import pytest
from clirun import run_agent_here

from agent import hookimpl
from agent.boot.cli_help import normalise_usage
from agent.testing import make_boot


def commands_section(text: str) -> list[str]:
    start = text.index("commands:\n")
    return text[start:text.index("\n\n", start)].splitlines()[1:]


def test_help_lists_the_core_and_the_plugins_subcommands_with_their_usage(tmp_path):
    shown = run_agent_here(["--help"], home=tmp_path / "home", cwd=tmp_path)
    assert shown.returncode == 0, shown.stderr
    rows = commands_section(shown.stdout)
    assert rows[0].split() == ["agent", "plugins", "[list]", "list", "plugins", "and", "their",
                               "status"]
    starts = [r.split()[1] for r in rows if r.startswith("  agent ")]
    assert starts.index("doctor") < starts.index("mcp")  # the core's first, then by name
    assert "  agent trash restore ID          put a deleted file back" in rows
    assert any(r.startswith("  agent mcp add NAME -- CMD ARGS  add a stdio server") for r in rows)
    assert "OPENAI_API_KEY" in shown.stdout.split("environment:")[1]
    # Again, with the plugins now registered from their cached descriptions (not imported).
    again = run_agent_here(["--help"], home=tmp_path / "home", cwd=tmp_path)
    assert commands_section(again.stdout) == rows


def test_a_disabled_plugins_subcommands_are_not_listed(tmp_path):
    shown = run_agent_here(["--help", "--disable", "files"], home=tmp_path / "home", cwd=tmp_path)
    assert shown.returncode == 0, shown.stderr
    rows = commands_section(shown.stdout)
    assert not [r for r in rows if "agent trash" in r]
    assert [r for r in rows if "agent mcp" in r]


def test_bad_usage_is_reported_and_the_command_still_registered_elsewhere(tmp_path):
    class Bad:
        @hookimpl
        def agent_register_cli_commands(self, register):
            register("oops", lambda argv, boot: 0, "x", usage=[("a", "b", "c")])

    class Good:
        @hookimpl
        def agent_register_cli_commands(self, register):
            register("fine", lambda argv, boot: 0, "a fine command", usage=["[--flag]"])

    ws = tmp_path / "ws"
    ws.mkdir()
    config, hooks = make_boot(ws, tmp_path / "home", builtins=[],
                              extra=[("bad", Bad()), ("good", Good())])
    try:
        commands = hooks.cli_commands()
        assert "oops" not in commands
        assert commands["fine"].usage == (("[--flag]", ""),)
        assert commands["fine"].plugin == "good"
        assert any("plugin bad: agent_register_cli_commands failed" in p and "pairs" in p
                   for p in hooks.problems)
    finally:
        hooks.unconfigure(config)


def test_usage_entries_must_be_pairs_of_text():
    assert normalise_usage([("a", "b"), "c"]) == (("a", "b"), ("c", ""))
    with pytest.raises(ValueError, match="pairs"):
        normalise_usage([("a", 1)])
