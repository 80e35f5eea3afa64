"""CPU per streamed token: `agent -p` against a bare openai SDK script printing the same
stream from the same local fake server, paced at 500 tokens/s.

Each side runs once with a one-token answer and once with a long one; the difference of the
child's CPU time (user + system, every thread), divided by the extra tokens, is the marginal
CPU per token.  Each run counts only the CPU spent from the moment its request reaches the
server to its exit: start-up (imports, plugins) is the same work in both runs, but on a
loaded machine it varies by a tenth of a second or more, which spread over 1,500 tokens
would swamp what is measured.  Run `python bench/stream_cpu.py [--tokens 1500]`.
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import time

from _common import compile_bytecode, isolated_env
from fakeprovider import FakeProvider, Reply

RATE = 500.0  # tokens per second

#: The baseline: the SDK's own stream, each piece written to stdout as it comes.
BARE = """
import openai, sys
client = openai.OpenAI(base_url=sys.argv[1], api_key="x", max_retries=0)
stream = client.chat.completions.create(model="m", stream=True,
    messages=[{"role": "user", "content": "hi"}])
for chunk in stream:
    if chunk.choices and chunk.choices[0].delta.content:
        sys.stdout.write(chunk.choices[0].delta.content)
        sys.stdout.flush()
print()
"""


def _proc_cpu(pid: int) -> float | None:
    """CPU seconds (user + system, all threads) process ``pid`` has used so far, or None
    where /proc cannot tell (then the run's start-up counts too, as in both runs)."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def child_cpu(cmd: list[str], env: dict[str, str], srv: FakeProvider | None = None) -> float:
    """CPU seconds (user + system) ``cmd`` used, run to completion; with ``srv``, only from
    the moment its request reached ``srv`` on."""
    seen = len(srv.requests) if srv is not None else 0
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    startup = 0.0
    if srv is not None:
        for _ in range(60_000):  # poll (bounded: 60 s) for the request to arrive
            if len(srv.requests) > seen or proc.poll() is not None:
                break
            time.sleep(0.001)
        startup = _proc_cpu(proc.pid) or 0.0
    _, stderr = proc.communicate()  # read as it comes: the child never blocks on a pipe
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise SystemExit(f"{cmd[:4]} failed: {stderr[-400:].decode(errors='replace')}")
    used = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return used - startup


def per_token(srv: FakeProvider, cmd: list[str], env: dict[str, str], tokens: int,
              runs: int) -> float:
    """Median marginal CPU (seconds) per token of ``cmd`` over ``runs`` pairs."""
    import statistics

    text = "".join(f"w{i} " for i in range(tokens))
    marginal = []
    for _ in range(runs):
        srv.script(Reply.text("w0 ", pieces=1))
        short = child_cpu(cmd, env, srv)
        srv.script(Reply.text(text, pieces=tokens, delay=1.0 / RATE))
        long = child_cpu(cmd, env, srv)
        marginal.append((long - short) / (tokens - 1))
    return statistics.median(marginal)


def main(tokens: int = 1500, runs: int = 3) -> list[str]:
    compile_bytecode()
    lines = ["| measurement | ours | baseline | ratio |", "|---|---|---|---|"]
    with FakeProvider.start() as srv:
        env = isolated_env(OPENAI_API_KEY="x")
        ours_cmd = [sys.executable, "-m", "agent", "-p", "hi", "--provider", "openai",
                    "--base-url", srv.openai_url, "--model", "m"]
        srv.script(Reply.text("warm"))
        child_cpu(ours_cmd, env)  # the plugin cache and byte code, as on any later run
        bare = per_token(srv, [sys.executable, "-c", BARE, srv.openai_url], env, tokens, runs)
        ours = per_token(srv, ours_cmd, env, tokens, runs)
    lines.append(f"| CPU per streamed token at {RATE:.0f} tokens/s (`agent -p`) | "
                 f"{ours * 1000:.3f} ms | bare openai SDK script: {bare * 1000:.3f} ms | "
                 f"{ours / bare:.2f}x |")
    return lines


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--tokens", type=int, default=1500)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    print("\n".join(main(args.tokens, args.runs)))
