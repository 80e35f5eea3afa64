"""Starting the Python MCP test servers (``mcp_features_server.py``, ``mcp_schema_server.py``)
without paying for a new interpreter importing the MCP SDK each time.

A test server is still a process of its own on the other end of the agent's stdio pipes; only
how it comes to exist differs.  The agent starts :data:`LAUNCHER` (``python -S``, about 20 ms:
no SDK), which hands its stdin, stdout and stderr, argv, environment and working directory
over a Unix socket to a *fork server*: one process per test process that imported the SDK
once.  The fork server forks; the child takes those pipes, that environment and that folder
and runs the server script as ``__main__``.  Importing ``mcp`` costs about 1.2 s of CPU (more
under load), and the feature tests started about twenty such servers per run.

What a test of the client could observe of the process stays true: the launcher lives exactly
as long as the server (it exits with the server's status, and the fork server kills the server
when its launcher is gone, even by SIGKILL), SIGTERM/SIGINT/SIGHUP sent to the launcher reach
the server, and the server reads EOF when the agent closes its stdin.  It is not the sandbox's
process tree, so a test about containment starts a real interpreter (tests/mcp_stub.py).
"""

from __future__ import annotations

import array
import atexit
import json
import os
import selectors
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

#: The program the agent starts: ``python -S mcp_forkserver.py launch SOCKET SCRIPT ARGS...``.
LAUNCHER = str(Path(__file__).resolve())

#: What the fork server imports before it forks (what every test server needs).
PRELOAD = ("anyio", "mcp_types", "mcp.server.lowlevel", "mcp.server.stdio",
           "mcp.server.mcpserver")

#: How long a launcher waits for the fork server's socket (seconds): its start on a loaded
#: machine, with a margin.
LAUNCH_WAIT = 60.0

_lock = threading.Lock()
_started: dict[str, object] = {}


def server_command(script: str | Path, *args: str) -> tuple[str, list[str]]:
    """``(command, args)`` for an ``[mcp_servers.NAME]`` table that runs ``script`` (a test
    server) through this process's fork server, started on first use and ended with the
    process."""
    return sys.executable, ["-S", LAUNCHER, "launch", _socket_path(), str(script), *args]


def _socket_path() -> str:
    with _lock:
        if "socket" not in _started:
            folder = tempfile.mkdtemp(prefix="agent-mcp-fork-")
            path = os.path.join(folder, "s")
            # The fork server reads its stdin: when this process ends (however it ends) the
            # pipe closes and the fork server exits, taking its servers with it.  Not waited
            # for: its ~1 s of imports overlap the test's own set-up, and a launcher waits for
            # the socket (LAUNCH_WAIT).
            proc = subprocess.Popen([sys.executable, LAUNCHER, "serve", path],
                                    stdin=subprocess.PIPE, start_new_session=True)
            atexit.register(_stop, proc, folder)
            _started["socket"], _started["proc"] = path, proc
        return str(_started["socket"])


def _stop(proc: subprocess.Popen[bytes], folder: str) -> None:
    try:
        assert proc.stdin is not None
        proc.stdin.close()
        proc.wait(10)
    except Exception:
        proc.kill()
    shutil.rmtree(folder, ignore_errors=True)  # the fork server removes it too


# ---- the launcher: the process the agent starts ------------------------------------------------

def _send_fds(sock: socket.socket, payload: bytes, fds: list[int]) -> None:
    sock.sendmsg([payload], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", fds))])


def launch(path: str, argv: list[str]) -> int:
    """Hand this process's stdio, environment and folder to the fork server, wait for the
    server's exit, and exit the same way."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    deadline = time.monotonic() + LAUNCH_WAIT
    while True:  # the fork server may still be importing the SDK
        try:
            sock.connect(path)
            break
        except (FileNotFoundError, ConnectionRefusedError):
            if time.monotonic() > deadline:
                raise
            time.sleep(0.01)
    request = json.dumps({"argv": argv, "env": dict(os.environ), "cwd": os.getcwd()}).encode()
    _send_fds(sock, len(request).to_bytes(4, "big") + request, [0, 1, 2])
    for fd in (0, 1, 2):  # the server holds them now: EOF and broken pipes are its own
        os.close(fd)
    reader = sock.makefile("rb")
    child = int(reader.readline())

    def forward(signum: int, _frame: object) -> None:
        try:
            os.kill(child, signum)
        except OSError:
            pass

    for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(signum, forward)
    line = reader.readline()
    if not line:
        return 1
    status = int(line)
    if os.WIFSIGNALED(status):
        signal.signal(os.WTERMSIG(status), signal.SIG_DFL)
        os.kill(os.getpid(), os.WTERMSIG(status))
    return os.waitstatus_to_exitcode(status) if not os.WIFSIGNALED(status) else 1


# ---- the fork server -----------------------------------------------------------------------------

def _receive(conn: socket.socket) -> tuple[dict[str, object], list[int]]:
    fds = array.array("i")
    data, ancillary, _, _ = conn.recvmsg(1 << 16, socket.CMSG_SPACE(3 * fds.itemsize))
    for level, kind, raw in ancillary:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            fds.frombytes(raw[:len(raw) - len(raw) % fds.itemsize])
    size = int.from_bytes(data[:4], "big")
    body = data[4:]
    while len(body) < size:
        more = conn.recv(size - len(body))
        if not more:
            raise EOFError
        body += more
    return json.loads(body), list(fds)


def _run_child(request: dict[str, object], fds: list[int]) -> None:
    """In the forked child: become the server the launcher asked for."""
    import runpy

    for target, fd in enumerate(fds):
        os.dup2(fd, target)
        os.close(fd)
    os.environ.clear()
    os.environ.update(request["env"])  # type: ignore[arg-type]
    os.chdir(str(request["cwd"]))
    sys.stdin = open(0, closefd=False)
    sys.stdout = open(1, "w", closefd=False)
    sys.stderr = open(2, "w", closefd=False)
    argv = [str(a) for a in request["argv"]]  # type: ignore[attr-defined]
    sys.argv = argv
    sys.path[0] = os.path.dirname(os.path.abspath(argv[0]))
    code = 0
    try:
        runpy.run_path(argv[0], run_name="__main__")
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    except BaseException:
        import traceback

        traceback.print_exc()
        code = 1
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    finally:
        os._exit(code)


def serve(path: str) -> None:
    """Accept launchers on ``path`` until stdin closes; one forked server per launcher."""
    import importlib

    for name in PRELOAD:
        importlib.import_module(name)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path + ".new")
    os.chmod(path + ".new", 0o600)
    listener.listen(64)
    os.rename(path + ".new", path)  # a launcher sees the socket only once it is listening
    selector = selectors.DefaultSelector()
    selector.register(listener, selectors.EVENT_READ, "accept")
    selector.register(sys.stdin, selectors.EVENT_READ, "parent")
    children: dict[int, tuple[socket.socket, int]] = {}  # pid -> (launcher's socket, pidfd)
    try:
        while True:
            for key, _ in selector.select():
                what = key.data
                if what == "parent":
                    return
                if what == "accept":
                    conn, _ = listener.accept()
                    try:
                        request, fds = _receive(conn)
                    except (OSError, EOFError, ValueError):
                        conn.close()
                        continue
                    pid = os.fork()
                    if pid == 0:
                        selector.close()
                        listener.close()
                        conn.close()
                        for other, pidfd in children.values():
                            other.close()
                            os.close(pidfd)
                        _run_child(request, fds)
                    for fd in fds:
                        os.close(fd)
                    pidfd = os.pidfd_open(pid)
                    children[pid] = (conn, pidfd)
                    conn.sendall(f"{pid}\n".encode())
                    selector.register(conn, selectors.EVENT_READ, ("launcher", pid))
                    selector.register(pidfd, selectors.EVENT_READ, ("exited", pid))
                    continue
                kind, pid = what
                conn, pidfd = children[pid]
                if kind == "launcher":  # the launcher is gone: so is its server
                    try:
                        os.kill(pid, signal.SIGKILL)
                    except OSError:
                        pass
                    selector.unregister(conn)
                    continue
                _, status = os.waitpid(pid, 0)
                selector.unregister(pidfd)
                os.close(pidfd)
                try:
                    selector.unregister(conn)
                except KeyError:
                    pass
                try:
                    conn.sendall(f"{status}\n".encode())
                except OSError:
                    pass
                conn.close()
                del children[pid]
    finally:
        for pid in children:
            try:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
            except OSError:
                pass
        listener.close()
        # Also when the test process died without its atexit: nothing is left in $TMPDIR.
        shutil.rmtree(os.path.dirname(path), ignore_errors=True)


if __name__ == "__main__":
    if sys.argv[1] == "serve":
        serve(sys.argv[2])
    else:
        sys.exit(launch(sys.argv[2], sys.argv[3:]))
