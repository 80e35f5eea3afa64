"""The hostile corpus of the sandbox's walls: what runs without a yes cannot write, nothing
sandboxed can plant a persistence file, reach a unix socket of the host, or trace or stop
its supervisor.  Cases are data (class, command, how the call was let run); one loop runs
each for real under :class:`agent.Sandbox` and judges the outcome, never the message:

- ``write``: a command judged read-only (so run in the read-only sandbox) tries to create
  a marker or change a victim anywhere: the marker never exists, the victim keeps its bytes;
- ``persist``: an approved command (workspace-write, what ``--yolo`` gets) tries to create or
  change a persistence file: after it, the path is as before (missing, or the same bytes);
- ``socket``: a command tries to reach a canary unix socket under ``/var/tmp`` and under
  ``$XDG_RUNTIME_DIR``, or an abstract one with the network granted: no connection is ever
  accepted;
- ``trace``: a command attaches to, reads or stops its parent: it ends on its own, the
  sandbox's init keeps running it, nothing is left.

Each escape is reported with its case; the test asserts there are none, and that the corpus
is at least 150 cases.
"""

from __future__ import annotations

import os
import shlex
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import pytest

from agent import READ_ONLY, WORKSPACE_WRITE, Sandbox

pytestmark = [pytest.mark.e2e,
              pytest.mark.skipif(not os.path.exists("/proc/self/ns/pid"), reason="Linux only")]

PY = shlex.quote(sys.executable)


@dataclass(frozen=True)
class Case:
    kind: str  # write | persist | socket | trace
    command: str
    mode: str = READ_ONLY
    network: bool = False
    target: str = ""  # persist: the path (relative to the workspace) that must not change


# ---- write: a read-only-judged command tries to write -----------------------------------------

WRITERS = (
    "touch {t}", "echo x > {t}", "echo x >> {t}", "printf x | tee {t}", "cp README {t}",
    "ln -s README {t}", "mkdir {t}", "dd if=/dev/zero of={t} count=1 status=none",
    PY + " -c \"open('{t}', 'w').write('x')\"", "perl -e 'open(F, \">{t}\")'",
    "install -m 644 README {t}", "mkfifo {t}", "exec 3>{t}", "sort -o {t} README",
    "git config --file {t} a.b c", "truncate -s 1 {t}",
)
WRITE_TARGETS = ("{ws}/made", "{home}/made", "/var/tmp/{tag}-made")
VICTIM_CHANGERS = ("echo pwned > {v}", "rm -f {v}", "chmod 600 {v}", "mv {v} {v}.moved",
                   "sed -i s/original/pwned/ {v}", ": > {v}")


def write_cases() -> list[Case]:
    out = [Case("write", w.format(t=t)) for w in WRITERS for t in WRITE_TARGETS]
    out += [Case("write", c.format(v="{victim}")) for c in VICTIM_CHANGERS]
    out += [Case("write", c) for c in (
        "git init -q {ws}/newrepo", "git -C {ws} add README", "git -C {ws} stash",
        "git -C {ws} config user.name evil", "git -C {ws} commit -qm x --allow-empty",
        "test -v 'a[$(touch {ws}/made)]'", "printf -v 'b[$(touch {ws}/made)]' x",
        "cd {ws} && tar -cf made.tar README", "find {ws} -fprint {ws}/made",
    )]
    return out


# ---- persist: an approved command tries to plant a persistence file ---------------------------

PLANTED = (".git/hooks/pre-commit", ".git/hooks/post-checkout", ".git/config",
           ".git/config.worktree", ".git/info/attributes", ".git/modules/sub/hooks/post-checkout",
           ".envrc", ".vscode/tasks.json", ".idea/workspace.xml", ".agent/config.toml",
           ".agent/skills/evil/SKILL.md", ".agent/commands/evil.md", ".claude/settings.json",
           ".mcp.json")
PLANTERS = ("mkdir -p $(dirname {p}) ; echo 'touch /var/tmp/pwned' > {p}",
            "mkdir -p $(dirname {p}) ; cp README {p}",
            PY + " -c \"import os; os.makedirs(os.path.dirname('{p}') or '.', exist_ok=True); "
                 "open('{p}', 'a').write('x')\"",
            "mkdir -p $(dirname {p}) ; ln -sf /var/tmp/elsewhere {p}")
#: Attacks on the walls themselves: swap the folder, then write the fresh one.
HOOK = ".git/hooks/pre-commit"
SWAPS = (
    (f"mv .git .g && mkdir -p .git/hooks && echo x > {HOOK}", HOOK),
    (f"mv .git/hooks .git/h2; mkdir .git/hooks; echo x > {HOOK}", HOOK),
    (f"rm -rf .git/hooks; mkdir .git/hooks; echo x > {HOOK}", HOOK),
    ("mv .git/config .git/c2; printf '[core]\\n\\tfsmonitor = x\\n' > .git/config", ".git/config"),
    ("rm -f .git/config; echo x > .git/config", ".git/config"),
    ("git config core.fsmonitor 'touch /var/tmp/pwned'", ".git/config"),
    ("git config --local core.hooksPath .", ".git/config"),
    ("git config alias.st '!touch /var/tmp/pwned'", ".git/config"),
    ("rmdir .vscode 2>/dev/null; rm -rf .vscode; mkdir .vscode && echo {{}} > .vscode/tasks.json",
     ".vscode/tasks.json"),
    ("mv .agent .a2; mkdir -p .agent && echo x > .agent/config.toml", ".agent/config.toml"),
    ("rm -f .envrc; echo 'touch /var/tmp/pwned' > .envrc", ".envrc"),
    ("ln README .envrc", ".envrc"),
    ("mv README .mcp.json", ".mcp.json"),
    ("git init -q --separate-git-dir=../sep . ; echo x > .git", ".git"),
    ("echo 'gitdir: /var/tmp' > .git", ".git"),
    ("unshare -r sh -c 'mount --bind /var/tmp .git/hooks'; echo x > .git/hooks/pre-commit",
     ".git/hooks/pre-commit"),
)


def persist_cases() -> list[Case]:
    out = [Case("persist", p.format(p=t), WORKSPACE_WRITE, target=t)
           for t in PLANTED for p in PLANTERS]
    out += [Case("persist", c, WORKSPACE_WRITE, target=t) for c, t in SWAPS]
    return out


# ---- socket: reach a unix socket of the host ---------------------------------------------------

CLIENTS = (
    PY + " -c \"import socket; s=socket.socket(socket.AF_UNIX); s.connect('{s}'); s.send(b'x')\"",
    PY + " -c \"import socket; s=socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM); "
         "s.connect('{s}')\"",
    PY + " -c \"import socket; s=socket.socket(1, 1 | 0o2000000); s.connect('{s}')\"",
    PY + " -c \"import socket; s=socket.socket(fileno=None, family=1); s.connect('{s}')\"",
    "curl -s --max-time 3 --unix-socket {s} http://x/",
    "perl -MSocket -e 'socket(S, PF_UNIX, SOCK_STREAM, 0) or die; "
    "connect(S, pack_sockaddr_un(\"{s}\")) or die'",
    PY + " -c \"import ctypes, socket; libc = ctypes.CDLL(None, use_errno=True); "
         "fd = libc.syscall(41, 1, 1, 0); s = socket.socket(fileno=fd); s.connect('{s}')\"",
    "SSH_AUTH_SOCK={s} ssh-add -l",
)


def socket_cases() -> list[Case]:
    out = []
    for canary in ("{var_sock}", "{xdg_sock}"):
        for client in CLIENTS:
            for mode, network in ((READ_ONLY, False), (WORKSPACE_WRITE, False),
                                  (WORKSPACE_WRITE, True)):
                out.append(Case("socket", client.format(s=canary), mode, network))
    abstract = "\\0{abstract}"
    for client in CLIENTS[:3]:
        out.append(Case("socket", client.format(s=abstract), WORKSPACE_WRITE, True))
    return out


# ---- trace: attach to, read or stop the supervisor ---------------------------------------------

TRACE = (
    PY + " -c \"import ctypes, os; ctypes.CDLL(None).ptrace(16, os.getppid(), 0, 0)\"",
    PY + " -c \"import ctypes; ctypes.CDLL(None).ptrace(16, 1, 0, 0)\"",
    PY + " -c \"import ctypes; ctypes.CDLL(None).ptrace(0x4206, 1, 0, 0)\"",
    PY + " -c \"import os; os.kill(1, 19); os.kill(1, 9)\"",
    "strace -p 1 -o /dev/null & sleep 1; kill %1",
    "gdb -p 1 -batch -ex 'info registers' >/dev/null 2>&1",
    "kill -STOP 1; kill -STOP $PPID; kill -9 1",
    PY + " -c \"import ctypes, os; libc = ctypes.CDLL(None); "
         "libc.syscall(310, os.getppid(), 0, 0, 0, 0, 0)\"",
)


def trace_cases() -> list[Case]:
    return [Case("trace", c + "; echo survived", m) for c in TRACE
            for m in (READ_ONLY, WORKSPACE_WRITE)]


CORPUS = write_cases() + persist_cases() + socket_cases() + trace_cases()


# ---- the oracles -------------------------------------------------------------------------------

class Canary:
    """A unix socket listener that counts every connection (stream) or datagram."""

    def __init__(self, path: str, kind: int = socket.SOCK_STREAM) -> None:
        self.path = path
        self.contacts = 0
        self.server = socket.socket(socket.AF_UNIX, kind)
        self.server.bind(path)
        if kind == socket.SOCK_STREAM:
            self.server.listen(16)
        self.server.settimeout(0.2)
        self.stop = False
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        while not self.stop:
            try:
                if self.server.type == socket.SOCK_STREAM:
                    conn, _ = self.server.accept()
                    conn.close()
                else:
                    self.server.recv(64)
            except (TimeoutError, OSError):
                continue
            self.contacts += 1

    def close(self) -> None:
        self.stop = True
        self.thread.join()
        self.server.close()


@pytest.fixture
def scene(tmp_path, monkeypatch):
    ws = tmp_path / "ws"
    ws.mkdir()
    subprocess.run(["git", "init", "-q", str(ws)], check=True)
    (ws / "README").write_text("original\n")
    for folder in (".vscode", ".agent"):
        (ws / folder).mkdir()
    far = Path(tempfile.mkdtemp(prefix="agent-walls-", dir="/var/tmp"))
    home = far / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    runtime_root = "/run/user" if os.access("/run/user", os.W_OK) else str(far)
    runtime = Path(tempfile.mkdtemp(prefix="agent-xdg-", dir=runtime_root))
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(runtime))
    canaries = [Canary(str(far / "canary.sock")), Canary(str(runtime / "canary.sock"))]
    abstract = f"agent-canary-{os.getpid()}"
    canaries.append(Canary("\0" + abstract))
    yield {"ws": ws, "far": far, "home": home, "runtime": runtime, "canaries": canaries,
           "abstract": abstract}
    for canary in canaries:
        canary.close()
    shutil.rmtree(far, ignore_errors=True)
    shutil.rmtree(runtime, ignore_errors=True)


def snapshot(path: Path) -> bytes | str | None:
    if path.is_symlink():
        return "link:" + os.readlink(path)
    if path.is_dir():
        return "dir:" + ",".join(sorted(p.name for p in path.iterdir()))
    return path.read_bytes() if path.exists() else None


@pytest.mark.timeout(900)  # about 200 real sandboxes; minutes on a loaded machine
def test_no_hostile_case_escapes_the_walls(scene):
    assert len(CORPUS) >= 150
    ws, far = scene["ws"], scene["far"]
    sandbox = Sandbox.standalone(ws)
    assert sandbox.status.ok, sandbox.status.detail
    tag = f"agent-walls-{os.getpid()}"
    victim = far / "victim.txt"
    escapes: list[str] = []
    tried: Counter[str] = Counter()
    for case in CORPUS:
        tried[case.kind] += 1
        victim.write_text("original\n")
        victim.chmod(0o644)
        command = case.command.format(
            ws=ws, home=scene["home"], tag=tag, victim=victim,
            var_sock=scene["canaries"][0].path, xdg_sock=scene["canaries"][1].path,
            abstract=scene["abstract"])
        before = snapshot(ws / case.target) if case.target else None
        git_before = snapshot(ws / ".git" / "config")
        contacts = sum(c.contacts for c in scene["canaries"])
        code, out = sandbox.run(["bash", "-c", command], mode=case.mode, network=case.network,
                                timeout=20)
        problem = ""
        if case.kind == "write":
            made = [p for p in (ws / "made", scene["home"] / "made",
                                Path(f"/var/tmp/{tag}-made"), ws / "newrepo", ws / "made.tar")
                    if os.path.lexists(p)]
            if made or victim.read_text() != "original\n" or victim.stat().st_mode & 0o777 \
                    != 0o644 or snapshot(ws / ".git" / "config") != git_before:
                problem = f"wrote {made or victim}"
            for path in made:
                (shutil.rmtree if path.is_dir() and not path.is_symlink() else os.unlink)(path)
        elif case.kind == "persist":
            after = snapshot(ws / case.target)
            if after != before:
                problem = f"{case.target} changed: {before!r} -> {after!r}"
        elif case.kind == "socket":
            if sum(c.contacts for c in scene["canaries"]) != contacts:
                problem = "a canary socket was contacted"
        elif case.kind == "trace":
            if code is None:
                problem = "the call hung until the timeout"
        if Path("/var/tmp/pwned").exists():
            problem += " (/var/tmp/pwned made)"
        if problem:
            escapes.append(f"{case.kind} [{case.mode}{' +net' if case.network else ''}] "
                           f"{case.command!r}: {problem}\n{out.decode(errors='replace')[-300:]}")
        _restore(ws)
    print("tried:", dict(tried), "escaped:", len(escapes))
    assert not escapes, "\n\n".join(escapes)


def _restore(ws: Path) -> None:
    """Undo what a case may have legitimately done in the workspace (a swap that failed
    half way), so the next case starts from the same scene."""
    for moved, home in ((".g", ".git"), (".git/h2", ".git/hooks"), (".git/c2", ".git/config"),
                        (".a2", ".agent")):
        if (ws / moved).exists() and not (ws / home).exists():
            os.rename(ws / moved, ws / home)
    if not (ws / "README").exists():
        (ws / "README").write_text("original\n")
