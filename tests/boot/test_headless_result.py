"""``agent -p`` as a building block: piped stdin, the final ``result`` record, output
formats and sessions named by id.  The real CLI, the real SDKs, the fake provider."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest
from clirun import agent_env, run_agent_here
from fakeprovider import Reply

SCHEMA = jsonschema.Draft202012Validator(
    json.loads((Path(__file__).parents[2] / "docs/events.schema.json").read_text()))


@pytest.fixture
def dirs(tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    return tmp_path / "home", ws


def agent_p(fake_provider, args, home, ws, *, input=None, model="m", **env):
    return run_agent_here(["-p", *args, "--provider", "openai", "--base-url",
                           fake_provider.openai_url, "--model", model],
                          home=home, cwd=ws, input=input, OPENAI_API_KEY="x",
                          AGENT_OPENAI_API="chat", **env)


def user_text(request) -> str:
    content = request.body["messages"][-1]["content"]
    return content if isinstance(content, str) else json.dumps(content)


def events_of(proc) -> list[dict]:
    events = [json.loads(line) for line in proc.stdout.splitlines()]
    for event in events:
        SCHEMA.validate(event)
    return events


# ---- piped stdin ------------------------------------------------------------------------------


def test_piped_stdin_is_attached_to_the_prompt(dirs, fake_provider):
    home, ws = dirs
    fake_provider.script(Reply.text("looks fine"))
    proc = agent_p(fake_provider, ["review this"], home, ws,
                   input="diff --git a/x b/x\n+new line\n")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "looks fine\n"
    assert user_text(fake_provider.requests[0]) == (
        "review this\n\n<stdin>\ndiff --git a/x b/x\n+new line\n</stdin>")


def test_mentions_in_piped_text_attach_nothing(dirs, fake_provider):
    home, ws = dirs
    (ws / "private.txt").write_text("PRIVATE CONTENTS\n")
    fake_provider.script(Reply.text("a"), Reply.text("b"))
    piped = agent_p(fake_provider, ["summarise"], home, ws, input="see @private.txt\n")
    typed = agent_p(fake_provider, ["summarise @private.txt"], home, ws, input="extra\n")
    assert piped.returncode == typed.returncode == 0, (piped.stderr, typed.stderr)
    first, second = (user_text(r) for r in fake_provider.requests)
    assert first == "summarise\n\n<stdin>\nsee @private.txt\n</stdin>"
    assert "PRIVATE CONTENTS" in second and second.endswith("<stdin>\nextra\n</stdin>")


def test_no_stdin_leaves_the_pipe_out(dirs, fake_provider):
    home, ws = dirs
    fake_provider.script(Reply.text("ok"))
    proc = agent_p(fake_provider, ["just this", "--no-stdin"], home, ws, input="ignored text")
    assert proc.returncode == 0, proc.stderr
    assert user_text(fake_provider.requests[0]) == "just this"


def test_piped_input_over_the_cap_is_cut_at_a_line_with_a_note(dirs, fake_provider):
    home, ws = dirs
    fake_provider.script(Reply.text("ok"))
    piped = "".join(f"line {i:03}\n" for i in range(100))  # 9 bytes a line, 900 in all
    proc = agent_p(fake_provider, ["summarise"], home, ws, input=piped,
                   AGENT_STDIN_MAX_BYTES="50")
    assert proc.returncode == 0, proc.stderr
    sent = user_text(fake_provider.requests[0])
    assert sent.startswith("summarise\n\n<stdin>\nline 000\nline 001\nline 002\n"
                           "line 003\nline 004\n</stdin>\n")
    assert "line 005" not in sent
    assert "first 45 of 900 bytes" in sent and "855 bytes were left out" in sent


def test_binary_stdin_is_refused_before_any_request(dirs, fake_provider):
    home, ws = dirs
    proc = agent_p(fake_provider, ["what is this"], home, ws, input="PK\x03\x04\x00\x00junk")
    assert proc.returncode == 2
    assert "stdin is binary data" in proc.stderr and "--no-stdin" in proc.stderr
    assert fake_provider.requests == []


def test_the_prompt_itself_from_stdin_still_works(dirs, fake_provider):
    home, ws = dirs
    fake_provider.script(Reply.text("done"))
    proc = agent_p(fake_provider, [], home, ws, input="the task, from a file\n")
    assert proc.returncode == 0, proc.stderr
    assert user_text(fake_provider.requests[0]) == "the task, from a file\n"


def test_no_banner_on_stderr_without_verbose(dirs, fake_provider):
    home, ws = dirs
    fake_provider.script(Reply.text("a"), Reply.text("b"))
    quiet = agent_p(fake_provider, ["hi"], home, ws)
    loud = agent_p(fake_provider, ["hi", "-v"], home, ws)
    assert quiet.returncode == loud.returncode == 0, (quiet.stderr, loud.stderr)
    assert "headless mode denies" not in quiet.stderr
    assert "headless mode denies" in loud.stderr
    assert loud.stdout == "b\n"  # -v with -p is verbose, not --version


# ---- the result record ------------------------------------------------------------------------


def test_result_of_a_tool_using_run_has_every_field(dirs, fake_provider):
    home, ws = dirs
    usage = {"input_tokens": 1000, "output_tokens": 200, "cached_tokens": 400,
             "reasoning_tokens": 30}
    fake_provider.script(
        Reply(text="Writing it. ", tool_calls=[("write_file", {"path": "notes.txt",
                                                               "content": "hi\n"}, "w1")],
              usage=usage),
        Reply.tool_call("bash", {"command": "rm -rf /tmp/nothing-here"}, id="b1",
                        usage=usage),
        Reply.text("Wrote notes.txt.", usage=usage))
    proc = agent_p(fake_provider, ["write notes", "--output-format", "stream-json",
                                   "--allow", "write_file"], home, ws, model="gpt-5")
    assert proc.returncode == 0, proc.stderr
    events = events_of(proc)
    assert [e["type"] for e in events][-2:] == ["done", "result"]
    assert [e["type"] for e in events].count("result") == 1
    result = events[-1]
    # gpt-5 at its list price: 1.25 $/M input, 0.125 $/M cached input, 10 $/M output
    step = (600 * 1.25 + 400 * 0.125 + 200 * 10) / 1e6
    assert result["cost_usd"] == pytest.approx(3 * step)
    assert result["total_cost_usd"] == pytest.approx(3 * step)
    assert result["usage"] == {"input_tokens": 3000, "output_tokens": 600,
                               "cache_read_input_tokens": 1200,
                               "cache_creation_input_tokens": 0, "reasoning_tokens": 90}
    assert result["files_changed"] == ["notes.txt"]
    assert (ws / "notes.txt").read_text() == "hi\n"
    assert result["result"] == "Wrote notes.txt."
    assert (result["subtype"], result["is_error"], result["stop_reason"],
            result["exit_code"]) == ("success", False, "denied", 0)
    assert result["num_steps"] == result["num_turns"] == 3
    assert isinstance(result["duration_ms"], int) and result["duration_ms"] >= 0
    (denial,) = result["permission_denials"]
    assert denial["tool_name"] == "bash" and denial["tool_use_id"] == "b1"
    assert denial["tool_input"] == {"command": "rm -rf /tmp/nothing-here"}

    # the session id in the record is the one -r continues
    fake_provider.script(Reply.text("again"))
    again = agent_p(fake_provider, ["-r", result["session_id"], "go on", "--output-format",
                                    "json"], home, ws)
    assert again.returncode == 0, again.stderr
    assert f"agent: session {result['session_id']}" in again.stderr
    (record,) = events_of(again)
    assert record["session_id"] == result["session_id"]
    sent = [m.get("content") for m in fake_provider.requests[-1].body["messages"]]
    assert "write notes" in sent and "go on" in sent


def test_output_format_json_prints_one_object(dirs, fake_provider):
    home, ws = dirs
    fake_provider.script(Reply.text("forty-two"))
    proc = agent_p(fake_provider, ["the answer?", "--output-format", "json"], home, ws)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.count("\n") == 1
    (result,) = events_of(proc)
    assert result["type"] == "result" and result["result"] == "forty-two"
    assert (result["subtype"], result["stop_reason"], result["files_changed"]) == (
        "success", "done", [])
    assert result["cost_usd"] is None  # model "m" has no price


@pytest.mark.parametrize("flag", ["--max-steps", "--max-turns"])  # the second: Claude Code's
def test_result_of_a_step_capped_run_is_an_error_with_its_exit_code(dirs, fake_provider, flag):
    home, ws = dirs
    fake_provider.script(Reply.tool_call("current_time", {}, id="a"),
                         Reply.tool_call("current_time", {}, id="b"))
    proc = agent_p(fake_provider, ["loop", flag, "2", "--output-format", "json"], home, ws)
    assert proc.returncode == 3, proc.stderr
    (result,) = events_of(proc)
    assert (result["subtype"], result["is_error"], result["stop_reason"],
            result["exit_code"], result["num_steps"], result["num_turns"]) == (
        "error_max_turns", True, "max_steps", 3, 2, 2)
    assert len(fake_provider.requests) == 2


def test_json_alias_is_stream_json(dirs, fake_provider):
    home, ws = dirs
    fake_provider.script(Reply.text("a"), Reply.text("a"))
    old = agent_p(fake_provider, ["x", "--json"], home, ws)
    new = agent_p(fake_provider, ["x", "--output-format", "stream-json"], home, ws)
    shape = [[e["type"] for e in events_of(p)] for p in (old, new)]
    assert shape[0] == shape[1] and shape[0][-2:] == ["done", "result"]
    clash = agent_p(fake_provider, ["x", "--json", "--output-format", "text"], home, ws)
    assert clash.returncode == 2 and "--json" in clash.stderr


# ---- sessions by id -----------------------------------------------------------------------


def test_session_id_creates_then_continues_exactly_that_session(dirs, fake_provider):
    home, ws = dirs
    sid = "7d3f0a8e-5b1c-4c2d-9e8f-0a1b2c3d4e5f"
    fake_provider.script(Reply.text("first"), Reply.text("second"), Reply.text("other"))
    one = agent_p(fake_provider, ["one", "--session-id", sid, "--output-format", "json"],
                  home, ws)
    assert one.returncode == 0, one.stderr
    assert events_of(one)[0]["session_id"] == sid
    other = agent_p(fake_provider, ["unrelated"], home, ws)  # newest for -c now
    assert other.returncode == 0, other.stderr
    two = agent_p(fake_provider, ["two", "--session-id", sid.upper(), "--output-format",
                                  "json"], home, ws)
    assert two.returncode == 0, two.stderr
    assert events_of(two)[0]["session_id"] == sid
    sent = [m.get("content") for m in fake_provider.requests[-1].body["messages"]]
    assert "one" in sent and "two" in sent and "unrelated" not in sent

    listed = run_agent_here(["sessions", "--json"], home=home, cwd=ws)
    assert listed.returncode == 0, listed.stderr
    rows = json.loads(listed.stdout)
    assert [r["session_id"] for r in rows][0] == sid  # the last one written comes first
    mine = next(r for r in rows if r["session_id"] == sid)
    assert mine["message_count"] == 4 and mine["cwd"] == str(ws.resolve())


def test_continue_prints_the_session_id_it_used(dirs, fake_provider):
    home, ws = dirs
    fake_provider.script(Reply.text("a"), Reply.text("b"))
    first = agent_p(fake_provider, ["hello", "--output-format", "json"], home, ws)
    sid = events_of(first)[0]["session_id"]
    assert "agent: session" not in first.stderr
    again = agent_p(fake_provider, ["-c", "more", "--output-format", "json"], home, ws)
    assert again.returncode == 0, again.stderr
    assert f"agent: session {sid}\n" in again.stderr
    assert events_of(again)[0]["session_id"] == sid


@pytest.mark.parametrize("bad", ["Has Capitals", "../escape", "x" * 65, ""])
def test_a_bad_session_id_is_refused(dirs, fake_provider, bad):
    home, ws = dirs
    proc = agent_p(fake_provider, ["hi", "--session-id", bad], home, ws)
    assert proc.returncode == 2 and "--session-id" in proc.stderr
    assert fake_provider.requests == []


def test_files_a_command_changed_are_in_the_result(dirs, fake_provider):
    """The undo plugin's answer to ``agent_turn_files_changed`` covers a shell command's
    writes, which no call declared."""
    home, ws = dirs
    (ws / "kept.txt").write_text("same\n")
    fake_provider.script(Reply.tool_call("bash", {"command": "touch made.txt"}, id="t1"),
                         Reply.text("made it"))
    proc = agent_p(fake_provider, ["make a file", "--output-format", "json", "--allow",
                                   "bash:touch *", "--permission-mode", "accept-edits"],
                   home, ws)
    assert proc.returncode == 0, proc.stderr
    (result,) = events_of(proc)
    assert (ws / "made.txt").exists()
    assert result["files_changed"] == ["made.txt"]
    assert result["permission_denials"] == [] and result["stop_reason"] == "done"



@pytest.mark.e2e
def test_a_pipe_nobody_writes_is_not_waited_on_forever(dirs, fake_provider):
    """A program that starts ``agent -p PROMPT`` with a stdin pipe it never writes nor
    closes: the run goes on without stdin, and says so."""
    home, ws = dirs
    fake_provider.script(Reply.text("went on"))
    proc = subprocess.Popen(
        [sys.executable, "-m", "agent", "-p", "hello", "--provider", "openai", "--base-url",
         fake_provider.openai_url, "--model", "m"], cwd=ws,
        env=agent_env(home, OPENAI_API_KEY="x", AGENT_OPENAI_API="chat"),
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        assert proc.wait(timeout=60) == 0  # stdin still open, never written
        out, err = proc.stdout.read().decode(), proc.stderr.read().decode()
    finally:
        proc.stdin.close()
        if proc.poll() is None:
            proc.kill()
    assert out == "went on\n"
    assert "no stdin data arrived" in err and "--no-stdin" in err
    assert user_text(fake_provider.requests[0]) == "hello"
