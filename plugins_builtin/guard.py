"""Refuses irreversible shell commands (rm -rf, force push, DROP TABLE...) anywhere in a command.

Rules judge what a command means, not how it is spelled: options are read as the program
reads them (``rm --recur``, ``git reset --har``), ``chmod`` by the mode it results in, git
with its ``-c`` settings and aliases.  A part that may be hazardous but cannot be read
without running it (``rm $FLAGS x``, ``$(echo rm) -rf x``) is asked about, never let through.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from agent import Fragment, Verdict, hookimpl
from agent.shell.git import SUBCOMMANDS, config_is_false, read_git
from agent.shell.options import parse_options, same, spec
from agent.shell.parse import SHELLS, Script, SimpleCommand, parse

ADVICE = "Ask the user to run it themselves if it is really needed."

PROMPT = """\
The guard plugin refuses irreversible shell commands (recursive or forced rm, git reset --hard,
git clean -f, force pushes, git branch -D, DROP/TRUNCATE, raw device writes, chmod 777,
shutdown/reboot, fork bombs, piping a download into a shell). When a command is refused, do not
reach the same effect another way (other flags, a script, another tool): tell the user the exact
command you wanted to run and why, and let them decide."""

Rule = Callable[[SimpleCommand], str | None]


# ---- per-command rules -----------------------------------------------------------------------
# Each rule returns why the command is refused, or None; it raises Unsure when the command
# may be one it refuses but the words cannot tell (an option only known at run time).


class Unsure(Exception):
    """The command may be hazardous; what it does is only known when it runs (ask)."""


def _read(table, cmd: SimpleCommand, args: tuple[str, ...] | None = None):
    """The options of ``cmd`` as the program reads them.  Words only known at run time are
    left out, so a hazard spelled in the known words is still refused (``xargs rm -rf`` gets
    more words from its input); the rule calls :func:`_settle` when it found none."""
    words = cmd.args if args is None else args
    offset = 1 if args is None else 0
    flags = list(cmd.dynamic[offset:]) if offset else []
    parsed = parse_options(table, list(words), flags)
    if parsed.problems:
        known = [w for i, w in enumerate(words) if not (i < len(flags) and flags[i])]
        literal = parse_options(table, known)
        if literal.problems:
            raise Unsure(f"{cmd.name}: {literal.problems[0]}")
        literal.problems = parsed.problems
        return literal
    return parsed


def _settle(parsed, cmd: SimpleCommand) -> None:
    """No hazard in the known words: a word only known at run time may still be one."""
    if parsed.problems:
        raise Unsure(f"{cmd.name}: {parsed.problems[0]}")


_RM = spec("dfiIrRv", "", long=same("force", "interactive", "one-file-system",
                                     "no-preserve-root", "recursive", "dir", "verbose",
                                     "help", "version"),
           long_optional={"preserve-root": "preserve-root", "interactive": "interactive"},
           names={"f": "force", "r": "recursive", "R": "recursive", "i": "interactive",
                  "I": "interactive", "d": "dir", "v": "verbose"})


def rm_rule(cmd: SimpleCommand) -> str | None:
    if cmd.name != "rm":
        return None
    parsed = _read(_RM, cmd)
    if parsed.has("recursive", "force"):
        return "recursive or forced delete"
    _settle(parsed, cmd)
    return None


def git_subcommand(args: tuple[str, ...]) -> tuple[str, tuple[str, ...]]:
    """``git -C dir -c a=b push -f`` → (``push``, (``-f``,))."""
    call = read_git(("git",) + tuple(args))
    return call.sub, call.args


def git_rule(cmd: SimpleCommand) -> str | None:
    if cmd.name != "git":
        return None
    call = read_git(cmd.argv, cmd.assignments)
    if call.problems:
        raise Unsure(call.problems[0])
    if any(cmd.dynamic):
        raise Unsure("git with arguments only known when it runs")
    if call.sub not in SUBCOMMANDS:
        return None
    parsed = call.options()
    if parsed is None:
        return None
    if parsed.problems:
        raise Unsure(f"git {call.sub}: {parsed.problems[0]}")
    if call.sub == "reset" and parsed.has("hard"):
        return "discards uncommitted work"
    if call.sub == "clean":
        if parsed.has("dry-run", "interactive"):
            return None
        if parsed.has("force") or config_is_false(call, "clean.requireforce"):
            return "deletes untracked files"
    if call.sub == "push":
        refspecs = parsed.operands[1:]
        forced_by_config = any(
            (key.startswith("remote.") and key.endswith(".push") and "+" in value)
            or (key.startswith("remote.") and key.endswith(".mirror")
                and not config_is_false(call, key))
            for key, value in call.config.items())
        if parsed.has("force", "force-with-lease", "force-if-includes", "mirror") \
                or forced_by_config or any(r.startswith("+") for r in refspecs):
            return "rewrites remote history"
        if parsed.has("delete") or any(r.startswith(":") for r in refspecs):
            return "deletes a remote branch"
    if call.sub == "branch":
        if parsed.has("delete-force") or (parsed.has("delete") and parsed.has("force")):
            return "deletes a branch without a merge check"
    return None


_RAW_DEVICE = re.compile(r"^/dev/(sd|hd|vd|xvd|nvme|disk|rdisk|mmcblk|md|dm-|mapper/|loop|sr)",
                         re.IGNORECASE)
_HARMLESS_DEVICES = re.compile(r"^/dev/(null|zero|u?random|stdout|stderr|stdin|tty|fd/|pts/)")


def device_rule(cmd: SimpleCommand) -> str | None:
    why = "writes to a raw device"
    if cmd.name == "mkfs" or cmd.name.startswith("mkfs."):
        return why
    if cmd.name in ("wipefs", "blkdiscard", "shred") and any(
            _RAW_DEVICE.match(a) for a in cmd.args):
        return why
    if cmd.name == "dd":
        for arg in cmd.args:
            if arg.startswith("of=/dev/") and not _HARMLESS_DEVICES.match(arg[3:]):
                return why
    if cmd.name == "tee" and any(_RAW_DEVICE.match(a) for a in cmd.args):
        return why
    for op, target in cmd.redirects:
        if ">" in op and _RAW_DEVICE.match(target):
            return why
    return None


_CHMOD = spec("cfvR", "", long=same("changes", "silent", "quiet", "verbose", "no-preserve-root",
                                     "preserve-root", "recursive", "help", "version"),
              long_args=same("reference"))
_SYMBOLIC = re.compile(r"^[ugoa]*([-+=][rwxXstugo]*)+$")


def world_writable(mode: str) -> bool | None:
    """True when ``chmod MODE`` gives others write permission (any octal spelling, any
    symbolic clause); None when the mode cannot be read."""
    if re.fullmatch(r"[0-7]{1,5}", mode):
        return bool(int(mode, 8) & 0o002)
    clauses = mode.split(",")
    if not all(_SYMBOLIC.match(c) for c in clauses):
        return None
    for clause in clauses:
        who = re.match(r"^[ugoa]*", clause).group()
        for op, perms in re.findall(r"([-+=])([rwxXstugo]*)", clause[len(who):]):
            if op == "-":
                continue
            others = not who or "o" in who or "a" in who
            # An empty "who" is masked by the umask (022 keeps others from writing), but the
            # umask is not known here: count it as reaching others.
            gives_write = "w" in perms or any(c in perms for c in "ugo")
            if others and gives_write:
                return True
    return False


def chmod_rule(cmd: SimpleCommand) -> str | None:
    if cmd.name != "chmod":
        return None
    # A mode such as -w or -x looks like an option; chmod reads it as a mode.
    dash_modes = [a for a in cmd.args if a.startswith("-") and not a.startswith("--")
                  and all(_SYMBOLIC.match(c) for c in a.split(","))
                  and not re.fullmatch(r"-[cfvR]+", a)]
    args = tuple(a for a in cmd.args if a not in dash_modes)
    parsed = _read(_CHMOD, cmd, args)
    if parsed.values("reference"):
        raise Unsure("chmod --reference copies a mode that is only known when it runs")
    if dash_modes:  # chmod -w f, chmod -x,o+w f: a mode that starts with "-"
        mode = dash_modes[0]
    elif not parsed.operands:
        return None
    else:
        mode = parsed.operands[0]
    if "$" in mode or "`" in mode:
        raise Unsure("chmod with a mode only known when it runs")
    verdict = world_writable(mode)
    if verdict is None:
        raise Unsure(f"chmod mode {mode!r} cannot be read")
    if verdict:
        return "makes files world-writable"
    _settle(parsed, cmd)
    return None


def power_rule(cmd: SimpleCommand) -> str | None:
    why = "affects the whole machine"
    if cmd.name in ("shutdown", "reboot", "halt", "poweroff"):
        return why
    if cmd.name == "systemctl" and {"reboot", "poweroff", "halt", "kexec"} & set(cmd.args):
        return why
    if cmd.name in ("init", "telinit") and cmd.args[:1] in (("0",), ("6",)):
        return why
    return None


RULES: tuple[Rule, ...] = (rm_rule, git_rule, device_rule, chmod_rule, power_rule)


# ---- whole-script rules ---------------------------------------------------------------------

_DOWNLOADERS = frozenset({"curl", "wget", "fetch"})
_RUNS_STDIN = SHELLS | {"source", "."}


def download_to_shell(script: Script) -> str | None:
    """``curl … | sh``, ``sh <(curl …)``, ``bash -c "$(wget …)"``, ``eval "$(curl …)"``."""
    why = "pipes a download straight into a shell"
    downloads = [c for c in script.commands if c.name in _DOWNLOADERS]
    if not downloads:
        return None
    for cmd in script.commands:
        if cmd.name not in _RUNS_STDIN and cmd.name != "eval":
            continue
        if any(d.feeds(cmd) for d in downloads):
            return why
        if any(s.name in _DOWNLOADERS for s in cmd.substituted):
            return why
    return None


# SQL reads a comment as a blank: ``DROP/**/TABLE`` and ``DROP -- x<newline>TABLE`` drop too.
_SQL = re.compile(r"\b(drop|truncate)(?:\s|/\*.*?\*/|--[^\n]*(?:\n|$))+"
                  r"(table|database|schema)\b", re.IGNORECASE | re.DOTALL)


def destroys_data(text: str) -> str | None:
    return "destroys database data" if _SQL.search(text) else None


def destroys_data_in(script: Script) -> str | None:
    """The SQL check on what the programs receive, not on the spelling: every command's
    words after quote removal (``"DR""OP TABLE"``, ``$'DROP\\tTABLE'``), its here-strings
    and here-documents."""
    for cmd in script.commands:
        words = cmd.words + cmd.argv + tuple(target for _op, target in cmd.redirects)
        why = destroys_data(" ".join(words))
        if why:
            return why
    for body in script.heredocs:
        why = destroys_data(body)
        if why:
            return why
    return None


# Anchored on the parentheses (not the name) so the search stays linear on long input.
_FUNCTION_PARENS = re.compile(r"\(\s*\)\s*\{")
_NAME_END = re.compile(r"[^\s(){};|&<>]+$")


def fork_bomb(text: str) -> str | None:
    """A function that pipes itself into itself in the background: ``:(){ :|:& };:``."""
    if "|" not in text or "&" not in text:
        return None
    for match in _FUNCTION_PARENS.finditer(text):
        if text.find("|", match.end(), match.end() + 256) < 0:
            continue
        before = text[max(0, match.start() - 64):match.start()].rstrip()
        name = _NAME_END.search(before)
        if not name:
            continue
        end = text.find("}", match.end(), match.end() + 256)
        body = re.sub(r"\s+", "", text[match.end():end if end >= 0 else match.end() + 256])
        if f"{name.group()}|{name.group()}" in body and "&" in body:
            return "a fork bomb"
    return None


# ---- the guard --------------------------------------------------------------------------------

def check_command(command: str) -> str | None:
    """Why ``command`` is refused, or None when it may go on to the permission rules."""
    return judge_command(command)[0]


def judge_command(command: str) -> tuple[str | None, str | None]:
    """(why it is refused, why it needs a person's look): a refusal wins; an *unsure* answer
    comes from a part that may be hazardous but cannot be read without running it."""
    for text_rule in (fork_bomb, destroys_data):
        why = text_rule(command)
        if why:
            return why, None
    script = parse(command)
    if not script.complete and any("nested too deeply" in p for p in script.problems):
        return "too deeply nested to check", None
    why = destroys_data_in(script)
    if why:
        return why, None
    unsure: str | None = None
    for cmd in script.commands:
        for rule in RULES:
            try:
                why = rule(cmd)
            except Unsure as exc:
                unsure = unsure or str(exc)
                continue
            if why:
                return why, None
    why = download_to_shell(script)
    if why:
        return why, None
    if not script.complete:
        return None, script.problems[0]
    if script.unresolved:
        return None, script.unresolved[0]
    return None, unsure


def refusal(command: str, why: str) -> str:
    return f'refusing "{command[:120]}" ({why}). {ADVICE}'


@hookimpl
def agent_guard_tool_call(call, effects, session):
    """Deny a call whose shell command contains an irreversible simple command."""
    if not effects.command:
        return None
    why, unsure = judge_command(effects.command)
    if why is not None:
        return Verdict.deny(refusal(effects.command, why), "guard")
    if unsure is not None:
        return Verdict.ask(f"the guard cannot tell whether this is safe without running it "
                           f"({unsure})", "guard")
    return None


@hookimpl
def agent_prompt_fragments(session):
    return Fragment("guard", PROMPT, order=40)
