"""No import cycles at import time among the modules of ``agent/`` and ``plugins_builtin/``.

A cycle works until someone reorders two imports, then fails with a half-initialised module
(``ImportError: cannot import name X (most likely due to a circular import)``) far from the
change that caused it. The graph is read with ``ast``, without importing anything: an edge is an
``import`` or ``from ... import`` that runs when the module is imported — at module level, in a
``try`` or an ``if`` there, in a class body — but not one inside a function (a deferred import is
the way to break a cycle) nor one under ``if TYPE_CHECKING:`` (never executed).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
import sourcetrees

ROOT = Path(__file__).parents[2]
PACKAGES = ("agent", "plugins_builtin")


def module_files() -> dict[str, Path]:
    """Every module of the two packages by dotted name (a package by its ``__init__``)."""
    found: dict[str, Path] = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join(parts)] = path
    return found


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def import_time_statements(body: list[ast.stmt]):
    """The import statements that run when a module body runs (functions are not entered)."""
    for node in body:
        if isinstance(node, ast.Import | ast.ImportFrom):
            yield node
        elif isinstance(node, ast.If):
            if not _is_type_checking(node.test):
                yield from import_time_statements(node.body)
            yield from import_time_statements(node.orelse)
        elif isinstance(node, ast.Try | ast.TryStar):
            for block in (node.body, node.orelse, node.finalbody,
                          *(handler.body for handler in node.handlers)):
                yield from import_time_statements(block)
        elif isinstance(node, ast.With | ast.ClassDef):
            yield from import_time_statements(node.body)


def _base(name: str, path: Path, node: ast.ImportFrom) -> str:
    """The absolute module a ``from`` import names, relative levels resolved."""
    if not node.level:
        return node.module or ""
    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    package = package[:len(package) - (node.level - 1)]
    return ".".join(package + ([node.module] if node.module else []))


def import_edges(modules: dict[str, Path]) -> dict[str, set[str]]:
    """Module -> the modules of ours it imports at import time."""
    edges: dict[str, set[str]] = {}
    for name, path in modules.items():
        targets: set[str] = set()
        for node in import_time_statements(sourcetrees.parse(path).body):
            if isinstance(node, ast.Import):
                targets.update(alias.name for alias in node.names)
                continue
            base = _base(name, path, node)
            for alias in node.names:
                # `from agent.ui import screen` imports the submodule when there is one.
                submodule = f"{base}.{alias.name}"
                targets.add(submodule if submodule in modules else base)
        edges[name] = {t for t in targets if t in modules and t != name}
    return edges


def find_cycle(edges: dict[str, set[str]]) -> list[str] | None:
    """One cycle as a path ``[a, b, ..., a]``, or None (iterative depth-first search)."""
    state: dict[str, int] = {}  # 1 = on the current path, 2 = done
    for start in sorted(edges):
        if state.get(start):
            continue
        path, stack = [start], [iter(sorted(edges[start]))]
        state[start] = 1
        while stack:
            step = next(stack[-1], None)
            if step is None:
                state[path.pop()] = 2
                stack.pop()
            elif state.get(step) == 1:
                return path[path.index(step):] + [step]
            elif not state.get(step):
                state[step] = 1
                path.append(step)
                stack.append(iter(sorted(edges[step])))
    return None


def test_no_import_cycle_in_agent_or_builtin_plugins():
    edges = import_edges(module_files())
    cycle = find_cycle(edges)
    assert cycle is None, "import cycle at import time: " + " -> ".join(cycle or [])


# The checker itself: it must see the cycles it exists to catch, and only those.

def _graph(tmp_path: Path, files: dict[str, str]) -> dict[str, set[str]]:
    modules = {}
    for rel, text in files.items():
        path = tmp_path / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        parts = list(Path(rel).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        modules[".".join(parts)] = path
    return import_edges(modules)


@pytest.mark.parametrize("a_text, b_text", [
    ("import pkg.b\n", "from pkg import a\n"),
    ("from . import b\n", "from .a import thing\n"),
    ("try:\n    from pkg.b import x\nexcept ImportError:\n    x = None\n", "import pkg.a\n"),
    ("import sys\nif sys.platform:\n    from pkg import b\n", "from pkg.a import y\n"),
    ("class K:\n    from pkg import b\n", "from pkg import a\n"),
])
def test_the_checker_finds_a_cycle(tmp_path, a_text, b_text):
    edges = _graph(tmp_path, {"pkg/__init__.py": "", "pkg/a.py": a_text, "pkg/b.py": b_text})
    assert find_cycle(edges) in (["pkg.a", "pkg.b", "pkg.a"], ["pkg.b", "pkg.a", "pkg.b"])


@pytest.mark.parametrize("b_text", [
    "def later():\n    from pkg import a\n",  # deferred: runs at call time
    "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg import a\n",
    "import typing\nif typing.TYPE_CHECKING:\n    from pkg.a import T\n",
    "from pkg import c\n",
])
def test_the_checker_ignores_what_does_not_run_at_import(tmp_path, b_text):
    edges = _graph(tmp_path, {"pkg/__init__.py": "", "pkg/a.py": "from pkg import b\n",
                              "pkg/b.py": b_text, "pkg/c.py": "x = 1\n"})
    assert edges["pkg.a"] == {"pkg.b"}
    assert find_cycle(edges) is None


def test_the_checker_finds_a_long_cycle_through_a_package(tmp_path):
    edges = _graph(tmp_path, {
        "pkg/__init__.py": "from pkg.sub import thing\n",
        "pkg/sub/__init__.py": "from .deep import thing\n",
        "pkg/sub/deep.py": "from ..top import other\nthing = 1\n",
        "pkg/top.py": "import pkg\nother = 2\n"})
    cycle = find_cycle(edges)
    assert cycle is not None and set(cycle) == {"pkg", "pkg.sub", "pkg.sub.deep", "pkg.top"}
