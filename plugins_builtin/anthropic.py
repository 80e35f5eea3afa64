"""The ``anthropic`` provider: the Messages API over the ``anthropic`` SDK (imported lazily).

- The system prompt goes in ``system``; tools as ``{name, description, input_schema}``.
- Extended thinking per level: off → none; low, medium, high → budgets of 6,400, 16,000 and
  38,400 tokens; max → the largest budget below ``max_tokens``, which is raised to the model's
  output limit.  ``max_tokens`` always leaves room above the budget, as the API requires.
  Models that only take adaptive thinking get ``{"type": "adaptive"}`` and the level as
  ``output_config.effort``.
- Thinking blocks come back with their signatures (and redacted thinking with its data) in
  :class:`~agent.contract.messages.ReasoningPart` and are sent back in later assistant turns, which
  the API requires when thinking is combined with tool use.  Other providers' reasoning is never
  sent; a turn whose first step another provider answered goes on without thinking.
- Prompt caching: a cache breakpoint on the system prompt (covering tools and system) and on
  the newest message, unless ``settings.options["prompt_cache"]`` is false.

Usage is normalised to the OpenAI convention used across providers: ``input_tokens`` counts
every prompt token, including cache reads (``cached_tokens``) and cache writes
(``cache_write_tokens``); Anthropic reports those three separately.
"""

from __future__ import annotations

import asyncio
import json
import os
import warnings
from collections.abc import AsyncIterator
from typing import Any

from agent import hookimpl
from agent.contract.messages import (
    ImagePart,
    Message,
    ReasoningPart,
    TextPart,
    ToolCallPart,
    ToolResultPart,
    decode_arguments,
)
from agent.contract.options import Option
from agent.contract.providers import (
    Preset,
    ProviderError,
    ProviderNotice,
    ProviderRequest,
    ProviderSettings,
    ProviderSpec,
    ReasoningDelta,
    StepFinished,
    StreamEvent,
    TextDelta,
    ToolCallStarted,
    Usage,
)
from agent.loop.streaming import (
    Deadlines,
    StreamPolicy,
    attempt_sse,
    host_of,
    malformed_failure,
    on_daemon_thread,
    status_failure,
    transport_failure,
    with_retries,
)

DEFAULT_BASE_URL = "https://api.anthropic.com"

#: Thinking budgets in tokens per level ("max" is computed from the output limit).
BUDGETS = {"low": 6_400, "medium": 16_000, "high": 38_400}
MIN_BUDGET = 1_024
#: Room kept above a fixed budget for the visible answer and tool calls.
ANSWER_ROOM = 8_192

#: Output token limits by model id prefix (longest match wins); unknown models get
#: DEFAULT_OUTPUT_LIMIT.  ``settings.options["max_output_tokens"]`` overrides.
OUTPUT_LIMITS = {
    "claude-opus-4-0": 32_000,
    "claude-opus-4-1": 32_000,
    "claude-opus-4-2025": 32_000,
    "claude-3-5": 8_192,
    "claude-3-haiku": 4_096,
}
DEFAULT_OUTPUT_LIMIT = 64_000

#: Models that take adaptive thinking (``{"type": "adaptive"}`` plus an effort) instead of a
#: token budget; ``settings.options["thinking_mode"]`` (``budget``/``adaptive``) overrides.
ADAPTIVE_PREFIXES = ("claude-opus-4-6", "claude-mythos")
ADAPTIVE_EFFORTS = {"low": "low", "medium": "medium", "high": "high", "max": "max"}

#: The key under which a malformed tool-call argument string is handed to the core loop.

_STOP = {
    "end_turn": "end", "stop_sequence": "end", "tool_use": "tool_use",
    "max_tokens": "max_tokens", "model_context_window_exceeded": "max_tokens",
    "refusal": "refusal", "pause_turn": "pause",
}


def output_limit(model: str, options: dict[str, Any]) -> int:
    """The most output tokens ``model`` may produce in one response."""
    if options.get("max_output_tokens"):
        return int(options["max_output_tokens"])
    matches = [p for p in OUTPUT_LIMITS if model.startswith(p)]
    return OUTPUT_LIMITS[max(matches, key=len)] if matches else DEFAULT_OUTPUT_LIMIT


def thinking_params(level: str, max_tokens: int, limit: int) -> tuple[int, dict[str, Any] | None]:
    """``(max_tokens, thinking)`` for a thinking level: budget ≥ 1024 and < max_tokens."""
    if level == "off":
        return min(max_tokens, limit), None
    if level == "max":
        max_tokens = max(limit, MIN_BUDGET + 1)
        budget = max_tokens - 1
    else:
        budget = BUDGETS.get(level, BUDGETS["medium"])
        max_tokens = min(limit, max(max_tokens, budget + ANSWER_ROOM))
        budget = max(MIN_BUDGET, min(budget, max_tokens - 1))
        max_tokens = max(max_tokens, budget + 1)
    return max_tokens, {"type": "enabled", "budget_tokens": budget}


def _own_thinking(part: Any) -> bool:
    """True for thinking this API signed (or redacted): the only reasoning it takes back."""
    return (isinstance(part, ReasoningPart) and part.provider in (None, "anthropic")
            and bool(part.redacted or part.signature))


def turn_began_without_thinking(messages: list[Message]) -> bool:
    """True when the turn in progress (what follows the last user prompt) has an assistant
    step and the first one carries no thinking of ours: another provider answered it (the
    ``fallback`` plugin switched endpoints mid-turn) or it was made with thinking off.  With
    thinking on, the API wants that message to start with a thinking block, so the rest of
    such a turn is sent without thinking (one thinking configuration per turn)."""
    start = next((i for i in range(len(messages) - 1, -1, -1) if messages[i].role == "user"), -1)
    for msg in messages[start + 1:]:
        if msg.role == "assistant":
            return not any(_own_thinking(p) for p in msg.parts)
    return False


def _assistant_blocks(msg: Message, thinking: bool) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    for part in msg.parts:
        if isinstance(part, ReasoningPart):
            if not thinking:
                continue  # with thinking off, earlier thinking is not needed
            # Only our own signed thinking is accepted back; other providers' reasoning and
            # unsigned text are dropped.
            if not _own_thinking(part):
                continue
            if part.redacted:
                blocks.append({"type": "redacted_thinking", "data": part.redacted})
            else:
                blocks.append({"type": "thinking", "thinking": part.text,
                               "signature": part.signature})
        elif isinstance(part, TextPart):
            if part.text:  # empty text blocks are rejected
                blocks.append({"type": "text", "text": part.text})
        elif isinstance(part, ToolCallPart):
            blocks.append({"type": "tool_use", "id": part.id, "name": part.name,
                           "input": part.arguments})
    return blocks


def anthropic_messages(messages: list[Message], thinking: bool = True) -> list[dict[str, Any]]:
    """History → ``messages``: tool results become ``tool_result`` blocks in a user turn
    (first in it, as the API requires) and consecutive same-role turns are merged.  Signed
    thinking is sent back only when ``thinking`` is on."""
    out: list[dict[str, Any]] = []
    for msg in messages:
        if msg.role == "assistant":
            role, blocks = "assistant", _assistant_blocks(msg, thinking)
        else:
            role = "user"
            blocks = [
                {"type": "tool_result", "tool_use_id": r.call_id, "content": _result_content(r),
                 **({"is_error": True} if r.is_error else {})}
                for r in msg.tool_results
            ]
            if msg.role == "user" and msg.text:
                blocks.append({"type": "text", "text": msg.text})
            if msg.role == "user":
                blocks.extend(_image_block(image) for image in msg.images)
        if not blocks:
            continue
        if out and out[-1]["role"] == role:
            out[-1]["content"].extend(blocks)
        else:
            out.append({"role": role, "content": blocks})
    return out


def _result_content(result: ToolResultPart) -> Any:
    """A ``tool_result``'s content: its text, or text and image blocks when it has images."""
    if not result.images:
        return result.output
    text = [{"type": "text", "text": result.output}] if result.output else []
    return [*text, *(_image_block(image) for image in result.images)]


def _image_block(image: ImagePart) -> dict[str, Any]:
    return {"type": "image", "source": {"type": "base64", "media_type": image.media_type,
                                        "data": image.data}}


def anthropic_tools(tools: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [
        {"name": t["name"], "description": t.get("description", ""),
         "input_schema": t.get("parameters") or {"type": "object", "properties": {}}}
        for t in tools
    ]


def _mark_cache(messages: list[dict[str, Any]]) -> None:
    """Put a cache breakpoint on the newest cacheable block, so the next step reads the whole
    conversation so far from the cache."""
    if not messages:
        return
    for block in reversed(messages[-1]["content"]):
        if block["type"] in ("text", "tool_result", "tool_use"):
            block["cache_control"] = {"type": "ephemeral"}
            return


_USAGE_FIELDS = (
    "input_tokens", "output_tokens", "cache_read_input_tokens", "cache_creation_input_tokens",
)


def anthropic_usage(counts: dict[str, int]) -> Usage:
    """Anthropic usage counts → :class:`Usage` (input includes cache reads and writes)."""
    read = counts.get("cache_read_input_tokens", 0)
    written = counts.get("cache_creation_input_tokens", 0)
    return Usage(
        input_tokens=counts.get("input_tokens", 0) + read + written,
        output_tokens=counts.get("output_tokens", 0),
        cached_tokens=read,
        cache_write_tokens=written,
    )


def _error_parts(body: Any) -> tuple[str | None, str | None]:
    """``(message, type)`` from an Anthropic error body (``{"type":"error","error":{...}}``)."""
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict):
            msg = inner.get("message")
            return (msg if isinstance(msg, str) else None), inner.get("type")
    if isinstance(body, str) and body.strip():
        return body.strip()[:300], None
    return None, None


def map_error(exc: BaseException, *, output_started: bool, connected: bool = False,
              host: str = "api.anthropic.com") -> ProviderError:
    """``anthropic``/``httpx2`` exceptions → :class:`ProviderError` with a clear message
    naming the endpoint's ``host``.  ``connected``: the response had begun (a broken stream,
    not a failed connection)."""
    import anthropic
    import httpx2

    from agent.loop.retry import MalformedStream

    if isinstance(exc, ProviderError):
        exc.output_started = exc.output_started or output_started
        return exc
    if isinstance(exc, MalformedStream):
        return malformed_failure(exc, host, output_started=output_started)
    if isinstance(exc, anthropic.APIStatusError):
        status = exc.status_code
        text, kind_name = _error_parts(exc.body)
        if status == 200:  # an ``event: error`` the SDK raised (streams read by the SDK)
            error = _stream_error(host, exc.body)
            error.output_started = output_started
            return error
        text = text or exc.response.reason_phrase or "request failed"
        kind = {401: "auth", 403: "auth", 404: "not_found", 429: "rate_limit",
                529: "overloaded"}.get(status, "server" if status >= 500 else "request")
        return status_failure(host, status, text, exc.response.headers, kind=kind,
                              output_started=output_started)
    if isinstance(exc, anthropic.APIConnectionError | httpx2.TransportError):
        cause = exc.__cause__ if isinstance(exc, anthropic.APIConnectionError) else exc
        if isinstance(cause, MalformedStream):
            return malformed_failure(cause, host, output_started=output_started)
        if not isinstance(cause, httpx2.TransportError):
            cause = cause if isinstance(cause, BaseException) else exc
            if isinstance(exc, anthropic.APITimeoutError):
                cause = httpx2.ReadTimeout(str(cause))
        return transport_failure(cause, host, connected=connected,
                                 output_started=output_started)
    if isinstance(exc, ValueError):  # malformed JSON the SDK could not parse
        return ProviderError(f"{host} sent a malformed stream: {exc}", kind="protocol",
                             output_started=output_started)
    return ProviderError(f"{host} request failed: {type(exc).__name__}: {exc}",
                         output_started=output_started)


def _stream_error(host: str, body: Any) -> ProviderError:
    """An ``event: error`` inside the stream (e.g. overloaded; no HTTP status of its own)."""
    text, kind_name = _error_parts(body)
    label = f"{text or 'error event'}" + (f" ({kind_name})" if kind_name else "")
    retryable = kind_name in (None, "overloaded_error", "api_error", "rate_limit_error")
    return ProviderError(f"{host} stream error: {label}", retryable=retryable, kind="stream")


class _Assembler:
    """Accumulates Messages API stream events (JSON objects, as
    :func:`agent.loop.streaming.read_sse` hands them over) into stream events and the final
    message."""

    @staticmethod
    def is_content(name: Any, event: Any) -> bool:
        """Whether ``event`` is progress: anything but a ping."""
        return name != "ping"

    def __init__(self, host: str = "api.anthropic.com") -> None:
        self.host = host
        self.blocks: dict[int, dict[str, Any]] = {}
        self.counts: dict[str, int] = {}
        self.stop: str | None = None
        self.done = False

    def feed(self, name: Any, event: Any, out: list[StreamEvent]) -> None:
        """Append the stream events of one Messages API event to ``out``.  Dispatched, as
        the SDK does, on the ``event:`` name for pings and errors, else on the data's type."""
        if name == "ping":
            return
        if name == "error":
            raise _stream_error(self.host, event)
        kind = event.get("type")
        if kind == "content_block_delta":
            state = self.blocks.get(event["index"])
            if state is None:
                return
            delta = event["delta"]
            kind = delta.get("type")
            if kind == "text_delta":
                state["text"].append(delta["text"])
                out.append(TextDelta(delta["text"]))
            elif kind == "thinking_delta":
                state["text"].append(delta["thinking"])
                out.append(ReasoningDelta(delta["thinking"]))
            elif kind == "signature_delta":
                state["signature"] = (state["signature"] or "") + delta["signature"]
            elif kind == "input_json_delta":
                state["text"].append(delta["partial_json"])
        elif kind == "message_start":
            self._count((event.get("message") or {}).get("usage"))
        elif kind == "content_block_start":
            block = event["content_block"]
            block_type = block.get("type")
            state: dict[str, Any] = {"type": block_type, "text": [], "signature": None}
            self.blocks[event["index"]] = state
            if block_type == "redacted_thinking":
                state["data"] = block.get("data")
            elif block_type == "tool_use":
                state.update(id=block["id"], name=block["name"])
                out.append(ToolCallStarted(block["id"], block["name"]))
            elif block_type in ("text", "thinking"):
                initial = block.get(block_type) or ""
                if initial:
                    state["text"].append(initial)
                    out.append(TextDelta(initial) if block_type == "text"
                               else ReasoningDelta(initial))
        elif kind == "message_delta":
            self.stop = (event.get("delta") or {}).get("stop_reason") or self.stop
            self._count(event.get("usage"))
        elif kind == "message_stop":
            self.done = True

    def whole(self, answer: dict[str, Any]) -> list[StreamEvent]:
        """The events of a whole (non-streamed) message, fed as the stream would have
        brought them: each content block started with its full content."""
        out: list[StreamEvent] = []
        self.feed("message_start", {"type": "message_start", "message": answer}, out)
        for index, block in enumerate(answer.get("content") or ()):
            start = dict(block)
            if block.get("type") == "tool_use":
                start["input"] = {}
            self.feed("content_block_start", {"type": "content_block_start", "index": index,
                                              "content_block": start}, out)
            if block.get("type") == "tool_use":
                raw = json.dumps(block.get("input") or {})
                self.feed("content_block_delta", {"type": "content_block_delta", "index": index,
                                                  "delta": {"type": "input_json_delta",
                                                            "partial_json": raw}}, out)
            elif block.get("type") == "thinking" and block.get("signature"):
                self.blocks[index]["signature"] = block["signature"]
        self.feed("message_delta", {"type": "message_delta",
                                    "delta": {"stop_reason": answer.get("stop_reason")},
                                    "usage": answer.get("usage")}, out)
        self.feed("message_stop", {"type": "message_stop"}, out)
        return out

    def _count(self, usage: dict[str, Any] | None) -> None:
        # Counts are cumulative; message_delta may repeat some (newer servers repeat input).
        for field in _USAGE_FIELDS:
            value = (usage or {}).get(field)
            if value is not None:
                self.counts[field] = value

    def finish_step(self) -> StepFinished:
        if not self.done:
            raise ProviderError(f"{self.host} ended the stream before the message was complete",
                                retryable=True, kind="connection", output_started=True)
        parts: list[Any] = []
        for index in sorted(self.blocks):
            state = self.blocks[index]
            text = "".join(state["text"])
            if state["type"] == "thinking":
                parts.append(ReasoningPart(text, signature=state["signature"],
                                           provider="anthropic"))
            elif state["type"] == "redacted_thinking":
                parts.append(ReasoningPart(redacted=state["data"], provider="anthropic"))
            elif state["type"] == "text":
                if text:
                    parts.append(TextPart(text))
            elif state["type"] == "tool_use":
                parts.append(ToolCallPart(id=state["id"], name=state["name"],
                                          arguments=decode_arguments(text), raw_arguments=text))
        stop = _STOP.get(self.stop or "end_turn", self.stop or "end")
        return StepFinished(Message("assistant", parts), anthropic_usage(self.counts), stop)


def _quiet_sdk_warnings() -> None:
    """Keep the SDK's per-request warnings off the terminal (they would print over the
    full-screen UI); model deprecation becomes a :class:`ProviderNotice` instead."""
    warnings.filterwarnings("ignore", message=r"The model '.*' is deprecated",
                            category=DeprecationWarning)
    warnings.filterwarnings("ignore", message=r"Using Claude with .*thinking\.type=enabled",
                            category=UserWarning)


class AnthropicProvider:
    """The Messages API over ``anthropic.AsyncAnthropic``."""

    def __init__(self, settings: ProviderSettings) -> None:
        self.settings = settings
        base = (settings.base_url or DEFAULT_BASE_URL).rstrip("/")
        # The SDK appends /v1/...; accept configs that spell the base URL with it.
        self.base_url = base[: -len("/v1")] if base.endswith("/v1") else base
        self.label = "anthropic messages"
        #: How errors name the endpoint: its host (``api.anthropic.com``, a proxy's).
        self.host = host_of(self.base_url)
        self.policy = StreamPolicy.of(settings, self.host)
        self.alternatives: list[Any] = []
        self._client: Any = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._noticed: set[str] = set()

    def client(self) -> Any:
        """The SDK client, built on first use in the running loop."""
        loop = asyncio.get_running_loop()
        if self._client is None or self._loop is not loop:
            self._client, self._loop = self._build(), loop
        return self._client

    async def ready_client(self) -> Any:
        """:meth:`client`, built on a worker thread when it is new: the SDK's transport (its
        SSL context) and resource modules take 0.3-0.8 s on a loaded machine, which on the
        event loop would freeze the screen."""
        loop = asyncio.get_running_loop()
        if self._client is None or self._loop is not loop:
            built = await on_daemon_thread(self._build)
            if self._client is None or self._loop is not loop:  # not built meanwhile
                self._client, self._loop = built, loop
        return self._client

    def _build(self) -> Any:
        """A new ``anthropic.AsyncAnthropic`` (any thread: it opens nothing yet)."""
        import anthropic

        from agent.loop.retry import async_http_client

        _quiet_sdk_warnings()
        s = self.settings
        key = s.api_key or os.environ.get("ANTHROPIC_API_KEY")
        if not key:
            raise ProviderError(
                "no API key for anthropic: set ANTHROPIC_API_KEY or configure api_key",
                kind="auth",
            )
        # An explicit key keeps the SDK from walking its credential chain (profiles on
        # disk, federation).  x-api-key too: compatible servers often only read that.
        client = anthropic.AsyncAnthropic(
            api_key=key,
            base_url=self.base_url,
            # Retries happen in agent.loop.streaming, which also retries streams that stall
            # after their headers (the SDK retries only the opening).
            max_retries=0,
            timeout=s.timeout,
            default_headers={"x-api-key": key},
            http_client=async_http_client(timeout=s.timeout),
        )
        # The SDK imports each resource on first use: do it now, not inside the first
        # request's deadlines.
        client.messages  # noqa: B018
        return client

    async def aclose(self) -> None:
        """Close the HTTP client (optional)."""
        if self._client is not None:
            client, self._client = self._client, None
            await client.close()

    def output_allowance(self, request: ProviderRequest) -> tuple[int, dict[str, Any] | None]:
        """``(max_tokens, thinking)`` as this request will be sent."""
        model = request.model or self.settings.model
        options = self.settings.options
        limit = output_limit(model, options)
        if request.thinking != "off" and turn_began_without_thinking(request.messages):
            return thinking_params("off", request.max_tokens, limit)
        mode = options.get("thinking_mode") or "auto"
        if mode == "auto":
            mode = "adaptive" if model.startswith(ADAPTIVE_PREFIXES) else "budget"
        if mode == "adaptive":
            max_tokens, thinking = thinking_params("off", request.max_tokens, limit)
            if request.thinking != "off":
                # The model sizes its own thinking; give it the whole output allowance.
                max_tokens, thinking = limit, {"type": "adaptive"}
            return max_tokens, thinking
        return thinking_params(request.thinking, request.max_tokens, limit)

    def max_output_tokens(self, request: ProviderRequest) -> int:
        """The most output tokens (thinking included) this request may produce: what the
        spending cap must assume (see :func:`plugins_builtin.budget.spend.output_bound`)."""
        return self.output_allowance(request)[0]

    def params(self, request: ProviderRequest) -> dict[str, Any]:
        """The keyword arguments for ``messages.create``."""
        model = request.model or self.settings.model
        options = self.settings.options
        max_tokens, thinking = self.output_allowance(request)
        cache = options.get("prompt_cache") is not False
        messages = anthropic_messages(request.messages, thinking is not None)
        params: dict[str, Any] = {
            "model": model, "max_tokens": max_tokens, "messages": messages, "stream": True,
        }
        if thinking is not None and thinking["type"] == "adaptive":
            params["output_config"] = {
                "effort": ADAPTIVE_EFFORTS.get(request.thinking, "medium")
            }
        if request.system:
            system: dict[str, Any] = {"type": "text", "text": request.system}
            if cache:
                system["cache_control"] = {"type": "ephemeral"}
            params["system"] = [system]
        if cache:
            _mark_cache(messages)
        if request.tools:
            params["tools"] = anthropic_tools(request.tools)
        if thinking is not None:
            params["thinking"] = thinking
        return params

    def _deprecation(self, model: str) -> ProviderNotice | None:
        """A notice, once per provider, when the SDK knows ``model`` is being retired."""
        if model in self._noticed:
            return None
        self._noticed.add(model)
        try:
            from anthropic._data import DEPRECATED_MODELS  # private: best effort only
        except ImportError:
            return None
        end = DEPRECATED_MODELS.get(model)
        if end is None:
            return None
        return ProviderNotice(f"anthropic: model {model} is deprecated (end of life {end})")

    async def stream(self, request: ProviderRequest) -> AsyncIterator[StreamEvent]:
        """Stream one step within the deadlines, retrying what a retry can cure (see
        :mod:`agent.loop.streaming`); see :meth:`agent.contract.providers.Provider.stream`."""
        try:
            params = self.params(request)
            client = await self.ready_client()
        except Exception as exc:
            raise map_error(exc, output_started=False, host=self.host) from exc
        notice = self._deprecation(params["model"])
        if notice is not None:
            yield notice
        async for event in with_retries(self.policy,
                                        lambda clock: self._attempt(client, params, clock)):
            yield event

    async def _attempt(self, client: Any, params: dict[str, Any], clock: Deadlines
                       ) -> AsyncIterator[StreamEvent]:
        """One try: send (the SDK: auth, headers, status errors), then read the body's
        events ourselves (:func:`agent.loop.streaming.read_sse`) and assemble them."""
        opening = client.messages.create(**params, extra_headers=clock.headers())
        async for event in attempt_sse(
                clock, opening, _Assembler(self.host), named=True,
                map_error=lambda exc, **how: map_error(exc, host=self.host, **how),
                host=self.host):
            yield event

    async def list_models(self) -> list[str]:
        """Model ids from ``GET /v1/models``, sorted."""
        try:
            return sorted([m.id async for m in self.client().models.list()])
        except Exception as exc:
            raise map_error(exc, output_started=False, host=self.host) from exc


def create(settings: ProviderSettings) -> AnthropicProvider:
    """Build the provider for ``settings``."""
    return AnthropicProvider(settings)


SPEC = ProviderSpec(
    name="anthropic",
    create=create,
    env_key="ANTHROPIC_API_KEY",
    default_base_url=DEFAULT_BASE_URL,
    default_model="claude-sonnet-4-5",
    description="Anthropic Messages API (extended thinking, prompt caching)",
    auto_priority=20,  # picked first when no provider is configured and its key is set
    warm_modules=("anthropic",),
    presets=(  # what the provider setup offers for this wire protocol (first and last)
        Preset("anthropic", "Anthropic", "https://api.anthropic.com/v1", "ANTHROPIC_API_KEY",
               "sk-ant-...",
               fallback=("claude-sonnet-4-5", "claude-opus-4-1", "claude-haiku-4-5"),
               order=10),
        Preset("custom-anthropic", "Custom Anthropic-compatible", None, custom=True,
               order=910),
    ),
)


@hookimpl
def agent_addoption(options: Any) -> None:
    """Declare the anthropic provider's config keys."""
    options.add(Option(
        "prompt_cache", type="bool", default=True,
        help="anthropic: mark the system prompt and newest message for prompt caching"))
    options.add(Option(
        "thinking_mode", default="auto", choices=("auto", "budget", "adaptive"),
        help="anthropic thinking: token budgets, adaptive, or auto (by model)"))
    options.add(Option(
        "max_output_tokens", type="int", default=0,
        help="anthropic: the model's output token limit (0 = known per model)"))


@hookimpl
def agent_register_providers(register: Any, config: Any) -> None:
    """Register the ``anthropic`` provider."""
    register(SPEC)
