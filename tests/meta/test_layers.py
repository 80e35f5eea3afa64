"""What may import what inside ``agent/``: the layers docs/architecture.md draws, enforced.

The table under "What may import what" in docs/architecture.md names, for each subpackage of
``agent/``, the packages it may import; this test reads that table (so the doc cannot drift
from the rule) and every import under ``agent/`` with ``ast``, nothing imported.  An import
counts wherever it runs, at module level or inside a function; one under ``if TYPE_CHECKING:``
never runs and is an annotation only.  No module of ``agent/`` may import ``plugins_builtin``.

The exceptions are :data:`EXCEPTIONS`, each with its reason, the same list the doc explains.
An exception that no longer matches an import fails the test, so the list only shrinks.

The same doc names every module of ``agent/`` in its package's section; a module it does not
name fails :func:`test_the_doc_names_every_module`.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import sourcetrees

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "architecture.md"
RULES_HEADING = "## What may import what"

#: (importing module, imported package) -> why this edge crosses the layers.
EXCEPTIONS: dict[tuple[str, str], str] = {
    ("agent.contract.hooks", "boot"): "the facade calls the plugins: lazy plugins are imported "
                                      "by boot.lazy_plugins, subcommand usage is checked by "
                                      "boot.cli_help, ConfigError raised (inside a function)",
    ("agent.contract.hooks", "loop"): "guards run through loop.guards' fail-closed runner; the "
                                      "session types it returns and raises (inside functions)",
    ("agent.contract.hooks", "state"): "plugins' table declarations are typed by state.schema",
    ("agent.contract.tools", "contain"): "ToolContext.resolve goes through the workspace jail "
                                         "(contain.paths), the one place that decides a path",
    ("agent.loop.session", "boot"): "a turn's first request awaits its provider's SDK import, "
                                    "which start-up began on a thread (boot.sdk_warmup)",
    ("agent.ui.startup", "boot"): "the UI's own start-up builds its run (boot.runtime) and saves "
                                  "the provider the setup dialog chose (boot.config)",
}


def allowed_edges(text: str) -> dict[str, set[str]]:
    """``package -> packages it may import``, from the doc's table."""
    section = text[text.index(RULES_HEADING):]
    section = section[:section.find("\n## ", 1)]
    rules: dict[str, set[str]] = {}
    for package, cell in re.findall(r"^\| `(\w+)` \| (.+?) \|$", section, re.M):
        rules[package] = set(re.findall(r"`(\w+)`", cell))
    return rules


def module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def package_of(module: str, root: Path) -> str | None:
    """The layer a module of ours belongs to: ``agent.loop.gate`` -> ``loop``; the package
    itself (``agent``, ``agent.__main__``) -> ``agent``; not ours -> None."""
    parts = module.split(".")
    if parts[0] != "agent":
        return None
    if len(parts) > 1 and (root / "agent" / parts[1]).is_dir():
        return parts[1]
    return "agent"


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def running_imports(tree: ast.AST):
    """Every import statement that can run: anywhere but under ``if TYPE_CHECKING:``."""
    skipped: set[int] = set()
    for node in sourcetrees.walk(tree):
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            skipped.update(id(inner) for stmt in node.body for inner in sourcetrees.walk(stmt))
    for node in sourcetrees.walk(tree):
        if isinstance(node, ast.Import | ast.ImportFrom) and id(node) not in skipped:
            yield node


def imported_modules(name: str, path: Path, node: ast.Import | ast.ImportFrom,
                     root: Path) -> list[str]:
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    if node.level:
        package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
        package = package[:len(package) - (node.level - 1)]
        base = ".".join(package + ([node.module] if node.module else []))
    else:
        base = node.module or ""
    found = []
    for alias in node.names:
        # `from agent.lib import frontmatter` imports the module agent.lib.frontmatter
        sub = root / f"{base}.{alias.name}".replace(".", "/")
        is_module = sub.with_suffix(".py").is_file() or (sub / "__init__.py").is_file()
        found.append(f"{base}.{alias.name}" if is_module else base)
    return list(dict.fromkeys(found))  # `from m import a, b` is one edge


def crossings(root: Path, rules: dict[str, set[str]]
              ) -> tuple[list[str], set[tuple[str, str]]]:
    """(problems, exceptions used) over every module under ``root``/agent."""
    problems: list[str] = []
    used: set[tuple[str, str]] = set()
    for path in sorted((root / "agent").rglob("*.py")):
        name = module_name(path, root)
        layer = package_of(name, root)
        assert layer is not None
        rel = path.relative_to(root).as_posix()
        for node in running_imports(sourcetrees.parse(path)):
            for target in imported_modules(name, path, node, root):
                if target.split(".")[0] == "plugins_builtin":
                    problems.append(f"{rel}:{node.lineno}: imports {target} (a plugin)")
                    continue
                other = package_of(target, root)
                if other is None or other == layer or other in rules.get(layer, set()):
                    continue
                if (name, other) in EXCEPTIONS:
                    used.add((name, other))
                    continue
                problems.append(f"{rel}:{node.lineno}: {layer} imports {target} ({other})")
    return problems, used


def test_the_doc_draws_a_rule_for_every_package():
    rules = allowed_edges(DOC.read_text(encoding="utf-8"))
    packages = {p.name for p in (ROOT / "agent").iterdir()
                if (p / "__init__.py").is_file()} | {"agent"}
    assert set(rules) == packages, "docs/architecture.md's table and agent/ disagree"
    assert rules["lib"] == set() and rules["contract"] == {"lib"}, "the table lost its rows"


def test_no_import_crosses_a_layer():
    rules = allowed_edges(DOC.read_text(encoding="utf-8"))
    problems, used = crossings(ROOT, rules)
    assert not problems, ("imports that cross the layers of docs/architecture.md ('What may "
                          "import what'); move the code, defer to a hook, or add a reasoned "
                          "exception:\n" + "\n".join(problems))
    stale = [f"{key}: {why}" for key, why in EXCEPTIONS.items() if key not in used]
    assert not stale, "exceptions that match no import any more; remove them:\n" + \
        "\n".join(stale)


def test_the_doc_names_every_module():
    text = DOC.read_text(encoding="utf-8")
    sections = dict(re.findall(r"^### `agent/(\w+)/`.*?\n(.*?)(?=^##)", text, re.M | re.S))
    missing = []
    for path in sorted((ROOT / "agent").rglob("*.py")):
        parts = path.relative_to(ROOT / "agent").parts
        if len(parts) == 1:  # agent/__init__.py, agent/__main__.py: the table of packages
            if f"`agent/{parts[0]}`" not in text:
                missing.append(path.relative_to(ROOT).as_posix())
            continue
        if parts[-1] == "__init__.py" and len(parts) == 2 and parts[0] not in ("ui", "testing"):
            continue  # a layer's __init__ holds a docstring only
        section = sections.get(parts[0], "")
        if f"`{parts[-1]}`" not in section and not re.search(
                rf"\b{re.escape(parts[-1])}\b", section):
            missing.append(path.relative_to(ROOT).as_posix())
    assert not missing, "modules docs/architecture.md does not name:\n" + "\n".join(missing)


def test_layer_inits_import_nothing():
    """A subpackage's ``__init__`` is a docstring: importing ``agent.loop`` costs nothing."""
    for init in sorted((ROOT / "agent").glob("*/__init__.py")):
        if init.parent.name in ("ui", "testing"):
            continue
        body = sourcetrees.parse(init).body
        assert len(body) == 1 and isinstance(body[0], ast.Expr), init


def unresolved_imports(root: Path, folders: tuple[str, ...]) -> list[str]:
    """Imports of ``agent``/``plugins_builtin`` modules that name no file under ``root``: all
    of them, under TYPE_CHECKING and inside functions too (a deferred import of a moved module
    fails only when its function first runs)."""
    problems = []
    for folder in folders:
        for path in sorted((root / folder).rglob("*.py")):
            rel = path.relative_to(root).as_posix()
            try:
                tree = sourcetrees.parse(path)
            except SyntaxError:
                continue  # a fixture that is broken on purpose
            for node in sourcetrees.walk(tree):
                if isinstance(node, ast.Import):
                    targets = [alias.name for alias in node.names]
                elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
                    targets = [node.module]
                else:
                    continue
                for target in targets:
                    if target.split(".")[0] not in ("agent", "plugins_builtin"):
                        continue
                    file = root / target.replace(".", "/")
                    if not (file.with_suffix(".py").is_file()
                            or (file / "__init__.py").is_file()):
                        problems.append(f"{rel}:{node.lineno}: {target}")
    return problems


def test_every_import_of_ours_names_a_module_that_exists():
    """A module that moved leaves no import behind, in the code, the tests or bench/."""
    problems = unresolved_imports(ROOT, ("agent", "plugins_builtin", "tests", "bench"))
    assert not problems, "imports of modules that do not exist:\n" + "\n".join(problems)


def test_the_resolver_finds_an_import_of_a_moved_module(tmp_path):
    root = _tree(tmp_path, {
        "agent/loop/streaming.py": "X = 1\n",
        "agent/ui/screen.py": "def draw():\n    from agent.streaming import X\n"
                              "    from agent.loop.streaming import X\n"
                              "    import agent.loop\n"})
    assert unresolved_imports(root, ("agent",)) == ["agent/ui/screen.py:2: agent.streaming"]


# The checker itself: it must see the edges it exists to catch, and only those.

def _tree(tmp_path: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        path = tmp_path / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    for package in ("agent", "agent/contract", "agent/loop"):
        (tmp_path / package).mkdir(parents=True, exist_ok=True)
        (tmp_path / package / "__init__.py").touch()
    return tmp_path


RULES = {"agent": {"contract", "loop"}, "contract": set(), "loop": {"contract"}}


def test_the_checker_finds_a_forbidden_edge_wherever_it_runs(tmp_path):
    root = _tree(tmp_path, {
        "agent/loop/run.py": "X = 1\n",
        "agent/contract/a.py": "from agent.loop import run\n",
        "agent/contract/b.py": "def later():\n    import agent.loop.run\n",
        "agent/contract/c.py": "try:\n    from ..loop.run import X\nexcept ImportError:\n"
                               "    X = 0\n",
        "agent/contract/d.py": "import plugins_builtin.bash\n"})
    problems, _ = crossings(root, RULES)
    assert [p.split(":")[0] for p in problems] == [
        "agent/contract/a.py", "agent/contract/b.py", "agent/contract/c.py",
        "agent/contract/d.py"]


def test_the_checker_allows_what_the_rules_allow(tmp_path):
    root = _tree(tmp_path, {
        "agent/contract/tools.py": "X = 1\n",
        "agent/loop/gate.py": "from agent.contract import tools\nfrom . import other\n",
        "agent/loop/other.py": "import json\n",
        "agent/contract/e.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                               "    from agent.loop.gate import Gate\n",
        "agent/__init__.py": "from agent.loop.gate import tools\n"})
    assert crossings(root, RULES) == ([], set())
