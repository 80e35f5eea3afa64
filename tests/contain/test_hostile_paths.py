"""Hostile paths and patterns, property-based: no spelling of a path gets past a rule, no
pattern hangs or disagrees with the documented glob, no manifest is half-accepted, and no
patch writes outside the workspace.

- permission rules judge a path by where it leads (``./``, ``//``, ``..``, absolute, symlink
  spellings all meet the same rule);
- the permission matcher and the registry's matcher agree with a reference glob and with
  each other;
- registry manifests: random JSON or bytes give a manifest or a ManifestError; an
  installed deny rule holds against every spelling of a path;
- apply_patch with hostile paths and hunks never escapes the workspace jail.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
from pathlib import Path
from types import SimpleNamespace

import pytest
from hypothesis import HealthCheck, assume, example, given, settings
from hypothesis import strategies as st
from lanes import examples

from agent import Effects
from agent.contract.tools import ToolResult
from agent.loop import permissions as perm

SETTINGS = settings(max_examples=examples(150), deadline=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture,
                                           HealthCheck.too_slow])

SEGMENTS = st.sampled_from(["src", "generated", "docs", "a", "b.txt", ".env", "x y", "é",
                            "deep", "secrets", "..."])


@st.composite
def spellings(draw, segments: list[str], workspace: str):
    """Another way to write the relative path ``segments`` that the tools resolve to the same
    place: ``./`` runs, doubled slashes, detours through ``x/..``, the absolute form."""
    parts: list[str] = []
    for seg in segments:
        for _ in range(draw(st.integers(0, 2))):
            parts.append(draw(st.sampled_from([".", "detour/..", "src/..", "a/b/../.."])))
        parts.append(seg)
    sep = draw(st.sampled_from(["/", "//", "/./"]))
    text = sep.join(parts)
    if draw(st.booleans()):
        text = workspace.rstrip("/") + draw(st.sampled_from(["/", "//", "/./"])) + text
    elif draw(st.booleans()):
        text = "./" + text
    return text


RULES = perm.parse_rules({
    "write_file": {"*": "allow", "src/generated/*": "deny", "docs/*": "ask",
                   "*.env": "deny"},
    "read_file": {"*": "allow", "secrets/*": "deny"},
})


@SETTINGS
@given(data=st.data(), segments=st.lists(SEGMENTS, min_size=1, max_size=4))
def test_a_rule_meets_every_spelling_of_a_path(tmp_path, data, segments):
    assume(".." not in segments)
    canonical = "/".join(segments)
    spelled = data.draw(spellings(segments, str(tmp_path)))
    for tool, kind in (("write_file", "writes"), ("read_file", "reads")):
        want = perm.decide(tool, Effects(**{kind: (canonical,)}), RULES, workspace=tmp_path)
        got = perm.decide(tool, Effects(**{kind: (spelled,)}), RULES, workspace=tmp_path)
        assert got.decision == want.decision, (spelled, canonical, got, want)


def test_the_spellings_that_used_to_slip_past_a_deny(tmp_path):
    (tmp_path / "src" / "generated").mkdir(parents=True)
    (tmp_path / "gen").symlink_to("src/generated")
    for spelled in ("./src/generated/x.py", "src//generated/x.py",
                    "lib/../src/generated/x.py", f"{tmp_path}/src/generated/x.py",
                    "gen/x.py", "src/generated/./x.py"):
        verdict = perm.decide("write_file", Effects(writes=(spelled,)), RULES,
                              workspace=tmp_path)
        assert verdict.decision == "deny", spelled
        assert 'write_file: "src/generated/*"' in verdict.reason
    assert perm.decide("write_file", Effects(writes=("src/generated/../ok.py",)), RULES,
                       workspace=tmp_path).decision == "allow"


async def test_the_gate_applies_rules_to_spellings(tmp_path):
    from agent import Tool
    from agent.testing import gate_decision, make_boot

    async def write(args, ctx):
        raise AssertionError("a denied call must never run")

    tool = Tool("write_file", "w", write, {"type": "object"},
                effects=lambda a: Effects(writes=(a["path"],)))
    ws = tmp_path / "ws"
    ws.mkdir()
    config, hooks = make_boot(ws, tmp_path / "home", builtins=[],
                              file_data={"permission": {"write_file": {
                                  "*": "allow", "src/generated/*": "deny"}}})
    for path in ("./src/generated/a", f"{ws}/src/generated/a"):
        decision = await gate_decision(config, hooks, tool, {"path": path}, yolo=True)
        assert not decision.allowed and decision.by == "rule"


# ---- glob matchers --------------------------------------------------------------------------


def reference_glob(pattern: str, subject: str) -> bool:
    regex = "".join(".*" if c == "*" else "." if c == "?" else re.escape(c) for c in pattern)
    return re.fullmatch(regex, subject, re.DOTALL) is not None


SMALL = st.text("ab*?/.\n", max_size=8)


@settings(max_examples=examples(300), deadline=None)
@given(pattern=SMALL, subject=st.text("ab/.\n", max_size=12))
def test_permission_matcher_is_the_documented_glob(pattern, subject):
    assert perm.matches(pattern, subject) == reference_glob(pattern, subject)


@settings(max_examples=examples(300), deadline=None)
@given(pattern=SMALL.filter(lambda p: p.strip()), subject=st.text("ab/.\n", max_size=12))
def test_registry_matcher_agrees_with_the_permission_matcher(pattern, subject):
    globs = pytest.importorskip("plugins_builtin.registry.globs")
    assert globs.glob_match(pattern, subject) == perm.matches(pattern, subject)


@settings(max_examples=examples(50), deadline=None)
@given(stars=st.integers(1, 40), length=st.integers(1000, 20000))
def test_no_pattern_hangs_either_matcher(stars, length):
    globs = pytest.importorskip("plugins_builtin.registry.globs")
    pattern = "*a" * stars + "*b"
    subject = "a" * length
    assert not perm.matches(pattern, subject)
    assert not globs.glob_match(pattern, subject)


# ---- registry manifests ---------------------------------------------------------------------

TEXT = st.text(max_size=30)
JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | TEXT,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(TEXT, inner, max_size=4),
    max_leaves=10)
RULE = st.fixed_dictionaries(
    {"tools": st.lists(st.sampled_from(["write_file", "bash", "*", "mcp__*", "", "a b",
                                        "edit_?ile"]), max_size=3),
     "reason": st.sampled_from(["ops owns it", "", "two\nlines", "x" * 400])},
    optional={"pathPattern": st.sampled_from(["secrets/*", "*.pem", "", "(a|b)", "a" * 300,
                                              "sec\x00", "/etc/*"]),
              "commandPattern": st.sampled_from(["rm *", "git push*", "^curl", "*"]),
              "extra": JSON})
MANIFESTS = st.fixed_dictionaries(
    {}, optional={"name": st.sampled_from(["ok-name", "Bad", "", "a" * 50, "x--y", 3]),
                  "description": st.sampled_from(["Keeps things safe", "", "a\nb", None]),
                  "appendix": TEXT,
                  "deny": st.lists(RULE, max_size=3) | JSON,
                  "code": st.just("import os")})


@SETTINGS
@given(data=st.one_of(MANIFESTS, JSON))
def test_any_manifest_data_is_accepted_whole_or_refused_with_reasons(data):
    manifest = pytest.importorskip("plugins_builtin.registry.manifest")
    try:
        parsed = manifest.validate(data)
    except manifest.ManifestError as exc:
        assert exc.problems and all(isinstance(p, str) and p for p in exc.problems)
        return
    assert isinstance(data, dict) and set(data) <= {"name", "description", "appendix", "deny"}
    assert manifest.parse_manifest(parsed.dumps()) == parsed  # it round-trips


@SETTINGS
@given(raw=st.one_of(st.binary(max_size=200), JSON.map(json.dumps).map(str.encode),
                     MANIFESTS.map(json.dumps).map(str.encode),
                     st.just(b'{"name": "a", "name": "b"}'), st.just(b"[" * 5000),
                     st.just(b'{"deny": NaN}')))
def test_any_manifest_bytes_parse_or_fail_with_reasons(raw):
    manifest = pytest.importorskip("plugins_builtin.registry.manifest")
    try:
        manifest.parse_manifest(raw)
    except manifest.ManifestError as exc:
        assert exc.problems


@SETTINGS
@given(data=st.data(), segments=st.lists(SEGMENTS, min_size=1, max_size=3),
       tool=st.sampled_from(["write_file", "edit_file", "apply_patch", "delete_file",
                             "move_file", "some_plugin_writer"]))
def test_an_installed_deny_holds_against_every_spelling(tmp_path, data, segments, tool):
    manifest = pytest.importorskip("plugins_builtin.registry.manifest")
    enforce = pytest.importorskip("plugins_builtin.registry.enforce")
    assume(".." not in segments)
    installed = manifest.validate({
        "name": "keep-out", "description": "no secrets",
        "deny": [{"tools": ["write_file"], "pathPattern": "secrets/*",
                  "reason": "secrets are managed elsewhere"}]})
    spelled = data.draw(spellings(["secrets", *segments], str(tmp_path)))
    verdict = enforce.judge((installed,), tool, Effects(writes=(spelled,)), tmp_path)
    assert verdict is not None and verdict.decision == "deny", spelled


# ---- apply_patch and the jail ---------------------------------------------------------------

HOSTILE_PATHS = st.sampled_from([
    "ok.txt", "sub/ok.txt", "new.txt", "sub/deeper/new.txt", "../outside/x.txt",
    "../outside/victim.txt", "link/victim.txt", "link/new.txt", "inner/ok.txt",
    "sub/../../outside/victim.txt", "/tmp/agent-patch-escape.txt", "~/escape.txt",
    "./ok.txt", "sub//ok.txt", "x\\..\\..\\outside", ".", "sub", "ok.txt/",
])
BODY = st.lists(st.sampled_from(["hello", "victim", "", " ", "ok", "*** End Patch"]),
                max_size=3)


@st.composite
def patches(draw) -> str:
    lines = []
    if draw(st.booleans()):
        lines.append("*** Begin Patch")
    for _ in range(draw(st.integers(1, 3))):
        kind = draw(st.sampled_from(["add", "update", "delete"]))
        path = draw(HOSTILE_PATHS)
        if kind == "add":
            lines.append(f"*** Add File: {path}")
            lines += ["+" + t for t in draw(BODY)]
        elif kind == "delete":
            lines.append(f"*** Delete File: {path}")
        else:
            lines.append(f"*** Update File: {path}")
            if draw(st.booleans()):
                lines.append(f"*** Move to: {draw(HOSTILE_PATHS)}")
            lines.append("@@")
            lines += [draw(st.sampled_from([" ", "-", "+"])) + t for t in draw(BODY)] or ["-x"]
    if draw(st.booleans()):
        lines.append("*** End Patch")
    return "\n".join(lines)


def snapshot(root: Path) -> dict[str, bytes | str]:
    out: dict[str, bytes | str] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            full = Path(dirpath) / name
            key = str(full.relative_to(root))
            if full.is_symlink():
                out[key] = "-> " + os.readlink(full)
            elif full.is_file():
                out[key] = full.read_bytes()
            else:
                out[key] = "dir"
    return out


@pytest.fixture(scope="module")
def patch_env(tmp_path_factory):
    from agent.testing import make_boot

    root = tmp_path_factory.mktemp("jail")
    ws, outside, home = root / "ws", root / "outside", root / "home"
    for d in (ws, outside, home):
        d.mkdir()
    config, hooks = make_boot(ws, root / "agent-home", builtins=["files"])
    tool = hooks.tools(config)["apply_patch"]
    old_home = os.environ.get("HOME")
    os.environ["HOME"] = str(home)  # "~/x" must land nowhere real, even if it escaped
    yield root, ws, outside, home, config, tool
    if old_home is not None:
        os.environ["HOME"] = old_home
    hooks.unconfigure(config)


#: what :func:`reset` last built: the snapshots of the workspace and of the folder beside it
_pristine: list[tuple[dict[str, bytes | str], dict[str, bytes | str]]] = []


def reset(ws: Path, outside: Path) -> None:
    """The workspace and the folder beside it as every example starts from. Most patches
    are refused and change nothing: then both are still exactly that (every entry, every
    byte, every link) and are left alone; rebuilding them each time was a quarter of the
    property's CPU."""
    if _pristine and (snapshot(ws), snapshot(outside)) == _pristine[0]:
        return
    for d in (ws, outside):
        shutil.rmtree(d)
        d.mkdir()
    (outside / "victim.txt").write_text("victim\n")
    (ws / "ok.txt").write_text("hello\nok\n")
    (ws / "sub").mkdir()
    (ws / "sub" / "ok.txt").write_text("ok\n")
    (ws / "link").symlink_to(outside)
    (ws / "inner").symlink_to("sub")
    _pristine[:] = [(snapshot(ws), snapshot(outside))]


@settings(max_examples=examples(150), deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(patch=patches())
@example(patch="*** Add File: link/new.txt\n+pwned")
@example(patch="*** Update File: link/victim.txt\n@@\n-victim\n+pwned")
@example(patch="*** Update File: ok.txt\n*** Move to: ../outside/moved.txt\n@@\n-ok\n+moved")
@example(patch="*** Delete File: link/victim.txt")
@example(patch="*** Add File: new.txt\n+fine\n*** Add File: ~/escape.txt\n+pwned")
def test_no_patch_writes_outside_the_workspace(patch_env, patch):
    from agent.testing import run_tool

    root, ws, outside, home, config, tool = patch_env
    reset(ws, outside)
    before_outside = snapshot(outside)
    stray = Path("/tmp/agent-patch-escape.txt")
    result = asyncio.run(run_tool(tool, {"patch": patch}, config))
    assert isinstance(result, ToolResult) and result.output
    assert snapshot(outside) == before_outside, patch
    assert snapshot(home) == {}
    assert not stray.exists()
    # Only the trash (under the agent's own state directory) may appear beside the workspace.
    assert {p.name for p in root.iterdir()} <= {"agent-home", "home", "outside", "ws"}
    assert (ws / "link").is_symlink() and (ws / "inner").is_symlink()
    if result.is_error:  # all or nothing: a refused patch changed nothing at all
        assert (ws / "ok.txt").read_text() == "hello\nok\n"
        assert (ws / "sub" / "ok.txt").read_text() == "ok\n"


def test_the_jail_fixture_lets_a_good_patch_through(patch_env):
    from agent.testing import run_tool

    root, ws, outside, home, config, tool = patch_env
    reset(ws, outside)
    patch = "*** Update File: inner/ok.txt\n@@\n-ok\n+changed\n*** Add File: new.txt\n+fine"
    # A session of its own: the files were rewritten behind the tools' back since the
    # fixture's earlier calls, which a session that saw them would rightly refuse.
    fresh = SimpleNamespace(id="good-patch")
    result = asyncio.run(run_tool(tool, {"patch": patch}, config, session=fresh))
    assert not result.is_error, result.output
    assert (ws / "sub" / "ok.txt").read_text() == "changed\n"
    assert (ws / "new.txt").read_text() == "fine\n"
