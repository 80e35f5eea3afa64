"""apply_patch: the parser on its own, then the tool against real files (all or nothing)."""

from __future__ import annotations

import json

import pytest
import tokentext
from files_support import boot_files, snapshot
from hypothesis import given, settings
from hypothesis import strategies as st
from lanes import examples

from agent import Effects
from plugins_builtin.files.patch_parse import PatchError, parse_patch, touched_paths

# ---- parser -------------------------------------------------------------------------------------


def test_envelope_is_optional_and_ops_are_parsed():
    body = ("*** Add File: new.txt\n+one\n+\n+three\n"
            "*** Update File: a.py\n*** Move to: b.py\n@@ def f():\n x = 1\n-y = 2\n+y = 3\n"
            "@@\n-z\n+w\n*** End of File\n"
            "*** Delete File: gone.txt\n")
    for text in (body, f"*** Begin Patch\n{body}*** End Patch\n",
                 f"\n\n*** Begin Patch\r\n{body.replace(chr(10), chr(13) + chr(10))}"
                 "*** End Patch\n\n"):
        add, update, delete = parse_patch(text)
        assert (add.kind, add.path, add.add_lines) == ("add", "new.txt", ["one", "", "three"])
        assert (update.kind, update.path, update.move_to) == ("update", "a.py", "b.py")
        first, second = update.hunks
        assert first.anchor == "def f():" and not first.at_eof
        assert first.lines == [(" ", "x = 1"), ("-", "y = 2"), ("+", "y = 3")]
        assert first.old == ["x = 1", "y = 2"]
        assert second.anchor is None and second.at_eof and second.lines == [("-", "z"),
                                                                              ("+", "w")]
        assert (delete.kind, delete.path) == ("delete", "gone.txt")


def test_unified_diff_headers_become_anchors_or_nothing():
    ops = parse_patch("*** Update File: a\n@@ -1,3 +1,4 @@ class A:\n-x\n+y\n"
                      "@@ -10 +11 @@\n-p\n+q\n")
    assert [h.anchor for h in ops[0].hunks] == ["class A:", None]


def test_blank_lines_in_hunks():
    ops = parse_patch("*** Update File: a\n\n-x\n\n+y\n\n*** Add File: b\n+1\n\n+2\n")
    hunk = ops[0].hunks[0]
    assert hunk.lines == [("-", "x"), (" ", ""), ("+", "y")]  # edges dropped, middle kept
    assert ops[1].add_lines == ["1", "2"]  # blank lines outside hunks are skipped


@pytest.mark.parametrize("text, message", [
    ("", "the patch is empty"),
    ("\n\n", "the patch is empty"),
    ("*** Begin Patch\n*** End Patch\n", "the patch is empty"),
    ("hello\n*** Add File: a\n+x\n", "patch line 1 is not a marker or part of a hunk: hello"),
    ("*** Add File: a\n+x\n*** Frobnicate: b\n",
     "patch line 3 is not a marker or part of a hunk: *** Frobnicate: b"),
    ("*** Add File: a\n*** Move to: b\n+x\n", 'patch line 2: "Move to" is only valid on an Update'),
    ("*** Move to: b\n", 'patch line 1: "Move to" is only valid on an Update'),
    ("*** Update File: a\n-x\n+y\n*** Move to: b\n",
     'patch line 4: "Move to" must come directly after "*** Update File: a"'),
    ("*** Add File: a\n+x\n-y\n", "patch line 3: an Add cannot remove lines"),
    ("*** Add File: a\n context\n", "patch line 2: an Add holds only + lines"),
    ("*** Add File: a\nplain\n", "hunk line 2 starts with neither + nor -: plain"),
    ("*** Update File: a\n-x\nplain\n", "hunk line 3 starts with neither +, - nor a space: plain"),
    ("*** Update File: a\n", "a: an Update needs at least one hunk of - and + lines "
                             "(or a Move to)"),
    ("*** Update File: a\n context only\n", "a: hunk 1 changes nothing (it has no + or - lines)"),
    ("*** Delete File: a\n-x\n", "patch line 2: a Delete takes no lines: -x"),
    ("*** Add File:   \n+x\n", "patch line 1: 'Add File' has no path"),
    ("*** End of File\n", 'patch line 1: "*** End of File" belongs at the end of an Update hunk'),
    ("*** Add File: a\n+x\n*** End Patch\n*** Add File: b\n",
     "patch line 4: text after '*** End Patch' (line 3)"),
])
def test_parse_errors(text, message):
    with pytest.raises(PatchError) as info:
        parse_patch(text)
    assert str(info.value) == message


@pytest.mark.parametrize("wrapped", [
    "apply_patch <<'EOF'\n{body}EOF\n",
    "apply_patch <<EOF\n{body}EOF",
    'applypatch <<"PATCH"\n{body}PATCH\n\n',
    "<<'EOF'\n{body}EOF\n",
    "  apply_patch << 'EOF'  \n{body}  EOF  \n",
    "apply_patch <<'EOF'\n{body}",  # the terminator forgotten
])
def test_heredoc_wrapper_is_removed(wrapped):
    body = "*** Begin Patch\n*** Update File: a.py\n@@\n-x\n+y\n*** End Patch\n"
    (op,) = parse_patch(wrapped.format(body=body))
    assert (op.kind, op.path) == ("update", "a.py")
    assert op.hunks[0].lines == [("-", "x"), ("+", "y")]


def test_cd_before_the_heredoc_makes_paths_relative_to_it():
    ops = parse_patch("cd src && apply_patch <<'EOF'\n*** Begin Patch\n*** Update File: a.py\n"
                      "*** Move to: b.py\n-x\n+y\n*** Add File: c.txt\n+1\n*** End Patch\nEOF\n")
    assert [(op.path, op.move_to) for op in ops] == [("src/a.py", "src/b.py"), ("src/c.txt", None)]
    (op,) = parse_patch("cd 'my dir' && apply_patch <<EOF\n*** Add File: c\n+1\nEOF")
    assert op.path == "my dir/c"


def test_whitespace_around_envelope_and_markers():
    # Codex's leniency: padded envelope and file markers; a block indented as a whole.
    (op,) = parse_patch(" *** Begin Patch \n  *** Update File: a.py\n@@\n-x\n+y\n"
                        " *** End Patch\n")
    assert op.path == "a.py" and op.hunks[0].lines == [("-", "x"), ("+", "y")]
    (op,) = parse_patch("  *** Begin Patch\n  *** Add File: n.txt\n  +one\n  *** End Patch\n")
    assert (op.kind, op.add_lines) == ("add", ["one"])
    # Inside a hunk a padded marker-like line is context (the file may hold such text).
    (op,) = parse_patch("*** Update File: doc.md\n@@\n *** Update File: example\n-old\n+new\n")
    assert op.hunks[0].lines == [(" ", "*** Update File: example"), ("-", "old"), ("+", "new")]


def test_add_only_hunks_parse():
    (op,) = parse_patch("*** Update File: a\n@@\n+one\n+two\n@@ def f():\n+three\n")
    first, second = op.hunks
    assert (first.anchor, first.old, first.lines) == (None, [], [("+", "one"), ("+", "two")])
    assert (second.anchor, second.old) == ("def f():", [])


def test_touched_paths():
    ops = parse_patch("*** Add File: a\n+x\n*** Update File: b\n-x\n+y\n"
                      "*** Update File: c\n*** Move to: d\n*** Delete File: e\n")
    assert touched_paths(ops) == (["a", "b", "d"], ["c", "e"])


MARKERISH = [
    "*** Begin Patch", "*** End Patch", "*** Add File: a", "*** Update File: a",
    "*** Update File: b", "*** Delete File: c", "*** Move to: d", "*** End of File", "@@",
    "@@ def f():", "@@ -1,2 +1,3 @@", "+x", "-x", " x", "", " ", "\t", "-", "+", "***", "plain",
    "\\ No newline at end of file", "\r", "*** Move to:", "*** Add File:"]


@settings(max_examples=examples(400), deadline=None)
@given(st.text())
def test_parser_never_crashes_on_arbitrary_text(text):
    try:
        ops = parse_patch(text)
    except PatchError:
        return
    assert ops and all(op.path for op in ops)


@settings(max_examples=examples(400), deadline=None)
@given(tokentext.tokens(MARKERISH, max_size=30))
def test_parser_never_crashes_on_marker_soup(lines):
    try:
        ops = parse_patch("\n".join(lines))
    except PatchError:
        return
    writes, deletes = touched_paths(ops)
    assert len(writes) + len(deletes) == len(ops) + sum(
        1 for op in ops if op.move_to is not None)


# ---- the tool -------------------------------------------------------------------------------

@pytest.fixture
def env(tmp_path):
    return boot_files(tmp_path)


async def test_multi_file_patch(env):
    env.write("src/a.py", "import os\n\ndef f():\n    x = 1\n    return x\n\n"
                          "def g():\n    y = 1\n    return y\n")
    env.write("old/name.txt", "keep\nchange me\n")
    env.write("gone.txt", "bye\n")
    patch = """*** Begin Patch
*** Update File: src/a.py
@@ def f():
     x = 1
-    return x
+    return x + 1
@@ def g():
-    y = 1
+    y = 2
     return y
*** Add File: docs/new.md
+# New
+
+text
*** Update File: old/name.txt
*** Move to: new/name.txt
 keep
-change me
+changed
*** Delete File: gone.txt
*** End Patch"""
    out = await env.ok("apply_patch", {"patch": patch})
    assert out == ("Applied 4 change(s):\n- updated src/a.py\n- added docs/new.md\n"
                   "- moved old/name.txt to new/name.txt\n- deleted gone.txt")
    assert env.read("src/a.py") == ("import os\n\ndef f():\n    x = 1\n    return x + 1\n\n"
                                    "def g():\n    y = 2\n    return y\n")
    assert env.read("docs/new.md") == "# New\n\ntext\n"
    assert env.read("new/name.txt") == "keep\nchanged\n"
    assert not (env.workspace / "old/name.txt").exists()
    assert not (env.workspace / "gone.txt").exists()
    index = json.loads((env.home / "state/trash/nosession/index.json").read_text())
    assert [e["relative"] for e in index] == ["gone.txt"]


async def test_reference_style_patch_without_context(env):
    env.write("a.txt", "one\ntwo\nthree\n")
    out = await env.ok("apply_patch", {"patch": "*** Update File: a.txt\n-two\n+2\n"})
    assert out == "Applied 1 change(s):\n- updated a.txt"
    assert env.read("a.txt") == "one\n2\nthree\n"


async def test_failing_hunk_names_file_and_hunk_and_writes_nothing(env):
    env.write("src/a.py", "a\nb\nc\nd\n")
    env.write("other.txt", "x\n")
    before = snapshot(env.workspace)
    patch = ("*** Update File: other.txt\n-x\n+y\n*** Add File: added.txt\n+new\n"
             "*** Update File: src/a.py\n-a\n+A\n@@\n c\n-D\n+E\n")
    out = await env.err("apply_patch", {"patch": patch})
    assert out.splitlines()[0] == "src/a.py: hunk 2 does not match the file. Nothing was written."
    assert out.splitlines()[1:] == ["Closest match: lines 3-4 differ in text:",
                                    "line 4: the text differs", "  file:  'd'", "  yours: 'D'"]
    assert snapshot(env.workspace) == before


async def test_ambiguous_hunk_and_search_after_previous_hunk(env):
    env.write("r.txt", "x\nsame\nx\nsame\n")
    out = await env.err("apply_patch", {"patch": "*** Update File: r.txt\n-same\n+S\n"})
    assert out == ("r.txt: hunk 1 matches 2 places (lines 2, 4). Add context lines or an @@ "
                   "anchor to make it unique. Nothing was written.")
    # The second hunk only looks after the first, so the same text is unique there.
    env.write("r.txt", "top\nsame\nx\nsame\n")
    await env.ok("apply_patch", {"patch": "*** Update File: r.txt\n top\n-same\n+S1\n@@\n"
                                          "-same\n+S2\n"})
    assert env.read("r.txt") == "top\nS1\nx\nS2\n"


async def test_anchor_picks_the_first_match_after_it(env):
    env.write("c.py", "def a():\n    pass\n\ndef b():\n    pass\n")
    await env.ok("apply_patch", {"patch": "*** Update File: c.py\n@@ def b():\n-    pass\n"
                                          "+    return 2\n"})
    assert env.read("c.py") == "def a():\n    pass\n\ndef b():\n    return 2\n"
    out = await env.err("apply_patch", {"patch": "*** Update File: c.py\n@@ def zz():\n-x\n+y\n"})
    assert out == ('c.py: hunk 1: the @@ line "def zz():" was not found. Nothing was written.\n'
                   "Closest match: lines 4-4 differ in text:\nline 4: the text differs\n"
                   "  file:  'def b():'\n  yours: 'def zz():'")


async def test_anchor_repeated_as_the_first_context_line(env):
    env.write("c.py", "def a():\n    pass\n\ndef b():\n    pass\n")
    await env.ok("apply_patch", {"patch": "*** Update File: c.py\n@@ def b():\n def b():\n"
                                          "-    pass\n+    return 2\n"})
    assert env.read("c.py") == "def a():\n    pass\n\ndef b():\n    return 2\n"


async def test_add_only_hunks_append_or_follow_their_anchor(env):
    env.write("c.py", "import os\n\ndef f():\n    pass\n")
    out = await env.ok("apply_patch", {"patch": "*** Begin Patch\n*** Update File: c.py\n"
                                                "@@ import os\n+import sys\n@@\n+\n"
                                                "+def g():\n+    pass\n*** End Patch\n"})
    assert out == "Applied 1 change(s):\n- updated c.py"
    assert env.read("c.py") == ("import os\nimport sys\n\ndef f():\n    pass\n\ndef g():\n"
                                "    pass\n")


async def test_heredoc_wrapped_patch_is_applied(env):
    env.write("a.txt", "one\n")
    out = await env.ok("apply_patch", {"patch": "apply_patch <<'EOF'\n*** Begin Patch\n"
                                                "*** Update File: a.txt\n-one\n+1\n"
                                                "*** End Patch\nEOF\n"})
    assert out == "Applied 1 change(s):\n- updated a.txt"
    assert env.read("a.txt") == "1\n"


async def test_cd_heredoc_paths_stay_jailed_and_reach_the_effects(env):
    env.write("src/a.txt", "one\n")
    patch = "cd src && apply_patch <<'EOF'\n*** Update File: a.txt\n-one\n+1\nEOF\n"
    assert env.tools["apply_patch"].effects({"patch": patch}) == Effects(writes=("src/a.txt",))
    await env.ok("apply_patch", {"patch": patch})
    assert env.read("src/a.txt") == "1\n"
    before = snapshot(env.workspace)
    out = await env.err("apply_patch", {"patch": "cd .. && apply_patch <<'EOF'\n"
                                                 "*** Add File: escaped.txt\n+x\nEOF\n"})
    assert out == "Path escapes workspace: ../escaped.txt"
    assert snapshot(env.workspace) == before
    assert not (env.workspace.parent / "escaped.txt").exists()


async def test_end_of_file_hunks(env):
    env.write("e.txt", "a\nend\nb\nend\n")
    await env.ok("apply_patch", {"patch": "*** Update File: e.txt\n-end\n+END\n*** End of File\n"})
    assert env.read("e.txt") == "a\nend\nb\nEND\n"
    await env.ok("apply_patch", {"patch": "*** Update File: e.txt\n+appended\n*** End of File\n"})
    assert env.read("e.txt") == "a\nend\nb\nEND\nappended\n"
    # Marked End of File but not at the end: applied where the lines are (as Codex does).
    await env.ok("apply_patch", {"patch": "*** Update File: e.txt\n-b\n+B\n*** End of File\n"})
    assert env.read("e.txt") == "a\nend\nB\nEND\nappended\n"


async def test_line_endings_and_final_newline_preserved(env):
    env.write("w.txt", b"one\r\ntwo\r\nthree\r\n")
    await env.ok("apply_patch", {"patch": "*** Update File: w.txt\n one\n-two\n+2\n"})
    assert (env.workspace / "w.txt").read_bytes() == b"one\r\n2\r\nthree\r\n"
    env.write("n.txt", b"a\nb")
    await env.ok("apply_patch", {"patch": "*** Update File: n.txt\n-b\n+c\n"})
    assert (env.workspace / "n.txt").read_bytes() == b"a\nc"


async def test_trailing_whitespace_tolerated_only_as_a_fallback(env):
    env.write("t.py", "x = 1   \ny = 2\n")
    await env.ok("apply_patch", {"patch": "*** Update File: t.py\n x = 1\n-y = 2\n+y = 3\n"})
    assert env.read("t.py") == "x = 1   \ny = 3\n"  # the context line keeps its own text


@pytest.mark.parametrize("setup, patch, message", [
    ({"a": "x\n"}, "*** Update File: a\n-x\n+y\n*** Update File: ./a\n-y\n+z\n",
     "./a appears more than once in the patch (also as a). Combine its changes. "
     "Nothing was written."),
    ({"a": "x\n", "b": "1\n"}, "*** Update File: a\n*** Move to: b2\n-x\n+y\n"
                               "*** Add File: b2\n+q\n",
     "b2 appears more than once in the patch (also as b2). Combine its changes. "
     "Nothing was written."),
    ({}, "*** Delete File: missing\n", "Cannot delete missing: no such file. Nothing was written."),
    ({}, "*** Update File: missing\n-x\n+y\n",
     "Cannot update missing: no such file. Nothing was written."),
    ({"bin": b"\x00\x01"}, "*** Update File: bin\n-x\n+y\n",
     "Cannot update bin: it is a binary file. Nothing was written."),
    ({"a": "x\n"}, "*** Update File: a\n*** Move to: ./a\n-x\n+z\n",
     "Cannot move a to ./a: that is the same file. Nothing was written."),
    ({"d/f": "x\n"}, "*** Delete File: d\n",
     "Cannot delete d: it is a directory. Nothing was written."),
    ({"d/f": "x\n"}, "*** Add File: d\n+x\n",
     "Cannot add d: it is a directory. Nothing was written."),
    ({"a": "x\n", "d/f": "x\n"}, "*** Update File: a\n*** Move to: d\n-x\n+z\n",
     "Cannot move to d: it is a directory. Nothing was written."),
    ({"a": "x\n"}, "*** Add File: new\n+n\n*** Update File: ../escape\n-x\n+y\n",
     "Path escapes workspace: ../escape"),
    ({"a": "x\n"}, "*** Update File: a\n*** Move to: ../../out\n-x\n+y\n",
     "Path escapes workspace: ../../out"),
])
async def test_validation_before_any_write(env, setup, patch, message):
    for rel, content in {"keep.txt": "keep\n", **setup}.items():
        env.write(rel, content)
    patch = "*** Update File: keep.txt\n-keep\n+changed\n" + patch
    before = snapshot(env.workspace)
    assert await env.err("apply_patch", {"patch": patch}) == message
    assert snapshot(env.workspace) == before


async def test_add_and_move_over_an_existing_file_keep_the_old_content_in_the_trash(env):
    # Codex's semantics (an Add or a Move to replaces what is there), made recoverable.
    env.write("dup.txt", b"\xef\xbb\xbfold\r\ncontent\r\n")
    env.write("src.txt", "from\n")
    env.write("dst.txt", "existing\n")
    out = await env.ok("apply_patch", {"patch": "*** Add File: dup.txt\n+new\n+text\n"
                                                "*** Update File: src.txt\n*** Move to: dst.txt\n"
                                                "-from\n+new\n"})
    lines = out.splitlines()
    assert lines[0] == "Applied 2 change(s):"
    assert lines[1].startswith("- replaced dup.txt (it existed; the old content is in the "
                               "trash as ")
    assert lines[2].startswith("- moved src.txt to dst.txt (it existed; the old content is in the "
                               "trash as ")
    # The replaced file keeps its BOM and CRLF line ends.
    assert (env.workspace / "dup.txt").read_bytes() == b"\xef\xbb\xbfnew\r\ntext\r\n"
    assert env.read("dst.txt") == "new\n" and not (env.workspace / "src.txt").exists()
    index = json.loads((env.home / "state/trash/nosession/index.json").read_text())
    stored = {e["relative"]: (env.home / "state/trash/nosession" / e["id"] / e["relative"])
              for e in index}
    assert stored["dup.txt"].read_bytes() == b"\xef\xbb\xbfold\r\ncontent\r\n"
    assert stored["dst.txt"].read_bytes() == b"existing\n"


async def test_parse_errors_reach_the_model_unchanged(env):
    assert await env.err("apply_patch", {"patch": ""}) == "the patch is empty"


async def test_write_failure_rolls_back(env):
    env.write("a.txt", "old\n")
    # Updating a.txt is staged, then the Add under a.txt (a file, not a directory) fails:
    # no target was touched yet.
    out = await env.err("apply_patch", {"patch": "*** Update File: a.txt\n-old\n+new\n"
                                                 "*** Add File: a.txt/child\n+x\n"})
    assert out == ("nothing changed: a.txt/child: a parent of it is not a directory; no file "
                   "of the patch was changed.")
    assert sorted(p.name for p in env.workspace.iterdir()) == ["a.txt"]  # no temp file left
    assert env.read("a.txt") == "old\n"


def test_effects_name_every_path(env):
    tool = env.tools["apply_patch"]
    effects = tool.effects({"patch": "*** Add File: a\n+x\n*** Update File: b\n-x\n+y\n"
                                     "*** Update File: c\n*** Move to: d\n"
                                     "*** Delete File: e\n"})
    assert effects == Effects(writes=("a", "b", "d"), deletes=("c", "e"))
    assert tool.effects({"patch": "garbage"}).opaque
    assert tool.effects({}).opaque
