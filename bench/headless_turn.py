"""Headless turn overhead: `agent -p` against a bare SDK script doing the same one request to
the same local fake server; also the bytes of the first request (system prompt + tool
schemas).  Run `python bench/headless_turn.py`."""

from __future__ import annotations

import json
import sys

from _common import isolated_env, python_pass, row, wall
from fakeprovider import FakeProvider, Reply

RUNS = 7

BARE = """
import openai, sys
client = openai.OpenAI(base_url=sys.argv[1], api_key="x", max_retries=0)
stream = client.chat.completions.create(model="m", stream=True,
    messages=[{"role": "user", "content": "hi"}])
print("".join(c.choices[0].delta.content or "" for c in stream if c.choices))
"""


def main() -> list[str]:
    lines = ["| measurement | ours | baseline | ratio |", "|---|---|---|---|"]
    base = python_pass()
    with FakeProvider.start() as srv:
        env = isolated_env(OPENAI_API_KEY="x")
        srv.script(*[Reply.text("hello") for _ in range(2 * RUNS + 1)])
        bare = wall([sys.executable, "-c", BARE, srv.openai_url], env=env, runs=RUNS)
        ours = wall([sys.executable, "-m", "agent", "-p", "hi", "--provider", "openai",
                     "--base-url", srv.openai_url, "--model", "m"], env=env, runs=RUNS)
        lines.append(row("headless turn, one request (`agent -p`)", ours, bare,
                         "bare openai SDK script"))
        lines.append(row("bare openai SDK script", bare, base, "python -c pass"))
        first = srv.requests[-1].raw
        body = json.loads(first)
        system = body["messages"][0]["content"]
        tools = json.dumps(body.get("tools", []))
        lines.append(f"| first request payload | {len(first)} B | system prompt {len(system)} B, "
                     f"tool schemas {len(tools)} B ({len(body.get('tools', []))} tools) | |")
    return lines


if __name__ == "__main__":
    print("\n".join(main()))
