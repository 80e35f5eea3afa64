"""The installed ``agent`` in a pseudo-terminal, its screen read by pyte."""

from __future__ import annotations

import os
import sys
import threading
import time
from pathlib import Path

import ptyprocess
import pyte

SCRUBBED = ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "AGENT_API_KEY", "AGENT_PROVIDER",
            "AGENT_MODEL", "AGENT_BASE_URL", "AGENT_DISABLE_PLUGINS", "NO_COLOR", "COLORTERM")


def agent_command() -> list[str]:
    """The ``agent`` script installed beside this interpreter (the suite's own venv, activated
    or not), else ``python -m agent``: never another install's ``agent`` found on PATH."""
    beside = Path(sys.executable).with_name("agent")
    if beside.is_file() and os.access(beside, os.X_OK):
        return [str(beside)]
    return [sys.executable, "-m", "agent"]


class Term:
    """``agent ARGS`` running in a pty of ``cols`` x ``rows``."""

    def __init__(self, args: list[str], *, cwd: Path, home: Path, cols: int = 100,
                 rows: int = 30, env: dict[str, str] | None = None,
                 program: list[str] | None = None) -> None:
        full_env = {k: v for k, v in os.environ.items() if k not in SCRUBBED}
        full_env.update({"AGENT_HOME": str(home), "TERM": "xterm-256color", **(env or {})})
        self.screen = pyte.Screen(cols, rows)
        self.stream = pyte.ByteStream(self.screen)
        self.raw = bytearray()
        self._lock = threading.Lock()
        # The reader only stores bytes; pyte parses them when the screen is looked at, and
        # the screen's text is rendered again only when output arrived since.  Parsing in
        # the reader kept this process's interpreter busy while the agent streamed, and the
        # fake provider, a thread of this process, then waited for it before each event: a
        # streamed answer took twice as long, and drew (and sent) twice as many frames.
        self._fed = 0  # bytes of ``raw`` pyte has parsed
        self._text: tuple[int, str] = (-1, "")  # (bytes parsed, the screen's text)
        self.started = time.monotonic()
        # ``program`` runs instead of ``agent`` (a bench's baseline in the same terminal)
        self.proc = ptyprocess.PtyProcess.spawn((program or agent_command()) + args, cwd=str(cwd),
                                                env=full_env, dimensions=(rows, cols))
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        while True:
            try:
                data = self.proc.read(65536)
            except EOFError:
                return
            except OSError:
                return
            with self._lock:
                self.raw.extend(data)

    def text(self) -> str:
        with self._lock:
            if self._fed < len(self.raw):
                self.stream.feed(bytes(self.raw[self._fed:]))
                self._fed = len(self.raw)
            if self._text[0] != len(self.raw):
                self._text = (len(self.raw),
                              "\n".join(line.rstrip() for line in self.screen.display))
            return self._text[1]

    def output(self) -> str:
        with self._lock:
            return self.raw.decode("utf-8", "replace")

    def send(self, data: str | bytes) -> None:
        self.proc.write(data.encode() if isinstance(data, str) else data)

    def type(self, text: str, enter: bool = True) -> None:
        self.send(text)
        if enter:
            time.sleep(0.05)  # a separate read, as a person typing enter
            self.send("\r")

    def wait_for(self, what: str, timeout: float = 10.0) -> str:
        deadline = time.monotonic() + timeout
        while True:
            text = self.text()
            if what in text:
                return text
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out waiting for {what!r}; screen:\n{text}")
            time.sleep(0.02)

    def wait_exit(self, timeout: float = 10.0) -> int:
        deadline = time.monotonic() + timeout
        while self.proc.isalive():
            if time.monotonic() > deadline:
                raise AssertionError(f"agent did not exit; screen:\n{self.text()}")
            time.sleep(0.02)
        self._reader.join(2)
        return self.proc.exitstatus if self.proc.exitstatus is not None else -1

    def close(self) -> None:
        if self.proc.isalive():
            self.proc.terminate(force=True)
