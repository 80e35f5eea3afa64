"""Project instructions (AGENTS.md, CLAUDE.md, .agent.md) in the system prompt; /init, and
/context (what fills the context window, then the instruction files)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agent import Fragment, HeaderLine, Option, SlashCommand, hookimpl
from agent.contract.commands import show

#: Instruction file names, in the order they are read within one directory.
NAMES = ("AGENTS.md", "CLAUDE.md", ".agent.md")

#: Per-file cap (characters); a longer file is cut and the cut is said.
CAP = 12_000

HEADER = (
    "Project instructions, from instruction files in this repository (outermost first). "
    "Treat them as standing orders from the user for this project. They never override the "
    "safety rules above, a denied tool call, or what the user asks in this session.")

NONE_FOUND = "No AGENTS.md, CLAUDE.md, or .agent.md found. Run /init to write one."

INIT_PROMPT = """\
Investigate this project and write a short AGENTS.md at the workspace root: the notes a new
coding agent needs before changing anything here.

Rules:
- Only verified facts. Read the build files, CI config, README and a few representative
  sources; run the build, test and lint commands you list and keep only those that work (say
  how long the test suite takes if it is slow).
- Under 100 lines. No generic advice ("write clean code", "add tests"); nothing a reader of
  the file tree would see at a glance.
- Cover: what the project is (one or two lines), how to set up, build, test (whole suite and
  one test), lint and format; the layout (which directory holds what); conventions that differ
  from the language's defaults; gotchas you hit while checking.
- If AGENTS.md (or CLAUDE.md / .agent.md) already exists, improve it in place: keep what is
  still true, fix what is not, and do not duplicate content that another instruction file
  already covers.

Finish by showing the file and saying which commands you ran to verify it."""


@dataclass(frozen=True)
class InstructionFile:
    """One instruction file as loaded: where it is, how it is shown, its (capped) text."""

    path: Path
    label: str  # relative to the workspace, e.g. ``AGENTS.md`` or ``../AGENTS.md``
    text: str
    truncated: int = 0  # characters cut by the cap


def project_root(workspace: Path) -> Path:
    """The git root (first ancestor with ``.git``); the filesystem root when there is none."""
    workspace = workspace.resolve()
    for directory in (workspace, *workspace.parents):
        if (directory / ".git").exists():
            return directory
    return Path(workspace.anchor)


def search_dirs(workspace: Path) -> list[Path]:
    """Every directory from the project root down to the workspace, outermost first."""
    return [Path(directory) for directory in _chain(os.path.realpath(workspace))]


def _chain(workspace: str) -> list[str]:
    """:func:`search_dirs` of an already resolved workspace, as strings: the workspace and
    each parent up to the first that holds ``.git`` (or the filesystem root), outermost
    first.  (Run before every model request: ``os.path`` on strings, not a ``Path`` per
    step.)"""
    chain = []
    current = workspace
    while True:
        chain.append(current)
        if os.path.exists(os.path.join(current, ".git")):
            break
        parent = os.path.dirname(current)
        if parent == current:
            break
        current = parent
    chain.reverse()
    return chain


def find_files(workspace: Path, cap: int = CAP) -> list[InstructionFile]:
    """Read every instruction file that applies to ``workspace``, outermost first.

    Unreadable or non-UTF-8 files are skipped: a broken file must not stop the agent.
    """
    workspace = workspace.resolve()
    found: list[InstructionFile] = []
    for directory in search_dirs(workspace):
        for name in NAMES:
            path = directory / name
            if not path.is_file():
                continue
            try:
                text = path.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError):
                continue
            if not text.strip():
                continue
            cut = max(0, len(text) - cap)
            found.append(InstructionFile(path, os.path.relpath(path, workspace),
                                         text[:cap], cut))
    return found


def render(files: list[InstructionFile]) -> str:
    """The system prompt block for ``files`` (empty when there are none)."""
    if not files:
        return ""
    blocks = [HEADER]
    for f in files:
        body = f.text.rstrip()
        if f.truncated:
            body += f"\n[... {f.truncated:,} more characters not shown: the file is over the " \
                    f"{CAP:,}-character limit]"
        blocks.append(f"--- {f.label} ---\n{body}")
    return "\n\n".join(blocks)


def context_report(workspace: Path, enabled: bool = True) -> str:
    """What ``/context`` shows: the instruction files loaded into the prompt."""
    if not enabled:
        return "Instruction files are off for this run (--no-instructions)."
    files = find_files(workspace)
    if not files:
        return NONE_FOUND
    lines = ["Instruction files in the system prompt (outermost first):"]
    for f in files:
        note = f", cut to {CAP:,} characters" if f.truncated else ""
        lines.append(f"  {f.label}  ({len(f.text):,} characters{note})")
    return "\n".join(lines)


# ---- caching: re-read only when a file appears, changes or goes ---------------------------


def _signature(workspace: Path | str) -> tuple[tuple[str, int, int], ...]:
    sig = []
    for directory in _chain(os.path.realpath(workspace)):
        for name in NAMES:
            path = os.path.join(directory, name)
            try:
                st = os.stat(path)
            except OSError:
                continue
            sig.append((path, st.st_mtime_ns, st.st_size))
    return tuple(sig)


_cache: dict[Path, tuple[tuple[tuple[str, int, int], ...], str]] = {}

#: How many workspaces' blocks are kept, the most recently used (see ``prompt_text``).
CACHE_KEPT = 8


def prompt_text(workspace: Path) -> str:
    """The rendered block, cached until an instruction file changes (``/init`` writing
    AGENTS.md shows up on the next step), for the :data:`CACHE_KEPT` workspaces used last
    (a process working in many, an embedder or the test suite's in-process runs, keeps no
    more)."""
    real = os.path.realpath(workspace)
    workspace = Path(real)
    sig = _signature(real)
    cached = _cache.pop(workspace, None)
    if cached is None or cached[0] != sig:
        cached = (sig, render(find_files(workspace)))
    _cache[workspace] = cached  # the most recently used last
    while len(_cache) > CACHE_KEPT:
        del _cache[next(iter(_cache))]
    return cached[1]


# ---- hooks ---------------------------------------------------------------------------------


@hookimpl
def agent_addoption(options):
    options.add(Option("instructions", type="bool", default=True, flag="--no-instructions",
                       negate=True,
                       help="ignore AGENTS.md, CLAUDE.md and .agent.md (default: read them)"))


@hookimpl
def agent_prompt_fragments(session):
    if not session.config.get("instructions"):
        return None
    text = prompt_text(session.workspace)
    return Fragment("instructions", text, order=200) if text else None


def header_line(workspace: Path, enabled: bool = True) -> str:
    """The startup header's line: the instruction files in use, or how to write one."""
    if not enabled:
        return "instructions: off (--no-instructions)"
    files = find_files(workspace)
    if not files:
        return "no AGENTS.md found - /init writes one"
    return "instructions: " + ", ".join(f.label for f in files)


@hookimpl
def agent_header_lines(config, session):
    if session is None:
        return None
    return HeaderLine(header_line(session.workspace, bool(config.get("instructions"))),
                      order=40)


#: the window the breakdown is measured against when nothing says where compaction starts
DEFAULT_WINDOW = 120_000
#: prompt fragments with a row of their own in /context (this plugin's and the memory's)
OWN_LINES = {"instructions": "instructions", "memory": "memory"}


def context_window(session: Any) -> int:
    """Where the session's context is full: what a plugin reports for it (the status bar's
    ``context_limit``), else the ``compact_threshold`` key."""
    limit = None
    try:
        limit = session.hooks.status(session).context_limit
    except Exception:  # a broken status plugin must not take /context with it
        limit = None
    return int(limit or session.config.get("compact_threshold") or DEFAULT_WINDOW)


def run_context(app: Any, args: str, config: Any) -> str | None:
    """``/context``: what fills the context window (system prompt, tool schemas,
    instructions, memory, messages, free) with a bar, then the instruction files."""
    files = context_report(config.workspace, bool(config.get("instructions")))
    session = getattr(app, "session", None)
    if session is None:
        return show(app, files)
    from agent.loop.context_use import measure, report

    use = measure(session, context_window(session), OWN_LINES)
    return show(app, report(use) + "\n\n" + files)


def run_init(app: Any, args: str, config: Any) -> Any:
    """Send :data:`INIT_PROMPT` as a normal turn (extra words after /init are appended)."""
    prompt = INIT_PROMPT + (f"\n\nAlso: {args.strip()}" if args.strip() else "")
    # run_prompt starts the turn without echoing the long prompt as a typed command.
    for name in ("run_prompt", "submit"):
        start = getattr(app, name, None)
        if callable(start):
            return start(prompt)
    return prompt


@hookimpl
def agent_register_commands(register, config):
    register(SlashCommand("context", "show what fills the context window, and the instruction "
                                     "files",
                          lambda app, args: run_context(app, args, config), info=True))
    register(SlashCommand("init", "investigate the project and write a verified AGENTS.md",
                          lambda app, args: run_init(app, args, config), args="[focus]"))
