"""Read-only git that cannot execute: a repository's own config never starts a program.

A repository is data an attacker may have written: its ``.git/config`` (and anything that
config includes) can name programs git runs on its own during ``status``, ``diff``, ``log``,
``show`` and ``blame`` — ``core.fsmonitor``, a ``clean`` filter, a diff ``textconv`` driver,
``gpg.program`` under ``log.showSignature``, hooks, pagers, an external diff, ssh and
credential helpers.  Every git command the builtins run goes through :func:`run`, which
neutralises all of them, in three layers:

1. **Where the repository is** is decided here, not by git: the ``.git`` found from the
   workspace upwards.  A ``.git`` *file* (or ``commondir``) leading outside the workspace is
   refused unless it is the checkout's own submodule or linked-worktree data (proven by the
   layout: inside an enclosing ``.git``, or a worktree entry pointing back at this ``.git``
   file) or listed in ``git_trusted_dirs``.  git then gets ``GIT_DIR`` and ``GIT_WORK_TREE``
   pinned to what was checked, so ``core.worktree`` cannot move it either (one leading
   outside the workspace is refused), and a bare repository planted in the workspace is
   never picked up.
2. **The environment** is rebuilt: every ``GIT_*`` variable of ours is dropped (none can
   redirect or inject config) but the locations of the user's own config files; the
   ``git`` binary is found on ``PATH`` outside the workspace; pagers and editors are set to
   the values git treats as "none" (``cat``, ``:``), prompts and askpass are off, no
   optional locks are taken.
3. **Every program-valued setting is overridden** on the command line, which outranks every
   config file: fixed ones (``core.fsmonitor=false``, ``core.hooksPath=/dev/null``,
   ``protocol.allow=never`` so no transport or lazy fetch can start ``ssh`` or a remote
   helper, ``log.showSignature=false``, ...), and the per-driver keys git only knows by name
   (``filter.<name>.clean``, ``diff.<name>.textconv``, ``credential.<url>.helper``, ...),
   found by listing the configuration first with the same neutralised git
   (``git config --list --show-origin --includes``, which reads files and runs nothing).
   An empty value switches each of them off.  The same listing shows every file the config
   includes: an ``include.path`` or ``includeIf`` of the repository that leads outside the
   workspace and the repository is refused.

Callers add ``--no-textconv`` and ``--no-ext-diff`` to the commands that take them, and
never recurse into submodules (``--ignore-submodules=all``): a submodule is another
repository with its own config.  git runs in the read-only sandbox (:mod:`agent.contain.sandbox`)
as a second wall; none of the above depends on it.
"""

from __future__ import annotations

import asyncio
import os
import re
import signal
from collections.abc import Iterable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

#: Seconds a git command may take.
TIMEOUT = 30.0
#: Bytes read from git's stdout before it is stopped.
READ_LIMIT = 1_000_000

NOT_INSTALLED = "git is not installed or not on PATH."

#: Settings overridden on every command, whatever any config file says.
FIXED_OVERRIDES: tuple[tuple[str, str], ...] = (
    ("core.fsmonitor", "false"),
    ("core.hooksPath", "/dev/null"),
    ("core.pager", "cat"),
    ("core.editor", ":"),
    ("sequence.editor", ":"),
    ("core.sshCommand", ""),
    ("core.askPass", ""),
    ("core.alternateRefsCommand", ""),
    ("credential.helper", ""),  # an empty value empties the helper list
    ("diff.external", ""),
    ("gpg.program", ""),
    ("gpg.openpgp.program", ""),
    ("gpg.x509.program", ""),
    ("gpg.ssh.program", ""),
    ("gpg.ssh.defaultKeyCommand", ""),
    ("log.showSignature", "false"),
    ("format.pretty", "medium"),  # a %G? placeholder would verify signatures
    ("protocol.allow", "never"),  # no transport: no ssh, no remote helper, no lazy fetch
    # ... and per protocol, since protocol.<name>.allow outranks protocol.allow:
    *((f"protocol.{name}.allow", "never")
      for name in ("ext", "fd", "file", "git", "http", "https", "ssh")),
    ("uploadpack.packObjectsHook", ""),
    ("submodule.recurse", "false"),
    ("diff.submodule", "short"),
    ("status.submoduleSummary", "false"),
    ("gc.auto", "0"),
    ("maintenance.auto", "false"),
    ("blame.ignoreRevsFile", ""),  # an outside file's lines would come back in errors
    ("diff.autoRefreshIndex", "false"),  # git diff rewrites the index despite the env below
    ("diff.noprefix", "false"),  # output is parsed: keep the a/ b/ prefixes
    ("diff.mnemonicPrefix", "false"),
    ("diff.relative", "false"),
    ("color.ui", "false"),
    ("core.quotepath", "false"),
)

#: Per-name keys that hold a program (``section.<name>.key``), with the value that disables
#: each.  Matched on the lower-cased section and key of every listed config entry.
DRIVER_KEYS: dict[tuple[str, str], str] = {
    ("filter", "clean"): "", ("filter", "smudge"): "", ("filter", "process"): "",
    ("filter", "required"): "false",
    ("diff", "textconv"): "", ("diff", "command"): "",
    ("merge", "driver"): "",
    ("credential", "helper"): "",
    ("difftool", "cmd"): "", ("mergetool", "cmd"): "",
    ("browser", "cmd"): "", ("man", "cmd"): "",
    ("remote", "uploadpack"): "", ("remote", "receivepack"): "", ("remote", "vcs"): "",
    ("gpg", "program"): "",
    ("submodule", "update"): "none",
    ("protocol", "allow"): "never",
    ("remote", "promisor"): "false",
}
#: Whole sections whose every key is neutralised (``alias.x``: git ignores aliases of its
#: own commands, and the tools only run those, but an alias never survives either way).
NEUTRAL_SECTIONS = {"alias": "", "pager": "false"}
#: Keys without a name part that hold a program and are not in FIXED_OVERRIDES.
PLAIN_KEYS = {"core.gitproxy": "", "web.browser": "", "sendemail.smtpserver": ""}

#: Our own environment variables git reads are all dropped; these are set instead.
ENVIRONMENT = {
    "LC_ALL": "C", "LANG": "C",
    "GIT_PAGER": "cat", "PAGER": "cat",  # "cat" means no pager to git
    "GIT_EDITOR": ":", "GIT_SEQUENCE_EDITOR": ":",  # ":" means no editor
    "GIT_ASKPASS": "", "SSH_ASKPASS": "",  # set and empty: no askpass program
    "GIT_TERMINAL_PROMPT": "0",
    "GIT_OPTIONAL_LOCKS": "0",  # read-only commands never write the index
    "GIT_NO_LAZY_FETCH": "1",
    "GIT_PROTOCOL_FROM_USER": "0",
    "GIT_ATTR_NOSYSTEM": "1",
}
#: Variables outside the GIT_ namespace that would make git run something.
DROPPED = ("SSH_ASKPASS", "EDITOR", "VISUAL", "LESS", "LESSOPEN", "LESSCLOSE")
#: GIT_ variables kept: where *your* config files are (their programs are switched off all
#: the same, like everything else's).
KEPT = ("GIT_CONFIG_GLOBAL", "GIT_CONFIG_SYSTEM", "GIT_CONFIG_NOSYSTEM")
#: More overrides than this and the repository is refused (each is a command-line argument).
MAX_OVERRIDES = 2000


class GitRefused(Exception):
    """The repository is laid out so that git would leave the workspace; the message says
    where and how to trust it."""


class GitFailed(Exception):
    """git exited non-zero; ``stderr`` holds its words."""

    def __init__(self, code: int, stderr: str) -> None:
        super().__init__(stderr)
        self.code = code
        self.stderr = stderr


class NotARepository(Exception):
    """No ``.git`` from the workspace upwards."""


class GitMissing(Exception):
    """The git binary is not there."""


@dataclass(frozen=True)
class Repository:
    """A repository checked for use: its git dir, common dir and work tree (real paths)."""

    git_dir: Path
    common_dir: Path
    work_tree: Path
    workspace: Path
    trusted: tuple[Path, ...] = ()

    def allowed(self, path: Path) -> bool:
        """Whether ``path`` (real) lies in what git may read: the workspace or the work tree
        that holds it, the repository's own directories, and ``git_trusted_dirs``."""
        return any(_inside(root, path) for root in
                   (self.workspace, self.work_tree, self.git_dir, self.common_dir,
                    *self.trusted))


def _inside(root: Path, path: Path) -> bool:
    """Whether ``path`` is ``root`` or below it; both absolute and normalised (real paths).

    Compared as strings: ``root in path.parents`` builds a Path per ancestor, and this runs
    for every PATH entry and config origin of every git command."""
    r, p = str(root), str(path)
    return p == r or p.startswith(r if r.endswith(os.sep) else r + os.sep)


def _trusted(config: Any) -> list[Path]:
    raw = config.get("git_trusted_dirs") if config is not None else None
    if isinstance(raw, str):
        raw = [raw]
    return [Path(os.path.realpath(os.path.expanduser(str(p)))) for p in raw or ()]


def _read_pointer(path: Path, prefix: str) -> str | None:
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    line = text.splitlines()[0].strip() if text.strip() else ""
    if prefix and not line.startswith(prefix):
        return None
    return line[len(prefix):].strip() if prefix else line


def locate(workspace: Path | str, config: Any = None) -> Repository:
    """The repository the workspace belongs to, checked (see the module docstring).

    Raises :class:`NotARepository` when there is none and :class:`GitRefused` when it
    would lead git outside the workspace.
    """
    ws = Path(os.path.realpath(workspace))
    trusted = _trusted(config)
    for top in (ws, *ws.parents):
        dotgit = top / ".git"
        if not os.path.lexists(dotgit):
            continue
        if dotgit.is_dir() and not dotgit.is_symlink():
            git_dir = dotgit
            pointer = False
        else:
            target = _read_pointer(dotgit, "gitdir:") if dotgit.is_file() else str(dotgit)
            if target is None:
                raise GitRefused(f"{dotgit} is neither a directory nor a 'gitdir:' file.")
            git_dir = Path(os.path.realpath(top / target))
            pointer = True
        if not (git_dir / "HEAD").exists():
            raise NotARepository(f"{top} has a .git that is not a repository.")
        common = _read_pointer(git_dir / "commondir", "")
        common_dir = Path(os.path.realpath(git_dir / common)) if common else git_dir
        repo = Repository(git_dir, common_dir, top, ws, tuple(trusted))
        _check_location(repo, dotgit, pointer, trusted)
        return repo
    raise NotARepository(f"{ws} is not a git repository.")


def _enclosing_git_dirs(ws: Path) -> list[Path]:
    """``A/.git`` for the workspace and every directory above it: where a checkout's own
    submodule data (``.git/modules/...``) lives."""
    return [top / ".git" for top in (ws, *ws.parents) if (top / ".git").is_dir()]


def _check_location(repo: Repository, dotgit: Path, pointer: bool,
                    trusted: list[Path]) -> None:
    ws = repo.workspace

    def ours(path: Path) -> bool:
        # The walk up for enclosing .git directories only for a path outside the workspace
        # (a submodule's data, a linked worktree's): the common case is one .git inside it.
        return (_inside(ws, path) or any(_inside(e, path) for e in _enclosing_git_dirs(ws))
                or any(_inside(t, path) for t in trusted))

    if pointer and not ours(repo.git_dir):
        # A linked worktree: git keeps its data in the main repository, which names this
        # checkout's .git file in <gitdir>/gitdir.  A planted .git file cannot make
        # another repository's worktree entry point back at it.
        back = _read_pointer(repo.git_dir / "gitdir", "")
        if not back or Path(os.path.realpath(repo.git_dir / back)) != Path(
                os.path.realpath(dotgit)):
            raise GitRefused(
                f"{dotgit} points git at {repo.git_dir}, outside the workspace ({ws}). The "
                "git tools do not follow it; if you trust that repository, add it to "
                "git_trusted_dirs in your config.")
        return
    if not ours(repo.common_dir):
        raise GitRefused(
            f"{repo.git_dir}/commondir points git at {repo.common_dir}, outside the "
            f"workspace ({ws}). The git tools do not follow it; if you trust that "
            "repository, add it to git_trusted_dirs in your config.")


# ---- the environment and the overrides -----------------------------------------------------

def environment(repo: Repository | None, base: dict[str, str] | None = None) -> dict[str, str]:
    """The environment git runs with: ours minus every ``GIT_*`` and program variable, plus
    :data:`ENVIRONMENT`, with the repository pinned."""
    env = {k: v for k, v in (os.environ if base is None else base).items()
           if (k in KEPT or not k.startswith("GIT_")) and k not in DROPPED}
    env.update(ENVIRONMENT)
    return pinned(env, repo) if repo is not None else env


def pinned(env: dict[str, str], repo: Repository) -> dict[str, str]:
    """``env`` (from :func:`environment`) with ``GIT_DIR`` and ``GIT_WORK_TREE`` set to
    ``repo``'s, as a new dict."""
    return {**env, "GIT_DIR": str(repo.git_dir), "GIT_WORK_TREE": str(repo.work_tree)}


def config_flags(pairs: Iterable[tuple[str, str]]) -> list[str]:
    """``-c key=value`` for each pair."""
    out: list[str] = []
    for key, value in pairs:
        out += ["-c", f"{key}={value}"]
    return out


_KEY_SPLIT = re.compile(r"^([^.]+)\.(.*)\.([^.]+)$")


@dataclass(frozen=True)
class ConfigEntry:
    scope: str
    origin: str
    key: str
    value: str | None


def parse_config_list(raw: bytes) -> list[ConfigEntry]:
    """Entries of ``git config --list --show-scope --show-origin -z``."""
    fields = raw.split(b"\0")
    entries = []
    i = 0
    while i + 2 < len(fields):
        scope = fields[i].decode("utf-8", "surrogateescape")
        origin = fields[i + 1].decode("utf-8", "surrogateescape")
        key, newline, value = fields[i + 2].decode("utf-8", "surrogateescape").partition("\n")
        entries.append(ConfigEntry(scope, origin, key, value if newline else None))
        i += 3
    return entries


def neutralising(entries: Iterable[ConfigEntry]) -> list[tuple[str, str]]:
    """The overrides that switch off every program-valued key among ``entries``."""
    out: dict[str, str] = {}
    for entry in entries:
        key = entry.key
        low = key.lower()
        if low in PLAIN_KEYS:
            out[key] = PLAIN_KEYS[low]
            continue
        section = low.split(".", 1)[0]
        if section in NEUTRAL_SECTIONS and "." in key:
            out[key] = NEUTRAL_SECTIONS[section]
            continue
        match = _KEY_SPLIT.match(key)
        if match is None:
            continue
        name = (match.group(1).lower(), match.group(3).lower())
        if name in DRIVER_KEYS:
            out[key] = DRIVER_KEYS[name]
    return list(out.items())


def _origin_path(origin: str) -> str | None:
    return origin[len("file:"):] if origin.startswith("file:") else None


def check_includes(repo: Repository, entries: Iterable[ConfigEntry]) -> None:
    """Refuse a repository whose config reads files from outside it: an ``include.path`` or
    ``includeIf.<condition>.path`` of the repository's own config (or of a file it includes)
    that leads outside the workspace and the repository, matched or not."""
    checked: dict[str, Path] = {}  # origin -> its real path; most entries share a few
    for entry in entries:
        if entry.scope not in ("local", "worktree"):
            continue
        origin = _origin_path(entry.origin)
        where = checked.get(origin) if origin is not None else None
        if origin is not None and where is None:
            # git prints an origin as it opened it: absolute, or relative to the cwd.
            where = checked[origin] = Path(os.path.realpath(repo.workspace / origin))
            if not repo.allowed(where):
                raise GitRefused(f"the repository's config reads {where}, outside the "
                                 f"workspace ({repo.workspace}). The git tools refuse to "
                                 "use it; remove the include, or add the directory to "
                                 "git_trusted_dirs in your config if you trust it.")
        low = entry.key.lower()
        if entry.value is None or not (low == "include.path" or (
                low.startswith("includeif.") and low.endswith(".path"))):
            continue
        base = where.parent if origin and where is not None else repo.git_dir
        target = Path(os.path.realpath(base / os.path.expanduser(entry.value)))
        if not repo.allowed(target):
            raise GitRefused(f"the repository's config includes {entry.value} (from "
                             f"{entry.key}), which leads outside the workspace "
                             f"({repo.workspace}). The git tools refuse to use it; remove "
                             "the include, or add the directory to git_trusted_dirs in your "
                             "config if you trust it.")


def check_worktree(repo: Repository, entries: Iterable[ConfigEntry]) -> Repository:
    """The repository with the work tree git will be pinned to: a ``core.worktree`` that
    leads outside the workspace is refused; one inside it is kept."""
    for entry in entries:
        if entry.key.lower() != "core.worktree" or entry.scope not in ("local", "worktree") \
                or entry.value is None:
            continue
        target = Path(os.path.realpath(repo.git_dir / os.path.expanduser(entry.value)))
        if target == repo.work_tree:
            continue
        if not _inside(repo.workspace, target):
            raise GitRefused(f"the repository's core.worktree is {entry.value}, which leads "
                             f"to {target}, outside the workspace ({repo.workspace}). The "
                             "git tools refuse to use it.")
        repo = replace(repo, work_tree=target)
    return repo


# ---- running -------------------------------------------------------------------------------

def git_binary(workspace: Path, path: str | None = None) -> str:
    """The git on ``PATH``, skipping entries that are relative (``.``, ``bin``) or lie inside
    the workspace: a ``git`` the repository ships must never be the one that runs."""
    ws: Path | None = None
    for entry in (os.environ.get("PATH", os.defpath) if path is None else path).split(
            os.pathsep):
        if not entry or not os.path.isabs(entry):
            continue
        candidate = os.path.join(entry, "git")
        if not (os.path.isfile(candidate) and os.access(candidate, os.X_OK)):
            continue
        # Only an entry that holds a git is resolved (each resolution is an lstat per path
        # component, and PATH often has a dozen entries before git's).
        ws = ws or Path(os.path.realpath(workspace))
        if _inside(ws, Path(os.path.realpath(entry))):
            continue
        return candidate
    raise GitMissing(NOT_INSTALLED)


async def _spawn(argv: list[str], cwd: Path, env: dict[str, str], config: Any = None
                 ) -> Any:
    from agent.contain.sandbox import READ_ONLY, Sandbox, sandbox_for

    # The read-only sandbox: nothing writable, no network, secrets hidden.
    sandbox = sandbox_for(config) if config is not None else Sandbox.standalone(cwd)
    try:
        return await sandbox.spawn(argv, mode=READ_ONLY, cwd=str(cwd), env=env,
                                   stdout=asyncio.subprocess.PIPE,
                                   stderr=asyncio.subprocess.PIPE)
    except FileNotFoundError:
        raise GitMissing(NOT_INSTALLED) from None


async def _collect(proc: asyncio.subprocess.Process, limit: int) -> tuple[bytes, bytes, bool]:
    """stdout (up to ``limit`` bytes, then git is stopped), stderr, and whether it was cut."""
    stdout, stderr = proc.stdout, proc.stderr
    assert stdout is not None and stderr is not None

    async def read_out() -> bytes:
        chunks: list[bytes] = []
        size = 0
        while True:
            data = await stdout.read(65_536)
            if not data:
                break
            chunks.append(data)
            size += len(data)
            if size >= limit:
                proc.kill()  # enough for any result the model will see
                break
        return b"".join(chunks)

    out, err = await asyncio.gather(read_out(), stderr.read())
    await proc.wait()
    return out, err, len(out) >= limit


async def _execute(argv: list[str], cwd: Path, env: dict[str, str], timeout: float,
                   limit: int, config: Any = None) -> tuple[int, bytes, bytes, bool]:
    proc = await _spawn(argv, cwd, env, config)
    try:
        out, err, cut = await asyncio.wait_for(_collect(proc, limit), timeout)
    except (TimeoutError, asyncio.CancelledError):
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except OSError:
            pass
        await proc.wait()
        raise
    return proc.returncode or 0, out, err, cut


@dataclass(frozen=True)
class Prepared:
    """A repository checked and its configuration listed: what every command on it runs
    with.  From :func:`prepare`; :func:`run_prepared` runs commands on it.

    One tool that runs several git commands for one answer (an object's type, then the
    object) prepares once: the listing is a git process of its own, as costly as the
    command.  Prepare again for the next answer: the configuration may have changed."""

    repo: Repository
    flags: tuple[str, ...]
    env: dict[str, str]
    binary: str


#: Listings running now, by everything their result depends on: the event loop, the
#: workspace, the run's config, the git binary, the timeout and our environment.
_IN_FLIGHT: dict[tuple[Any, ...], tuple[Any, asyncio.Task[Prepared]]] = {}


async def prepare(workspace: Path | str, config: Any = None, *, timeout: float = TIMEOUT,
                  binary: str | None = None) -> Prepared:
    """Locate and check the repository, list its config safely, and return it with the
    ``-c`` flags and the environment every command must run with (``binary``: the git to
    run, found by :func:`git_binary` when not given).

    A call made while a listing for the same workspace, config and environment is still
    running waits for that listing instead of starting its own: the read-only tool calls
    of one model step start together (the session runs them concurrently, and runs
    anything that may write on its own), so one listing serves them all.  Only a listing
    in flight is shared, never one that has finished: the next call lists again, and sees
    any change made since.  A caller's ``timeout`` bounds its own wait; a cancelled caller
    leaves the listing running for the others.
    """
    loop = asyncio.get_running_loop()
    # Our environment is read once: git's (every GIT_* and program variable dropped) is all
    # a listing depends on, so it is the key's part and the base of the command's.
    base = environment(None)
    key = (loop, os.path.realpath(workspace), id(config), binary, timeout,
           tuple(sorted(base.items())))
    entry = _IN_FLIGHT.get(key)
    if entry is None:
        task = loop.create_task(_prepare(workspace, config, timeout=timeout, binary=binary,
                                         base=base))
        entry = _IN_FLIGHT[key] = (config, task)  # config kept: its id() is in the key

        def finished(done: asyncio.Task[Prepared], key: tuple[Any, ...] = key) -> None:
            if _IN_FLIGHT.get(key, (None, None))[1] is done:
                del _IN_FLIGHT[key]
            if not done.cancelled():
                done.exception()  # retrieved here too, in case every caller left

        task.add_done_callback(finished)
    return await asyncio.wait_for(asyncio.shield(entry[1]), timeout)


async def _prepare(workspace: Path | str, config: Any, *, timeout: float,
                   binary: str | None, base: dict[str, str]) -> Prepared:
    repo = locate(workspace, config)
    binary = binary or git_binary(repo.workspace, base.get("PATH", os.defpath))
    env = pinned(base, repo)
    fixed = config_flags(FIXED_OVERRIDES)
    code, out, err, _ = await _execute(
        [binary, "--no-pager", *fixed, "config", "--list", "--show-scope", "--show-origin",
         "--includes", "-z"], repo.workspace, env, timeout, 16 * READ_LIMIT, config)
    if code not in (0, 1):  # 1: no config at all
        raise GitFailed(code, err.decode("utf-8", "replace").strip())
    entries = [e for e in parse_config_list(out) if e.scope != "command"]
    check_includes(repo, entries)
    repo = check_worktree(repo, entries)
    env = pinned(base, repo)
    dynamic = neutralising(entries)
    if len(dynamic) > MAX_OVERRIDES:
        raise GitRefused(f"the configuration names {len(dynamic)} program-valued settings; "
                         "the git tools refuse to use it.")
    for key, _ in dynamic:
        if "=" in key or "\n" in key:
            raise GitRefused(f"the repository's config has a key git cannot override "
                             f"safely ({key!r}); the git tools refuse to use it.")
    return Prepared(repo, tuple(fixed + config_flags(dynamic)), env, binary)


async def run_prepared(prepared: Prepared, argv: Iterable[str], *, config: Any = None,
                       timeout: float = TIMEOUT, limit: int = READ_LIMIT) -> tuple[str, bool]:
    """Run ``git argv`` with what :func:`prepare` found; as :func:`run` otherwise."""
    code, out, err, cut = await _execute([prepared.binary, "--no-pager", *prepared.flags,
                                          *argv], prepared.repo.workspace, prepared.env,
                                         timeout, limit, config)
    if code != 0 and not cut:
        raise GitFailed(code, err.decode("utf-8", "replace").strip())
    return out.decode("utf-8", "replace"), cut


async def run(workspace: Path | str, argv: Iterable[str], *, config: Any = None,
              timeout: float = TIMEOUT, limit: int = READ_LIMIT) -> tuple[str, bool]:
    """Run ``git argv`` (a fixed argument vector, never a shell string) for the workspace,
    neutralised as the module docstring says.  Returns (stdout, whether it was cut at
    ``limit`` bytes).

    Raises :class:`NotARepository`, :class:`GitRefused`, :class:`GitMissing`,
    :class:`GitFailed` (non-zero exit) and :class:`TimeoutError`.
    """
    argv = list(argv)
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout  # one budget for the config listing and the command
    prepared = await prepare(workspace, config, timeout=timeout)
    return await run_prepared(prepared, argv, config=config,
                              timeout=max(0.01, deadline - loop.time()), limit=limit)
