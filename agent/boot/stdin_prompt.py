"""Piped standard input for ``agent -p``.

``git diff | agent -p "review"`` attaches what was piped to the prompt as a delimited block::

    review

    <stdin>
    diff --git a/x b/x
    ...
    </stdin>

``agent -p < task.md`` (no prompt argument) reads the prompt itself from stdin.  A terminal is
never read; ``--no-stdin`` turns the attaching off.  Input over the byte cap
(``stdin_max_bytes``) is cut at a line boundary with a note saying how much was left out;
input that is not text (a NUL byte, or not valid UTF-8) is refused with a clear error, so a
binary file never reaches the model as garbage.

A pipe nobody writes to (a program that starts ``agent`` with an inherited, never-closed
stdin) must not hang the run: when a prompt was given and no byte arrives within
:data:`FIRST_BYTE_WAIT` seconds, the run goes on without stdin and says so on stderr.
"""

from __future__ import annotations

import os
import select
import stat
from dataclasses import dataclass
from typing import BinaryIO

#: Bytes of piped input attached by default (config ``stdin_max_bytes``).
DEFAULT_MAX_BYTES = 256 * 1024

#: Seconds a pipe may stay silent before a run that has its prompt goes on without it.
FIRST_BYTE_WAIT = 3.0

class StdinError(ValueError):
    """Piped input that cannot be attached (not text); the message says what to do."""


@dataclass(frozen=True)
class Piped:
    """What was read: ``text`` (decoded, possibly cut), ``total`` bytes that arrived, and
    ``kept`` bytes of them in ``text``."""

    text: str
    total: int
    kept: int

    @property
    def cut(self) -> bool:
        return self.kept < self.total


def is_terminal(stream: BinaryIO | None) -> bool:
    """True when ``stream`` is missing, closed or a terminal: nothing to read then."""
    if stream is None:
        return True
    try:
        return bool(stream.isatty())
    except (ValueError, OSError):
        return True


def waits_for_a_writer(stream: BinaryIO) -> bool:
    """True for a pipe or socket (someone else writes it, maybe never); False for a regular
    file or a device such as ``/dev/null``, which answer at once."""
    try:
        mode = os.fstat(stream.fileno()).st_mode
    except (AttributeError, OSError, ValueError):
        return False  # an in-memory stream (an embedder, a test) answers at once too
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)


def data_arrives(stream: BinaryIO, wait: float) -> bool:
    """Wait up to ``wait`` seconds for ``stream`` to become readable (data or end of file)."""
    try:
        ready, _, _ = select.select([stream.fileno()], [], [], wait)
    except (OSError, ValueError):
        return True  # cannot tell: read, as before
    return bool(ready)


def read_piped(stream: BinaryIO, max_bytes: int) -> Piped:
    """Read ``stream`` to its end, keeping at most ``max_bytes`` bytes (the rest is read and
    counted, so the writer is never left blocked on a full pipe).  Raises
    :class:`StdinError` for input that is not UTF-8 text."""
    kept = bytearray()
    total = 0
    while True:
        chunk = stream.read(65536)
        if not chunk:
            break
        total += len(chunk)
        room = max_bytes - len(kept)
        if room > 0:
            kept += chunk[:room]
    data = bytes(kept)
    if b"\0" in data:
        raise StdinError(f"stdin is binary data ({total:,} bytes, with NUL bytes), not text: "
                         "pipe text, or pass --no-stdin to leave it out")
    cut = total > len(data)
    if cut:
        # Cut at the last line break, so neither a line nor a UTF-8 sequence is split.
        newline = data.rfind(b"\n")
        if newline > 0:
            data = data[:newline + 1]
        else:
            data = _whole_utf8(data)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise StdinError(f"stdin is not UTF-8 text (byte {exc.start:,} cannot be decoded): "
                         "pipe text, or pass --no-stdin to leave it out") from None
    return Piped(text, total, len(data))


def _whole_utf8(data: bytes) -> bytes:
    """``data`` without a UTF-8 sequence cut at its end."""
    for back in range(1, min(4, len(data)) + 1):
        byte = data[-back]
        if byte < 0x80:
            return data
        if byte >= 0xC0:  # the lead byte of the last sequence
            need = 2 if byte < 0xE0 else 3 if byte < 0xF0 else 4
            return data if back >= need else data[:-back]
    return data


def stdin_block(piped: Piped) -> str:
    """The piped text as the block that follows the prompt: a blank line, ``<stdin>``, the
    text, ``</stdin>``, and a note when the input was cut."""
    body = piped.text if piped.text.endswith("\n") else piped.text + "\n"
    note = _cut_note(piped) if piped.cut else ""
    return f"\n\n<stdin>\n{body}</stdin>\n{note}".rstrip("\n")


def attach(prompt: str, piped: Piped) -> str:
    """The prompt with the piped text after it in a ``<stdin>`` block (:func:`stdin_block`)."""
    return prompt.rstrip() + stdin_block(piped)


def _cut_note(piped: Piped) -> str:
    return (f"[stdin was cut: the first {piped.kept:,} of {piped.total:,} bytes are above; "
            f"{piped.total - piped.kept:,} bytes were left out (stdin_max_bytes)]\n")


def prompt_with_stdin(prompt: str | None, stream: BinaryIO | None, *, max_bytes: int,
                      use_stdin: bool = True, wait: float = FIRST_BYTE_WAIT,
                      warn: object = None) -> tuple[str, str]:
    """The headless prompt and what follows it: ``(prompt, stdin block)`` when both were
    given (:func:`stdin_block`; the block is kept apart so ``@`` mentions are looked for in
    the typed prompt only, never in piped text), ``(stdin, "")`` when stdin is the prompt,
    ``("", "")`` when there is neither.  ``warn(text)`` is told when a silent pipe was given
    up on.  Raises :class:`StdinError`."""
    if not use_stdin or stream is None or is_terminal(stream):
        return prompt or "", ""
    if not prompt:  # the prompt is stdin: wait for it, however long the writer takes
        piped = read_piped(stream, max_bytes)
        return piped.text + (_cut_note(piped) if piped.cut else ""), ""
    if waits_for_a_writer(stream) and not data_arrives(stream, wait):
        if callable(warn):
            warn(f"no stdin data arrived in {wait:g} s; going on without it (pass "
                 "--no-stdin, or < /dev/null, to skip the wait)")
        return prompt, ""
    piped = read_piped(stream, max_bytes)
    if not piped.text.strip():
        return prompt, ""
    return prompt.rstrip(), stdin_block(piped)
