"""The provider setup's list of endpoints: every provider plugin's presets, in one order.

Presets are data on each :class:`agent.contract.providers.ProviderSpec` (``presets``, as
:class:`agent.contract.providers.Preset`), declared by the plugin that speaks their wire protocol;
this module gathers them, ordered by ``Preset.order``, with ``protocol`` set to the declaring
provider's name.

Preset variables such as ``GROQ_API_KEY`` are read only by the setup, which then stores the key
in the config; the protocol variables (``OPENAI_API_KEY``, ``ANTHROPIC_API_KEY``) are also read
at every start by the provider plugins.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from agent.contract.providers import Preset, ProviderSpec

#: The placeholder key stored for keyless presets (local servers ignore it).
KEYLESS_KEY = "not-needed"


def offered(specs: Mapping[str, ProviderSpec]) -> list[Preset]:
    """Every registered provider's presets in the setup's order (``order``, then id); a
    later preset with an id already taken is dropped."""
    found: dict[str, Preset] = {}
    for name in sorted(specs):
        for preset in getattr(specs[name], "presets", ()) or ():
            if isinstance(preset, Preset) and preset.id not in found:
                found[preset.id] = replace(preset, protocol=preset.protocol or name)
    return sorted(found.values(), key=lambda p: (p.order, p.id))


def by_id(presets: list[Preset], preset_id: str) -> Preset | None:
    return next((p for p in presets if p.id == preset_id), None)


def current_preset(config: Any, presets: list[Preset]) -> str:
    """The id of the preset the config matches: ``config.get("preset")`` when saved, else
    the first non-custom preset with the same protocol and URL; "" when none does."""
    saved = config.get("preset")
    if saved:
        return str(saved)
    provider, base = config.get("provider"), config.get("base_url")
    for p in presets:
        if not p.custom and p.protocol == provider and (base or p.base_url) == p.base_url:
            return p.id
    return ""


def key_from_env(preset: Preset, env: Mapping[str, str]) -> str | None:
    """The key for ``preset`` found in ``env`` (None when unset; the placeholder when the
    preset needs none)."""
    if preset.keyless:
        return KEYLESS_KEY
    if preset.env and env.get(preset.env):
        return env[preset.env]
    return None
