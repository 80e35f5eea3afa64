"""Provider presets: the endpoints the provider setup offers, as data.

One list, in the order the setup shows it.  A preset names the wire ``protocol`` (which
provider plugin speaks to it), its API root, the environment variable that usually holds its
key, a hint of the key's shape, and whether it needs a key at all.  ``custom`` presets ask for
the endpoint URL.  ``fallback`` models are offered when the endpoint cannot list its models
(only the two vendors whose model ids we can vouch for have one).

Preset variables such as ``GROQ_API_KEY`` are read only by the setup, which then stores the key
in the config; the protocol variables (``OPENAI_API_KEY``, ``ANTHROPIC_API_KEY``) are also read
at every start by the provider plugins.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Preset:
    """One entry of the provider setup."""

    id: str
    label: str
    protocol: str
    base_url: str | None
    env: str | None = None
    hint: str = ""
    keyless: bool = False
    custom: bool = False
    fallback: tuple[str, ...] = ()


PRESETS: tuple[Preset, ...] = (
    Preset("anthropic", "Anthropic", "anthropic", "https://api.anthropic.com/v1",
           "ANTHROPIC_API_KEY", "sk-ant-...",
           fallback=("claude-sonnet-4-5", "claude-opus-4-1", "claude-haiku-4-5")),
    Preset("openai", "OpenAI", "openai", "https://api.openai.com/v1", "OPENAI_API_KEY",
           "sk-...", fallback=("gpt-5", "gpt-5-mini", "o4-mini")),
    Preset("openrouter", "OpenRouter", "openai", "https://openrouter.ai/api/v1",
           "OPENROUTER_API_KEY", "sk-or-..."),
    Preset("groq", "Groq", "openai", "https://api.groq.com/openai/v1", "GROQ_API_KEY",
           "gsk_..."),
    Preset("deepseek", "DeepSeek", "openai", "https://api.deepseek.com/v1",
           "DEEPSEEK_API_KEY"),
    Preset("xai", "xAI", "openai", "https://api.x.ai/v1", "XAI_API_KEY", "xai-..."),
    Preset("ollama", "Ollama", "openai", "http://localhost:11434/v1", keyless=True),
    Preset("lmstudio", "LM Studio", "openai", "http://localhost:1234/v1", keyless=True),
    Preset("custom-openai", "Custom OpenAI-compatible", "openai", None, custom=True),
    Preset("custom-anthropic", "Custom Anthropic-compatible", "anthropic", None, custom=True),
)

#: The placeholder key stored for keyless presets (local servers ignore it).
KEYLESS_KEY = "not-needed"


def by_id(preset_id: str) -> Preset | None:
    return next((p for p in PRESETS if p.id == preset_id), None)


def current_preset(config: Any) -> str:
    """The id of the preset the config matches: ``config.get("preset")`` when saved, else
    the first non-custom preset with the same protocol and URL; "" when none does."""
    saved = config.get("preset")
    if saved:
        return str(saved)
    provider, base = config.get("provider"), config.get("base_url")
    for p in PRESETS:
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
