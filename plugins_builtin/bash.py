"""Adds `bash`: runs a shell command in the workspace, streaming its output live."""

from __future__ import annotations

import asyncio
import codecs
import logging
import os
import signal
from collections.abc import Callable
from typing import Any

from agent import (
    OFF,
    READ_ONLY,
    WORKSPACE_WRITE,
    Description,
    Effects,
    Tool,
    ToolError,
    ToolResult,
    hookimpl,
    sandbox_for,
)

log = logging.getLogger("agent.plugins.bash")

DEFAULT_TIMEOUT_MS = 120_000
MIN_TIMEOUT_MS = 1_000
MAX_TIMEOUT_MS = 600_000

#: Characters kept from the end of each stream; older output is counted, not kept.  The
#: core saves a result over its 30,000-character cap whole under the state dir and shows the
#: model its head and tail with the path (agent.loop.saved_results), so this much is kept.
TAIL_CHARS = 1_000_000
#: The part of the result (characters) the two sections share.
RESULT_BUDGET = 2 * TAIL_CHARS
#: How bash is started: no login profile and no rc file.  A login shell (``bash -l``) sources
#: ``/etc/profile``, which on Debian and Ubuntu sets PATH afresh: the venv, nvm or PATH entry the
#: agent was started with would be lost, and whatever the profile prints (a version manager
#: that cannot write its cache in the sandbox) would land in every result.
BASH_ARGV = ("bash", "--noprofile", "--norc", "-c")
#: Variables naming a file that a non-interactive bash (or sh) sources before the command:
#: the same profile noise, and a way to run code the command line does not show.
STARTUP_FILE_VARIABLES = ("BASH_ENV", "ENV")
#: After SIGTERM, how long the command's processes get before SIGKILL (seconds).
KILL_GRACE = 0.25
#: After the command exits, how long to keep reading output that background jobs still write.
DRAIN_AFTER_EXIT = 1.0
#: Live output is sent in batches at most this often (seconds), at most this many characters.
LIVE_INTERVAL = 0.05
LIVE_MAX = 16_000
READ_SIZE = 65_536

#: How a write fails in the read-only sandbox (strerror of EROFS).
READ_ONLY_ERROR = "Read-only file system"
READ_ONLY_HINT = (
    "\n(This command ran without approval because it looked read-only, so it ran in a "
    "read-only sandbox: nothing but a scratch /tmp is writable there. If it must write, call "
    "bash again with the same command and \"write\": true; the user will be asked.)")

#: How writing a persistence file fails in the writable sandbox (EROFS, or EBUSY when
#: renaming over or away a wall), and what the model is told then.
WALL_ERRORS = (READ_ONLY_ERROR, "Device or resource busy")
WALL_HINT = (
    "\n(Git hooks and config, .envrc, .vscode/, .idea/, .agent/, .claude/ and .mcp.json are "
    "read-only to every command: they act later, outside the sandbox. If this command must "
    "write one, call bash again with \"write_protected\": [its path]; the user will be "
    "asked.)")

INTERRUPTED = "The user interrupted this command. It did not finish, so its effects are unknown."
NO_OUTPUT = "(no output before it was killed)"

PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "command": {"type": "string", "minLength": 1,
                    "description": "The command line, run with `bash -c` in the workspace root."},
        "timeout": {"type": "integer", "minimum": MIN_TIMEOUT_MS, "maximum": MAX_TIMEOUT_MS,
                    "description": "Milliseconds before the command is killed "
                                   f"(default {DEFAULT_TIMEOUT_MS})."},
        "write": {"type": "boolean",
                  "description": "Run with the workspace writable although the command looks "
                                 "read-only (it failed with 'Read-only file system'). Asks "
                                 "the user."},
        "sockets": {"type": "array", "maxItems": 8,
                    "items": {"type": "string", "minLength": 1},
                    "description": "Unix sockets the command must reach, by path (e.g. "
                                   "[\"/run/docker.sock\"] for docker). No sandboxed command "
                                   "can open a unix socket otherwise. The user is asked, every "
                                   "time."},
        "write_protected": {"type": "array", "maxItems": 8,
                            "items": {"type": "string", "minLength": 1},
                            "description": "Protected files the command must write, relative "
                                           "to the workspace (e.g. [\".git/config\"] for `git "
                                           "config user.name x`, [\".envrc\"] for `direnv "
                                           "allow`). Git hooks and config, .envrc, .vscode/, "
                                           ".idea/, .agent/, .claude/ and .mcp.json are "
                                           "read-only to every command otherwise. The user is "
                                           "asked, every time."},
        "network": {"type": "boolean",
                    "description": "Run with network access (package installs, downloads). "
                                   "The sandbox blocks the network otherwise; asking for it "
                                   "always asks the user."},
    },
    "required": ["command"],
    "additionalProperties": False,
}

DESCRIPTION = (
    "Run a shell command with bash in the workspace root and return its exit code, stdout and "
    "stderr (the last 30,000 characters). stdin is empty, so the command must not wait for "
    "input. `timeout` is in milliseconds (1000-600000, default 120000); on timeout the whole "
    "process tree is killed. Background jobs that keep the output open stop being read once "
    "the command exits; redirect their output to a file.")

#: What the description adds about the sandbox, per mode.
SANDBOX_NOTES = {
    WORKSPACE_WRITE: (" The command runs in a sandbox: only the workspace and /tmp are "
                      "writable, secrets (.env files, keys, ~/.ssh) are hidden, there is no "
                      "network unless you pass network: true, and every process it started "
                      "ends when it exits. A command that runs without the user's approval "
                      "(it looked read-only) runs read-only: if it fails with 'Read-only file "
                      "system', repeat it with write: true."),
    READ_ONLY: (" The command runs in a read-only sandbox: it cannot write anything, secrets "
                "are hidden and there is no network."),
    OFF: "",
}


class _Tail:
    """The last :data:`TAIL_CHARS` characters of one stream, plus counts of everything."""

    def __init__(self, limit: int = TAIL_CHARS) -> None:
        self.limit = limit
        self.parts: list[str] = []
        self.size = 0
        self.total = 0
        self.newlines = 0
        self.last = ""

    def add(self, text: str) -> None:
        if not text:
            return
        self.parts.append(text)
        self.size += len(text)
        self.total += len(text)
        self.newlines += text.count("\n")
        self.last = text[-1]
        if self.size > 2 * self.limit:  # trim in batches: amortised linear
            kept = "".join(self.parts)[-self.limit:]
            self.parts, self.size = [kept], len(kept)

    @property
    def lines(self) -> int:
        return self.newlines + (1 if self.total and self.last != "\n" else 0)

    def text(self, budget: int) -> str:
        """The kept tail, trimmed to ``budget`` characters and to no blank edges."""
        kept = "".join(self.parts)[-self.limit:]
        if len(kept) > budget:
            kept = kept[-budget:]
        if self.total > len(kept):
            # Start at a line boundary rather than mid-line, when one is near.
            cut = kept.find("\n", 0, 500)
            if cut >= 0:
                kept = kept[cut + 1:]
        dropped = self.total - len(kept)
        body = kept.rstrip().lstrip("\n")
        if dropped and body:
            return f"... [{dropped} earlier chars not shown]\n{body}"
        return body


class _Live:
    """Batches live output for ``emit_output``: at most every :data:`LIVE_INTERVAL` seconds,
    and never more than :data:`LIVE_MAX` characters pending (a flood keeps its newest part)."""

    def __init__(self, emit: Callable[[str], None]) -> None:
        self.emit = emit
        self.parts: list[str] = []
        self.size = 0
        self.skipped = 0

    def add(self, text: str) -> None:
        self.parts.append(text)
        self.size += len(text)
        if self.size > 2 * LIVE_MAX:
            joined = "".join(self.parts)
            self.skipped += len(joined) - LIVE_MAX
            self.parts, self.size = [joined[-LIVE_MAX:]], LIVE_MAX

    def flush(self) -> None:
        if not self.parts:
            return
        text = "".join(self.parts)
        if len(text) > LIVE_MAX:
            self.skipped += len(text) - LIVE_MAX
            text = text[-LIVE_MAX:]
        if self.skipped:
            text = f"[... {self.skipped} chars skipped ...]\n{text}"
        self.parts, self.size, self.skipped = [], 0, 0
        try:
            self.emit(text)
        except Exception:  # a broken display never stops the command
            log.exception("emitting live output failed")

    async def run(self) -> None:
        while True:
            await asyncio.sleep(LIVE_INTERVAL)
            self.flush()


class _PipeReader:
    """Reads one pipe without blocking the loop; ``done`` resolves at end of file."""

    def __init__(self, fd: int, tail: _Tail, live: _Live) -> None:
        self.fd = fd
        self.tail = tail
        self.live = live
        self.decoder = codecs.getincrementaldecoder("utf-8")("replace")
        self.loop = asyncio.get_running_loop()
        self.done: asyncio.Future[None] = self.loop.create_future()
        os.set_blocking(fd, False)
        self.loop.add_reader(fd, self._readable)

    def _readable(self) -> None:
        try:
            data = os.read(self.fd, READ_SIZE)
        except BlockingIOError:
            return
        except OSError:
            data = b""
        text = self.decoder.decode(data, final=not data)
        self.tail.add(text)
        if text:
            self.live.add(text)
        if not data:
            self.close()

    def close(self) -> None:
        """Stop reading (at end of file, or because a background job holds the pipe)."""
        if self.fd < 0:
            return
        self.loop.remove_reader(self.fd)
        os.close(self.fd)
        self.fd = -1
        if not self.done.done():
            self.done.set_result(None)


async def _stop_readers(readers: list[_PipeReader], wait: float) -> bool:
    """Wait up to ``wait`` seconds for end of file; True if some pipe was still open."""
    pending = [r.done for r in readers if not r.done.done()]
    if pending:
        await asyncio.wait(pending, timeout=wait)
    still_open = any(not r.done.done() for r in readers)
    for reader in readers:
        reader.close()
    return still_open


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def _sections(out: _Tail, err: _Tail) -> str:
    """``stdout:`` and ``stderr:`` sections sharing :data:`RESULT_BUDGET` characters."""
    half = RESULT_BUDGET // 2
    out_len = min(out.total, out.limit)
    err_len = min(err.total, err.limit)
    out_budget = max(half, RESULT_BUDGET - min(err_len, half))
    err_budget = max(half, RESULT_BUDGET - min(out_len, half))
    parts = []
    stdout = out.text(out_budget)
    stderr = err.text(err_budget)
    if stdout:
        parts.append(f"stdout:\n{stdout}")
    if stderr:
        parts.append(f"stderr:\n{stderr}")
    return "\n".join(parts)


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def path_under_tmp(env: dict[str, str]) -> list[str]:
    """The PATH entries under the host's ``/tmp`` (a venv made there): the sandbox's private
    ``/tmp`` would hide them, so they are shown read-only.  The PATH agent was started with
    is the user's own setting, not something the model wrote."""
    return [entry for entry in env.get("PATH", "").split(os.pathsep)
            if entry.startswith("/tmp/")]


def command_environment() -> dict[str, str]:
    """The environment a command starts from: the agent's own, as it was started (PATH
    included, so an activated venv's tools are found), less the startup-file variables.  The
    sandbox then takes the credentials out."""
    return {k: v for k, v in os.environ.items() if k not in STARTUP_FILE_VARIABLES}


async def run_bash(args: dict[str, Any], ctx: Any) -> ToolResult:
    command: str = args["command"]
    timeout_ms = int(args.get("timeout") or DEFAULT_TIMEOUT_MS)
    out, err = _Tail(), _Tail()
    live = _Live(ctx.emit_output)
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    # Nobody approved a call the default policy judged read-only: a misjudged command must
    # still be unable to write, so it runs in the read-only sandbox.
    mode = WORKSPACE_WRITE if ctx.approved else READ_ONLY
    sockets = tuple(args.get("sockets") or ())
    unwalled = tuple(args.get("write_protected") or ())
    if (sockets or unwalled) and ctx.allowed_by != "user":
        # the gate asks a person about these; a second wall, should a caller skip it
        raise ToolError("Lifting the sandbox's walls (sockets, write_protected) needs the "
                        "user's own yes to this call.")
    env = command_environment()
    try:
        proc = await sandbox_for(ctx.config).spawn(
            [*BASH_ARGV, command], mode=mode, network=bool(args.get("network")),
            cwd=str(ctx.workspace), env=env, show=path_under_tmp(env), sockets=sockets,
            unwalled=unwalled, stdout=out_w, stderr=err_w)
    except FileNotFoundError:
        for fd in (out_r, out_w, err_r, err_w):
            os.close(fd)
        if not os.path.isdir(ctx.workspace):
            raise ToolError(f"The workspace {ctx.workspace} no longer exists.") from None
        raise ToolError("bash is not installed or not on PATH.") from None
    except OSError as exc:
        for fd in (out_r, out_w, err_r, err_w):
            os.close(fd)
        raise ToolError(f"Could not start bash: {exc}") from None
    os.close(out_w)
    os.close(err_w)
    readers = [_PipeReader(out_r, out, live), _PipeReader(err_r, err, live)]
    flusher = asyncio.create_task(live.run())
    timed_out = False
    killed_with = 0
    held_open = False
    try:
        try:
            await asyncio.wait_for(proc.wait(), timeout_ms / 1000)
        except TimeoutError:
            timed_out = True
            killed_with = await proc.terminate(KILL_GRACE)
        held_open = await _stop_readers(readers, DRAIN_AFTER_EXIT)
    except asyncio.CancelledError:
        await proc.terminate(KILL_GRACE)
        await _stop_readers(readers, 0.05)
        flusher.cancel()
        live.flush()
        session = ctx.session
        was_interrupted = getattr(session, "was_interrupted", None)
        if not (was_interrupted and was_interrupted(ctx.call.id)):
            raise  # the whole turn is being cancelled, not just this command
        so_far = _sections(out, err) or NO_OUTPUT
        raise ToolError(f"{INTERRUPTED}\n{so_far}") from None
    finally:
        flusher.cancel()
        if proc.returncode is None:  # an unexpected error: leave nothing running
            try:
                os.killpg(proc.pid, signal.SIGKILL)  # the sandbox's namespace goes with it
            except OSError:
                pass
        for reader in readers:
            reader.close()
    live.flush()

    code = proc.returncode if proc.returncode is not None else -1
    signal_number = -code if code < 0 else 0
    if timed_out and not signal_number:
        signal_number = killed_with
    exit_code = 128 + signal_number if code < 0 else code
    head = f"exit: {exit_code}"
    if signal_number:
        note = f"killed by {_signal_name(signal_number)}"
        if timed_out:
            note += f"; timeout is {timeout_ms}ms"
        head += f" ({note})"
    body = _sections(out, err)
    text = head + ("\n" + body if body else "")
    if held_open:
        text += ("\n(background jobs kept the output open; reading stopped when the command "
                 "exited)")
    if mode == READ_ONLY and READ_ONLY_ERROR in body:
        text += READ_ONLY_HINT
    elif mode == WORKSPACE_WRITE and _hit_a_wall(body):
        text += WALL_HINT
    lines = out.lines + err.lines
    summary = f"exit {exit_code}, {_plural(lines, 'line')} out"
    if signal_number:
        summary = f"killed by {_signal_name(signal_number)}" + (
            " (timeout)" if timed_out else "") + f", {_plural(lines, 'line')} out"
    return ToolResult(text, summary=summary)


def _effects(args: dict[str, Any]) -> Effects:
    """The command, and the files it writes, deletes and reads as far as the shell analysis
    can tell (redirections, tee, -o, rm ...), so path guards see them too."""
    from agent.shell.analysis import command_paths  # here: a turn without bash needs no parser

    command = args.get("command", "")
    found = command_paths(command) if isinstance(command, str) else ((), (), ())
    writes, deletes, reads = found
    # ``write`` asks for the writable sandbox: the call says it does more than its command
    # shows, so it is never auto-allowed as read-only.
    escalates = tuple(f"socket:{p}" for p in args.get("sockets") or () if isinstance(p, str))
    escalates += tuple(f"write:{p}" for p in args.get("write_protected") or ()
                       if isinstance(p, str))
    return Effects(command=command, network=bool(args.get("network")), writes=writes,
                   deletes=deletes, reads=reads, opaque=bool(args.get("write")),
                   escalates=escalates)


def _hit_a_wall(output: str) -> bool:
    """True when the output shows a write refused on a persistence path."""
    if not any(error in output for error in WALL_ERRORS):
        return False
    return any(name in output for name in (".git", ".envrc", ".vscode", ".idea", ".agent",
                                           ".claude", ".mcp.json"))


def _escalation_lines(args: dict[str, Any]) -> list[str]:
    """What lifting each asked-for wall means, for the approval dialog."""
    from agent.contain.walls import persistent_entry

    lines = []
    for path in args.get("sockets") or ():
        if isinstance(path, str):
            lines.append(f"may connect to the unix socket {path} (whatever listens there "
                         "acts for you: docker is root, an ssh agent signs as you)")
    for path in args.get("write_protected") or ():
        if isinstance(path, str):
            entry = persistent_entry(os.path.normpath(path))
            does = entry.does if entry else "not a protected file"
            lines.append(f"may write {path}: {does}")
    return lines


def describe(args: dict[str, Any]) -> Description:
    """``Run `pytest -q`?``; a script of several lines is named by its first line."""
    command = args.get("command") if isinstance(args.get("command"), str) else ""
    lines = command.splitlines() or [""]
    details = lines[:4] + ([f"... {len(lines) - 4} more lines"] if len(lines) > 4 else [])
    timeout = args.get("timeout")
    if isinstance(timeout, (int, float)) and timeout:
        details.append(f"timeout {int(timeout) // 1000}s" if timeout >= 1000
                       else f"timeout {timeout}ms")
    first = lines[0].strip()
    if len(first) > 70:
        first = first[:67] + "..."
    what = f"Run `{first}`" + (f" and {len(lines) - 1} more lines" if len(lines) > 1 else "")
    if args.get("write"):
        what += " with the workspace writable"
    details += _escalation_lines(args)
    if args.get("network"):
        what += " with network access"
    return Description(tuple(details), what + "?")


def bash_tool(mode: str = WORKSPACE_WRITE) -> Tool:
    """The ``bash`` tool, its description telling the model what the sandbox allows."""
    return Tool(
        name="bash",
        description=DESCRIPTION + SANDBOX_NOTES.get(mode, ""),
        run=run_bash,
        parameters=PARAMETERS,
        effects=_effects,
        describe=describe,
        tool_set="core",
        prompt="runs `bash -c` in the workspace root, with the PATH agent was started with; "
               "prefer the file tools for reading and editing files; never start interactive "
               "programs or ones that wait for input.",
    )


BASH = bash_tool()


@hookimpl
def agent_register_tools(register, config):
    # What the model is told matches what really happens: a sandbox that cannot start
    # here runs commands without walls (and the gate asks about each one).
    mode = sandbox_for(config).mode_for(WORKSPACE_WRITE) if config is not None else OFF
    register(bash_tool(mode))
