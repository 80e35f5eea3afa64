"""Spending caps (max_spend_usd, subagent_max_spend_usd) checked before every request, and /cost.

This package is the whole cost feature: :mod:`.pricing` (the price table), :mod:`.spend` (what
a session has spent, booked through ``agent_request_done``) and, here, the hooks.  The plugin
is named ``budget`` (``plugins.disabled = ["budget"]``, ``--disable budget``); without it
nothing is priced (``cost_usd`` is absent), no cap is checked and ``/cost`` is gone.

Before each model request of the session or of one of its subagents, the request's worst
case is priced (every output token ``max_tokens`` allows, plus its input estimated
generously, at the uncached input price; see :func:`.spend.worst_case_usd`) and added to
what was already spent and what requests in flight may still cost.  If that total would
cross the cap, the request is not sent: the turn ends with an ``error`` event of kind
``budget`` and ``done`` with reason ``budget`` (headless exit code 4).  So the spending this
plugin sees never exceeds the cap.  Once spending reaches 80 % of the cap a notice says so.

With a cap set, a model that has no price cannot be checked, so its requests are refused
too (unset the cap or use a priced model).  A model call a plugin makes while a request is
being prepared and sends through ``agent_prepare_request`` with ``metadata["nested"]``
(the prune plugin's compaction summaries) is checked too, on top of the request it
prepares, whose hold stays.  Other model calls that plugins make outside the loop (commit
messages) are recorded in the usage ledger but not checked here.
"""

from __future__ import annotations

from typing import Any

from agent import ConfigError, Option, SlashCommand, hookimpl
from agent.contract.providers import BudgetExceeded

from . import pricing, spend
from .pricing import format_usd

WARN_SHARE = 0.8


def _cap(config: Any, key: str) -> float | None:
    value = config.get(key)
    return float(value) if value else None


def check(request: Any, session: Any) -> str | None:
    """Reserve ``request``'s worst case against the caps; return a notice to show (the 80 %
    warning) or None.  Raises :class:`BudgetExceeded` when it could cross a cap."""
    config = session.config
    cap = _cap(config, "max_spend_usd")
    child = spend.root_of(session) is not session
    sub_cap = _cap(config, "subagent_max_spend_usd") if child else None
    if cap is None and sub_cap is None:
        return None
    book = spend.ledger(session)
    nested = bool(request.metadata.get("nested"))
    if not nested:
        spend.release(session)  # a hold left by this session's last request, if it failed
    worst = spend.worst_case_usd(request, getattr(session.runtime, "provider", None))
    if worst is None:
        raise BudgetExceeded(
            f"{request.model or 'this model'} has no price, so its cost cannot be checked "
            "against the spending cap (max_spend_usd); the request was not sent. Unset the "
            "cap or use a priced model.")
    others = book.reserved_usd
    if cap is not None and book.spent_usd + others + worst > cap:
        raise BudgetExceeded(_refusal("this session", book.spent_usd, others, worst, cap,
                                      "max_spend_usd", "--max-spend"))
    if sub_cap is not None:
        root = id(spend.root_of(session))
        sub_others = sum(v for k, v in book.reserved.items()
                         if k not in (root, (root, "nested")))
        if book.subagents.usd + sub_others + worst > sub_cap:
            raise BudgetExceeded(_refusal("its subagents", book.subagents.usd, sub_others,
                                          worst, sub_cap, "subagent_max_spend_usd", None))
    spend.reserve(session, worst, nested=nested)
    if cap is not None and not book.warned and book.spent_usd >= WARN_SHARE * cap:
        book.warned = True
        share = book.spent_usd / cap * 100
        return (f"spending: {format_usd(book.spent_usd)} of the {format_usd(cap)} cap "
                f"({share:.0f} %); requests stop before they could cross it")
    return None


def _refusal(who: str, spent: float, in_flight: float, worst: float, cap: float, key: str,
             flag: str | None) -> str:
    held = f" with {format_usd(in_flight)} more in flight" if in_flight else ""
    raise_it = f"raise it ({key}{', ' + flag if flag else ''})"
    return (f"Spending cap reached: {who} spent {format_usd(spent)}{held} of the "
            f"{format_usd(cap)} cap ({key}), and the next request could cost up to "
            f"{format_usd(worst)}, so it was not sent. To go on, {raise_it} or start a new "
            "session.")


def context_line(app: Any, session: Any) -> str | None:
    """``context: ~N tokens (P % of the T-token compaction threshold)``: the prune plugin's
    estimate of the last request when there is one, else the front end's (characters / 4)."""
    pruned = session.data.get("prune") or {}
    tokens, threshold = pruned.get("estimate"), pruned.get("threshold")
    if not tokens:
        measure = getattr(app, "context_tokens", None)
        tokens = measure() if callable(measure) else None
        threshold = session.config.get("compact_threshold")
    if tokens is None:
        return None
    text = (f"context: ~{int(tokens):,} tokens in the last request (system prompt, tools "
            "and history")
    if threshold:
        text += (f"; {int(tokens) * 100 // int(threshold)} % of the {int(threshold):,}-token "
                 "compaction threshold")
    return text + ")"


def cmd_cost(app: Any, args: str) -> str | None:
    session = getattr(app, "session", None)
    if session is None:
        return "no session yet - run /provider first"
    config = session.config
    text = spend.cost_report(session, cap_usd=_cap(config, "max_spend_usd"),
                             subagent_cap_usd=_cap(config, "subagent_max_spend_usd"))
    context = context_line(app, session)
    if context:
        text += "\n" + context
    agent = session.data.get("agent") or config.get("agent") or "default"
    text += f"\nagent: {agent}  thinking: {session.thinking}"
    if hasattr(app, "info"):
        app.info("cost", text, f"session {session.id}")
        return None
    return text


# ---- hooks ----------------------------------------------------------------------------------


@hookimpl
def agent_addoption(options):
    options.add(Option("max_spend_usd", type="float", flag="--max-spend", env="AGENT_MAX_SPEND",
                       metavar="USD",
                       help="spending cap per session in US dollars; a request that could "
                            "cross it is not sent (headless exit code 4)"))
    options.add(Option("subagent_max_spend_usd", type="float",
                       help="spending cap in US dollars for all subagents of a session"))


@hookimpl
def agent_configure(config):
    for key in ("max_spend_usd", "subagent_max_spend_usd"):
        value = config.get(key)
        if value is not None and value <= 0:
            raise ConfigError(f"{key} must be a positive amount of US dollars, got {value!r}")


@hookimpl
def agent_prepare_request(request, session):
    notice = check(request, session)
    if notice:
        request.metadata.setdefault("notices", []).append(notice)
    return None


@hookimpl
def agent_request_done(session, model, usage, nested):
    if usage is None:
        spend.release(session, nested=bool(nested))
    else:
        spend.record(session, model, usage, nested=bool(nested))


@hookimpl
def agent_price_usage(model, usage):
    return pricing.cost(model, usage)


@hookimpl
def agent_session_spent(session):
    book = spend.ledger(session)
    unpriced = bool(book.unpriced) or pricing.price_for(str(session.model or "")) is None
    return book.spent_usd, unpriced


@hookimpl
def agent_register_commands(register, config):
    register(SlashCommand("cost", "tokens and spend of this session and its subagents",
                          cmd_cost, info=True))
