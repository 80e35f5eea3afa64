"""The provider contract: a request in, a stream of typed events out.

A provider plugin registers a :class:`ProviderSpec`; the core builds the provider from the
resolved settings and calls :meth:`Provider.stream` once per step.  Providers import their
SDK lazily, inside ``stream``, so nothing heavy sits on the path to the first frame.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from agent.contract.messages import Message, has_images, without_images

# What a provider plugin registers lives in its own module, so that finding the providers
# (--help, choosing one) does not define every type of the request and its stream.
from agent.contract.provider_spec import Preset as Preset
from agent.contract.provider_spec import ProviderSpec as ProviderSpec
from agent.contract.provider_spec import auto_provider as auto_provider

THINKING_LEVELS = ("off", "low", "medium", "high", "max")


@dataclass
class ProviderSettings:
    """Everything needed to talk to one endpoint."""

    provider: str
    model: str
    base_url: str | None = None
    api_key: str | None = None
    max_retries: int = 3
    timeout: float = 600.0
    retry_after_cap: float = 60.0
    #: Wait before the first retry when the server names none; doubled per retry, capped.
    retry_backoff: float = 0.5
    #: Longest wait for content (keep-alives and pings do not count); see agent.loop.streaming.
    stream_idle_timeout: float = 60.0
    #: Longest one model request may take in all, retries included.
    request_deadline: float = 1800.0
    options: dict[str, Any] = field(default_factory=dict)  # provider-specific config keys


@dataclass
class ProviderRequest:
    """One model request: system prompt, history, tools and thinking level."""

    model: str
    system: str
    messages: list[Message]
    tools: list[dict[str, Any]] = field(default_factory=list)
    thinking: str = "medium"
    max_tokens: int = 16_000
    metadata: dict[str, Any] = field(default_factory=dict)
    #: the user chose ``thinking`` (``--think``, the config file, ``/think``, an agent
    #: variant) rather than leaving the default: a provider may then send reasoning
    #: parameters to a model it does not know takes them
    thinking_chosen: bool = False


@dataclass
class Usage:
    """Token counts as the provider reports them."""

    input_tokens: int = 0
    output_tokens: int = 0
    cached_tokens: int = 0
    reasoning_tokens: int = 0
    cache_write_tokens: int = 0

    def add(self, other: Usage) -> None:
        self.input_tokens += other.input_tokens
        self.output_tokens += other.output_tokens
        self.cached_tokens += other.cached_tokens
        self.reasoning_tokens += other.reasoning_tokens
        self.cache_write_tokens += other.cache_write_tokens


# ---- stream events (provider -> loop) ------------------------------------------------------


@dataclass
class TextDelta:
    text: str


@dataclass
class ReasoningDelta:
    text: str


@dataclass
class ToolCallStarted:
    """A tool call began streaming; its arguments are not complete yet."""

    id: str
    name: str


@dataclass
class StepFinished:
    """The step's assembled assistant message, its usage, and why the model stopped
    (``end``, ``tool_use``, ``max_tokens``, ...).  ``model`` names the model that answered
    when it is not the request's (a fallback endpoint's own model); empty means
    ``request.model``.  Usage is priced at it."""

    message: Message
    usage: Usage
    stop_reason: str = "end"
    model: str = ""


@dataclass
class ProviderNotice:
    """Something the user should know that is not an error (e.g. an endpoint switch)."""

    text: str


StreamEvent = TextDelta | ReasoningDelta | ToolCallStarted | StepFinished | ProviderNotice


class TextOnly:
    """What an endpoint that cannot take images sends instead: every image in the history
    becomes its text placeholder (``[image from mcp__shots__snap (image/png, 3.1 kB) not
    shown: ...]``), and the user is told once per endpoint.  The history keeps the images, so
    a later switch to a model that takes them (``/model``, a fallback) sends them again."""

    def __init__(self, label: str) -> None:
        self.label = label
        self.told = False

    def apply(self, request: ProviderRequest) -> tuple[ProviderRequest, ProviderNotice | None]:
        """``request`` without images, and the one-time notice when any were replaced."""
        if not has_images(request.messages):
            return request, None
        why = f"{self.label} is set not to take images (send_images = false)"
        messages, count = without_images(request.messages, why)
        notice = None
        if not self.told:
            self.told = True
            notice = ProviderNotice(
                f"{self.label} does not take images: {count} image"
                f"{'s are' if count != 1 else ' is'} sent as a text placeholder (set "
                "send_images = true for a model that takes them)")
        from dataclasses import replace

        return replace(request, messages=messages), notice


class ProviderError(Exception):
    """A failed model request, normalised across SDKs.

    ``status`` is the HTTP status when there was one; ``retryable`` says whether waiting and
    trying again could help (after the provider's own retries were spent); ``output_started``
    is set when the failure came after some output was already streamed; ``retry_after`` is
    the delay in seconds the server asked for before a retry, when it named one.
    """

    def __init__(
        self,
        message: str,
        *,
        status: int | None = None,
        retryable: bool = False,
        kind: str = "error",
        output_started: bool = False,
        retry_after: float | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.status = status
        self.retryable = retryable
        self.kind = kind
        self.output_started = output_started
        self.retry_after = retry_after


class BudgetExceeded(ProviderError):
    """A request was refused before it was sent because it could cross a spending cap.

    Raised by an ``agent_prepare_request`` hook (the ``budget`` plugin); the session ends the
    turn with an ``error`` event of kind ``budget`` and ``done`` with reason ``budget``
    (headless exit code 4).  Nothing was sent, so nothing was billed.
    """

    def __init__(self, message: str) -> None:
        super().__init__(message, kind="budget")


@runtime_checkable
class Provider(Protocol):
    """A configured endpoint."""

    #: Short label for notices, e.g. ``openai chat completions``.
    label: str

    # Optional: ``alternatives: list[Provider]``, endpoints speaking another request shape to
    # try, in order, when this one rejects the shape (400/404/405/415/422/501).  The
    # ``fallback`` plugin reads it; without that plugin it is ignored.
    #
    # Optional: ``max_output_tokens(request) -> int | None``, the most output tokens (thinking
    # included) the endpoint will be allowed to produce for ``request``, when the provider
    # sends more than ``request.max_tokens`` (a thinking budget) or less.  Spending caps use
    # it to bound a request's worst-case cost.

    def stream(self, request: ProviderRequest) -> AsyncIterator[StreamEvent]:
        """Send ``request`` and yield events; the last one is :class:`StepFinished`.
        Raise :class:`ProviderError` on failure."""
        ...

    async def list_models(self) -> list[str]:
        """The endpoint's model ids, sorted (may raise :class:`ProviderError`)."""
        ...


@dataclass
class ProviderChoice:
    """What the provider setup chose (``agent_setup_provider``): the front end saves it to
    ``config.toml`` (the keys ``provider``, ``model``, ``base_url``, ``preset``, ``api_key``)
    and uses it at once.  ``api_key`` None stores no key (it is found in the provider's own
    environment variable at every start); ``label`` names the endpoint in the confirmation."""

    provider: str
    model: str
    base_url: str | None = None
    api_key: str | None = None
    preset: str = ""
    label: str = ""
