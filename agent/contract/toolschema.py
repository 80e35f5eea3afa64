"""Tool input schemas made sendable: what each provider accepts as a tool's parameters.

Tools from MCP servers (and third-party plugins) carry whatever JSON Schema their authors
wrote; the providers accept a narrower shape and reject the *whole request* when one tool's
schema is outside it (``tools.37.custom.input_schema: ...``). :func:`for_provider` rewrites a
schema into that shape, or raises :class:`SchemaRejected` naming why, so the caller can leave
that one tool out instead of failing every turn.

What the providers enforce on a tool's parameters (OpenAI chat completions and responses,
non-strict function calling; Anthropic messages):

- the top level is ``{"type": "object", ...}``: no top-level ``anyOf``/``oneOf``/``allOf``,
  ``not``, ``enum`` or ``const``, and no other type;
- (Anthropic) property names match ``^[a-zA-Z0-9_.-]{1,64}$``.

The rewrite: local ``$ref`` (``#/$defs/...``, ``#/definitions/...``) inlined, a cycle cut off
after :data:`MAX_REF_DEPTH` levels (the deeper part accepts anything); remote references
become "anything"; top-level combinators folded into one object schema (``allOf``: properties
and ``required`` merged; ``anyOf``/``oneOf``: properties merged, only what every branch
requires stays required, and the description says which alternatives exist); schema
bookkeeping keywords (``$schema``, ``$id``, ``$comment``, ``$anchor``…) dropped. The model
still sees every argument; the server still validates what it receives.
"""

from __future__ import annotations

import copy
import json
import re
from typing import Any

#: How many times one ``$ref`` may be expanded inside itself before it is cut off.
MAX_REF_DEPTH = 3
#: The largest schema sent (as JSON); a bigger one costs every request that much.
MAX_SCHEMA_BYTES = 64_000
DIALECTS = ("openai", "anthropic")

_ANTHROPIC_PROPERTY = re.compile(r"^[a-zA-Z0-9_.-]{1,64}$")
_BOOKKEEPING = ("$schema", "$id", "$comment", "$anchor", "$dynamicAnchor", "$dynamicRef",
                "$vocabulary")
_TOP_LEVEL_ONLY = ("not", "enum", "const", "if", "then", "else")
_COMBINATORS = ("allOf", "anyOf", "oneOf")


class SchemaRejected(ValueError):
    """The schema cannot be made into one the provider accepts; the message says why."""


def for_provider(schema: Any, dialect: str) -> dict[str, Any]:
    """``schema`` rewritten into the shape ``dialect`` (``openai`` or ``anthropic``) accepts.

    Never changes its argument. Raises :class:`SchemaRejected` when no such shape exists
    (a top level that is not an object, property names the provider refuses, a schema too
    large to send)."""
    if dialect not in DIALECTS:
        raise ValueError(f"unknown schema dialect {dialect!r}")
    if schema is None or schema == {}:
        return {"type": "object", "properties": {}}
    if not isinstance(schema, dict):
        raise SchemaRejected(f"the input schema is a {type(schema).__name__}, not an object")
    defs = _definitions(schema)
    body: dict[str, Any] = _inline(copy.deepcopy(schema), defs, {})
    body = _fold_top_level(body)
    for key in (*_BOOKKEEPING, *_TOP_LEVEL_ONLY, "$defs", "definitions"):
        body.pop(key, None)
    body = _strip_bookkeeping(body)
    kind = body.get("type", "object")
    if isinstance(kind, list):
        kind = "object" if "object" in kind else kind[0] if kind else "object"
    if kind != "object":
        raise SchemaRejected(f"the top level is of type {kind!r}; a tool takes an object")
    body["type"] = "object"
    if not isinstance(body.get("properties"), dict):
        body["properties"] = {}
    if "required" in body:
        required = body["required"]
        if not isinstance(required, list):
            del body["required"]
        else:
            body["required"] = [r for r in dict.fromkeys(required) if isinstance(r, str)]
    if dialect == "anthropic":
        bad = [name for name in body["properties"] if not _ANTHROPIC_PROPERTY.match(name)]
        if bad:
            raise SchemaRejected(f"property name {bad[0]!r} is not accepted by the provider "
                                 "(letters, digits, _ . - only, at most 64)")
    size = len(json.dumps(body, ensure_ascii=False))
    if size > MAX_SCHEMA_BYTES:
        raise SchemaRejected(f"the input schema is {size:,} bytes, more than "
                             f"{MAX_SCHEMA_BYTES:,}")
    return body


def check_all_dialects(schema: Any) -> tuple[dict[str, Any], str]:
    """The schema normalised for the strictest dialect, and "" — or ``({}, reason)`` when
    some provider would refuse it (a tool that cannot go to every provider is left out, so
    a fallback to another provider never fails the turn)."""
    try:
        for_provider(schema, "openai")
        return for_provider(schema, "anthropic"), ""
    except SchemaRejected as exc:
        return {}, str(exc)


# ---- references --------------------------------------------------------------------------


def _definitions(schema: dict[str, Any]) -> dict[str, Any]:
    defs: dict[str, Any] = {}
    for key in ("definitions", "$defs"):
        table = schema.get(key)
        if isinstance(table, dict):
            defs.update({f"#/{key}/{name}": value for name, value in table.items()})
    return defs


def _inline(node: Any, defs: dict[str, Any], expanding: dict[str, int]) -> Any:
    """``node`` with every local ``$ref`` replaced by what it points at."""
    if isinstance(node, list):
        return [_inline(item, defs, expanding) for item in node]
    if not isinstance(node, dict):
        return node
    ref = node.get("$ref")
    if isinstance(ref, str):
        siblings = {k: v for k, v in node.items() if k != "$ref"}
        target = defs.get(ref) if ref != "#" else None
        depth = expanding.get(ref, 0)
        if target is None or depth >= MAX_REF_DEPTH:
            # A remote or unknown reference, or a cycle gone deep enough: accept anything
            # there (the server still validates), keeping what the node says beside it.
            return _inline(siblings, defs, expanding) or {}
        inner = _inline(copy.deepcopy(target), defs, {**expanding, ref: depth + 1})
        if isinstance(inner, dict) and siblings:
            merged = dict(inner)
            merged.update(_inline(siblings, defs, expanding))
            return merged
        return inner
    return {key: (value if key in ("$defs", "definitions") else
                  _inline(value, defs, expanding)) for key, value in node.items()}


# ---- the top level -----------------------------------------------------------------------


def _fold_top_level(body: dict[str, Any]) -> dict[str, Any]:
    """One object schema for a top level written with ``allOf``/``anyOf``/``oneOf``."""
    for combinator in _COMBINATORS:
        branches = body.pop(combinator, None)
        if not isinstance(branches, list) or not branches:
            continue
        objects = [_fold_top_level(b) for b in branches if _is_object_schema(b)]
        if not objects:
            raise SchemaRejected(f"the top level is an {combinator} without an object "
                                 "alternative")
        properties: dict[str, Any] = dict(body.get("properties") or {})
        for branch in objects:
            for name, prop in (branch.get("properties") or {}).items():
                if name in properties and properties[name] != prop:
                    properties[name] = {"anyOf": [properties[name], prop]}
                else:
                    properties[name] = prop
        body["properties"] = properties
        required = list(body.get("required") or [])
        branch_required = [set(b.get("required") or []) for b in objects]
        if combinator == "allOf":
            for names in branch_required:
                required += sorted(names)
        else:
            common = set.intersection(*branch_required) if branch_required else set()
            required += sorted(common)
            alternatives = "; ".join(
                ", ".join(sorted(b.get("required") or [])) or "no required arguments"
                for b in objects)
            note = f"Give one of these sets of arguments: {alternatives}."
            body["description"] = " ".join(filter(None, [body.get("description"), note]))
        if required:
            body["required"] = list(dict.fromkeys(required))
        body.setdefault("type", "object")
        for branch in objects:
            if branch.get("additionalProperties") is False and combinator == "allOf":
                body["additionalProperties"] = False
    return body


#: Keywords that only constrain an object: a branch of nothing else (``{"required": ["id"]}``,
#: the usual "give id or slug") applies to the object around it.
_OBJECT_KEYWORDS = ("properties", "required", "additionalProperties", "patternProperties",
                    "minProperties", "maxProperties", "dependentRequired", "propertyNames")


def _is_object_schema(node: Any) -> bool:
    if not isinstance(node, dict):
        return False
    kind = node.get("type")
    if kind is None:
        return any(k in node for k in (*_OBJECT_KEYWORDS, *_COMBINATORS))
    return kind == "object" or (isinstance(kind, list) and "object" in kind)


def _strip_bookkeeping(node: Any) -> Any:
    if isinstance(node, list):
        return [_strip_bookkeeping(item) for item in node]
    if not isinstance(node, dict):
        return node
    return {key: (_strip_bookkeeping(value) if key != "properties" else
                  {name: _strip_bookkeeping(prop) for name, prop in value.items()}
                  if isinstance(value, dict) else value)
            for key, value in node.items()
            if key not in _BOOKKEEPING and key not in ("$defs", "definitions")}
