"""Cross-endpoint fallback: a chain of endpoints tried in order when one is down.

:class:`EndpointChain` streams from its active endpoint.  When that fails in a way another
endpoint could fix (see :func:`worth_failover`: retryable, i.e. 5xx, 529 overloaded, a 429
the SDK's retries could not outwait, a connection error or a timeout, and nothing streamed
yet), it says so with one :class:`ProviderNotice` and resends the same request to the next
endpoint, with that endpoint's model.  Requests are provider-neutral, so nothing is
translated; each provider sends back only the reasoning it signed itself.

The switch is sticky but recovers: the endpoint that answered stays active for ``cooldown``
seconds, then the next request tries the primary again.  When every endpoint was tried (or
one fails in a way no other could fix), the last error is raised with what each one said.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from agent.contract.providers import (
    Provider,
    ProviderError,
    ProviderNotice,
    ProviderRequest,
    StepFinished,
    StreamEvent,
)

from .shapes import error_summary


def worth_failover(error: ProviderError) -> bool:
    """True when another endpoint could answer where this one failed: the failure is
    retryable (server error, overload, rate limit, connection, timeout) and no output was
    streamed yet.  Auth failures and bad requests would fail anywhere."""
    return error.retryable and not error.output_started


@dataclass
class Endpoint:
    """One link of the chain: a provider and the model it answers with (None: the
    request's own, as for the primary)."""

    provider: Provider
    model: str | None = None

    def request_for(self, request: ProviderRequest) -> ProviderRequest:
        if self.model is None or self.model == request.model:
            return request
        return replace(request, model=self.model)

    def label(self, request: ProviderRequest) -> str:
        model = self.model or request.model
        return f"{self.provider.label} ({model})" if model else self.provider.label


class EndpointChain:
    """A provider over several endpoints, the primary first (see the module docstring)."""

    def __init__(self, endpoints: Sequence[Endpoint], cooldown: float = 300.0,
                 clock: Callable[[], float] = time.monotonic) -> None:
        if not endpoints:
            raise ValueError("an endpoint chain needs at least one endpoint")
        self.endpoints = list(endpoints)
        self.cooldown = cooldown
        self.clock = clock
        self.active = 0
        self.switched_at = 0.0
        #: Already wrapped: the fallback plugin must not wrap it again.
        self.alternatives: list[Provider] = []

    @property
    def current(self) -> Provider:
        return self.endpoints[self.active].provider

    @property
    def label(self) -> str:
        return self.current.label

    def __getattr__(self, name: str) -> Any:
        # Anything else (settings, ...) is the active endpoint's.
        if name in ("endpoints", "active"):
            raise AttributeError(name)
        return getattr(self.current, name)

    def _start(self) -> int:
        """The endpoint a new request starts on: the active one, or the primary again once
        the cooldown has passed."""
        if self.active and self.clock() - self.switched_at >= self.cooldown:
            self.active = 0
        return self.active

    async def stream(self, request: ProviderRequest) -> AsyncIterator[StreamEvent]:
        """Stream from the active endpoint, moving down the chain (wrapping round to the
        ones before it) on failures :func:`worth_failover` accepts; each endpoint is tried at
        most once per request."""
        start = self._start()
        order = [*range(start, len(self.endpoints)), *range(start)]
        failures: list[tuple[str, ProviderError]] = []
        for position, index in enumerate(order):
            endpoint = self.endpoints[index]
            sent = endpoint.request_for(request)
            label = endpoint.label(request)
            emitted = False
            try:
                async for event in endpoint.provider.stream(sent):
                    if isinstance(event, StepFinished) and sent.model != request.model:
                        event.model = sent.model  # priced at the model that answered
                    emitted = emitted or not isinstance(event, ProviderNotice)
                    yield event
            except ProviderError as error:
                failures.append((label, error))
                last = position + 1 == len(order)
                if emitted or last or not worth_failover(error):
                    if len(failures) > 1:
                        _summarise(error, failures, every=last)
                    raise
                following = self.endpoints[order[position + 1]].label(request)
                yield ProviderNotice(f"endpoint fallback: {label} failed "
                                     f"({error_summary(error)}), retrying on {following}")
                continue
            if index != self.active:
                self.active, self.switched_at = index, self.clock()
            return

    async def list_models(self) -> list[str]:
        """The active endpoint's models."""
        return await self.current.list_models()

    def max_output_tokens(self, request: ProviderRequest) -> int:
        """The most output tokens any endpoint may produce for ``request``: any of them may
        end up answering it (see :func:`plugins_builtin.budget.spend.output_bound`)."""
        bounds = []
        for endpoint in self.endpoints:
            ask = getattr(endpoint.provider, "max_output_tokens", None)
            try:
                said = ask(endpoint.request_for(request)) if callable(ask) else None
            except Exception:  # a provider that cannot say leaves the request's own cap
                said = None
            ok = isinstance(said, int) and not isinstance(said, bool) and said > 0
            bounds.append(said if ok else request.max_tokens)
        return max(bounds)

    async def aclose(self) -> None:
        """Close every endpoint's client (those that have one)."""
        for endpoint in self.endpoints:
            close = getattr(endpoint.provider, "aclose", None)
            if callable(close):
                await close()


def _summarise(error: ProviderError, failures: list[tuple[str, ProviderError]], *,
               every: bool) -> None:
    """Make ``error`` (the last one) say what each endpoint tried said."""
    said = "; ".join(f"{label}: {error_summary(err, 300)}" for label, err in failures)
    head = "every endpoint failed" if every else f"endpoint fallback stopped at {failures[-1][0]}"
    error.message = f"{head} - {said}"
    error.args = (error.message,)
