"""Benchmark: the CPU an openai request costs before it is sent, posting the body ourselves
(the SDK client's ``post``, what the provider does) against the resource's ``create`` (which
first walks the body against the SDK's TypedDicts, ``async_maybe_transform``).

    python bench/request_body.py             # 20 requests of each kind and size
    python bench/request_body.py --runs 5

Histories of 10, 100 and 400 messages (text, tool calls and results, reasoning, images), for
chat completions and responses, sent to the local fake provider and read to the end; the two
ways alternate request by request in one process, so both see the same machine load.  Each
pair's request bytes are checked equal first.  Printed: the median CPU per request (ms) of
each way and the ratio.  Not a test: nothing else is asserted.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from fakeprovider import FakeProvider, Reply  # noqa: E402

import plugins_builtin.openai as provider_openai  # noqa: E402
from agent.contract.messages import (  # noqa: E402
    ImagePart,
    Message,
    ReasoningPart,
    TextPart,
    ToolCallPart,
    ToolResultPart,
)
from agent.contract.providers import ProviderRequest, ProviderSettings  # noqa: E402

PNG = ImagePart(media_type="image/png", data="iVBORw0KGgo=" * 20)
TOOLS = [{"name": f"tool_{i}", "description": "does a thing " * 5,
          "parameters": {"type": "object", "properties": {"path": {"type": "string"}}}}
         for i in range(20)]


def history(messages: int) -> list[Message]:
    """A conversation of about ``messages`` messages: steps of a call and its result."""
    out = [Message.user("Please fix the failing test in tests/test_a.py")]
    step = 0
    while len(out) < messages:
        step += 1
        call = ToolCallPart(id=f"call_{step}", name="read_file",
                            arguments={"path": f"src/m{step}.py"},
                            raw_arguments=f'{{"path": "src/m{step}.py"}}')
        out.append(Message("assistant", [
            ReasoningPart(f"step {step}: look at the module", encrypted="e" * 200,
                          item_id=f"rs_{step}", provider="openai"),
            TextPart(f"Reading module {step}."), call]))
        images = [PNG] if step % 10 == 0 else []
        out.append(Message("tool", [ToolResultPart(f"call_{step}", "read_file",
                                                   "def f(x):\n    return x\n" * 20,
                                                   images=images)]))
    return out


async def one(shape, params, through_create: bool) -> float:
    start = time.process_time()
    if through_create:
        stream = await shape.resource(shape.endpoint.client()).create(
            **params, extra_headers={"x-stainless-retry-count": "0"})
    else:
        stream = await shape.open(params, {"x-stainless-retry-count": "0"})
    async with stream:
        async for _ in stream.response.aiter_bytes():
            pass
    return time.process_time() - start


async def main(runs: int) -> None:
    srv = FakeProvider.start()
    settings = ProviderSettings(provider="openai", model="m", api_key="k",
                                base_url=srv.openai_url, max_retries=0)
    endpoint = provider_openai.Endpoint(settings)
    shapes = [provider_openai.ChatProvider(endpoint),
              provider_openai.ResponsesProvider(endpoint)]
    print("| shape | messages | body | create (ms CPU) | post (ms CPU) | ratio |")
    print("|---|---|---|---|---|---|")
    try:
        for shape in shapes:
            for size in (10, 100, 400):
                request = ProviderRequest(model="m", system="You are a coding agent.",
                                          messages=history(size), tools=TOOLS)
                params = shape.params(request)
                srv.script(Reply.text("a"), Reply.text("b"))
                await one(shape, params, True)  # warm both ways; compare their bytes
                await one(shape, params, False)
                by_create, by_post = srv.requests[-2:]
                assert by_create.raw == by_post.raw, "the two ways sent different bodies"
                created, posted = [], []
                for _ in range(runs):
                    srv.script(Reply.text("a"), Reply.text("b"))
                    created.append(await one(shape, params, True))
                    posted.append(await one(shape, params, False))
                c, p = statistics.median(created) * 1000, statistics.median(posted) * 1000
                print(f"| {shape.kind} | {size} | {len(by_post.raw) // 1024} KiB | {c:.1f} | "
                      f"{p:.1f} | {c / p:.1f}x |")
    finally:
        await endpoint.aclose()
        srv.stop()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20)
    asyncio.run(main(parser.parse_args().runs))
