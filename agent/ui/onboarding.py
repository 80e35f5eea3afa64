"""The provider setup: preset → endpoint (custom presets) → key → model → ``config.toml``.

Opens by itself when no provider is usable, and with ``/provider`` (``/login``).  The key is
typed masked; a preset whose environment variable is set uses it without asking (and does
not copy it into the file).  Models come from ``GET <base>/models`` through the provider
plugin, with a built-in list for Anthropic and OpenAI when the endpoint cannot list them.
The file is updated with ``agent.config.update_file``, so other keys and comments survive.
"""

from __future__ import annotations

import asyncio
import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from agent.ui.widgets.lists import Item

if TYPE_CHECKING:
    from agent.ui.app import App

TYPE_OWN = "type a model id myself..."
LIST_TIMEOUT = 15.0
KEYLESS_KEY = "not-needed"


@dataclass(frozen=True)
class Preset:
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


def mask_key(key: str) -> str:
    """``abcd...wxyz`` (short keys are fully hidden)."""
    if len(key) <= 12:
        return "*" * len(key)
    return f"{key[:4]}...{key[-4:]}"


def current_preset(config: Any) -> str:
    preset = config.get("preset")
    if preset:
        return str(preset)
    provider, base = config.get("provider"), config.get("base_url")
    for p in PRESETS:
        if p.protocol == provider and (base or p.base_url) == p.base_url and not p.custom:
            return p.id
    return ""


async def list_models(app: App, protocol: str, base_url: str, key: str) -> list[str]:
    """The endpoint's model ids through the provider plugin (raises on failure)."""
    from agent.providers import ProviderSettings

    specs = app.hooks.providers(app.config)
    spec = specs.get(protocol)
    if spec is None:
        raise RuntimeError(f'no provider plugin for "{protocol}"')
    settings = ProviderSettings(provider=protocol, model="", base_url=base_url, api_key=key,
                                max_retries=0, timeout=LIST_TIMEOUT)
    provider = spec.create(settings)
    try:
        models = await asyncio.wait_for(provider.list_models(), LIST_TIMEOUT)
    finally:
        close = getattr(provider, "aclose", None)
        if close is not None:
            try:
                await close()
            except Exception:
                pass
    return sorted(set(models))


async def run_setup(app: App) -> bool:
    """The whole setup; True when a provider was configured and is in use now."""
    ctx = app.ctx
    config = app.config
    current = current_preset(config)
    items = [Item(p.label + ("  (current)" if p.id == current else ""), p) for p in PRESETS]
    index = next((i for i, p in enumerate(PRESETS) if p.id == current), 0)
    from agent.ui.widgets.panels import Picker

    preset = await app.run_modal(Picker("Choose a provider", items, index=index, max_rows=12,
                                        hint="where your model runs"))
    if preset is None:
        return _cancelled(app)
    base_url = preset.base_url
    if preset.custom:
        base_url = await ctx.prompt_text(f"{preset.label}: endpoint URL",
                                         hint="the API root, e.g. http://localhost:8000/v1")
        if not base_url:
            return _cancelled(app)
        base_url = base_url.strip().rstrip("/")
    key, key_source = "", "typed"
    if preset.keyless:
        key, key_source = KEYLESS_KEY, "keyless"
    elif preset.env and os.environ.get(preset.env):
        key, key_source = os.environ[preset.env], "env"
        ctx.notice(f"using ${preset.env}")
    else:
        where = f" (or set {preset.env} and restart)" if preset.env else ""
        key = await ctx.prompt_text(f"{preset.label} API key", mask=True,
                                    hint=f"stored in {config.config_file}{where}"
                                    + (f"  format: {preset.hint}" if preset.hint else ""))
        if not key:
            return _cancelled(app)
        key = key.strip()
    assert base_url is not None
    model = await _choose_model(app, preset, base_url, key)
    if not model:
        return _cancelled(app)
    # A key from the protocol's own variable (OPENAI_API_KEY...) is found again at the next
    # start; a preset's variable (GROQ_API_KEY...) is not, so that key is stored.
    specs = app.hooks.providers(config)
    spec = specs.get(preset.protocol)
    stored = None if key_source == "env" and spec is not None and spec.env_key == preset.env \
        else key
    return _save(app, preset, base_url, stored, model)


async def _choose_model(app: App, preset: Preset, base_url: str, key: str) -> str | None:
    ctx = app.ctx
    app.set_live("setup", f"fetching models: GET {base_url}/models")
    app.redraw.request()
    models: list[str] = []
    try:
        models = await list_models(app, preset.protocol, base_url, key)
        if not models:
            ctx.warn(f"{base_url}/models listed no models.")
    except Exception as exc:
        message = getattr(exc, "message", None) or str(exc) or type(exc).__name__
        ctx.warn(f"could not list models: {message[:200]}")
    finally:
        app.set_live("setup", None)
    if not models and preset.fallback:
        models = list(preset.fallback)
    if not models:
        return await ctx.prompt_text("Model id", hint="the endpoint listed no models; type one")
    hint = f"{len(models)} available - key {mask_key(key)}"
    choice = await ctx.pick(f"Choose a model ({len(models)} available)", models, hint=hint,
                            free_text=TYPE_OWN, current=app.config.get("model"))
    if isinstance(choice, str):
        return choice.strip() or None
    return None


def _save(app: App, preset: Preset, base_url: str, key: str | None, model: str) -> bool:
    from agent.config import ConfigError, update_file
    from agent.ui.startup import NoProvider, attach, build_runtime

    config = app.config
    changes: dict[str, Any] = {"provider": preset.protocol, "model": model,
                               "base_url": base_url, "preset": preset.id, "api_key": key}
    try:
        update_file(config.config_file, changes)
    except (ConfigError, OSError) as exc:
        app.add("error", f"could not save the provider: {exc}")
        return False
    # The choice applies now: it outranks what the environment or flags said at startup.
    for layer in (config.flag_values, config.env_values):
        for name in changes:
            layer.pop(name, None)
    for name, value in changes.items():
        if value is None:
            config.file_data.pop(name, None)
        else:
            config.file_data[name] = value
    try:
        attach(app, build_runtime(app))
    except NoProvider as exc:
        app.add("error", str(exc))
        return False
    app.add("info", f"{preset.label} configured with {model}\nsaved to {config.config_file}")
    return True


def _cancelled(app: App) -> bool:
    app.add("info", "provider setup cancelled")
    return False
