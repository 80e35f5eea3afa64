"""The file tools against a real temporary workspace: files on disk and exact messages."""

from __future__ import annotations

import json
import os

import pytest
from files_support import boot_files

from agent import Effects


@pytest.fixture
def env(tmp_path):
    return boot_files(tmp_path)


# ---- registration -----------------------------------------------------------------------------

def test_tools_sets_flags_and_prompts(env):
    sets = {name: tool.tool_set for name, tool in env.tools.items()}
    assert sets == {
        "read_file": "core", "write_file": "core", "edit_file": "core", "glob": "core",
        "grep": "core", "read_many_files": "edit-plus", "multi_edit": "edit-plus",
        "apply_patch": "edit-plus", "move_file": "edit-plus", "delete_file": "edit-plus",
        "list_dir": "edit-plus"}
    read_only = {name for name, tool in env.tools.items() if tool.read_only}
    assert read_only == {"read_file", "read_many_files", "glob", "grep", "list_dir"}
    assert all(tool.prompt for tool in env.tools.values())


def test_effects_name_every_path(env):
    t = env.tools
    assert t["read_file"].effects({"path": "a.env"}) == Effects(reads=("a.env",))
    assert t["write_file"].effects({"path": "w", "content": ""}) == Effects(writes=("w",))
    assert t["edit_file"].effects({"path": "e", "oldString": "a", "newString": "b"}).writes == (
        "e",)
    assert t["multi_edit"].effects({"path": "m", "edits": []}).writes == ("m",)
    assert t["move_file"].effects({"from": "a", "to": "b"}) == Effects(writes=("b",),
                                                                       deletes=("a",))
    assert t["delete_file"].effects({"path": "d"}) == Effects(deletes=("d",))
    assert t["read_many_files"].effects({"files": [{"path": "x"}, {"path": "y.pem"}]}).reads == (
        "x", "y.pem")
    assert t["list_dir"].effects({}).reads == (".",)
    assert t["glob"].effects({"pattern": "**/*.py"}).reads == ("**/*.py",)
    assert t["grep"].effects({"pattern": "x"}).reads == ("**/*",)
    assert t["grep"].effects({"pattern": "x", "include": "*.env"}).reads == ("*.env",)
    for name in ("read_file", "read_many_files", "glob", "grep", "list_dir"):
        assert t[name].effects({"path": "p", "pattern": "p", "files": []}).read_only


# ---- read_file ----------------------------------------------------------------------------------

async def test_read_numbers_lines_and_shows_final_empty_line(env):
    env.write("a.txt", "one\ntwo\n")
    assert await env.ok("read_file", {"path": "a.txt"}) == "1: one\n2: two\n3: "
    env.write("b.txt", "x\r\ny")
    assert await env.ok("read_file", {"path": "b.txt"}) == "1: x\n2: y"


async def test_read_offset_limit_and_continuation_note(env):
    env.write("n.txt", "\n".join(f"line{i}" for i in range(1, 11)))
    out = await env.ok("read_file", {"path": "n.txt", "offset": 3, "limit": 2})
    assert out == "3: line3\n4: line4\n... [lines 3-4 of 10 shown; continue with offset=5]"
    assert await env.ok("read_file", {"path": "n.txt", "offset": 10}) == "10: line10"
    assert await env.err("read_file", {"path": "n.txt", "offset": 11}) == (
        "n.txt has 10 lines; offset 11 is past the end.")


async def test_read_default_limit_is_2000(env):
    env.write("big.txt", "\n".join(str(i) for i in range(1, 2502)))
    out = await env.ok("read_file", {"path": "big.txt"})
    assert out.splitlines()[-2] == "2000: 2000"
    assert out.endswith("continue with offset=2001]")


async def test_read_errors(env):
    assert await env.err("read_file", {"path": "nope.txt"}) == "No such file: nope.txt"
    env.write("bin.dat", b"abc\x00def")
    assert await env.err("read_file", {"path": "bin.dat"}) == (
        "bin.dat is a binary file, not text. Use bash if you need to inspect it.")
    env.write("late.dat", b"a" * 8192 + b"\x00")  # NUL after the first 8 KB: still text
    assert (await env.ok("read_file", {"path": "late.dat"})).startswith("1: aaa")
    (env.workspace / "d").mkdir()
    assert "d is a directory" in await env.err("read_file", {"path": "d"})
    env.write("empty.txt", "")
    assert await env.ok("read_file", {"path": "empty.txt"}) == "empty.txt is empty (0 bytes)."
    bad = await env.err("read_file", {"path": "a.txt", "offset": 0})
    assert bad.startswith("Invalid arguments for read_file:")


async def test_a_result_over_the_cap_is_saved_whole_with_head_tail_and_pointer(env):
    env.write("wide.txt", "x" * 40_000 + "END")
    out = await env.ok("read_file", {"path": "wide.txt"})
    assert len(out) <= 30_000
    assert out.startswith("1: xxx") and out.endswith("xxxEND")  # head and tail
    saved = out.split(" are saved in ", 1)[1].split(": read_file that path", 1)[0]
    assert "1 lines, 40,006 chars in all; " in out
    assert (env.home / "state" / "results").is_dir()
    assert open(saved, encoding="utf-8").read() == "1: " + "x" * 40_000 + "END"
    assert os.stat(saved).st_mode & 0o777 == 0o600


# ---- write_file ---------------------------------------------------------------------------------

async def test_write_creates_parents_and_reports_chars(env):
    out = await env.ok("write_file", {"path": "new/dir/f.txt", "content": "héllo\n"})
    assert out == "Wrote 6 chars to new/dir/f.txt"
    assert (env.workspace / "new/dir/f.txt").read_bytes() == "héllo\n".encode()


async def test_write_overwrites_and_keeps_mode(env):
    path = env.write("run.sh", "#!/bin/sh\necho old\n")
    os.chmod(path, 0o755)
    await env.look("run.sh")
    await env.ok("write_file", {"path": "run.sh", "content": "#!/bin/sh\necho new\n"})
    assert env.read("run.sh") == "#!/bin/sh\necho new\n"
    assert os.stat(path).st_mode & 0o777 == 0o755


async def test_write_flags_collapsed_rewrite(env):
    old = "".join(f"    line number {i}\n" for i in range(20))
    env.write("c.py", old)
    collapsed = old.replace("\n", " ")
    await env.look("c.py")
    out = await env.ok("write_file", {"path": "c.py", "content": collapsed})
    assert out.startswith(f"Wrote {len(collapsed)} chars to c.py, but it collapsed 20 lines "
                          "into 1:")
    assert "original newlines and indentation" in out
    assert env.read("c.py") == collapsed  # it was still written
    # A genuinely shorter file is not flagged.
    assert await env.ok("write_file", {"path": "c.py", "content": "x\n"}) == (
        "Wrote 2 chars to c.py")


async def test_write_to_directory_fails(env):
    (env.workspace / "d").mkdir()
    assert await env.err("write_file", {"path": "d", "content": "x"}) == (
        "d is a directory, not a file.")


# ---- edit_file ----------------------------------------------------------------------------------

async def test_edit_messages(env):
    env.write("e.py", "a = 1\nb = 1\n")
    assert await env.err("edit_file", {"path": "e.py", "oldString": "x", "newString": "x"}) == (
        "oldString and newString are identical")
    assert await env.err("edit_file", {"path": "no.py", "oldString": "a", "newString": "b"}) == (
        "No such file: no.py")
    assert await env.err("edit_file", {"path": "e.py", "oldString": "zz", "newString": "b"}) == (
        "oldString not found in e.py\nNothing like its first line 'zz' is in the file.")
    assert await env.err("edit_file", {"path": "e.py", "oldString": "= 1",
                                       "newString": "= 2"}) == (
        "oldString appears 2 times in e.py. Add surrounding context or set replaceAll.\n"
        "It starts at lines 1, 2.")
    assert env.read("e.py") == "a = 1\nb = 1\n"
    assert await env.ok("edit_file", {"path": "e.py", "oldString": "a = 1",
                                      "newString": "a = 3"}) == "Replaced 1 occurrence(s) in e.py"
    assert await env.ok("edit_file", {"path": "e.py", "oldString": "= ", "newString": ":= ",
                                      "replaceAll": True}) == "Replaced 2 occurrence(s) in e.py"
    assert env.read("e.py") == "a := 3\nb := 1\n"


async def test_edit_refuses_binary_and_empty_old(env):
    env.write("b.bin", b"\x00\x01")
    assert "binary file" in await env.err("edit_file", {"path": "b.bin", "oldString": "a",
                                                        "newString": "b"})
    env.write("t.txt", "abc")
    assert "oldString is empty" in await env.err("edit_file", {"path": "t.txt", "oldString": "",
                                                               "newString": "b"})


async def test_edit_crlf_file_with_lf_strings(env):
    env.write("w.txt", "one\r\ntwo\r\nthree\r\n")
    await env.ok("edit_file", {"path": "w.txt", "oldString": "one\ntwo", "newString": "1\n2"})
    assert (env.workspace / "w.txt").read_bytes() == b"1\r\n2\r\nthree\r\n"


# ---- multi_edit ---------------------------------------------------------------------------------

async def test_multi_edit_sequential_and_counts(env):
    env.write("m.py", "x = 1\ny = x\n")
    out = await env.ok("multi_edit", {"path": "m.py", "edits": [
        {"oldString": "x = 1", "newString": "z = 1"},
        {"oldString": "z", "newString": "w", "replaceAll": True},
        {"oldString": "y = x", "newString": "y = w"}]})
    assert out == "Applied 3 edit(s) to m.py (1x, 1x, 1x)"
    assert env.read("m.py") == "w = 1\ny = w\n"


async def test_multi_edit_all_or_nothing(env):
    env.write("m.py", "a\nb\na\n")
    cases = [
        ([{"oldString": "b", "newString": "c"}, {"oldString": "q", "newString": "r"}],
         "edit 2: oldString not found in m.py. No edits were applied.\n"
         "Nothing like its first line 'q' is in the file."),
        ([{"oldString": "b", "newString": "c"}, {"oldString": "a", "newString": "r"}],
         "edit 2: oldString appears 2 times in m.py. Add surrounding context or set "
         "replaceAll. No edits were applied.\nIt starts at lines 1, 3."),
        ([{"oldString": "b", "newString": "c"}, {"oldString": "a", "newString": "a"}],
         "edit 2: oldString and newString are identical. No edits were applied."),
        ([{"oldString": "b", "newString": "c"}, {"oldString": "c", "newString": "b"}],
         "No change to m.py: the edits cancel out."),
    ]
    for edits, message in cases:
        assert await env.err("multi_edit", {"path": "m.py", "edits": edits}) == message
        assert env.read("m.py") == "a\nb\na\n"


async def test_multi_edit_never_creates(env):
    assert await env.err("multi_edit", {"path": "new.py", "edits": [
        {"oldString": "a", "newString": "b"}]}) == "No such file: new.py"
    assert not (env.workspace / "new.py").exists()
    assert (await env.err("multi_edit", {"path": "x", "edits": []})).startswith(
        "Invalid arguments for multi_edit")


# ---- move_file / delete_file ------------------------------------------------------------------

async def test_move_file(env):
    env.write("a.txt", "A")
    env.write("b.txt", "B")
    assert await env.err("move_file", {"from": "a.txt", "to": "./a.txt"}) == (
        "from and to are the same path")
    assert await env.err("move_file", {"from": "zz", "to": "y"}) == "No such file: zz"
    assert await env.err("move_file", {"from": "a.txt", "to": "b.txt"}) == (
        "b.txt already exists. Delete it first or pick another name.")
    assert await env.ok("move_file", {"from": "a.txt", "to": "deep/er/c.txt"}) == (
        "Moved a.txt to deep/er/c.txt")
    assert not (env.workspace / "a.txt").exists()
    assert env.read("deep/er/c.txt") == "A"
    (env.workspace / "dir").mkdir()
    assert "is a directory" in await env.err("move_file", {"from": "dir", "to": "dir2"})


async def test_move_and_delete_act_on_a_symlink_not_its_target(env):
    env.write("target.txt", "T")
    os.symlink("target.txt", env.workspace / "link.txt")
    await env.ok("move_file", {"from": "link.txt", "to": "moved-link.txt"})
    assert os.path.islink(env.workspace / "moved-link.txt")
    assert env.read("target.txt") == "T"
    os.symlink("target.txt", env.workspace / "l2")
    assert (await env.ok("delete_file", {"path": "l2"})).startswith("Deleted l2 (")
    assert not os.path.lexists(env.workspace / "l2")
    assert env.read("target.txt") == "T"


async def test_delete_file_goes_to_the_trash(env):
    env.write("sub/gone.txt", "12345")
    (env.workspace / "adir").mkdir()
    assert await env.err("delete_file", {"path": "adir"}) == (
        "adir is a directory. Delete its files individually.")
    assert await env.err("delete_file", {"path": "nope"}) == "No such file: nope"
    out = await env.ok("delete_file", {"path": "sub/gone.txt"})
    assert out.startswith("Deleted sub/gone.txt (5 bytes). It is kept in the trash as ")
    assert not (env.workspace / "sub/gone.txt").exists()
    trash = env.home / "state" / "trash" / "nosession"
    index = json.loads((trash / "index.json").read_text())
    assert len(index) == 1
    entry = index[0]
    assert entry["original"] == str(env.workspace / "sub/gone.txt")
    assert entry["relative"] == "sub/gone.txt" and entry["size"] == 5
    assert (trash / entry["id"] / "sub/gone.txt").read_text() == "12345"


# ---- list_dir -----------------------------------------------------------------------------------

async def test_list_dir_tree(env):
    env.write("small.txt", "x" * 10)
    env.write("src/mid.bin", "x" * 3000)
    env.write("src/deep/big.dat", "x" * (3 * 1024 * 1024 + 200_000))
    env.write("src/deep/deeper/z.txt", "")
    env.write(".gitignore", "*.log\n")
    env.write("debug.log", "x")
    out = await env.ok("list_dir", {})
    assert out == ("\n".join([".", "  .gitignore  6B", "  small.txt  10B", "  src/",
                              "    deep/", "    mid.bin  3K"]))
    out = await env.ok("list_dir", {"path": "src", "depth": 3})
    assert out == "\n".join(["src/", "  deep/", "    big.dat  3.2M", "    deeper/",
                             "      z.txt  0B", "  mid.bin  3K"])
    out = await env.ok("list_dir", {"depth": 1, "includeIgnored": True})
    assert "  debug.log  1B" in out.splitlines()


async def test_list_dir_errors_and_empty(env):
    env.write("f.txt", "")
    assert await env.err("list_dir", {"path": "f.txt"}) == "Not a directory: f.txt"
    assert await env.err("list_dir", {"path": "nope"}) == "No such directory: nope"
    (env.workspace / "empty").mkdir()
    assert await env.ok("list_dir", {"path": "empty"}) == (
        "empty is empty (or everything in it is ignored).")
    bad = await env.err("list_dir", {"depth": 7})
    assert bad.startswith("Invalid arguments for list_dir")


async def test_list_dir_cap(env):
    for i in range(310):
        env.write(f"f{i:03}.txt", "")
    lines = (await env.ok("list_dir", {})).splitlines()
    assert lines[0] == "." and lines[-1] == "... [300-entry limit reached]"
    assert len(lines) == 302


# ---- glob ---------------------------------------------------------------------------------------

async def test_glob(env):
    for rel in ("src/a.ts", "src/x/b.ts", "src/x/c.tsx", "top.ts", "lib/d.ts", ".hidden.ts"):
        env.write(rel, "")
    env.write(".gitignore", "lib/\n")
    assert await env.ok("glob", {"pattern": "src/**/*.ts"}) == "src/a.ts\nsrc/x/b.ts"
    assert await env.ok("glob", {"pattern": "*.ts"}) == ".hidden.ts\ntop.ts"
    assert await env.ok("glob", {"pattern": "**/*.{ts,tsx}", "limit": 3}) == (
        ".hidden.ts\ntop.ts\nsrc/a.ts\n... [limit 3 reached; narrow the pattern or raise limit]")
    assert await env.ok("glob", {"pattern": "lib/*.ts", "includeIgnored": True}) == "lib/d.ts"
    assert await env.ok("glob", {"pattern": str(env.workspace) + "/src/*.ts"}) == "src/a.ts"
    out = await env.ok("glob", {"pattern": "*.rs"})
    assert out.startswith("No files matched.")
    assert await env.ok("glob", {"pattern": "src/**/*.rs"}) == "No files matched."
    assert await env.ok("glob", {"pattern": "nothere/*.ts"}) == "No files matched."


async def test_glob_default_limit_200(env):
    for i in range(205):
        env.write(f"d/f{i:03}.txt", "")
    out = (await env.ok("glob", {"pattern": "d/*.txt"})).splitlines()
    assert len(out) == 201 and out[-1].startswith("... [limit 200 reached")


# ---- read_many_files ----------------------------------------------------------------------------

async def test_read_many_files_blocks_in_order(env):
    env.write("a.txt", "A1\nA2\nA3")
    env.write("b.bin", b"\x00")
    out = await env.ok("read_many_files", {"files": [
        {"path": "a.txt", "offset": 2, "limit": 1}, {"path": "missing.txt"},
        {"path": "b.bin"}, {"path": "../outside.txt"}, {"path": "a.txt"}]})
    assert out == "\n\n".join([
        "===== a.txt =====\n2: A2\n... [lines 2-2 of 3 shown; continue with offset=3]",
        "===== missing.txt =====\n[unreadable: No such file: missing.txt]",
        "===== b.bin =====\n[unreadable: b.bin is a binary file, not text. Use bash if you need "
        "to inspect it.]",
        "===== ../outside.txt =====\n[unreadable: Path escapes workspace: ../outside.txt]",
        "===== a.txt =====\n1: A1\n2: A2\n3: A3"])


async def test_read_many_files_limits(env):
    too_many = {"files": [{"path": f"{i}"} for i in range(21)]}
    assert (await env.err("read_many_files", too_many)).startswith("Invalid arguments")
    assert (await env.err("read_many_files", {"files": []})).startswith("Invalid arguments")


async def test_edits_keep_bytes_that_are_not_utf8(env):
    env.write("latin1.txt", "café = 1\nnaïve = 2\n".encode("latin-1"))
    await env.ok("edit_file", {"path": "latin1.txt", "oldString": "= 2", "newString": "= 3"})
    assert (env.workspace / "latin1.txt").read_bytes() == "café = 1\nnaïve = 3\n".encode(
        "latin-1")
    await env.ok("apply_patch", {"patch": "*** Update File: latin1.txt\n-na\udcefve = 3\n"
                                          "+na\udcefve = 4\n"})
    assert (env.workspace / "latin1.txt").read_bytes().endswith("naïve = 4\n".encode("latin-1"))


async def test_content_that_is_not_unicode_is_refused(env):
    out = await env.err("write_file", {"path": "s.txt", "content": "bad \ud800 surrogate"})
    assert out.startswith("Cannot write s.txt: the text holds a character that is not valid "
                          "Unicode")
    assert not (env.workspace / "s.txt").exists()


async def test_pipes_are_never_read_or_written(env):
    fifo = env.workspace / "pipe"
    os.mkfifo(fifo)
    os.symlink("pipe", env.workspace / "pipe-link")
    env.write("a.txt", "hit\n")
    message = "pipe is not a regular file (a pipe, socket or device)."
    assert await env.err("read_file", {"path": "pipe"}) == message
    assert await env.err("write_file", {"path": "pipe", "content": "x"}) == message
    assert await env.err("edit_file", {"path": "pipe", "oldString": "a", "newString": "b"}) == (
        message)
    assert "not a regular file" in await env.err(
        "apply_patch", {"patch": "*** Update File: pipe\n-a\n+b\n"})
    assert await env.ok("glob", {"pattern": "**/*"}) == "a.txt\npipe-link"
    assert await env.ok("grep", {"pattern": "hit"}) == "a.txt:1: hit"
    assert (await env.ok("list_dir", {})).splitlines() == [".", "  a.txt  4B",
                                                            "  pipe-link  symlink"]
    assert await env.ok("grep", {"pattern": "hit", "include": str(env.workspace) + "/*.txt"}) == (
        "a.txt:1: hit")


async def test_a_trailing_slash_never_becomes_a_file(env):
    env.write("a.txt", "A")
    assert await env.err("write_file", {"path": "newdir/", "content": "x"}) == (
        "newdir/ names a directory; give the path of a file.")
    assert await env.err("move_file", {"from": "a.txt", "to": "sub/"}) == (
        "sub/ names a directory; give the path of a file.")
    assert await env.err("apply_patch", {"patch": "*** Add File: d/\n+x\n"}) == (
        "d/ names a directory; give the path of a file.")
    assert sorted(p.name for p in env.workspace.iterdir()) == ["a.txt"]
