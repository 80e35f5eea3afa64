"""What a provider plugin registers: its :class:`ProviderSpec` and the endpoints
(:class:`Preset`) its setup offers, and how a provider is chosen when none is named.

Kept apart from :mod:`agent.contract.providers` (the request and its stream of events,
re-exported there) because finding the providers is on the way to ``--help`` and the first
frame, and needs none of those types.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from agent.contract.providers import Provider, ProviderSettings


@dataclass(frozen=True)
class Preset:
    """One endpoint the provider setup offers, declared by the provider plugin that speaks
    its wire protocol (:attr:`ProviderSpec.presets`).

    ``base_url`` is its API root (None for a ``custom`` preset: the setup asks for the URL);
    ``env`` the environment variable that usually holds its key (read by the setup only,
    which then stores the key), ``hint`` the key's shape (``sk-...``), ``keyless`` an
    endpoint that needs no key (a local server).  ``fallback`` models are offered when the
    endpoint cannot list its models.  ``order`` places it in the setup's list (lower first,
    ties by id), which mixes the presets of every provider.  ``protocol`` is the name of the
    provider that speaks to it; leave it empty: the setup fills in the declaring spec's name.
    """

    id: str
    label: str
    base_url: str | None
    env: str | None = None
    hint: str = ""
    keyless: bool = False
    custom: bool = False
    fallback: tuple[str, ...] = ()
    order: int = 500
    protocol: str = ""


@dataclass
class ProviderSpec:
    """A provider plugin's registration: everything the core knows about a provider.

    ``create(settings)`` builds a :class:`Provider`.  ``env_key`` is the standard environment
    variable holding its API key; ``keyless`` providers (local servers) need none.

    ``auto_priority`` takes part in choosing a provider when the user named none: among the
    specs that have one, the highest whose ``env_key`` is set in the environment wins; when
    no such key is set, the highest of them is used (and asks for its key).  None (the
    default) means the provider is used only when named.  ``warm_modules`` are imported in a
    background thread after the first frame (its SDK), so the first answer does not wait
    for a 0.3-0.9 s import, and again, on a worker thread, before a session's first
    request, so the event loop never waits for them (:func:`agent.boot.sdk_warmup.import_off_loop`);
    they are never imported on the way to the first frame.
    """

    name: str
    create: Callable[[ProviderSettings], Provider]
    env_key: str | None = None
    default_base_url: str | None = None
    default_model: str | None = None
    keyless: bool = False
    description: str = ""
    auto_priority: int | None = None
    warm_modules: tuple[str, ...] = ()
    #: the endpoints the provider setup offers for this provider (:class:`Preset`)
    presets: tuple[Preset, ...] = ()


def auto_provider(specs: Mapping[str, ProviderSpec], env: Mapping[str, str]) -> str | None:
    """The provider to use when none is configured (see :attr:`ProviderSpec.auto_priority`):
    the most preferred one whose key variable is set, else the most preferred one; None when
    no registered provider takes part."""
    ranked = sorted((s for s in specs.values() if s.auto_priority is not None),
                    key=lambda s: (-(s.auto_priority or 0), s.name))
    for spec in ranked:
        if spec.env_key and env.get(spec.env_key):
            return spec.name
    return ranked[0].name if ranked else None
