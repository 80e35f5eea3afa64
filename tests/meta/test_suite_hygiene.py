"""The suite's own rules, checked over its source with ``ast`` (nothing is imported or run).

- Every test that drives a real terminal or runs the agent as a subprocess carries the ``e2e``
  marker, so ``pytest -m "not e2e"`` (the fast lane, docs/testing.md) really leaves them out.
- No test asserts on wall-clock time (``assert time.monotonic() - start < 3``, a Hypothesis
  ``deadline=``): on a loaded machine such a bound fails for no fault of the code, and on a
  fast one it proves nothing. Speed is measured in ``bench/``; tests assert outcomes (the
  process is gone, the marker file never appeared, the result says it timed out).
"""

from __future__ import annotations

import ast
import functools
from pathlib import Path

import pytest
import sourcetrees

TESTS = Path(__file__).parents[1]
CLOCKS = {"monotonic", "perf_counter", "time", "monotonic_ns", "perf_counter_ns", "time_ns"}


@functools.cache
def _sources() -> dict[str, ast.Module]:
    # This module is left out: its checkers name what they look for. Parsed once for both
    # checks (the trees are only read).
    return {str(p.relative_to(TESTS)): sourcetrees.parse(p)
            for p in sorted(TESTS.rglob("*.py")) if p.name != Path(__file__).name}


def _spawns_here(sub: ast.AST) -> bool:
    """``[python, "-m", "agent", ...]``, ``shutil.which("agent")`` or tmux, at this node."""
    if isinstance(sub, ast.List | ast.Tuple):
        values = [e.value if isinstance(e, ast.Constant) else None for e in sub.elts]
        if any(a == "-m" and b == "agent" for a, b in zip(values, values[1:], strict=False)):
            return True
    if (isinstance(sub, ast.Call) and isinstance(sub.func, ast.Attribute)
            and sub.func.attr == "which" and sub.args
            and isinstance(sub.args[0], ast.Constant) and sub.args[0].value == "agent"):
        return True
    return isinstance(sub, ast.Constant) and sub.value == "tmux"  # ["tmux", "-L", ...]


#: What a definition does: whether it starts the agent or a terminal itself, the names it
#: uses, and the ``(module, name, bound as)`` of each ``from ... import`` in its body.
Facts = tuple[bool, set[str], list[tuple[str, str, str]]]


def _read(node: ast.AST) -> Facts:
    """A definition's facts, in one walk of its nodes (three walks made the check 70 % dearer)."""
    direct = False
    names: set[str] = set()
    imports: list[tuple[str, str, str]] = []
    for sub in sourcetrees.walk(node):
        if isinstance(sub, ast.Name):
            names.add(sub.id)
        elif isinstance(sub, ast.ImportFrom) and sub.module:
            imports.extend((sub.module, alias.name, alias.asname or alias.name)
                           for alias in sub.names)
        elif not direct and _spawns_here(sub):
            direct = True
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
        names |= {a.arg for a in node.args.args}  # fixtures are asked for by parameter name
    return direct, names, imports


def _definitions(tree: ast.Module):
    """Module-level functions and classes, and the methods of those classes."""
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            yield node, None
            if isinstance(node, ast.ClassDef):
                for item in node.body:
                    if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef):
                        yield item, node


def read_definitions(trees: dict[str, ast.Module]) -> dict[int, Facts]:
    """The facts of every definition, by the node's id: read once, so the fixed point of
    :func:`spawning_names` only joins sets."""
    return {id(node): _read(node) for tree in trees.values() for node, _ in _definitions(tree)}


def spawning_names(trees: dict[str, ast.Module],
                   facts: dict[int, Facts] | None = None) -> dict[str, set[str]]:
    """Per module: the names that, used in a test, mean a real agent process or terminal.

    A definition spawns when its body does, or uses a name that spawns: a helper of the same
    module, a name imported from a helper module that spawns, or a fixture that does.
    """
    if facts is None:
        facts = read_definitions(trees)
    modules = {rel.removesuffix(".py").replace("/", "."): rel for rel in trees}
    spawners: dict[str, set[str]] = {rel: set() for rel in trees}
    changed = True
    while changed:
        changed = False
        for rel, tree in trees.items():
            known = spawners[rel]
            for node in tree.body:  # `from clirun import run_agent`
                if isinstance(node, ast.ImportFrom) and node.module:
                    source = modules.get(node.module) or modules.get(f"e2e.{node.module}")
                    for alias in node.names:
                        if source and alias.name in spawners[source]:
                            name = alias.asname or alias.name
                            if name not in known:
                                known.add(name)
                                changed = True
            for node, _ in _definitions(tree):
                if node.name in known:
                    continue
                direct, used, imports = facts[id(node)]
                local = {name for module, original, name in imports
                         if original in spawners.get(modules.get(module) or "", set())}
                if direct or used & (known | local):
                    known.add(node.name)
                    changed = True
    return spawners


def _is_e2e_mark(node: ast.AST) -> bool:
    return any(isinstance(n, ast.Attribute) and n.attr == "e2e"
               and isinstance(n.value, ast.Attribute) and n.value.attr == "mark"
               for n in sourcetrees.walk(node))


def _module_marked(tree: ast.Module) -> bool:
    return any(isinstance(node, ast.Assign)
               and any(isinstance(t, ast.Name) and t.id == "pytestmark" for t in node.targets)
               and _is_e2e_mark(node.value) for node in tree.body)


def unmarked_spawning_tests(trees: dict[str, ast.Module]) -> list[str]:
    facts = read_definitions(trees)
    spawners = spawning_names(trees, facts)
    missing = []
    for rel, tree in trees.items():
        if not Path(rel).name.startswith("test_") or _module_marked(tree):
            continue
        for node, cls in _definitions(tree):
            if not node.name.startswith("test") or isinstance(node, ast.ClassDef):
                continue
            if any(_is_e2e_mark(d) for d in node.decorator_list + (
                    cls.decorator_list if cls else [])):
                continue
            direct, used, _ = facts[id(node)]
            if (rel.startswith("e2e/") or direct or node.name in spawners[rel]
                    or used & spawners[rel]):
                missing.append(f"{rel}::{node.name}")
    return missing


def test_every_test_that_runs_the_agent_process_is_marked_e2e():
    missing = unmarked_spawning_tests(_sources())
    assert not missing, "add @pytest.mark.e2e (docs/testing.md):\n" + "\n".join(missing)


def _is_clock_call(node: ast.AST) -> bool:
    """``time.monotonic()`` and its kin, or ``loop.time()``."""
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
        return False
    owner = node.func.value
    return node.func.attr in CLOCKS and (
        (isinstance(owner, ast.Name) and owner.id in {"time", "loop"})
        or (node.func.attr == "time" and isinstance(owner, ast.Call)))  # get_running_loop()


def _clock_difference(node: ast.AST, elapsed_names: set[str],
                      clock_names: frozenset[str] = frozenset()) -> bool:
    """A subtraction with a clock reading on either side (a call, or a name assigned one),
    or a name holding such a difference."""
    def reading(side: ast.AST) -> bool:
        return _is_clock_call(side) or isinstance(side, ast.Name) and side.id in clock_names

    for sub in sourcetrees.walk(node):
        if isinstance(sub, ast.BinOp) and isinstance(sub.op, ast.Sub) and (
                _is_clock_call(sub.left) or _is_clock_call(sub.right)
                or reading(sub.left) and reading(sub.right)):
            return True
        if isinstance(sub, ast.Name) and sub.id in elapsed_names:
            return True
    return False


def _hypothesis_deadline(node: ast.AST) -> bool:
    """``settings(..., deadline=N)`` with N not None: Hypothesis fails an example slower than N."""
    if not isinstance(node, ast.Call):
        return False
    name = getattr(node.func, "attr", getattr(node.func, "id", ""))
    return name in {"settings", "register_profile"} and any(
        k.arg == "deadline" and not (isinstance(k.value, ast.Constant) and k.value.value is None)
        for k in node.keywords)


def wall_clock_assertions(trees: dict[str, ast.Module]) -> list[str]:
    """Asserts on a difference of clock readings (elapsed time), and Hypothesis deadlines."""
    found = []
    for rel, tree in trees.items():
        # names assigned a clock reading itself (``t0 = time.monotonic()``): a difference
        # of two of them is elapsed time as much as ``time.monotonic() - t0`` is
        clocks = frozenset(t.id for node in sourcetrees.walk(tree)
                           if isinstance(node, ast.Assign) and _is_clock_call(node.value)
                           for t in node.targets if isinstance(t, ast.Name))
        elapsed: set[str] = set()
        for node in sourcetrees.walk(tree):
            if isinstance(node, ast.Assign) and _clock_difference(node.value, set(), clocks):
                elapsed |= {t.id for t in node.targets if isinstance(t, ast.Name)}
        for node in sourcetrees.walk(tree):
            if (isinstance(node, ast.Assert) and _clock_difference(node.test, elapsed, clocks)
                    or _hypothesis_deadline(node)):
                found.append(f"{rel}:{node.lineno}")
    return found


def test_no_test_asserts_on_wall_clock_time():
    found = wall_clock_assertions(_sources())
    assert not found, "wall-clock assertions (assert an outcome or move it to bench/):\n" + (
        "\n".join(found))


# The checkers themselves: each must catch what it exists to catch.

def _trees(files: dict[str, str]) -> dict[str, ast.Module]:
    return {rel: ast.parse(text) for rel, text in files.items()}


HELPER = "import subprocess, sys\n\ndef run_agent(args):\n" \
         "    return subprocess.run([sys.executable, '-m', 'agent', *args])\n"


@pytest.mark.parametrize("test_text, expected", [
    ("from clirun import run_agent\n\ndef test_a():\n    run_agent([])\n", ["test_x.py::test_a"]),
    ("from clirun import run_agent\n\ndef _go():\n    return run_agent([])\n\n"
     "def test_a():\n    _go()\n", ["test_x.py::test_a"]),
    ("import pytest\nfrom clirun import run_agent\n\n@pytest.fixture\ndef ran():\n"
     "    return run_agent([])\n\ndef test_a(ran):\n    pass\n", ["test_x.py::test_a"]),
    ("import subprocess, sys\n\nclass TestK:\n    def test_a(self):\n"
     "        subprocess.run([sys.executable, '-m', 'agent'])\n", ["test_x.py::test_a"]),
    ("import pytest\nfrom clirun import run_agent\n\n@pytest.mark.e2e\n"
     "def test_a():\n    run_agent([])\n", []),
    ("import pytest\nfrom clirun import run_agent\npytestmark = [pytest.mark.e2e]\n\n"
     "def test_a():\n    run_agent([])\n", []),
    ("from clirun import agent_env\n\ndef test_a():\n    agent_env(None)\n", []),
    ("def test_a():\n    from clirun import run_agent\n    run_agent([])\n",
     ["test_x.py::test_a"]),
])
def test_the_marker_checker(test_text, expected):
    helper = HELPER + "\ndef agent_env(home):\n    return {}\n"
    assert unmarked_spawning_tests(_trees({"clirun.py": helper,
                                           "test_x.py": test_text})) == expected


@pytest.mark.parametrize("text, caught", [
    ("import time\ns = time.monotonic()\nassert time.monotonic() - s < 3\n", True),
    ("import time\ns = time.perf_counter()\nf()\nelapsed = time.perf_counter() - s\n"
     "assert elapsed < 1.0\n", True),
    ("import asyncio\ns = asyncio.get_running_loop().time()\n"
     "assert asyncio.get_running_loop().time() - s < 1\n", True),
    ("from hypothesis import settings\n@settings(max_examples=9, deadline=500)\n"
     "def test_a():\n    pass\n", True),
    ("from hypothesis import settings\n@settings(max_examples=9, deadline=None)\n"
     "def test_a():\n    pass\n", False),
    ("import time\nd = time.monotonic() + 5\nassert time.monotonic() < d, 'bound'\n", False),
    ("import time\nnow = time.time()\nassert row['when'] <= now\n", False),
    ("import time\na = time.monotonic()\nf()\nb = time.monotonic()\nassert b - a < 0.5\n",
     True),
    ("import time\na = time.monotonic()\nb = time.monotonic()\ntook = b - a\n"
     "assert took < 0.5\n", True),
    ("import time\na = time.monotonic()\nassert len(rows) - a_count == 2\n", False),
])
def test_the_wall_clock_checker(text, caught):
    assert bool(wall_clock_assertions(_trees({"t.py": text}))) is caught
