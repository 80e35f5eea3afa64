"""`agent acp` beside `agent -p`, in the same run against the same local fake provider:
the time from starting the process to an answered `initialize`, `session/new` from request
to answer (the session ready), and the first answer chunk of a prompt, from the prompt and
from the process start; `agent -p hi` from its start to the first byte of the answer on
stdout.  The client is the ACP SDK's own.  Run `python bench/acp_session.py [--runs 5]`."""

from __future__ import annotations

import argparse
import asyncio
import statistics
import subprocess
import sys
import time
from typing import Any

from _common import compile_bytecode, isolated_env, python_pass, row
from fakeprovider import FakeProvider, Reply


class _FirstChunk:
    """An ACP client that notes when the first answer chunk arrives."""

    def __init__(self) -> None:
        self.first: float | None = None

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        if update.session_update == "agent_message_chunk" and self.first is None:
            self.first = time.perf_counter()

    async def request_permission(self, *args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("the bench asks for nothing")

    def on_connect(self, conn: Any) -> None:
        pass


async def _acp_once(env: dict[str, str]) -> tuple[float, float, float, float]:
    from acp import PROTOCOL_VERSION, text_block
    from acp.stdio import spawn_agent_process

    client = _FirstChunk()
    start = time.perf_counter()
    async with spawn_agent_process(client, sys.executable, "-m", "agent", "acp",
                                   env=env, cwd=env["AGENT_HOME"]) as (conn, _proc):
        await conn.initialize(protocol_version=PROTOCOL_VERSION)
        initialized = time.perf_counter()
        session = await conn.new_session(cwd=env["AGENT_HOME"], mcp_servers=[])
        ready = time.perf_counter()
        await conn.prompt(session_id=session.session_id, prompt=[text_block("hi")])
        assert client.first is not None, "no answer chunk arrived"
        return initialized - start, ready - initialized, client.first - ready, \
            client.first - start


def _headless_first_byte(env: dict[str, str]) -> float:
    start = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "agent", "-p", "hi"], env=env,
                            cwd=env["AGENT_HOME"], stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
    assert proc.stdout is not None
    proc.stdout.read(1)
    first = time.perf_counter() - start
    proc.communicate()
    return first


def main(runs: int = 5) -> list[str]:
    compile_bytecode()
    base = python_pass()
    lines = ["| measurement | ours | baseline | ratio |", "|---|---|---|---|"]
    with FakeProvider.start() as srv:
        srv.script(*[Reply.text("hello") for _ in range(4 * runs + 4)])
        env = isolated_env(OPENAI_API_KEY="x", AGENT_PROVIDER="openai",
                           AGENT_BASE_URL=srv.openai_url, AGENT_MODEL="m")
        _headless_first_byte(env)  # the plugin cache, as on every later run
        acp_runs, headless = [], []
        for _ in range(runs):  # in turn: a load change weighs on both alike
            acp_runs.append(asyncio.run(_acp_once(env)))
            headless.append(_headless_first_byte(env))
    init, new, chunk, total = (statistics.median(r[i] for r in acp_runs) for i in range(4))
    first_p = statistics.median(headless)
    lines.append(row("`agent acp`: start to `initialize` answered", init, base,
                     "python -c pass"))
    lines.append(row("`agent acp`: `session/new` to ready", new, base, "python -c pass"))
    lines.append(row("`agent acp`: prompt to first answer chunk", chunk, first_p,
                     "`agent -p hi` start to first byte"))
    lines.append(row("`agent acp`: start to first answer chunk", total, first_p,
                     "`agent -p hi` start to first byte"))
    return lines


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    print("\n".join(main(parser.parse_args().runs)))
