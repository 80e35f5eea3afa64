"""Endpoint fallback: another request shape, then the configured fallback endpoints.

Two layers wrap the selected provider:

- :mod:`.shapes`: a provider offering other request shapes of the same service
  (``alternatives``: responses behind chat completions on api.openai.com) switches for good
  when the endpoint rejects the shape.
- :mod:`.chain`: with ``fallback`` configured (a list of ``{provider, model, base_url,
  api_key_env}`` tables, checked by :mod:`.endpoints` at startup), a retryable failure before
  any output moves the request down the chain; the endpoint that answered stays in use for
  ``fallback_cooldown`` seconds, then the primary is tried again.
"""

from __future__ import annotations

import logging
import os
from typing import Any

from agent import hookimpl
from agent.boot.config import ConfigError
from agent.contract.options import Option
from agent.contract.providers import Provider

from .chain import Endpoint, EndpointChain, worth_failover
from .endpoints import endpoint_model, endpoint_settings, parse_entries
from .shapes import SWITCH_STATUSES, FallbackProvider, should_switch

__all__ = ["SWITCH_STATUSES", "Endpoint", "EndpointChain", "FallbackProvider", "should_switch",
           "worth_failover"]

log = logging.getLogger("agent.fallback")


@hookimpl
def agent_addoption(options: Any) -> None:
    """Declare ``fallback`` and ``fallback_cooldown``."""
    options.add(Option(
        "fallback", type="list", default=[],
        help="endpoints to try in order when the provider's fails: tables of provider, model, "
             "base_url, api_key_env (docs/configuration.md#fallback-endpoints)"))
    options.add(Option(
        "fallback_cooldown", type="float", default=300.0, minimum=0,
        help="seconds a fallback endpoint stays in use before the primary is tried again"))


def _registered_specs(config: Any) -> dict[str, Any] | None:
    """The provider specs the loaded plugins register (None without a plugin host)."""
    host = getattr(config, "plugins", None)
    if host is None or getattr(host, "pm", None) is None:
        return None
    from agent.contract.hooks import Hooks

    return Hooks(host.pm).providers(config)


@hookimpl
def agent_configure(config: Any) -> None:
    """Check every ``fallback`` table now, so a typo stops startup (exit 2), not a request."""
    raw = config.get("fallback")
    if raw:
        parse_entries(raw, _registered_specs(config), os.environ, str(config.config_file))


def with_shapes(provider: Provider) -> Provider:
    """``provider`` wrapped for request-shape switching when it offers other shapes."""
    if getattr(provider, "alternatives", None) and not isinstance(
            provider, (FallbackProvider, EndpointChain)):
        return FallbackProvider(provider)
    return provider


def build_chain(primary: Provider, config: Any, providers: dict[str, Any],
                settings: Any) -> Provider:
    """``primary`` followed by the configured fallback endpoints, or ``primary`` alone when
    there are none."""
    raw = config.get("fallback") if config is not None else None
    if not raw or settings is None or isinstance(primary, EndpointChain):
        return primary
    try:
        entries = parse_entries(raw, providers, os.environ, str(config.config_file))
    except ConfigError as exc:  # checked at startup; only a changed environment gets here
        log.warning("fallback endpoints unused: %s", exc)
        return primary
    endpoints = [Endpoint(primary)]
    for entry in entries:
        spec = providers[entry.provider]
        provider = spec.create(endpoint_settings(entry, settings, spec))
        endpoints.append(Endpoint(with_shapes(provider), endpoint_model(entry, settings, spec)))
    return EndpointChain(endpoints, cooldown=float(config.get("fallback_cooldown")))


@hookimpl(wrapper=True)
def agent_select_provider(config: Any, providers: Any, settings: Any) -> Any:
    """Wrap the selected provider: shape switching when it has alternatives, then the
    endpoint chain when ``fallback`` is configured."""
    provider = yield
    if provider is None:
        return None
    return build_chain(with_shapes(provider), config, providers, settings)
