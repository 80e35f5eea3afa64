"""The guard contract fails closed: third-party guards that raise, hang or answer garbage
never let a call through, and never stop the session; a guard that cannot be registered
(``async def``, an import error, a hook that does not fit its spec) keeps the agent from
starting until it is fixed or disabled by name.

Each misbehaving guard is a real distribution on PYTHONPATH (a module plus dist-info entry
points), loaded like any installed plugin by the real CLI (``agent.cli.main`` in this process,
``run_agent_here``: the PYTHONPATH site leads ``sys.path`` as in a new interpreter, and its
modules are forgotten after the run).  The oracles: the
victim file's bytes, a marker file a shell command would create, the exit code.
"""

from __future__ import annotations

import contextlib
import json
import textwrap
import time

import pytest
from clirun import run_agent_here
from fakeprovider import Reply
from waiting import LoopClock, LoopClocks, beside, until, wait_until

from agent.contract.tools import Effects, ToolCall

VICTIM = b"precious bytes\n"

FACTORIES = {
    "raises": "raise RuntimeError('guard crashed')",
    "exits": "raise SystemExit(3)",
    "hangs": "threading.Event().wait()",
    "sleeps": "time.sleep(3600)",
    "string": "return 'deny'",
    "allow_string": "return 'allow'",
    "dict": "return {'decision': 'deny', 'reason': 'no'}",
    "bad_decision": "return Verdict('nope', 'malformed')",
    "bad_reason": "return Verdict('deny', None)",
    "coroutine": "async def later():\n    return None\nreturn later()",
}


def make_guard_dist(site, name: str, body: str, *, is_async: bool = False) -> None:
    """A plugin distribution whose only hook is a guard with ``body``; the guard first notes
    the call's id in ``site/<name>.entered`` (see :func:`entered`)."""
    source = "\n".join([
        f'"""A guard that misbehaves: {name}."""',
        "import threading",
        "import time",
        "from agent import Verdict, hookimpl",
        "@hookimpl",
        f"{'async ' if is_async else ''}def agent_guard_tool_call(call, effects, session):",
        f"    open({str(site / f'{name}.entered')!r}, 'a').write(call.id + '\\n')",
        textwrap.indent(body, "    "), ""])
    (site / f"{name}.py").write_text(source)
    info = site / f"{name}-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(f"[agent.plugins]\n{name} = {name}\n")


#: The guard timeout: far beyond what a guard that answers takes on any loaded machine (the
#: builtin ones too), and fired for a guard that hangs by moving the clock of the run's event
#: loop past it (``hung_guard_times_out``), not waited for.
LONG = 30
#: How much further the clock is moved: the timeout's wait begins just after the guard's
#: thread was started, which may be after the guard noted its call.
SLACK = 5

HANGING = {"hangs", "sleeps"}


def entered(site, name: str) -> list[str]:
    """The ids of the calls guard ``name`` was asked about so far."""
    path = site / f"{name}.entered"
    return path.read_text().split() if path.exists() else []


@contextlib.contextmanager
def hung_guard_times_out(monkeypatch, site, name: str, fake_provider):
    """While the block runs the CLI: once guard ``name`` is hung on a call, move the run's
    clock past its timeout (the guard's wait is on the run's event loop)."""
    clocks = LoopClocks(monkeypatch)

    def fire() -> None:
        wait_until(lambda: entered(site, name), f"guard {name} to be asked")
        clocks.move_past(time.monotonic(), LONG + SLACK)

    with beside(fire, unblock=fake_provider.stop):
        yield


@pytest.fixture
def world(tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "victim.txt").write_bytes(VICTIM)
    home = tmp_path / "home"
    home.mkdir()
    (home / "config.toml").write_text(f"guard_timeout = {LONG}\n")
    site = tmp_path / "site"
    site.mkdir()
    return ws, home, site


def hostile_script(fake_provider, ws):
    marker = ws.parent / "marker"
    fake_provider.script(
        Reply(tool_calls=[("write_file", {"path": "victim.txt", "content": "overwritten"}, "w1"),
                          ("bash", {"command": f"touch {marker}"}, "b1")]),
        Reply(tool_calls=[("edit_file", {"path": "victim.txt", "oldString": "precious",
                                         "newString": "ruined"}, "e1")]),
        Reply.text("finished"))
    return marker


def run(fake_provider, ws, home, site, *extra):
    return run_agent_here(["-p", "go", "--json", "--yolo", "--provider", "openai", "--base-url",
                           fake_provider.openai_url, "--model", "m", *extra],
                          home=home, cwd=ws, PYTHONPATH=str(site), OPENAI_API_KEY="x")


def events_of(proc):
    return [json.loads(line) for line in proc.stdout.splitlines()]


@pytest.mark.parametrize("kind", sorted(FACTORIES))
def test_a_misbehaving_guard_denies_every_call_and_the_session_finishes(
        world, fake_provider, kind, monkeypatch):
    ws, home, site = world
    name = f"bad_{kind}"
    make_guard_dist(site, name, FACTORIES[kind])
    marker = hostile_script(fake_provider, ws)
    with (hung_guard_times_out(monkeypatch, site, name, fake_provider) if kind in HANGING
          else contextlib.nullcontext()):
        proc = run(fake_provider, ws, home, site)
    assert proc.returncode == 0, proc.stderr
    assert (ws / "victim.txt").read_bytes() == VICTIM
    assert not marker.exists()
    events = events_of(proc)
    denied = [e for e in events if e["type"] == "tool-denied"]
    assert [e["id"] for e in denied] == ["w1", "b1", "e1"]
    assert all(e["by"] == "guard" and name in e["reason"] for e in denied)
    assert events[-2]["type"] == "done" and events[-2]["reason"] == "end"
    assert events[-1]["type"] == "result" and events[-1]["stop_reason"] == "denied"
    # the plugin is reported once per kind of fault, with the reason
    notices = [e["text"] for e in events if e["type"] == "notice" and name in e["text"]]
    assert notices, events
    assert len(notices) == len(set(notices))
    assert len(notices) <= 2  # a hung guard: "did not answer", then "has not answered"
    # the model was told which plugin refused and why
    told = [m["content"] for m in fake_provider.requests[1].body["messages"]
            if m["role"] == "tool"]
    assert told and all(name in t for t in told)


@pytest.mark.parametrize("kind", ["string", "dict", "bad_decision"])
def test_a_garbage_answer_is_reported_with_what_it_was(world, fake_provider, kind):
    ws, home, site = world
    make_guard_dist(site, f"bad_{kind}", FACTORIES[kind])
    hostile_script(fake_provider, ws)
    proc = run(fake_provider, ws, home, site)
    notice = next(e["text"] for e in events_of(proc) if e["type"] == "notice")
    shown = {"string": "'deny' (a str)", "dict": "(a dict)",
             "bad_decision": "decision 'nope'"}[kind]
    assert shown in notice


def test_an_async_guard_is_refused_at_registration(world, fake_provider):
    ws, home, site = world
    make_guard_dist(site, "async_guard", "return Verdict.allow()", is_async=True)
    proc = run_agent_here(["plugins"], home=home, cwd=ws, PYTHONPATH=str(site))
    row = next(line for line in proc.stdout.splitlines() if line.startswith("async_guard"))
    assert "failed" in row and "async def" in row
    marker = hostile_script(fake_provider, ws)
    proc = run(fake_provider, ws, home, site)
    assert proc.returncode == 2  # a guard that cannot load: agent does not start
    assert "guard plugin async_guard cannot be loaded" in proc.stderr
    assert "async def" in proc.stderr and "--disable async_guard" in proc.stderr
    assert fake_provider.requests == [] and not marker.exists()
    assert (ws / "victim.txt").read_bytes() == VICTIM
    fake_provider.script(Reply.text("hi"))  # disabled by name, it runs without it
    proc = run(fake_provider, ws, home, site, "--disable", "async_guard")
    assert proc.returncode == 0, proc.stderr
    assert any(e["type"] == "done" for e in events_of(proc))


def _guard_plugin(site, name: str, source: str) -> None:
    (site / f"{name}.py").write_text(textwrap.dedent(source))
    info = site / f"{name}-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(f"[agent.plugins]\n{name} = {name}\n")


UNLOADABLE_GUARDS = {
    "import_error": ("""\
        \"\"\"A guard whose import fails.\"\"\"
        import no_such_module_anywhere
        from agent import hookimpl

        @hookimpl
        def agent_guard_tool_call(call, effects, session):
            return None
        """, "ModuleNotFoundError"),
    "wrong_signature": ("""\
        \"\"\"A guard whose hook does not fit its spec.\"\"\"
        from agent import hookimpl

        @hookimpl
        def agent_guard_tool_call(call, effects, session, extra):
            return None
        """, "extra"),
    "misspelt": ("""\
        \"\"\"A guard hook that does not exist.\"\"\"
        from agent import hookimpl

        @hookimpl
        def agent_guard_tool_calls(call, effects, session):
            return None
        """, "agent_guard_tool_calls"),
    "async_with_tool": ("""\
        \"\"\"An async guard with a tool.\"\"\"
        from agent import NO_EFFECTS, Tool, hookimpl

        @hookimpl
        def agent_register_tools(register, config):
            async def run(args, ctx):
                return "ran"
            register(Tool("asyncy_tool", "t", run, effects=lambda a: NO_EFFECTS))

        @hookimpl
        async def agent_guard_tool_call(call, effects, session):
            return None
        """, "async def"),
}


@pytest.mark.parametrize("kind", sorted(UNLOADABLE_GUARDS))
def test_a_guard_that_cannot_load_keeps_the_agent_from_starting(world, fake_provider, kind):
    """Exit 2 naming the plugin and why; no request, no tool call; then, disabled by name,
    the run goes on without it."""
    ws, home, site = world
    source, why = UNLOADABLE_GUARDS[kind]
    name = f"guard_{kind}"
    _guard_plugin(site, name, source)
    marker = hostile_script(fake_provider, ws)
    proc = run(fake_provider, ws, home, site)
    assert proc.returncode == 2, proc.stderr
    assert f"guard plugin {name} cannot be loaded" in proc.stderr and why in proc.stderr
    assert f"--disable {name}" in proc.stderr
    assert fake_provider.requests == [] and not marker.exists()
    assert (ws / "victim.txt").read_bytes() == VICTIM
    (home / "config.toml").write_text(f'guard_timeout = {LONG}\n[plugins]\ndisabled = ["{name}"]\n')
    proc = run(fake_provider, ws, home, site)
    assert proc.returncode == 0, proc.stderr
    names = {t["function"]["name"] for t in fake_provider.requests[0].body["tools"]}
    assert "asyncy_tool" not in names and "read_file" in names


def test_a_broken_plugin_that_is_no_guard_does_not_stop_the_run(world, fake_provider):
    ws, home, site = world
    _guard_plugin(site, "plain_broken", """\
        \"\"\"Fails to import; it has no guard.\"\"\"
        raise RuntimeError("boom")
        """)
    fake_provider.script(Reply.text("hi"))
    proc = run(fake_provider, ws, home, site)
    assert proc.returncode == 0, proc.stderr
    assert "plugin plain_broken failed to load" in proc.stderr


def test_a_hung_guard_does_not_stop_a_later_turn_or_the_builtin_guards(world, fake_provider,
                                                                       monkeypatch):
    """With a guard hung on an earlier call, the next calls are refused at once (no thread
    pile-up), the builtin guards still answer, and the process exits."""
    ws, home, site = world
    make_guard_dist(site, "hanger", "threading.Event().wait()")
    calls = [(("read_file", {"path": "victim.txt"}, f"r{i}")) for i in range(4)]
    fake_provider.script(Reply(tool_calls=calls), Reply.text("done"))
    with hung_guard_times_out(monkeypatch, site, "hanger", fake_provider):
        proc = run(fake_provider, ws, home, site)
    assert proc.returncode == 0, proc.stderr
    events = events_of(proc)
    denied = [e for e in events if e["type"] == "tool-denied"]
    assert [e["id"] for e in denied] == ["r0", "r1", "r2", "r3"]
    assert f"did not answer within {LONG} s" in denied[0]["reason"]
    assert entered(site, "hanger") == ["r0"]  # never asked again while hung
    assert all("has not answered an earlier call" in e["reason"] for e in denied[1:])
    assert not [e for e in events if e["type"] == "tool-result"]


def test_the_default_guard_timeout_is_two_seconds(tmp_path):
    from agent.testing import make_boot

    ws = tmp_path / "ws"
    ws.mkdir()
    config, _hooks = make_boot(ws, tmp_path / "home", builtins=[])
    assert config.get("guard_timeout") == 2.0


async def test_a_slow_guard_never_blocks_the_event_loop(tmp_path):
    """While a guard hangs, other tasks on the loop keep running (the screen keeps
    redrawing, ctrl-c is heard)."""
    import asyncio
    import threading

    from agent import hookimpl
    from agent.loop.gate import Gate
    from agent.testing import make_boot

    release = threading.Event()

    class Hanger:
        @hookimpl
        def agent_guard_tool_call(self, call, effects, session):
            release.wait()

    ws = tmp_path / "ws"
    ws.mkdir()
    config, hooks = make_boot(ws, tmp_path / "home", builtins=[], extra=[("hanger", Hanger())],
                              file_data={"guard_timeout": 30.0})
    gate = Gate(hooks, config, None)
    ticks = 0

    async def ticker():
        nonlocal ticks
        while True:
            ticks += 1
            if ticks == 20:
                release.set()  # the loop ran 20 times while the guard was still waiting
            await asyncio.sleep(0)

    task = asyncio.create_task(ticker())
    try:
        verdict, by = await gate._verdict(ToolCall("c", "t", {}), Effects(), None)
    finally:
        task.cancel()
    assert ticks >= 20
    assert by == "rule"  # the guard answered None once released: no fault


def test_policy_explain_times_out_a_hung_guard_too(world):
    ws, home, site = world
    # `policy explain` waits for guards without an event loop: on real time.
    (home / "config.toml").write_text("guard_timeout = 0.5\n")
    make_guard_dist(site, "hanger", "threading.Event().wait()")
    proc = run_agent_here(["policy", "explain", "read_file", '{"path": "victim.txt"}'],
                          home=home, cwd=ws, PYTHONPATH=str(site))
    assert proc.returncode == 0, proc.stderr
    assert "decision: deny" in proc.stdout and "hanger" in proc.stdout


@pytest.mark.parametrize("answer", ["deny", {"decision": "allow"}, None])
async def test_a_subagent_meets_the_same_fail_closed_guards(tmp_path, fake_provider, answer):
    """A garbage answer (or a hang) denies a subagent's call too, under --yolo."""
    import asyncio
    import threading

    from agent import hookimpl
    from agent.testing import collect, make_boot, make_session

    release, asked = threading.Event(), threading.Event()

    class Bad:
        @hookimpl
        def agent_guard_tool_call(self, call, effects, session):
            if call.name == "read_file":
                asked.set()
                if answer is None:
                    release.wait()  # hangs until the test ends
                return answer
            return None

    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "secret.txt").write_text("canary-4f1e\n")
    config, hooks = make_boot(ws, tmp_path / "home",
                              builtins=["openai", "files", "subagents"],
                              extra=[("bad", Bad())],
                              flags={"yolo": True}, file_data={"guard_timeout": LONG})
    fake_provider.script(
        Reply.tool_call("task", {"description": "read it", "prompt": "read secret.txt",
                                 "kind": "explore"}, id="t1"),
        Reply.tool_call("read_file", {"path": "secret.txt"}, id="r1"),
        Reply.text("could not read it"),
        Reply.text("done"))
    clock = LoopClock()
    try:
        turn = asyncio.ensure_future(collect(
            make_session(config, hooks, base_url=fake_provider.openai_url), "delegate"))
        if answer is None:  # hung: the timeout's wait is on this loop's clock
            await until(asked.is_set, "the guard to be asked")
            clock.move_past(time.monotonic(), LONG + SLACK)
        events = await turn
    finally:
        release.set()
    assert events[-1].type == "done" and events[-1].reason == "end"
    assert len(fake_provider.requests) == 4
    inner = [m["content"] for m in fake_provider.requests[2].body["messages"]
             if m["role"] == "tool"]
    assert inner and "Blocked by the bad plugin" in inner[0]
    assert "canary-4f1e" not in json.dumps([r.body for r in fake_provider.requests])
