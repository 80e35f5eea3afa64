"""Registry plugin manifests: data that can only refuse tool calls and add prompt text.

A manifest is JSON, validated strictly; anything not in the schema is refused, never ignored::

    {
      "name": "no-secrets-dir",
      "description": "Keep the agent out of secrets/",
      "appendix": "Never write under secrets/; ask the user instead.",
      "deny": [
        {"tools": ["write_file"], "pathPattern": "secrets/*",
         "reason": "secrets/ is managed by the ops team"}
      ]
    }

Limits: name ``^[a-z0-9][a-z0-9-]*$`` up to 40 characters; description up to 300 (one line);
appendix up to 2,000; 1 to 50 deny rules; each rule names 1 to 30 tools (globs allowed), gives
a reason (up to 300) and at least one of ``pathPattern`` / ``commandPattern``, each a glob of
up to 200 characters (see :mod:`.globs`).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from .globs import pattern_problem

NAME_RE = re.compile(r"^[a-z0-9][a-z0-9-]*$")
MAX_NAME = 40
MAX_DESCRIPTION = 300
MAX_APPENDIX = 2000
MAX_RULES = 50
MAX_TOOLS = 30
MAX_REASON = 300
MAX_TOOL_NAME = 100
TOOL_NAME_RE = re.compile(r"^[A-Za-z0-9_.*?-]+$")

TOP_KEYS = frozenset({"name", "description", "appendix", "deny"})
RULE_KEYS = frozenset({"tools", "pathPattern", "commandPattern", "reason"})


class ManifestError(ValueError):
    """A manifest that breaks the schema; ``problems`` lists every violation found."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__("; ".join(problems))
        self.problems = problems


@dataclass(frozen=True)
class DenyRule:
    """Refuse calls of ``tools`` whose paths match ``path_pattern`` or whose commands match
    ``command_pattern`` (either may be None, not both)."""

    tools: tuple[str, ...]
    reason: str
    path_pattern: str | None = None
    command_pattern: str | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"tools": list(self.tools)}
        if self.path_pattern is not None:
            out["pathPattern"] = self.path_pattern
        if self.command_pattern is not None:
            out["commandPattern"] = self.command_pattern
        out["reason"] = self.reason
        return out


@dataclass(frozen=True)
class Manifest:
    name: str
    description: str
    deny: tuple[DenyRule, ...]
    appendix: str = ""

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name, "description": self.description}
        if self.appendix:
            out["appendix"] = self.appendix
        out["deny"] = [r.to_json() for r in self.deny]
        return out

    def dumps(self) -> str:
        """The canonical JSON written to disk on install."""
        return json.dumps(self.to_json(), indent=2, ensure_ascii=False) + "\n"


def name_problem(name: object) -> str | None:
    """Why ``name`` is not a valid registry name (skills and plugins share the rule)."""
    if not isinstance(name, str):
        return "must be a string"
    if len(name) > MAX_NAME:
        return f"is {len(name)} characters long; the limit is {MAX_NAME}"
    if not NAME_RE.match(name):
        return "must be lower-case letters, digits and dashes, starting with a letter or digit"
    return None


def _reject_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    seen: dict[str, Any] = {}
    for key, value in pairs:
        if key in seen:
            raise ManifestError([f"the key {key!r} appears twice in one object"])
        seen[key] = value
    return seen


def _reject_constant(name: str) -> Any:
    raise ManifestError([f"{name} is not valid JSON"])


def loads(text: str | bytes) -> Any:
    """Strict JSON: UTF-8, no duplicate keys, no NaN/Infinity."""
    if isinstance(text, bytes):
        try:
            text = text.decode("utf-8")
        except UnicodeDecodeError:
            raise ManifestError(["the manifest is not UTF-8 text"]) from None
    try:
        return json.loads(text, object_pairs_hook=_reject_duplicates,
                          parse_constant=_reject_constant)
    except json.JSONDecodeError as exc:
        raise ManifestError([f"not valid JSON: {exc}"]) from None
    except RecursionError:
        raise ManifestError(["not valid JSON: nested too deeply"]) from None


def parse_manifest(text: str | bytes, expected_name: str | None = None) -> Manifest:
    """Parse and validate manifest JSON; raises :class:`ManifestError` listing every problem."""
    return validate(loads(text), expected_name)


def _text(value: Any, where: str, limit: int, problems: list[str], *,
          one_line: bool = True) -> str:
    if not isinstance(value, str):
        problems.append(f"{where} must be a string")
        return ""
    if not value.strip():
        problems.append(f"{where} must not be empty")
    elif len(value) > limit:
        problems.append(f"{where} is {len(value)} characters long; the limit is {limit}")
    bad = [c for c in value if (ord(c) < 32 and not (not one_line and c in "\n\t"))
           or ord(c) == 127]
    if bad:
        problems.append(f"{where} contains control characters"
                        + ("" if not one_line else " (it must be one line)"))
    return value


def validate(data: Any, expected_name: str | None = None) -> Manifest:
    """Check ``data`` (decoded JSON) against the schema; raises :class:`ManifestError`."""
    problems: list[str] = []
    if not isinstance(data, dict):
        raise ManifestError(["the manifest must be a JSON object"])
    unknown = sorted(set(data) - TOP_KEYS)
    if unknown:
        problems.append(f"unknown keys: {', '.join(unknown)} (a manifest may only have "
                        "name, description, appendix and deny; it cannot carry code)")
    for key in ("name", "description", "deny"):
        if key not in data:
            problems.append(f"{key} is required")
    name = data.get("name", "")
    if "name" in data:
        why = name_problem(name)
        if why:
            problems.append(f"name {why}")
        elif expected_name is not None and name != expected_name:
            problems.append(f"name is {name!r} but the registry lists it as {expected_name!r}")
    description = _text(data.get("description", ""), "description", MAX_DESCRIPTION,
                        problems) if "description" in data else ""
    appendix = ""
    if "appendix" in data:
        appendix = _text(data["appendix"], "appendix", MAX_APPENDIX, problems, one_line=False)
    rules: list[DenyRule] = []
    if "deny" in data:
        deny = data["deny"]
        if not isinstance(deny, list):
            problems.append("deny must be a list of rules")
        elif not 1 <= len(deny) <= MAX_RULES:
            problems.append(f"deny has {len(deny)} rules; it needs 1 to {MAX_RULES}")
        else:
            for i, raw in enumerate(deny):
                rule = _rule(raw, f"deny[{i}]", problems)
                if rule is not None:
                    rules.append(rule)
    if problems:
        raise ManifestError(problems)
    return Manifest(str(name), description, tuple(rules), appendix)


def _rule(raw: Any, where: str, problems: list[str]) -> DenyRule | None:
    before = len(problems)
    if not isinstance(raw, dict):
        problems.append(f"{where} must be an object")
        return None
    unknown = sorted(set(raw) - RULE_KEYS)
    if unknown:
        problems.append(f"{where} has unknown keys: {', '.join(unknown)}")
    tools = raw.get("tools")
    if not isinstance(tools, list) or not 1 <= len(tools) <= MAX_TOOLS:
        problems.append(f"{where}.tools must be a list of 1 to {MAX_TOOLS} tool names")
        tools = []
    for j, tool in enumerate(tools):
        if (not isinstance(tool, str) or not TOOL_NAME_RE.match(tool)
                or len(tool) > MAX_TOOL_NAME):
            problems.append(f"{where}.tools[{j}] must be a tool name or a glob of one "
                            "(letters, digits, _ . - * ?)")
    if "reason" not in raw:
        problems.append(f"{where}.reason is required")
        reason = ""
    else:
        reason = _text(raw["reason"], f"{where}.reason", MAX_REASON, problems)
    patterns: dict[str, str | None] = {"pathPattern": None, "commandPattern": None}
    for key in patterns:
        if key in raw:
            why = pattern_problem(raw[key])
            if why:
                problems.append(f"{where}.{key} {why}")
            else:
                patterns[key] = raw[key]
    if "pathPattern" not in raw and "commandPattern" not in raw:
        problems.append(f"{where} needs a pathPattern or a commandPattern")
    if len(problems) > before:
        return None
    return DenyRule(tuple(tools), reason, patterns["pathPattern"], patterns["commandPattern"])
