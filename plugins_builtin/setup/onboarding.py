"""The provider setup: preset → endpoint (custom presets) → key → model, as a
:class:`agent.contract.providers.ProviderChoice` the front end saves to ``config.toml``.

Opens by itself when no provider is usable, and with ``/provider`` (``/login``).  The key is
typed masked; a preset whose environment variable is set uses it without asking (and does
not copy it into the file).  Models come from ``GET <base>/models`` through the provider
plugin, with the preset's own list (``Preset.fallback``) when the endpoint cannot list them.
The presets are data on the provider plugins' specs (:mod:`.presets`).
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Mapping
from typing import Any

from agent.contract.providers import Preset, ProviderChoice, ProviderSettings, ProviderSpec

from .presets import KEYLESS_KEY, by_id, current_preset, key_from_env, offered

TYPE_OWN = "type a model id myself..."
LIST_TIMEOUT = 15.0
#: the live line shown while the models are fetched
FETCHING = "setup"


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


async def list_models(spec: ProviderSpec | None, protocol: str, base_url: str,
                      key: str) -> list[str]:
    """The endpoint's model ids through the provider plugin (raises on failure)."""
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


async def run_setup(ui: Any, config: Any,
                    specs: Mapping[str, ProviderSpec]) -> ProviderChoice | None:
    """The whole setup through the front end's command context ``ui``; the choice, or None
    when the user cancelled."""
    presets = offered(specs)
    if not presets:
        ui.error("no provider plugin offers an endpoint to set up")
        return None
    current = current_preset(config, presets)
    items = [(p.label + ("  (current)" if p.id == current else ""), p) for p in presets]
    preset = await ui.pick("Choose a provider", items, current=by_id(presets, current),
                           max_rows=12, hint="where your model runs", filterable=False)
    if preset is None:
        return None
    base_url = preset.base_url
    if preset.custom:
        base_url = await ui.prompt_text(f"{preset.label}: endpoint URL",
                                        hint="the API root, e.g. http://localhost:8000/v1",
                                        validate=url_problem)
        if base_url is None:
            return None
        base_url = base_url.strip().rstrip("/")
    found = key_from_env(preset, os.environ)  # the placeholder for keyless presets
    if found is not None:
        key, key_source = found, "keyless" if preset.keyless else "env"
        if not preset.keyless:
            ui.notice(f"using ${preset.env}")
    else:
        where = f" (or set {preset.env} and restart)" if preset.env else ""
        # A custom endpoint may need no key (a local server): empty is an answer there.
        keyless_ok = "empty if the endpoint needs no key; " if preset.custom else ""
        typed = await ui.prompt_text(
            f"{preset.label} API key", mask=True,
            hint=f"{keyless_ok}stored in {config.config_file}{where}"
                 + (f"  format: {preset.hint}" if preset.hint else ""),
            validate=None if preset.custom else _key_problem)
        if typed is None:
            return None
        if typed.strip():
            key, key_source = typed.strip(), "typed"
        else:
            key, key_source = KEYLESS_KEY, "keyless"
    assert base_url is not None
    spec = specs.get(preset.protocol)
    model = await _choose_model(ui, config, spec, preset, base_url, key)
    if not model:
        return None
    # A key from the protocol's own variable (OPENAI_API_KEY...) is found again at the next
    # start; a preset's variable (GROQ_API_KEY...) is not, so that key is stored.
    stored = None if key_source == "env" and spec is not None and spec.env_key == preset.env \
        else key
    return ProviderChoice(provider=preset.protocol, model=model, base_url=base_url,
                          api_key=stored, preset=preset.id, label=preset.label)


async def _choose_model(ui: Any, config: Any, spec: ProviderSpec | None, preset: Preset,
                        base_url: str, key: str) -> str | None:
    ui.set_live(FETCHING, f"fetching models: GET {base_url}/models")
    ui.redraw()
    models: list[str] = []
    try:
        models = await list_models(spec, preset.protocol, base_url, key)
        if not models:
            ui.warn(f"{base_url}/models listed no models.")
    except Exception as exc:
        message = getattr(exc, "message", None) or str(exc) or type(exc).__name__
        ui.warn(f"could not list models: {message[:200]}")
    finally:
        ui.set_live(FETCHING, None)
    if not models and preset.fallback:
        models = list(preset.fallback)
    if not models:
        return await ui.prompt_text("Model id", hint="the endpoint listed no models; type one")
    hint = f"{len(models)} available - key {mask_key(key)}"
    choice = await ui.pick(f"Choose a model ({len(models)} available)", models, hint=hint,
                           free_text=TYPE_OWN, current=config.get("model"))
    if isinstance(choice, str):
        return choice.strip() or None
    return None


def _key_problem(text: str) -> str | None:
    return None if text.strip() else "the key is empty: paste it, or esc to cancel"
