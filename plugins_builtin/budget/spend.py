"""What a session has spent: its own model requests and its subagents', priced as they finish.

Every finished model request reaches :func:`record` (through the ``agent_request_done``
hook), priced with :mod:`.pricing` at the model the request actually used.  A subagent's
steps land in its root session's ledger under ``subagents`` (and in the root's token
totals), so ``/cost`` can split the two and a spending cap sees everything live, parallel
subagents included.

The ledger lives in ``root.data["spend"]`` and belongs to one session id: after ``/clear`` or
``/resume`` (a new id) it starts again from zero.  It counts what *this run* spent; what
earlier runs of a resumed session spent is in the usage ledger (``agent usage``).

A spending cap also needs what is about to be spent: :func:`worst_case_usd` bounds the next
request (every output token it may produce, and its input estimated generously), and
:func:`reserve` holds that amount until the request finishes, so concurrent requests (several
subagents at once) cannot together overshoot.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field
from typing import Any

from agent.contract.providers import ProviderRequest, Usage
from agent.loop.session import root_session

from . import pricing

#: Characters per input token when estimating a request.  Real tokenisers average about 4
#: for English prose and 3-3.5 for code and JSON; 3 errs on the expensive side.
CHARS_PER_TOKEN = 3

DATA_KEY = "spend"
SUBAGENT_USAGE_KEY = "subagent_usage"


@dataclass
class Tally:
    """Tokens and dollars of a group of requests.  ``unpriced`` names the models used that
    have no price (their tokens are counted, their cost is unknown)."""

    usage: Usage = field(default_factory=Usage)
    usd: float = 0.0
    requests: int = 0
    unpriced: set[str] = field(default_factory=set)

    def add(self, model: str, usage: Usage) -> None:
        self.usage.add(usage)
        self.requests += 1
        cost = pricing.cost(model, usage)
        if cost is None:
            self.unpriced.add(model or "(no model)")
        else:
            self.usd += cost

    def as_dict(self) -> dict[str, Any]:
        """Plain JSON: token counts, ``cost_usd`` (None when nothing was priced),
        ``requests`` and the ``unpriced`` models."""
        out: dict[str, Any] = asdict(self.usage)
        out["requests"] = self.requests
        out["cost_usd"] = self.usd if (self.usd or not self.unpriced) else None
        out["unpriced"] = sorted(self.unpriced)
        return out


@dataclass
class Ledger:
    """One session's spending this run: ``own`` requests, ``subagents``' requests, and the
    worst-case cost of requests in flight (``reserved``, by requesting session)."""

    session_id: str = ""
    own: Tally = field(default_factory=Tally)
    subagents: Tally = field(default_factory=Tally)
    reserved: dict[Any, float] = field(default_factory=dict)
    warned: bool = False  # the budget plugin's 80 % notice was given

    @property
    def spent_usd(self) -> float:
        return self.own.usd + self.subagents.usd

    @property
    def reserved_usd(self) -> float:
        return sum(self.reserved.values())

    @property
    def unpriced(self) -> set[str]:
        return self.own.unpriced | self.subagents.unpriced


#: The main session ``session`` belongs to (itself unless it is a subagent).
root_of = root_session


def ledger(session: Any) -> Ledger:
    """The ledger of ``session``'s root session (a fresh one after the id changed)."""
    root = root_of(session)
    found = root.data.get(DATA_KEY)
    if not isinstance(found, Ledger) or found.session_id != root.id:
        found = Ledger(session_id=root.id)
        root.data[DATA_KEY] = found
        root.data.pop(SUBAGENT_USAGE_KEY, None)
    return found


def _hold(session: Any, nested: bool) -> Any:
    """The key of ``session``'s hold: its own request's, or (``nested``) that of a model call
    a plugin makes while that request is being prepared (a compaction summary), held on
    top of it."""
    return (id(session), "nested") if nested else id(session)


def record(session: Any, model: str, usage: Usage, *, nested: bool = False) -> None:
    """Book one finished request of ``session`` (made with ``model``) and end its
    reservation (``nested``: a plugin's call made while preparing a request; see
    :func:`reserve`).  A subagent's request also counts in its root session's token totals
    and in ``root.data["subagent_usage"]`` (see :meth:`Tally.as_dict`)."""
    root = root_of(session)
    book = ledger(root)
    book.reserved.pop(_hold(session, nested), None)
    if session is root:
        book.own.add(model, usage)
        return
    book.subagents.add(model, usage)
    root.usage.add(usage)
    root.data[SUBAGENT_USAGE_KEY] = book.subagents.as_dict()


def reserve(session: Any, usd: float, *, nested: bool = False) -> None:
    """Hold ``usd`` for ``session``'s request in flight (replacing its previous hold).
    ``nested`` holds a plugin's model call made while a request is being prepared (a
    compaction summary) next to that request's hold instead of replacing it, so the cap
    sees both."""
    ledger(session).reserved[_hold(session, nested)] = usd


def release(session: Any, *, nested: bool = False) -> None:
    """Drop ``session``'s hold (its request failed or was cancelled)."""
    ledger(session).reserved.pop(_hold(session, nested), None)


# ---- estimating a request -------------------------------------------------------------------


def request_chars(request: ProviderRequest) -> int:
    """The size of what ``request`` sends: system prompt, history and tool schemas."""
    size = len(request.system)
    for message in request.messages:
        size += len(json.dumps(asdict(message), ensure_ascii=False, default=str))
    if request.tools:
        size += len(json.dumps(request.tools, ensure_ascii=False, default=str))
    return size


def estimate_input_tokens(request: ProviderRequest) -> int:
    return math.ceil(request_chars(request) / CHARS_PER_TOKEN)


def output_bound(request: ProviderRequest, provider: Any = None) -> int:
    """The most output tokens ``request`` may produce: what ``provider`` says it will allow
    (its optional ``max_output_tokens(request)``, e.g. raised for a thinking budget, lowered
    to the model's limit), else ``request.max_tokens``."""
    bound = request.max_tokens
    ask = getattr(provider, "max_output_tokens", None)
    if callable(ask):
        try:
            said = ask(request)
        except Exception:  # a provider that cannot say leaves the request's own cap
            said = None
        if isinstance(said, int) and not isinstance(said, bool) and said > 0:
            bound = said
    return bound


def worst_case_usd(request: ProviderRequest, provider: Any = None) -> float | None:
    """The most ``request`` can cost: every output token it may produce (see
    :func:`output_bound`) at the output price plus its estimated input at the full
    (uncached) input price.  None when the model is unpriced."""
    price = pricing.price_for(request.model)
    if price is None:
        return None
    tokens_in = estimate_input_tokens(request)
    tokens_out = output_bound(request, provider)
    return (tokens_in * price.input + tokens_out * price.output) / 1_000_000


# ---- the /cost report -----------------------------------------------------------------------


def _tokens(usage: Usage) -> str:
    text = f"{usage.input_tokens:,} in / {usage.output_tokens:,} out"
    if usage.cached_tokens:
        text += f" ({usage.cached_tokens:,} cached)"
    return text


def _line(label: str, tally: Tally) -> str:
    money = pricing.format_usd(tally.usd if (tally.usd or not tally.unpriced) else None)
    if tally.unpriced and tally.usd:
        money += " + unpriced"
    text = f"{label}: {_tokens(tally.usage)} tokens, {tally.requests} requests - {money}"
    if tally.unpriced:
        text += f"  ({', '.join(sorted(tally.unpriced))} is unpriced)"
    return text


def cost_report(session: Any, *, cap_usd: float | None = None,
                subagent_cap_usd: float | None = None) -> str:
    """``/cost``: tokens and spend of this session this run, the session's own requests and
    its subagents' apart, then the total (and the caps, when set)."""
    book = ledger(session)
    lines = [_line("session", book.own)]
    if book.subagents.requests:
        lines.append(_line("subagents", book.subagents))
    total = Tally(usage=Usage(), usd=book.spent_usd, unpriced=book.unpriced,
                  requests=book.own.requests + book.subagents.requests)
    total.usage.add(book.own.usage)
    total.usage.add(book.subagents.usage)
    if book.subagents.requests:
        lines.append(_line("total", total))
    if cap_usd:
        share = book.spent_usd / cap_usd * 100
        lines.append(f"cap: {pricing.format_usd(book.spent_usd)} of "
                     f"{pricing.format_usd(cap_usd)} ({share:.0f} %)")
    if subagent_cap_usd:
        lines.append(f"subagent cap: {pricing.format_usd(book.subagents.usd)} of "
                     f"{pricing.format_usd(subagent_cap_usd)}")
    lines.append(f"model: {getattr(root_of(session), 'model', '') or '?'}")
    return "\n".join(lines)
