"""Atomic writes on real faulty filesystems: a full 1 MB tmpfs, a read-only remount, a
directory the writer may not write to.  For every write tool the victim file is
byte-identical afterwards, no temporary file is left, and the model is told that nothing
changed and why."""

from __future__ import annotations

import errno
import hashlib
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from files_support import boot_files
from smallfs import fill, remount_read_only, small_fs

from agent.lib.atomic import AtomicWriteError, Staged, atomic_move, atomic_write

VICTIM = "first\n" + ("line one\n" + "x" * 70 + "\n") * 4000  # ~316 KB, like the report
NEW = VICTIM.replace("x", "y") + "more\n" * 20000


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def listing(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir() if not p.name.startswith(".filler"))


# ---- the helper ---------------------------------------------------------------------------


def test_replaces_keeping_mode_and_owner(tmp_path):
    target = tmp_path / "f.sh"
    target.write_text("old")
    if os.geteuid() == 0:
        os.chown(target, 1234, 4321)
    os.chmod(target, 0o4751 if os.geteuid() == 0 else 0o751)  # after chown, which clears it
    inode = target.stat().st_ino
    atomic_write(target, "new")
    info = target.stat()
    assert target.read_text() == "new"
    assert info.st_ino != inode  # a new file was renamed over the old one
    if os.geteuid() == 0:
        assert (info.st_uid, info.st_gid) == (1234, 4321)
        assert info.st_mode & 0o7777 == 0o4751  # the chown did not clear set-uid
    else:
        assert info.st_mode & 0o777 == 0o751
    assert listing(tmp_path) == ["f.sh"]


def test_explicit_mode_and_new_file_and_parents(tmp_path):
    atomic_write(tmp_path / "a" / "b" / "state.json", b"{}", mode=0o600, make_parents=True)
    assert (tmp_path / "a" / "b" / "state.json").stat().st_mode & 0o777 == 0o600
    old = os.umask(0o022)
    try:
        atomic_write(tmp_path / "plain", "x")
    finally:
        os.umask(old)
    assert (tmp_path / "plain").stat().st_mode & 0o777 == 0o644


def test_a_symlink_is_followed_and_kept(tmp_path):
    real = tmp_path / "real.txt"
    real.write_text("old")
    (tmp_path / "link.txt").symlink_to("real.txt")
    atomic_write(tmp_path / "link.txt", "new")
    assert (tmp_path / "link.txt").is_symlink()
    assert real.read_text() == "new"


def test_staged_files_change_nothing_until_committed(tmp_path):
    target = tmp_path / "t"
    target.write_text("old")
    with Staged(target, "new") as staged:
        assert target.read_text() == "old"
    assert staged.tmp is None and listing(tmp_path) == ["t"]  # discarded on exit
    staged = Staged(target, "new")
    staged.commit()
    assert target.read_text() == "new" and listing(tmp_path) == ["t"]


def test_full_disk(tmp_path):
    with small_fs(tmp_path / "fs") as fs:
        victim = fs / "victim.txt"
        victim.write_text(VICTIM)
        before = digest(victim)
        fill(fs)
        with pytest.raises(AtomicWriteError) as info:
            atomic_write(victim, NEW, shown="victim.txt")
        assert str(info.value) == ("nothing changed: victim.txt: no space left on device "
                                   "(the disk is full)")
        assert info.value.errno == errno.ENOSPC
        assert digest(victim) == before
        assert listing(fs) == ["victim.txt"]
        with pytest.raises(AtomicWriteError):  # the directories it made are gone again
            atomic_write(fs / "new" / "deep" / "f", "x", make_parents=True)
        assert listing(fs) == ["victim.txt"]


def test_read_only_filesystem(tmp_path):
    with small_fs(tmp_path / "fs") as fs:
        victim = fs / "victim.txt"
        victim.write_text(VICTIM)
        before = digest(victim)
        remount_read_only(fs)
        with pytest.raises(AtomicWriteError) as info:
            atomic_write(victim, NEW, shown="victim.txt")
        assert str(info.value) == "nothing changed: victim.txt: read-only file system"
        assert digest(victim) == before


def test_a_move_across_filesystems_onto_a_full_disk_keeps_the_source(tmp_path):
    src = tmp_path / "src.txt"
    src.write_text(VICTIM)
    before = digest(src)
    with small_fs(tmp_path / "fs") as fs:
        fill(fs)
        with pytest.raises(AtomicWriteError) as info:
            atomic_move(src, fs / "sub" / "dst.txt", shown="fs/sub/dst.txt", make_parents=True)
        assert "no space left on device" in str(info.value)
        assert digest(src) == before
        assert listing(fs) == []
    with small_fs(tmp_path / "fs2", size="4m") as fs:  # and with room, it moves
        atomic_move(src, fs / "dst.txt")
        assert not src.exists() and digest(fs / "dst.txt") == before


# ---- every write tool ---------------------------------------------------------------------

#: (tool, arguments) that each try to change victim.txt (or, for move/delete, move it away).
WRITES = {
    "write_file": ("write_file", {"path": "victim.txt", "content": NEW}),
    "write_file small": ("write_file", {"path": "victim.txt", "content": "tiny\n"}),
    "write_file new": ("write_file", {"path": "fresh/new.txt", "content": "new\n"}),
    "edit_file": ("edit_file", {"path": "victim.txt", "oldString": "line one\n" + "x" * 70
                                + "\n", "newString": "changed\n", "replaceAll": True}),
    "multi_edit": ("multi_edit", {"path": "victim.txt", "edits": [
        {"oldString": "line one", "newString": "line 1", "replaceAll": True},
        {"oldString": "line 1", "newString": "line uno", "replaceAll": True}]}),
    "apply_patch": ("apply_patch", {"patch": "*** Begin Patch\n*** Update File: other.txt\n"
                                             "-other\n+changed\n*** Update File: victim.txt\n"
                                             "@@\n-first\n+1st\n*** End Patch\n"}),
    "apply_patch add": ("apply_patch", {"patch": "*** Begin Patch\n*** Add File: added.txt\n"
                                                 "+new\n*** End Patch\n"}),
    "apply_patch move": ("apply_patch", {"patch": "*** Begin Patch\n*** Update File: "
                                                  "victim.txt\n*** Move to: moved/v.txt\n"
                                                  "@@\n-first\n+1st\n*** End Patch\n"}),
}


def _workspace_on(fs: Path, tmp_path: Path):
    env = boot_files(tmp_path / "boot")
    ws = fs / "ws"
    ws.mkdir()
    env.workspace = ws.resolve()
    env.config.workspace = env.workspace
    (ws / "victim.txt").write_text(VICTIM)
    (ws / "other.txt").write_text("other\n")
    return env


def _fault(kind: str, fs: Path) -> str:
    if kind == "full":
        fill(fs)
        return "no space left on device (the disk is full)"
    remount_read_only(fs)
    return "read-only file system"


@pytest.mark.parametrize("kind", ["full", "read-only"])
@pytest.mark.parametrize("case", list(WRITES))
async def test_every_write_tool_leaves_the_original_byte_identical(tmp_path, case, kind):
    tool, args = WRITES[case]
    with small_fs(tmp_path / "fs") as fs:
        env = _workspace_on(fs, tmp_path)
        before = {name: digest(env.workspace / name) for name in ("victim.txt", "other.txt")}
        if tool == "write_file" and (env.workspace / args["path"]).exists():
            await env.look(args["path"])  # write_file replaces only a file it has read
        reason = _fault(kind, fs)
        out = await env.err(tool, args)
        assert "nothing changed: " in out and reason in out, out
        assert {name: digest(env.workspace / name) for name in before} == before
        assert listing(env.workspace) == ["other.txt", "victim.txt"]  # no temp, no new dir


async def test_edit_file_on_a_full_disk_tells_the_model_precisely(tmp_path):
    with small_fs(tmp_path / "fs") as fs:
        env = _workspace_on(fs, tmp_path)
        fill(fs)
        out = await env.err("edit_file", {"path": "other.txt", "oldString": "other",
                                          "newString": "changed"})
        assert out == "nothing changed: other.txt: no space left on device (the disk is full)"
        assert (env.workspace / "other.txt").read_text() == "other\n"


async def test_move_file_onto_a_full_mount_inside_the_workspace(tmp_path):
    env = boot_files(tmp_path)
    victim = env.write("victim.txt", VICTIM)
    before = digest(victim)
    with small_fs(env.workspace / "full") as fs:
        fill(fs)
        out = await env.err("move_file", {"from": "victim.txt", "to": "full/sub/v.txt"})
        assert "nothing changed" in out and "no space left on device" in out, out
        assert digest(victim) == before
        assert listing(fs) == []


async def test_delete_file_with_a_full_state_dir_keeps_the_file(tmp_path):
    env = boot_files(tmp_path)
    victim = env.write("victim.txt", VICTIM)
    before = digest(victim)
    state = env.config.state_dir
    with small_fs(Path(state)) as fs:
        fill(fs)
        out = await env.err("delete_file", {"path": "victim.txt"})
        assert out.startswith("Cannot delete victim.txt: nothing changed: victim.txt: no space "
                              "left on device"), out
        assert digest(victim) == before
        assert listing(fs) == ["trash"] and not any((fs / "trash").rglob("victim.txt"))


# ---- permission denied: a writer without root's override of file permissions -------------

_WITHOUT_OVERRIDE = textwrap.dedent("""
    import asyncio, sys
    sys.path.insert(0, {tests!r})
    sys.path.insert(0, {here!r})
    from pathlib import Path
    from files_support import boot_files
    env = boot_files(Path({boot!r}))
    env.workspace = Path({ws!r})
    env.config.workspace = env.workspace
    from test_atomic_writes import WRITES
    calls = list(WRITES.values())
    async def main():
        await env.look("victim.txt")  # write_file replaces only a file it has read
        for tool, args in calls:
            result = await env.call(tool, args)
            print(("ERR " if result.is_error else "OK ") + result.output.splitlines()[0])
    asyncio.run(main())
""")


def test_permission_denied_leaves_the_original(tmp_path):
    """The file itself is writable, its directory is not: a truncating write would have
    succeeded, an atomic one cannot create its temporary file and must change nothing."""
    if os.geteuid() != 0 or not shutil.which("setpriv"):
        pytest.skip("needs root and setpriv to drop the permission override")
    boot, ws = tmp_path / "boot", tmp_path / "ws"
    boot.mkdir()
    ws.mkdir()
    victim = ws / "victim.txt"
    victim.write_text(VICTIM)
    os.chmod(victim, 0o666)
    (ws / "other.txt").write_text("other\n")
    os.chmod(ws / "other.txt", 0o666)
    os.chmod(ws, 0o555)
    before = digest(victim)
    try:
        script = _WITHOUT_OVERRIDE.format(tests=str(Path(__file__).parents[1]),
                                          here=str(Path(__file__).parent), boot=str(boot),
                                          ws=str(ws))
        done = subprocess.run(["setpriv", "--bounding-set", "-dac_override,-dac_read_search,"
                               "-fowner", sys.executable, "-c", script],
                              capture_output=True, text=True, timeout=120, cwd=ws)
    finally:
        os.chmod(ws, 0o755)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert len(lines) == len(WRITES), done.stdout
    for line in lines:
        assert line.startswith("ERR nothing changed: "), line
        assert "permission denied" in line, line
    assert digest(victim) == before
    assert listing(ws) == ["other.txt", "victim.txt"]


# ---- config and state rewrites ------------------------------------------------------------

CONFIG = '# my settings\nmodel = "gpt-x"\n\n[plugins]\ndisabled = []\n' + "# pad\n" * 2000


@pytest.mark.parametrize("kind", ["full", "read-only"])
def test_a_config_rewrite_on_a_broken_disk_keeps_the_file(tmp_path, kind):
    from clirun import run_agent_here

    with small_fs(tmp_path / "home") as home:
        (home / "config.toml").write_text(CONFIG)
        before = digest(home / "config.toml")
        reason = _fault(kind, home)
        done = run_agent_here(["plugins", "disable", "bell"], home=home, cwd=tmp_path)
        assert done.returncode == 2, done.stdout
        assert f"nothing changed: {home / 'config.toml'}: {reason}" in done.stderr
        assert digest(home / "config.toml") == before
        assert listing(home) == ["config.toml"]
    with small_fs(tmp_path / "home2", size="4m") as home:  # and with room it is rewritten
        (home / "config.toml").write_text(CONFIG)
        done = run_agent_here(["plugins", "disable", "bell"], home=home, cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        text = (home / "config.toml").read_text()
        assert text.startswith("# my settings\n") and 'disabled = ["bell"]' in text


async def test_undo_on_a_full_disk_changes_nothing_and_says_so(tmp_path, fake_provider):
    from fakeprovider import Reply

    from agent.testing import collect, make_boot, make_session

    class App:
        def __init__(self, session):
            self.session, self.shown = session, []

        def info(self, text):
            self.shown.append(text)

    with small_fs(tmp_path / "fs", size="4m") as fs:
        ws = fs / "ws"
        ws.mkdir()
        (ws / "a.txt").write_text(VICTIM)
        (ws / "b.txt").write_text("b old\n")
        config, hooks = make_boot(ws, tmp_path / "home", builtins=["openai", "files", "undo"],
                                  flags={"yolo": True})
        session = make_session(config, hooks, base_url=fake_provider.openai_url)
        fake_provider.script(
            Reply.tool_call("read_file", {"path": "a.txt"}, id="r1"),
            Reply.tool_call("read_file", {"path": "b.txt"}, id="r2"),
            Reply.tool_call("write_file", {"path": "a.txt", "content": "a new\n"}, id="c1"),
            Reply.tool_call("write_file", {"path": "b.txt", "content": "b new\n"}, id="c2"),
            Reply.text("done"))
        await collect(session, "change them")
        assert (ws / "a.txt").read_text() == "a new\n"
        after = {rel: digest(ws / rel) for rel in ("a.txt", "b.txt")}
        fill(fs)
        app = App(session)
        hooks.commands(config).get("undo").run(app, "")
        assert app.shown[-1].startswith("Nothing was undone: nothing changed: "), app.shown
        assert "no space left on device" in app.shown[-1]
        assert {rel: digest(ws / rel) for rel in ("a.txt", "b.txt")} == after
        assert listing(ws) == ["a.txt", "b.txt"]
        for filler in fs.glob(".filler*"):  # with room again, the same undo works
            filler.unlink()
        hooks.commands(config).get("undo").run(app, "")
        assert app.shown[-1].startswith('Undid prompt "change them" (2 files):'), app.shown
        assert (ws / "a.txt").read_text() == VICTIM and (ws / "b.txt").read_text() == "b old\n"
