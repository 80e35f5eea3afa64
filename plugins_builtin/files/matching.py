"""Finding the text a model meant, and saying why when it is not there.

Models copy text from read_file output and often get the invisible parts wrong: trailing
spaces, tabs against spaces, curly quotes, a final newline.  Matching is exact first.  Only
when the exact text is nowhere are the tolerances tried, in order, loosest last (the same
passes as OpenAI Codex's apply_patch):

1. ``trailing whitespace`` -- each line compared without its trailing spaces and tabs;
2. ``indentation`` -- each line compared without leading and trailing whitespace; the new
   text is re-indented the way the file's lines are (tabs for spaces, deeper or shallower);
3. ``quotes, dashes and spaces`` -- as 2, with typographic quotes, dashes and odd spaces
   read as their ASCII forms.

A tolerance is used only when it finds exactly one place (callers that anchor a search take
the first place after the anchor); the caller reports which one it used.  When nothing
matches, :func:`near_miss` names the closest region and what differs there.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable
from dataclasses import dataclass

TRAILING = "trailing whitespace"
INDENTATION = "indentation"
PUNCTUATION = "quotes, dashes and spaces"

#: Typographic characters and the ASCII a model types for them (Codex's table).
PUNCT = str.maketrans({
    **dict.fromkeys("\u2010\u2011\u2012\u2013\u2014\u2015\u2212", "-"),
    **dict.fromkeys("\u2018\u2019\u201a\u201b", "'"),
    **dict.fromkeys("\u201c\u201d\u201e\u201f", '"'),
    **dict.fromkeys("\u00a0\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a\u202f"
                    "\u205f\u3000", " "),
})


def _rstrip(line: str) -> str:
    return line.rstrip()


def _strip(line: str) -> str:
    return line.strip()


def _punct(line: str) -> str:
    # translate() looks every character up; ASCII lines (nearly all) have nothing to map.
    return (line if line.isascii() else line.translate(PUNCT)).strip()


#: The tolerance passes, in order: (name, how a line is compared).
PASSES: tuple[tuple[str, Callable[[str], str]], ...] = (
    (TRAILING, _rstrip), (INDENTATION, _strip), (PUNCTUATION, _punct))


# ---- line sequences (apply_patch) ---------------------------------------------------------

def find_lines(lines: list[str], pattern: list[str], start: int,
               same: Callable[[str], str] | None = None) -> list[int]:
    """Every index >= ``start`` where ``pattern`` occurs in ``lines``, comparing lines
    through ``same`` (exactly when None)."""
    if not pattern or len(pattern) > len(lines):
        return []
    keyed = lines if same is None else [same(line) for line in lines]
    want = pattern if same is None else [same(p) for p in pattern]
    first, size = want[0], len(want)
    hits = []
    for i in range(start, len(keyed) - size + 1):
        if keyed[i] == first and keyed[i:i + size] == want:
            hits.append(i)
    return hits


# ---- re-indenting -----------------------------------------------------------------------

_INDENT = re.compile(r"[ \t]*")


def _indent(line: str) -> str:
    match = _INDENT.match(line)
    return match.group() if match else ""


def reindent(old: list[str], found: list[str], new: list[str]) -> list[str] | None:
    """``new`` indented the way the file indents: ``old`` are the lines the model sent,
    ``found`` the file's lines they matched ignoring indentation.

    Handles the two shapes models produce: every line off by the same prefix (one level too
    deep or too shallow), and tabs written as a fixed number of spaces (or the reverse).
    Returns ``new`` unchanged when the indentation already agrees, None when the difference
    follows no rule (the caller then refuses the tolerant match).
    """
    pairs = [(_indent(o), _indent(f)) for o, f in zip(old, found, strict=True)
             if o.strip() and f.strip()]
    if all(o == f for o, f in pairs):
        return new
    # A constant prefix added to (or removed from) every line.
    extra = {f[:len(f) - len(o)] for o, f in pairs if f.endswith(o)}
    if len(extra) == 1 and all(f.endswith(o) and f[:len(f) - len(o)] in extra
                               for o, f in pairs):
        prefix = extra.pop()
        return [prefix + line if line.strip() else line for line in new]
    fewer = {o[:len(o) - len(f)] for o, f in pairs if o.endswith(f)}
    if len(fewer) == 1 and all(o.endswith(f) and o[:len(o) - len(f)] in fewer
                               for o, f in pairs):
        prefix = fewer.pop()
        return [line[len(prefix):] if line.startswith(prefix) else line for line in new]
    # Tabs against spaces: one unit of the model's indentation is one of the file's.
    units = {_unit(o, f) for o, f in pairs if o or f}
    if len(units) == 1 and None not in units:
        (model_unit, file_unit), = units
        return [_convert(line, model_unit, file_unit) for line in new]
    return None


def _unit(model: str, file: str) -> tuple[str, str] | None:
    """(model unit, file unit) when ``model`` is k units of one kind and ``file`` k of the
    other (tabs against spaces), else None."""
    if not model or not file or len(set(model)) != 1 or len(set(file)) != 1:
        return None
    if model[0] == file[0]:
        return None
    if model[0] == " " and len(model) % len(file) == 0:
        return " " * (len(model) // len(file)), "\t"
    if file[0] == " " and len(file) % len(model) == 0:
        return "\t", " " * (len(file) // len(model))
    return None


def _convert(line: str, model_unit: str, file_unit: str) -> str:
    lead = _indent(line)
    count, rest = divmod(len(lead), len(model_unit)) if lead == model_unit[0] * len(lead) \
        else (0, 0)
    if not count:
        return line
    return file_unit * count + lead[count * len(model_unit):][:rest] + line[len(lead):]


# ---- strings (edit_file, multi_edit) -------------------------------------------------------

@dataclass
class Found:
    """Where a string matched: spans of the text, the tolerance used (None: exact), and the
    replacement for each span (already re-indented when the tolerance asked for it)."""

    spans: list[tuple[int, int, str]]
    tolerance: str | None = None
    note: str = ""


class NotFound(Exception):
    """No unique place.  ``kind`` is ``missing`` (nowhere, even loosely), ``repeated`` (the
    exact text ``count`` times) or ``loose`` (only a tolerance matched, but more than once or
    with an indentation that follows no rule); ``detail`` says it in words for ``loose``."""

    def __init__(self, kind: str, detail: str = "", count: int = 0) -> None:
        super().__init__(detail or kind)
        self.kind = kind
        self.detail = detail
        self.count = count


def _line_starts(text: str) -> list[int]:
    starts = [0]
    starts.extend(m.end() for m in re.finditer("\n", text))
    return starts


def line_of(text: str, offset: int) -> int:
    """1-based line number of ``offset`` in ``text``."""
    return text.count("\n", 0, offset) + 1


def find_text(text: str, old: str, new: str, replace_all: bool) -> Found:
    """Where ``old`` is in ``text`` (both with LF line ends), exactly or by one tolerance.

    Raises :class:`NotFound` when it is nowhere, or more than once without ``replace_all``.
    """
    count = text.count(old)
    if count:
        if count > 1 and not replace_all:
            at, where = -1, []
            for _ in range(min(count, 5)):
                at = text.index(old, at + 1)
                where.append(str(line_of(text, at)))
            raise NotFound("repeated", "at lines " + ", ".join(where) +
                           (", ..." if count > 5 else ""), count=count)
        spans, at = [], 0
        for _ in range(count if replace_all else 1):
            at = text.index(old, at)
            spans.append((at, at + len(old), new))
            at += len(old)
        return Found(spans)
    # The file has no final newline but oldString ends with one.
    if old.endswith("\n") and not text.endswith("\n") and text.endswith(old[:-1]) \
            and text.count(old[:-1]) == 1:
        start = len(text) - len(old) + 1
        return Found([(start, len(text), new[:-1] if new.endswith("\n") else new)],
                     "final newline", "the file has no final newline, and still has none")
    lines = text.split("\n")
    old_lines = old.split("\n")
    starts = _line_starts(text)
    # Whole lines only: the region is the file lines the model's lines cover.
    body = old_lines[:-1] if old.endswith("\n") else old_lines
    if not body or not any(line.strip() for line in body):
        raise NotFound("missing")
    new_lines = new.split("\n")
    new_body = new_lines[:-1] if old.endswith("\n") and new.endswith("\n") else new_lines
    # Blank lines the model put before its text say nothing about where it is.
    lead = 0
    while not body[lead].strip():
        lead += 1
    if lead:
        body = body[lead:]
        if all(not line.strip() for line in new_body[:lead]):
            new_body = new_body[lead:]
    for name, same in PASSES:
        hits = find_lines(lines, body, 0, same)
        if not hits:
            continue
        if len(hits) > 1 and not replace_all:
            at = ", ".join(str(h + 1) for h in hits[:5])
            raise NotFound("loose", f"ignoring {name} it matches {len(hits)} places (lines "
                           f"{at}). Add surrounding lines to make it unique")
        kept: list[int] = []
        for hit in hits:  # like str.replace: occurrences never overlap
            if not kept or hit >= kept[-1] + len(body):
                kept.append(hit)
        hits = kept
        spans = []
        note = ""
        for hit in hits:
            found = lines[hit:hit + len(body)]
            fitted = new_body
            if name != TRAILING:
                fitted = reindent(body, found, new_body)
                if fitted is None:
                    raise NotFound("loose", f"ignoring {name} it would match at line {hit + 1}, "
                                   "but its indentation differs from the file's in no "
                                   "consistent way")
                if fitted is not new_body:
                    note = "newString was re-indented to match the file"
            if name == PUNCTUATION:
                typeset = keep_typography(found, body, fitted)
                if typeset != fitted:
                    fitted = typeset
                    note = "; ".join(filter(None, [note, "the file's typographic quotes and "
                                                         "dashes were kept"]))
            start = starts[hit]
            end_line = hit + len(body) - 1
            end = starts[end_line] + len(lines[end_line])
            replacement = "\n".join(fitted)
            if old.endswith("\n") and end < len(text):
                end += 1
                replacement += "\n" if new.endswith("\n") else ""
            spans.append((start, end, replacement))
        return Found(spans, name, note)
    raise NotFound("missing")


# ---- typography ----------------------------------------------------------------------------

_OPENS_AFTER = set(" \t([{<\u2014\u2013-/")
_CURLY = {'"': ("\u201c", "\u201d"), "'": ("\u2018", "\u2019")}


def _smart_quotes(line: str, kinds: set[str]) -> str:
    """``line`` with its straight quotes of ``kinds`` made curly: double quotes open and
    close in turn; a single quote opens after the start of the line, a space or an opening
    bracket, and closes elsewhere (so an apostrophe is a closing one)."""
    out = []
    open_double = False
    for i, ch in enumerate(line):
        if ch in kinds:
            opening, closing = _CURLY[ch]
            if ch == '"':
                open_double = not open_double
                ch = opening if open_double else closing
            else:
                ch = opening if i == 0 or line[i - 1] in _OPENS_AFTER else closing
        out.append(ch)
    return "".join(out)


def _curly_kinds(line: str) -> set[str]:
    """The straight quotes whose curly forms ``line`` uses."""
    return {plain for plain, pair in _CURLY.items() if any(c in line for c in pair)}


def keep_typography(found: list[str], old: list[str], new: list[str]) -> list[str]:
    """``new`` (the model's replacement for the file's ``found`` lines, which it typed as
    ``old`` with straight quotes) in the file's typography: a line the model left unchanged
    is the file's own line; a changed one gets curly quotes where the file's line it stands
    for had them."""
    out = list(new)
    aligned: dict[int, int] = {}  # new index -> old index, for the lines left as they were
    matcher = difflib.SequenceMatcher(a=[line.strip() for line in old],
                                      b=[line.strip() for line in new], autojunk=False)
    for block in matcher.get_matching_blocks():
        for k in range(block.size):
            aligned[block.b + k] = block.a + k
    for j, line in enumerate(new):
        if j in aligned and aligned[j] < len(found):
            out[j] = found[aligned[j]]
            continue
        ref = found[min(j, len(found) - 1)] if found else ""
        kinds = _curly_kinds(ref)
        if not kinds and not any(q in ref for q in _CURLY):  # a line with no quotes to go by
            kinds = set().union(*map(_curly_kinds, found))
        if kinds:
            out[j] = _smart_quotes(line, kinds)
    return out


# ---- near misses --------------------------------------------------------------------------

_WORD = re.compile(r"\w{3,}")


def _loose(line: str) -> str:
    return " ".join((line if line.isascii() else line.translate(PUNCT)).split())


def _describe_indent(lead: str) -> str:
    if not lead:
        return "no indentation"
    tabs, spaces = lead.count("\t"), lead.count(" ")
    parts = []
    if tabs:
        parts.append(f"{tabs} tab{'s' if tabs > 1 else ''}")
    if spaces:
        parts.append(f"{spaces} space{'s' if spaces > 1 else ''}")
    return " and ".join(parts)


def _chars(a: str, b: str) -> str:
    """The first typographic characters that differ, named."""
    for x, y in zip(a, b, strict=False):
        if x != y:
            return f"the file has {x!r} (U+{ord(x):04X}) where yours has {y!r}" + (
                f" (U+{ord(y):04X})" if ord(y) > 127 else "")
    return "typographic characters differ"


def difference(file_line: str, model_line: str) -> tuple[list[str], str]:
    """(classes, explanation) of how one file line differs from the model's line; the
    classes are among ``line ends``, ``whitespace``, ``indentation``, ``quotes``, ``text``."""
    if ("\r" in model_line) != ("\r" in file_line):
        if "\r" in model_line:
            return ["line ends"], ("your text has a carriage return (CR) inside this line; "
                                   "the file's lines end with a plain newline")
        return ["line ends"], "the file's line holds a carriage return (CR) that yours lacks"
    kinds: list[str] = []
    parts: list[str] = []
    lead_f, lead_m = _indent(file_line), _indent(model_line)
    if lead_f != lead_m and file_line.strip() and model_line.strip():
        kinds.append("indentation")
        parts.append(f"indentation: the file has {_describe_indent(lead_f)}, yours "
                     f"{_describe_indent(lead_m)}")
    core_f, core_m = file_line.strip(), model_line.strip()
    tail_f = len(file_line) - len(file_line.rstrip())
    tail_m = len(model_line) - len(model_line.rstrip())
    if core_f == core_m:
        if tail_f != tail_m:
            kinds.append("whitespace")
            parts.append(f"trailing whitespace: the file's line ends with {tail_f} whitespace "
                         f"character(s), yours with {tail_m}")
    elif _punct(file_line) == _punct(model_line):
        kinds.append("quotes")
        parts.append("quotes/dashes/spaces: " + _chars(core_f, core_m))
    elif _loose(file_line) == _loose(model_line):
        kinds.append("whitespace")
        parts.append("spacing inside the line differs")
    else:
        kinds.append("text")
        parts.append("the text differs")
    return kinds, "; ".join(parts)


def _clip(line: str, width: int = 100) -> str:
    shown = repr(line[:width])
    return shown + ("..." if len(line) > width else "")


def _closest(lines: list[str], body: list[str], start: int) -> tuple[int, int] | None:
    """(window start, lines agreeing loosely) of the best window for ``body``."""
    index: dict[str, list[int]] = {}
    for i in range(start, len(lines)):
        key = _loose(lines[i])
        if key:
            index.setdefault(key, []).append(i)
    scores: dict[int, int] = {}
    for k, line in enumerate(body):
        key = _loose(line)
        for i in index.get(key, [])[:200] if key else []:
            at = i - k
            if start <= at < len(lines):
                scores[at] = scores.get(at, 0) + 1
    if scores:
        best = max(scores.items(), key=lambda item: (item[1], -item[0]))
        return best[0], best[1]
    # Nothing agrees even loosely: the line most like the model's longest one.
    probe = max(body, key=lambda s: len(s.strip()))
    if not probe.strip():
        return None
    # Only the lines sharing the most words with it are compared (difflib over every line of
    # a big file takes seconds).
    words = sorted(set(_WORD.findall(probe)), key=len, reverse=True)[:8]
    shared = [(sum(word in lines[i] for word in words), i)
              for i in range(start, len(lines))] if words else []
    most = max((count for count, _ in shared), default=0)
    candidates = [(i, lines[i].strip()) for count, i in shared if count == most and most][:200]
    close = difflib.get_close_matches(probe.strip(), [c for _, c in candidates], n=1,
                                      cutoff=0.6)
    if not close:
        return None
    k = body.index(probe)
    hit = next(i for i, c in candidates if c == close[0])
    return max(start, hit - k), 0


_ESCAPED = re.compile("[\udc80-\udcff]")


def _legacy_char(match: re.Match[str]) -> str:
    byte = bytes([ord(match.group()) - 0xDC00])
    try:
        return byte.decode("cp1252")
    except UnicodeDecodeError:  # the five bytes Windows-1252 leaves undefined
        return byte.decode("latin-1")


def legacy_lines(lines: list[str]) -> list[str] | None:
    """``lines`` with the bytes that are not UTF-8 (carried as surrogates) read as
    Windows-1252, the usual legacy encoding; None when every byte was UTF-8."""
    if not any(_ESCAPED.search(line) for line in lines):
        return None
    return [_ESCAPED.sub(_legacy_char, line) for line in lines]


LEGACY_NOTE = ("{path}is not UTF-8: some of its bytes are Windows-1252 (Latin-1) text, shown "
               "decoded here. Characters stored that way (such as {sample}) cannot be matched "
               "as you type them: match the text around them, or convert the file to UTF-8 "
               "first (bash: iconv -f WINDOWS-1252 -t UTF-8).")


def near_miss(lines: list[str], body: list[str], start: int = 0, *,
              final_newline: bool = True, path: str = "") -> str:
    """A few lines naming the region of ``lines`` closest to ``body`` (the model's lines) and
    what differs there; empty when nothing in the file resembles them.

    ``final_newline`` says whether the file ends with a newline (``lines`` has no empty last
    element for it), so that a model line the file lacks at its end is explained.  A file
    that is not UTF-8 is named as such and shown decoded (``path`` names it).
    """
    legacy = legacy_lines(lines)
    if legacy is None:
        return _near_miss(lines, body, start, final_newline)
    samples = sorted({_legacy_char(m) for line in lines for m in _ESCAPED.finditer(line)})
    note = LEGACY_NOTE.format(path=f"{path} " if path else "The file ",
                              sample=", ".join(repr(c) for c in samples[:3]))
    hint = _near_miss(legacy, body, start, final_newline)
    if hint.endswith(" match."):
        hint = hint[:-len(" match.")] + " hold your text, stored as Windows-1252."
    return f"{note}\n{hint}"


def _near_miss(lines: list[str], body: list[str], start: int, final_newline: bool) -> str:
    found = _closest(lines, body, start)
    if found is None:
        first = next((s for s in body if s.strip()), body[0] if body else "")
        return f"Nothing like its first line {_clip(first.strip())} is in the file."
    at, _ = found
    window = lines[at:at + len(body)]
    notes: list[str] = []
    classes: list[str] = []
    more = 0
    for k, model_line in enumerate(body):
        n = at + k + 1
        if k >= len(window):
            notes.append(f"line {n}: the file ends before your line {k + 1} {_clip(model_line)}")
            classes.append("text")
            break
        if window[k] == model_line:
            continue
        kinds, why = difference(window[k], model_line)
        classes.extend(kinds)
        if len(notes) < 3:
            note = f"line {n}: {why}"
            if "text" in kinds or "quotes" in kinds:
                note += f"\n  file:  {_clip(window[k])}\n  yours: {_clip(model_line)}"
            notes.append(note)
        else:
            more += 1
    last = at + min(len(body), len(window))
    head = f"Closest match: lines {at + 1}-{max(at + 1, last)}"
    if not notes:
        if not final_newline and last == len(lines):
            return (f"{head} match, but the file has no final newline (line ends): drop the "
                    "last newline from your text.")
        return f"{head} match."
    kinds = sorted(set(classes), key=classes.index)
    tail = f"\n(and {more} more differing line(s))" if more > 0 else ""
    return f"{head} differ in {', '.join(kinds)}:\n" + "\n".join(notes) + tail
