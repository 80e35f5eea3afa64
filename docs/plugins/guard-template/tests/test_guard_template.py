"""The guard judged through agent's real gate, with the real bash tool."""

from __future__ import annotations

import pytest

from agent.testing import gate_decision, make_boot


@pytest.fixture
def boot(tmp_path):
    # Every installed plugin, as agent loads them: this one included, through its entry point.
    return make_boot(tmp_path, tmp_path / "home", builtins=["bash", "guard-template"])


@pytest.mark.parametrize("command", [
    "kubectl --context prod delete pod web-1",
    "kubectl --context=production apply -f x.yaml",
    "cd deploy && helm upgrade web ./chart --kube-context prod",
    "/usr/local/bin/kubectl --context PROD get pods",
])
async def test_production_commands_are_denied_even_with_yolo(boot, command):
    config, hooks = boot
    bash = hooks.tools(config)["bash"]
    decision = await gate_decision(config, hooks, bash, {"command": command}, yolo=True)
    assert not decision.allowed
    assert decision.by == "guard" and "deploy pipeline" in decision.message


@pytest.mark.parametrize("command", [
    "kubectl --context staging delete pod web-1",
    "kubectl get pods",
    "echo prod",
])
async def test_other_commands_are_left_to_the_other_rules(boot, command):
    config, hooks = boot
    bash = hooks.tools(config)["bash"]
    decision = await gate_decision(config, hooks, bash, {"command": command}, yolo=True)
    assert decision.allowed, decision.message


async def test_an_unreadable_command_is_asked_about_not_guessed(boot):
    config, hooks = boot
    bash = hooks.tools(config)["bash"]
    decision = await gate_decision(config, hooks, bash,
                                   {"command": "kubectl --context 'prod delete"}, yolo=False)
    assert not decision.allowed  # headless: an ask is a no
