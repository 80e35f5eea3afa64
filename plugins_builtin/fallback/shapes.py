"""Request-shape fallback: switch to another shape of the same service when one is rejected.

A provider may list ``alternatives``: other providers for the same service that speak another
request shape (the openai plugin offers the responses API behind chat completions on the
official endpoint).  The plugin wraps such a provider in a :class:`FallbackProvider`:
when the current endpoint fails with 400/404/405/415/422/501, the error is not retryable and
nothing was streamed yet, it moves to the next alternative for good (for the life of the
provider, i.e. the session), says so once with a :class:`ProviderNotice`, and resends the same
request.  Rate limits, auth failures and server errors never switch shapes: retries, the
endpoint chain (:mod:`.chain`) and the user handle those.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from agent.contract.providers import (
    Provider,
    ProviderError,
    ProviderNotice,
    ProviderRequest,
    StreamEvent,
)

#: Statuses meaning "this endpoint does not take this request shape".
SWITCH_STATUSES = frozenset({400, 404, 405, 415, 422, 501})


def should_switch(error: ProviderError) -> bool:
    """True when ``error`` says the endpoint rejected the request shape, not the request's
    timing, credentials or the server's health."""
    return (
        error.status in SWITCH_STATUSES and not error.retryable and not error.output_started
    )


def error_summary(error: ProviderError, limit: int = 200) -> str:
    """``error``'s message on one line, cut to ``limit`` characters."""
    text = " ".join(error.message.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


class FallbackProvider:
    """A provider that streams from the first of a chain and moves down it, stickily, when
    an endpoint rejects the request shape (see :func:`should_switch`)."""

    def __init__(self, primary: Provider) -> None:
        self.chain: list[Provider] = [primary, *getattr(primary, "alternatives", [])]
        self.index = 0
        #: Already wrapped: the fallback plugin must not wrap it again.
        self.alternatives: list[Provider] = []

    @property
    def current(self) -> Provider:
        return self.chain[self.index]

    @property
    def label(self) -> str:
        return self.current.label

    def __getattr__(self, name: str) -> Any:
        # Anything else (settings, aclose, ...) is the current endpoint's.
        if name in ("chain", "index"):
            raise AttributeError(name)
        return getattr(self.current, name)

    async def stream(self, request: ProviderRequest) -> AsyncIterator[StreamEvent]:
        """Stream from the current endpoint; on a shape rejection switch and retry once per
        remaining alternative."""
        while True:
            provider = self.current
            emitted = False
            try:
                async for event in provider.stream(request):
                    emitted = emitted or not isinstance(event, ProviderNotice)
                    yield event
                return
            except ProviderError as error:
                if emitted or not should_switch(error) or self.index + 1 >= len(self.chain):
                    raise
                self.index += 1
                yield ProviderNotice(
                    f"endpoint fallback: {provider.label} rejected the request, retrying on "
                    f"{self.current.label} ({error_summary(error)})"
                )

    async def list_models(self) -> list[str]:
        """The current endpoint's models."""
        return await self.current.list_models()

