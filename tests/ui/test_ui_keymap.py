"""Keys are data: docs/keybindings.md is generated from the keymap and must match it."""

from __future__ import annotations

from pathlib import Path

from agent.ui.defaultkeys import DEFAULT_KEYS
from agent.ui.keymap import ACTIONS, CONTEXTS, Keymap, markdown

DOC = Path(__file__).resolve().parents[2] / "docs" / "keybindings.md"


def test_keybindings_doc_is_generated_from_the_keymap():
    assert DOC.read_text(encoding="utf-8") == markdown(), (
        "docs/keybindings.md is stale: run python -m agent.ui.keymap > docs/keybindings.md")


def test_every_default_key_names_a_known_command_in_a_known_context():
    for context, key, command in DEFAULT_KEYS:
        assert context in CONTEXTS, (context, key)
        assert command in ACTIONS, (key, command)


def test_every_action_is_bound_or_documented_as_bindable():
    bound = {command for _, _, command in DEFAULT_KEYS}
    unbound = set(ACTIONS) - bound
    assert unbound <= {"quit", "cursor-up", "cursor-down", "undo"}, unbound


def test_user_overrides_win_and_bad_ones_are_reported():
    keymap = Keymap()
    keymap.apply_overrides({"ctrl t": "toggle-reasoning", "esc": "", "f5": "tools",
                            "picker": {"tab": "pick-down"}, "nowhere": {"x": "quit"},
                            "f6": "bogus", "f7": 3}, known=["tools"])
    assert keymap.get("ctrl t", ["global"]) == ("global", "toggle-reasoning")
    assert keymap.get("esc", ["global"]) is None
    assert keymap.get("f5", ["global"]) == ("global", "tools")
    assert keymap.get("tab", ["picker"]) == ("picker", "pick-down")
    assert len(keymap.problems) == 3


def test_context_order_decides():
    keymap = Keymap()
    assert keymap.get("esc", ["menu", "prompt", "global"]) == ("menu", "menu-dismiss")
    assert keymap.get("esc", ["prompt", "global"]) == ("global", "cancel")
    assert keymap.get("enter", ["approval", "global"]) == ("approval", "approve")
