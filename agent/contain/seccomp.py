"""The seccomp filter every bubblewrap sandbox runs under: no unix sockets, no tracing.

Two walls that mounts and namespaces cannot give:

- **Unix sockets.** ``connect()`` on a filesystem socket works through a read-only bind
  (``/run/docker.sock``, the user's D-Bus, an ssh or gpg agent), and abstract sockets live
  in the network namespace, which a command approved with network shares with the host.
  The filter makes ``socket(AF_UNIX, ...)`` fail with ``EPERM``, so no unix socket can be
  opened at all; ``socketpair`` (a connected pair inside the process: pipes for
  ``subprocess``, ``multiprocessing``) stays allowed.  ``io_uring`` is refused too: its
  ``IORING_OP_SOCKET`` would create a socket without the ``socket`` system call.
- **The supervisor.** The command's parent inside the PID namespace is bubblewrap's init;
  ``ptrace``-attaching to it stops it, and the call then hangs until the turn is killed.
  ``ptrace``, ``process_vm_readv``/``writev`` and ``pidfd_getfd`` fail with ``EPERM``.

The program is classic BPF, assembled here for x86_64 and aarch64.  It checks the
architecture first and kills a process that makes a system call of any other ABI (a 32-bit
binary, x32), so a foreign calling convention cannot walk around the numbers: it fails
closed.  On another machine :func:`program` returns None and the sandbox refuses to start.
"""

from __future__ import annotations

import platform
import struct

# Classic BPF opcodes (linux/filter.h, linux/bpf_common.h).
_LD_W_ABS = 0x00 | 0x00 | 0x20
_JEQ_K = 0x05 | 0x10 | 0x00
_JGE_K = 0x05 | 0x30 | 0x00
_RET_K = 0x06 | 0x00

_RET_ALLOW = 0x7FFF0000
_RET_KILL_PROCESS = 0x80000000
_RET_EPERM = 0x00050000 | 1

# struct seccomp_data: nr (u32), arch (u32), instruction_pointer (u64), args[6] (u64, the
# low half first on these little-endian machines).
_NR, _ARCH, _ARG0 = 0, 4, 16

AF_UNIX = 1

#: Per machine: the audit arch, system call numbers, and whether the x32 bit must be refused.
_ARCHES: dict[str, dict[str, int]] = {
    "x86_64": {"arch": 0xC000003E, "x32": 0x40000000, "socket": 41, "ptrace": 101,
               "process_vm_readv": 310, "process_vm_writev": 311, "io_uring_setup": 425,
               "io_uring_enter": 426, "io_uring_register": 427, "pidfd_getfd": 438},
    "aarch64": {"arch": 0xC00000B7, "x32": 0, "socket": 198, "ptrace": 117,
                "process_vm_readv": 270, "process_vm_writev": 271, "io_uring_setup": 425,
                "io_uring_enter": 426, "io_uring_register": 427, "pidfd_getfd": 438},
}
_ALIASES = {"amd64": "x86_64", "arm64": "aarch64"}

#: The system calls refused outright (``EPERM``).
DENIED = ("ptrace", "process_vm_readv", "process_vm_writev", "io_uring_setup",
          "io_uring_enter", "io_uring_register", "pidfd_getfd")


def _op(code: int, k: int, jt: int = 0, jf: int = 0) -> bytes:
    return struct.pack("=HBBI", code, jt, jf, k)


def program(machine: str | None = None, *, unix_sockets: bool = False) -> bytes | None:
    """The filter for ``machine`` (default: this one) as bubblewrap's ``--seccomp`` reads it
    (an array of ``struct sock_filter``), or None where it has no system call table.

    ``unix_sockets`` True leaves ``socket(AF_UNIX)`` allowed: only for a command the user
    approved with a named socket (``bash`` ``sockets``); tracing stays refused.
    """
    name = (machine or platform.machine()).lower()
    table = _ARCHES.get(_ALIASES.get(name, name))
    if table is None:
        return None
    ops = [_op(_LD_W_ABS, _ARCH), _op(_JEQ_K, table["arch"], jt=1), _op(_RET_K, _RET_KILL_PROCESS),
           _op(_LD_W_ABS, _NR)]
    if table["x32"]:
        ops += [_op(_JGE_K, table["x32"], jf=1), _op(_RET_K, _RET_EPERM)]
    for call in DENIED:
        ops += [_op(_JEQ_K, table[call], jf=1), _op(_RET_K, _RET_EPERM)]
    if not unix_sockets:
        # socket(): refuse the unix domain (the low 32 bits of the first argument: the
        # kernel reads it as an int).
        ops += [_op(_JEQ_K, table["socket"], jf=3), _op(_LD_W_ABS, _ARG0),
                _op(_JEQ_K, AF_UNIX, jf=1), _op(_RET_K, _RET_EPERM)]
    ops.append(_op(_RET_K, _RET_ALLOW))
    return b"".join(ops)
