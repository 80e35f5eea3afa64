"""Headless output is written in batches: a burst of streamed text reaches stdout in a few
flushes, complete and in order, and a diagnostic on stderr never overtakes the answer."""

from __future__ import annotations

import asyncio
import io

from agent.boot.headless import JsonPrinter, TextPrinter
from agent.contract import events as ev


class Recording(io.StringIO):
    """A stream that remembers what had been written at each flush."""

    def __init__(self, log: list[tuple[str, str]], name: str) -> None:
        super().__init__()
        self.log, self.name = log, name

    def flush(self) -> None:
        self.log.append((self.name, self.getvalue()))
        super().flush()


def test_a_burst_of_text_is_flushed_once_and_complete():
    log: list[tuple[str, str]] = []
    out, err = Recording(log, "out"), Recording(log, "err")

    async def burst() -> None:
        printer = TextPrinter(out, err)
        for i in range(1000):
            printer(ev.TextEvent(f"t{i} "))
        assert log == []  # nothing flushed while the burst is still coming
        for _ in range(1000):  # the deferred flush runs once the burst yields the loop
            if log:
                break
            await asyncio.sleep(0.005)
        assert [name for name, _ in log] == ["out"]
        printer(ev.TextEvent("end"))
        printer(ev.DoneEvent("end", steps=1))

    asyncio.run(burst())
    expected = "".join(f"t{i} " for i in range(1000)) + "end\n"
    assert out.getvalue() == expected
    assert log[-1] == ("out", expected)
    assert len([name for name, _ in log if name == "out"]) <= 3


def test_a_diagnostic_follows_the_text_before_it():
    log: list[tuple[str, str]] = []
    out, err = Recording(log, "out"), Recording(log, "err")

    async def turn() -> None:
        printer = TextPrinter(out, err)
        printer(ev.TextEvent("Let me look."))
        printer(ev.ToolCallEvent("c1", "read_file", {"path": "a.py"}, "model"))
        printer(ev.DoneEvent("end", steps=1))

    asyncio.run(turn())
    first_err = next(i for i, (name, _) in enumerate(log) if name == "err")
    assert ("out", "Let me look.") in log[:first_err]


def test_json_lines_are_whole_and_non_text_events_go_out_at_once():
    log: list[tuple[str, str]] = []
    out = Recording(log, "out")

    async def turn() -> None:
        printer = JsonPrinter(out)
        for i in range(200):
            printer(ev.TextEvent(f"t{i}"))
        printer(ev.ToolCallEvent("c1", "read_file", {"path": "a.py"}, "model"))
        assert log and '"tool-call"' in log[-1][1]  # flushed as it happened
        printer(ev.DoneEvent("end", steps=1))

    asyncio.run(turn())
    lines = out.getvalue().splitlines()
    assert len(lines) == 202 and lines[-1].startswith("{") and '"done"' in lines[-1]
    assert len(log) <= 3
