"""The workspace jail, attacked through every path-taking file tool.

Each hostile path is either refused with ``Path escapes workspace`` (or another refusal), or
names something provably inside the workspace.  After the whole corpus has run, the sentinel
directories outside the workspace (a sibling directory and a fake home) are byte-for-byte
unchanged and no secret ever appeared in a tool's output.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from files_support import boot_files, snapshot

from agent.contain.paths import is_inside, jail, jail_entry
from agent.contract.tools import ToolError
from agent.lib.walk import walk_entries

SECRET = "TOPSECRET-0xC0FFEE"
#: Only ever inside the files outside the workspace (never in a tool's arguments), so seeing it
#: in an output means content leaked; SECRET itself is what the calls try to edit.
LEAK = "LEAKMARK-only-on-disk"

# Paths that resolve outside the workspace: every tool must refuse them as escapes.
# ("outside" is a sibling of the workspace; "home" is $HOME for the test.)
ESCAPES = [
    "/etc/passwd",
    "//etc/passwd",
    "/",
    "/tmp",
    "..",
    "../",
    "../outside",
    "../outside/secret.txt",
    "../outside/new.txt",
    "a/../../outside/secret.txt",
    "./../outside/secret.txt",
    "x/./../../outside/secret.txt",
    "..//outside//secret.txt",
    "../ws/../outside/secret.txt",
    "sub/../../../../../../../../etc/passwd",
    "../" * 40 + "etc/passwd",
    "~",
    "~/",
    "~/secret.txt",
    "~/new.txt",
    "~/../outside/secret.txt",
    "~root/.bashrc",
    "link_out",
    "link_out/secret.txt",
    "link_out/new.txt",
    "link_out/../outside/secret.txt",
    "link_file",
    "dangling_out",
    "sub/link_up",
    "sub/link_up/outside/secret.txt",
    "rel_link_out/secret.txt",
]
# Given as absolute paths built at run time.
ABSOLUTE_ESCAPES = ["outside/secret.txt", "outside", "userhome/secret.txt", "home/state"]

REFUSED_OTHERWISE = [
    "",  # "A path is required."
    "inside.txt\x00../../outside/secret.txt",
    "\x00",
    "a\x00b",
]

# Odd but harmless: these are ordinary names inside the workspace (never separators, never ..).
INSIDE_NAMES = [
    "\uff0e\uff0e/\uff0e\uff0e/outside/secret.txt",  # fullwidth full stops
    "..\uff0foutside\uff0fsecret.txt",  # fullwidth solidus
    "\u2024\u2024/outside/secret.txt",  # one dot leader
    ".\u0307./outside/secret.txt",  # combining dot above
    "..\u0338/x.txt",  # combining long solidus overlay
    "\u202e../x.txt",  # right-to-left override
    "\u2215etc\u2215passwd",  # division slash
    "%2e%2e/%2e%2e/outside/secret.txt",
    "..%2f..%2foutside%2fsecret.txt",
    "..%c0%af..%c0%afetc",
    "..\\..\\outside\\secret.txt",
    "..\\outside\\secret.txt",
    "C:\\Windows\\system32\\x.txt",
    "\\\\server\\share\\x.txt",
    "file:///etc/passwd",
    " ../outside/secret.txt",
    "...",
    ".../outside/secret.txt",
    "....//....//etc/passwd",
    "\n../x.txt",
    "a/" * 1500 + "x.txt",  # too long for the OS: an error, not an escape
    "x" * 5000,
    "./inside.txt",
    "sub/../inside.txt",
]


@pytest.fixture
def arena(tmp_path, monkeypatch):
    env = boot_files(tmp_path)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text(f"{SECRET}\n{LEAK}\n")
    (outside / "sub").mkdir()
    (outside / "sub" / "deep.txt").write_text(f"{SECRET}\n{LEAK}\n")
    home = tmp_path / "userhome"  # $HOME; tmp_path / "home" is AGENT_HOME (state, trash)
    home.mkdir()
    (home / "secret.txt").write_text(f"{SECRET}\n{LEAK}\n")
    monkeypatch.setenv("HOME", str(home))
    ws = env.workspace
    (ws / "sub").mkdir()
    os.symlink(outside, ws / "link_out")
    os.symlink(outside / "secret.txt", ws / "link_file")
    os.symlink(outside / "not-yet.txt", ws / "dangling_out")
    os.symlink("..", ws / "sub" / "link_up_ws")  # inside: points at the workspace root
    os.symlink("../..", ws / "sub" / "link_up")  # points at tmp_path: outside
    os.symlink("../outside", ws / "rel_link_out")
    return env, outside, home


def _refusal(output: str) -> bool:
    return ("Path escapes workspace" in output or output == "A path is required."
            or "contains a NUL byte" in output)


def calls_for(path: str) -> list[tuple[str, dict]]:
    """Every way a path reaches a file tool."""
    return [
        ("read_file", {"path": path}),
        ("write_file", {"path": path, "content": "PWNED"}),
        ("edit_file", {"path": path, "oldString": SECRET, "newString": "PWNED"}),
        ("multi_edit", {"path": path, "edits": [{"oldString": SECRET, "newString": "PWNED"}]}),
        ("move_file", {"from": path, "to": "moved-in.txt"}),
        ("move_file", {"from": "inside.txt", "to": path}),
        ("delete_file", {"path": path}),
        ("list_dir", {"path": path}),
        ("apply_patch", {"patch": f"*** Add File: {path}\n+PWNED\n"}),
        ("apply_patch", {"patch": f"*** Update File: {path}\n-{SECRET}\n+PWNED\n"}),
        ("apply_patch", {"patch": f"*** Delete File: {path}\n"}),
        ("apply_patch", {"patch": "*** Update File: inside.txt\n"
                                  f"*** Move to: {path}\n-inside\n+PWNED\n"}),
    ]


def _patchable(path: str) -> bool:
    # A newline inside a marker path would change the patch's structure, not test the jail.
    return "\n" not in path and "\x00" not in path and path.strip() == path and path != ""


def _reset_inside(env) -> None:
    """``inside.txt`` back to ``inside``, rewritten only when a call changed it: truncating
    and rewriting a file costs about 2 ms on ext4 (it flushes on close), 800 times over."""
    target = env.workspace / "inside.txt"
    try:
        if not target.is_symlink() and target.read_bytes() == b"inside\n":
            return
    except OSError:
        pass
    env.write("inside.txt", "inside\n")


async def _run_corpus(env, paths, expect_refusal: bool):
    ran = 0
    for path in paths:
        for name, args in calls_for(path):
            if name == "apply_patch" and not _patchable(path):
                continue
            _reset_inside(env)
            result = await env.call(name, args)
            ran += 1
            assert LEAK not in result.output, (name, path, result.output)
            if expect_refusal:
                assert result.is_error and _refusal(result.output), (name, path, result.output)
        many = await env.call("read_many_files", {"files": [{"path": path}]})
        ran += 1
        assert not many.is_error and LEAK not in many.output
        if expect_refusal:
            assert _refusal(many.output.split("[unreadable: ", 1)[-1][:-1]), (path, many.output)
    return ran


async def test_escapes_are_refused_by_every_tool(arena, tmp_path):
    env, outside, home = arena
    before = (snapshot(outside), snapshot(home))
    absolute = [str(tmp_path / rel) for rel in ABSOLUTE_ESCAPES]
    ran = await _run_corpus(env, ESCAPES + absolute, expect_refusal=True)
    ran += await _run_corpus(env, REFUSED_OTHERWISE, expect_refusal=True)
    assert ran > 400
    assert (snapshot(outside), snapshot(home)) == before
    assert not (outside / "not-yet.txt").exists()


async def test_odd_names_stay_inside(arena, tmp_path):
    env, outside, home = arena
    before = (snapshot(outside), snapshot(home))
    siblings = sorted(p.name for p in tmp_path.iterdir())
    await _run_corpus(env, INSIDE_NAMES, expect_refusal=False)
    assert (snapshot(outside), snapshot(home)) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == siblings
    # Whatever was created is inside the workspace, under the literal name asked for.
    created = [e.path for e in walk_entries(env.workspace, include_dirs=True,
                                            include_ignored=True)]
    assert len(created) > 20 and not any(".." in p.split("/") for p in created)
    assert all(os.path.realpath(env.workspace / p).startswith(str(env.workspace) + "/")
               for p in created if not os.path.islink(env.workspace / p))
    assert (env.workspace / "\uff0e\uff0e").exists()  # a directory literally named "．．"


async def test_glob_and_grep_never_leave_the_workspace(arena, tmp_path):
    env, outside, home = arena
    for pattern in ["../outside/*", "../**", str(outside) + "/*", "~/*", "/etc/*"]:
        out = await env.err("glob", {"pattern": pattern})
        assert out.startswith("Path escapes workspace"), (pattern, out)
    assert (await env.err("glob", {"pattern": "link_out/*"})).startswith(
        "Path escapes workspace")
    assert "secret.txt" not in await env.ok("glob", {"pattern": "**/*"})
    for include in ["../outside/*", str(outside) + "/*", "~/*"]:
        out = await env.err("grep", {"pattern": "TOPSECRET", "include": include})
        assert out.startswith("Path escapes workspace"), (include, out)
    for include in ["link_out/*", "**/*", "*", "link_file", "rel_link_out/*"]:
        out = await env.ok("grep", {"pattern": "TOPSECRET", "include": include})
        assert out == "No matches.", (include, out)
        out = await env.ok("grep", {"pattern": "TOPSECRET", "include": include,
                                    "includeIgnored": True})
        assert out == "No matches.", (include, out)
    listing = await env.ok("list_dir", {"depth": 6, "includeIgnored": True})
    assert "secret.txt" not in listing and "deep.txt" not in listing


def test_is_inside_is_by_whole_components_as_pathlib_says(tmp_path):
    """A sibling whose name starts with the workspace's is outside it; every pair of these
    paths gets pathlib's answer (``root in candidate.parents``)."""
    import itertools

    names = ["/", "//", "/a", "/a/b", "/a/bc", "/a/b/c", "//a", "//a/b", "/ab", "/a/b/c/d",
             "/a/b c", "/a/b/.x", "/a/b/..x", "/ä", "/ä/b", "/a\\b", "/A/b"]
    for root, candidate in itertools.product(map(Path, names), repeat=2):
        expected = candidate == root or root in candidate.parents
        assert is_inside(root, candidate) == expected, (root, candidate)
    ws = tmp_path / "ws"
    ws.mkdir()
    (tmp_path / "ws2").mkdir()
    (tmp_path / "ws2" / "f.txt").write_text("outside")
    for bad in ["../ws2/f.txt", str(tmp_path / "ws2" / "f.txt")]:
        with pytest.raises(ToolError, match="Path escapes workspace"):
            jail(ws, bad)


def test_jail_unit_cases(tmp_path):
    ws = tmp_path / "ws"
    (ws / "d").mkdir(parents=True)
    (ws / "f.txt").write_text("x")
    assert jail(ws, "f.txt") == ws.resolve() / "f.txt"
    assert jail(ws, ".") == ws.resolve()
    assert jail(ws, str(ws / "d" / ".." / "f.txt")) == ws.resolve() / "f.txt"
    os.symlink(ws / "d", ws / "dl")
    assert jail(ws, "dl/new") == ws.resolve() / "d" / "new"
    assert jail_entry(ws, "dl") == ws.resolve() / "dl"  # the link itself
    assert jail_entry(ws, "dl/") == ws.resolve() / "d"  # trailing slash: the directory
    # "link/.." resolves through the link, as the kernel does.
    (ws / "d" / "inner").mkdir()
    os.symlink(ws / "d" / "inner", ws / "il")
    (ws / "d" / "x.txt").write_text("x")
    assert jail_entry(ws, "il/../x.txt") == ws.resolve() / "d" / "x.txt"
    for bad in ["../x", "/etc", "dl/../../x"]:
        with pytest.raises(ToolError, match="Path escapes workspace"):
            jail(ws, bad)
    with pytest.raises(ToolError, match="Path escapes workspace"):
        jail_entry(ws, "..")
    with pytest.raises(ToolError, match="^File name too long: x{80}[.][.][.]$"):
        jail(ws, "x" * 300)
    with pytest.raises(ToolError, match="^Path too deep"):
        jail(ws, "a/" * 300)
    with pytest.raises(ToolError, match="^Path too long"):
        jail(ws, "abcdefgh/" * 500)
    # No Unicode normalisation: a decomposed name is a different file from the composed one.
    (ws / "e\u0301.txt").write_text("nfd")
    assert jail(ws, "e\u0301.txt").name == "e\u0301.txt"
    assert jail(ws, "\u00e9.txt").name == "\u00e9.txt"


def test_corpus_size():
    assert len(ESCAPES) + len(ABSOLUTE_ESCAPES) + len(REFUSED_OTHERWISE) + len(INSIDE_NAMES) >= 40
    assert Path  # the corpus is data; this guards against it being trimmed by accident
