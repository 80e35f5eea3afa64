"""The ignore-aware walker: nested .gitignore/.agentignore, negation, anchoring, skips, links."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from agent.lib.walk import walk, walk_entries


def make(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def test_plain_tree_bfs_order_and_posix_paths(tmp_path):
    make(tmp_path, {"b.txt": "", "a/z.txt": "", "a/b/c.txt": "", "c.txt": "", "a/a.txt": ""})
    assert list(walk(tmp_path)) == ["b.txt", "c.txt", "a/a.txt", "a/z.txt", "a/b/c.txt"]


def test_include_dirs_and_max_count(tmp_path):
    make(tmp_path, {"a/x.txt": "", "b/y.txt": "", "top.txt": ""})
    assert list(walk(tmp_path, include_dirs=True)) == ["a", "b", "top.txt", "a/x.txt", "b/y.txt"]
    assert list(walk(tmp_path, include_dirs=True, max_count=2)) == ["a", "b"]
    assert list(walk(tmp_path, max_count=0)) == []


def test_root_gitignore_star_question_and_dir_only(tmp_path):
    make(tmp_path, {
        ".gitignore": "*.log\nbuild/\nfile?.tmp\n# a comment\n\n",
        "app.log": "", "src/deep/x.log": "", "build/out.js": "", "src/build/inner.js": "",
        "file1.tmp": "", "file10.tmp": "", "keep.txt": "",
        "notadir/build": "",  # a FILE named build: "build/" only matches directories
    })
    got = set(walk(tmp_path))
    assert got == {".gitignore", "file10.tmp", "keep.txt", "notadir/build"}


def test_negation_and_later_rules_win(tmp_path):
    make(tmp_path, {
        ".gitignore": "*.log\n!important.log\n*.tmp\n!*.tmp\n*.tmp\n",
        "a.log": "", "important.log": "", "sub/important.log": "", "x.tmp": "",
    })
    assert set(walk(tmp_path)) == {".gitignore", "important.log", "sub/important.log"}


def test_leading_slash_anchors_to_the_ignore_files_directory(tmp_path):
    make(tmp_path, {
        ".gitignore": "/root-only.txt\n",
        "root-only.txt": "", "sub/root-only.txt": "",
        "sub/.gitignore": "/here.txt\n", "sub/here.txt": "", "sub/deeper/here.txt": "",
        "here.txt": "",
    })
    got = set(walk(tmp_path))
    assert "root-only.txt" not in got and "sub/root-only.txt" in got
    assert "sub/here.txt" not in got and "sub/deeper/here.txt" in got and "here.txt" in got


def test_double_star(tmp_path):
    make(tmp_path, {
        ".gitignore": "docs/**/draft.md\n**/cache\nlogs/**\n",
        "docs/draft.md": "", "docs/a/b/draft.md": "", "draft.md": "",
        "x/cache/f": "", "cache/g": "", "logs/1/2.txt": "", "logs.txt": "",
    })
    assert set(walk(tmp_path)) == {".gitignore", "draft.md", "logs.txt"}


def test_nested_gitignore_is_scoped_to_its_directory(tmp_path):
    make(tmp_path, {
        "pkg/.gitignore": "*.gen\n",
        "pkg/a.gen": "", "pkg/sub/b.gen": "", "other/c.gen": "", "d.gen": "",
    })
    got = set(walk(tmp_path))
    assert got == {"pkg/.gitignore", "other/c.gen", "d.gen"}


def test_deeper_file_overrides_shallower_with_negation(tmp_path):
    make(tmp_path, {
        ".gitignore": "*.dat\n",
        "keep/.gitignore": "!*.dat\n",
        "a.dat": "", "keep/b.dat": "", "keep/sub/c.dat": "", "other/d.dat": "",
    })
    got = set(walk(tmp_path))
    assert {"keep/b.dat", "keep/sub/c.dat"} <= got
    assert "a.dat" not in got and "other/d.dat" not in got


def test_agentignore_adds_rules_and_can_reinclude_what_git_ignores(tmp_path):
    make(tmp_path, {
        ".gitignore": "generated/\n",
        ".agentignore": "secrets/\n!generated/\n",
        "generated/api.py": "", "secrets/key.txt": "", "src/main.py": "",
        "src/.agentignore": "fixtures/\n", "src/fixtures/big.json": "", "fixtures/top.json": "",
    })
    got = set(walk(tmp_path))
    assert "generated/api.py" in got  # .agentignore comes after .gitignore: later rule wins
    assert "secrets/key.txt" not in got
    assert "src/fixtures/big.json" not in got and "fixtures/top.json" in got


def test_cannot_reinclude_a_file_inside_an_ignored_directory(tmp_path):
    # git's rule: once a directory is excluded, nothing below it is looked at.
    make(tmp_path, {".gitignore": "out/\n!out/keep.txt\n", "out/keep.txt": "", "out/x": ""})
    assert set(walk(tmp_path)) == {".gitignore"}


def test_git_and_node_modules_always_skipped(tmp_path):
    make(tmp_path, {".git/config": "", "node_modules/x/index.js": "", "a/node_modules/y.js": "",
                    "a/.git": "gitdir: elsewhere", "ok.js": ""})
    assert set(walk(tmp_path)) == {"ok.js"}
    assert set(walk(tmp_path, include_ignored=True, include_dirs=True)) == {"ok.js", "a"}


def test_include_ignored_skips_no_rules(tmp_path):
    make(tmp_path, {".gitignore": "*.log\n", "a.log": "", "sub/.agentignore": "*\n",
                    "sub/b.txt": ""})
    assert set(walk(tmp_path)) == {".gitignore"}
    assert set(walk(tmp_path, include_ignored=True)) == {".gitignore", "a.log",
                                                          "sub/.agentignore", "sub/b.txt"}


def test_symlinked_directory_is_a_directory_but_not_descended(tmp_path):
    outside = tmp_path / "outside"
    make(outside, {"secret.txt": ""})
    ws = tmp_path / "ws"
    make(ws, {"real/inner.txt": ""})
    os.symlink(outside, ws / "link_out")
    os.symlink(ws / "real", ws / "link_in")
    os.symlink(ws / "real" / "inner.txt", ws / "file_link")
    entries = {e.path: e for e in walk_entries(ws, include_dirs=True)}
    assert entries["link_out"].is_dir and entries["link_out"].is_symlink
    assert entries["link_in"].is_dir
    assert not any(p.startswith(("link_out/", "link_in/")) for p in entries)
    assert not entries["file_link"].is_dir and entries["file_link"].is_symlink
    assert set(walk(ws)) == {"file_link", "real/inner.txt"}


def test_symlink_loop_terminates(tmp_path):
    make(tmp_path, {"a/f.txt": ""})
    os.symlink(tmp_path / "a", tmp_path / "a" / "loop")
    assert set(walk(tmp_path)) == {"a/f.txt"}


def test_start_subdirectory_keeps_ancestor_rules(tmp_path):
    make(tmp_path, {".gitignore": "*.log\nhidden/\n", "src/a.py": "", "src/b.log": "",
                    "src/deep/c.py": "", "hidden/x.py": ""})
    assert list(walk(tmp_path, start="src")) == ["src/a.py", "src/deep/c.py"]
    assert list(walk(tmp_path, start="hidden")) == []  # a full walk never enters it either
    assert list(walk(tmp_path, start="hidden", include_ignored=True)) == ["hidden/x.py"]
    assert list(walk(tmp_path, start="../")) == []
    assert list(walk(tmp_path, start="missing")) == []


def test_start_through_a_symlink_yields_nothing(tmp_path):
    outside = tmp_path / "outside"
    make(outside, {"secret.txt": ""})
    ws = tmp_path / "ws"
    ws.mkdir()
    os.symlink(outside, ws / "out")
    assert list(walk(ws, start="out")) == []


def test_max_depth(tmp_path):
    make(tmp_path, {"a/b/c/d.txt": "", "a/x.txt": "", "top.txt": ""})
    got = [(e.path, e.depth) for e in walk_entries(tmp_path, include_dirs=True, max_depth=2)]
    assert got == [("a", 1), ("top.txt", 1), ("a/b", 2), ("a/x.txt", 2)]


def test_malformed_ignore_line_does_not_void_the_file(tmp_path):
    make(tmp_path, {".gitignore": "*.log\n!\n\\\n", "a.log": "", "b.txt": ""})
    assert "a.log" not in set(walk(tmp_path))


def test_same_files_as_ripgrep_on_a_real_tree(tmp_path):
    """Without .agentignore the walker's set equals ``rg --files`` (hidden on, .git and
    node_modules off) on a copy of part of the standard library."""
    import json
    import shutil

    rg = shutil.which("rg")
    if rg is None:
        pytest.skip("rg not installed")
    src = Path(json.__file__).parent.parent
    for name in ("json", "email", "importlib", "logging"):
        shutil.copytree(src / name, tmp_path / name)
    (tmp_path / ".gitignore").write_text("__pycache__/\n*.pyc\n/json/tool.py\n")
    (tmp_path / "email" / ".gitignore").write_text("_*.py\n!__init__.py\n")
    make(tmp_path, {"node_modules/m.js": "", ".hidden/h.txt": ""})
    out = subprocess.run([rg, "--files", "--hidden", "--no-require-git", "--no-config",
                          "-g", "!.git", "-g", "!node_modules"], cwd=tmp_path,
                         capture_output=True, text=True, check=True).stdout
    assert set(walk(tmp_path)) == set(out.split())
