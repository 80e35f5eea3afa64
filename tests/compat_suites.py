"""Peer edit-format fixtures (vendored under tests/fixtures/), run through our real tools.

Shared by tests/plugins/test_edit_compat.py and bench/edit_compat.py, so that the test and the bench
judge the same cases the same way.  Each suite is a list of :class:`Case`; :func:`run_case`
boots a workspace with only the files plugin, lays out the case's input files, makes the
tool call exactly as a session does (schema check, run, output cap) and compares the
workspace afterwards with the expected files, byte for byte.

A case whose outcome differs from the peer's on purpose is listed in :data:`DEVIATIONS` with
the reason (and in docs/tools.md); for it, the check is that our documented outcome holds.
"""

from __future__ import annotations

import json
import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from files_support import boot_files

FIXTURES = Path(__file__).resolve().parent / "fixtures"

#: suite/case -> (the reason, the outcome we produce instead: "unchanged" = input untouched)
DEVIATIONS: dict[str, tuple[str, str]] = {
    "codex/015_failure_after_partial_success_leaves_changes": (
        "apply_patch is all or nothing: a patch whose second file fails writes nothing, "
        "where Codex keeps the files it wrote before the failure", "unchanged"),
    "aider/test_replace_multiple_matches": (
        "edit_file refuses an oldString that occurs more than once (unless replaceAll) "
        "instead of replacing the first occurrence", "unchanged"),
    "aider/test_replace_multiple_matches_missing_whitespace": (
        "edit_file refuses an oldString that occurs more than once (unless replaceAll) "
        "instead of replacing the first occurrence", "unchanged"),
}


@dataclass
class Case:
    """One fixture: input files, one tool call, the expected files (None: not judged by
    files) and whether the call must fail."""

    suite: str
    name: str
    tool: str
    args: dict[str, Any]
    files: dict[str, bytes] = field(default_factory=dict)
    expected: dict[str, bytes] | None = None
    must_fail: bool | None = None

    @property
    def key(self) -> str:
        return f"{self.suite}/{self.name}"


def _tree(root: Path) -> dict[str, bytes]:
    out: dict[str, bytes] = {}
    if not root.is_dir():
        return out
    for dirpath, _, filenames in os.walk(root):
        for name in filenames:
            path = Path(dirpath) / name
            out[path.relative_to(root).as_posix()] = path.read_bytes()
    return out


def codex_cases() -> list[Case]:
    """OpenAI Codex's apply-patch scenarios: input/, patch.txt, expected/ per directory."""
    root = FIXTURES / "codex" / "apply_patch"
    cases = []
    for directory in sorted(p for p in root.iterdir() if p.is_dir()):
        patch = (directory / "patch.txt").read_bytes().decode("utf-8")
        cases.append(Case("codex", directory.name, "apply_patch", {"patch": patch},
                          _tree(directory / "input"), _tree(directory / "expected")))
    return cases


def _json_cases(suite: str, path: Path) -> list[Case]:
    """Cases written as data: ``{"name", "tool", "args", "files", "expected" | "fails"}``;
    file contents are strings (UTF-8) or ``{"base64": ...}``."""
    import base64

    def content(value: Any) -> bytes:
        if isinstance(value, dict):
            return base64.b64decode(value["base64"])
        return str(value).encode("utf-8")

    data = json.loads(path.read_text(encoding="utf-8"))
    cases = []
    for item in data["cases"]:
        expected = item.get("expected")
        cases.append(Case(
            suite, item["name"], item["tool"], item["args"],
            {k: content(v) for k, v in item.get("files", {}).items()},
            None if expected is None else {k: content(v) for k, v in expected.items()},
            item.get("fails")))
    return cases


def opencode_cases() -> list[Case]:
    path = FIXTURES / "opencode" / "edit_cases.json"
    return _json_cases("opencode", path) if path.exists() else []


def aider_cases() -> list[Case]:
    path = FIXTURES / "aider" / "editblock_cases.json"
    return _json_cases("aider", path) if path.exists() else []


SUITES = {"codex": codex_cases, "opencode": opencode_cases, "aider": aider_cases}


@dataclass
class Outcome:
    case: Case
    passed: bool
    deviation: bool
    detail: str
    output: str


async def run_case(case: Case, tmp: Path | None = None) -> Outcome:
    """Run one case in a fresh workspace and judge it."""
    tmp = tmp or Path(tempfile.mkdtemp(prefix="edit-compat-"))
    env = boot_files(tmp)
    for rel, data in case.files.items():
        env.write(rel, data)
    result = await env.call(case.tool, case.args)
    after = _tree(env.workspace)
    deviation = DEVIATIONS.get(case.key)
    if deviation is not None:
        want = case.files if deviation[1] == "unchanged" else case.expected
        ok = after == want
        return Outcome(case, ok, True, deviation[0] if ok else "the documented outcome did "
                       "not hold either", result.output)
    problems = []
    if case.expected is not None and after != case.expected:
        missing = sorted(set(case.expected) - set(after))
        extra = sorted(set(after) - set(case.expected))
        wrong = sorted(k for k in set(after) & set(case.expected) if after[k] != case.expected[k])
        for label, names in (("missing", missing), ("unexpected", extra), ("differs", wrong)):
            if names:
                problems.append(f"{label}: {', '.join(names)}")
        for name in wrong[:1]:
            problems.append(f"{name}: got {after[name]!r}, want {case.expected[name]!r}")
    if case.must_fail is not None and result.is_error != case.must_fail:
        problems.append("the call " + ("succeeded" if case.must_fail else "failed") +
                        f" (it should have {'failed' if case.must_fail else 'succeeded'})")
    return Outcome(case, not problems, False, "; ".join(problems), result.output)
