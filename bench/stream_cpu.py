"""CPU per streamed token: `agent -p` against a bare openai SDK script printing the same
stream from the same local fake server, paced at 500 tokens/s.

Each side runs once with a one-token answer and once with a long one; the difference of the
child's CPU time (user + system, from RUSAGE_CHILDREN), divided by the extra tokens, is the
marginal CPU per token, free of startup.  Run `python bench/stream_cpu.py [--tokens 1500]`.
"""

from __future__ import annotations

import argparse
import resource
import subprocess
import sys

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


def child_cpu(cmd: list[str], env: dict[str, str]) -> float:
    """CPU seconds (user + system) ``cmd`` used, run to completion."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise SystemExit(f"{cmd[:4]} failed: {proc.stderr[-400:]}")
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def per_token(srv: FakeProvider, cmd: list[str], env: dict[str, str], tokens: int,
              runs: int) -> float:
    """Median marginal CPU (seconds) per token of ``cmd`` over ``runs`` pairs."""
    import statistics

    text = "".join(f"w{i} " for i in range(tokens))
    marginal = []
    for _ in range(runs):
        srv.script(Reply.text("w0 ", pieces=1))
        short = child_cpu(cmd, env)
        srv.script(Reply.text(text, pieces=tokens, delay=1.0 / RATE))
        long = child_cpu(cmd, env)
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
