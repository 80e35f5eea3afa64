"""Headless turn overhead: `agent -p` against a bare SDK script doing the same one request to
the same local fake server, for each wire API (openai chat, openai responses, anthropic),
and any peer agent found on PATH (`codex`, `claude`: never installed by the bench); also the
bytes of the first request (system prompt + tool schemas).  Byte code is cached, as for an
installed package.  Run `python bench/headless_turn.py [--runs 7]`."""

from __future__ import annotations

import argparse
import json
import shutil
import sys

from _common import compile_bytecode, isolated_env, python_pass, row, wall, walls_alternating
from fakeprovider import FakeProvider, Reply

BARE_CHAT = """
import openai, sys
client = openai.OpenAI(base_url=sys.argv[1], api_key="x", max_retries=0)
stream = client.chat.completions.create(model="m", stream=True,
    messages=[{"role": "user", "content": "hi"}])
print("".join(c.choices[0].delta.content or "" for c in stream if c.choices))
"""

BARE_RESPONSES = """
import openai, sys
client = openai.OpenAI(base_url=sys.argv[1], api_key="x", max_retries=0)
stream = client.responses.create(model="m", stream=True, input="hi")
print("".join(e.delta for e in stream if e.type == "response.output_text.delta"))
"""

BARE_ANTHROPIC = """
import anthropic, sys
client = anthropic.Anthropic(base_url=sys.argv[1], api_key="x", max_retries=0)
with client.messages.stream(model="m", max_tokens=100,
                            messages=[{"role": "user", "content": "hi"}]) as stream:
    print("".join(stream.text_stream))
"""

#: Kept for other benchmarks that import it.
BARE = BARE_CHAT

#: Peer agents measured when present: (command, how to point it at the fake server).
PEERS = {
    "codex": (["codex", "exec", "--skip-git-repo-check", "hi"], "openai"),
    "claude": (["claude", "-p", "hi"], "anthropic"),
}


def main(runs: int = 7) -> list[str]:
    compile_bytecode()
    lines = ["| measurement | ours | baseline | ratio |", "|---|---|---|---|"]
    base = python_pass()
    with FakeProvider.start() as srv:
        srv.script(*[Reply.text("hello") for _ in range(20 * runs + 10)])
        cases = [
            ("openai chat", srv.openai_url, BARE_CHAT, {"OPENAI_API_KEY": "x",
                                                        "AGENT_OPENAI_API": "chat"}),
            ("openai responses", srv.openai_url, BARE_RESPONSES,
             {"OPENAI_API_KEY": "x", "AGENT_OPENAI_API": "responses"}),
            ("anthropic", srv.base_url, BARE_ANTHROPIC, {"ANTHROPIC_API_KEY": "x"}),
        ]
        bare_chat = 0.0
        first = b"{}"
        for label, url, bare_script, keys in cases:
            env = isolated_env(**keys)
            provider = "anthropic" if label == "anthropic" else "openai"
            ours_cmd = [sys.executable, "-m", "agent", "-p", "hi", "--provider", provider,
                        "--base-url", url, "--model", "m"]
            wall(ours_cmd, env=env, runs=1)  # the plugin cache, as on every later run
            # in turn, run after run: a load change mid-way weighs on both sides alike
            bare, ours = walls_alternating([[sys.executable, "-c", bare_script, url], ours_cmd],
                                           env=env, runs=runs)
            bare_chat = bare_chat or bare
            if label == "openai chat":
                first = srv.requests[-1].raw
            lines.append(row(f"headless turn, {label} (`agent -p`)", ours, bare,
                             f"bare {provider} SDK script"))
            lines.append(row(f"bare {label} SDK script", bare, base, "python -c pass"))
        for name, (cmd, wire) in PEERS.items():
            if shutil.which(cmd[0]) is None:
                lines.append(f"| {name} | not on PATH | | |")
                continue
            env = isolated_env(OPENAI_API_KEY="x", ANTHROPIC_API_KEY="x",
                               OPENAI_BASE_URL=srv.openai_url, ANTHROPIC_BASE_URL=srv.base_url)
            peer = wall(cmd, env=env, runs=runs)
            lines.append(row(f"{name} one-shot ({wire} wire)", peer, bare_chat,
                             "bare openai SDK script"))
    body = json.loads(first)
    system = body["messages"][0]["content"]
    tools = json.dumps(body.get("tools", []))
    lines.append(f"| first request payload (openai chat) | {len(first)} B | system prompt "
                 f"{len(system)} B, tool schemas {len(tools)} B "
                 f"({len(body.get('tools', []))} tools) | |")
    return lines


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=7)
    print("\n".join(main(parser.parse_args().runs)))
