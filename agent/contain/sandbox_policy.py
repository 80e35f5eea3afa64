"""What a sandboxed process may touch, and the command lines that enforce it.

Pure functions only: a :class:`Policy` in, an argument vector (Linux, bubblewrap) or a
Seatbelt profile (macOS) out.  :mod:`agent.contain.sandbox` decides the policy and runs the result;
keeping the translation pure lets tests read the exact walls on any platform, including the
macOS profile that CI cannot run.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass

#: Sandbox modes, as the ``sandbox`` config key and the ``--sandbox`` flag spell them.
WORKSPACE_WRITE = "workspace-write"
READ_ONLY = "read-only"
OFF = "off"
MODES = (WORKSPACE_WRITE, READ_ONLY, OFF)

#: The size limit of the read-only mode's scratch ``/tmp`` (a tmpfs in memory).
SCRATCH_TMP_BYTES = 64 * 1024 * 1024

#: Credentials under the user's home directory, hidden in every sandboxed process.
HOME_SECRETS = (".ssh", ".aws", ".gnupg", ".netrc", ".config/gcloud")


@dataclass(frozen=True)
class Policy:
    """The walls around one process.

    ``mode`` is ``workspace-write`` (the workspace, ``tmpdir`` and ``writable`` may be
    written) or ``read-only`` (nothing may be written but a scratch ``/tmp`` of the
    process's own, thrown away when it ends).  ``hidden`` are absolute paths whose
    contents the process must not see (files read as unreadable, directories as empty).
    ``network`` False means no network at all, loopback to the host included.
    """

    mode: str
    workspace: str
    network: bool = False
    hidden: tuple[str, ...] = ()
    writable: tuple[str, ...] = ()
    tmpdir: str | None = None
    cwd: str | None = None
    #: Host directories under ``/tmp`` to show read-only (the program's own directory, when
    #: it lives there: the sandbox's ``/tmp`` hides the host's).
    readable: tuple[str, ...] = ()
    #: Persistence walls (:mod:`agent.contain.walls`): ``(path, "ro" | "rw")`` bound over
    #: themselves after the workspace, read-only (or, for ``.git``, writable: a mount point
    #: cannot be renamed away).  Only in ``workspace-write``; every path exists.
    walls: tuple[tuple[str, str], ...] = ()
    #: The file descriptor bubblewrap reads the seccomp filter from
    #: (:mod:`agent.contain.seccomp`); None leaves it out (only for tests of the command line).
    seccomp_fd: int | None = None
    #: An empty read-only file that hidden files are replaced by (so ``git diff`` of a hidden
    #: tracked file still works: it reads as emptied); ``/dev/null`` when None.
    empty_file: str | None = None


def _inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


def effective_hidden(policy: Policy) -> tuple[str, ...]:
    """The hidden paths that can be hidden: a path that contains the workspace (or a
    writable root) would hide the very place the process works in, so it is left out —
    the user chose to work there."""
    roots = (policy.workspace, *policy.writable)
    kept = [p for p in dict.fromkeys(policy.hidden) if not any(_inside(root, p) for root in roots)]
    # A path inside another hidden directory is hidden with it (and could not be mounted on:
    # the outer one is an empty read-only directory by then).
    return tuple(p for p in kept if not any(q != p and _inside(p, q) for q in kept))


def _under_private_tmp(path: str, policy: Policy) -> bool:
    """True for a path the sandbox's own ``/tmp`` already covers (nothing of the host's
    ``/tmp`` is visible inside, except the workspace and writable roots bound back)."""
    return _inside(path, "/tmp") and not any(
        _inside(path, root) for root in (policy.workspace, *policy.writable))


def bwrap_args(policy: Policy, bwrap: str, argv: Sequence[str], *,
               is_dir: Callable[[str], bool] = os.path.isdir) -> list[str]:
    """The ``bwrap`` command line running ``argv`` under ``policy``.

    Order matters to bubblewrap (later mounts cover earlier ones): the whole filesystem
    read-only, fresh ``/dev`` and ``/proc``, a private ``/tmp``, the writable roots, and last
    the hidden paths (a directory becomes an empty read-only one, a file an empty file), so
    a secret inside the workspace stays hidden although the workspace is writable.  A new
    user namespace with every capability dropped means even root inside cannot remount or
    unmount a wall; ``--disable-userns`` stops it building a new namespace to get
    capabilities back; a PID namespace and ``--die-with-parent`` mean that when the outer
    ``bwrap`` dies, every process of the command dies with it (``setsid`` and daemonised
    ones included).
    """
    out = [bwrap, "--unshare-user", "--disable-userns", "--cap-drop", "ALL",
           "--unshare-pid", "--unshare-ipc", "--die-with-parent"]
    if policy.seccomp_fd is not None:
        out += ["--seccomp", str(policy.seccomp_fd)]
    if not policy.network:
        out.append("--unshare-net")
    out += ["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/dev/shm"]
    writing = policy.mode == WORKSPACE_WRITE
    if writing and policy.tmpdir:
        out += ["--bind", policy.tmpdir, "/tmp"]
    else:
        # A scratch /tmp of the process's own, gone when it ends: programs that only read
        # still want somewhere to put a temp file (sort, git's index lock of a status, ...).
        out += ["--size", str(SCRATCH_TMP_BYTES), "--tmpfs", "/tmp"]
    bind = "--bind" if writing else "--ro-bind"
    # Re-bound even when read-only: a workspace under /tmp would vanish under the new /tmp.
    out += [bind, policy.workspace, policy.workspace]
    if writing:
        for path in policy.writable:
            out += ["--bind", path, path]
        for path, kind in policy.walls:
            out += ["--bind" if kind == "rw" else "--ro-bind", path, path]
    for path in policy.readable:
        out += ["--ro-bind", path, path]
    for path in effective_hidden(policy):
        if _under_private_tmp(path, policy):
            continue
        if is_dir(path):
            out += ["--tmpfs", path, "--remount-ro", path]
        else:
            out += ["--ro-bind", policy.empty_file or "/dev/null", path]
    out += ["--chdir", policy.cwd or policy.workspace, "--", *argv]
    return out


def _sbpl(path: str) -> str:
    """A Seatbelt string literal."""
    return '"' + path.replace("\\", "\\\\").replace('"', '\\"') + '"'


def seatbelt_profile(policy: Policy) -> str:
    """The macOS Seatbelt (``sandbox-exec -p``) profile with the same walls as
    :func:`bwrap_args`.

    Seatbelt applies the last matching rule, so the profile allows by default, denies every
    write, allows writes back under the workspace, the private temp dir and the writable
    roots (``workspace-write`` only), denies the network unless allowed, and ends by denying
    reads and writes of the hidden paths so nothing earlier can reopen them.  macOS has no
    PID namespace: descendants are ended by process-group and session tracking instead.
    """
    lines = ["(version 1)", "(allow default)", "(deny file-write*)",
             '(allow file-write* (literal "/dev/null") (literal "/dev/zero")'
             ' (literal "/dev/dtracehelper") (regex #"^/dev/tty"))']
    if policy.mode == WORKSPACE_WRITE:
        roots = [policy.workspace, *policy.writable]
        if policy.tmpdir:
            roots.append(policy.tmpdir)
        lines.append("(allow file-write* " + " ".join(f"(subpath {_sbpl(r)})" for r in roots)
                     + ")")
        walled = [f"(literal {_sbpl(p)})" if kind == "rw" else f"(subpath {_sbpl(p)})"
                  for p, kind in policy.walls]
        if walled:  # Seatbelt needs no placeholder: a rule covers a path not yet there
            lines.append("(deny file-write* " + " ".join(walled) + ")")
    if not policy.network:
        lines.append("(deny network*)")
        # Local unix sockets are how many tools talk to their own helpers (not the network).
        lines.append('(allow network* (remote unix-socket (path-regex #"^/private/tmp/")))')
    hidden = effective_hidden(policy)
    if hidden:
        targets = " ".join(f"(subpath {_sbpl(p)})" for p in hidden)
        lines.append(f"(deny file-read* file-write* {targets})")
    return "\n".join(lines) + "\n"


def seatbelt_args(policy: Policy, argv: Sequence[str],
                  sandbox_exec: str = "/usr/bin/sandbox-exec") -> list[str]:
    """``sandbox-exec -p PROFILE ARGV``."""
    return [sandbox_exec, "-p", seatbelt_profile(policy), "--", *argv]


# ---- environment ------------------------------------------------------------------------------

# Which variables are credentials is its own concept now (agent.contain.envpolicy); the names
# stay importable from here for code written against this module.
from agent.contain.envpolicy import is_secret_variable, scrub_environment  # noqa: E402, F401

#: Variables that name an agent's socket: a sandboxed process cannot open a unix socket,
#: and is not told where the keys are (kept only for a call approved with that socket).
SOCKET_VARIABLES = ("SSH_AUTH_SOCK", "GPG_AGENT_INFO")
