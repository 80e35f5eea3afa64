"""Tool schemas real MCP servers publish reach every provider in a shape it accepts; a tool
that cannot be sent is left out with a notice naming server and tool, and never fails a turn."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from clirun import run_agent_here
from fakeprovider import Reply
from mcp_forkserver import server_command
from wirecheck import assert_tools_accepted, assert_valid_request

from agent.contract.toolschema import SchemaRejected, for_provider

SERVER = str(Path(__file__).parents[1].joinpath("mcp_schema_server.py"))

WIRES = {  # wire format -> agent flags
    "chat": ["--provider", "openai"],
    "responses": ["--provider", "openai"],
    "anthropic": ["--provider", "anthropic"],
}


@pytest.mark.parametrize("wire", sorted(WIRES))
def test_combinator_and_ref_schemas_are_accepted_and_bad_tools_left_out(
        wire, tmp_path, fake_provider):
    home, ws = tmp_path / "home", tmp_path / "ws"
    command, args = server_command(SERVER)  # a process of its own, without importing the SDK
    ws.mkdir()
    home.mkdir()
    (home / "config.toml").write_text(
        # A loaded machine can take more than the default 10 s to start a Python server.
        "mcp_startup_timeout = 120\n"
        + (f'openai_api = "{wire}"\n' if wire != "anthropic" else "")
        + f'[mcp_servers.schemas]\ncommand = {json.dumps(command)}\nargs = {json.dumps(args)}\n')
    fake_provider.script(Reply.tool_call("mcp__schemas__search", {"query": "tea", "limit": 2},
                                         id="c1"), Reply.text("found"))
    url = fake_provider.base_url if wire == "anthropic" else fake_provider.openai_url
    proc = run_agent_here(["-p", "find tea", "--yolo", "--json", *WIRES[wire], "--base-url", url,
                           "--model", "m"], home=home, cwd=ws, OPENAI_API_KEY="x",
                          ANTHROPIC_API_KEY="x")
    assert proc.returncode == 0, proc.stderr
    assert "not ready" not in proc.stderr, proc.stderr
    first = fake_provider.requests[0]
    schemas = assert_tools_accepted(first)
    offered = {n.removeprefix("mcp__schemas__") for n in schemas if n.startswith("mcp__")}
    assert offered == {"search", "create", "merge", "pick", "lookup", "echo"}
    for left_out in ("huge", "spaced", "taskonly"):
        assert f"agent: mcp schemas: tool {left_out} is not offered: " in proc.stderr
    search = schemas["mcp__schemas__search"]
    assert set(search["properties"]) == {"query", "id", "limit"}
    assert "required" not in search or search["required"] == []  # neither branch's own
    assert "query" in search["description"] and "id" in search["description"]
    lookup = schemas["mcp__schemas__lookup"]
    assert lookup["properties"] == {"id": {"type": "integer"}, "slug": {"type": "string"}}
    assert "required" not in lookup or lookup["required"] == []
    assert "Give one of these sets of arguments: id; slug." in lookup["description"]
    merge = schemas["mcp__schemas__merge"]
    assert merge["required"] == ["a", "b"]
    create = schemas["mcp__schemas__create"]["properties"]["item"]
    assert create["properties"]["name"] == {"type": "string"}
    assert "properties" in create["properties"]["child"]  # the cycle is unrolled, bounded
    # The call went through to the server with what the model sent; the turn finished.
    result = fake_provider.requests[1]
    assert_valid_request(result)
    assert '\\"query\\": \\"tea\\"' in json.dumps(result.body)
    events = [json.loads(line) for line in proc.stdout.splitlines()]
    assert [e["type"] for e in events][-2:] == ["done", "result"]


@pytest.mark.parametrize("schema,reason", [
    ({"type": "string"}, "the top level is of type 'string'"),
    ({"anyOf": [{"type": "string"}, {"type": "integer"}]}, "without an object alternative"),
    ("not a schema", "is a str, not an object"),
])
def test_schemas_no_provider_takes_are_rejected_with_the_reason(schema, reason):
    for dialect in ("openai", "anthropic"):
        with pytest.raises(SchemaRejected, match=reason):
            for_provider(schema, dialect)


def test_the_rewrite_keeps_what_the_model_needs_and_never_changes_its_input():
    schema = {"type": "object", "$defs": {"Leaf": {"type": "integer", "minimum": 0}},
              "properties": {"n": {"$ref": "#/$defs/Leaf", "description": "how many"},
                             "far": {"$ref": "https://example.invalid/schema.json"}},
              "required": ["n"], "$comment": "bookkeeping"}
    before = json.dumps(schema, sort_keys=True)
    out = for_provider(schema, "anthropic")
    assert json.dumps(schema, sort_keys=True) == before
    assert out == {"type": "object", "properties": {
        "n": {"type": "integer", "minimum": 0, "description": "how many"}, "far": {}},
        "required": ["n"]}
    assert for_provider(None, "openai") == {"type": "object", "properties": {}}


def test_mcp_list_shows_only_offered_tools_and_why_the_others_are_not(tmp_path):
    home, ws = tmp_path / "home", tmp_path / "ws"
    command, args = server_command(SERVER)
    ws.mkdir()
    home.mkdir()
    (home / "config.toml").write_text(
        "mcp_startup_timeout = 120\n"
        f'[mcp_servers.schemas]\ncommand = {json.dumps(command)}\nargs = {json.dumps(args)}\n')
    proc = run_agent_here(["mcp", "list"], home=home, cwd=ws)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0] == "- schemas (local) - 6 tools (+3 not offered)"
    tools = next(ln for ln in lines if ln.startswith("  tools: "))
    assert set(tools.removeprefix("  tools: ").split(", ")) == {
        "search", "create", "merge", "pick", "lookup", "echo"}
    left_out = {ln.split()[2]: ln for ln in lines if ln.startswith("  not offered: ")}
    assert set(left_out) == {"huge", "spaced", "taskonly"}
    assert "long-running task" in left_out["taskonly"]
