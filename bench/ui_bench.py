"""UI benchmarks: the installed ``agent`` in a pseudo-terminal against the fake provider.

Measures
  1. launch to first frame (the prompt is on screen),
  2. keystroke-to-screen latency while a 5,000-token answer streams,
  3. redraws per second while it streams,
  4. CPU time of the agent process per 1,000 streamed tokens,
  5. for answers of every shape (plain paragraphs, a 2,000-item list, a 3,000-line fenced code
     block, a 500-row table, a 100 KB single paragraph): keystroke-to-screen p50/p95 while it
     streams and after, and CPU per 1,000 tokens against that of plain paragraphs streamed
     right before it (goal: p95 <= 16 ms, no shape above 1.5x the paragraphs' CPU), each
     prompt sent once the agent is idle (its SDK warm-up done),
  6. keystroke-to-screen while a prompt sent at once waits for the SDK import (the event loop
     must never wait for it),
and prints each next to this machine's ``python -c pass`` time for scale.  Nothing here is a
pass/fail test: run it by hand (``python bench/ui_bench.py``; ``--shapes-only`` for 5) and
compare runs.
"""

from __future__ import annotations

import argparse
import bisect
import itertools
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "tests"), str(ROOT / "tests" / "e2e")]

from fakeprovider import FakeProvider, Reply  # noqa: E402
from pty_term import Term  # noqa: E402

IDLE = "ask agent... (/ commands, @ files)"
HIDE_CURSOR = b"\x1b[?25l"  # urwid starts every painted frame with it
PROBES = "ЖЗИЙКЛМНОПРСТУФХЦЧШЩЭЮЯ"  # never in the streamed answer


def python_pass_ms(runs: int = 5) -> float:
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        subprocess.run([sys.executable, "-c", "pass"], check=True)
        times.append((time.perf_counter() - t) * 1000)
    return statistics.median(times)


def answer(tokens: int) -> str:
    """About ``tokens`` tokens (4 characters each) of mixed markdown."""
    parts = []
    i = 0
    while sum(len(p) for p in parts) < tokens * 4:
        i += 1
        parts.append(f"## Section {i}\n\nThis paragraph explains step {i} with `inline code`, "
                     "**bold words** and a [link](https://example.com) so the renderer has "
                     "real work to do on every frame of the stream.\n\n"
                     f"- item one of {i}\n- item two of {i}\n\n"
                     f"```python\ndef step_{i}(x):\n    return x * {i}  # comment\n```\n\n")
    return "".join(parts)


def shapes() -> dict[str, str]:
    """Answers of every shape, each tens of kilobytes: plain paragraphs are the baseline."""
    plain = "".join(f"Paragraph {i} explains one step of the change with a few plain words, "
                    "enough to wrap once or twice on a normal terminal like prose does.\n\n"
                    for i in range(500))
    items = "".join(f"- item {i}: check `module_{i}.py` and **fix** the call\n"
                    for i in range(2000))
    code = "```python\n" + "".join(f"def handler_{i}(request):  # line {i}\n"
                                    f"    return request.value + {i}\n"
                                    for i in range(1500)) + "```\n"
    table = "| name | value | note |\n|---|---|---|\n" + "".join(
        f"| row {i} | {i * 7} | note for row `{i}` |\n" for i in range(500))
    para = " ".join(f"Sentence {i} has **bold**, `code` and plain words." for i in range(2100))
    return {"paragraphs": plain, "list 2,000 items": items, "code 3,000 lines": code,
            "table 500 rows": table, "paragraph 100 KB": para[:100_000]}


def percentile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, int(round(q * len(ordered))) - 1))]


class Stamped(Term):
    """A Term that remembers when each chunk of output arrived.  The reader only stores
    bytes (pyte parses them when the screen is looked at), so the rig never slows the agent
    down by reading its output late."""

    def __init__(self, *args, **kwargs) -> None:
        self.chunks: list[tuple[float, int]] = []
        self._fed = 0
        # Waiters sleep until output arrives instead of polling: the rig's own CPU would
        # otherwise compete with the agent for this machine's two cores.
        self._arrived = threading.Condition()
        super().__init__(*args, **kwargs)

    def _read(self) -> None:
        while True:
            try:
                data = self.proc.read(65536)
            except (EOFError, OSError):
                return
            now = time.perf_counter()
            with self._lock:
                self.raw.extend(data)
                self.chunks.append((now, len(self.raw)))
            with self._arrived:
                self._arrived.notify_all()

    def text(self) -> str:
        with self._lock:
            self.stream.feed(bytes(self.raw[self._fed:]))
            self._fed = len(self.raw)
        return super().text()

    def wait_bytes(self, needle: bytes, start: int, timeout: float = 5.0) -> float:
        """Time at which ``needle`` first appeared after raw offset ``start``."""
        deadline = time.perf_counter() + timeout
        searched = start
        while True:
            with self._lock:
                at = self.raw.find(needle, searched)
                if at >= 0:
                    end = at + len(needle)
                    index = bisect.bisect_left(self.chunks, end, key=lambda c: c[1])
                    return self.chunks[index][0]
                searched = max(start, len(self.raw) - len(needle) + 1)
            left = deadline - time.perf_counter()
            if left <= 0:
                raise TimeoutError(needle)
            with self._arrived:  # the arrival time is the reader's stamp, not this wake-up
                self._arrived.wait(min(left, 0.01))

    def cpu_seconds(self) -> float:
        fields = Path(f"/proc/{self.proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
        ticks = os.sysconf("SC_CLK_TCK")
        return (int(fields[11]) + int(fields[12])) / ticks


def start(fake: FakeProvider, ws: Path, home: Path) -> Stamped:
    return Stamped(["--provider", "openai", "--base-url", fake.openai_url, "--model", "m"],
                   cwd=ws, home=home, env={"OPENAI_API_KEY": "x"})


def first_frame(fake: FakeProvider, base: Path, runs: int) -> list[float]:
    times = []
    for n in range(runs):
        ws, home = base / f"ws{n}", base / f"home{n}"
        ws.mkdir()
        t0 = time.perf_counter()
        term = start(fake, ws, home)
        term.wait_for(IDLE, timeout=20)
        times.append((time.perf_counter() - t0) * 1000)
        term.send("/exit\r")
        term.wait_exit()
    return times


#: The floor of any full-screen Python program: an interpreter that switches to the
#: alternate screen, draws one line and waits for a key.
MINIMAL_FRAME = ("import os, sys\nsys.stdout.write('\\x1b[?1049h\\x1b[2J\\x1b[Hminimal frame >')\n"
                 "sys.stdout.flush()\nos.read(0, 1)\nsys.stdout.write('\\x1b[?1049l')\n")


def minimal_first_frame(base: Path, runs: int) -> list[float]:
    """Launch to first frame of :data:`MINIMAL_FRAME` in the same kind of terminal."""
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        term = Stamped([], cwd=base, home=base, program=[sys.executable, "-c", MINIMAL_FRAME])
        term.wait_for("minimal frame >", timeout=20)
        times.append((time.perf_counter() - t0) * 1000)
        term.send("\r")  # the terminal is in line mode: a line ends the read
        term.wait_exit()
    return times


def streaming(fake: FakeProvider, base: Path, tokens: int, keys: int) -> dict[str, float]:
    text = answer(tokens)
    pieces = max(1, tokens // 2)
    fake.script(Reply.text(text, pieces=pieces, delay=0.002))
    ws, home = base / "stream-ws", base / "stream-home"
    ws.mkdir()
    term = start(fake, ws, home)
    term.wait_for(IDLE, timeout=20)
    term.send("go")
    time.sleep(0.05)
    term.send("\r")
    term.wait_for("Section 1", timeout=20)
    with term._lock:
        begin_offset = len(term.raw)
    cpu0, t_begin = term.cpu_seconds(), time.perf_counter()
    latencies = []
    for i in range(keys):
        probe = PROBES[i % len(PROBES)]
        with term._lock:
            offset = len(term.raw)
        sent = time.perf_counter()
        term.send(probe)
        try:
            seen = term.wait_bytes(probe.encode(), offset)
        except TimeoutError:
            break
        latencies.append((seen - sent) * 1000)
        term.send("\x7f")  # backspace: keep the prompt short
        time.sleep(0.08)
        with term._lock:  # a byte search: parsing the screen here would hold up the reader
            if term.raw.find(b"in context)", begin_offset) >= 0:
                break
    term.wait_for("in context)", timeout=120)  # the turn's usage line: streaming is over
    t_end, cpu1 = time.perf_counter(), term.cpu_seconds()
    with term._lock:
        frames = term.raw.count(HIDE_CURSOR, begin_offset)
    term.send("\x15")  # ctrl-u: clear the prompt
    time.sleep(0.1)
    term.send("/exit\r")
    term.wait_exit(timeout=20)
    duration = t_end - t_begin
    return {
        "tokens": len(text) / 4,
        "duration_s": duration,
        "latency_median_ms": statistics.median(latencies) if latencies else float("nan"),
        "latency_p95_ms": (sorted(latencies)[int(len(latencies) * 0.95) - 1]
                           if latencies else float("nan")),
        "latency_max_ms": max(latencies) if latencies else float("nan"),
        "keys": len(latencies),
        "redraws_per_s": frames / duration if duration else float("nan"),
        "cpu_ms_per_1k_tokens": (cpu1 - cpu0) * 1000 / (len(text) / 4 / 1000),
    }


def probe(term: Stamped, i: int) -> float | None:
    """Type one probe key; milliseconds until it was on screen (None: not within 5 s)."""
    key = PROBES[i % len(PROBES)]
    with term._lock:
        offset = len(term.raw)
    sent = time.perf_counter()
    term.send(key)
    try:
        seen: float | None = term.wait_bytes(key.encode(), offset)
    except TimeoutError:
        seen = None
    term.send("\x7f")  # backspace: keep the prompt short
    return None if seen is None else (seen - sent) * 1000


_RUNS = itertools.count()


def settle(term: Stamped, quiet_ms: float = 15.0, window: float = 0.3,
           timeout: float = 30.0) -> None:
    """Wait until the agent is idle: less than ``quiet_ms`` of CPU in ``window`` seconds
    (the SDK warm-up after the first frame is done).  What a shape's stream costs then
    holds no one-off start-up work."""
    deadline = time.perf_counter() + timeout
    last = term.cpu_seconds()
    while time.perf_counter() < deadline:
        time.sleep(window)
        now = term.cpu_seconds()
        if (now - last) * 1000 < quiet_ms:
            return
        last = now


def shape(fake: FakeProvider, base: Path, name: str, text: str,
          keys_after: int = 20, at_once: bool = False) -> dict[str, float]:
    """Stream ``text`` (about 3 tokens a delta) while typing probe keys, then type more.
    The prompt goes once the agent is idle, unless ``at_once``: then as soon as the prompt
    line shows, while the SDK warm-up is still importing (what a quick user does)."""
    fake.script(Reply.text(text, pieces=max(1, len(text) // 12), delay=0.002))
    run = next(_RUNS)
    ws, home = base / f"shape-ws-{run}", base / f"shape-home-{run}"
    ws.mkdir()
    term = start(fake, ws, home)
    term.wait_for(IDLE, timeout=20)
    if not at_once:
        settle(term)
    term.send("go")
    time.sleep(0.05)
    with term._lock:
        begin = len(term.raw)
    term.send("\r")
    term.wait_bytes(b"working", begin, timeout=20)
    cpu0, t0 = term.cpu_seconds(), time.perf_counter()
    during: list[float] = []
    while True:
        with term._lock:
            if term.raw.find(b"in context)", begin) >= 0:
                break
        latency = probe(term, len(during))
        if latency is not None:
            during.append(latency)
        time.sleep(0.15)
        if time.perf_counter() - t0 > 300:
            break
    term.wait_bytes(b"in context)", begin, timeout=300)  # the turn's usage line
    cpu1, t1 = term.cpu_seconds(), time.perf_counter()
    after: list[float] = []
    for i in range(keys_after):
        latency = probe(term, i)
        if latency is not None:
            after.append(latency)
        time.sleep(0.05)
    term.send("\x15")
    time.sleep(0.1)
    term.send("/exit\r")
    term.wait_exit(timeout=30)
    tokens = len(text) / 4
    return {"tokens": tokens, "seconds": t1 - t0, "during_p50": percentile(during, 0.5),
            "during_p95": percentile(during, 0.95), "during_max": max(during, default=0.0),
            "during_n": len(during), "after_p50": percentile(after, 0.5),
            "after_p95": percentile(after, 0.95), "after_n": len(after),
            "cpu_ms": (cpu1 - cpu0) * 1000,
            "cpu_per_1k": (cpu1 - cpu0) * 1000 / (tokens / 1000)}


def report_shapes(results: dict[str, dict[str, float]], turn_ms: float) -> None:
    """``turn_ms``: the CPU of a turn answering one line (what every turn costs whatever its
    length: the request, the usage line, saving the session; every turn starts with the agent
    idle, the SDK warm-up done).  The net column leaves it out,
    so a short shape (the table is 5,000 tokens, the others 17,000-28,000) is not charged
    three times the paragraphs' share of it."""
    print("answers of every shape (keystroke to screen in ms; CPU ms per 1,000 tokens, and its "
          "ratio to the plain paragraphs streamed just before it; goal p95 <= 16 ms, "
          "ratio <= 1.5x):")
    print(f"  a one-line turn costs {turn_ms:.0f} ms CPU; 'net' leaves that out")
    print(f"  {'shape':<18} {'tokens':>7} {'stream s':>8}  {'during p50/p95/max':>19}  "
          f"{'after p50/p95':>13}  {'CPU/1k':>7} {'ratio':>6}  {'net/1k':>6} {'ratio':>6}")
    for name, r in results.items():
        base = r.get("base", r)
        print(f"  {name:<18} {r['tokens']:>7.0f} {r['seconds']:>8.1f}  "
              f"{r['during_p50']:>5.1f} /{r['during_p95']:>5.1f} /{r['during_max']:>5.1f}  "
              f"{r['after_p50']:>5.1f} /{r['after_p95']:>5.1f}  {r['cpu_per_1k']:>7.0f} "
              f"{r['cpu_per_1k'] / base['cpu_per_1k']:>5.2f}x  {r['net_per_1k']:>6.0f} "
              f"{r['net_per_1k'] / base['net_per_1k']:>5.2f}x   "
              f"({r['during_n']:.0f}+{r['after_n']:.0f} keys)")


def frame_costs(step: int = 12, every: int = 11) -> dict[str, dict[str, float]]:
    """In-process, per shape: the CPU time (not wall time, so other load on the machine does
    not count) of one frame while the answer streams: flushing the new text into chunks,
    rendering the widget tree and turning it into terminal output.  ``step`` characters a
    delta, a frame every ``every`` deltas (what the pty run streams per frame).  After each
    such frame a key is typed and painted the way the terminal loop paints after input
    (``key_*``: the key and its frame, while the next streamed frame is pending)."""
    import asyncio
    import io
    import os as _os

    import urwid

    sys.path.insert(0, str(ROOT / "tests" / "ui"))
    from ui_harness import make_app

    from agent.contract import events as ev
    from agent.ui import palette
    from agent.ui.screen import _Loop

    async def measure() -> dict[str, dict[str, float]]:
        out: dict[str, dict[str, float]] = {}
        with open(_os.devnull, "w") as sink:
            for name, text in shapes().items():
                with tempfile.TemporaryDirectory() as tmp:
                    app = make_app(Path(tmp), "http://127.0.0.1:9/v1")
                    app.start()
                    screen = urwid.display.raw.Screen(input=io.StringIO(), output=sink)
                    screen.register_palette(palette.palette(256))
                    screen.set_terminal_properties(colors=256)
                    screen._started = True
                    size, costs, keys, canvas = (100, 30), [], [], None
                    loop = _Loop(app, app.root, screen=screen, event_loop=urwid.AsyncioEventLoop(
                        loop=asyncio.get_running_loop()))
                    loop.screen_size = size
                    for n, at in enumerate(range(0, len(text), step)):
                        app.view.on_event(ev.TextEvent(text[at:at + step]))
                        if n % every == 0:
                            t = time.process_time()
                            app.before_draw()
                            canvas = app.root.render(size, focus=True)
                            screen.draw_screen(size, canvas)
                            costs.append((time.process_time() - t) * 1000)
                        elif n % every == every // 2:
                            t = time.process_time()
                            app.root.keypress(size, "x" if n % 2 else "backspace")
                            loop.draw_screen()
                            keys.append((time.process_time() - t) * 1000)
                    app.redraw.cancel()
                    out[name] = {"p50": percentile(costs, 0.5), "p95": percentile(costs, 0.95),
                                 "max": max(costs), "frames": len(costs),
                                 "key_p50": percentile(keys, 0.5),
                                 "key_p95": percentile(keys, 0.95), "key_max": max(keys)}
        return out

    return asyncio.run(measure())


def long_transcript(lines: int = 10_000, keys: int = 200) -> dict[str, float]:
    """In-process: a keystroke (key + frame) with an empty and with a long transcript."""
    import asyncio

    sys.path.insert(0, str(ROOT / "tests" / "ui"))
    from ui_harness import make_app

    async def measure() -> dict[str, float]:
        with tempfile.TemporaryDirectory() as tmp:
            app = make_app(Path(tmp), "http://127.0.0.1:9/v1")
            app.start()
            size = (100, 30)

            def keystroke_ms() -> float:
                times = []
                for i in range(keys):
                    t = time.perf_counter()
                    app.root.keypress(size, "x" if i % 2 == 0 else "backspace")
                    app.render(size)
                    times.append((time.perf_counter() - t) * 1000)
                return statistics.median(times)

            app.render(size)
            empty = keystroke_ms()
            block = "\n".join(f"line {i} of a long answer with `code` and **bold**"
                              for i in range(5))
            for _ in range(lines // 6):  # 5 lines + the blank above each block
                app.add("markdown", block)
            app.render(size)
            full = keystroke_ms()
            t = time.perf_counter()
            for _ in range(20):
                app.keys.scroll("scroll-up")
                app.render(size)
            scroll = (time.perf_counter() - t) * 1000 / 20
            return {"empty_ms": empty, "long_ms": full, "scroll_ms": scroll}

    return asyncio.run(measure())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5, help="launches for the first-frame time")
    parser.add_argument("--tokens", type=int, default=5000, help="size of the streamed answer")
    parser.add_argument("--keys", type=int, default=30, help="keystrokes timed while streaming")
    parser.add_argument("--shapes-only", action="store_true",
                        help="only the answers of every shape")
    parser.add_argument("--shape", action="append", default=[],
                        help="only this shape (and the paragraphs baseline); repeatable")
    args = parser.parse_args()
    baseline = python_pass_ms()
    fake = FakeProvider.start()
    results: dict[str, dict[str, float]] = {}
    try:
        with tempfile.TemporaryDirectory() as tmp:
            base = Path(tmp)
            first = shape(fake, base, "first prompt", "A one-line answer.", keys_after=0,
                          at_once=True)
            turn_ms = shape(fake, base, "one line", "A one-line answer.", keys_after=0)["cpu_ms"]
            every = shapes()
            plain = every.pop("paragraphs")
            # The machine's load drifts (others' work on a shared VM): CPU time per token
            # drifts with it, so each shape is compared with a paragraphs run right before it.
            baselines = []
            for name, text in every.items():
                if args.shape and not any(s in name for s in args.shape):
                    continue
                baselines.append(shape(fake, base, "paragraphs", plain))
                results[name] = shape(fake, base, name, text)
                results[name]["base"] = baselines[-1]
            if not baselines:
                baselines.append(shape(fake, base, "paragraphs", plain))
            results = {"paragraphs": baselines[0], **results}
            if not args.shapes_only:
                minimal = minimal_first_frame(base, args.runs)
                launches = first_frame(fake, base, args.runs)
                stream = streaming(fake, base, args.tokens, args.keys)
    finally:
        fake.stop()
    for r in [*results.values(), *baselines]:
        r["net_per_1k"] = max(0.0, r["cpu_ms"] - turn_ms) / (r["tokens"] / 1000)
    print(f"a prompt sent as soon as the prompt line shows (the SDK warm-up still importing): "
          f"keystroke to screen p50 {first['during_p50']:.1f} ms, max "
          f"{first['during_max']:.1f} ms ({first['during_n']:.0f} keys in "
          f"{first['seconds']:.1f} s)")
    report_shapes(results, turn_ms)
    if len(baselines) > 1:
        print("  the paragraphs runs before each shape: CPU/1k "
              + ", ".join(f"{b['cpu_per_1k']:.0f}" for b in baselines) + " ms; during p95 "
              + ", ".join(f"{b['during_p95']:.1f}" for b in baselines) + " ms")
    frames = frame_costs()
    print("CPU of one frame while each shape streams, in process (flush + render + terminal "
          "output; other load on the machine does not count), and of a key typed meanwhile "
          "(the key and its frame): p50 / p95 / max ms")
    for name, f in frames.items():
        print(f"  {name:<18} {f['p50']:>5.2f} / {f['p95']:>5.2f} / {f['max']:>6.2f}  "
              f"({f['frames']:.0f} frames)   key {f['key_p50']:>5.2f} / {f['key_p95']:>5.2f} / "
              f"{f['key_max']:>6.2f}")
    if args.shapes_only:
        return 0
    long = long_transcript()
    med = statistics.median(launches)
    print(f"python -c pass (this machine, for scale): {baseline:.1f} ms")
    floor = statistics.median(minimal)
    print(f"a minimal program's first frame in the same terminal (python drawing one line on "
          f"the alternate screen): median {floor:.0f} ms ({len(minimal)} runs)")
    print(f"launch to first frame: median {med:.0f} ms  (min {min(launches):.0f}, max "
          f"{max(launches):.0f}, {len(launches)} runs)  = {med / floor:.1f}x the minimal "
          f"program's first frame, {med / baseline:.1f}x python -c pass")
    print(f"keystroke to screen while {stream['tokens']:.0f} tokens stream: median "
          f"{stream['latency_median_ms']:.1f} ms, p95 {stream['latency_p95_ms']:.1f} ms, max "
          f"{stream['latency_max_ms']:.1f} ms ({stream['keys']:.0f} keys)")
    print(f"redraws per second while streaming: {stream['redraws_per_s']:.1f}  (cap 30; "
          f"stream lasted {stream['duration_s']:.1f} s)")
    print(f"CPU time per 1,000 streamed tokens: {stream['cpu_ms_per_1k_tokens']:.0f} ms  "
          f"= {stream['cpu_ms_per_1k_tokens'] / baseline:.1f}x python -c pass")
    print(f"keystroke + frame, in-process: {long['empty_ms']:.2f} ms with an empty transcript, "
          f"{long['long_ms']:.2f} ms with 10,000 lines; page up {long['scroll_ms']:.2f} ms")
    return 0


if __name__ == "__main__":
    threading.current_thread().name = "bench"
    raise SystemExit(main())
