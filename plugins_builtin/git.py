"""Adds read-only git tools (status, diff, log, show, blame, branch) and git_commit_message."""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from agent import Description, Effects, Option, Tool, ToolError, hookimpl
from agent.contain import safegit
from agent.contain.safegit import GitFailed
from agent.contain.secrets import SecretsPolicy, policy_for, redact_diff

TIMEOUT = safegit.TIMEOUT
#: Bytes read from git before it is stopped; the core caps results at 30,000 chars anyway.
READ_LIMIT = safegit.READ_LIMIT
STATUS_LINES = 200
DIFF_FOR_MESSAGE = 24_000
SUBJECT_MAX = 72

NOT_INSTALLED = safegit.NOT_INSTALLED
#: Flags every command that prints file content gets: no textconv driver, no external diff,
#: no recursion into submodules (each is another repository with its own config).
CONTENT_FLAGS = ("--no-textconv", "--no-ext-diff", "--ignore-submodules=all",
                 "--src-prefix=a/", "--dst-prefix=b/", "--no-color")
NOTHING_STAGED_FOR_MESSAGE = "Nothing is staged. Stage the change first, then ask again."
NO_MESSAGE = "the model returned no message; ask again or write one yourself"

# Status letters of `git status --porcelain`, named.
LETTERS = {"M": "modified", "A": "added", "D": "deleted", "R": "renamed", "C": "copied",
           "U": "conflicted", "T": "type changed", "?": "untracked", "!": "ignored"}


async def prepare(ctx: Any, command: str) -> safegit.Prepared:
    """The repository checked and its config listed, for a tool that runs several git
    commands for one answer (see :class:`agent.contain.safegit.Prepared`); ``command``
    names the git command a message speaks of.  A failing listing (a config file git
    cannot parse) is answered in git's words, as the command's own failure would be."""
    try:
        with _tool_errors(ctx, command):
            return await safegit.prepare(ctx.workspace, ctx.config)
    except GitFailed as exc:
        raise ToolError(exc.stderr or f"git {command} failed with exit code {exc.code}.") \
            from None


async def git(ctx: Any, *argv: str, timeout: float = TIMEOUT,
              prepared: safegit.Prepared | None = None) -> str:
    """Run ``git argv`` in the workspace through :mod:`agent.contain.safegit` (the repository's
    config can start no program; see docs/security.md), on ``prepared`` when given.

    Returns stdout.  Raises :class:`ToolError` for the common failures (not installed, not
    a repository, a repository leading outside the workspace, timeout) and
    :class:`GitFailed` for any other non-zero exit.
    """
    with _tool_errors(ctx, argv[0], timeout):
        if prepared is None:
            out, _ = await safegit.run(ctx.workspace, argv, config=ctx.config,
                                       timeout=timeout, limit=READ_LIMIT)
        else:
            out, _ = await safegit.run_prepared(prepared, argv, config=ctx.config,
                                                timeout=timeout, limit=READ_LIMIT)
    return out


@contextmanager
def _tool_errors(ctx: Any, command: str, timeout: float = TIMEOUT) -> Iterator[None]:
    """safegit's failures as the words a tool answers with (GitFailed passes through)."""
    try:
        yield
    except safegit.GitMissing:
        raise ToolError(NOT_INSTALLED) from None
    except safegit.NotARepository:
        raise ToolError(f"{ctx.workspace} is not a git repository.") from None
    except safegit.GitRefused as exc:
        raise ToolError(f"Refusing to run git here: {exc}") from None
    except TimeoutError:
        raise ToolError(f"git {command} took longer than {int(timeout)}s and was stopped.") \
            from None
    except safegit.GitFailed as exc:
        if "not a git repository" in exc.stderr.lower():
            raise ToolError(f"{ctx.workspace} is not a git repository.") from None
        raise


async def run_git(ctx: Any, *argv: str, prepared: safegit.Prepared | None = None) -> str:
    """:func:`git`, with any other failure passed through as git's own words."""
    try:
        return await git(ctx, *argv, prepared=prepared)
    except GitFailed as exc:
        raise ToolError(exc.stderr or f"git {argv[0]} failed with exit code {exc.code}.") \
            from None


# ---- the secrets policy on git's output ---------------------------------------------------

def _policy(ctx: Any) -> SecretsPolicy:
    return policy_for(ctx.config, ctx.workspace)


def refuse_secret_path(ctx: Any, path: str | None) -> None:
    """A path argument naming a secret is refused before git runs."""
    if path:
        verdict = _policy(ctx).check(path)
        if verdict is not None:
            raise ToolError(verdict.message("show"))


def _repo_judge(ctx: Any, prepared: safegit.Prepared | None = None) -> Any:
    """``is_secret`` for repository-relative paths (git prints them from the top of the
    work tree, which may lie above the workspace): the work tree the command ran in when
    ``prepared`` is given, else the one found from the workspace."""
    policy = _policy(ctx)
    if prepared is not None:
        top = prepared.repo.work_tree
    else:
        try:
            top = safegit.locate(ctx.workspace, ctx.config).work_tree
        except (safegit.NotARepository, safegit.GitRefused):
            top = Path(os.path.realpath(ctx.workspace))

    def is_secret(path: str) -> bool:
        return policy.is_secret(str(top / path)) or policy.is_secret(path)

    return is_secret


def without_secrets(ctx: Any, text: str, prepared: safegit.Prepared | None = None) -> str:
    """git's diff output minus the sections of secret files, with a note naming them
    (``prepared``: what the command ran on, whose work tree its paths are relative to)."""
    redacted, dropped = redact_diff(text, _repo_judge(ctx, prepared))
    if dropped:
        redacted = redacted.rstrip("\n") + (
            "\n[secrets policy: changes to secret files are not shown: "
            f"{', '.join(dropped)}. Ask the user for the values you need.]")
    return redacted


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
    return format_status(await run_git(ctx, "status", "--porcelain=v1", "--branch", "-z",
                                       "--ignore-submodules=all"))


# ---- git_diff / git_log / git_show / git_blame / git_branch -------------------------------

async def git_diff(args: dict[str, Any], ctx: Any) -> str:
    staged = bool(args.get("staged"))
    refuse_secret_path(ctx, args.get("path"))
    argv = ["diff", *CONTENT_FLAGS] + (["--staged"] if staged else [])
    prepared = await prepare(ctx, "diff")
    out = await run_git(ctx, *argv, *_paths(args.get("path")), prepared=prepared)
    if not out.strip():
        return "Nothing staged." if staged else "No uncommitted changes."
    return without_secrets(ctx, out.rstrip("\n"), prepared)


async def git_log(args: dict[str, Any], ctx: Any) -> str:
    limit = int(args.get("limit") or 15)
    patch = bool(args.get("patch"))
    refuse_secret_path(ctx, args.get("path") if patch else None)
    argv = ["log", f"-n{limit}", "--date=short"]
    if patch:
        argv += ["-p", *CONTENT_FLAGS, "--format=commit %h  %ad  %an  %s"]
    else:
        argv.append("--format=%h  %ad  %an  %s")
    prepared = await prepare(ctx, "log")
    try:
        out = await git(ctx, *argv, *_paths(args.get("path")), prepared=prepared)
    except GitFailed as exc:
        if "does not have any commits" in exc.stderr:
            return "No commits."
        raise ToolError(exc.stderr or f"git log failed with exit code {exc.code}.") from None
    out = out.rstrip("\n")
    return (without_secrets(ctx, out, prepared) if patch else out) or "No commits."


def _ref_paths(ref: str) -> list[str]:
    """Every path a ``rev:path`` spelling may name (one per colon: ``HEAD:a``, ``:0:a``,
    ``HEAD^{/x:y}:a``), so the secrets policy can judge them all."""
    return [ref[i + 1:] for i, c in enumerate(ref) if c == ":" and ref[i + 1:]]


def _ref_path(ref: str) -> str | None:
    """The path of ``rev:path`` or of an index ``:path`` / ``:N:path`` as git reads it (the
    first colon outside braces: ``HEAD@{10:00}`` has none), or None."""
    depth = 0
    for i, c in enumerate(ref):
        if c == "{":
            depth += 1
        elif c == "}" and depth:
            depth -= 1
        elif c == ":" and not depth:
            path = ref[i + 1:]
            if i == 0 and len(path) > 1 and path[0] in "0123" and path[1] == ":":
                path = path[2:]  # :N:path, a stage of the index
            return path if path and not (i == 0 and path.startswith("/")) else None
    return None


def _names_a_path(ref: str) -> bool:
    """Whether git reads ``ref`` as ``rev:path`` or an index path (see :func:`_ref_path`)."""
    return _ref_path(ref) is not None


async def git_show(args: dict[str, Any], ctx: Any) -> str:
    ref = _no_option(args["ref"], "ref")
    refuse_secret_path(ctx, args.get("path"))
    for path in _ref_paths(ref):
        refuse_secret_path(ctx, path)
    # A blob reached without a path (its id, a tag on it, a reflog entry) carries no name to
    # judge: only rev:path may show a file's content, and its path was judged above.
    prepared = await prepare(ctx, "show")  # one config listing for both commands
    kind = ""
    if not _names_a_path(ref):  # rev:path may be a blob: its path was judged above
        try:
            kind = (await git(ctx, "cat-file", "-t", "--end-of-options", ref + "^{}",
                              prepared=prepared)).strip()
        except GitFailed:
            pass
    if kind == "blob":
        raise ToolError(f"{ref} is a file's content without its path; show it as "
                        "rev:path (for example HEAD:src/app.py) so its path can be "
                        "checked against the secrets policy.")
    out = await run_git(ctx, "show", *CONTENT_FLAGS, "--end-of-options", ref,
                        *_paths(args.get("path")), prepared=prepared)
    return without_secrets(ctx, out.rstrip("\n"), prepared) or "Nothing to show."


async def git_blame(args: dict[str, Any], ctx: Any) -> str:
    path = args["path"]
    refuse_secret_path(ctx, path)
    start, end = args.get("startLine"), args.get("endLine")
    argv = ["blame", "--date=short", "-w", "--no-textconv"]
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
    from agent.contract.messages import Message
    from agent.contract.providers import ProviderError, ProviderRequest, StepFinished, TextDelta

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
    prepared = await prepare(ctx, "diff")  # one config listing for both commands
    diff = await run_git(ctx, "diff", "--staged", *CONTENT_FLAGS, prepared=prepared)
    diff = without_secrets(ctx, diff, prepared) if diff.strip() else diff
    if not diff.strip():
        return NOTHING_STAGED_FOR_MESSAGE
    try:
        subjects = (await git(ctx, "log", "-n15", "--format=%s", prepared=prepared)).strip()
    except GitFailed:
        subjects = ""
    message = unwrap_message(await _ask_model(ctx, message_prompt(diff, subjects
                                                                  or "(no commits yet)")))
    if not message:
        raise ToolError(NO_MESSAGE)
    return message


# ---- registration -------------------------------------------------------------------------

def _reads(args: dict[str, Any]) -> Effects:
    """The path read, and a ref as a target rules can match (``git_show = {"*" = "allow",
    "origin/*" = "deny"}``); ``REV:path`` reads that path too, so path rules, the secrets
    policy and registry manifests see it."""
    reads = [args.get("path") or "."]
    ref = args.get("ref")
    targets: tuple[str, ...] = ()
    if isinstance(ref, str) and ref:
        targets = (ref,)
        path = _ref_path(ref)  # as git splits it (HEAD@{10:00} has no path, :0:a is a)
        if path:
            reads.append(path)
    return Effects(reads=tuple(dict.fromkeys(reads)), targets=targets)


_PATH = {"type": "string", "minLength": 1, "description": "Limit to this path."}


def _schema(properties: dict[str, Any], required: tuple[str, ...] = ()) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "required": list(required),
            "additionalProperties": False}


def _describer(name: str) -> Any:
    def describe(args: dict[str, Any]) -> Description:
        bits = [str(v) for v in args.values() if isinstance(v, (str, int)) and v not in ("", 0)]
        line = "  ".join(bits)
        return Description((line,) if line else (),
                           f"Run git {name[4:].replace('_', ' ')}" + (f" {line}" if line else "")
                           + "?")
    return describe


def _tool(name: str, description: str, run: Any, properties: dict[str, Any],
          required: tuple[str, ...] = (), prompt: str | None = None) -> Tool:
    return Tool(name=name, description=description, run=run,
                parameters=_schema(properties, required), effects=_reads, tool_set="git",
                read_only=True, prompt=prompt, describe=_describer(name))


TOOLS = (
    _tool("git_status", "The current branch and every changed file, staged and unstaged, "
          "in words.", git_status, {},
          prompt="git_* tools are read-only and need no approval; prefer them to bash for "
                 "inspecting history."),
    _tool("git_diff", "Uncommitted changes as a unified diff (the staged ones with staged: "
          "true), optionally for one path.", git_diff,
          {"staged": {"type": "boolean"}, "path": _PATH}),
    _tool("git_log", "Recent commits, newest first: hash, date, author, subject (patch: "
          "true adds each commit's diff).", git_log,
          {"limit": {"type": "integer", "minimum": 1, "maximum": 40,
                     "description": "How many commits (default 15)."}, "path": _PATH,
           "patch": {"type": "boolean", "description": "Include each commit's diff."}}),
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
def agent_addoption(options):
    options.add(Option("git_trusted_dirs", type="list", default=[],
                       help="repositories outside the workspace the git tools may use (a "
                            ".git file or commondir leading there is otherwise refused)"))


@hookimpl
def agent_register_tools(register, config):
    for tool in TOOLS:
        register(tool)
