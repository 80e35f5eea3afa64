"""Encodings and line ends across every write tool: a BOM stays invisible and preserved, the
file's line-ending convention wins over the model's, mixed files keep untouched lines' ends,
a missing final newline stays missing, UTF-16 is read and written as UTF-16."""

from __future__ import annotations

import pytest
from files_support import boot_files

BOM8 = b"\xef\xbb\xbf"


def u16(text: str, codec: str = "utf-16-le") -> bytes:
    bom = b"\xff\xfe" if codec == "utf-16-le" else b"\xfe\xff"
    return bom + text.encode(codec)


# name: (file before, after "alpha" -> "ALPHA" plus a NEW line after it, by an edit tool)
LAYOUTS = {
    "lf": (b"alpha\nbeta\ngamma\n", b"ALPHA\nNEW\nbeta\ngamma\n"),
    "crlf": (b"alpha\r\nbeta\r\ngamma\r\n", b"ALPHA\r\nNEW\r\nbeta\r\ngamma\r\n"),
    "cr": (b"alpha\rbeta\rgamma\r", b"ALPHA\rNEW\rbeta\rgamma\r"),
    "bom-lf": (BOM8 + b"alpha\nbeta\ngamma\n", BOM8 + b"ALPHA\nNEW\nbeta\ngamma\n"),
    "bom-crlf": (BOM8 + b"alpha\r\nbeta\r\ngamma\r\n", BOM8 + b"ALPHA\r\nNEW\r\nbeta\r\ngamma\r\n"),
    "mixed": (b"alpha\r\nbeta\ngamma\r\n", b"ALPHA\r\nNEW\r\nbeta\ngamma\r\n"),
    "no-final-newline": (b"alpha\nbeta\ngamma", b"ALPHA\nNEW\nbeta\ngamma"),
    "crlf-no-final-newline": (b"alpha\r\nbeta\r\ngamma", b"ALPHA\r\nNEW\r\nbeta\r\ngamma"),
    "utf16le": (u16("alpha\r\nbeta\r\ngamma\r\n"), u16("ALPHA\r\nNEW\r\nbeta\r\ngamma\r\n")),
    "utf16be": (u16("alpha\nbeta\ngamma\n", "utf-16-be"),
                u16("ALPHA\nNEW\nbeta\ngamma\n", "utf-16-be")),
}

# What the model sends: LF text (as read_file shows), and for the edits also CRLF text, which
# must not leak into an LF file.
EDIT_CALLS = {
    "edit_file": lambda nl: {"oldString": f"alpha{nl}beta", "newString": f"ALPHA{nl}NEW{nl}beta"},
    "multi_edit": lambda nl: {"edits": [{"oldString": "alpha", "newString": "ALPHA"},
                                        {"oldString": f"ALPHA{nl}", "newString":
                                         f"ALPHA{nl}NEW{nl}"}]},
    "apply_patch": lambda nl: {"patch": f"*** Begin Patch{nl}*** Update File: f.txt{nl}@@{nl}"
                                        f"-alpha{nl}+ALPHA{nl}+NEW{nl} beta{nl}*** End Patch{nl}"},
}


@pytest.fixture
def env(tmp_path):
    return boot_files(tmp_path)


@pytest.mark.parametrize("newline", ["\n", "\r\n"], ids=["model-lf", "model-crlf"])
@pytest.mark.parametrize("layout", list(LAYOUTS))
@pytest.mark.parametrize("tool", list(EDIT_CALLS))
async def test_edit_tools_keep_the_file_layout(env, tool, layout, newline):
    before, after = LAYOUTS[layout]
    env.write("f.txt", before)
    args = {"path": "f.txt", **EDIT_CALLS[tool](newline)}
    if tool == "apply_patch":
        args = EDIT_CALLS[tool](newline)
    await env.ok(tool, args)
    assert (env.workspace / "f.txt").read_bytes() == after


# write_file replaces the whole text: the model's line ends become the file's convention
# (a mixed file is made uniform in its dominant ending), the BOM and encoding stay.
WRITE_AFTER = {
    "lf": b"ALPHA\nbeta\n",
    "crlf": b"ALPHA\r\nbeta\r\n",
    "cr": b"ALPHA\rbeta\r",
    "bom-lf": BOM8 + b"ALPHA\nbeta\n",
    "bom-crlf": BOM8 + b"ALPHA\r\nbeta\r\n",
    "mixed": b"ALPHA\r\nbeta\r\n",
    "no-final-newline": b"ALPHA\nbeta\n",
    "crlf-no-final-newline": b"ALPHA\r\nbeta\r\n",
    "utf16le": u16("ALPHA\r\nbeta\r\n"),
    "utf16be": u16("ALPHA\nbeta\n", "utf-16-be"),
}


@pytest.mark.parametrize("newline", ["\n", "\r\n"], ids=["model-lf", "model-crlf"])
@pytest.mark.parametrize("layout", list(LAYOUTS))
async def test_write_file_keeps_the_file_layout(env, layout, newline):
    env.write("f.txt", LAYOUTS[layout][0])
    await env.look("f.txt")
    await env.ok("write_file", {"path": "f.txt", "content": f"ALPHA{newline}beta{newline}"})
    assert (env.workspace / "f.txt").read_bytes() == WRITE_AFTER[layout]


async def test_write_file_result_names_what_it_kept(env):
    env.write("w.txt", BOM8 + b"a\r\nb\r\n")
    await env.look("w.txt")
    out = await env.ok("write_file", {"path": "w.txt", "content": "\ufeffx\ny\n"})
    assert out == ("Wrote 6 chars to w.txt (line ends written as CRLF, like the file) "
                   "(kept as UTF-8 with BOM)")
    assert (env.workspace / "w.txt").read_bytes() == BOM8 + b"x\r\ny\r\n"  # one BOM, not two
    out = await env.ok("write_file", {"path": "new.txt", "content": "a\r\nb\nc\r\n"})
    assert out == "Wrote 9 chars to new.txt (mixed line ends made CRLF)"
    assert (env.workspace / "new.txt").read_bytes() == b"a\r\nb\r\nc\r\n"
    await env.ok("write_file", {"path": "plain.txt", "content": "a\r\nb\r\n"})
    assert (env.workspace / "plain.txt").read_bytes() == b"a\r\nb\r\n"  # a new file: as sent


async def test_write_file_missing_final_newline_is_the_models_choice(env):
    env.write("n.txt", b"a\r\nb\r\n")
    await env.look("n.txt")
    await env.ok("write_file", {"path": "n.txt", "content": "x\ny"})
    assert (env.workspace / "n.txt").read_bytes() == b"x\r\ny"


async def test_read_file_hides_the_bom_and_reads_utf16(env):
    env.write("b.txt", BOM8 + b"first\nsecond\n")
    assert await env.ok("read_file", {"path": "b.txt"}) == "1: first\n2: second\n3: "
    env.write("u.txt", u16("caf\u00e9\r\nna\u00efve\r\n"))
    assert await env.ok("read_file", {"path": "u.txt"}) == "1: caf\u00e9\n2: na\u00efve\n3: "
    env.write("mac.txt", b"one\rtwo\r")
    assert await env.ok("read_file", {"path": "mac.txt"}) == "1: one\n2: two\n3: "
    out = await env.ok("read_many_files", {"files": [{"path": "b.txt"}, {"path": "u.txt"}]})
    assert "\ufeff" not in out and "1: caf\u00e9" in out


async def test_line_one_of_a_bom_file_can_be_changed_by_every_tool(env):
    for tool, args in [
        ("edit_file", {"oldString": "first", "newString": "FIRST"}),
        ("multi_edit", {"edits": [{"oldString": "first\n", "newString": "FIRST\n"}]}),
        ("apply_patch", {"patch": "*** Update File: b.txt\n-first\n+FIRST\n"}),
    ]:
        env.write("b.txt", BOM8 + b"first\nsecond\n")  # written anew, outside the tools
        await env.look("b.txt")
        await env.ok(tool, {"path": "b.txt", **args} if tool != "apply_patch" else args)
        assert (env.workspace / "b.txt").read_bytes() == BOM8 + b"FIRST\nsecond\n", tool


async def test_utf32_and_bad_utf16_are_refused_clearly(env):
    env.write("w.txt", b"\xff\xfe\x00\x00" + "hi\n".encode("utf-32-le"))
    before = (env.workspace / "w.txt").read_bytes()
    for tool, args in [("read_file", {"path": "w.txt"}),
                       ("edit_file", {"path": "w.txt", "oldString": "hi", "newString": "ho"}),
                       ("apply_patch", {"patch": "*** Update File: w.txt\n-hi\n+ho\n"})]:
        out = await env.err(tool, args)
        assert "w.txt is UTF-32 text, which the file tools do not read or write" in out, tool
    assert (env.workspace / "w.txt").read_bytes() == before
    env.write("bad.txt", b"\xff\xfe" + b"a\x00\x00\xd8")  # a lone high surrogate
    out = await env.err("read_file", {"path": "bad.txt"})
    assert out == ("bad.txt starts with a UTF-16-LE byte-order mark but is not valid UTF-16-LE "
                   "(bad bytes at offset 4). Use bash to inspect it.")


async def test_utf16_cannot_take_text_it_cannot_encode(env):
    env.write("u.txt", u16("a\n"))
    before = (env.workspace / "u.txt").read_bytes()
    out = await env.err("edit_file", {"path": "u.txt", "oldString": "a",
                                      "newString": "b\ud800"})
    assert out.startswith("Cannot write u.txt as UTF-16-LE: the text holds '\\ud800'")
    assert (env.workspace / "u.txt").read_bytes() == before


async def test_line_end_only_change_is_refused_not_silently_dropped(env):
    env.write("l.txt", b"a\nb\n")
    out = await env.err("edit_file", {"path": "l.txt", "oldString": "a\nb",
                                      "newString": "a\r\nb"})
    assert out == ("oldString and newString differ only in line ends, and l.txt keeps its own "
                   "(LF); to change a file's line ends use bash")
    assert (env.workspace / "l.txt").read_bytes() == b"a\nb\n"


async def test_latin1_bytes_survive_an_edit_elsewhere(env):
    env.write("l1.txt", b"caf\xe9\nx = 1\n")
    await env.ok("edit_file", {"path": "l1.txt", "oldString": "x = 1", "newString": "x = 2"})
    assert (env.workspace / "l1.txt").read_bytes() == b"caf\xe9\nx = 2\n"


# ---- a property: whatever the model sends, a uniform file stays uniform ---------------------

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from lanes import examples  # noqa: E402

WORDS = st.text(alphabet="abcxyz =()", min_size=1, max_size=8)
MODEL_TEXT = st.lists(st.tuples(WORDS, st.sampled_from(["\n", "\r\n"])), min_size=1,
                      max_size=4).map(lambda parts: "".join(w + e for w, e in parts))


@pytest.fixture(scope="module")
def shared_env(tmp_path_factory):
    """One booted files plugin for every example: its tools keep nothing between calls, and
    each example writes p.txt afresh. Booting per example was a third of the test's CPU."""
    return boot_files(tmp_path_factory.mktemp("layout"))


@settings(max_examples=examples(60), deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(lines=st.lists(WORDS, min_size=2, max_size=6, unique=True),
       eol=st.sampled_from(["\n", "\r\n"]), bom=st.booleans(), final=st.booleans(),
       pick=st.integers(min_value=0), new=MODEL_TEXT,
       tool=st.sampled_from(["edit_file", "multi_edit", "apply_patch", "write_file"]))
def test_no_tool_mixes_line_ends_into_a_uniform_file(shared_env, lines, eol, bom, final,
                                                    pick, new, tool):
    import asyncio

    env = shared_env
    lines = [f"{i}{line}" for i, line in enumerate(lines)]  # every line unique
    raw = eol.join(lines) + (eol if final else "")
    env.write("p.txt", (BOM8 if bom else b"") + raw.encode())
    target = lines[pick % len(lines)]
    if tool == "edit_file":
        args = {"path": "p.txt", "oldString": target, "newString": new}
    elif tool == "multi_edit":
        args = {"path": "p.txt", "edits": [{"oldString": target, "newString": new}]}
    elif tool == "apply_patch":
        plus = "".join(f"+{part}\n" for part in new.replace("\r\n", "\n").split("\n")[:-1])
        args = {"patch": f"*** Update File: p.txt\n-{target}\n{plus}"}
    else:
        args = {"path": "p.txt", "content": new}
    asyncio.run(env.look("p.txt"))  # the file was rewritten behind the tools' back
    asyncio.run(env.ok(tool, args))
    data = (env.workspace / "p.txt").read_bytes()
    assert data.startswith(BOM8) == bom and not data[len(BOM8) if bom else 0:].startswith(BOM8)
    text = data.decode("utf-8")
    crlf, lf = text.count("\r\n"), text.count("\n") - text.count("\r\n")
    assert (crlf == 0) if eol == "\n" else (lf == 0), (tool, repr(raw), repr(new), repr(text))
    if tool != "write_file" and target != lines[-1]:
        assert text.endswith(eol) == final  # the final newline is left as it was
