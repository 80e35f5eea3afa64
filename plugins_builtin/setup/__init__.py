"""The provider setup (onboarding): choose an endpoint, a key and a model when no provider is
configured, and again with ``/provider`` (``/login``).

This package is the whole feature: :mod:`.presets` gathers the endpoints the provider plugins
declare (``ProviderSpec.presets``), :mod:`.onboarding` is the dialog; here, the hook.  The core
asks for it through ``agent_setup_provider`` and saves the returned
:class:`agent.contract.providers.ProviderChoice` to ``config.toml`` itself.  Disabled (``--disable
setup``), a start without a provider says how to configure one in ``config.toml`` instead.
"""

from __future__ import annotations

from collections.abc import Awaitable, Mapping
from typing import Any

from agent import hookimpl
from agent.contract.providers import ProviderChoice, ProviderSpec

from .onboarding import run_setup


@hookimpl
def agent_setup_provider(ui: Any, config: Any, providers: Mapping[str, ProviderSpec],
                         problem: str) -> Awaitable[ProviderChoice | None]:
    return run_setup(ui, config, providers)
