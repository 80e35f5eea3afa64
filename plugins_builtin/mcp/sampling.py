"""Sampling: a server asks the client's model for a completion (``sampling/createMessage``).

Only during a tool call the user's session started (the request goes through that session's
provider and model), and only with the user's yes: the approval dialog shows which server
asks and what it sends; headless runs decline, as they decline any call that needs approval
(``--yolo`` approves, as it approves tool calls). The request passes the same request hooks
as the agent's own (so ``max_spend_usd`` can refuse it before anything is sent) and what it
costs is booked in the session's spend and usage ledger, as the session's own steps are.
"""

from __future__ import annotations

import asyncio
from typing import Any

#: The largest completion a server may ask for, whatever its ``maxTokens``.
MAX_TOKENS = 4096
PREVIEW = 600


def _text_of(content: Any) -> str:
    items = content if isinstance(content, list) else [content]
    return "\n".join(str(getattr(c, "text", "")) for c in items
                     if getattr(c, "type", "") == "text")


async def sample(session: Any, server: str, params: Any) -> Any:
    """Answer one sampling request on ``session``'s loop; returns the SDK result or error."""
    from mcp_types import CreateMessageResult, ErrorData, TextContent

    from agent import Effects, Tool, ToolCall
    from agent.contract.messages import Message, TextPart
    from agent.contract.providers import (
        BudgetExceeded,
        ProviderError,
        ProviderRequest,
        StepFinished,
        TextDelta,
    )
    from agent.loop.gate import Approval, ApprovalRequest

    def refuse(message: str) -> Any:
        return ErrorData(code=-1, message=message)

    runtime = getattr(session, "runtime", None)
    provider = getattr(runtime, "provider", None)
    if provider is None:
        return refuse("no model is available to this client")
    messages = []
    for item in getattr(params, "messages", None) or []:
        text = _text_of(getattr(item, "content", None))
        role = "assistant" if getattr(item, "role", "user") == "assistant" else "user"
        messages.append(Message(role, [TextPart(text)]))
    if not messages or messages[-1].role != "user":
        return refuse("a sampling request must end with a user message")
    system = str(getattr(params, "system_prompt", None) or "")
    shown = "\n".join(f"{m.role}: {m.text}" for m in messages)
    if len(shown) > PREVIEW:
        shown = shown[:PREVIEW] + " ..."
    name = f"mcp__{server}__sampling"
    tool = Tool(name=name, description=f"a model call the MCP server {server} asks for",
                run=lambda args, ctx: None, effects=lambda args: Effects(opaque=True))
    call = ToolCall(f"sampling-{id(params)}", name, {"messages": shown, "system": system},
                    origin="model")
    gate = getattr(session, "gate", None)
    yolo = bool(getattr(gate, "yolo", False))
    if not yolo:
        approver = getattr(runtime, "approver", None)
        if approver is None:
            return refuse("sampling needs the user's approval and nobody can give it here "
                          "(a headless run); declined")
        reply = await approver(ApprovalRequest(
            call, tool, Effects(opaque=True),
            f"the MCP server {server} asks the model (your provider, your cost):\n{shown}",
            "mcp sampling"))
        answer = reply.answer if isinstance(reply, Approval) else reply
        if answer not in ("yes", "always"):
            return refuse("the user declined the sampling request")
    max_tokens = max(1, min(int(getattr(params, "max_tokens", MAX_TOKENS) or MAX_TOKENS),
                            MAX_TOKENS))
    request = ProviderRequest(model=session.model, system=system, messages=messages,
                              tools=[], thinking="off", max_tokens=max_tokens,
                              metadata={"session": session.id, "purpose": "mcp-sampling"})
    try:
        request = await session.hooks.prepare_request(request, session)
    except BudgetExceeded as exc:
        return refuse(f"the spending cap refuses it: {exc}")
    chunks: list[str] = []
    final, model = "", session.model
    try:
        async for item in provider.stream(request):
            if isinstance(item, TextDelta):
                chunks.append(item.text)
            elif isinstance(item, StepFinished):
                final = item.message.text
                model = item.model or session.model
                session.hooks.request_done(session, model, item.usage)
                recorder = getattr(session, "recorder", None)
                if recorder is not None and hasattr(recorder, "record_usage"):
                    recorder.record_usage(item.usage, model=model, cause="mcp:sampling")
    except ProviderError as exc:
        return refuse(f"the model call failed: {exc.message}")
    except asyncio.CancelledError:
        raise
    return CreateMessageResult(role="assistant", model=model, stop_reason="endTurn",
                               content=TextContent(type="text",
                                                   text="".join(chunks) or final))
