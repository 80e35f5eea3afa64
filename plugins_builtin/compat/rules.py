"""Claude Code's permission rules (``Bash(npm run test:*)``, ``Read(./.env)``,
``Edit(src/**)``, ``WebFetch(domain:example.com)``, ``mcp__server__tool``) as ours.

A rule becomes ``(tool, pattern)`` pairs over our tools' subjects (the command, the paths,
the URLs).  Paths are gitignore-style in Claude Code: ``./x`` and ``/x`` are relative to the
project, ``//x`` absolute, ``~/x`` in the home directory, and a pattern without a slash
matches at any depth; ``**`` is our ``*`` (which crosses ``/`` already).  A rule that cannot
be said in our terms is returned as a problem, never approximated by a wider one.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field

#: Claude Code's tool names -> the tools of ours their rules and matchers cover
TOOL_NAMES: dict[str, tuple[str, ...]] = {
    "Bash": ("bash",),
    "Read": ("read_file", "read_many_files"),
    "Edit": ("write_file", "edit_file", "multi_edit", "apply_patch"),
    "MultiEdit": ("write_file", "edit_file", "multi_edit", "apply_patch"),
    "Write": ("write_file", "edit_file", "multi_edit", "apply_patch"),
    "Glob": ("glob",),
    "Grep": ("grep",),
    "LS": ("list_dir",),
    "WebFetch": ("web_fetch",),
    "Task": ("task",),
}
#: the tools whose rules are about paths
PATH_TOOLS = frozenset({"Read", "Edit", "MultiEdit", "Write", "Glob", "Grep", "LS"})

_RULE = re.compile(r"^(?P<tool>[A-Za-z_][A-Za-z0-9_]*)(?:\((?P<spec>.*)\))?$", re.S)
_MCP_SERVER_NAME = re.compile(r"[^A-Za-z0-9-]")


@dataclass
class Translated:
    """Rules by decision as ``(tool, pattern)`` pairs, and the rules that could not be
    translated (one line each, saying why)."""

    allow: list[tuple[str, str]] = field(default_factory=list)
    ask: list[tuple[str, str]] = field(default_factory=list)
    deny: list[tuple[str, str]] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    #: rule as written -> what it became, for ``agent import`` and the docs
    mapping: list[tuple[str, str, list[tuple[str, str]]]] = field(default_factory=list)

    def extend(self, other: Translated) -> None:
        for which in ("allow", "ask", "deny", "problems", "mapping"):
            getattr(self, which).extend(getattr(other, which))

    @property
    def count(self) -> int:
        return len(self.allow) + len(self.ask) + len(self.deny)


def server_name(name: str) -> str:
    """An MCP server's name as ours must be (letters, digits, hyphens; no ``__``)."""
    fixed = _MCP_SERVER_NAME.sub("-", name).strip("-")
    while "--" in fixed:
        fixed = fixed.replace("--", "-")
    return fixed or "server"


def _path_patterns(spec: str, home: str) -> list[str]:
    text = spec.strip()
    if not text:
        raise ValueError("an empty path")
    if text.startswith("//"):
        text = text[1:]  # absolute
    elif text.startswith("~/"):
        text = os.path.join(home, text[2:])
    elif text.startswith("./"):
        text = text[2:]
    elif text.startswith("/"):
        text = text[1:]  # relative to the project (the settings file's root)
    elif "/" not in text.rstrip("/"):
        # gitignore: a name without a slash matches at any depth
        name = text.replace("**", "*")
        return [name, f"*/{name}"]
    if text.endswith("/"):
        text += "**"
    # "**/" is zero or more directories: every spelling with and without each one
    out = [""]
    for i, piece in enumerate(text.split("**/")):
        if i == 0:
            out = [piece]
            continue
        out = [o + "*/" + piece for o in out] + [o + piece for o in out]
    return list(dict.fromkeys(o.replace("**", "*") for o in out))


def _domain_patterns(domain: str) -> list[str]:
    host = domain.strip().lower()
    if not host or any(c in host for c in "/?#@ "):
        raise ValueError(f"{domain!r} is not a host name")
    out = []
    for scheme in ("https", "http"):
        out += [f"{scheme}://{host}", f"{scheme}://{host}/*", f"{scheme}://{host}:*"]
    return out


def _bash_patterns(spec: str, wide: bool) -> list[str]:
    """``npm run test:*`` (Claude Code's prefix form): for an allow or ask, the command and
    the command with arguments; for a deny, anything that starts with it (a deny may only be
    as wide or wider than the original, an allow as narrow or narrower)."""
    text = spec.strip()
    if not text or text in ("*", ":*"):
        return ["*"]
    if text.endswith(":*"):
        prefix = text[:-2].rstrip()
        if not prefix:
            return ["*"]
        return [prefix + "*"] if wide else [prefix, f"{prefix} *"]
    return [text]


def translate_rule(rule: str, home: str = "~", *, wide: bool = False
                   ) -> list[tuple[str, str]]:
    """One rule as ``(tool, pattern)`` pairs (``wide`` for a deny: where the two syntaxes
    differ, the pattern errs wider); raises ValueError saying why it cannot be."""
    text = str(rule).strip()
    if text.startswith("mcp__"):
        parts = text.split("__")
        if len(parts) < 2 or not parts[1]:
            raise ValueError("an MCP rule names a server: mcp__server or mcp__server__tool")
        server = server_name(parts[1])
        tool = "__".join(parts[2:])
        if not tool or tool == "*":
            return [(f"mcp__{server}__*", "*")]
        return [(f"mcp__{server}__{tool}", "*")]
    m = _RULE.match(text)
    if m is None:
        raise ValueError("not a rule of the form Tool or Tool(specifier)")
    name, spec = m.group("tool"), m.group("spec")
    tools = TOOL_NAMES.get(name)
    if tools is None:
        raise ValueError(f"{name} has no counterpart among our tools")
    if spec is None or spec.strip() in ("", "*"):
        return [(t, "*") for t in tools]
    if name == "Bash":
        patterns = _bash_patterns(spec, wide)
    elif name in PATH_TOOLS:
        patterns = _path_patterns(spec, home)
    elif name == "WebFetch":
        if not spec.startswith("domain:"):
            raise ValueError("WebFetch rules are translated only as WebFetch(domain:HOST)")
        patterns = _domain_patterns(spec[len("domain:"):])
    else:
        raise ValueError(f"{name}({spec}) has a specifier our {tools[0]} rules cannot express")
    return [(t, p) for t in tools for p in patterns]


def translate(permissions: object, where: str, home: str = "~") -> Translated:
    """The ``permissions`` table of one settings file (``allow``/``ask``/``deny`` lists)."""
    out = Translated()
    if not isinstance(permissions, dict):
        return out
    for decision in ("allow", "ask", "deny"):
        rules = permissions.get(decision) or []
        if not isinstance(rules, list):
            out.problems.append(f"{where}: permissions.{decision} is not a list; ignored")
            continue
        for rule in rules:
            try:
                pairs = translate_rule(str(rule), home, wide=decision == "deny")
            except ValueError as exc:
                out.problems.append(f"{where}: {decision} rule {rule!r} not used: {exc}")
                continue
            getattr(out, decision).extend(pairs)
            out.mapping.append((decision, str(rule), pairs))
    for key in permissions:
        if key not in ("allow", "ask", "deny"):
            out.problems.append(f"{where}: permissions.{key} is not used (no counterpart)")
    return out
