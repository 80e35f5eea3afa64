"""A peer's command-safety vectors (Codex's ``is_safe_command`` and ``is_dangerous_command``
tests, vendored under tests/vectors/codex_command_safety with their licence): nothing the peer
calls unsafe or dangerous runs without a person's yes.

Each vector goes to the real gate (default policy, nobody to ask, the real builtin plugins) as
the command the ``bash`` tool would run: ``bash -lc SCRIPT`` is SCRIPT (the tool runs ``bash
-lc`` itself), any other argv is quoted back into one command line.  Nothing here runs a
vector; the gate's decision is what crosses the boundary.
"""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest

from agent.testing import gate_decision, make_boot

VECTORS = json.loads((Path(__file__).parents[1] / "vectors" / "codex_command_safety"
                      / "vectors.json").read_text())["vectors"]
def command_of(argv: list[str]) -> str:
    if len(argv) == 3 and argv[:2] == ["bash", "-lc"]:
        return argv[2]
    return shlex.join(argv)


@pytest.fixture(scope="module")
def gate_parts(tmp_path_factory):
    root = tmp_path_factory.mktemp("peer")
    ws = root / "ws"
    ws.mkdir()
    for name in ("file.txt", "Cargo.toml"):
        (ws / name).write_text("x\n")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("HOME", str(root / "home"))
        patch.setenv("GIT_CONFIG_GLOBAL", "/dev/null")
        config, hooks = make_boot(ws, root / "agent-home", file_data={"sandbox": "off"})
    return config, hooks, hooks.tools(config)["bash"]


def test_the_vendored_vectors_carry_their_licence_and_source():
    folder = Path(__file__).parents[1] / "vectors" / "codex_command_safety"
    assert "Apache License" in (folder / "LICENSE").read_text()
    assert "OpenAI" in (folder / "NOTICE").read_text()
    source = json.loads((folder / "vectors.json").read_text())
    assert all(len(commit) == 40 for commit in source["files"].values())
    assert len(VECTORS) >= 60


UNSAFE = [v for v in VECTORS if v["expect"] in ("unsafe", "dangerous")]


@pytest.mark.parametrize("vector", UNSAFE, ids=[command_of(v["argv"]) for v in UNSAFE])
async def test_nothing_the_peer_calls_unsafe_is_auto_allowed(vector, gate_parts):
    config, hooks, bash = gate_parts
    decision = await gate_decision(config, hooks, bash, {"command": command_of(vector["argv"])})
    assert not decision.allowed, decision


SAFE = [v for v in VECTORS if v["expect"] in ("safe", "not dangerous")]


@pytest.mark.parametrize("vector", SAFE, ids=[command_of(v["argv"]) for v in SAFE])
async def test_what_the_peer_calls_safe_runs_without_a_prompt(vector, gate_parts):
    config, hooks, bash = gate_parts
    command = command_of(vector["argv"])
    decision = await gate_decision(config, hooks, bash, {"command": command})
    assert decision.allowed, decision


IRREVERSIBLE = ["git reset --hard", "sudo git reset --hard", "/usr/bin/git reset --hard",
                "rm -rf /", "rm -f /"]


@pytest.mark.parametrize("vector", [v for v in VECTORS if v["expect"] == "dangerous"],
                         ids=lambda v: command_of(v["argv"]))
async def test_the_peers_dangerous_commands_under_yolo(vector, gate_parts):
    """--yolo runs what is reversible (``git reset`` keeps the work tree); the guard refuses
    every irreversible one the peer names, whatever --yolo says."""
    config, hooks, bash = gate_parts
    command = command_of(vector["argv"])
    decision = await gate_decision(config, hooks, bash, {"command": command}, yolo=True)
    if command in IRREVERSIBLE:
        assert not decision.allowed and decision.source == "guard", decision
    else:
        assert command == "git reset" and decision.allowed, decision
