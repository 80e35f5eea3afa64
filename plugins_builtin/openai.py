"""The ``openai`` provider: OpenAI and OpenAI-compatible endpoints.

Two request shapes over the ``openai`` SDK (imported lazily, on the first request):

- :class:`ChatProvider`: ``POST /chat/completions``, spoken by OpenAI and by every
  OpenAI-compatible server (Groq, DeepSeek, OpenRouter, Ollama, LM Studio, ...).
- :class:`ResponsesProvider`: ``POST /responses``, OpenAI's own API.  Stateless: ``store=False``
  and reasoning travels back inline as encrypted items, never as ``item_reference``.

Config (``settings.options``): ``openai_api`` = ``auto`` (default) | ``chat`` | ``responses``.
``auto`` on the official endpoint gives chat completions with the responses API as an
alternative that the ``fallback`` plugin switches to when chat rejects the request shape;
elsewhere it is plain chat.  ``send_reasoning`` controls the reasoning parameters, which
gateways that check parameters (LiteLLM's proxy) refuse for models they do not know: unset,
they are sent on the official endpoint, to models known to reason (:data:`REASONING_MODELS`)
and when the user chose a thinking level other than ``off``; true sends them always, false
never.  A 400 that names a parameter of :data:`DROPPABLE` drops it and retries once; the
endpoint then never gets it again for that model (the user is told once).
``reasoning_efforts`` overrides the thinking-level → effort map (e.g. ``{off = "minimal"}``
for models without ``none``).
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import re
from collections.abc import AsyncIterator, Callable
from typing import Any

from agent import hookimpl
from agent.contract.messages import (
    INVALID_JSON,
    ImagePart,
    Message,
    ReasoningPart,
    TextPart,
    ToolCallPart,
    decode_arguments,
)
from agent.contract.options import Option
from agent.contract.providers import (
    Preset,
    Provider,
    ProviderError,
    ProviderNotice,
    ProviderRequest,
    ProviderSettings,
    ProviderSpec,
    ReasoningDelta,
    StepFinished,
    StreamEvent,
    TextDelta,
    TextOnly,
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

log = logging.getLogger("agent.provider_openai")

OFFICIAL_BASE_URL = "https://api.openai.com/v1"

#: Thinking level → ``reasoning_effort`` (chat) / ``reasoning.effort`` (responses).
EFFORTS = {"off": "none", "low": "low", "medium": "medium", "high": "high", "max": "xhigh"}

#: Model ids known to take reasoning parameters (a gateway's ``provider/`` prefix allowed).
REASONING_MODELS = re.compile(
    r"(?:^|/)(?:o[1-9](?:-|$)|gpt-5|gpt-oss|codex|deepseek-r1|qwq|grok-(?:3-mini|4))",
    re.IGNORECASE)

#: Parameters a request can go without, longest first (a 400 naming one drops it).
DROPPABLE = ("reasoning_effort", "stream_options", "reasoning", "include")
#: What goes with a dropped parameter.
_DROPPED_WITH = {"reasoning": ("include",)}

#: The key under which a malformed tool-call argument string is handed to the core loop.

_CHAT_STOP = {
    "stop": "end", "tool_calls": "tool_use", "function_call": "tool_use",
    "length": "max_tokens", "content_filter": "refusal",
}


def encode_arguments(call: ToolCallPart) -> str:
    """The argument string to send back for ``call``: the model's own text when it was valid
    (byte-stable for prompt caching), else the arguments as JSON."""
    if call.raw_arguments and INVALID_JSON not in call.arguments:
        return call.raw_arguments
    return json.dumps(call.arguments)


def is_official(base_url: str | None) -> bool:
    """True for OpenAI's own endpoint (no base URL, or one on api.openai.com)."""
    return base_url is None or base_url.startswith("https://api.openai.com")


class Endpoint:
    """One configured endpoint shared by the chat and responses providers: the lazily built
    SDK client and the error normalisation."""

    def __init__(self, settings: ProviderSettings) -> None:
        self.settings = settings
        self.base_url = (settings.base_url or OFFICIAL_BASE_URL).rstrip("/")
        self.official = is_official(settings.base_url)
        #: How errors name the endpoint: its host (``api.openai.com``, ``localhost:11434``).
        self.host = host_of(self.base_url)
        #: How labels name it: "openai", or the host of a compatible server.
        self.name = "openai" if self.official else self.host
        self.policy = StreamPolicy.of(settings, self.host)
        self._client: Any = None
        self._loop: asyncio.AbstractEventLoop | None = None
        #: the request shapes' ``warm`` methods :meth:`ready` has run
        self._warmed: set[Any] = set()
        #: model -> parameters this endpoint refused for it (a 400 naming them)
        self.refused: dict[str, set[str]] = {}

    def client(self) -> Any:
        """The ``openai.AsyncOpenAI`` client, built on first use in the running loop."""
        loop = asyncio.get_running_loop()
        # Connection pools belong to the loop that opened them; rebuild for a new loop.
        if self._client is None or self._loop is not loop:
            self._client, self._loop = self._build(), loop
        return self._client

    async def ready(self, warm: Callable[[Any], Any]) -> None:
        """Build the client and run a request shape's ``warm(client)`` (its SDK resource
        imported), once each, on a worker thread: together 0.3-0.8 s on a loaded machine
        (the transport's SSL context, the resource modules), which on the event loop would
        freeze the screen."""
        loop = asyncio.get_running_loop()
        if self._client is None or self._loop is not loop:
            built = await on_daemon_thread(self._build)
            if self._client is None or self._loop is not loop:  # not built meanwhile
                self._client, self._loop = built, loop
        if warm not in self._warmed:
            try:
                await on_daemon_thread(warm, self._client)
            except Exception:  # the request itself will meet (and report) what failed here
                log.debug("warming the %s client failed", self.name, exc_info=True)
            self._warmed.add(warm)

    def _build(self) -> Any:
        """A new ``openai.AsyncOpenAI`` (any thread: it opens nothing yet)."""
        import openai

        from agent.loop.retry import async_http_client

        s = self.settings
        key = s.api_key or os.environ.get("OPENAI_API_KEY")
        if not key:
            if self.official:
                raise ProviderError(
                    "no API key for openai: set OPENAI_API_KEY or configure api_key",
                    kind="auth",
                )
            key = "none"  # local servers (Ollama, LM Studio) take any key
        return openai.AsyncOpenAI(
            api_key=key,
            base_url=self.base_url,
            # Retries happen in agent.loop.streaming, which also retries streams that stall
            # after their headers (the SDK retries only the opening).
            max_retries=0,
            timeout=s.timeout,
            http_client=async_http_client(timeout=s.timeout),
        )

    async def aclose(self) -> None:
        """Close the HTTP client (optional; the process exiting does it too)."""
        if self._client is not None:
            client, self._client = self._client, None
            await client.close()

    def effort(self, level: str) -> str:
        """The reasoning effort word for a thinking level (``reasoning_efforts`` overrides)."""
        efforts = {**EFFORTS, **(self.settings.options.get("reasoning_efforts") or {})}
        return efforts.get(level, efforts["medium"])

    def send_reasoning(self, request: ProviderRequest) -> bool:
        """Whether ``request`` carries reasoning parameters (see the module's docstring)."""
        value = self.settings.options.get("send_reasoning")
        if value is not None:
            return bool(value)
        if self.official or REASONING_MODELS.search(request.model or self.settings.model):
            return True
        return request.thinking_chosen and request.thinking != "off"

    def without_refused(self, params: dict[str, Any]) -> dict[str, Any]:
        """``params`` less what this endpoint refused for their model."""
        refused = self.refused.get(str(params.get("model")), set())
        return {k: v for k, v in params.items() if k not in refused}

    def refused_parameter(self, exc: ProviderError, params: dict[str, Any]) -> str | None:
        """The parameter of ``params`` a 400 ``exc`` names as unsupported, if one can go."""
        if exc.status != 400 or exc.output_started:
            return None
        text = str(exc)
        for name in DROPPABLE:
            if name in params and re.search(rf"\b{name}\b", text):
                return name
        return None

    def send_images(self) -> bool:
        value = self.settings.options.get("send_images")
        return True if value is None else bool(value)

    def error(self, exc: BaseException, *, output_started: bool,
              connected: bool = False) -> ProviderError:
        """Normalise an SDK or transport exception into a :class:`ProviderError`."""
        return map_error(exc, self.host, output_started=output_started, connected=connected)

    async def list_models(self) -> list[str]:
        try:
            page = self.client().models.list()
            return sorted([m.id async for m in page])
        except ProviderError:
            raise
        except Exception as exc:
            raise self.error(exc, output_started=False) from exc


def _error_text(body: Any) -> str | None:
    """The human message inside an error body (``{"message": ...}``, ``{"error": {...}}``)."""
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict) and isinstance(inner.get("message"), str):
            return inner["message"]
        if isinstance(inner, str):
            return inner
    if isinstance(body, str) and body.strip():
        return body.strip()[:300]
    return None


def map_error(exc: BaseException, name: str, *, output_started: bool,
              connected: bool = False) -> ProviderError:
    """``openai``/``httpx2`` exceptions → :class:`ProviderError` with a message fit for a user;
    ``name`` is the endpoint's host.  ``connected``: the response had begun (a broken
    stream, not a failed connection)."""
    import httpx2
    import openai

    from agent.loop.retry import MalformedStream

    if isinstance(exc, ProviderError):
        exc.output_started = exc.output_started or output_started
        return exc
    if isinstance(exc, MalformedStream):
        return malformed_failure(exc, name, output_started=output_started)
    if isinstance(exc, openai.APIStatusError):
        status = exc.status_code
        text = _error_text(exc.body) or exc.response.reason_phrase or "request failed"
        retryable = None
        if isinstance(exc.body, dict) and exc.body.get("code") == "insufficient_quota":
            retryable = False  # a 429 that waiting will not fix
        kind = {401: "auth", 403: "auth", 404: "not_found", 429: "rate_limit"}.get(
            status, "server" if status >= 500 else "request"
        )
        return status_failure(name, status, text, exc.response.headers, kind=kind,
                              output_started=output_started, retryable=retryable)
    if isinstance(exc, openai.APIConnectionError | httpx2.TransportError):
        cause = exc.__cause__ if isinstance(exc, openai.APIConnectionError) else exc
        if isinstance(cause, MalformedStream):
            return malformed_failure(cause, name, output_started=output_started)
        if not isinstance(cause, httpx2.TransportError):
            # openai.APITimeoutError carries the httpx timeout as its cause; anything else
            # is named by its own words.
            cause = cause if isinstance(cause, BaseException) else exc
            if isinstance(exc, openai.APITimeoutError):
                cause = httpx2.ReadTimeout(str(cause))
        return transport_failure(cause, name, connected=connected,
                                 output_started=output_started)
    if isinstance(exc, openai.APIError):  # an error event inside the stream
        text = _error_text(exc.body) or exc.message
        return ProviderError(
            f"{name} stream error: {text}", retryable=True, kind="stream",
            output_started=output_started,
        )
    if isinstance(exc, ValueError):  # malformed JSON the SDK could not parse
        return ProviderError(
            f"{name} sent a malformed stream: {exc}", kind="protocol", output_started=output_started
        )
    return ProviderError(
        f"{name} request failed: {type(exc).__name__}: {exc}", output_started=output_started
    )


# ---- chat completions ------------------------------------------------------------------------


def chat_messages(system: str, messages: list[Message]) -> list[dict[str, Any]]:
    """History → chat completions ``messages``.  Reasoning is dropped (chat cannot take it
    back); tool results become ``role: tool`` messages answering their call id."""
    out: list[dict[str, Any]] = []
    if system:
        out.append({"role": "system", "content": system})
    for msg in messages:
        if msg.role == "assistant":
            text, calls = msg.text, msg.tool_calls
            if not text and not calls:
                continue  # e.g. reasoning only: an empty assistant turn is rejected
            item: dict[str, Any] = {"role": "assistant", "content": text or None}
            if calls:
                item["tool_calls"] = [
                    {"id": c.id, "type": "function",
                     "function": {"name": c.name, "arguments": encode_arguments(c)}}
                    for c in calls
                ]
            out.append(item)
            continue
        for result in msg.tool_results:
            out.append({"role": "tool", "tool_call_id": result.call_id, "content": result.output})
        shown = _chat_images(msg)
        if shown:
            out.append({"role": "user", "content": shown})
        elif msg.role == "user" and msg.text:
            out.append({"role": "user", "content": msg.text})
    return out


def _chat_images(msg: Message) -> list[dict[str, Any]]:
    """The content parts of the user message carrying ``msg``'s images, or [].  A tool
    message takes text only, so the results' images follow in one user message after every
    result (the calls must be answered first), each group under its call's name."""
    parts: list[dict[str, Any]] = []
    for result in msg.tool_results:
        if result.images:
            parts.append({"type": "text",
                          "text": f"[images from the {result.name} call {result.call_id}]"})
            parts.extend(_chat_image(image) for image in result.images)
    if msg.role == "user" and msg.images:
        if msg.text:
            parts.append({"type": "text", "text": msg.text})
        parts.extend(_chat_image(image) for image in msg.images)
    return parts


def data_url(image: ImagePart) -> str:
    """``image`` as the data URL both OpenAI APIs take."""
    return f"data:{image.media_type};base64,{image.data}"


def _chat_image(image: ImagePart) -> dict[str, Any]:
    return {"type": "image_url", "image_url": {"url": data_url(image)}}


def _responses_image(image: ImagePart) -> dict[str, Any]:
    return {"type": "input_image", "image_url": data_url(image), "detail": "auto"}


def chat_tools(tools: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [
        {"type": "function", "function": {
            "name": t["name"], "description": t.get("description", ""),
            "parameters": t.get("parameters") or {"type": "object", "properties": {}},
        }}
        for t in tools
    ]


class _ChatAssembler:
    """Accumulates chat chunks (JSON objects, as :func:`agent.loop.streaming.read_sse` hands
    them over) into stream events and the final message."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.text: list[str] = []
        self.reasoning: list[str] = []
        self.calls: list[dict[str, Any]] = []
        self.by_index: dict[int, dict[str, Any]] = {}
        self.finish: str | None = None
        self.usage = Usage()

    @staticmethod
    def is_content(name: Any, chunk: Any) -> bool:
        """Whether ``chunk`` is progress: text, reasoning, a tool-call fragment, a finish
        reason or the usage.  A role-only or empty chunk (a keep-alive) is not."""
        if chunk.get("usage") is not None:
            return True
        for choice in chunk.get("choices") or ():
            if choice.get("finish_reason"):
                return True
            delta = choice.get("delta")
            if not delta:
                continue
            if (delta.get("content") or delta.get("tool_calls") or delta.get("refusal")
                    or delta.get("reasoning_content") or delta.get("reasoning")):
                return True
        return False

    def feed(self, name: Any, chunk: Any, out: list[StreamEvent]) -> None:
        """Append the stream events of one chunk to ``out``."""
        if chunk.get("error"):
            raise _stream_error(self.name, chunk["error"])
        usage = chunk.get("usage")
        if usage is not None:
            self.usage = chat_usage(usage)
        for choice in chunk.get("choices") or ():
            finish = choice.get("finish_reason")
            if finish:
                self.finish = finish
            delta = choice.get("delta")
            if not delta:
                continue
            # Compatible servers stream reasoning under one of these (DeepSeek/vLLM, OpenRouter).
            for key in ("reasoning_content", "reasoning"):
                piece = delta.get(key)
                if isinstance(piece, str) and piece:
                    self.reasoning.append(piece)
                    out.append(ReasoningDelta(piece))
                    break
            piece = delta.get("content")
            if piece:
                self.text.append(piece)
                out.append(TextDelta(piece))
            piece = delta.get("refusal")
            if piece:
                self.text.append(piece)
                out.append(TextDelta(piece))
            for frag in delta.get("tool_calls") or ():
                self._tool_fragment(frag, out)

    def whole(self, answer: dict[str, Any]) -> list[StreamEvent]:
        """The events of a whole (non-streamed) chat completion, as one chunk would bring
        them: each choice's ``message`` read as its ``delta``."""
        choices = []
        for choice in answer.get("choices") or ():
            message = dict(choice.get("message") or {})
            message["tool_calls"] = [{**call, "index": i} for i, call
                                     in enumerate(message.get("tool_calls") or ())]
            choices.append({"index": choice.get("index", 0), "delta": message,
                            "finish_reason": choice.get("finish_reason") or "stop"})
        out: list[StreamEvent] = []
        self.feed(None, {"choices": choices, "usage": answer.get("usage")}, out)
        return out

    def _tool_fragment(self, frag: dict[str, Any], out: list[StreamEvent]) -> None:
        index = frag.get("index")
        if index is None:
            index = len(self.calls)
        call = self.by_index.get(index)
        frag_id = frag.get("id")
        # Some servers reuse index 0 for every call; a new id means a new call.
        if call is None or (frag_id and call["id"] and frag_id != call["id"]):
            call = {"id": frag_id or "", "name": "", "args": [], "announced": False}
            self.calls.append(call)
            self.by_index[index] = call
        fn = frag.get("function")
        if fn:
            if fn.get("name") and not call["name"]:
                call["name"] = fn["name"]
            if fn.get("arguments"):
                call["args"].append(fn["arguments"])
        if call["name"] and not call["announced"]:
            call["announced"] = True
            call["id"] = call["id"] or f"call_{len(self.calls)}"
            out.append(ToolCallStarted(call["id"], call["name"]))

    def finish_step(self) -> StepFinished:
        if self.finish is None:
            # The body ended without a finish reason: the stream was cut short.
            raise ProviderError(f"{self.name} stream ended before the model finished",
                                retryable=True, kind="connection", output_started=True)
        parts: list[Any] = []
        if self.reasoning:
            parts.append(ReasoningPart("".join(self.reasoning), provider="openai-chat"))
        if self.text:
            parts.append(TextPart("".join(self.text)))
        for i, call in enumerate(self.calls):
            raw = "".join(call["args"])
            parts.append(ToolCallPart(
                id=call["id"] or f"call_{i + 1}", name=call["name"],
                arguments=decode_arguments(raw), raw_arguments=raw,
            ))
        stop = _CHAT_STOP.get(self.finish or "stop", self.finish or "end")
        if self.calls and stop == "end":
            stop = "tool_use"  # some servers say "stop" after tool calls
        return StepFinished(Message("assistant", parts), self.usage, stop)


def chat_usage(usage: dict[str, Any]) -> Usage:
    """Chat ``usage`` (JSON) → :class:`Usage` (cached and reasoning tokens from the details)."""
    prompt_details = usage.get("prompt_tokens_details") or {}
    completion_details = usage.get("completion_tokens_details") or {}
    return Usage(
        input_tokens=usage.get("prompt_tokens") or 0,
        output_tokens=usage.get("completion_tokens") or 0,
        cached_tokens=prompt_details.get("cached_tokens") or 0,
        reasoning_tokens=completion_details.get("reasoning_tokens") or 0,
    )


def _stream_error(name: str, body: Any) -> ProviderError:
    """An error object inside the stream (``{"error": {...}}``, where the SDK would raise
    ``openai.APIError``) as a :class:`ProviderError`."""
    text = _error_text(body) or "An error occurred during streaming"
    return ProviderError(f"{name} stream error: {text}", retryable=True, kind="stream")


#: ``(cast_to, stream_cls)`` of each shape, imported with the SDK on the first request.
_CHAT_TYPES: tuple[Any, Any] | None = None
_RESPONSES_TYPES: tuple[Any, Any] | None = None


class _RequestShape:
    """What the two request shapes share: one endpoint, one assembler per step, and the same
    streaming and error handling (``ProviderError`` carries whether output had started).

    The request is posted with the SDK client's own ``post`` (its auth, headers, retries
    count and status errors), not through the resource's ``create``: ``create`` first walks
    the whole body against the SDK's TypedDicts (``async_maybe_transform``: 7-15 ms of CPU a
    request with a long history), which for these bodies changes nothing but the order of
    the top-level keys; :attr:`body_keys` keeps that order.  The bytes sent are the same
    (``tests/plugins/test_openai_body.py`` compares both ways, every request shape)."""

    kind = ""
    #: The path posted to, below the base URL.
    path = ""
    #: The top-level keys of a body in the order ``create`` writes them (its dict literal).
    body_keys: tuple[str, ...] = ()

    def __init__(self, endpoint: Endpoint) -> None:
        self.endpoint = endpoint
        self.settings = endpoint.settings
        self.label = f"{endpoint.name} {self.kind}"
        self.alternatives: list[Provider] = []
        self.text_only = None if endpoint.send_images() else TextOnly(endpoint.name)

    def params(self, request: ProviderRequest) -> dict[str, Any]:
        raise NotImplementedError

    def max_output_tokens(self, request: ProviderRequest) -> int:
        """The most output tokens this request may produce (reasoning included)."""
        return request.max_tokens

    def assembler(self) -> Any:
        raise NotImplementedError

    def resource(self, client: Any) -> Any:
        """The SDK resource this shape posts to."""
        raise NotImplementedError

    def warm(self, client: Any) -> None:
        """What the first request would otherwise do on the event loop: import the
        resource's modules (the SDK imports each on first use; the responses types take a
        while).  Run on a worker thread, once."""
        self.resource(client)
        self.sdk_types()

    def sdk_types(self) -> tuple[Any, Any]:
        """The SDK's ``cast_to`` and ``stream_cls`` for this shape's streamed request."""
        raise NotImplementedError

    def body(self, params: dict[str, Any]) -> dict[str, Any]:
        """``params`` (the keyword arguments ``create`` would take) as the body ``create``
        would post: the same keys and values, its key order."""
        unknown = set(params) - set(self.body_keys)
        if unknown:  # create() would refuse them too
            raise TypeError(f"{self.label} takes no {', '.join(sorted(unknown))}")
        return {key: params[key] for key in self.body_keys if key in params}

    async def open(self, params: dict[str, Any], headers: dict[str, str] | None = None
                   ) -> Any:
        """Send the request (``headers`` added to the client's own); returns the SDK's async
        stream, as ``create(stream=True, extra_headers=headers)`` would."""
        cast_to, stream_cls = self.sdk_types()
        options: dict[str, Any] = {"security": {"bearer_auth": True}}
        if headers is not None:
            options["headers"] = headers
        return await self.endpoint.client().post(
            self.path, body=self.body(params), options=options, cast_to=cast_to,
            stream=True, stream_cls=stream_cls)

    async def stream(self, request: ProviderRequest) -> AsyncIterator[StreamEvent]:
        """Stream one step within the deadlines, retrying what a retry can cure (see
        :mod:`agent.loop.streaming`); see :meth:`agent.contract.providers.Provider.stream`."""
        if self.text_only is not None:
            request, notice = self.text_only.apply(request)
            if notice is not None:
                yield notice
        params = self.endpoint.without_refused(self.params(request))
        try:
            # Built, and the SDK's resource imported, before any deadline runs, off the
            # event loop.
            await self.endpoint.ready(self.warm)
        except Exception as exc:
            raise self.endpoint.error(exc, output_started=False) from exc
        try:
            async for event in with_retries(self.endpoint.policy,
                                            lambda clock: self._attempt(params, clock)):
                yield event
            return
        except ProviderError as exc:
            name = self.endpoint.refused_parameter(exc, params)
            if name is None:
                raise
        # The server named a parameter it does not take: once without it, and never again
        # for this model (sticky for the endpoint, like a fallback's switch).
        dropped = (name, *_DROPPED_WITH.get(name, ()))
        model = str(params.get("model"))
        self.endpoint.refused.setdefault(model, set()).update(dropped)
        params = {k: v for k, v in params.items() if k not in dropped}
        yield ProviderNotice(f"{self.endpoint.host} does not take {name} for {model}; "
                             "sending requests without it from now on")
        async for event in with_retries(self.endpoint.policy,
                                        lambda clock: self._attempt(params, clock)):
            yield event

    async def _attempt(self, params: dict[str, Any], clock: Deadlines
                       ) -> AsyncIterator[StreamEvent]:
        """One try: send (the SDK: auth, headers, status errors), then read the body's
        events ourselves (:func:`agent.loop.streaming.read_sse`) and assemble them."""
        opening = self.open(params, clock.headers())
        async for event in attempt_sse(clock, opening, self.assembler(), named=False,
                                       map_error=self.endpoint.error,
                                       host=self.endpoint.host):
            yield event

    async def list_models(self) -> list[str]:
        """Model ids from ``GET /models``, sorted."""
        return await self.endpoint.list_models()

    async def aclose(self) -> None:
        await self.endpoint.aclose()


class ChatProvider(_RequestShape):
    """Chat completions over ``openai.AsyncOpenAI`` (OpenAI and compatible servers)."""

    kind = "chat completions"

    def params(self, request: ProviderRequest) -> dict[str, Any]:
        """The keyword arguments for ``chat.completions.create``."""
        params: dict[str, Any] = {
            "model": request.model or self.settings.model,
            "messages": chat_messages(request.system, request.messages),
            "stream": True,
            "stream_options": {"include_usage": True},
        }
        if request.tools:
            params["tools"] = chat_tools(request.tools)
        if self.endpoint.send_reasoning(request):
            params["reasoning_effort"] = self.endpoint.effort(request.thinking)
        # An explicit output cap bounds what a step can cost (the spending cap relies on it).
        # The official API wants the newer name; compatible servers know the classic one.
        cap_key = "max_completion_tokens" if self.endpoint.official else "max_tokens"
        params[cap_key] = request.max_tokens
        return params

    def assembler(self) -> Any:
        return _ChatAssembler(self.endpoint.host)

    path = "/chat/completions"
    body_keys = ("model", "stream", "messages", "max_completion_tokens", "max_tokens",
                 "reasoning_effort", "stream_options", "tools")

    def resource(self, client: Any) -> Any:
        return client.chat.completions

    def sdk_types(self) -> tuple[Any, Any]:
        global _CHAT_TYPES
        if _CHAT_TYPES is None:
            from openai import AsyncStream
            from openai.types.chat import ChatCompletion, ChatCompletionChunk

            _CHAT_TYPES = ChatCompletion, AsyncStream[ChatCompletionChunk]
        return _CHAT_TYPES

# ---- responses -------------------------------------------------------------------------------


def responses_input(messages: list[Message]) -> list[dict[str, Any]]:
    """History → responses ``input`` items.  Nothing refers to stored items (``store`` is
    off): messages and calls go without ids, reasoning goes back whole with its encrypted
    content, which is the only reasoning the API can accept from us."""
    out: list[dict[str, Any]] = []
    for msg in messages:
        if msg.role == "assistant":
            for part in msg.parts:
                if isinstance(part, ReasoningPart):
                    # Only this API's own encrypted reasoning goes back (never another
                    # provider's, e.g. after the fallback plugin switched endpoints).
                    if part.encrypted and part.item_id and part.provider in (None, "openai"):
                        summary = [{"type": "summary_text", "text": part.text}] if part.text else []
                        out.append({"type": "reasoning", "id": part.item_id, "summary": summary,
                                    "encrypted_content": part.encrypted})
                elif isinstance(part, TextPart):
                    if part.text:
                        out.append({"type": "message", "role": "assistant", "content": part.text})
                elif isinstance(part, ToolCallPart):
                    out.append({"type": "function_call", "call_id": part.id, "name": part.name,
                                "arguments": encode_arguments(part)})
            continue
        for result in msg.tool_results:
            output: Any = result.output
            if result.images:  # text, image or file items are what an output can hold
                output = [{"type": "input_text", "text": result.output},
                          *(_responses_image(image) for image in result.images)]
            out.append({"type": "function_call_output", "call_id": result.call_id,
                        "output": output})
        if msg.role == "user" and msg.images:
            content = [{"type": "input_text", "text": msg.text}] if msg.text else []
            content.extend(_responses_image(image) for image in msg.images)
            out.append({"type": "message", "role": "user", "content": content})
        elif msg.role == "user" and msg.text:
            out.append({"type": "message", "role": "user", "content": msg.text})
    return out


def responses_tools(tools: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [
        {"type": "function", "name": t["name"], "description": t.get("description", ""),
         "parameters": t.get("parameters") or {"type": "object", "properties": {}},
         "strict": False}
        for t in tools
    ]


def responses_usage(usage: dict[str, Any] | None) -> Usage:
    """Responses ``usage`` (JSON) → :class:`Usage`."""
    if not usage:
        return Usage()
    input_details = usage.get("input_tokens_details") or {}
    output_details = usage.get("output_tokens_details") or {}
    return Usage(
        input_tokens=usage.get("input_tokens") or 0,
        output_tokens=usage.get("output_tokens") or 0,
        cached_tokens=input_details.get("cached_tokens") or 0,
        reasoning_tokens=output_details.get("reasoning_tokens") or 0,
    )


#: Responses stream events that carry nothing (state announcements, keep-alives).
_RESPONSES_IDLE = frozenset({"response.created", "response.in_progress", "response.queued",
                             "keepalive"})


class _ResponsesAssembler:
    """Accumulates responses events (JSON objects, as :func:`agent.loop.streaming.read_sse`
    hands them over) into stream events and the final message."""

    @staticmethod
    def is_content(name: Any, event: Any) -> bool:
        """Whether ``event`` is progress (anything but a state announcement or keep-alive)."""
        return event.get("type", "") not in _RESPONSES_IDLE

    def __init__(self, endpoint: Endpoint) -> None:
        self.endpoint = endpoint
        self.items: dict[int, Any] = {}  # output_index → finished part
        self.args: dict[int, list[str]] = {}
        self.summary_index: dict[int, int] = {}
        self.usage = Usage()
        self.stop = "end"
        self.done = False

    def feed(self, name: Any, event: Any, out: list[StreamEvent]) -> None:
        """Append the stream events of one responses event to ``out``."""
        if event.get("error"):  # an error object, where the SDK would raise APIError
            raise _stream_error(self.endpoint.host, event["error"])
        kind = event.get("type", "")
        if kind == "response.output_text.delta" or kind == "response.refusal.delta":
            out.append(TextDelta(event["delta"]))
        elif kind == "response.reasoning_summary_text.delta":
            # Separate summary parts the way the API's own summary text does.
            index, summary = event["output_index"], event["summary_index"]
            last = self.summary_index.setdefault(index, summary)
            self.summary_index[index] = summary
            prefix = "\n\n" if summary != last else ""
            out.append(ReasoningDelta(prefix + event["delta"]))
        elif kind == "response.reasoning_text.delta":
            out.append(ReasoningDelta(event["delta"]))
        elif kind == "response.function_call_arguments.delta":
            self.args.setdefault(event["output_index"], []).append(event["delta"])
        elif kind == "response.output_item.added":
            item = event["item"]
            if item.get("type") == "function_call":
                out.append(ToolCallStarted(item["call_id"], item["name"]))
        elif kind == "response.output_item.done":
            part = self._part(event["item"], event["output_index"])
            if part is not None:
                self.items[event["output_index"]] = part
        elif kind in ("response.completed", "response.incomplete"):
            self._complete(event["response"])
        elif kind == "response.failed":
            err = (event.get("response") or {}).get("error") or {}
            text = err.get("message") or "the response failed"
            raise ProviderError(f"{self.endpoint.host} stream error: {text}", retryable=True,
                                kind="stream")
        elif kind == "error":
            text = event.get("message") or "error event"
            code = event.get("code")
            raise ProviderError(
                f"{self.endpoint.host} stream error: {text}" + (f" ({code})" if code else ""),
                retryable=True, kind="stream",
            )

    def whole(self, answer: dict[str, Any]) -> list[StreamEvent]:
        """The events of a whole (non-streamed) response object: its output items, as the
        stream would have announced them."""
        if answer.get("status") == "failed":
            self.feed(None, {"type": "response.failed", "response": answer}, [])
        self._complete(answer)
        out: list[StreamEvent] = []
        for index in sorted(self.items):
            part = self.items[index]
            if isinstance(part, ReasoningPart) and part.text:
                out.append(ReasoningDelta(part.text))
            elif isinstance(part, TextPart):
                out.append(TextDelta(part.text))
            elif isinstance(part, ToolCallPart):
                out.append(ToolCallStarted(part.id, part.name))
        return out

    def _part(self, item: dict[str, Any], index: int) -> Any:
        kind = item.get("type")
        if kind == "reasoning":
            texts = [s.get("text") or "" for s in item.get("summary") or ()]
            if not texts:
                texts = [c.get("text") or "" for c in item.get("content") or ()]
            return ReasoningPart(
                "\n\n".join(texts), encrypted=item.get("encrypted_content"),
                item_id=item.get("id"), provider="openai",
            )
        if kind == "message":
            text = "".join(
                c.get("text") or c.get("refusal") or "" for c in item.get("content") or ()
            )
            return TextPart(text) if text else None
        if kind == "function_call":
            raw = item.get("arguments")
            if raw is None:
                raw = "".join(self.args.get(index, []))
            return ToolCallPart(id=item["call_id"], name=item["name"],
                                arguments=decode_arguments(raw), raw_arguments=raw,
                                item_id=item.get("id"))
        return None

    def _complete(self, response: dict[str, Any]) -> None:
        self.done = True
        self.usage = responses_usage(response.get("usage"))
        # Items the stream never closed explicitly: take them from the final response.
        for index, item in enumerate(response.get("output") or ()):
            if index not in self.items:
                part = self._part(item, index)
                if part is not None:
                    self.items[index] = part
        if response.get("status") == "incomplete":
            reason = (response.get("incomplete_details") or {}).get("reason")
            self.stop = "refusal" if reason == "content_filter" else "max_tokens"

    def finish_step(self) -> StepFinished:
        if not self.done:
            raise ProviderError(f"{self.endpoint.host} stream ended before the response completed",
                                retryable=True, kind="connection", output_started=True)
        parts = [self.items[i] for i in sorted(self.items)]
        stop = self.stop
        if stop == "end" and any(isinstance(p, ToolCallPart) for p in parts):
            stop = "tool_use"
        return StepFinished(Message("assistant", parts), self.usage, stop)


class ResponsesProvider(_RequestShape):
    """OpenAI's responses API, stateless (``store=False``, encrypted reasoning inline)."""

    kind = "responses"

    def params(self, request: ProviderRequest) -> dict[str, Any]:
        """The keyword arguments for ``responses.create``."""
        params: dict[str, Any] = {
            "model": request.model or self.settings.model,
            "input": responses_input(request.messages),
            "stream": True,
            "store": False,
        }
        if request.system:
            params["instructions"] = request.system
        if request.tools:
            params["tools"] = responses_tools(request.tools)
        if self.endpoint.send_reasoning(request):
            params["reasoning"] = {"effort": self.endpoint.effort(request.thinking),
                                   "summary": "auto"}
            params["include"] = ["reasoning.encrypted_content"]
        params["max_output_tokens"] = request.max_tokens  # bounds the cost of a step
        return params

    def assembler(self) -> Any:
        return _ResponsesAssembler(self.endpoint)

    path = "/responses"
    body_keys = ("model", "stream", "include", "input", "instructions", "max_output_tokens",
                 "reasoning", "store", "tools")

    def resource(self, client: Any) -> Any:
        return client.responses

    def sdk_types(self) -> tuple[Any, Any]:
        global _RESPONSES_TYPES
        if _RESPONSES_TYPES is None:
            from openai import AsyncStream
            from openai.types.responses import Response, ResponseStreamEvent

            _RESPONSES_TYPES = Response, AsyncStream[ResponseStreamEvent]
        return _RESPONSES_TYPES

# ---- registration ----------------------------------------------------------------------------


def create(settings: ProviderSettings) -> Provider:
    """Build the provider for ``settings`` (see the module docstring for ``openai_api``)."""
    mode = settings.options.get("openai_api") or "auto"
    endpoint = Endpoint(settings)
    if mode == "chat":
        return ChatProvider(endpoint)
    if mode == "responses":
        return ResponsesProvider(endpoint)
    if mode != "auto":
        raise ProviderError(
            f'openai_api must be "auto", "chat" or "responses", not "{mode}"', kind="config"
        )
    chat = ChatProvider(endpoint)
    if endpoint.official:
        chat.alternatives = [ResponsesProvider(endpoint)]
    return chat


SPEC = ProviderSpec(
    name="openai",
    create=create,
    env_key="OPENAI_API_KEY",
    default_base_url=OFFICIAL_BASE_URL,
    default_model="gpt-5",
    description="OpenAI and OpenAI-compatible endpoints (chat completions, responses)",
    auto_priority=10,
    warm_modules=("openai",),
    # What the provider setup offers for this wire protocol; the Anthropic plugin adds its
    # own (first and last in the list, by ``order``).
    presets=(
        Preset("openai", "OpenAI", OFFICIAL_BASE_URL, "OPENAI_API_KEY", "sk-...",
               fallback=("gpt-5", "gpt-5-mini", "o4-mini"), order=20),
        Preset("openrouter", "OpenRouter", "https://openrouter.ai/api/v1",
               "OPENROUTER_API_KEY", "sk-or-...", order=30),
        Preset("groq", "Groq", "https://api.groq.com/openai/v1", "GROQ_API_KEY", "gsk_...",
               order=40),
        Preset("deepseek", "DeepSeek", "https://api.deepseek.com/v1", "DEEPSEEK_API_KEY",
               order=50),
        Preset("xai", "xAI", "https://api.x.ai/v1", "XAI_API_KEY", "xai-...", order=60),
        Preset("ollama", "Ollama", "http://localhost:11434/v1", keyless=True, order=70),
        Preset("lmstudio", "LM Studio", "http://localhost:1234/v1", keyless=True, order=80),
        Preset("custom-openai", "Custom OpenAI-compatible", None, custom=True, order=900),
    ),
)


@hookimpl
def agent_addoption(options: Any) -> None:
    """Declare the openai provider's config keys."""
    options.add(Option(
        "openai_api", default="auto", choices=("auto", "chat", "responses"),
        env="AGENT_OPENAI_API",
        help="openai request shape: chat, responses, or auto (chat, falling back to responses "
             "on api.openai.com)"))
    options.add(Option(
        "send_reasoning", type="bool", env="AGENT_SEND_REASONING",
        help="send reasoning effort parameters to openai endpoints: true always, false never; "
             "unset, only to the official API, to models known to reason, and when a thinking "
             "level was chosen (--think, /think, an agent)"))
    options.add(Option(
        "send_images", type="bool", default=True, env="AGENT_SEND_IMAGES",
        help="send images (from MCP tools and resources) to openai endpoints as image "
             "blocks; turn off for text-only models, which then get a text placeholder"))
    options.add(Option(
        "reasoning_efforts", type="dict", default={},
        help='override thinking level -> openai reasoning effort, e.g. {off = "minimal"}'))


@hookimpl
def agent_register_providers(register: Any, config: Any) -> None:
    """Register the ``openai`` provider."""
    register(SPEC)
