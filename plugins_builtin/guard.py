"""Refuses irreversible shell commands (rm -rf, force push, DROP TABLE...) anywhere in a command."""

from __future__ import annotations

import re
from collections.abc import Callable

from agent import Fragment, Verdict, hookimpl
from agent.shell import SHELLS, Script, SimpleCommand, parse

ADVICE = "Ask the user to run it themselves if it is really needed."

PROMPT = """\
The guard plugin refuses irreversible shell commands (recursive or forced rm, git reset --hard,
git clean -f, force pushes, git branch -D, DROP/TRUNCATE, raw device writes, chmod 777,
shutdown/reboot, fork bombs, piping a download into a shell). When a command is refused, do not
reach the same effect another way (other flags, a script, another tool): tell the user the exact
command you wanted to run and why, and let them decide."""

Rule = Callable[[SimpleCommand], str | None]


# ---- per-command rules -----------------------------------------------------------------------

def _options(args: tuple[str, ...]) -> list[str]:
    """Option words before ``--``."""
    out: list[str] = []
    for word in args:
        if word == "--":
            break
        if word.startswith("-") and word != "-":
            out.append(word)
    return out


def _short_flags(options: list[str]) -> str:
    """Every letter of the short option clusters (``-rf -v`` → ``rfv``)."""
    return "".join(o[1:] for o in options if not o.startswith("--"))


def rm_rule(cmd: SimpleCommand) -> str | None:
    if cmd.name != "rm":
        return None
    options = _options(cmd.args)
    if set(_short_flags(options)) & set("rRf") or {"--recursive", "--force"} & set(options):
        return "recursive or forced delete"
    return None


# git's own options that come before the subcommand; these take a separate value.
_GIT_VALUE_OPTIONS = frozenset({"-C", "-c", "--git-dir", "--work-tree", "--namespace",
                                "--exec-path", "--super-prefix", "--config-env", "--list-cmds"})


def git_subcommand(args: tuple[str, ...]) -> tuple[str, tuple[str, ...]]:
    """``git -C dir -c a=b push -f`` → (``push``, (``-f``,))."""
    i = 0
    while i < len(args):
        word = args[i]
        if word in _GIT_VALUE_OPTIONS:
            i += 2
        elif word.startswith("-"):
            i += 1
        else:
            return word, args[i + 1:]
    return "", ()


def git_rule(cmd: SimpleCommand) -> str | None:
    if cmd.name != "git":
        return None
    sub, rest = git_subcommand(cmd.args)
    options = _options(rest)
    short = _short_flags(options)
    if sub == "reset" and "--hard" in options:
        return "discards uncommitted work"
    if sub == "clean" and ("f" in short or "--force" in options):
        return "deletes untracked files"
    if sub == "push":
        forced = any(o == "--force" or o.startswith(("--force-with-lease", "--force-if-"))
                     for o in options)
        refspecs = [w for w in rest if not w.startswith("-")][1:]
        if forced or "f" in short or any(r.startswith("+") for r in refspecs):
            return "rewrites remote history"
    if sub == "branch":
        deleting = "d" in short or "--delete" in options
        if "D" in short or (deleting and ("f" in short or "--force" in options)):
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


_OCTAL_777 = re.compile(r"^0*[0-7]?777$")
_SYMBOLIC_WORLD_WRITE = re.compile(r"^[ugo]*[ao][ugoa]*[+=][rwxXst]*w")


def chmod_rule(cmd: SimpleCommand) -> str | None:
    if cmd.name != "chmod":
        return None
    for arg in cmd.args:
        if arg.startswith("-"):
            continue
        if _OCTAL_777.match(arg) or any(_SYMBOLIC_WORLD_WRITE.match(c) for c in arg.split(",")):
            return "makes files world-writable"
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


_SQL = re.compile(r"\b(drop|truncate)\s+(table|database|schema)\b", re.IGNORECASE)


def destroys_data(text: str) -> str | None:
    return "destroys database data" if _SQL.search(text) else None


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
    for text_rule in (fork_bomb, destroys_data):
        why = text_rule(command)
        if why:
            return why
    script = parse(command)
    if not script.complete:
        return "too deeply nested to check"
    for cmd in script.commands:
        for rule in RULES:
            why = rule(cmd)
            if why:
                return why
    return download_to_shell(script)


def refusal(command: str, why: str) -> str:
    return f'refusing "{command[:120]}" ({why}). {ADVICE}'


@hookimpl
def agent_guard_tool_call(call, effects, session):
    """Deny a call whose shell command contains an irreversible simple command."""
    if not effects.command:
        return None
    why = check_command(effects.command)
    if why is None:
        return None
    return Verdict.deny(refusal(effects.command, why), "guard")


@hookimpl
def agent_prompt_fragments(session):
    return Fragment("guard", PROMPT, order=40)
