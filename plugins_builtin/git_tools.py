"""Adds read-only git tools (status, diff, log, show, blame, branch) and git_commit_message."""

from __future__ import annotations

import asyncio
import os
import re
import signal
from typing import Any

from agent import Effects, Tool, ToolError, hookimpl

TIMEOUT = 30.0
#: Bytes read from git before it is stopped; the core caps results at 30,000 chars anyway.
READ_LIMIT = 1_000_000
STATUS_LINES = 200
DIFF_FOR_MESSAGE = 24_000
SUBJECT_MAX = 72

NOT_INSTALLED = "git is not installed or not on PATH."
NOTHING_STAGED_FOR_MESSAGE = "Nothing is staged. Stage the change first, then ask again."
NO_MESSAGE = "the model returned no message; ask again or write one yourself"

# Status letters of `git status --porcelain`, named.
LETTERS = {"M": "modified", "A": "added", "D": "deleted", "R": "renamed", "C": "copied",
           "U": "conflicted", "T": "type changed", "?": "untracked", "!": "ignored"}


class GitFailed(Exception):
    def __init__(self, code: int, stderr: str) -> None:
        super().__init__(stderr)
        self.code = code
        self.stderr = stderr


def _env() -> dict[str, str]:
    env = dict(os.environ)
    # Parseable messages, no pager, no prompts, and no index.lock taken by read-only commands.
    env.update(LC_ALL="C", LANG="C", GIT_PAGER="cat", PAGER="cat", GIT_TERMINAL_PROMPT="0",
               GIT_OPTIONAL_LOCKS="0")
    return env


async def git(ctx: Any, *argv: str, timeout: float = TIMEOUT) -> str:
    """Run ``git argv`` (a fixed argument vector, never a shell string) in the workspace.

    Returns stdout.  Raises :class:`ToolError` for the common failures (not installed, not
    a repository, timeout) and :class:`GitFailed` for any other non-zero exit.
    """
    try:
        proc = await asyncio.create_subprocess_exec(
            "git", "--no-pager", "-c", "color.ui=false", "-c", "core.quotepath=false", *argv,
            cwd=str(ctx.workspace), stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, env=_env(),
            start_new_session=True)
    except FileNotFoundError:
        raise ToolError(NOT_INSTALLED) from None
    try:
        out, err, stopped = await asyncio.wait_for(_collect(proc), timeout)
    except (TimeoutError, asyncio.CancelledError) as exc:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except OSError:
            pass
        await proc.wait()
        if isinstance(exc, asyncio.CancelledError):
            raise
        raise ToolError(f"git {argv[0]} took longer than {int(timeout)}s and was stopped.") \
            from None
    stderr = err.decode("utf-8", "replace").strip()
    if proc.returncode != 0 and not stopped:
        # Outside a repository some commands say so and others (diff) fail differently.
        if "not a git repository" in stderr.lower() or not await _inside_repository(ctx):
            raise ToolError(f"{ctx.workspace} is not a git repository.")
        raise GitFailed(proc.returncode or 0, stderr)
    return out.decode("utf-8", "replace")


async def _inside_repository(ctx: Any) -> bool:
    proc = await asyncio.create_subprocess_exec(
        "git", "rev-parse", "--git-dir", cwd=str(ctx.workspace), env=_env(),
        stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.DEVNULL)
    try:
        return await asyncio.wait_for(proc.wait(), TIMEOUT) == 0
    except TimeoutError:
        proc.kill()
        await proc.wait()
        return True  # cannot tell: report git's own error instead


async def _collect(proc: asyncio.subprocess.Process) -> tuple[bytes, bytes, bool]:
    """stdout (up to :data:`READ_LIMIT` bytes, then git is stopped), stderr, and whether
    git was stopped because it had said enough."""
    async def read_out() -> bytes:
        chunks: list[bytes] = []
        size = 0
        while True:
            data = await proc.stdout.read(65_536)
            if not data:
                break
            chunks.append(data)
            size += len(data)
            if size >= READ_LIMIT:
                proc.kill()  # enough for any result the model will see
                break
        return b"".join(chunks)

    out, err = await asyncio.gather(read_out(), proc.stderr.read())
    await proc.wait()
    return out, err, len(out) >= READ_LIMIT


async def run_git(ctx: Any, *argv: str) -> str:
    """:func:`git`, with any other failure passed through as git's own words."""
    try:
        return await git(ctx, *argv)
    except GitFailed as exc:
        raise ToolError(exc.stderr or f"git {argv[0]} failed with exit code {exc.code}.") \
            from None


def _no_option(value: str, what: str) -> str:
    if value.startswith("-"):
        raise ToolError(f'{what} must not start with "-": {value}')
    return value


def _paths(path: str | None) -> list[str]:
    return ["--", path] if path else []


# ---- git_status ---------------------------------------------------------------------------

def _describe(xy: str) -> str:
    x, y = xy[0], xy[1]
    if xy in ("??", "!!"):
        return LETTERS[x]
    if "U" in xy or xy in ("AA", "DD"):
        return "conflicted"
    parts = []
    if x not in " .":
        parts.append("staged " + LETTERS.get(x, x))
    if y not in " .":
        parts.append(LETTERS.get(y, y))
    return ", ".join(parts)


def _branch_name(header: str) -> str:
    name = header[3:] if header.startswith("## ") else header
    for prefix in ("No commits yet on ", "Initial commit on "):
        if name.startswith(prefix):
            return name[len(prefix):]
    if name.startswith("HEAD (no branch)"):
        return "a detached HEAD"
    name = name.split("...", 1)[0]
    return re.sub(r" \[.*\]$", "", name)


def format_status(porcelain: str) -> str:
    """Words for ``git status --porcelain=v1 --branch -z`` output."""
    entries = porcelain.split("\0")
    branch = _branch_name(entries[0]) if entries and entries[0].startswith("## ") else "?"
    lines: list[str] = []
    i = 1
    while i < len(entries):
        entry = entries[i]
        i += 1
        if len(entry) < 4:
            continue
        xy, path = entry[:2], entry[3:]
        if "R" in xy or "C" in xy:  # -z puts the original path in the next entry
            if i < len(entries):
                path = f"{entries[i]} -> {path}"
                i += 1
        lines.append(f"{path}  ({_describe(xy)})")
    if not lines:
        return f"On {branch}, working tree clean."
    shown = lines[:STATUS_LINES]
    more = f"\n... and {len(lines) - STATUS_LINES} more" if len(lines) > STATUS_LINES else ""
    return f"On {branch}, {len(lines)} changed:\n" + "\n".join(shown) + more


async def git_status(args: dict[str, Any], ctx: Any) -> str:
    return format_status(await run_git(ctx, "status", "--porcelain=v1", "--branch", "-z"))


# ---- git_diff / git_log / git_show / git_blame / git_branch -------------------------------

async def git_diff(args: dict[str, Any], ctx: Any) -> str:
    staged = bool(args.get("staged"))
    argv = ["diff", "--no-ext-diff", "--no-color"] + (["--staged"] if staged else [])
    out = await run_git(ctx, *argv, *_paths(args.get("path")))
    if not out.strip():
        return "Nothing staged." if staged else "No uncommitted changes."
    return out.rstrip("\n")


async def git_log(args: dict[str, Any], ctx: Any) -> str:
    limit = int(args.get("limit") or 15)
    try:
        out = await git(ctx, "log", f"-n{limit}", "--date=short",
                        "--format=%h  %ad  %an  %s", *_paths(args.get("path")))
    except GitFailed as exc:
        if "does not have any commits" in exc.stderr:
            return "No commits."
        raise ToolError(exc.stderr or f"git log failed with exit code {exc.code}.") from None
    return out.rstrip("\n") or "No commits."


async def git_show(args: dict[str, Any], ctx: Any) -> str:
    ref = _no_option(args["ref"], "ref")
    out = await run_git(ctx, "show", "--no-ext-diff", "--no-color", "--end-of-options", ref,
                        *_paths(args.get("path")))
    return out.rstrip("\n") or "Nothing to show."


async def git_blame(args: dict[str, Any], ctx: Any) -> str:
    path = args["path"]
    start, end = args.get("startLine"), args.get("endLine")
    argv = ["blame", "--date=short", "-w"]
    if start is not None or end is not None:
        first = int(start or 1)
        last = int(end) if end is not None else first + 40
        if last < first:
            raise ToolError(f"endLine ({last}) is before startLine ({first}).")
        argv.append(f"-L{first},{last}")
    out = await run_git(ctx, *argv, "--", path)
    return out.rstrip("\n") or f"{path} is empty."


async def git_branch(args: dict[str, Any], ctx: Any) -> str:
    refs = ["refs/heads"] + (["refs/remotes"] if args.get("remote") else [])
    out = await run_git(ctx, "for-each-ref", "--sort=-committerdate",
                        "--format=%(HEAD)%00%(refname:short)%00%(committerdate:short)%00"
                        "%(subject)%00%(symref)", *refs)
    lines = []
    for row in out.splitlines():
        fields = row.split("\0")
        if len(fields) < 5 or fields[4]:  # origin/HEAD and other symbolic refs
            continue
        head, name, date, subject = fields[:4]
        lines.append(f"{'* ' if head == '*' else '  '}{name}  {date}  {subject}")
    return "\n".join(lines) or "No branches yet."


# ---- git_commit_message -------------------------------------------------------------------

MESSAGE_SYSTEM = """\
You write git commit messages. Reply with exactly one line: the subject line for the staged
change below, in the style of the repository's recent subjects (language, tense,
capitalisation, prefixes such as "fix:" only if the repository uses them). At most 72
characters. No quotes, no backticks, no explanation, no label such as "Commit message:"."""


def unwrap_message(reply: str) -> str:
    """The subject line inside a model's reply: the first fenced block if there is one, its
    first non-empty line, without wrapping quotes or backticks, at most 72 characters."""
    text = reply.replace("\r\n", "\n")
    fence = re.search(r"```[^\n]*\n(.*?)(?:```|$)", text, re.DOTALL)
    if fence:
        text = fence.group(1)
    line = next((ln.strip() for ln in text.split("\n") if ln.strip()), "")
    line = line.strip("\"'`\u201c\u201d\u2018\u2019 ")
    return line[:SUBJECT_MAX].rstrip()


def message_prompt(diff: str, subjects: str) -> str:
    if len(diff) > DIFF_FOR_MESSAGE:
        cut = len(diff) - DIFF_FOR_MESSAGE
        diff = diff[:DIFF_FOR_MESSAGE] + f"\n... [diff truncated: {cut} more chars]"
    return (f"Recent commit subjects, newest first:\n{subjects}\n\n"
            f"Staged diff:\n{diff}")


async def _ask_model(ctx: Any, prompt: str) -> str:
    from agent.messages import Message
    from agent.providers import ProviderError, ProviderRequest, StepFinished, TextDelta

    session = ctx.session
    runtime = getattr(session, "runtime", None)
    provider = getattr(runtime, "provider", None)
    if provider is None:
        raise ToolError("git_commit_message needs a model, and none is available here.")
    request = ProviderRequest(model=getattr(session, "model", "") or "", system=MESSAGE_SYSTEM,
                              messages=[Message.user(prompt)], tools=[], thinking="off",
                              max_tokens=1_000, metadata={"purpose": "commit-message"})
    deltas: list[str] = []
    final = ""
    try:
        async for item in provider.stream(request):
            if isinstance(item, TextDelta):
                deltas.append(item.text)
            elif isinstance(item, StepFinished):
                final = item.message.text
    except ProviderError as exc:
        raise ToolError(f"the model call failed: {exc.message}") from None
    return "".join(deltas) or final


async def git_commit_message(args: dict[str, Any], ctx: Any) -> str:
    diff = await run_git(ctx, "diff", "--staged", "--no-ext-diff", "--no-color")
    if not diff.strip():
        return NOTHING_STAGED_FOR_MESSAGE
    try:
        subjects = (await git(ctx, "log", "-n15", "--format=%s")).strip()
    except GitFailed:
        subjects = ""
    message = unwrap_message(await _ask_model(ctx, message_prompt(diff, subjects
                                                                  or "(no commits yet)")))
    if not message:
        raise ToolError(NO_MESSAGE)
    return message


# ---- registration -------------------------------------------------------------------------

def _reads(args: dict[str, Any]) -> Effects:
    return Effects(reads=(args.get("path") or ".",))


_PATH = {"type": "string", "minLength": 1, "description": "Limit to this path."}


def _schema(properties: dict[str, Any], required: tuple[str, ...] = ()) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "required": list(required),
            "additionalProperties": False}


def _tool(name: str, description: str, run: Any, properties: dict[str, Any],
          required: tuple[str, ...] = (), prompt: str | None = None) -> Tool:
    return Tool(name=name, description=description, run=run,
                parameters=_schema(properties, required), effects=_reads, tool_set="git",
                read_only=True, prompt=prompt)


TOOLS = (
    _tool("git_status", "The current branch and every changed file, staged and unstaged, "
          "in words.", git_status, {},
          prompt="git_* tools are read-only and need no approval; prefer them to bash for "
                 "inspecting history."),
    _tool("git_diff", "Uncommitted changes as a unified diff (the staged ones with staged: "
          "true), optionally for one path.", git_diff,
          {"staged": {"type": "boolean"}, "path": _PATH}),
    _tool("git_log", "Recent commits, newest first: hash, date, author, subject.", git_log,
          {"limit": {"type": "integer", "minimum": 1, "maximum": 40,
                     "description": "How many commits (default 15)."}, "path": _PATH}),
    _tool("git_show", "One commit (message, author, diff) or an object such as HEAD:file.",
          git_show, {"ref": {"type": "string", "minLength": 1,
                             "description": "A commit, tag, branch or rev:path."},
                     "path": _PATH}, ("ref",)),
    _tool("git_blame", "Who last changed each line of a file (whole file, or startLine to "
          "endLine; startLine alone covers 40 lines).", git_blame,
          {"path": {"type": "string", "minLength": 1},
           "startLine": {"type": "integer", "minimum": 1},
           "endLine": {"type": "integer", "minimum": 1}}, ("path",)),
    _tool("git_branch", "Local branches by last commit date, the current one marked *; "
          "remote: true adds remote-tracking branches.", git_branch,
          {"remote": {"type": "boolean"}}),
    _tool("git_commit_message", "Suggest a one-line commit message for the staged change, in "
          "the repository's style. Never commits.", git_commit_message, {}),
)


@hookimpl
def agent_register_tools(register, config):
    for tool in TOOLS:
        register(tool)
