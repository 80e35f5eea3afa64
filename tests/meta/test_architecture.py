"""The core knows no feature: a meta-test over the source tree.

1. No module under ``agent/`` holds a builtin plugin's name, a builtin tool's name or a
   plugin's ``session.data`` key as a string literal (exactly, or as a ``NAME__``/``NAME:``
   prefix such as ``"mcp__"``); docstrings are prose and not checked.
2. No builtin plugin imports a core module outside the plugin API listed in
   docs/architecture.md ("The plugin API").

Words that name a core concept rather than a plugin are allowed, each entry with its reason
(:data:`ALLOWED`).  What still has to leave ``agent/`` is in :data:`TEMPORARY`, each entry
naming the area that removes it.  An entry that no longer matches anything fails the test,
so both lists can only shrink with the code, never rot.
"""

from __future__ import annotations

import ast
import fnmatch
import re
from importlib.metadata import entry_points
from pathlib import Path

import pytest
import sourcetrees

from agent.testing import make_boot

ROOT = Path(__file__).resolve().parents[2]

#: (file glob relative to the checkout, literal) -> why the core may say it.
ALLOWED: dict[tuple[str, str], str] = {
    ("agent/*", "core"): "the essential core plugin (plugins.ESSENTIAL), the plugin core options "
                         "are tagged with, and the always-offered `core` tool set",
    ("agent/*", "agent"): "the program's own name (prog, log prefixes, 'agent: ...' messages) "
                          "and its `agent` config key and session column; the agents plugin "
                          "uses the same word for its session.data key",
    ("agent/*", "agent:"): "the 'agent: ' prefix of the program's own messages",
    ("agent/*", "ask"): "the gate's third decision (Verdict.ask) and the approval style",
    ("agent/*", "budget"): "the error kind and done reason of BudgetExceeded (events, headless "
                           "exit code 4): a core contract any spending plugin raises",
    ("agent/*", "markdown"): "a block kind (Block('markdown', ...)); the renderer is a plugin",
    ("agent/*", "diff"): "a block kind (the diff view), and git's diff subcommand",
    ("agent/shell/wrappers.py", "acp"): "taskset's short options (-a -c -p), not the plugin",
    ("agent/loop/gate.py", "guard"): "the gate's guard stage (which stage decided a call)",
    ("agent/loop/allow_hint.py", "guard"): "the gate's guard stage (who refused a call)",
    ("agent/loop/guards.py", "guard:"): "the guard stage's label in a verdict's source",
    ("agent/shell/*.py", "git"): "a program's name in shell parsing",
    ("agent/shell/*.py", "bash"): "a shell's name in shell parsing",
    ("agent/shell/*.py", "time"): "the time wrapper in shell parsing",
    ("agent/shell/*.py", "format"): "git's format options / a wrapper in shell parsing",
    ("agent/shell/*.py", "prune"): "git's prune subcommand in shell parsing",
    ("agent/shell/*.py", "bell"): "a program's name in shell parsing",
    ("agent/shell/*.py", "grep"): "a program's name in shell parsing",
    ("agent/shell/*.py", "compat"): "awk's --compat option in shell parsing",
    ("agent/contain/safegit.py", "git"): "the git program the core hardens",
    ("agent/boot/doctor.py", "git"): "the git program doctor checks for",
    ("agent/boot/config.py", "git"): "the `git` tool set in the default tool_sets (a tool set, "
                                "declared by tools, not the plugin)",
    ("agent/ui/*", "undo"): "the prompt editor's own undo of typing",
    ("agent/loop/permissions.py", "write_file"): "rules keyed write_file judge every file a "
                                                 "command writes: a documented rule name "
                                                 "(docs/permissions.md)",
    ("agent/loop/user_command.py", "bash"): "`!command` is a call of the shell tool by "
                                            "definition (every agent's shell escape); when "
                                            "no plugin provides it the UI says so",
    ("agent/ui/app.py", "remember"): "`#note` runs the /remember command where a plugin "
                                     "provides one (Claude Code's habit); otherwise `#` starts "
                                     "an ordinary prompt",
    ("agent/loop/permissions.py", "bash"): "shell command rules are written bash:PATTERN, a "
                                           "documented rule name (docs/permissions.md)",
    ("agent/contract/toolschema.py", "openai"): "one of the two JSON-schema dialects the "
                                                "normaliser writes (a wire format, not the "
                                                "plugin)",
    ("agent/contract/toolschema.py", "anthropic"): "the other JSON-schema dialect",
    ("agent/boot/plugin_cache.py", "files"): "a field of the plugin cache file",
    ("agent/boot/plugin_cache.py", "format"): "a field of the plugin cache file",
    ("agent/ui/startup.py", "read_only"): "the store's read_only attribute",
    ("agent/boot/cli_help.py", "commands:"): "the heading of --help's subcommand list",
    ("agent/testing/*", "openai"): "the test helpers build sessions over the shipped provider "
                                   "plugin against a local fake server; a wire format's name",
    ("agent/testing/fakeprovider.py", "anthropic"): "the fake server's wire format name",
    ("agent/testing/fakeprovider.py", "instructions"): "a field of the Responses API's JSON",
    ("agent/testing/fakeprovider.py", "format"): "a field of the Responses API's JSON",
    ("agent/contain/secrets.py", "secrets"): "a secret file's name (secrets.json), in the policy",
}

#: Literals still in agent/ that another change removes: (file glob, literal) -> who and how.
TEMPORARY: dict[tuple[str, str], str] = {
}

#: Core modules a builtin may import, as docs/architecture.md lists them.
API_HEADING = "## The plugin API"

#: Imports by builtins outside the documented API that another change removes.
TEMPORARY_IMPORTS: dict[tuple[str, str], str] = {
}


def builtin_plugins() -> set[str]:
    return {ep.name for ep in entry_points(group="agent.plugins")
            if ep.value.startswith("plugins_builtin")}


def builtin_tools(tmp_path: Path) -> set[str]:
    ws = tmp_path / "ws"
    ws.mkdir()
    config, hooks = make_boot(ws, tmp_path / "home", flags={"tool_sets": ["*"]})
    try:
        return {name for name, tool in hooks.tools(config).items()
                if (tool.plugin or "") in builtin_plugins()}
    finally:
        hooks.unconfigure(config)


def _is_session_data(node: ast.AST) -> bool:
    """``<...session>.data`` or ``<session-ish name>.data``."""
    if not (isinstance(node, ast.Attribute) and node.attr == "data"):
        return False
    owner = node.value
    name = owner.attr if isinstance(owner, ast.Attribute) else getattr(owner, "id", "")
    return bool(re.search(r"session|parent|root|child", name or ""))


def session_data_keys() -> set[str]:
    """Keys the builtins keep in ``session.data``: subscripts, get/setdefault/pop calls, and
    ``*_KEY = "..."`` constants."""
    keys: set[str] = set()
    for path in (ROOT / "plugins_builtin").rglob("*.py"):
        for node in sourcetrees.walk(sourcetrees.parse(path)):
            if isinstance(node, ast.Subscript) and _is_session_data(node.value) \
                    and isinstance(node.slice, ast.Constant) and isinstance(node.slice.value, str):
                keys.add(node.slice.value)
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                    and node.func.attr in ("get", "setdefault", "pop") \
                    and _is_session_data(node.func.value) and node.args \
                    and isinstance(node.args[0], ast.Constant) \
                    and isinstance(node.args[0].value, str):
                keys.add(node.args[0].value)
            elif isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant) \
                    and isinstance(node.value.value, str) \
                    and any(isinstance(t, ast.Name) and t.id.endswith("DATA_KEY")
                            for t in node.targets):
                keys.add(node.value.value)
    return keys


def _docstrings(tree: ast.AST) -> set[int]:
    found = set()
    for node in sourcetrees.walk(tree):
        if isinstance(node, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) \
                and node.body and isinstance(node.body[0], ast.Expr) \
                and isinstance(node.body[0].value, ast.Constant):
            found.add(id(node.body[0].value))
    return found


def literal_hits(names: set[str], root: Path = ROOT) -> list[tuple[str, int, str]]:
    """Every (file, line, literal) in ``root``/agent naming one of ``names``."""
    prefixes = tuple(f"{n}{sep}" for n in names for sep in ("__", ":"))
    hits = []
    for path in sorted((root / "agent").rglob("*.py")):
        rel = path.relative_to(root).as_posix()
        tree = sourcetrees.parse(path)
        docs = _docstrings(tree)
        for node in sourcetrees.walk(tree):
            if not (isinstance(node, ast.Constant) and isinstance(node.value, str)) \
                    or id(node) in docs:
                continue
            value = node.value
            if value in names:
                hits.append((rel, node.lineno, value))
            elif value.startswith(prefixes):
                hits.append((rel, node.lineno, next(p for p in prefixes if value.startswith(p))))
    return hits


def _covering(entries: dict[tuple[str, str], str], rel: str, literal: str
              ) -> tuple[str, str] | None:
    for key in entries:
        pattern, word = key
        if word == literal and fnmatch.fnmatch(rel, pattern):
            return key
    return None


@pytest.fixture(scope="module")
def names(tmp_path_factory: pytest.TempPathFactory) -> dict[str, set[str]]:
    return {"plugin": builtin_plugins(), "tool": builtin_tools(tmp_path_factory.mktemp("t")),
            "session.data key": session_data_keys()}


def test_the_scan_sees_what_it_must_catch(names):
    """The lists the check is made of are real (an empty list would pass everything)."""
    assert {"memory", "todos", "mcp", "subagents", "core"} <= names["plugin"]
    assert {"read_file", "bash", "todo_write", "remember", "task"} <= names["tool"]
    assert {"todos", "subagents", "prune"} <= names["session.data key"]



def test_the_scan_finds_literals_and_skips_docstrings(tmp_path):
    (tmp_path / "agent" / "ui").mkdir(parents=True)
    (tmp_path / "agent" / "ui" / "fmt.py").write_text(
        '"""Mentions todo_write in prose."""\n'
        'def line(call):\n'
        '    """todo_write again, in a docstring."""\n'
        '    if call.name == "todo_write":\n'
        '        return call.session.data.get("todos")\n'
        '    return "mcp__" + call.name, f"tool:{call.name}"\n')
    assert literal_hits({"todo_write", "todos", "mcp"}, tmp_path) == [
        ("agent/ui/fmt.py", 4, "todo_write"), ("agent/ui/fmt.py", 5, "todos"),
        ("agent/ui/fmt.py", 6, "mcp__")]


def test_the_core_names_no_builtin_plugin_tool_or_session_key(names):
    every = set().union(*names.values())
    problems, used = [], set()
    for rel, line, literal in literal_hits(every):
        key = _covering(ALLOWED, rel, literal) or _covering(TEMPORARY, rel, literal)
        if key is None:
            kinds = [kind for kind, found in names.items()
                     if literal.rstrip(":_") in found]
            problems.append(f"{rel}:{line}: {literal!r} ({', '.join(kinds)})")
        else:
            used.add(key)
    assert not problems, ("the core names a feature; move the knowledge into the plugin (a "
                          "hook, a Tool/ProviderSpec field) or, for a core concept, add an "
                          "ALLOWED entry with its reason:\n" + "\n".join(problems))
    stale = [f"{k}: {why}" for k, why in {**ALLOWED, **TEMPORARY}.items() if k not in used]
    assert not stale, "allowlist entries that match nothing any more; remove them:\n" + \
        "\n".join(stale)


def documented_api() -> set[str]:
    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    section = text[text.index(API_HEADING):]
    section = section[:section.find("\n## ", 1)] if "\n## " in section[1:] else section
    modules: set[str] = set()
    for cell in re.findall(r"^\| (`agent[^|]*) \|", section, re.M):
        modules.update(re.findall(r"`(agent(?:\.[a-z_]+)*)`", cell))
    return modules


def _is_module(dotted: str) -> bool:
    path = ROOT / dotted.replace(".", "/")
    return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()


def builtin_imports() -> list[tuple[str, int, str]]:
    found = []
    for path in sorted((ROOT / "plugins_builtin").rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        for node in sourcetrees.walk(sourcetrees.parse(path)):
            modules: list[str] = []
            if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                # `from agent.lib import frontmatter` imports the module agent.lib.frontmatter
                modules = [f"{node.module}.{a.name}" if _is_module(f"{node.module}.{a.name}")
                           else node.module for a in node.names]
            elif isinstance(node, ast.Import):
                modules = [a.name for a in node.names]
            found += [(rel, node.lineno, m) for m in modules
                      if m == "agent" or m.startswith("agent.")]
    return found


def test_builtins_import_only_the_documented_plugin_api():
    api = documented_api()
    assert {"agent", "agent.contract.tools", "agent.state.store"} <= api, \
        "docs/architecture.md lost its list"
    problems, used = [], set()
    for rel, line, module in builtin_imports():
        if module in api:
            continue
        if (rel, module) in TEMPORARY_IMPORTS:
            used.add((rel, module))
            continue
        problems.append(f"{rel}:{line}: imports {module}")
    assert not problems, ("builtins reach core modules outside the plugin API "
                          "(docs/architecture.md, 'The plugin API'):\n" + "\n".join(problems))
    stale = [f"{k}: {why}" for k, why in TEMPORARY_IMPORTS.items() if k not in used]
    assert not stale, "TEMPORARY_IMPORTS entries that match nothing any more:\n" + \
        "\n".join(stale)
    for module in api:  # every documented module exists
        assert (ROOT / (module.replace(".", "/") + ".py")).is_file() or \
            (ROOT / module.replace(".", "/") / "__init__.py").is_file(), module


def test_builtin_plugin_modules_are_named_after_their_entry_points():
    """``--disable NAME``, ``agent plugins`` and the source tree use one name per plugin."""
    points = [ep for ep in entry_points(group="agent.plugins")
              if ep.value.startswith("plugins_builtin")]
    assert len(points) > 20
    wrong = [f"{ep.name} = {ep.value}" for ep in points
             if ep.value != f"plugins_builtin.{ep.name}"]
    assert not wrong, "entry points whose module has another name:\n" + "\n".join(wrong)
    for ep in points:
        module = ROOT / "plugins_builtin" / ep.name
        assert module.with_suffix(".py").is_file() or (module / "__init__.py").is_file(), ep
