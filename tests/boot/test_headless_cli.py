"""Headless mode end to end: the real CLI, the real SDKs, the fake provider."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest
from clirun import run_agent_here
from fakeprovider import Reply

SCHEMA = json.loads((Path(__file__).parents[2] / "docs/events.schema.json").read_text())


@pytest.fixture
def dirs(tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    return tmp_path / "home", ws


def time_script(srv):
    srv.script(Reply.tool_call("current_time", {}, id="call_t"),
               Reply.text("It is **now**."))


@pytest.mark.parametrize("provider,api", [("openai", "chat"), ("openai", "responses"),
                                           ("anthropic", "")])
def test_what_time_is_it(dirs, fake_provider, provider, api):
    home, ws = dirs
    time_script(fake_provider)
    url = fake_provider.openai_url if provider == "openai" else fake_provider.base_url
    env = {"AGENT_OPENAI_API": api} if api else {}
    key_env = "OPENAI_API_KEY" if provider == "openai" else "ANTHROPIC_API_KEY"
    env[key_env] = "sk-test"
    proc = run_agent_here(["-p", "what time is it", "--provider", provider, "--base-url", url,
                           "--model", "m"], home=home, cwd=ws, **env)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "It is **now**.\n"
    assert "[tool] current_time {}" in proc.stderr
    paths = fake_provider.paths
    expected = {"chat": "/v1/chat/completions", "responses": "/v1/responses",
                "": "/v1/messages"}[api]
    assert paths == [expected, expected]


def test_json_events_validate_against_the_published_schema(dirs, fake_provider):
    home, ws = dirs
    time_script(fake_provider)
    proc = run_agent_here(["-p", "what time is it", "--json", "--provider", "openai", "--base-url",
                           fake_provider.openai_url, "--model", "m"], home=home, cwd=ws,
                          OPENAI_API_KEY="x")
    assert proc.returncode == 0, proc.stderr
    events = [json.loads(line) for line in proc.stdout.splitlines()]
    for event in events:
        jsonschema.validate(event, SCHEMA)
    assert [e["type"] for e in events][:4] == ["system", "tool-start", "tool-call",
                                               "tool-result"]
    assert events[0]["subtype"] == "init" and events[0]["session_id"] == events[-1]["session_id"]
    assert "current_time" in events[0]["tools"]
    assert events[-2]["type"] == "done" and events[-2]["reason"] == "end"
    assert events[-1]["type"] == "result" and events[-1]["stop_reason"] == "done"
    assert "".join(e["text"] for e in events if e["type"] == "text") == "It is **now**."


def test_prompt_from_stdin(dirs, fake_provider):
    home, ws = dirs
    fake_provider.script(Reply.text("piped"))
    proc = run_agent_here(["-p", "--provider", "openai", "--base-url", fake_provider.openai_url,
                           "--model", "m"], home=home, cwd=ws, input="hello from stdin",
                          OPENAI_API_KEY="x")
    assert proc.returncode == 0 and proc.stdout == "piped\n"
    user = fake_provider.requests[0].body["messages"][-1]
    assert user["content"] == "hello from stdin" or "hello from stdin" in json.dumps(user)


def test_no_api_key_names_the_variable_and_config_key(dirs):
    home, ws = dirs
    proc = run_agent_here(["-p", "hi", "--provider", "openai"], home=home, cwd=ws)
    assert proc.returncode == 2
    assert "OPENAI_API_KEY" in proc.stderr and "api_key" in proc.stderr
    assert str(home / "config.toml") in proc.stderr


def test_broken_config_names_file_and_line(dirs):
    home, ws = dirs
    home.mkdir()
    (home / "config.toml").write_text('provider = "openai"\nmodel = \n')
    proc = run_agent_here(["-p", "hi"], home=home, cwd=ws)
    assert proc.returncode == 2
    assert str(home / "config.toml") in proc.stderr and "line 2" in proc.stderr


def test_wrong_type_in_config_is_reported(dirs):
    home, ws = dirs
    home.mkdir()
    (home / "config.toml").write_text('max_steps = "many"\n')
    proc = run_agent_here(["-p", "hi"], home=home, cwd=ws, OPENAI_API_KEY="x")
    assert proc.returncode == 2 and "'max_steps' must be an integer" in proc.stderr


def test_precedence_file_env_flag(dirs, fake_provider):
    home, ws = dirs
    home.mkdir()
    (home / "config.toml").write_text(
        f'provider = "openai"\nmodel = "from-file"\nbase_url = "{fake_provider.openai_url}"\n')
    fake_provider.script(Reply.text("a"), Reply.text("b"), Reply.text("c"))
    run_agent_here(["-p", "x"], home=home, cwd=ws, OPENAI_API_KEY="k")
    run_agent_here(["-p", "x"], home=home, cwd=ws, OPENAI_API_KEY="k", AGENT_MODEL="from-env")
    run_agent_here(["-p", "x", "--model", "from-flag"], home=home, cwd=ws, OPENAI_API_KEY="k",
                   AGENT_MODEL="from-env")
    assert [r.body["model"] for r in fake_provider.requests] == ["from-file", "from-env",
                                                                 "from-flag"]


def test_provider_error_exit_code_1(dirs, fake_provider):
    home, ws = dirs
    fake_provider.script(Reply.error(401, message="Incorrect API key provided"))
    proc = run_agent_here(["-p", "hi", "--provider", "openai", "--base-url",
                           fake_provider.openai_url, "--model", "m"], home=home, cwd=ws,
                          OPENAI_API_KEY="bad")
    assert proc.returncode == 1
    assert "[error]" in proc.stderr and "Incorrect API key provided" in proc.stderr


def test_step_cap_exit_code_3(dirs, fake_provider):
    home, ws = dirs
    fake_provider.script(Reply.tool_call("current_time", {}, id="a"),
                         Reply.tool_call("current_time", {}, id="b"))
    proc = run_agent_here(["-p", "loop", "--max-steps", "2", "--provider", "openai", "--base-url",
                           fake_provider.openai_url, "--model", "m"], home=home, cwd=ws,
                          OPENAI_API_KEY="x")
    assert proc.returncode == 3, proc.stderr


def test_disabling_time_removes_current_time_from_the_request(dirs, fake_provider):
    home, ws = dirs
    fake_provider.script(Reply.text("a"), Reply.text("b"))
    base = ["-p", "x", "--provider", "openai", "--base-url", fake_provider.openai_url,
            "--model", "m"]
    run_agent_here(base, home=home, cwd=ws, OPENAI_API_KEY="x")
    proc = run_agent_here(["plugins", "disable", "time"], home=home, cwd=ws)
    assert proc.returncode == 0, proc.stderr
    run_agent_here(base, home=home, cwd=ws, OPENAI_API_KEY="x")
    names = [{t["function"]["name"] for t in r.body.get("tools", [])}
             for r in fake_provider.requests]
    assert "current_time" in names[0] and "current_time" not in names[1]


def test_a_local_endpoint_needs_no_api_key(dirs, fake_provider):
    home, ws = dirs
    fake_provider.script(Reply.text("local"))
    proc = run_agent_here(["-p", "hi", "--provider", "openai", "--base-url",
                           fake_provider.openai_url, "--model", "m"], home=home, cwd=ws)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "local\n"
