"""agent.contain.sandbox: the walls are proven by outcome (files on disk, a listener never
contacted, processes that are gone), and the command lines and the macOS profile by their exact
text."""

from __future__ import annotations

import asyncio
import os
import socket
from pathlib import Path

import pytest

from agent import READ_ONLY, Effects, Tool, sandbox_for
from agent.contain.procs import alive, snapshot
from agent.contain.sandbox_policy import (
    SCRATCH_TMP_BYTES,
    Policy,
    bwrap_args,
    scrub_environment,
    seatbelt_profile,
)
from agent.testing import gate_decision, make_boot

pytestmark = pytest.mark.skipif(not os.path.exists("/proc/self/ns/pid"), reason="Linux only")


@pytest.fixture(autouse=True)
def user_home(tmp_path, monkeypatch):
    home = tmp_path / "userhome"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_ed25519").write_text("PRIVATE KEY\n")
    (home / ".netrc").write_text("machine x password hunter2\n")
    monkeypatch.setenv("HOME", str(home))
    return home


def boot(tmp_path, **file_data):
    workspace = tmp_path / "ws"
    workspace.mkdir(parents=True, exist_ok=True)
    config, hooks = make_boot(workspace, tmp_path / "agenthome", builtins=["bash", "secrets"],
                              file_data=file_data)
    return config, hooks


async def sh(config, script: str, **kw) -> tuple[int, str]:
    proc = await sandbox_for(config).spawn(["bash", "-c", script], stdout=asyncio.subprocess.PIPE,
                                           stderr=asyncio.subprocess.STDOUT, **kw)
    out = await proc.stdout.read()
    return await proc.wait(), out.decode("utf-8", "replace")


# ---- the walls, by outcome ------------------------------------------------------------------

async def test_workspace_is_writable_and_nothing_outside_it(tmp_path, user_home):
    config, _ = boot(tmp_path)
    victim = tmp_path / "victim.txt"
    victim.write_text("original\n")
    home_victim = user_home / "notes.txt"
    home_victim.write_text("mine\n")
    code, out = await sh(config, f"echo made > inside.txt; echo changed > {victim}; "
                                 f"echo changed > {home_victim}; rm -f {victim}; "
                                 f"touch /etc/agent-was-here; echo done")
    assert out.strip().endswith("done")
    assert (config.workspace / "inside.txt").read_text() == "made\n"
    assert victim.read_text() == "original\n"
    assert home_victim.read_text() == "mine\n"
    assert not Path("/etc/agent-was-here").exists()


async def test_read_only_mode_writes_nothing_but_a_scratch_tmp_thrown_away(tmp_path):
    config, _ = boot(tmp_path)
    code, out = await sh(config, "echo x > made.txt; mkdir d; echo scratch > /tmp/t; "
                                 "cat /tmp/t; echo y > $HOME/agent-ro-marker",
                         mode=READ_ONLY)
    assert code != 0
    assert list(config.workspace.iterdir()) == []
    assert "Read-only file system" in out
    assert "scratch" in out  # the private /tmp takes writes ...
    code, out = await sh(config, "cat /tmp/t", mode=READ_ONLY)
    assert code != 0 and "No such file" in out  # ... and is gone with the process
    assert not (Path.home() / "agent-ro-marker").exists()


async def test_secrets_agent_home_and_credentials_are_hidden(tmp_path, user_home):
    config, _ = boot(tmp_path)
    ws = config.workspace
    (ws / ".env").write_text("API_KEY=sk-from-dotenv\n")
    (ws / "deploy").mkdir()
    (ws / "deploy" / "PROD.ENV").write_text("PROD=sk-upper-case\n")
    (ws / "server.pem").write_text("-----BEGIN sk-pem\n")
    (ws / ".env.example").write_text("API_KEY=changeme\n")
    (ws / "notes.txt").symlink_to(ws / ".env")
    config.paths.home.mkdir(parents=True, exist_ok=True)
    (config.paths.home / "config.toml").write_text('api_key = "sk-agent-home"\n')
    code, out = await sh(config, f"cat .env deploy/PROD.ENV server.pem notes.txt .env.example "
                                 f"{config.paths.home}/config.toml {user_home}/.ssh/id_ed25519 "
                                 f"{user_home}/.netrc; ls -a {user_home}/.ssh")
    for secret in ("sk-from-dotenv", "sk-upper-case", "sk-pem", "sk-agent-home", "PRIVATE KEY",
                   "hunter2"):
        assert secret not in out
    assert "API_KEY=changeme" in out  # the example file is not a secret
    assert (ws / ".env").read_text() == "API_KEY=sk-from-dotenv\n"  # hidden, not harmed


async def test_a_secret_created_between_calls_is_hidden_from_the_next(tmp_path):
    config, _ = boot(tmp_path)
    ws = config.workspace
    (ws / "src").mkdir()
    assert (await sh(config, "ls src"))[0] == 0
    (ws / "src" / ".env.local").write_text("TOKEN=sk-late\n")
    (ws / "src" / ".env").mkdir()  # a directory named like a secret file
    (ws / "src" / ".env" / "values").write_text("sk-in-dir\n")
    _, out = await sh(config, "cat src/.env.local src/.env/values")
    assert "sk-late" not in out and "sk-in-dir" not in out


async def test_secrets_allow_opens_a_path_the_user_names(tmp_path):
    config, _ = boot(tmp_path, secrets_allow=["certs/*.pem"])
    (config.workspace / "certs").mkdir()
    (config.workspace / "certs" / "test.pem").write_text("test cert\n")
    (config.workspace / "real.pem").write_text("sk-hidden\n")
    _, out = await sh(config, "cat certs/test.pem real.pem")
    assert "test cert" in out and "sk-hidden" not in out


def listener() -> socket.socket:
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    server.setblocking(False)
    return server


def contacted(server: socket.socket) -> bool:
    try:
        conn, _ = server.accept()
    except BlockingIOError:
        return False
    conn.close()
    return True


async def test_no_network_unless_asked_for(tmp_path):
    config, _ = boot(tmp_path)
    server = listener()
    port = server.getsockname()[1]
    try:
        script = f"exec 3<>/dev/tcp/127.0.0.1/{port} && echo connected"
        code, out = await sh(config, script)
        assert "connected" not in out and not contacted(server)
        code, out = await sh(config, script, mode=READ_ONLY, network=True)
        assert "connected" not in out and not contacted(server)  # read-only: never
        code, out = await sh(config, script, network=True)
        assert "connected" in out and contacted(server)
    finally:
        server.close()


async def test_sandbox_network_true_opens_the_network(tmp_path):
    config, _ = boot(tmp_path, sandbox_network=True)
    server = listener()
    try:
        _, out = await sh(config, f"exec 3<>/dev/tcp/127.0.0.1/{server.getsockname()[1]} "
                                  "&& echo connected")
        assert "connected" in out and contacted(server)
    finally:
        server.close()


async def test_the_private_tmp_persists_between_calls_and_is_not_the_hosts(tmp_path):
    config, _ = boot(tmp_path)
    _, out = await sh(config, "echo kept > /tmp/scratch; echo $TMPDIR; "
                              "mkdir -p $XDG_CACHE_HOME/tool && echo cached > "
                              "$XDG_CACHE_HOME/tool/x && echo $XDG_CACHE_HOME")
    assert out.split() == ["/tmp", "/tmp/.cache"]  # caches work, in the private /tmp
    _, out = await sh(config, "cat /tmp/scratch")
    assert out.strip() == "kept"
    assert not Path("/tmp/scratch").exists()


async def test_the_environment_loses_credentials(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-provider-key-123")
    monkeypatch.setenv("MY_SERVICE_TOKEN", "tok-456-secret")
    monkeypatch.setenv("AGENT_API_KEY", "sk-agent-key-789")
    monkeypatch.setenv("INNOCENT", "kept-value")
    monkeypatch.setenv("RENAMED", "sk-provider-key-123")
    config, _ = boot(tmp_path, sandbox_env_passthrough=["MY_SERVICE_TOKEN"])
    _, out = await sh(config, "env")
    assert "kept-value" in out and "tok-456-secret" in out
    assert "sk-provider-key-123" not in out and "sk-agent-key-789" not in out


async def test_missing_program_and_missing_cwd_raise_file_not_found(tmp_path):
    config, _ = boot(tmp_path)
    with pytest.raises(FileNotFoundError):
        await sandbox_for(config).spawn(["no-such-program-here"])
    with pytest.raises(FileNotFoundError):
        await sandbox_for(config).spawn(["true"], cwd=tmp_path / "gone")


# ---- ending every descendant -------------------------------------------------------------

def marked(token: str) -> list[int]:
    """Live processes whose command line carries ``token`` (seen from the host, whatever
    namespace they run in)."""
    found = []
    for pid in snapshot():
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(
                "utf-8", "replace")
        except OSError:
            continue
        if token in cmdline and alive(pid) and "bash -c" not in cmdline:
            found.append(pid)
    return found


async def wait_for_marked(token: str, count: int) -> list[int]:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + 10
    while loop.time() < deadline:
        pids = marked(token)
        if len(pids) >= count:
            return pids
        await asyncio.sleep(0.02)
    raise AssertionError(f"the process tree never started ({marked(token)})")


@pytest.mark.parametrize("mode", ["workspace-write", "off"])
async def test_terminate_ends_setsid_nohup_and_trapping_descendants(tmp_path, mode):
    config, _ = boot(tmp_path, sandbox=mode)
    token = f"31.{os.getpid()}{len(mode)}"
    script = (f"setsid sleep {token}1 & nohup sleep {token}2 >/dev/null 2>&1 & "
              f"(trap '' TERM; exec sleep {token}3) & sleep {token}4")
    proc = await sandbox_for(config).spawn(["bash", "-c", script])
    pids = await wait_for_marked(token, 4)
    last = await proc.terminate()
    assert last in (15, 9)
    assert not [p for p in pids if alive(p)]


# ---- when the sandbox cannot start ---------------------------------------------------------

async def test_an_unavailable_sandbox_says_so_and_turns_on_strict_approvals(tmp_path):
    config, hooks = boot(tmp_path, sandbox_bwrap="/bin/false",
                         permission={"probe": {"ls *": "allow"}})
    sandbox = sandbox_for(config)
    assert not sandbox.status.ok and sandbox.strict_approvals
    assert sandbox.describe().startswith("sandbox: UNAVAILABLE (/bin/false: ")
    assert "every command will be asked about" in sandbox.describe()
    ran = []

    async def run(args, ctx):
        ran.append(args)
        return "ran"

    tool = Tool("probe", "runs a command", run, effects=lambda a: Effects(command=a["command"]))
    decision = await gate_decision(config, hooks, tool, {"command": "ls -la"})
    assert not decision.allowed and decision.by == "headless"  # asked, so denied headless
    ok, _ = boot(tmp_path / "fine", permission={"probe": {"ls *": "allow"}})
    assert (await gate_decision(ok, hooks, tool, {"command": "ls -la"})).allowed


async def test_network_for_one_command_is_always_asked_about(tmp_path):
    config, hooks = boot(tmp_path, permission={"probe": {"curl *": "allow"}})

    async def run(args, ctx):
        return "ran"

    tool = Tool("probe", "runs a command", run,
                effects=lambda a: Effects(command=a["command"], network=bool(a.get("net"))))
    assert (await gate_decision(config, hooks, tool, {"command": "curl x"})).allowed
    asked = await gate_decision(config, hooks, tool, {"command": "curl x", "net": True})
    assert not asked.allowed
    seen = []

    async def approver(request):
        seen.append(request)
        return "yes"

    yes = await gate_decision(config, hooks, tool, {"command": "curl x", "net": True},
                              approver=approver)
    assert yes.allowed and seen[0].effects.network
    assert "network" in seen[0].reason


# ---- the exact walls ---------------------------------------------------------------------

def test_bwrap_command_line_orders_the_walls():
    policy = Policy(mode="workspace-write", workspace="/w", hidden=("/w/.env", "/h/.ssh", "/"),
                    writable=("/cache",), tmpdir="/t/priv")
    argv = bwrap_args(policy, "/b/bwrap", ["bash", "-lc", "ls"],
                      is_dir=lambda p: p == "/h/.ssh")
    assert argv == [
        "/b/bwrap", "--unshare-user", "--disable-userns", "--cap-drop", "ALL",
        "--unshare-pid", "--unshare-ipc", "--die-with-parent", "--unshare-net",
        "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/dev/shm",
        "--bind", "/t/priv", "/tmp", "--bind", "/w", "/w", "--bind", "/cache", "/cache",
        "--ro-bind", "/dev/null", "/w/.env", "--tmpfs", "/h/.ssh", "--remount-ro", "/h/.ssh",
        "--chdir", "/w", "--", "bash", "-lc", "ls"]  # "/" holds the workspace: not hidden


def test_bwrap_read_only_binds_nothing_writable_and_keeps_network_off():
    argv = bwrap_args(Policy(mode="read-only", workspace="/tmp/w", network=False), "bwrap",
                      ["git", "status"])
    assert "--bind" not in argv and "--unshare-net" in argv
    tail = argv[argv.index("--size", argv.index("/dev/shm")):]
    assert tail == ["--size", str(SCRATCH_TMP_BYTES), "--tmpfs", "/tmp",
                    "--ro-bind", "/tmp/w", "/tmp/w", "--chdir", "/tmp/w", "--", "git", "status"]


def test_seatbelt_profile_has_the_same_walls():
    policy = Policy(mode="workspace-write", workspace="/Users/me/proj",
                    hidden=("/Users/me/.ssh", '/Users/me/proj/we"ird.env'),
                    tmpdir="/private/tmp/agent-x")
    assert seatbelt_profile(policy) == (
        "(version 1)\n"
        "(allow default)\n"
        "(deny file-write*)\n"
        '(allow file-write* (literal "/dev/null") (literal "/dev/zero") '
        '(literal "/dev/dtracehelper") (regex #"^/dev/tty"))\n'
        '(allow file-write* (subpath "/Users/me/proj") (subpath "/private/tmp/agent-x"))\n'
        "(deny network*)\n"
        '(allow network* (remote unix-socket (path-regex #"^/private/tmp/")))\n'
        '(deny file-read* file-write* (subpath "/Users/me/.ssh") '
        '(subpath "/Users/me/proj/we\\"ird.env"))\n')
    read_only = seatbelt_profile(Policy(mode="read-only", workspace="/p", network=True))
    assert "subpath" not in read_only and "deny network" not in read_only


def test_scrub_environment_rules():
    env = {"PATH": "/bin", "AGENT_HOME": "/h", "OPENAI_API_KEY": "a", "GITLAB_TOKEN": "b",
           "CLIENT_SECRET": "c", "db_password": "d", "OTHER": "sk-the-held-key",
           "KEEP_TOKEN": "e", "TOKENIZERS_PARALLELISM": "false"}
    assert scrub_environment(env, keep=["KEEP_TOKEN"], secret_values=["sk-the-held-key"]) == {
        "PATH": "/bin", "KEEP_TOKEN": "e", "TOKENIZERS_PARALLELISM": "false"}


async def test_agent_secret_matchers_from_a_plugin_hide_its_files(tmp_path):
    from agent import hookimpl

    class VaultPlugin:
        @hookimpl
        def agent_secret_matchers(self, config):
            return [lambda parts: "vault files" if parts[-1].endswith(".vault") else None]

    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "prod.vault").write_text("sk-vaulted\n")
    (workspace / "readme.txt").write_text("plain\n")
    config, _ = make_boot(workspace, tmp_path / "agenthome", builtins=["bash"],
                          extra=[("vault", VaultPlugin())])
    _, out = await sh(config, "cat prod.vault readme.txt")
    assert "plain" in out and "sk-vaulted" not in out


async def test_a_program_from_a_venv_under_the_host_tmp_loads_its_packages(tmp_path):
    """The sandbox gives the process its own /tmp, so a program that lives under the host's
    /tmp is shown read-only, and for a virtual environment's python (a link out of the
    venv) that is the venv: its pyvenv.cfg and site-packages, not just its bin folder."""
    import sys
    import sysconfig

    assert str(tmp_path).startswith("/tmp/")
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    (venv / "bin" / "python3").symlink_to(os.path.realpath(sys.executable))
    (venv / "pyvenv.cfg").write_text(
        f"home = {os.path.dirname(os.path.realpath(sys.executable))}\n"
        "include-system-site-packages = false\n")
    site = venv / "lib" / f"python{sysconfig.get_python_version()}" / "site-packages"
    site.mkdir(parents=True)
    (site / "venvmark.py").write_text("X = 'from-the-venv'\n")
    config, _ = boot(tmp_path)
    proc = await sandbox_for(config).spawn(
        [str(venv / "bin" / "python3"), "-c",
         "import sys, venvmark; print(venvmark.X, sys.prefix)"],
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT)
    out = (await proc.stdout.read()).decode()
    assert await proc.wait() == 0, out
    assert out.split() == ["from-the-venv", str(venv)]
    # shown read-only: the program cannot change its own venv
    proc = await sandbox_for(config).spawn(
        [str(venv / "bin" / "python3"), "-c",
         f"open({str(site / 'venvmark.py')!r}, 'w').write('X = 1')"],
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT)
    out = (await proc.stdout.read()).decode()
    assert await proc.wait() != 0 and "Read-only file system" in out, out
    assert (site / "venvmark.py").read_text() == "X = 'from-the-venv'\n"


def test_persistence_walls_in_the_command_line_and_the_seatbelt_profile():
    walls = (("/w/.git", "rw"), ("/w/.git/hooks", "ro"), ("/w/.envrc", "ro"))
    policy = Policy(mode="workspace-write", workspace="/w", tmpdir="/t", walls=walls,
                    seccomp_fd=9)
    argv = bwrap_args(policy, "bwrap", ["true"])
    assert argv[argv.index("--seccomp") + 1] == "9"
    start = argv.index("/w/.git") - 1
    assert argv[start - 3:start] == ["--bind", "/w", "/w"]  # right after the workspace
    assert argv[start:start + 9] == ["--bind", "/w/.git", "/w/.git", "--ro-bind", "/w/.git/hooks",
                                     "/w/.git/hooks", "--ro-bind", "/w/.envrc", "/w/.envrc"]
    read_only = bwrap_args(Policy(mode="read-only", workspace="/w", walls=walls), "bwrap",
                           ["true"])
    assert "/w/.envrc" not in read_only  # nothing there is writable anyway
    profile = seatbelt_profile(policy)
    assert '(deny file-write* (literal "/w/.git") (subpath "/w/.git/hooks") ' \
           '(subpath "/w/.envrc"))' in profile
