"""How a text file is stored, so every write tool gives it back the same way.

A file's *layout* is its encoding (UTF-8 with or without a byte-order mark, or UTF-16 with
one) and its line-ending convention (LF, CRLF or CR).  The tools show and match text without
the BOM and with ``\\n`` line ends; whatever they write goes back in the file's layout:

- the BOM stays (and is never doubled when the model's text starts with U+FEFF);
- text the model sends is converted to the file's line ends, so an LF file never gains a
  CRLF line and a CRLF file never gains an LF one;
- a file that already mixes line ends keeps the endings of the lines nobody touched, and new
  lines take the ending of the lines they replace.

UTF-32 and UTF-16 without a BOM are not guessed at: the first is refused with a clear
message, the second looks binary (it is full of NUL bytes) and is refused as such.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass

from agent import ToolError

from .common import binary_message, encode_text, is_binary

UTF8_BOM = b"\xef\xbb\xbf"

#: Longest first: the UTF-32 LE mark begins with the UTF-16 LE one.
_BOMS = (
    (b"\xff\xfe\x00\x00", "utf-32-le"),
    (b"\x00\x00\xfe\xff", "utf-32-be"),
    (UTF8_BOM, "utf-8"),
    (b"\xff\xfe", "utf-16-le"),
    (b"\xfe\xff", "utf-16-be"),
)

EOL_NAMES = {"\n": "LF", "\r\n": "CRLF", "\r": "CR"}


@dataclass(frozen=True)
class Layout:
    """The encoding and line ends of one file."""

    codec: str = "utf-8"
    bom: bytes = b""
    #: the ending new lines get; None when the file has no line break to learn from
    eol: str | None = None
    #: the file already holds more than one kind of line end
    mixed: bool = False

    def encoding_name(self) -> str:
        """``UTF-8``, ``UTF-8 with BOM``, ``UTF-16-LE`` ..."""
        codec = "UTF-8" if self.codec == "utf-8" else self.codec.upper()
        return codec + (" with BOM" if self.bom and self.codec == "utf-8" else "")

    def ends_name(self) -> str:
        """``LF``, ``CRLF``, ``CR``, ``mixed line ends`` or ``no line ends``."""
        if self.mixed:
            return "mixed line ends"
        return EOL_NAMES.get(self.eol or "", "no line ends")

    @property
    def special(self) -> bool:
        """Anything but plain UTF-8 without a BOM: worth naming in a result."""
        return bool(self.bom) or self.codec != "utf-8"


def line_end_counts(text: str) -> dict[str, int]:
    """How many line breaks of each kind ``text`` holds (a CR that starts a CRLF is not a
    lone CR)."""
    crlf = text.count("\r\n")
    return {"\n": text.count("\n") - crlf, "\r\n": crlf, "\r": text.count("\r") - crlf}


def convention(text: str) -> tuple[str | None, bool]:
    """(the dominant line end, whether LF and CRLF are both used) of ``text``.

    Ties go to LF.  A lone CR is a line end only in a file with no LF at all (classic Mac
    files); elsewhere it is part of a line.  No line break at all gives (None, False).
    """
    counts = line_end_counts(text)
    lf, crlf = counts["\n"], counts["\r\n"]
    if not lf and not crlf:
        return ("\r", False) if counts["\r"] else (None, False)
    return ("\r\n" if crlf > lf else "\n"), bool(lf and crlf)


def to_lf(text: str, cr: bool = False) -> str:
    """``text`` with CRLF line ends as ``\\n`` (and lone CRs too when ``cr``: only in files
    whose convention is CR, since elsewhere a lone CR is part of a line)."""
    text = text.replace("\r\n", "\n")
    return text.replace("\r", "\n") if cr else text


def with_eol(text: str, eol: str | None) -> str:
    """``text`` with every line end made ``eol`` (LF when None)."""
    lf = to_lf(text, cr=eol == "\r")
    return lf if eol in (None, "\n") else lf.replace("\n", eol)


def strip_bom(text: str) -> str:
    """The model's text without a leading U+FEFF: the layout carries the BOM."""
    return text[1:] if text.startswith("\ufeff") else text


def decode(data: bytes, shown: str, *, for_display: bool = False) -> tuple[str, Layout]:
    """The text of a file (BOM removed, line ends as stored) and its layout.

    UTF-8 bytes that do not decode are carried as surrogates so that writing the text back
    restores them exactly (``for_display`` shows them as U+FFFD instead).  Raises
    :class:`ToolError` for binary files, UTF-32, and a UTF-16 BOM over bytes that are not
    UTF-16.
    """
    codec, bom = "utf-8", b""
    for mark, name in _BOMS:
        if data.startswith(mark):
            codec, bom = name, mark
            break
    body = data[len(bom):]
    if codec.startswith("utf-32"):
        raise ToolError(f"{shown} is UTF-32 text, which the file tools do not read or write. "
                        "Convert it first (bash: iconv -f UTF-32 -t UTF-8).")
    if codec == "utf-8":
        if is_binary(body):
            raise ToolError(binary_message(shown))
        text = body.decode("utf-8", errors="replace" if for_display else "surrogateescape")
    else:
        try:
            text = body.decode(codec)
        except UnicodeDecodeError as exc:
            raise ToolError(f"{shown} starts with a {codec.upper()} byte-order mark but is not "
                            f"valid {codec.upper()} (bad bytes at offset {exc.start + len(bom)})."
                            " Use bash to inspect it.") from None
        if "\x00" in text[:4096]:
            raise ToolError(binary_message(shown))
    eol, mixed = convention(text)
    return text, Layout(codec, bom, eol, mixed)


def encode(text: str, layout: Layout, shown: str) -> bytes:
    """``text`` in ``layout``'s encoding, BOM first."""
    if layout.codec == "utf-8":
        return layout.bom + encode_text(text, shown)
    try:
        return layout.bom + text.encode(layout.codec)
    except UnicodeEncodeError as exc:
        raise ToolError(f"Cannot write {shown} as {layout.codec.upper()}: the text holds "
                        f"{exc.object[exc.start:exc.end]!r} at character {exc.start}, which "
                        "that encoding cannot hold.") from None


class LineEndView:
    """``raw`` text seen with ``\\n`` line ends, and a way back to raw offsets.

    Matching happens on :attr:`text` (what read_file showed the model); a region found there
    maps back to the raw text with :meth:`raw_offset`, so the lines around an edit keep their
    own endings byte for byte.
    """

    def __init__(self, raw: str, layout: Layout) -> None:
        self.raw = raw
        self.cr = layout.eol == "\r"
        self.text = to_lf(raw, self.cr)
        # Positions (in self.text) of the "\n" that stand for a two-character "\r\n".
        self._wide: list[int] = []
        at = raw.find("\r\n")
        while at != -1:
            self._wide.append(at - len(self._wide))
            at = raw.find("\r\n", at + 2)

    def raw_offset(self, offset: int) -> int:
        """The raw offset of ``offset`` in :attr:`text`."""
        return offset + bisect.bisect_left(self._wide, offset)

    def ending_in(self, start: int, end: int, default: str | None) -> str | None:
        """The line end most used by the raw region [start, end) (raw offsets), else
        ``default``: new text replacing the region takes it."""
        counts = line_end_counts(self.raw[start:end])
        if not self.cr:
            counts["\r"] = 0
        if not any(counts.values()):
            return default
        return max(("\n", "\r\n", "\r"), key=lambda eol: (counts[eol], eol == default))

    def replace(self, spans: list[tuple[int, int, str]], default_eol: str | None) -> str:
        """The raw text with each (start, end, LF text) span of :attr:`text` replaced; each
        replacement takes the line ends of the raw region it replaces."""
        out: list[str] = []
        cursor = 0
        for start, end, new in sorted(spans):
            raw_start, raw_end = self.raw_offset(start), self.raw_offset(end)
            out.append(self.raw[cursor:raw_start])
            out.append(with_eol(new, self.ending_in(raw_start, raw_end, default_eol)))
            cursor = raw_end
        out.append(self.raw[cursor:])
        return "".join(out)
