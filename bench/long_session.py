"""A 10,000-message session: building it in the store, loading it, resuming it with
`agent -c -p` (wall time and peak RSS against `python -c pass` and a fresh `agent -p`; the
summary requests and tokens a resume spends, without and with summaries saved with the
session), and compacting it with the prune plugin.  Prints a markdown table; run
`python bench/long_session.py [--messages 10000] [--runs 3]`.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _common import ROOT, isolated_env
from fakeprovider import FakeProvider, Reply

sys.path.insert(0, str(ROOT))

from agent.contract.messages import Message, TextPart, ToolCallPart, ToolResultPart  # noqa: E402
from agent.state.store import SessionRecord, Store  # noqa: E402

#: Runs a command and prints its wall time (s) and the peak RSS of the child (KiB): this
#: wrapper's RUSAGE_CHILDREN covers exactly the one child it waited for.
MEASURE = """
import resource, subprocess, sys, time
start = time.perf_counter()
code = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE).returncode
print(time.perf_counter() - start, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, code)
"""

WORDS = ("the parser config session request tool result error value file path line test "
         "module function return import class self args kwargs cache store index").split()


def prose(rng: random.Random, chars: int) -> str:
    out: list[str] = []
    size = 0
    while size < chars:
        word = rng.choice(WORDS)
        out.append(word)
        size += len(word) + 1
    return " ".join(out)


def code(rng: random.Random, lines: int) -> str:
    return "\n".join(f"{n}: {'    ' * rng.randint(0, 3)}{prose(rng, rng.randint(10, 70))}"
                     for n in range(1, lines + 1))


def synthetic(count: int, seed: int = 0) -> list[Message]:
    """``count`` messages of a plausible coding session: a prompt, four tool steps
    (read, grep, edit, test), an answer; repeated."""
    rng = random.Random(seed)
    messages: list[Message] = []
    n = 0
    while len(messages) < count:
        n += 1
        messages.append(Message.user(f"Step {n}: " + prose(rng, rng.randint(60, 300))))
        for step, tool in enumerate(("read_file", "grep", "edit_file", "bash")):
            if len(messages) >= count - 2:
                break
            call_id = f"call_{n}_{step}"
            args = {"read_file": {"path": f"src/module_{n % 97}.py"},
                    "grep": {"pattern": rng.choice(WORDS), "path": "src"},
                    "edit_file": {"path": f"src/module_{n % 97}.py", "oldString": prose(rng, 80),
                                  "newString": prose(rng, 90)},
                    "bash": {"command": "python -m pytest -q tests/test_module.py"}}[tool]
            messages.append(Message("assistant", [
                TextPart(prose(rng, rng.randint(20, 160))),
                ToolCallPart(call_id, tool, args, json.dumps(args))]))
            output = code(rng, rng.randint(5, 60)) if tool != "edit_file" else "Replaced 1"
            messages.append(Message("tool", [ToolResultPart(call_id, tool, output)]))
        messages.append(Message("assistant", [TextPart(prose(rng, rng.randint(100, 600)))]))
    return messages[:count]


def build(state_dir: Path, cwd: Path, messages: list[Message]) -> tuple[str, float, int]:
    """Write the session in one transaction; returns (id, seconds, database bytes)."""
    from agent.loop.session import new_session_id

    sid = new_session_id()
    start = time.perf_counter()
    with Store.open(state_dir) as store:
        now = time.time()
        store.create_session(SessionRecord(sid, str(cwd), now, now, title="long session",
                                           provider="openai", model="gpt-5"))
        store.replace_messages(sid, [m.to_dict() for m in messages])
    elapsed = time.perf_counter() - start
    size = sum(p.stat().st_size for p in state_dir.glob("agent.db*"))
    return sid, elapsed, size


SUMMARY_SYSTEM_START = "You write the working notes"


def is_summary(request) -> bool:
    """A request the prune plugin made for a summary (its system prompt says so)."""
    body = request.body if isinstance(request.body, dict) else {}
    first = (body.get("messages") or [{}])[0]
    return first.get("role") == "system" and str(first.get("content", "")).startswith(
        SUMMARY_SYSTEM_START)


def spent(requests) -> tuple[int, int, int, int]:
    """(summary requests, their input tokens, other requests, their input tokens) among
    ``requests``; tokens estimated as request bytes / 4 (the fake model does not count)."""
    summaries = [r for r in requests if is_summary(r)]
    others = [r for r in requests if r.method == "POST" and not is_summary(r)]
    return (len(summaries), sum(len(r.raw) for r in summaries) // 4,
            len(others), sum(len(r.raw) for r in others) // 4)


def measure(cmd: list[str], *, env: dict[str, str], cwd: Path, runs: int
            ) -> tuple[float, float]:
    """Median wall seconds and median peak RSS (MiB) of ``cmd`` over ``runs``."""
    walls, rss = [], []
    for _ in range(runs):
        out = subprocess.run([sys.executable, "-c", MEASURE, *cmd], env=env, cwd=cwd,
                             capture_output=True, text=True, check=True).stdout.split()
        wall, peak, code = float(out[0]), int(out[1]), int(out[2])
        if code != 0:
            raise RuntimeError(f"{' '.join(cmd[:6])}... exited {code}")
        walls.append(wall)
        rss.append(peak / 1024)
    return statistics.median(walls), statistics.median(rss)


def load_and_compact(home: Path, ws: Path, srv: FakeProvider) -> dict[str, float]:
    """In process: load the session (store -> Message objects), then let the prune plugin
    compact the first request twice (cold: summaries written; warm: cached)."""
    from agent.loop.session import Runtime
    from agent.testing import make_boot, make_session

    config, hooks = make_boot(ws, home, builtins=["openai", "prune", "sessions"])
    probe = make_session(config, hooks, base_url=srv.openai_url, model="gpt-5")
    runtime = Runtime(config=config, hooks=hooks, tools=probe.tools,
                      provider=probe.runtime.provider, model="gpt-5")
    start = time.perf_counter()
    session = hooks.open_session(runtime, hooks.find_session(config, continue_=True))
    loaded = time.perf_counter() - start
    session.messages.append(Message.user("one more question"))
    session.data.pop("prune", None)  # cold: forget the summaries saved with the session
    out: dict[str, float] = {"load_s": loaded, "messages": len(session.messages)}

    async def compact() -> tuple[float, int, int]:
        before = len(srv.requests)
        t0 = time.perf_counter()
        request = await session.build_request()
        elapsed = time.perf_counter() - t0
        return elapsed, len(srv.requests) - before, len(request.messages)

    out["cold_s"], out["summary_calls"], out["after"] = asyncio.run(compact())
    out["warm_s"], _, _ = asyncio.run(compact())
    session.recorder.close()
    hooks.unconfigure(config)
    return out


def main(count: int = 10_000, runs: int = 3) -> list[str]:
    lines = ["| measurement | ours | baseline | ratio |", "|---|---|---|---|"]
    with tempfile.TemporaryDirectory(prefix="agent-long-") as tmp, FakeProvider.start() as srv:
        ws = (Path(tmp) / "ws").resolve()
        ws.mkdir()
        env = isolated_env(OPENAI_API_KEY="x", AGENT_OPENAI_API="chat")
        home = Path(env["AGENT_HOME"])
        messages = synthetic(count)
        chars = sum(len(json.dumps(m.to_dict())) for m in messages)
        _, build_s, db_bytes = build(home / "state", ws, messages)
        srv.script(*[Reply.text("Notes: the session so far, in brief.") for _ in range(5000)])

        base_wall, base_rss = measure([sys.executable, "-c", "pass"], env=env, cwd=ws,
                                      runs=runs)
        agent = [sys.executable, "-m", "agent", "--provider", "openai", "--base-url",
                 srv.openai_url, "--model", "gpt-5"]
        fresh_dir = Path(tmp) / "fresh"
        fresh_dir.mkdir()
        fresh_wall, fresh_rss = measure([*agent, "-p", "hi"], env=env, cwd=fresh_dir,
                                        runs=runs)
        before = len(srv.requests)
        full_wall, full_rss = measure([*agent, "-c", "-p", "hi", "--disable", "prune"],
                                      env=env, cwd=ws, runs=runs)
        full_body = len(srv.requests[-1].raw)
        assert len(srv.requests) - before == runs
        before = len(srv.requests)
        cold_wall, cold_rss = measure([*agent, "-c", "-p", "hi"], env=env, cwd=ws, runs=1)
        cold_requests = len(srv.requests) - before
        cold_spent = spent(srv.requests[before:])
        before = len(srv.requests)
        pruned_wall, pruned_rss = measure([*agent, "-c", "-p", "hi"], env=env, cwd=ws,
                                          runs=runs)
        per_run = (len(srv.requests) - before) / runs
        warm_spent = spent(srv.requests[before:])
        pruned_body = len(srv.requests[-1].raw)
        stats = load_and_compact(home, ws, srv)

    mib = 1024 * 1024
    lines += [
        f"| synthetic session | {count:,} messages, {chars / mib:.1f} MiB of JSON | | |",
        f"| build it in the store (one transaction) | {build_s * 1000:.0f} ms "
        f"({db_bytes / mib:.1f} MiB on disk) | | |",
        f"| load it (store -> messages, in process) | {stats['load_s'] * 1000:.0f} ms | | |",
        f"| `agent -p hi`, new session | {fresh_wall * 1000:.0f} ms, {fresh_rss:.0f} MiB "
        f"peak RSS | python -c pass: {base_wall * 1000:.0f} ms, {base_rss:.0f} MiB | "
        f"{fresh_wall / base_wall:.1f}x, {fresh_rss / base_rss:.1f}x |",
        f"| `agent -c -p hi`, prune disabled (whole history sent, "
        f"{full_body / mib:.1f} MiB request) | {full_wall * 1000:.0f} ms, {full_rss:.0f} MiB | "
        f"new session: {fresh_wall * 1000:.0f} ms, {fresh_rss:.0f} MiB | "
        f"{full_wall / fresh_wall:.1f}x, {full_rss / fresh_rss:.1f}x |",
        f"| first `agent -c -p hi` with prune ({cold_requests} requests: summaries written and "
        f"saved with the session) | {cold_wall * 1000:.0f} ms, {cold_rss:.0f} MiB | "
        f"new session: {fresh_wall * 1000:.0f} ms, {fresh_rss:.0f} MiB | "
        f"{cold_wall / fresh_wall:.1f}x, {cold_rss / fresh_rss:.1f}x |",
        f"| later `agent -c -p hi` with prune ({per_run:.0f} request(s) per run: saved "
        "summaries reused, "
        f"{pruned_body / 1024:.0f} KiB final request) | {pruned_wall * 1000:.0f} ms, "
        f"{pruned_rss:.0f} MiB | new session: {fresh_wall * 1000:.0f} ms, {fresh_rss:.0f} MiB | "
        f"{pruned_wall / fresh_wall:.1f}x, {pruned_rss / fresh_rss:.1f}x |",
        "| resume, no summaries saved: summary requests (est. input tokens) + the prompt's "
        f"request | {cold_spent[0]} ({cold_spent[1]:,}) + {cold_spent[2]} ({cold_spent[3]:,}) "
        "| | |",
        f"| resume, summaries saved: summary requests over {runs} run(s) (est. input tokens) + "
        f"the prompts' requests | {warm_spent[0]} ({warm_spent[1]:,}) + {warm_spent[2]} "
        f"({warm_spent[3]:,}) | | |",
        f"| compaction, cold ({stats['summary_calls']:.0f} summary calls to the local fake "
        f"model; {stats['messages']:,.0f} -> {stats['after']:.0f} messages) | "
        f"{stats['cold_s'] * 1000:.0f} ms | | |",
        f"| compaction, next step (summary cached) | {stats['warm_s'] * 1000:.0f} ms | | |",
    ]
    return lines


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    print("\n".join(main(args.messages, args.runs)))
