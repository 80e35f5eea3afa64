"""Checking a model's tool arguments against the tool's JSON schema before anything runs."""

from __future__ import annotations

import json
from functools import lru_cache
from typing import Any

from agent.contract.tools import Tool, ToolError

#: Longest quote of one schema violation in the message the model reads.
MESSAGE_LIMIT = 300


@lru_cache(maxsize=256)
def _validator(schema_json: str) -> Any:
    # jsonschema costs ~100 ms to import: only the first tool call pays it, never startup.
    import jsonschema

    schema = json.loads(schema_json)
    cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    return cls(schema)


def parse_arguments(tool_name: str, raw: str) -> dict[str, Any]:
    """Decode the model's argument text; malformed JSON becomes a :class:`ToolError`."""
    if raw is None or raw.strip() == "":
        return {}
    try:
        value = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise ToolError(
            f"The arguments for {tool_name} were not valid JSON ({exc.msg} at character "
            f"{exc.pos}). Send the call again with a JSON object.") from None
    if not isinstance(value, dict):
        raise ToolError(f"The arguments for {tool_name} must be a JSON object, "
                        f"not {type(value).__name__}.")
    return value


def check_arguments(tool: Tool, args: dict[str, Any]) -> None:
    """Raise :class:`ToolError` naming every way ``args`` breaks ``tool.parameters``."""
    validator = _validator(json.dumps(tool.parameters, sort_keys=True))
    errors = sorted(validator.iter_errors(args), key=lambda e: list(e.absolute_path))
    if not errors:
        return
    lines = []
    for err in errors[:5]:
        where = "/".join(str(p) for p in err.absolute_path)
        where = where if len(where) <= 100 else where[:100] + "..."
        # jsonschema quotes the offending value whole; a megabyte of it helps no one.
        message = err.message if len(err.message) <= MESSAGE_LIMIT else (
            err.message[:MESSAGE_LIMIT] + f"... [{len(err.message) - MESSAGE_LIMIT} more chars]")
        lines.append(f"- {where + ': ' if where else ''}{message}")
    raise ToolError(f"Invalid arguments for {tool.name}:\n" + "\n".join(lines)
                    + "\nFix the arguments and call it again.")
