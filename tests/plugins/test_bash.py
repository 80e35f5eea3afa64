"""The bash tool: real processes, real process groups, real signals."""

from __future__ import annotations

import asyncio
import os
import time
import tracemalloc
from pathlib import Path

import pytest
from waiting import LoopClock, until

from agent import Effects
from agent.contract.messages import Message, TextPart, ToolCallPart
from agent.contract.providers import StepFinished, Usage
from agent.loop.session import TURN_ABORTED, Runtime, Session
from agent.testing import make_boot, run_tool, tool_context

INTERRUPTED = "The user interrupted this command. It did not finish, so its effects are unknown."


@pytest.fixture(autouse=True)
def quiet_home(tmp_path, monkeypatch):
    # A bare HOME: nothing of the user's own files reaches the commands under test.
    home = tmp_path / "userhome"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))


@pytest.fixture
def boot(tmp_path):
    workspace = tmp_path / "ws"
    workspace.mkdir()
    config, hooks = make_boot(workspace, tmp_path / "agenthome", builtins=["bash"])
    return config, hooks, hooks.tools(config)["bash"]


# ---- process inspection ---------------------------------------------------------------------

def marked(token: str) -> dict[int, str]:
    """Live ``sleep`` processes whose command line carries ``token``: pid -> command name.
    Found through the host's /proc, so it works whatever PID namespace the command runs in."""
    found: dict[int, str] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            argv = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        comm = stat[stat.index("(") + 1:stat.rindex(")")]
        state = stat[stat.rindex(")") + 2:].split()[0]
        if comm == "sleep" and state != "Z" and any(token.encode() in a for a in argv):
            found[int(entry.name)] = comm
    return found


def alive(pid: int) -> bool:
    """Exists and is not a zombie (a zombie is dead; only its parent has not reaped it)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


_tokens = iter(range(10_000))


def new_token() -> str:
    return f"{os.getpid() % 100000}{next(_tokens):04d}"


async def wait_for_sleepers(token: str, count: int = 4) -> tuple[str, dict[int, str]]:
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        members = marked(token)
        if len(members) >= count:
            return token, members
        await asyncio.sleep(0.02)
    raise AssertionError("the process tree never started")


# Four sleepers: one that left the session (setsid), one nohup'd into the background, and
# two in a nested shell.  Every one must end on a timeout or ctrl-c.
TREE = ("echo started; setsid sleep 30.{pgid}1 & nohup sleep 30.{pgid}2 >/dev/null 2>&1 & "
        "bash -c 'sleep 30.{pgid}3 & sleep 30.{pgid}4'")


# ---- results ----------------------------------------------------------------------------------

async def test_exit_code_stdout_stderr_sections_and_summary(boot):
    config, _, bash = boot
    result = await run_tool(bash, {"command": "echo one; echo two; echo oops >&2; exit 3"},
                            config)
    assert result.output == "exit: 3\nstdout:\none\ntwo\nstderr:\noops"
    assert result.summary == "exit 3, 3 lines out"
    assert not result.is_error


async def test_empty_sections_are_left_out(boot):
    config, _, bash = boot
    assert (await run_tool(bash, {"command": "true"}, config)).output == "exit: 0"
    only_err = await run_tool(bash, {"command": "echo bad >&2; false"}, config)
    assert only_err.output == "exit: 1\nstderr:\nbad"


async def test_runs_in_the_workspace_with_bash(boot):
    config, _, bash = boot
    result = await run_tool(bash, {"command": "pwd; echo $BASH_VERSION > made.txt"}, config)
    assert result.output.splitlines()[2] == str(config.workspace)
    assert (config.workspace / "made.txt").read_text().strip()[0].isdigit()


async def test_stdin_is_empty_so_reading_it_does_not_hang(boot):
    config, _, bash = boot
    result = await run_tool(bash, {"command": "cat; echo after"}, config)
    assert result.output == "exit: 0\nstdout:\nafter"  # cat saw EOF: not killed at a timeout


async def test_killed_by_a_signal_is_reported(tmp_path):
    workspace = tmp_path / "ws"
    workspace.mkdir()
    config, hooks = make_boot(workspace, tmp_path / "agenthome", builtins=["bash"],
                              file_data={"sandbox": "off"})
    bash = hooks.tools(config)["bash"]
    result = await run_tool(bash, {"command": "echo before; kill -KILL $$"}, config)
    assert result.output.startswith("exit: 137 (killed by SIGKILL)\nstdout:\nbefore")
    assert result.summary == "killed by SIGKILL, 1 line out"


async def test_killed_by_a_signal_in_the_sandbox_is_the_shells_exit_status(boot):
    # The sandbox's init reports a command killed by signal N as exit 128+N, as a shell does.
    config, _, bash = boot
    result = await run_tool(bash, {"command": "echo before; kill -KILL $$"}, config)
    assert result.output.startswith("exit: 137\nstdout:\nbefore")


async def test_invalid_utf8_is_replaced_not_fatal(boot):
    config, _, bash = boot
    result = await run_tool(bash, {"command": r"printf 'ok \xff\xfe end\n'; printf '\xc3' >&2"},
                            config)
    assert "ok \ufffd\ufffd end" in result.output
    assert result.output.endswith("stderr:\n\ufffd")


async def test_multibyte_characters_split_across_reads_survive(boot):
    config, _, bash = boot
    # 70,000 two-byte characters cross several 64 KiB reads at odd offsets.
    result = await run_tool(bash, {"command": "printf 'x'; for i in $(seq 7); do "
                                              "printf 'é%.0s' $(seq 10000); done"}, config)
    assert "\ufffd" not in result.output
    assert result.output.endswith("é" * 100)


async def test_huge_output_keeps_a_bounded_tail_and_bounded_memory(boot):
    config, _, bash = boot
    emitted: list[str] = []
    tracemalloc.start()
    try:
        result = await run_tool(
            bash, {"command": "yes 'line of output' | head -c 50000000; echo; echo THE-END"},
            config, output=emitted)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 12_000_000, f"peak {peak} bytes for 50 MB of output"
    assert len(result.output) < 30_000
    assert "earlier chars not shown" in result.output
    assert result.output.endswith("THE-END")
    assert sum(len(c) for c in emitted) < 5_000_000  # live output is batched, not copied whole
    assert emitted[-1].endswith("THE-END\n")


async def test_output_streams_live_before_the_command_ends(boot):
    """The command prints, then waits for a file that the test creates only once that
    output reached it: it can only go on if its output streamed live (else it gives up
    after 10 s and says so)."""
    config, _, bash = boot
    go = config.workspace / "go"
    chunks: list[str] = []

    class Sink(list):
        def append(self, chunk):
            chunks.append(chunk)
            if "first" in "".join(chunks):
                go.touch()

    ctx = tool_context(config, "bash", {}, output=Sink())
    command = ("echo first; i=0; while [ ! -e go ] && [ $i -lt 1000 ]; do sleep 0.01; "
               "i=$((i+1)); done; if [ -e go ]; then echo second; else echo 'no go'; fi")
    result = await bash.run({"command": command}, ctx)
    assert result.output == "exit: 0\nstdout:\nfirst\nsecond"


# The tool's timeout is kept on the event loop's clock: a test moves it past the timeout
# (LoopClock.fire) once the command's processes are seen, since its wait began after `asked`
# and before they started, unless the real second is (nearly) up already.


async def test_timeout_kills_the_whole_group(boot, tmp_path):
    config, _, bash = boot
    pgid_file = new_token()
    clock = LoopClock()
    asked = time.monotonic()
    task = asyncio.create_task(run_tool(
        bash, {"command": TREE.format(pgid=pgid_file), "timeout": 1000}, config))
    _, members = await wait_for_sleepers(pgid_file)
    clock.fire(asked, 1.0)
    result = await task
    assert result.output.startswith("exit: 143 (killed by SIGTERM; timeout is 1000ms)")
    assert "started" in result.output
    assert result.summary == "killed by SIGTERM (timeout), 1 line out"
    assert not [pid for pid in members if alive(pid)]


async def test_timeout_escalates_to_sigkill_when_term_is_ignored(boot):
    config, _, bash = boot
    token = new_token()
    clock = LoopClock()
    asked = time.monotonic()
    task = asyncio.create_task(run_tool(
        bash, {"command": f"trap '' TERM; sleep 20.{token}; echo survived", "timeout": 1000},
        config))
    # The trap is set once the sleep runs (it came first).
    await until(lambda: marked(token) or task.done(), "the command's sleep")
    clock.fire(asked, 1.0)
    result = await task
    # Killed, not waited out: a SIGKILL after the sleep ended would find "survived" printed.
    assert result.output.startswith("exit: 137 (killed by SIGKILL; timeout is 1000ms)")
    assert "survived" not in result.output


async def test_timeout_outside_the_range_is_refused_before_running(boot):
    config, _, bash = boot
    for bad in (999, 600_001):
        result = await run_tool(bash, {"command": "touch ran", "timeout": bad}, config)
        assert result.is_error and "Invalid arguments for bash" in result.output
    assert not (config.workspace / "ran").exists()


async def test_missing_bash_and_missing_workspace_are_told_apart(boot, tmp_path, monkeypatch):
    config, _, bash = boot
    path = os.environ["PATH"]
    monkeypatch.setenv("PATH", str(tmp_path / "no-bin-here"))
    result = await run_tool(bash, {"command": "true"}, config)
    assert result.is_error and result.output == "bash is not installed or not on PATH."
    monkeypatch.setenv("PATH", path)
    config.workspace.rmdir()
    result = await run_tool(bash, {"command": "true"}, config)
    assert result.is_error and result.output == (
        f"The workspace {config.workspace} no longer exists.")


def test_effects_are_the_command_and_the_tool_is_core(boot):
    _, _, bash = boot
    assert bash.effects({"command": "ls -la"}) == Effects(command="ls -la")
    assert bash.tool_set == "core"
    assert not bash.read_only


async def test_cancelled_without_a_session_kills_the_tree_and_reraises(boot, tmp_path):
    config, _, bash = boot
    pgid_file = new_token()
    ctx = tool_context(config, "bash", {})
    task = asyncio.create_task(bash.run({"command": TREE.format(pgid=pgid_file)}, ctx))
    _, members = await wait_for_sleepers(pgid_file)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert not [pid for pid in members if alive(pid)]


# ---- ctrl-c through a real session ------------------------------------------------------------

class ScriptedProvider:
    """A provider answering each step with the next prepared assistant message."""

    label = "scripted"

    def __init__(self, *messages: Message) -> None:
        self.messages = list(messages)
        self.requests: list = []

    async def stream(self, request):
        self.requests.append(request)
        yield StepFinished(self.messages.pop(0), Usage())

    async def list_models(self):
        return []


async def approve(request):
    return "yes"


def bash_call(command: str) -> Message:
    return Message("assistant", [ToolCallPart("call_1", "bash", {"command": command})])


async def test_ctrl_c_kills_every_process_fast_and_the_turn_goes_on(boot, tmp_path):
    """Fast means killed, not waited out: beside the tree, a process that would leave a
    marker after 5 s (the tree's own sleepers take 30 s); when the error arrives, every
    process is gone and that marker was never made."""
    config, hooks, _ = boot
    pgid_file = new_token()
    waited = config.workspace / "waited-out"
    command = f"(sleep 5.{pgid_file}5 && touch waited-out) & " + TREE.format(pgid=pgid_file)
    provider = ScriptedProvider(bash_call(command),
                                Message("assistant", [TextPart("ok, stopped")]))
    session = Session(Runtime(config, hooks, hooks.tools(config), provider, approver=approve))
    members: dict[int, str] = {}
    interrupted = False
    events = []
    async for event in session.run("run it"):
        events.append(event)
        if event.type == "tool-output" and not interrupted:
            _, members = await wait_for_sleepers(pgid_file, 5)
            interrupted = True
            assert session.interrupt_tools() == ["call_1"]
        if event.type == "tool-error":
            survivors = [pid for pid in members if alive(pid)]
            assert not survivors, f"still running after ctrl-c: {survivors}"
            assert not waited.exists(), "the command was waited out, not killed"
    assert interrupted
    assert len([n for n in members.values() if n == "sleep"]) >= 4
    error = next(e for e in events if e.type == "tool-error")
    assert error.error.startswith(INTERRUPTED + "\nstdout:\nstarted")
    assert events[-1].type == "done" and events[-1].reason == "end"  # the turn went on
    sent = provider.requests[1].messages[-1].tool_results[0]
    assert sent.is_error and sent.output.startswith(INTERRUPTED)


async def test_ctrl_c_before_any_output_says_so(boot, tmp_path):
    config, hooks, _ = boot
    pgid_file = new_token()
    provider = ScriptedProvider(bash_call(f"sleep 30.{pgid_file}1 & sleep 30.{pgid_file}2"),
                                Message("assistant", [TextPart("ok")]))
    session = Session(Runtime(config, hooks, hooks.tools(config), provider, approver=approve))

    async def press_ctrl_c():
        await wait_for_sleepers(pgid_file, 2)
        session.interrupt_tools()

    presser = asyncio.create_task(press_ctrl_c())
    events = [event async for event in session.run("go")]
    await presser
    error = next(e for e in events if e.type == "tool-error")
    assert error.error == f"{INTERRUPTED}\n(no output before it was killed)"


async def test_aborting_the_turn_kills_the_tree_and_records_an_aborted_call(boot, tmp_path):
    config, hooks, _ = boot
    pgid_file = new_token()
    provider = ScriptedProvider(bash_call(TREE.format(pgid=pgid_file)))
    session = Session(Runtime(config, hooks, hooks.tools(config), provider, approver=approve))

    async def consume():
        async for _ in session.run("go"):
            pass

    turn = asyncio.create_task(consume())
    _, members = await wait_for_sleepers(pgid_file)
    turn.cancel()
    with pytest.raises(asyncio.CancelledError):
        await turn
    assert not [pid for pid in members if alive(pid)]
    answered = session.messages[-1].tool_results[0]
    # The note, then what the command printed before the turn was cancelled.
    assert answered.output == f"{TURN_ABORTED}\nOutput so far:\nstarted\n"


async def test_ctrl_c_after_a_flood_keeps_the_whole_note_and_the_newest_output(boot, tmp_path):
    config, hooks, _ = boot
    token = new_token()
    # Past what bash keeps of a stream (1,000,000 characters), so the head is dropped.
    flood = (f"for i in $(seq 1 30000); do echo line-$i-of-output-that-is-long-enough; done; "
             f"echo LAST-LINE; sleep 30.{token}1")
    provider = ScriptedProvider(bash_call(flood), Message("assistant", [TextPart("ok")]))
    session = Session(Runtime(config, hooks, hooks.tools(config), provider, approver=approve))

    async def press_ctrl_c():
        await wait_for_sleepers(token, 1)
        session.interrupt_tools()

    presser = asyncio.create_task(press_ctrl_c())
    events = [event async for event in session.run("go")]
    await presser
    error = next(e for e in events if e.type == "tool-error").error
    assert error.startswith(INTERRUPTED + "\nstdout:\n")  # the note, whole, first
    assert error.rstrip().endswith("LAST-LINE")  # the newest output kept
    assert "earlier chars not shown" in error
    sent = provider.requests[1].messages[-1].tool_results[0].output
    assert sent.startswith(INTERRUPTED) and sent.rstrip().endswith("LAST-LINE")
    assert len(sent) <= 30_000
