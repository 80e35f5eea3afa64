"""The provider setup: preset → endpoint (custom presets) → key → model → ``config.toml``.

Opens by itself when no provider is usable, and with ``/provider`` (``/login``).  The key is
typed masked; a preset whose environment variable is set uses it without asking (and does
not copy it into the file).  Models come from ``GET <base>/models`` through the provider
plugin, with a built-in list for Anthropic and OpenAI when the endpoint cannot list them.
The file is updated with ``agent.config.update_file``, so other keys and comments survive.
The presets themselves are data in :mod:`agent.presets`.
"""

from __future__ import annotations

import asyncio
import os
from typing import TYPE_CHECKING, Any

from agent.presets import PRESETS, Preset, current_preset, key_from_env
from agent.ui.widgets.lists import Item

if TYPE_CHECKING:
    from agent.ui.app import App

TYPE_OWN = "type a model id myself..."
LIST_TIMEOUT = 15.0


def url_problem(text: str) -> str | None:
    """What is wrong with an endpoint URL as typed (None: it is a usable http(s) URL)."""
    from urllib.parse import urlsplit

    url = text.strip()
    if not url:
        return "type the endpoint's URL, e.g. http://localhost:8000/v1"
    if any(ch.isspace() for ch in url):
        return "a URL has no spaces"
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - raises ValueError for a port that is not a number
    except ValueError as exc:
        return f"not a URL: {exc}"
    if parts.scheme not in ("http", "https"):
        return "it starts with http:// or https://"
    if not parts.hostname:
        return "it needs a host, e.g. http://localhost:8000/v1"
    return None


def mask_key(key: str) -> str:
    """``abcd...wxyz`` (short keys are fully hidden)."""
    if len(key) <= 12:
        return "*" * len(key)
    return f"{key[:4]}...{key[-4:]}"


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
                                         hint="the API root, e.g. http://localhost:8000/v1",
                                         validate=url_problem)
        if base_url is None:
            return _cancelled(app)
        base_url = base_url.strip().rstrip("/")
    found = key_from_env(preset, os.environ)  # the placeholder for keyless presets
    if found is not None:
        key, key_source = found, "keyless" if preset.keyless else "env"
        if not preset.keyless:
            ctx.notice(f"using ${preset.env}")
    else:
        where = f" (or set {preset.env} and restart)" if preset.env else ""
        # A custom endpoint may need no key (a local server): empty is an answer there.
        keyless_ok = "empty if the endpoint needs no key; " if preset.custom else ""
        typed = await ctx.prompt_text(
            f"{preset.label} API key", mask=True,
            hint=f"{keyless_ok}stored in {config.config_file}{where}"
                 + (f"  format: {preset.hint}" if preset.hint else ""),
            validate=None if preset.custom else _key_problem)
        if typed is None:
            return _cancelled(app)
        if typed.strip():
            key, key_source = typed.strip(), "typed"
        else:
            from agent.presets import KEYLESS_KEY

            key, key_source = KEYLESS_KEY, "keyless"
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


def _key_problem(text: str) -> str | None:
    return None if text.strip() else "the key is empty: paste it, or esc to cancel"


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
    from agent.ui import startup

    startup.refresh_header(app)  # it said "no provider configured"
    app.update_status()
    app.add("info", f"{preset.label} configured with {model}\nsaved to {config.config_file}")
    return True


def _cancelled(app: App) -> bool:
    app.add("info", "provider setup cancelled")
    return False
