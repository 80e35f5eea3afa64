"""Checks on what crossed the wire: is a recorded model request one the real API accepts,
and is an error message fit for a person?

``assert_valid_request(request)`` knows the three formats the fake provider serves (chat
completions, responses, anthropic messages) by the request's path, and asserts the rules the
real endpoints enforce on a history: roles in order, every tool call answered exactly once by
the very next message(s), no result without its call, no empty turns, and a user turn (a
prompt, or tool results in the middle of a turn) last.
"""

from __future__ import annotations

import json
import re
from typing import Any

#: What a person should never have to read in an error: tracebacks, reprs, escapes.
_UNHUMAN = (
    re.compile(r"Traceback \(most recent call last\)"),
    re.compile(r"<[\w.]+ object at 0x"),
    re.compile(r"\b[A-Z]\w*(Error|Exception)\("),  # ValueError('...') style reprs
    re.compile(r"\{'"),  # a dict repr
    re.compile(r"\\u[0-9a-fA-F]{4}|\\x[0-9a-fA-F]{2}"),
)


def assert_human(message: str, status: int | None = None) -> None:
    """``message`` reads as a sentence: no traceback, repr or escape; names ``status``."""
    assert isinstance(message, str) and message.strip(), message
    for pattern in _UNHUMAN:
        assert not pattern.search(message), f"not a human message: {message!r}"
    assert "\n" not in message.strip(), f"one line expected: {message!r}"
    if status is not None:
        assert str(status) in message, f"{status} not named in {message!r}"


def request_format(request: Any) -> str:
    return {"/v1/chat/completions": "chat", "/v1/responses": "responses",
            "/v1/messages": "anthropic"}[request.path]


def assert_valid_request(request: Any) -> list[str]:
    """Assert the recorded ``request`` carries a history its API accepts; return the roles
    (or item types) in order, for further assertions."""
    body = request.body
    assert isinstance(body, dict), "the request body is not JSON"
    json.dumps(body)  # what the server got was plain JSON
    fmt = request_format(request)
    if fmt == "chat":
        return _chat(body["messages"])
    if fmt == "responses":
        return _responses(body["input"])
    return _anthropic(body["messages"])


def _chat(messages: list[dict[str, Any]]) -> list[str]:
    roles = [m["role"] for m in messages]
    assert roles and roles[0] == "system", roles
    open_calls: list[str] = []
    for i, m in enumerate(messages[1:], start=1):
        role = m["role"]
        assert role in ("user", "assistant", "tool"), role
        if open_calls:
            assert role == "tool", f"message {i} ({role}) came before every call was answered"
        if role == "tool":
            assert m["tool_call_id"] in open_calls, f"result {m['tool_call_id']} has no call"
            open_calls.remove(m["tool_call_id"])
            assert isinstance(m["content"], str)
        elif role == "assistant":
            calls = m.get("tool_calls") or []
            assert m.get("content") or calls, f"empty assistant message {i}"
            for call in calls:
                json.loads(call["function"]["arguments"] or "{}")
            open_calls = [c["id"] for c in calls]
            assert len(set(open_calls)) == len(open_calls), "duplicate call ids"
        else:
            content = m["content"]
            if isinstance(content, list):  # text and image_url parts
                assert content, f"empty user message {i}"
                for part in content:
                    if part["type"] == "text":
                        assert part["text"], f"empty text part in message {i}"
                    else:
                        assert part["type"] == "image_url", part["type"]
                        _data_url(part["image_url"]["url"])
            else:
                assert isinstance(content, str) and content, f"empty user message {i}"
    assert not open_calls, f"unanswered calls {open_calls}"
    assert roles[-1] in ("user", "tool"), roles
    return roles[1:]


_DATA_URL = re.compile(r"^data:(image/(png|jpeg|gif|webp));base64,([A-Za-z0-9+/]+=*)$")


def _data_url(url: str) -> None:
    """An image data URL of a type the providers take, with valid base64."""
    import base64

    m = _DATA_URL.match(url)
    assert m, f"not an image data URL: {url[:60]!r}"
    base64.b64decode(m.group(3), validate=True)


def _responses_content(content: Any, what: str) -> None:
    """A responses message content or function call output: text or a list of input items."""
    if isinstance(content, str):
        return
    assert isinstance(content, list) and content, what
    for part in content:
        assert part["type"] in ("input_text", "input_image", "output_text"), part["type"]
        if part["type"] == "input_image":
            _data_url(part["image_url"])
            assert part.get("detail", "auto") in ("auto", "low", "high", "original")


def _anthropic_image(block: dict[str, Any]) -> None:
    import base64

    src = block["source"]
    assert src["type"] == "base64", src["type"]
    assert src["media_type"] in ("image/png", "image/jpeg", "image/gif", "image/webp")
    base64.b64decode(src["data"], validate=True)


def _responses(items: list[dict[str, Any]]) -> list[str]:
    kinds: list[str] = []
    open_calls: list[str] = []
    for i, item in enumerate(items):
        kind = item.get("type")
        if kind == "function_call_output":
            assert item["call_id"] in open_calls, f"output {item['call_id']} has no call"
            open_calls.remove(item["call_id"])
            _responses_content(item["output"], f"output {i}")
        else:
            assert not open_calls or kind == "function_call", (
                f"item {i} ({kind}) came before every call was answered")
        if kind == "function_call":
            json.loads(item["arguments"] or "{}")
            open_calls.append(item["call_id"])
        elif kind == "message":
            assert item["role"] in ("user", "assistant") and item["content"], item
            _responses_content(item["content"], f"message {i}")
        else:
            assert kind in ("function_call_output", "reasoning"), kind
        kinds.append(item.get("role") or kind)
    assert not open_calls, f"unanswered calls {open_calls}"
    assert kinds and kinds[-1] in ("user", "function_call_output"), kinds
    return kinds


def _anthropic(messages: list[dict[str, Any]]) -> list[str]:
    roles = [m["role"] for m in messages]
    assert roles and roles[0] == "user", roles
    for a, b in zip(roles, roles[1:], strict=False):
        assert a != b, f"roles do not alternate: {roles}"
    assert roles[-1] == "user", roles
    previous_calls: list[str] = []
    for i, m in enumerate(messages):
        blocks = m["content"]
        assert isinstance(blocks, list) and blocks, f"empty message {i}"
        results = [b["tool_use_id"] for b in blocks if b["type"] == "tool_result"]
        if m["role"] == "user":
            assert sorted(results) == sorted(previous_calls), (
                f"message {i} answers {results}, the calls were {previous_calls}")
            # tool_result blocks come first in their message
            kinds = [b["type"] for b in blocks]
            assert kinds[:len(results)] == ["tool_result"] * len(results), kinds
            previous_calls = []
            for b in blocks:
                inner = b.get("content") if b["type"] == "tool_result" else [b]
                for c in inner if isinstance(inner, list) else []:
                    assert c["type"] in ("text", "image"), c["type"]
                    if c["type"] == "image":
                        _anthropic_image(c)
                    else:
                        assert c["text"], f"empty text block in message {i}"
        else:
            assert not results
            for b in blocks:
                if b["type"] == "text":
                    assert b["text"], f"empty text block in message {i}"
            previous_calls = [b["id"] for b in blocks if b["type"] == "tool_use"]
    return roles


# ---- tool definitions ------------------------------------------------------------------------

#: What the providers publish for a tool's name and parameters (OpenAI function calling, chat
#: and responses; Anthropic tool use): a name of ``[a-zA-Z0-9_-]{1,64}``; parameters that are
#: a JSON Schema object at the top, without a top-level combinator, negation or enum;
#: Anthropic's property keys ``[a-zA-Z0-9_.-]{1,64}``.
_TOOL_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
_PROPERTY_KEY = re.compile(r"^[a-zA-Z0-9_.-]{1,64}$")
_TOP_LEVEL_REFUSED = ("anyOf", "oneOf", "allOf", "not", "enum", "const")


def tool_schemas(request: Any) -> dict[str, dict[str, Any]]:
    """The tools of a recorded request: name -> parameters schema, in any wire format."""
    fmt = request_format(request)
    tools = request.body.get("tools") or []
    if fmt == "chat":
        return {t["function"]["name"]: t["function"].get("parameters") for t in tools}
    if fmt == "responses":
        return {t["name"]: t.get("parameters") for t in tools if t.get("type") == "function"}
    return {t["name"]: t.get("input_schema") for t in tools}


def assert_tools_accepted(request: Any) -> dict[str, dict[str, Any]]:
    """Assert every tool in the recorded ``request`` is one its provider accepts; return the
    schemas by name."""
    from jsonschema.validators import Draft202012Validator

    fmt = request_format(request)
    schemas = tool_schemas(request)
    for name, schema in schemas.items():
        assert _TOOL_NAME.match(name), f"tool name {name!r} is refused"
        assert isinstance(schema, dict) and schema.get("type") == "object", (name, schema)
        refused = [k for k in _TOP_LEVEL_REFUSED if k in schema]
        assert not refused, f"{name}: top-level {refused} is refused"
        assert isinstance(schema.get("properties", {}), dict), name
        assert "$ref" not in json.dumps(schema), f"{name}: an unresolved $ref"
        Draft202012Validator.check_schema(schema)
        if fmt == "anthropic":
            bad = [k for k in schema.get("properties", {}) if not _PROPERTY_KEY.match(k)]
            assert not bad, f"{name}: property keys {bad} are refused"
    return schemas
