"""The judge against the real programs: commands it calls read-only, run under ``strace -f``.

:func:`command` builds a command line from a random source: programs of the read-only list and
their writing neighbours, options that write or run programs, substitutions, pipes, lists,
redirections, quotes and line continuations.  :func:`audit` runs one in a scratch copy of a
small workspace under ``strace -f`` and lists what the judge did not foresee: a file opened
for writing (or created, removed, renamed, linked, chmod-ed) outside the scratch copy, a file
changed inside it (git's own index refresh under ``.git/`` aside), a program executed that the
judge did not name.  Used by tests/shell/test_shell_differential.py (hypothesis, bounded) and
bench/shell_differential.py (a longer run).
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path
from random import Random

from agent.contract.tools import Effects
from agent.loop.permissions import decide
from agent.shell.parse import parse

PROGRAMS = ["ls", "cat", "head", "tail", "wc", "sort", "uniq", "grep", "find", "sed", "awk",
            "echo", "printf", "stat", "file", "du", "xargs", "tee", "cp", "touch", "git",
            "date", "basename", "cut", "tr", "diff", "env", "timeout 5", "nice", "command",
            "xxd", "base64", "rev", "nl", "od", "test", "tac", "comm", "look", "mawk",
            "xargs -I{}", "sha256sum", "cksum", "realpath", "dirname", "which", "true"]
ARGS = ["a.txt", "b.txt", "sub", "sub/c.txt", "-n", "-l", "-c", "-r", "-o", "out.txt",
        "-o out.txt", "-oout.txt", "--output=out.txt", "--out=out.txt", "-delete",
        "-exec touch pwn \\;", "-fprint pwn", "-i", "s/x/y/", "'w pwn'", "p", "1p", "'{print}'",
        "'BEGIN{system(\"touch pwn\")}'", "'{print > \"pwn\"}'", "-v x=1", "-vx=1", "-F:",
        "../outside.txt", "-", "--", "status", "diff", "log", "-1", "--stat", "$(touch pwn)",
        "`touch pwn`", '"$HOME"', "*.txt", "-name '*.txt'", "-maxdepth 1", "-T .", "{}",
        "-a a.txt", "--files0-from=a.txt", "-f a.txt", "show", "branch", "pwn", "-W exec",
        "'a[$(touch pwn)]'", "-v", "x", "a.txt pwn", "--log pwn", "-s", "-e p", "-E"]
JOINERS = [" && ", " || ", "; ", " | ", "\n"]
EXTRAS = ["", "", "", " 2>/dev/null", " < a.txt", " > out.txt", " | head -3"]

#: Opened for writing without changing anything a test could see.
_HARMLESS = re.compile(r"^/(dev/(null|tty|pts/\d+|std(out|err))|proc/)")
_WRITE_FLAGS = ("O_WRONLY", "O_RDWR", "O_CREAT", "O_TRUNC", "O_APPEND")
_CHANGES = ("unlink", "unlinkat", "rename", "renameat", "renameat2", "mkdir", "mkdirat",
            "rmdir", "truncate", "symlink", "symlinkat", "link", "linkat", "chmod",
            "fchmodat", "creat")
_LINE = re.compile(r"^(?:\[pid\s+)?(\d+)\]?\s+(\w+)\((.*)\)\s+=\s+(-?\d+)")


def command(rng: Random) -> str:
    """One command line of 1-3 simple commands."""
    parts = []
    for _ in range(rng.randint(1, 3)):
        words = [rng.choice(PROGRAMS)] + [rng.choice(ARGS) for _ in range(rng.randint(0, 4))]
        if rng.random() < 0.25:  # a line continuation somewhere inside a word
            i = rng.randrange(len(words))
            cut = rng.randint(1, max(1, len(words[i]) - 1))
            words[i] = words[i][:cut] + "\\\n" + words[i][cut:]
        if rng.random() < 0.1:
            words[0] = f"echo $({words[0]})" if rng.random() < 0.5 else f"echo `{words[0]}`"
        parts.append(" ".join(words) + rng.choice(EXTRAS))
    text = parts[0]
    for part in parts[1:]:
        text += rng.choice(JOINERS) + part
    return text


def workspace(root: Path) -> Path:
    """A small git repository with a few files (the scratch original)."""
    ws = root / "ws"
    (ws / "sub").mkdir(parents=True)
    env = {**os.environ, "GIT_CONFIG_GLOBAL": "/dev/null", "GIT_CONFIG_SYSTEM": "/dev/null"}
    subprocess.run(["git", "init", "-q"], cwd=ws, check=True, env=env)
    (ws / "a.txt").write_text("x\ny\nx\n")
    (ws / "b.txt").write_text("b\n")
    (ws / "sub" / "c.txt").write_text("c\n")
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", "add", "."], cwd=ws,
                   check=True, env=env)
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "1"],
                   cwd=ws, check=True, env=env)
    (root / "outside.txt").write_text("outside\n")
    return ws


def auto_allowed(text: str, ws: Path) -> bool:
    """What the default policy decides without asking anyone."""
    return decide("bash", Effects(command=text), {}, workspace=ws).decision == "allow"


def named(text: str) -> set[str]:
    """The programs the judge says the command runs (wrappers included)."""
    names = {"bash"}
    for cmd in parse(text).commands:
        names.add(cmd.name)
        names.update(cmd.wrappers)
    return names


def _tree(ws: Path) -> dict[str, str]:
    out = {}
    for path in sorted(ws.rglob("*")):
        rel = path.relative_to(ws).as_posix()
        if rel == ".git" or rel.startswith(".git/"):
            continue
        out[rel] = hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else "dir"
    return out


def audit(text: str, original: Path, timeout: float = 10.0) -> list[str]:
    """Run ``text`` with ``bash -c`` under ``strace -f`` in a scratch copy of ``original``;
    what it did beyond reading, and the programs it ran that the judge did not name."""
    with tempfile.TemporaryDirectory(prefix="judge-diff-") as tmp:
        base = Path(tmp)
        scratch = base / "ws"
        shutil.copytree(original, scratch, symlinks=True)
        (base / "outside.txt").write_text("outside\n")
        before = _tree(scratch)
        log = base / "trace"
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(base),
               "GIT_CONFIG_GLOBAL": "/dev/null", "GIT_CONFIG_SYSTEM": "/dev/null",
               "LC_ALL": "C"}
        try:
            subprocess.run(["strace", "-f", "-qq", "-o", str(log), "-e",
                            "trace=execve,open,openat,creat," + ",".join(_CHANGES),
                            "bash", "-c", text], cwd=scratch, env=env, timeout=timeout,
                           stdin=subprocess.DEVNULL, capture_output=True)
        except subprocess.TimeoutExpired:
            pass  # what it did until then is in the log
        found = _violations(log.read_text(errors="replace") if log.exists() else "",
                            scratch, named(text))
        if _tree(scratch) != before:
            found.append("changed files in the workspace")
        if (base / "outside.txt").read_text() != "outside\n":
            found.append("changed a file outside the workspace")
        return found


def _violations(trace: str, scratch: Path, names: set[str]) -> list[str]:
    found: list[str] = []
    for line in trace.splitlines():
        match = _LINE.match(line)
        if not match or int(match.group(4)) < 0:
            continue
        call, args = match.group(2), match.group(3)
        paths = re.findall(r'"((?:[^"\\]|\\.)*)"', args)
        if call == "execve" and paths:
            program = os.path.basename(paths[0])
            if program not in names:
                found.append(f"ran {program}, which the judge did not name")
            continue
        if call in ("open", "openat") and not any(f in args for f in _WRITE_FLAGS):
            continue
        for path in paths[:1] if call in ("open", "openat", "creat") else paths:
            full = os.path.normpath(os.path.join(scratch, path))
            if _HARMLESS.match(full):
                continue
            inside = full == str(scratch) or full.startswith(str(scratch) + "/")
            if inside and "/.git/" in full + "/":
                continue  # git refreshing its own index
            found.append(f"{call} {path}" + ("" if inside else " (outside the workspace)"))
    return found
