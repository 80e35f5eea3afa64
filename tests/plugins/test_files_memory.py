"""read_file and grep read large files in bounded memory: at most twice what they return
plus a fixed buffer, counted with tracemalloc (every allocation Python makes is counted, so
the bound holds on any machine; it is not a timing)."""

from __future__ import annotations

import asyncio
import tracemalloc

import pytest
from files_support import boot_files

from agent import ToolError

#: The fixed buffer the bound allows: one 1 MB read chunk, the tool machinery around it.
FIXED = 3 * 1024 * 1024
LINES = 200_000  # about 20 MB


@pytest.fixture(scope="module")
def big(tmp_path_factory):
    env = boot_files(tmp_path_factory.mktemp("big"), grep_fallback=True)
    tail = f" caf\u00e9 event payload {'x' * 80} done\n"
    with open(env.workspace / "big.log", "w") as fh:
        for block in range(0, LINES, 10_000):
            fh.write("".join(f"{i:07d}{tail}" for i in range(block, block + 10_000)))
    (env.workspace / "small.txt").write_text("warm\n")
    # Once before measuring: what the first call imports is not what a read keeps.
    asyncio.run(env.call("read_file", {"path": "small.txt"}))
    asyncio.run(env.call("grep", {"pattern": "warm"}))
    return env


def peak_of(coro) -> tuple[object, int]:
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        result = asyncio.run(coro)
        return result, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


@pytest.mark.parametrize("offset", [1, LINES // 2, LINES - 100])
def test_read_file_of_a_large_file_stays_within_its_window(big, offset):
    size = (big.workspace / "big.log").stat().st_size
    result, peak = peak_of(big.call("read_file", {"path": "big.log", "offset": offset,
                                                  "limit": 2000}))
    assert not result.is_error, result.output
    first = result.output.split("\n", 1)[0]
    assert first.startswith(f"{offset}: {offset - 1:07d} caf\u00e9 event")
    if offset < LINES - 2000:
        assert f"[lines {offset}-{offset + 1999} of {LINES + 1} shown" in result.output
    # What the read returns is its window (a result this long reaches the model saved in
    # full on disk, its head and tail inline): the numbered lines it covers.
    count = min(2000, LINES + 1 - offset)
    returned = sum(len(f"{n}: {n - 1:07d} caf\u00e9 event payload {'x' * 80} done".encode())
                   for n in range(offset, offset + count))
    assert peak <= 2 * returned + FIXED, (peak, returned, size)
    assert peak < size / 4


def test_grep_fallback_on_a_large_file_stays_bounded(big):
    size = (big.workspace / "big.log").stat().st_size
    result, peak = peak_of(big.call("grep", {"pattern": "^0199999 "}))
    assert not result.is_error, result.output
    assert "big.log:200000: 0199999 caf\u00e9 event" in result.output
    assert peak <= 2 * len(result.output.encode()) + FIXED, peak
    assert peak < size / 4


@pytest.mark.parametrize("layout", ["lf", "crlf", "cr", "bom", "bad-utf8", "no-final-newline",
                                    "long-line"])
def test_a_file_read_in_chunks_reads_as_a_whole_read_would(tmp_path, layout):
    """Past 1 MB read_file reads in chunks; what it returns is what reading whole gives."""
    from plugins_builtin.files import window

    eol = {"crlf": b"\r\n", "cr": b"\r"}.get(layout, b"\n")
    lines = [b"row %d caf\xc3\xa9 " % i + b"y" * (i % 300) for i in range(12_000)]
    if layout == "bad-utf8":
        lines[5000] += b" caf\xe9 \xff"
    if layout == "long-line":
        lines[7000] = b"z" * (3 * window.CHUNK)
    data = eol.join(lines) + (b"" if layout == "no-final-newline" else eol)
    if layout == "bom":
        data = b"\xef\xbb\xbf" + data
    path = tmp_path / "f.txt"
    path.write_bytes(data)
    assert len(data) > window.WHOLE_LIMIT
    def outcome(read, offset, limit):
        try:
            got = read(path, "f.txt", offset, limit)
        except ToolError as exc:
            return str(exc)
        return got.body, got.count, got.digest, got.size

    for offset, limit in [(1, 2000), (4990, 20), (6999, 3), (11_990, 2000), (12_001, 5)]:
        assert outcome(window.read_window, offset, limit) == outcome(window._whole, offset,
                                                                     limit), (layout, offset)
