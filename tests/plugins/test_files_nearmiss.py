"""Near misses teach: tolerant matching only when exact matching fails and the tolerant match
is unique (and the result says which tolerance), otherwise an error naming the closest region
and what differs: whitespace, indentation, quotes, line ends.  For edit_file, multi_edit and
apply_patch."""

from __future__ import annotations

import pytest
from files_support import boot_files, snapshot

SOURCE = ("def total(items):\n"
          "\tcount = 0   \n"
          "\tfor item in items:\n"
          "\t\tlabel = \u201cadding\u201d \u2014 item\n"
          "\t\tcount += item\n"
          "\treturn count\n")


@pytest.fixture
def env(tmp_path):
    env = boot_files(tmp_path)
    env.write("t.py", SOURCE)
    return env


# ---- tolerances that apply (unique), and say so -------------------------------------------

async def test_trailing_whitespace_tolerance(env):
    out = await env.ok("edit_file", {"path": "t.py", "oldString": "\tcount = 0\n",
                                     "newString": "\tcount = 1\n"})
    assert out == "Replaced 1 occurrence(s) in t.py (matched ignoring trailing whitespace)"
    assert env.read("t.py") == SOURCE.replace("\tcount = 0   \n", "\tcount = 1\n")


async def test_indentation_tolerance_reindents_the_new_text(env):
    # The model typed four spaces per level where the file has tabs.
    out = await env.ok("edit_file", {
        "path": "t.py",
        "oldString": "        count += item\n    return count\n",
        "newString": ("        count += item\n    if not count:\n        return 0\n"
                      "    return count\n")})
    assert out == ("Replaced 1 occurrence(s) in t.py (matched ignoring indentation; newString "
                   "was re-indented to match the file)")
    assert env.read("t.py").endswith("\t\tcount += item\n\tif not count:\n\t\treturn 0\n"
                                     "\treturn count\n")


async def test_missing_indentation_is_added_back(env):
    env.write("c.py", "class A:\n    def f(self):\n        return 1\n")
    out = await env.ok("edit_file", {"path": "c.py", "oldString": "def f(self):\n    return 1",
                                     "newString": "def f(self):\n    return 2"})
    assert out.endswith("(matched ignoring indentation; newString was re-indented to match "
                        "the file)")
    assert env.read("c.py") == "class A:\n    def f(self):\n        return 2\n"
    # Lines that lost different amounts of indentation follow no rule: refused.
    out = await env.err("edit_file", {"path": "t.py", "oldString": "count += item\nreturn count",
                                      "newString": "count += 1\nreturn count"})
    assert out.startswith("oldString not found exactly in t.py; ignoring indentation it would "
                          "match at line 5, but its indentation differs from the file's in no "
                          "consistent way\nClosest match: lines 5-6 differ in indentation:")
    assert env.read("t.py") == SOURCE


async def test_quotes_tolerance(env):
    out = await env.ok("edit_file", {"path": "t.py",
                                     "oldString": '\t\tlabel = "adding" - item\n',
                                     "newString": '\t\tlabel = "added: " + item\n'})
    assert out == ("Replaced 1 occurrence(s) in t.py (matched ignoring quotes, dashes and "
                   "spaces; the file's typographic quotes and dashes were kept)")
    assert '\t\tlabel = \u201cadded: \u201d + item\n' in env.read("t.py")


async def test_missing_final_newline_tolerance(env):
    env.write("n.txt", "one\ntwo")
    out = await env.ok("edit_file", {"path": "n.txt", "oldString": "two\n",
                                     "newString": "2\n"})
    assert out == ("Replaced 1 occurrence(s) in n.txt (matched ignoring final newline; the file "
                   "has no final newline, and still has none)")
    assert (env.workspace / "n.txt").read_bytes() == b"one\n2"


async def test_tolerance_must_be_unique(env):
    env.write("d.py", "a = 1 \nb = 2\na = 1\t\nb = 2\n")
    before = snapshot(env.workspace)
    out = await env.err("edit_file", {"path": "d.py", "oldString": "a = 1\nb = 2\n",
                                      "newString": "a = 3\nb = 2\n"})
    assert out == ("oldString not found exactly in d.py; ignoring trailing whitespace it "
                   "matches 2 places (lines 1, 3). Add surrounding lines to make it unique")
    assert snapshot(env.workspace) == before
    out = await env.ok("edit_file", {"path": "d.py", "oldString": "a = 1\nb = 2\n",
                                     "newString": "a = 3\nb = 2\n", "replaceAll": True})
    assert out == ("Replaced 2 occurrence(s) in d.py (matched ignoring trailing whitespace)")
    assert env.read("d.py") == "a = 3\nb = 2\na = 3\nb = 2\n"


async def test_exact_match_wins_over_a_tolerant_one(env):
    env.write("e.py", "x = 1  \nx = 1\n")
    await env.ok("edit_file", {"path": "e.py", "oldString": "x = 1\n", "newString": "y\n"})
    assert env.read("e.py") == "x = 1  \ny\n"


# ---- the hint the model receives, one near-miss class at a time ---------------------------
# Each oldString has the class's difference on one line and a real text difference on the
# next, so no tolerance can apply and the hint has to explain.

HINTS = {
    "whitespace": (
        "\tcount = 0\n\tfor item in item:\n",
        "Closest match: lines 2-3 differ in whitespace, text:\n"
        "line 2: trailing whitespace: the file's line ends with 3 whitespace character(s), "
        "yours with 0\n"
        "line 3: the text differs\n"
        "  file:  '\\tfor item in items:'\n"
        "  yours: '\\tfor item in item:'"),
    "indentation": (
        "    count = 0   \n    for item in item:\n",
        "Closest match: lines 2-3 differ in indentation, text:\n"
        "line 2: indentation: the file has 1 tab, yours 4 spaces\n"
        "line 3: indentation: the file has 1 tab, yours 4 spaces; the text differs\n"
        "  file:  '\\tfor item in items:'\n"
        "  yours: '    for item in item:'"),
    "quotes": (
        '\t\tlabel = "adding" - item\n\t\tcount -= item\n',
        "Closest match: lines 4-5 differ in quotes, text:\n"
        "line 4: quotes/dashes/spaces: the file has '\u201c' (U+201C) where yours has '\"'\n"
        "  file:  '\\t\\tlabel = \u201cadding\u201d \u2014 item'\n"
        "  yours: '\\t\\tlabel = \"adding\" - item'\n"
        "line 5: the text differs\n"
        "  file:  '\\t\\tcount += item'\n"
        "  yours: '\\t\\tcount -= item'"),
    "line ends": (
        # Lines separated by a lone carriage return, which this LF file does not use.
        "def total(items):\r\tcount = 0",
        "Closest match: lines 1-1 differ in line ends:\n"
        "line 1: your text has a carriage return (CR) inside this line; the file's lines end "
        "with a plain newline"),
}


@pytest.mark.parametrize("kind", list(HINTS))
async def test_edit_file_hint(env, kind):
    old, hint = HINTS[kind]
    before = snapshot(env.workspace)
    out = await env.err("edit_file", {"path": "t.py", "oldString": old, "newString": "X"})
    assert out == f"oldString not found in t.py\n{hint}"
    assert snapshot(env.workspace) == before


@pytest.mark.parametrize("kind", list(HINTS))
async def test_multi_edit_hint(env, kind):
    old, hint = HINTS[kind]
    before = snapshot(env.workspace)
    out = await env.err("multi_edit", {"path": "t.py", "edits": [
        {"oldString": "\treturn count\n", "newString": "\treturn count or 0\n"},
        {"oldString": old, "newString": "X"}]})
    assert out == f"edit 2: oldString not found in t.py. No edits were applied.\n{hint}"
    assert snapshot(env.workspace) == before


async def test_hint_when_nothing_resembles_the_text(env):
    out = await env.err("edit_file", {"path": "t.py", "oldString": "class Foo:\n    pass\n",
                                      "newString": "X"})
    assert out == "oldString not found in t.py\nNothing like its first line 'class Foo:' is in " \
                  "the file."


async def test_hint_for_a_line_that_is_almost_right(env):
    out = await env.err("edit_file", {"path": "t.py", "oldString": "\treturn counts\n",
                                      "newString": "X"})
    assert out == ("oldString not found in t.py\nClosest match: lines 6-6 differ in text:\n"
                   "line 6: the text differs\n  file:  '\\treturn count'\n"
                   "  yours: '\\treturn counts'")


async def test_inconsistent_indentation_is_refused_with_the_hint(env):
    env.write("m.py", "def f():\n    a = 1\n\tb = 2\n")  # the file mixes spaces and a tab
    out = await env.err("edit_file", {"path": "m.py", "oldString": "  a = 1\n  b = 2\n",
                                      "newString": "  a = 1\n  b = 3\n"})
    assert out == ("oldString not found exactly in m.py; ignoring indentation it would match at "
                   "line 2, but its indentation differs from the file's in no consistent way\n"
                   "Closest match: lines 2-3 differ in indentation:\n"
                   "line 2: indentation: the file has 4 spaces, yours 2 spaces\n"
                   "line 3: indentation: the file has 1 tab, yours 2 spaces")
    assert env.read("m.py") == "def f():\n    a = 1\n\tb = 2\n"


# ---- apply_patch: the same passes, reported per hunk --------------------------------------

def patch(*hunk_lines: str) -> str:
    return "*** Begin Patch\n*** Update File: t.py\n" + "\n".join(hunk_lines) + \
        "\n*** End Patch\n"


@pytest.mark.parametrize("hunk, tolerance, changed", [
    ((" def total(items):", "-\tcount = 0", "+\tcount = 1"), "trailing whitespace",
     ("\tcount = 0   \n", "\tcount = 1\n")),
    (("-    return count", "+    return count or 0"),
     "indentation; its + lines were re-indented to match the file",
     ("\treturn count\n", "\treturn count or 0\n")),
    (('-\t\tlabel = "adding" - item', '+\t\tlabel = "added"'), "quotes, dashes and spaces",
     ("\t\tlabel = \u201cadding\u201d \u2014 item\n", '\t\tlabel = "added"\n')),
])
async def test_apply_patch_tolerances_are_reported(env, hunk, tolerance, changed):
    out = await env.ok("apply_patch", {"patch": patch("@@", *hunk)})
    assert out == f"Applied 1 change(s):\n- updated t.py (hunk 1 matched ignoring {tolerance})"
    assert env.read("t.py") == SOURCE.replace(*changed)


async def test_apply_patch_anchor_found_with_a_tolerance(env):
    out = await env.ok("apply_patch", {"patch": patch("@@ def total(items):  ",
                                                      "-\treturn count", "+\treturn 0")})
    assert out == "Applied 1 change(s):\n- updated t.py"
    assert env.read("t.py").endswith("\treturn 0\n")


async def test_apply_patch_tolerance_must_be_unique(env):
    env.write("t.py", "x = 1 \ny = 2\nx = 1\t\ny = 2\n")
    before = snapshot(env.workspace)
    out = await env.err("apply_patch", {"patch": patch("-x = 1", "+x = 3", " y = 2")})
    assert out == ("t.py: hunk 1 matches 2 places (ignoring trailing whitespace) (lines 1, 3). "
                   "Add context lines or an @@ anchor to make it unique. Nothing was written.")
    assert snapshot(env.workspace) == before


@pytest.mark.parametrize("kind", ["whitespace", "indentation", "quotes"])
async def test_apply_patch_hint(env, kind):
    old, hint = HINTS[kind]
    lines = ["-" + line for line in old.rstrip("\n").split("\n")]
    before = snapshot(env.workspace)
    out = await env.err("apply_patch", {"patch": patch(*lines, "+X")})
    assert out == f"t.py: hunk 1 does not match the file. Nothing was written.\n{hint}"
    assert snapshot(env.workspace) == before


async def test_apply_patch_hint_searches_after_the_previous_hunk(env):
    out = await env.err("apply_patch", {"patch": patch(
        "@@", "-\tcount += item", "+\tcount += 2 * item", "@@", "-def total(items):", "+x")})
    assert out.splitlines()[0] == "t.py: hunk 2 does not match the file. Nothing was written."
    assert out.splitlines()[1] == "Nothing like its first line 'def total(items):' is in the file."


# ---- the file's typography and encoding ----------------------------------------------------

async def test_a_quote_tolerant_edit_keeps_the_files_curly_quotes(env):
    env.write("prose.md", "Intro.\n\u201cHello,\u201d she said \u2014 it\u2019s late.\n"
                          "Next line.\n")
    out = await env.ok("edit_file", {
        "path": "prose.md",
        "oldString": "\"Hello,\" she said - it's late.\nNext line.",
        "newString": "\"Hello, world,\" she said - it's late.\nNext line.\n'Bye.'"})
    assert "matched ignoring quotes, dashes and spaces" in out
    assert "typographic quotes and dashes were kept" in out
    assert env.read("prose.md") == ("Intro.\n\u201cHello, world,\u201d she said - it\u2019s "
                                    "late.\nNext line.\n\u2018Bye.\u2019\n")


async def test_an_unchanged_line_of_a_quote_tolerant_edit_is_the_files_own(env):
    env.write("q.txt", "\u201ckeep\u201d \u2014 this\nchange me\n")
    await env.ok("multi_edit", {"path": "q.txt", "edits": [{
        "oldString": "\"keep\" - this\nchange me", "newString": "\"keep\" - this\nchanged"}]})
    assert env.read("q.txt") == "\u201ckeep\u201d \u2014 this\nchanged\n"


async def test_a_latin1_near_miss_names_the_encoding_and_shows_the_text(env):
    env.write("menu.txt", "caf\u00e9 = 3\nth\u00e9 = 2\n".encode("latin-1"))
    out = await env.err("edit_file", {"path": "menu.txt", "oldString": "caf\u00e9 = 3",
                                      "newString": "caf\u00e9 = 4"})
    assert "\\udce9" not in out and "\udce9" not in out
    assert "menu.txt is not UTF-8: some of its bytes are Windows-1252 (Latin-1) text" in out
    assert "'\u00e9'" in out
    assert "Closest match: lines 1-1 hold your text, stored as Windows-1252." in out
    out = await env.err("edit_file", {"path": "menu.txt", "oldString": "th\u00e9 = 9",
                                      "newString": "th\u00e9 = 1"})
    assert "file:  'th\u00e9 = 2'" in out and "yours: 'th\u00e9 = 9'" in out
    assert "\udce9" not in out
    out = await env.err("apply_patch", {"patch": "*** Update File: menu.txt\n-th\u00e9 = 9\n"
                                                 "+th\u00e9 = 1\n"})
    assert "menu.txt is not UTF-8" in out and "'th\u00e9 = 2'" in out
    assert (env.workspace / "menu.txt").read_bytes() == "caf\u00e9 = 3\nth\u00e9 = 2\n".encode(
        "latin-1")
