"""The ``fallback`` config key: a list of endpoint tables, checked, and the settings they give.

Each table is ``{provider = "anthropic", model = "...", base_url = "...", api_key_env = "..."}``
with only ``provider`` required.  The key is resolved like the primary's: the variable named
by ``api_key_env``, else the provider's standard variable (``ANTHROPIC_API_KEY``...); a
keyless provider (a local server) needs none.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from agent.boot.config import ConfigError
from agent.contract.providers import ProviderSettings, ProviderSpec

#: The keys a fallback table may have.
ENTRY_KEYS = ("provider", "model", "base_url", "api_key_env")


@dataclass(frozen=True)
class FallbackEndpoint:
    """One checked ``fallback[index]`` table, its API key resolved."""

    index: int
    provider: str
    model: str | None
    base_url: str | None
    api_key: str | None


def _text(entry: Mapping[str, Any], key: str, label: str) -> str | None:
    value = entry.get(key)
    if value is None:
        return None
    if not isinstance(value, str) or not value.strip():
        raise ConfigError(f"{label}.{key} must be a non-empty string, got {value!r}")
    return value.strip()


def parse_entry(index: int, entry: Any, specs: Mapping[str, ProviderSpec] | None,
                env: Mapping[str, str], where: str) -> FallbackEndpoint:
    """Check ``fallback[index]``; raises :class:`ConfigError` naming it.  Without ``specs``
    (no plugin host to ask) only the table's shape is checked."""
    label = f"{where}: fallback[{index}]"
    if not isinstance(entry, dict):
        raise ConfigError(f'{label} must be a table like {{provider = "anthropic"}}, '
                          f"got {entry!r}")
    unknown = sorted(set(entry) - set(ENTRY_KEYS))
    if unknown:
        raise ConfigError(f"{label}: unknown key {', '.join(map(repr, unknown))} "
                          f"(expected {', '.join(ENTRY_KEYS)})")
    provider = _text(entry, "provider", label)
    if provider is None:
        raise ConfigError(f'{label}: provider is required (e.g. provider = "anthropic")')
    model = _text(entry, "model", label)
    base_url = _text(entry, "base_url", label)
    if base_url is not None and not base_url.startswith(("http://", "https://")):
        raise ConfigError(f"{label}.base_url must start with http:// or https://, "
                          f"got {base_url!r}")
    key_env = _text(entry, "api_key_env", label)
    if specs is None:
        return FallbackEndpoint(index, provider, model, base_url, None)
    spec = specs.get(provider)
    if spec is None:
        available = ", ".join(sorted(specs)) or "none (are the provider plugins disabled?)"
        raise ConfigError(f'{label}: unknown provider "{provider}". Available: {available}')
    variable = key_env or spec.env_key
    key = env.get(variable) if variable else None
    if not key and spec.keyless:
        key = "not-needed"
    if not key:
        if variable:
            hint = f"set {variable}" + ("" if key_env else " or name another variable in "
                                                          "api_key_env")
        else:
            hint = "name the variable holding it in api_key_env"
        raise ConfigError(f'{label}: no API key for provider "{provider}": {hint}')
    return FallbackEndpoint(index, provider, model, base_url, key)


def parse_entries(raw: Any, specs: Mapping[str, ProviderSpec] | None, env: Mapping[str, str],
                  where: str) -> list[FallbackEndpoint]:
    """Every ``fallback`` table, checked (see :func:`parse_entry`)."""
    if not isinstance(raw, list):
        raise ConfigError(f"{where}: 'fallback' must be a list of tables, got {raw!r}")
    return [parse_entry(i, entry, specs, env, where) for i, entry in enumerate(raw)]


def endpoint_model(entry: FallbackEndpoint, primary: ProviderSettings,
                   spec: ProviderSpec) -> str | None:
    """The model ``entry`` answers with: its own, else None (the request's model, so it
    follows ``/model``) when it is the primary's provider, else the provider's default."""
    if entry.model:
        return entry.model
    if entry.provider == primary.provider:
        return None
    return spec.default_model or None


def endpoint_settings(entry: FallbackEndpoint, primary: ProviderSettings,
                      spec: ProviderSpec) -> ProviderSettings:
    """Settings for ``entry``: its provider, model, URL and key; retries, timeouts and
    provider options as the primary's."""
    return replace(primary, provider=entry.provider,
                   model=endpoint_model(entry, primary, spec) or primary.model,
                   base_url=entry.base_url, api_key=entry.api_key)
