"""Hostile repositories: one dangerous git mechanism each, as factories.

Every factory builds ``root/ws`` (the workspace, a repository with a commit, a staged change
and an unstaged one) and arms one mechanism last, so building it triggers nothing.  A program
the mechanism would run is a script that creates ``root/markers/<name>``: the oracle is that
no marker ever appears.  ``control`` is a plain ``git`` command that, run on a fresh copy
without our hardening, does create the marker, which proves the fixture is really armed.
``refused`` says the git tools must refuse the repository outright (it leads outside the
workspace); ``outside`` is content that must never reach the model.

:class:`Built` builds each repository once and hands out fresh copies of that build, for a
module whose tests use the same repositories again and again.
"""

from __future__ import annotations

import atexit
import hashlib
import http.server
import os
import pty
import shutil
import subprocess
import tempfile
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

OUTSIDE_CANARY = "OUTSIDE-CANARY-41c2"


@dataclass
class Hostile:
    root: Path
    ws: Path
    control: list[list[str]]
    refused: bool = False
    outside: tuple[str, ...] = ()
    tty: bool = False  # the control needs a terminal (pagers only start on one)
    #: canary requests before this index belong to an earlier use of the same root
    canary_from: int = 0

    @property
    def markers(self) -> Path:
        return self.root / "markers"

    def fired(self) -> list[str]:
        """The markers created, plus ``http:<path>`` for each request the local canary
        server got for this fixture."""
        token = f"/{_token(self.root)}/"
        hits = [f"http:{path}" for path in _Canary.hits[self.canary_from:]
                if path.startswith(token)]
        return sorted(p.name for p in self.markers.iterdir()) + hits


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(GIT_AUTHOR_NAME="A", GIT_AUTHOR_EMAIL="a@example.com", GIT_COMMITTER_NAME="A",
               GIT_COMMITTER_EMAIL="a@example.com", GIT_CONFIG_NOSYSTEM="1",
               # no template: the 14 sample hooks would be copied for every test, and a
               # *.sample never runs anyway (default_hooks writes the hooks it arms)
               GIT_TEMPLATE_DIR="")
    return env


def git(cwd: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", *args], cwd=cwd, check=check, capture_output=True,
                          text=True, env=_env(), timeout=60)


def run_control(hostile: Hostile) -> list[str]:
    """Plain git, without any of our hardening, on the armed fixture: the markers it made."""
    for args in hostile.control:
        if hostile.tty:
            leader, follower = pty.openpty()
            try:
                subprocess.run(["git", *args], cwd=hostile.ws, stdin=subprocess.DEVNULL,
                               stdout=follower, stderr=follower, env=_env(), timeout=60)
            finally:
                os.close(follower)
                os.close(leader)
        else:
            git(hostile.ws, *args, check=False)
    return hostile.fired()


def script(root: Path, name: str, body: str = "cat") -> str:
    """An executable that creates the marker ``name`` and then runs ``body``."""
    path = root / "bin" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"#!/bin/sh\ntouch '{root / 'markers' / name}'\n{body}\n")
    path.chmod(0o755)
    return str(path)


_BASE: list[Path] = []  # the plain work tree below, built once per process


def base(root: Path) -> Path:
    """``root/ws``: a repository with a commit, a staged change and an unstaged one (and
    ``root/markers``, empty).  Built once per process and copied: it names no path of its
    own, and a copy keeps the future mtime that makes git re-read ``a.txt``."""
    (root / "markers").mkdir(parents=True)
    if not (_BASE and _BASE[0].is_dir()):
        folder = Path(tempfile.mkdtemp(prefix="hostile-base-"))
        atexit.register(shutil.rmtree, folder, True)
        _BASE[:] = [_build_base(folder / "ws")]
    ws = root / "ws"
    shutil.copytree(_BASE[0], ws, symlinks=True)
    return ws


def _build_base(ws: Path) -> Path:
    ws.mkdir()
    git(ws, "init", "-q", "-b", "main")
    (ws / "a.txt").write_text("one\n")
    (ws / "b.txt").write_text("bee\n")
    git(ws, "add", "a.txt", "b.txt")
    git(ws, "commit", "-q", "-m", "first")
    (ws / "a.txt").write_text("one\ntwo\n")
    git(ws, "add", "a.txt")                       # a staged change
    (ws / "a.txt").write_text("one\ntwo\nthree\n")  # and an unstaged one
    # A future mtime: the index entry looks stale, so git re-reads (and filters) the file.
    os.utime(ws / "a.txt", (2_000_000_000, 2_000_000_000))
    return ws


def set_config(ws: Path, *pairs: tuple[str, str], file: Path | None = None) -> None:
    for key, value in pairs:
        args = ["config"] + (["--file", str(file)] if file else []) + [key, value]
        git(ws, *args)


# ---- one factory per mechanism ---------------------------------------------------------------

def fsmonitor(root: Path) -> Hostile:
    ws = base(root)
    set_config(ws, ("core.fsmonitor", script(root, "fsmonitor", "exit 1")))
    return Hostile(root, ws, [["status"]])


def hooks_path(root: Path) -> Hostile:
    ws = base(root)
    hooks = root / "hooks"
    hooks.mkdir()
    for hook in ("post-index-change", "pre-commit", "post-checkout", "reference-transaction",
                 "pre-auto-gc", "fsmonitor-watchman"):
        os.symlink(script(root, "hook", "exit 0"), hooks / hook)
    set_config(ws, ("core.hooksPath", str(hooks)))
    return Hostile(root, ws, [["status"]])


def default_hooks(root: Path) -> Hostile:
    ws = base(root)
    (ws / ".git" / "hooks").mkdir(exist_ok=True)
    for hook in ("post-index-change", "reference-transaction", "post-checkout"):
        target = ws / ".git" / "hooks" / hook
        target.write_text(f"#!/bin/sh\ntouch '{root / 'markers' / 'githooks'}'\n")
        target.chmod(0o755)
    return Hostile(root, ws, [["status"]])


def textconv(root: Path) -> Hostile:
    ws = base(root)
    (ws / ".gitattributes").write_text("*.txt diff=evil\n")
    set_config(ws, ("diff.evil.textconv", script(root, "textconv", 'cat "$1"')))
    return Hostile(root, ws, [["diff"], ["log", "-p"], ["blame", "a.txt"]])


def clean_filter(root: Path) -> Hostile:
    ws = base(root)
    (ws / ".gitattributes").write_text("*.txt filter=evil\n")
    set_config(ws, ("filter.evil.clean", script(root, "clean")),
               ("filter.evil.smudge", script(root, "smudge")),
               ("filter.evil.required", "true"))
    return Hostile(root, ws, [["diff"], ["status"]])


def process_filter(root: Path) -> Hostile:
    ws = base(root)
    (ws / ".gitattributes").write_text("*.txt filter=Evil2\n")
    set_config(ws, ("filter.Evil2.process", script(root, "process", "exit 1")))
    return Hostile(root, ws, [["diff"]])


def _signed_commit(ws: Path, signature: str) -> None:
    tree = git(ws, "rev-parse", "HEAD^{tree}").stdout.strip()
    parent = git(ws, "rev-parse", "HEAD").stdout.strip()
    sig = "\n".join(" " + line for line in signature.splitlines())
    body = (f"tree {tree}\nparent {parent}\nauthor A <a@example.com> 1700000000 +0000\n"
            f"committer A <a@example.com> 1700000000 +0000\ngpgsig {sig[1:]}\n"
            "\nsigned\n")
    proc = subprocess.run(["git", "hash-object", "-t", "commit", "-w", "--stdin"], cwd=ws,
                          input=body, capture_output=True, text=True, check=True)
    git(ws, "update-ref", "refs/heads/main", proc.stdout.strip())


def gpg_program(root: Path) -> Hostile:
    ws = base(root)
    _signed_commit(ws, "-----BEGIN PGP SIGNATURE-----\n\niQ\n-----END PGP SIGNATURE-----")
    program = script(root, "gpg", "exit 1")
    set_config(ws, ("gpg.program", program), ("gpg.openpgp.program", program),
               ("log.showSignature", "true"), ("format.pretty", "%G? %s"))
    return Hostile(root, ws, [["log", "-1"], ["show", "HEAD"]])


def gpg_ssh(root: Path) -> Hostile:
    ws = base(root)
    _signed_commit(ws, "-----BEGIN SSH SIGNATURE-----\nU1NIU0lH\n-----END SSH SIGNATURE-----")
    allowed = root / "allowed_signers"
    allowed.write_text("a@example.com ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIDummy\n")
    set_config(ws, ("gpg.format", "ssh"), ("gpg.ssh.program", script(root, "gpgssh", "exit 1")),
               ("gpg.ssh.allowedSignersFile", str(allowed)), ("log.showSignature", "true"))
    return Hostile(root, ws, [["log", "-1"]])


def external_diff(root: Path) -> Hostile:
    ws = base(root)
    set_config(ws, ("diff.external", script(root, "extdiff", "exit 0")))
    return Hostile(root, ws, [["diff"], ["show", "HEAD"]])


def diff_driver_command(root: Path) -> Hostile:
    ws = base(root)
    (ws / ".gitattributes").write_text("a.txt diff=drv\n")
    set_config(ws, ("diff.drv.command", script(root, "diffcmd", "exit 0")))
    return Hostile(root, ws, [["diff"]])


def pager(root: Path) -> Hostile:
    ws = base(root)
    program = script(root, "pager")
    set_config(ws, ("core.pager", program), ("pager.log", program), ("pager.status", program),
               ("pager.show", program), ("pager.diff", program), ("pager.blame", program))
    return Hostile(root, ws, [["-p", "log"], ["status"]], tty=True)


def aliases(root: Path) -> Hostile:
    ws = base(root)
    program = script(root, "alias", "exit 0")
    set_config(ws, *((f"alias.{name}", f"!{program}") for name in
                     ("status", "diff", "log", "show", "blame", "for-each-ref", "config",
                      "cat-file", "evil")))
    return Hostile(root, ws, [["evil"]])


def _outside_config(root: Path) -> Path:
    cfg = root / "outside" / "evil.cfg"
    cfg.parent.mkdir(parents=True, exist_ok=True)
    cfg.write_text(f"[core]\n\tfsmonitor = {script(root, 'included', 'exit 1')}\n")
    return cfg


def include_path(root: Path) -> Hostile:
    ws = base(root)
    set_config(ws, ("include.path", str(_outside_config(root))))
    return Hostile(root, ws, [["status"]], refused=True)


def include_if(root: Path) -> Hostile:
    ws = base(root)
    set_config(ws, ("includeIf.gitdir:/.path", str(_outside_config(root))))
    return Hostile(root, ws, [["status"]], refused=True)


def _outside_repo(root: Path) -> Path:
    other = root / "outside" / "repo"
    other.mkdir(parents=True)
    git(other, "init", "-q")
    (other / "secret.txt").write_text(OUTSIDE_CANARY + "\n")
    git(other, "add", "secret.txt")
    git(other, "commit", "-q", "-m", OUTSIDE_CANARY)
    set_config(other, ("core.fsmonitor", script(root, "elsewhere", "exit 1")))
    return other


def git_file(root: Path) -> Hostile:
    (root / "markers").mkdir(parents=True)
    other = _outside_repo(root)
    ws = root / "ws"
    ws.mkdir()
    (ws / "secret.txt").write_text("changed\n")
    (ws / ".git").write_text(f"gitdir: {other / '.git'}\n")
    return Hostile(root, ws, [["status"]], refused=True, outside=(OUTSIDE_CANARY,))


def common_dir(root: Path) -> Hostile:
    ws = base(root)
    other = _outside_repo(root)
    (ws / ".git" / "commondir").write_text(str(other / ".git") + "\n")
    return Hostile(root, ws, [["status"]], refused=True, outside=(OUTSIDE_CANARY,))


def core_worktree(root: Path) -> Hostile:
    ws = base(root)
    tree = root / "outside" / "tree"
    tree.mkdir(parents=True)
    (tree / "a.txt").write_text(OUTSIDE_CANARY + "\n")
    set_config(ws, ("core.worktree", str(tree)),
               ("core.fsmonitor", script(root, "worktree", "exit 1")))
    return Hostile(root, ws, [["status"]], refused=True, outside=(OUTSIDE_CANARY,))


def submodule(root: Path) -> Hostile:
    ws = base(root)
    src = root / "subsrc"
    src.mkdir()
    git(src, "init", "-q")
    (src / "s.txt").write_text("sub\n")
    git(src, "add", "s.txt")
    git(src, "commit", "-q", "-m", "sub")
    git(ws, "-c", "protocol.file.allow=always", "submodule", "add", "-q", str(src), "sub")
    git(ws, "commit", "-q", "-m", "add sub")
    (ws / "sub" / "s.txt").write_text("sub\nchanged\n")
    (ws / "sub" / ".gitattributes").write_text("*.txt filter=evil diff=evil\n")
    sub_config = ws / ".git" / "modules" / "sub" / "config"
    set_config(ws, ("core.fsmonitor", script(root, "subfsmonitor", "exit 1")),
               ("filter.evil.clean", script(root, "subclean")),
               ("diff.evil.textconv", script(root, "subtextconv", 'cat "$1"')),
               file=sub_config)
    return Hostile(root, ws, [["status"], ["diff"]])


def _promisor(root: Path, url: str, *pairs: tuple[str, str]) -> Path:
    """A partial clone missing the blob of b.txt: reading it makes git fetch it lazily."""
    ws = base(root)
    blob = git(ws, "rev-parse", "HEAD:b.txt").stdout.strip()
    (ws / ".git" / "objects" / blob[:2] / blob[2:]).unlink()
    set_config(ws, ("core.repositoryformatversion", "1"),
               ("extensions.partialClone", "origin"), ("remote.origin.url", url),
               ("remote.origin.promisor", "true"), *pairs)
    return ws


def ssh_command(root: Path) -> Hostile:
    program = script(root, "ssh", "exit 1")
    ws = _promisor(root, "ssh://example.invalid/repo.git", ("core.sshCommand", program),
                   ("credential.helper", script(root, "credential", "exit 1")))
    return Hostile(root, ws, [["show", "HEAD:b.txt"]])


def ext_remote(root: Path) -> Hostile:
    marker = root / "markers" / "ext"
    ws = _promisor(root, f"ext::sh -c touch% {marker}", ("protocol.ext.allow", "always"))
    return Hostile(root, ws, [["show", "HEAD:b.txt"]])


def upload_pack(root: Path) -> Hostile:
    empty = root / "outside" / "empty.git"
    empty.mkdir(parents=True)
    git(empty, "init", "-q", "--bare")
    ws = _promisor(root, f"file://{empty}", ("protocol.file.allow", "always"),
                   ("remote.origin.uploadpack", script(root, "uploadpack", "exit 1")))
    return Hostile(root, ws, [["show", "HEAD:b.txt"]])


def _token(root: Path) -> str:
    return hashlib.sha1(str(root).encode()).hexdigest()[:12]


class _Canary(http.server.BaseHTTPRequestHandler):
    """A listener on 127.0.0.1 that asks for credentials (401) and records every path."""

    hits: list[str] = []
    server: http.server.ThreadingHTTPServer | None = None

    def do_GET(self) -> None:  # noqa: N802 (the http.server API)
        _Canary.hits.append(self.path)
        self.send_response(401)
        self.send_header("WWW-Authenticate", 'Basic realm="canary"')
        self.send_header("Content-Length", "0")
        self.end_headers()

    do_POST = do_GET

    def log_message(self, format: str, *args: object) -> None:
        pass

    @classmethod
    def url(cls) -> str:
        if cls.server is None:
            cls.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), cls)
            threading.Thread(target=cls.server.serve_forever, daemon=True).start()
        return f"http://127.0.0.1:{cls.server.server_address[1]}"


def credential_helper(root: Path) -> Hostile:
    """An http remote that answers 401: git asks the credential helper (of the repository's
    config) for a password.  The listener itself must never be contacted either."""
    url = f"{_Canary.url()}/{_token(root)}/repo.git"
    ws = _promisor(root, url, ("credential.helper", script(root, "credential", "exit 1")),
                   ("core.askPass", script(root, "askpass", "exit 1")),
                   ("protocol.http.allow", "always"))
    return Hostile(root, ws, [["show", "HEAD:b.txt"]])


FACTORIES: dict[str, Callable[[Path], Hostile]] = {
    f.__name__: f for f in (
        fsmonitor, hooks_path, default_hooks, textconv, clean_filter, process_filter,
        gpg_program, gpg_ssh, external_diff, diff_driver_command, pager, aliases,
        include_path, include_if, git_file, common_dir, core_worktree, submodule,
        ssh_command, credential_helper, ext_remote, upload_pack)
}


#: One entry of a tree's picture: kind, mode, mtime and what it holds (bytes, link target).
Entry = tuple[str, int, int, bytes]


def picture(root: Path) -> dict[str, Entry]:
    """Everything under ``root`` that git or a test could see change: every path (relative),
    its kind, permission bits, modification time and content (a symlink's target; a
    directory holds nothing)."""
    out: dict[str, Entry] = {}
    stack = [root]
    while stack:
        folder = stack.pop()
        with os.scandir(folder) as entries:
            for entry in entries:
                info = entry.stat(follow_symlinks=False)
                rel = os.path.relpath(entry.path, root)
                if entry.is_symlink():
                    out[rel] = ("link", 0, 0, os.readlink(entry.path).encode())
                elif entry.is_dir(follow_symlinks=False):
                    out[rel] = ("dir", info.st_mode & 0o7777, 0, b"")
                    stack.append(Path(entry.path))
                else:
                    with open(entry.path, "rb") as handle:
                        data = handle.read()
                    out[rel] = ("file", info.st_mode & 0o7777, info.st_mtime_ns, data)
    return out


def _put_back(root: Path, pristine: Path, want: dict[str, Entry]) -> bool:
    """Undo what changed under ``root`` (a marker, a rewritten index) from ``pristine``,
    path by path; True when ``root`` is then the build again, picture for picture."""
    try:
        have = picture(root)
        wrong = [rel for rel in have if want.get(rel, ("",))[0] != have[rel][0]]
        for rel in sorted(wrong, key=lambda r: r.count(os.sep), reverse=True):
            path = root / rel
            if have[rel][0] == "dir":
                shutil.rmtree(path)
            else:
                path.unlink()
        for rel in sorted(want, key=lambda r: r.count(os.sep)):
            kind, mode, _, data = want[rel]
            if have.get(rel) == want[rel] and rel not in wrong:
                continue
            path = root / rel
            if kind == "dir":
                path.mkdir(exist_ok=True)
                path.chmod(mode)
            elif kind == "link":
                if path.is_symlink():
                    path.unlink()  # a link that leads elsewhere now
                path.symlink_to(os.fsdecode(data))
            else:
                shutil.copy2(pristine / rel, path)  # bytes, mode and mtime
        return picture(root) == want
    except OSError:
        return False


class Built:
    """Each hostile repository built once under ``base`` and handed out as a fresh copy of
    that build.

    A factory runs about a dozen git commands; a copy of its result costs a few file copies.
    The copy lands at the very path the factory built at, so the absolute paths it wrote
    (scripts, hooks, ``gitdir:`` files, outside repositories, the canary's token) still
    hold; what a previous test did there (markers, a refreshed index, canary requests) is
    gone: the markers folder comes back empty and :meth:`Hostile.fired` counts only the
    canary requests made after the copy.

    Most tests change nothing there (the agent's git is read-only), so the tree is first
    compared with the build, path by path, byte by byte (kind, mode, mtime, content): an
    identical tree is handed out as it is, and anything else (a marker, a refreshed index,
    a file more or less, a touched mtime) is removed and copied back from the build.
    """

    def __init__(self, base: Path) -> None:
        self.base = base
        self._made: dict[str, Hostile] = {}
        self._pictures: dict[str, dict[str, Entry]] = {}
        #: how many hand-outs had to copy the build back (for the tests of this class)
        self.restored = 0

    def get(self, name: str) -> Hostile:
        root, pristine = self.base / name, self.base / f"{name}.pristine"
        hostile = self._made.get(name)
        if hostile is None:
            hostile = self._made[name] = FACTORIES[name](root)
            shutil.copytree(root, pristine, symlinks=True)
            self._pictures[name] = picture(pristine)
        elif not root.is_dir() or picture(root) != self._pictures[name]:
            if not _put_back(root, pristine, self._pictures[name]):
                shutil.rmtree(root, ignore_errors=True)
                shutil.copytree(pristine, root, symlinks=True)
            self.restored += 1
        hostile.canary_from = len(_Canary.hits)
        return hostile
