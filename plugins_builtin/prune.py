"""Keeps long sessions in the context window: prunes what is sent, summarises it; /compact, /pin.

Only the outgoing request is changed (``agent_prepare_request``); the session's history stays
complete.  Past the threshold, in order, until the request fits:

1. strip reasoning (the current tool loop's last thinking block stays: Anthropic requires it)
   and detach provider item ids, dropping messages left empty;
2. keep tool calls and results only in the last 64, 32, 16, 8 or 4 messages (the widest that
   fits); older calls become one-line notes saying what ran and how it went;
3. replace the oldest span with a model-written summary (cached per span, so it is written
   once; a deterministic summary stands in if the model call fails).  Pinned messages and the
   current prompt stay verbatim.

After every prune the request is repaired: no tool result without its call, no call without
its result.  Providers here send everything inline (no ``item_reference``), so the
"404 item not found" failure of stored-item APIs cannot happen and needs no retry.
"""

from __future__ import annotations

import hashlib
import json
import logging
import weakref
from array import array
from collections.abc import Iterable, Sequence
from dataclasses import replace
from typing import Any

from agent import Option, SlashCommand, StatusInfo, hookimpl
from agent.contract.commands import show
from agent.contract.messages import (
    IMAGE_TOKENS,
    ImagePart,
    Message,
    Part,
    ReasoningPart,
    TextPart,
    ToolCallPart,
    ToolResultPart,
)
from agent.contract.providers import ProviderError, ProviderRequest, StepFinished, TextDelta

log = logging.getLogger("agent.prune")

DEFAULT_THRESHOLD = 120_000
#: Tool tails tried, widest first.
RUNGS = (64, 32, 16, 8, 4)
#: A summary's budget: asked of the model, and enforced by cutting.
SUMMARY_TOKENS = 2_000
SUMMARY_CHARS = SUMMARY_TOKENS * 4
#: After a cut, the kept part uses at most this share of the budget, so the cut (and its
#: summary) holds for many steps instead of moving, and costing a model call, every step.
LOW_WATER = 0.5
#: Summaries kept per session (older spans are never asked for again).
CACHE_SIZE = 8

SUMMARY_PREFIX = ("Summary of the earlier part of this session (older messages were left out "
                  "to fit the context window):\n\n")
COMPACT_PREFIX = "Summary of the session so far:\n\n"

SUMMARY_SYSTEM = """\
You write the working notes a coding agent needs to carry on a session whose earlier messages
are about to be dropped. Write plain notes, at most 1,200 words, under these headings:
User goal and requests; Files touched (paths, what changed); Decisions and constraints;
Commands run and their outcomes; Open problems and what remains to do.
Keep exact paths, names, commands, error messages and numbers. Leave out pleasantries, file
contents, and anything the agent can simply re-read. If earlier notes are given, merge them
with the new messages into one set of notes."""


# ---- estimates ------------------------------------------------------------------------------


class PassMemo:
    """A memo by identity that forgets what recent passes did not use.

    Every step measures and prunes the same long history, so copies and encodings are
    memoised by the original message's identity (each entry holds its original, so its id
    stays unique).  But some keys are never asked for again: the run of stubbed turns merged
    into one message grows by a turn each step, the summary head is rebuilt, a session
    ends.  Each request is a pass (:meth:`next_pass`); an entry not used in the last
    ``keep`` passes is dropped, so the memo holds about what one request touches instead of
    every version of it (entries are kept in order of last use, so a sweep stops at the
    first fresh one).  ``keep`` spans a few passes so subagents' requests, which interleave
    with their parent's, do not evict each other's entries.
    """

    def __init__(self, name: str, keep: int = 4) -> None:
        self.name = name
        #: passes an unused entry survives
        self.keep = keep
        self._items: dict[Any, tuple[int, Any, Any]] = {}

    def get(self, key: Any, original: Any) -> tuple[bool, Any]:
        """(True, value) when ``key`` was stored for this very ``original``."""
        hit = self._items.pop(key, None)
        if hit is None or hit[1] is not original:
            return False, None
        self._items[key] = (_passes[0], original, hit[2])  # now the most recently used
        return True, hit[2]

    def put(self, key: Any, original: Any, value: Any) -> None:
        self._items.pop(key, None)
        self._items[key] = (_passes[0], original, value)

    def sweep(self) -> None:
        """Drop the entries last used more than ``keep`` passes before this one."""
        oldest = _passes[0] - self.keep
        stale = []
        for key, (used, _, _) in self._items.items():
            if used >= oldest:
                break
            stale.append(key)
        for key in stale:
            del self._items[key]

    def __len__(self) -> int:
        return len(self._items)


#: The number of the current pass (one per request prepared, any session).
_passes = [0]


def next_pass() -> None:
    """Start a pass: entries every memo has not used for a while are dropped."""
    _passes[0] += 1
    for memo in (_tokens, _made, _spans, _stubs, _merges):
        memo.sweep()
    _made_ids.clear()


def encode(message: Message) -> str:
    """The JSON a message is estimated and hashed by (its pinned flag left out)."""
    data = message.to_dict()
    data.pop("pinned", None)
    return json.dumps(data, ensure_ascii=False, separators=(",", ":"), default=str)


# Only the estimate is kept per message, not its JSON: a copy of the whole history's JSON
# was most of what a long turn's memory grew by.
# The estimates of the last request's messages: the history's stay (every request measures
# it), the merged runs a request made (each rung of the ladder merges its own) go.
_tokens = PassMemo("tokens", keep=1)
# The merged runs a request made are estimated apart and forgotten with the request (a new
# set every step, each as long as the run of stubbed turns).
_made = PassMemo("made", keep=0)
_made_ids: set[int] = set()


def tokens(message: Message) -> int:
    """Estimated tokens: JSON characters / 4 (cheap, and conservative for code); an image
    counts as what the providers bill for one, not as its base64 text.  Memoised by identity
    (history messages are never edited in place; see :class:`PassMemo`)."""
    memo = _made if id(message) in _made_ids else _tokens
    found, n = memo.get(id(message), message)
    if found:
        return n
    n = _count(message)
    memo.put(id(message), message, n)
    return n


def _count(message: Message) -> int:
    n = len(encode(message)) // 4 + 1
    for part in message.parts:
        for image in part.images if isinstance(part, ToolResultPart) else \
                [part] if isinstance(part, ImagePart) else ():
            n += IMAGE_TOKENS - len(image.data) // 4
    return max(n, 1)


class HistoryEstimates:
    """The estimates of one session's history, by position.

    Every request measures the whole history (the threshold check, the status figure), so
    each message's estimate is kept; but a history only grows at its end, and an edit in
    place puts other message objects there, which the identity check notices.  So the
    messages themselves (the history's own objects, no copies) and an array of counts do
    what an identity-memo entry per message did, in 16 bytes instead of about 250 (a dict
    slot, a key and a tuple): the memory a long turn grew by at every step.
    """

    def __init__(self) -> None:
        self.messages: list[Message] = []
        self.counts = array("q")

    def total(self, messages: Sequence[Message]) -> int:
        """The estimate of ``messages`` (:func:`tokens` of each), re-estimating only those
        past the first that is not the one measured last time at its position."""
        known, counts = self.messages, self.counts
        same, limit = 0, min(len(known), len(messages))
        while same < limit and known[same] is messages[same]:
            same += 1
        if same < len(known):
            del known[same:]
            del counts[same:]
        for message in messages[same:]:
            known.append(message)
            counts.append(_count(message))
        return sum(counts)


_histories: weakref.WeakKeyDictionary[Any, HistoryEstimates] = weakref.WeakKeyDictionary()


def history_estimate(session: Any, messages: Sequence[Message]) -> int:
    """The estimate of ``messages``, the history ``session`` is sending, kept per session
    (:class:`HistoryEstimates`) for as long as the session lives."""
    try:
        record = _histories.get(session)
        if record is None:
            record = _histories[session] = HistoryEstimates()
    except TypeError:  # a session object that takes no weak reference: measure it all
        return estimate(messages)
    return record.total(messages)


def estimate(messages: Iterable[Message | None]) -> int:
    return sum(tokens(m) for m in messages if m is not None)


_spans = PassMemo("spans")


def span_key(messages: list[Message]) -> str:
    """The hash a summary is saved under: of the span's JSON, message by message.  Memoised
    by the span's identities: every step checks the same span (has the history been
    rewritten?) and must not re-encode it."""
    key = (len(messages), id(messages[0]) if messages else 0)
    found, hit = _spans.get(key, messages[0] if messages else None)
    if found and all(a is b for a, b in zip(hit[0], messages, strict=True)):
        return hit[1]
    digest = hashlib.sha256()
    for m in messages:
        digest.update(encode(m).encode())
        digest.update(b"\n")
    value = digest.hexdigest()
    _spans.put(key, messages[0] if messages else None, (tuple(messages), value))
    return value


# ---- pruning steps (pure; every step returns new messages, never edits its input) -----------

Aligned = list[Message | None]  # index-aligned with the history; None = dropped


def _last_prompt_index(messages: list[Message]) -> int:
    for i in range(len(messages) - 1, -1, -1):
        if messages[i].role == "user":
            return i
    return -1


def strip_reasoning(messages: list[Message], start: int = 0) -> Aligned:
    """Step 1: drop reasoning parts and provider item ids; messages left empty become None.
    Messages before ``start`` are passed through as they are (a held summary covers them:
    nothing will read them).

    The last assistant message of the running tool loop keeps its reasoning untouched:
    with thinking on, Anthropic rejects a tool continuation whose assistant turn lost its
    thinking block.
    """
    keep = -1
    last = len(messages) - 1
    if last > 0 and messages[last].role == "tool" and messages[last - 1].role == "assistant":
        keep = last - 1
    out: Aligned = list(messages[:start])
    for i, msg in enumerate(messages[start:], start):
        if i == keep:
            out.append(msg)
            continue
        if any(isinstance(p, ReasoningPart) or (isinstance(p, ToolCallPart) and p.item_id)
               for p in msg.parts):
            # memoised: a new copy every step would be encoded anew every step
            out.append(_memo(("strip", id(msg)), msg, _stripped, msg))
        else:
            out.append(msg if msg.parts else None)
    return out


def _stripped(msg: Message) -> Message | None:
    parts: list[Part] = []
    for part in msg.parts:
        if isinstance(part, ToolCallPart) and part.item_id:
            parts.append(replace(part, item_id=None))
        elif not isinstance(part, ReasoningPart):
            parts.append(part)
    return replace(msg, parts=parts) if parts else None


def _brief(value: Any, limit: int) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def call_note(call: ToolCallPart, result: ToolResultPart | None) -> str:
    """The one-line note an old tool call is replaced with."""
    if result is None:
        outcome = "no result"
    elif result.is_error:
        outcome = "error: " + _brief(result.output.strip().splitlines()[0] if result.output.strip()
                                     else "", 100)
    else:
        lines = result.output.count("\n") + (1 if result.output else 0)
        outcome = f"{lines} line{'s' if lines != 1 else ''} of output"
    return (f"(earlier tool call, details pruned to save context: {call.name} "
            f"{_brief(call.arguments, 160)} -> {outcome})")


def answers(messages: Sequence[Message | None], i: int) -> tuple[int, dict[str, ToolResultPart]]:
    """The tool message answering ``messages[i]`` (the next one present, if it is a tool
    message): its index and its results by call id.  Pairing is by position, not by id
    alone, because some servers reuse call ids across turns."""
    for j in range(i + 1, len(messages)):
        m = messages[j]
        if m is not None:
            return (j, {r.call_id: r for r in m.tool_results}) if m.role == "tool" else (-1, {})
    return -1, {}


def stub_tools(messages: Aligned, keep_last: int, start: int = 0) -> Aligned:
    """Step 2: outside the last ``keep_last`` messages, tool calls become notes and their
    results go (a result inside the tail whose call is outside goes too).  Messages before
    ``start`` are left as they are (the caller reads none of them)."""
    boundary = len(messages) - keep_last
    out: Aligned = list(messages)
    for i in range(start, max(boundary, 0)):
        msg = messages[i]
        if msg is None or msg.role != "assistant" or not msg.tool_calls:
            continue
        j, found = answers(messages, i)
        out[i] = _memo(("call", id(msg)), msg, _stub_calls, msg, found)
        if j >= 0 and (reply := out[j]) is not None:
            ids = frozenset(c.id for c in msg.tool_calls)
            out[j] = _memo(("reply", id(reply), ids), reply, _without_results, reply, ids)
    return out


def _stub_calls(msg: Message, found: dict[str, ToolResultPart]) -> Message:
    parts: list[Part] = []
    for part in msg.parts:
        if isinstance(part, ToolCallPart):
            parts.append(TextPart(call_note(part, found.get(part.id))))
        elif not isinstance(part, ReasoningPart):  # its reasoning no longer matches
            parts.append(part)
    return replace(msg, parts=parts)


def _without_results(reply: Message, ids: frozenset[str]) -> Message | None:
    kept = [p for p in reply.parts if not (isinstance(p, ToolResultPart) and p.call_id in ids)]
    return replace(reply, parts=kept) if kept else None


# Stubbed copies memoised by the original's identity: every step (and every rung of the
# ladder) stubs the same old messages, and reusing the same copies lets ``encode`` hit its
# memo instead of re-serialising thousands of messages per step.
_stubs = PassMemo("stubs")


def _memo(key: tuple[Any, ...], original: Message, make: Any, *args: Any) -> Message | None:
    found, value = _stubs.get(key, original)
    if not found:
        value = make(*args)
        _stubs.put(key, original, value)
    return value


def text_only(msg: Message, found: dict[str, ToolResultPart]) -> Message | None:
    """A message kept outside its context (pinned, the current prompt): tool calls become
    notes (``found`` holds their results), results and reasoning go, a tool message
    becomes nothing."""
    if msg.role == "tool":
        return None
    parts: list[Part] = []
    for part in msg.parts:
        if isinstance(part, ToolCallPart):
            parts.append(TextPart(call_note(part, found.get(part.id))))
        elif isinstance(part, TextPart):
            parts.append(part)
    return replace(msg, parts=parts) if parts else None


def keepers(messages: list[Message], cut: int) -> list[Message]:
    """What stays word for word from before ``cut``: pinned messages and the current
    prompt, as text."""
    prompt = _last_prompt_index(messages)
    out = []
    for i, msg in enumerate(messages[:cut]):
        if msg.pinned or i == prompt:
            kept = text_only(msg, answers(messages, i)[1])
            if kept is not None:
                out.append(kept)
    return out


def normalize(messages: Iterable[Message | None]) -> list[Message]:
    """Drop empties and merge neighbours of the same role (user or assistant), reasoning
    first so a merged assistant turn still opens with its thinking."""
    out: list[Message] = []
    run: list[Message] = []
    for msg in messages:
        if msg is None or not msg.parts:
            continue
        if run and run[-1].role == msg.role and msg.role in ("user", "assistant"):
            run.append(msg)
            continue
        if run:
            out.append(_merged(run))
        run = [msg]
    if run:
        out.append(_merged(run))
    return out


# A run of stubbed turns grows by one each step, so last step's merges are rarely asked for
# again, and each rung of the ladder merges its own run: kept only within one request.
_merges = PassMemo("merges", keep=0)


def _merged(run: list[Message]) -> Message:
    """One message for a run of same-role neighbours, memoised by the run's identities (the
    same old turns merge the same way on every step; see :class:`PassMemo`)."""
    if len(run) == 1:
        return run[0]
    key = tuple(id(m) for m in run)
    found, hit = _merges.get(key, run[0])
    if found and all(a is b for a, b in zip(hit[0], run, strict=True)):
        return hit[1]
    parts = [p for m in run for p in m.parts]
    parts.sort(key=lambda p: not isinstance(p, ReasoningPart))  # stable
    merged = Message(run[0].role, _join_texts(parts), any(m.pinned for m in run))
    _merges.put(key, run[0], (tuple(run), merged))
    _made_ids.add(id(merged))
    return merged


def _join_texts(parts: list[Part]) -> list[Part]:
    """Adjacent text parts as one, paragraph-separated (providers may join them bare)."""
    out: list[Part] = []
    for part in parts:
        if isinstance(part, TextPart) and out and isinstance(out[-1], TextPart):
            out[-1] = TextPart(out[-1].text.rstrip() + "\n\n" + part.text.lstrip())
        else:
            out.append(part)
    return out


def repair(messages: list[Message]) -> list[Message]:
    """Provider invariants: every result follows its call, every call has its result in the
    next message (calls are answered in the step that made them).  Broken pairs become
    notes; nothing is left dangling."""
    out: list[Message | None] = []
    for i, msg in enumerate(messages):
        if msg.role == "tool":
            prev = messages[i - 1] if i else None
            called = {c.id for c in prev.tool_calls} if prev is not None else set()
            kept = [p for p in msg.parts
                    if not isinstance(p, ToolResultPart) or p.call_id in called]
            out.append(replace(msg, parts=kept) if len(kept) != len(msg.parts) else msg)
            continue
        if msg.role == "assistant" and msg.tool_calls:
            nxt = messages[i + 1] if i + 1 < len(messages) else None
            answered = ({r.call_id for r in nxt.tool_results}
                        if nxt is not None and nxt.role == "tool" else set())
            if any(c.id not in answered for c in msg.tool_calls):
                parts: list[Part] = []
                for part in msg.parts:
                    if isinstance(part, ToolCallPart) and part.id not in answered:
                        parts.append(TextPart(call_note(part, None)))
                    elif not isinstance(part, ReasoningPart):
                        parts.append(part)
                msg = replace(msg, parts=parts)
        out.append(msg)
    fixed = normalize(out)
    if len(fixed) == len(messages) and all(a is b for a, b in zip(fixed, messages, strict=True)):
        return fixed
    return repair(fixed)  # a dropped result can leave its call unanswered


def ladder(messages: Aligned, budget: int) -> tuple[list[Message], str, bool]:
    """Steps 1-2 on an already reasoning-stripped list: the widest tool tail that fits.
    Returns (messages, which step, whether it fits)."""
    if estimate(messages) <= budget:
        return repair(normalize(messages)), "reasoning", True
    narrowest: list[Message] = []
    for rung in RUNGS:
        candidate = repair(normalize(stub_tools(messages, rung)))
        if estimate(candidate) <= budget:
            return candidate, f"tools:{rung}", True
        narrowest = candidate
    return narrowest, "tools:4", False


# ---- step 3: the summarised span ------------------------------------------------------------


def cut_points(messages: list[Message]) -> list[int]:
    """Where the history may be split: before any message that is not a tool result (a
    result always sits right after its call, so no pair is split)."""
    return [i for i in range(1, len(messages)) if messages[i].role != "tool"]


def plan_cut(messages: list[Message], base: Aligned, budget: int,
             previous: int | None, previous_summary: str | None = None) -> int:
    """Choose the cut: the previous one while it still fits (with its actual summary),
    else the earliest one (not before the previous) that leaves the request under the
    low-water mark (reserving a full-size summary).  Only cuts from the previous one on are
    weighed, so the history before it is neither stubbed nor estimated again."""
    points = cut_points(messages)
    if not points:
        return 0
    start = previous if previous in points else 0
    narrow = stub_tools(base, RUNGS[-1], start)
    suffix = [0] * (len(messages) + 1)
    for i in range(len(messages) - 1, start - 1, -1):
        suffix[i] = suffix[i + 1] + (tokens(narrow[i]) if narrow[i] is not None else 0)
    prompt = _last_prompt_index(messages)
    head = [0] * (len(messages) + 1)  # verbatim keepers before each cut
    for i, m in enumerate(messages):
        kept = text_only(m, answers(messages, i)[1]) if (m.pinned or i == prompt) else None
        head[i + 1] = head[i] + (tokens(kept) if kept is not None else 0)
    overhead = SUMMARY_TOKENS + 50

    def cost(cut: int, summary: int = overhead) -> int:
        return summary + head[cut] + suffix[cut]

    if previous in points:
        known = len(previous_summary) // 4 + 50 if previous_summary is not None else overhead
        if cost(previous, known) <= budget:
            return previous
    later = [p for p in points if p >= start]
    for limit in (budget * LOW_WATER, budget):
        for p in later:
            if cost(p) <= limit:
                return p
    return later[-1]


def transcript(messages: Iterable[Message]) -> str:
    """The dropped span as compact text for the summariser (long outputs cut)."""
    lines: list[str] = []
    for msg in messages:
        for part in msg.parts:
            if isinstance(part, TextPart) and part.text.strip():
                who = "User" if msg.role == "user" else "Assistant"
                lines.append(f"{who}: {_clip(part.text, 4000)}")
            elif isinstance(part, ToolCallPart):
                lines.append(f"Assistant called {part.name} {_brief(part.arguments, 400)}")
            elif isinstance(part, ToolResultPart):
                tag = "error" if part.is_error else "result"
                lines.append(f"{part.name} {tag}: {_clip(part.output, 1500)}")
    return "\n".join(lines)


def _clip(text: str, limit: int) -> str:
    text = text.strip()
    return text if len(text) <= limit else text[:limit] + f" [... {len(text) - limit} chars]"


PATH_KEYS = ("path", "file_path", "file", "filename", "target", "source", "destination")


def fallback_summary(messages: list[Message], earlier_notes: str | None = None) -> str:
    """A summary without a model: the user's requests (the first few and the latest) and
    the files the tools touched, after any model-written notes that already existed."""
    return summary_without_model(messages, earlier_notes,
                                 header="(Automatic notes: the model summary was unavailable.)")


def summary_without_model(messages: list[Message], earlier_notes: str | None = None, *,
                          header: str) -> str:
    """Notes made without a model for ``messages`` (see :func:`fallback_summary`), under
    ``header``."""
    requests = [_brief(m.text, 200) for m in messages if m.role == "user" and m.text.strip()]
    if len(requests) > 30:
        requests = [*requests[:3], f"... {len(requests) - 30} more ...", *requests[-27:]]
    files: list[str] = []
    counts: dict[str, int] = {}
    for m in messages:
        for call in m.tool_calls:
            counts[call.name] = counts.get(call.name, 0) + 1
            values = [call.arguments.get(k) for k in PATH_KEYS]
            paths = call.arguments.get("paths")
            values += paths if isinstance(paths, list) else []
            files += [v for v in values if isinstance(v, str) and v and v not in files]
    out = [header]
    if requests:
        out.append("User requests, oldest first:\n" + "\n".join(f"- {r}" for r in requests))
    if files:
        out.append("Files touched: " + ", ".join(files[-60:]))
    if counts:
        out.append("Tools used: " + ", ".join(f"{n} x{c}" for n, c in sorted(counts.items())))
    text = "\n\n".join(out)
    if earlier_notes:
        room = max(SUMMARY_CHARS - len(text) - 2, SUMMARY_CHARS // 4)
        text = _clip(earlier_notes, room) + "\n\n" + text
    return _clip(text, SUMMARY_CHARS)


def record_usage(session: Any, usage: Any, cause: str, model: str = "") -> None:
    """Put a nested model call on the session's usage ledger (when it keeps one), priced at
    the model that answered (a fallback endpoint may have used another)."""
    recorder = getattr(session, "recorder", None)
    if recorder is not None and usage is not None and hasattr(recorder, "record_usage"):
        try:
            recorder.record_usage(usage, model=model or session.model, cause=cause)
        except Exception as exc:
            log.warning("could not record usage: %s", exc)


async def model_summary(session: Any, previous: str | None, text: str,
                        cause: str = "compaction",
                        label: str = "Messages to fold into the notes") -> str:
    """One nested model call: notes for ``text`` (merged with ``previous``).

    The request goes through ``agent_prepare_request`` first, so a spending cap checks it
    before it is sent (raising :class:`~agent.contract.providers.BudgetExceeded`); it is marked
    ``nested``: its cost is held on top of the request being prepared, not instead of it.
    Its cost is booked in the session's spend ledger and usage ledger.
    """
    prompt = ""
    if previous:
        prompt += f"Earlier notes:\n{previous}\n\n"
    prompt += f"{label}:\n{text}"
    request = ProviderRequest(model=session.model, system=SUMMARY_SYSTEM,
                              messages=[Message.user(prompt)], tools=[], thinking="off",
                              max_tokens=SUMMARY_TOKENS * 2,
                              metadata={"purpose": "summary", "nested": True})
    hooks = getattr(session, "hooks", None)
    if hooks is not None:
        request = await hooks.prepare_request(request, session)
    chunks: list[str] = []
    final = ""
    finished = False
    try:
        async for item in session.runtime.provider.stream(request):
            if isinstance(item, TextDelta):
                chunks.append(item.text)
            elif isinstance(item, StepFinished):
                final = item.message.text
                finished = True
                answered = getattr(item, "model", "") or request.model
                if hooks is not None:  # the spend ledger books it on top of the request
                    hooks.request_done(session, answered, item.usage, nested=True)
                record_usage(session, item.usage, cause, answered)
    finally:
        if not finished and hooks is not None:
            hooks.request_done(session, request.model, None, nested=True)
    summary = ("".join(chunks) or final).strip()
    if not summary:
        raise ProviderError("the model returned an empty summary")
    return _clip(summary, SUMMARY_CHARS)


def recent_start(messages: list[Message], chars: int) -> int:
    """The first index of the most recent messages whose transcript fits ``chars`` (at
    least the last message, never splitting a tool result from its call)."""
    used = 0
    start = len(messages)
    for i in range(len(messages) - 1, -1, -1):
        used += len(transcript([messages[i]])) + 1
        if used > chars and start < len(messages):
            break
        start = i
    while 0 < start < len(messages) and messages[start].role == "tool":
        start += 1  # a result without its call would be a puzzle to the summariser
    return max(0, min(start, len(messages) - 1))


def condensed(messages: list[Message], limit: int) -> str:
    """The older span in at most ``limit`` characters: every user request and the model's
    words clipped short, tool calls as one line each, results left out (errors excepted);
    when even that is too long, an even sample of it, the user's requests first."""
    lines: list[tuple[bool, str]] = []
    for msg in messages:
        for part in msg.parts:
            if isinstance(part, TextPart) and part.text.strip():
                user = msg.role == "user"
                lines.append((user, f"{'User' if user else 'Assistant'}: "
                                    f"{_brief(part.text, 300 if user else 200)}"))
            elif isinstance(part, ToolCallPart):
                lines.append((False, f"Assistant called {part.name} {_brief(part.arguments, 120)}"))
            elif isinstance(part, ToolResultPart) and part.is_error:
                first = part.output.strip().splitlines()[0] if part.output.strip() else ""
                lines.append((False, f"{part.name} error: {_brief(first, 150)}"))
    total = sum(len(text) + 1 for _, text in lines)
    if total <= limit:
        return "\n".join(text for _, text in lines)
    users = [i for i, (user, _) in enumerate(lines) if user]
    others = [i for i, (user, _) in enumerate(lines) if not user]
    keep = _spread(users, lines, int(limit * 0.6))
    room = limit - sum(len(lines[i][1]) + 1 for i in keep)
    keep |= _spread(others, lines, room)
    note = (f"(condensed: {len(keep)} of {len(lines)} lines, sampled evenly through the "
            "span)")
    return "\n".join([note, *(lines[i][1] for i in sorted(keep))])


def _spread(indices: list[int], lines: list[tuple[bool, str]], budget: int) -> set[int]:
    """Evenly spaced ``indices`` whose lines fit ``budget`` characters."""
    if not indices or budget <= 0:
        return set()
    sizes = [len(lines[i][1]) + 1 for i in indices]
    average = sum(sizes) / len(sizes)
    count = min(len(indices), max(1, int(budget / average)))
    while count > 0:
        step = len(indices) / count
        chosen = {indices[int(j * step)] for j in range(count)}
        if sum(len(lines[i][1]) + 1 for i in chosen) <= budget:
            return chosen
        count = int(count * 0.9)
    return set()


#: Model requests a summary may take, however long the span (issue: resuming a long session
#: once cost 27 requests and 1.6 M tokens).
MAX_SUMMARY_REQUESTS = 2


async def summarize(session: Any, previous: str | None, messages: list[Message],
                    chunk_chars: int, cause: str = "compaction") -> str:
    """Fold ``messages`` into notes (merged with ``previous``) with at most two model
    requests, each at most ``chunk_chars`` of transcript.  A span that fits is one request.
    A longer one: first the most recent messages that fit, with notes made without the
    model for everything older (the user's requests, the files touched); then, if that
    succeeded, the older messages condensed into one request and folded into those notes.
    A failure of the second request keeps the first one's notes."""
    chunk_chars = max(chunk_chars, 1000)
    text = transcript(messages)
    if len(text) <= chunk_chars:
        return await model_summary(session, previous, text, cause)
    split = recent_start(messages, chunk_chars)
    older, recent = messages[:split], messages[split:]
    digest = summary_without_model(older, previous, header="(Notes on the older messages, "
                                   "made without the model.)")
    notes = await model_summary(session, digest, transcript(recent)[-chunk_chars:], cause,
                                label="The most recent messages, to fold into the notes")
    if not older:
        return notes
    try:
        return await model_summary(
            session, notes, condensed(older, chunk_chars), cause,
            label="Older messages (before those the notes already cover), condensed, to "
                  "fold into the notes")
    except Exception as exc:  # BudgetExceeded too: the first notes are complete
        log.warning("folding the older messages failed, keeping the recent notes: %s", exc)
        return notes


# ---- the hook -------------------------------------------------------------------------------


def state(session: Any) -> dict[str, Any]:
    """This plugin's per-session record (``session.data["prune"]``), also read by front
    ends: ``estimate`` and ``threshold`` (est. tokens), ``last`` = (before, after) counts of
    the latest compaction, ``step`` = which step made it fit, ``budget`` = the budget the
    whole history was last found to overrun (see :func:`held_cut`)."""
    return session.data.setdefault("prune", {"summaries": {}, "cut": None, "key": None,
                                             "last": None, "estimate": 0, "step": None})


def threshold_of(session: Any) -> int:
    return int(session.config.get("compact_threshold") or DEFAULT_THRESHOLD)


@hookimpl
def agent_status(session):
    """The one context figure: the estimate of the last request this plugin measured (None
    before the first: the front end measures the history itself) and the threshold."""
    record = session.data.get("prune") or {}
    estimate = int(record.get("estimate") or 0)
    return StatusInfo(context_tokens=estimate or None,
                      context_limit=int(record.get("threshold") or threshold_of(session)))


@hookimpl
def agent_addoption(options):
    options.add(Option("compact_threshold", type="int", default=DEFAULT_THRESHOLD,
                       help="estimated tokens past which older context is pruned from requests"))


@hookimpl
def agent_persisted_keys(config):
    # Summaries are saved with the session, so `agent -c` on a long session reuses them
    # instead of paying for the same summary calls again on every resume.
    return ["prune"]


@hookimpl
def agent_prepare_request(request, session):
    """Under the threshold: nothing (None).  Over it: an awaitable pruned request."""
    if request.metadata.get("purpose") == "summary":
        return None  # this plugin's own summary request: leave it (and the estimate) alone
    next_pass()
    threshold = threshold_of(session)
    fixed = (len(request.system) + len(json.dumps(request.tools, default=str))) // 4
    st = state(session)
    st["threshold"] = threshold
    st["estimate"] = fixed + history_estimate(session, request.messages)
    if st["estimate"] <= threshold or not request.messages:
        st["step"] = None
        return None
    return prune_request(request, session, max(threshold - fixed, threshold // 4))


def held_cut(st: dict[str, Any], messages: list[Message], budget: int) -> int | None:
    """The cut the last request's summary was made at, when this request keeps it: the last
    request needed the summary, the budget is no larger than the one the whole history was
    last found not to fit, and the history before the cut is the one that was summarised.
    None otherwise.

    A history only grows past its cut, so a request that needed the summary once needs it
    again; holding it skips stubbing, merging and estimating the whole history at every
    rung, which cost time and memory in proportion to the history at every step.
    """
    previous = st.get("cut")
    proven = st.get("budget")
    if (st.get("step") != "summary" or not isinstance(proven, int) or budget > proven
            or not isinstance(previous, int) or not 0 < previous <= len(messages)):
        return None
    if span_key(messages[:previous]) != st.get("key"):
        return None  # the history was rewritten (/undo, /compact)
    return previous


async def prune_request(request: ProviderRequest, session: Any, budget: int) -> ProviderRequest:
    messages = list(request.messages)
    st = state(session)
    held = held_cut(st, messages, budget)
    if held is not None:
        base = strip_reasoning(messages, start=held)
        out, step = await _with_summary(session, messages, base, budget), "summary"
    else:
        base = strip_reasoning(messages)
        out, step, fits = ladder(base, budget)
        st["budget"] = None if fits else budget  # the budget the whole history overran
        if not fits:
            out = await _with_summary(session, messages, base, budget)
            step = "summary"
    st["step"] = step
    st["last"] = (len(messages), len(out))
    metadata = {**request.metadata, "compacted": (len(messages), len(out)), "prune": step}
    return replace(request, messages=out, metadata=metadata)


async def _with_summary(session: Any, messages: list[Message], base: Aligned,
                        budget: int) -> list[Message]:
    st = state(session)
    previous = st.get("cut")
    if previous is not None and (previous > len(messages)
                                 or span_key(messages[:previous]) != st.get("key")):
        previous = None  # the history was rewritten (/undo, /compact): start over
        st["model_notes"] = None
    cut = plan_cut(messages, base, budget, previous,
                   st["summaries"].get(st.get("key")) if previous is not None else None)
    if cut <= 0:
        return ladder(strip_reasoning(messages), budget)[0]
    key = span_key(messages[:cut])
    summary = st["summaries"].get(key)
    if summary is None:
        prior = st["summaries"].get(st.get("key")) if previous is not None else None
        start = previous if prior is not None and previous is not None else 0
        span = messages[start:cut]
        _announce(session, span, budget * 2, resumed=prior is None and start == 0)
        try:
            summary = await summarize(session, prior, span, chunk_chars=budget * 2)
        except Exception as exc:  # any model failure: notes without the model
            log.warning("summary failed, using the fallback: %s", exc)
            if getattr(exc, "kind", None) == "budget" and callable(getattr(session, "notify",
                                                                             None)):
                session.notify("the summary was not written: the spending cap "
                               "(max_spend_usd) leaves no room for it; notes made without "
                               "the model stand in")
            summary = fallback_summary(messages[:cut], st.get("model_notes"))
        else:
            st["model_notes"] = summary
        st["summaries"][key] = summary
        while len(st["summaries"]) > CACHE_SIZE:
            st["summaries"].pop(next(iter(st["summaries"])))
    st["cut"], st["key"] = cut, key
    head: Aligned = [Message.user(SUMMARY_PREFIX + summary), *keepers(messages, cut)]
    return ladder([*head, *base[cut:]], budget)[0]


def _announce(session: Any, span: list[Message], chunk_chars: int, *, resumed: bool) -> None:
    """Tell the user (a ``notice`` event, see :meth:`agent.loop.session.Session.notify`) that
    model requests are being spent on a summary before their prompt goes out."""
    notify = getattr(session, "notify", None)
    if not callable(notify):
        return
    calls = 1 if len(transcript(span)) <= max(chunk_chars, 1000) else MAX_SUMMARY_REQUESTS
    what = "earlier message" if len(span) == 1 else "earlier messages"
    plural = "request" if calls == 1 else "requests"
    notify(f"summarising {len(span):,} {what} to fit the context window ({calls} model "
           f"{plural}{', once: the notes are saved with the session' if resumed else ''})")


# ---- commands -------------------------------------------------------------------------------


def _resave(session: Any) -> None:
    """Tell the session's recorder (if any) that the history was edited in place."""
    recorder = getattr(session, "recorder", None)
    if recorder is not None and hasattr(recorder, "rewrite"):
        try:
            recorder.rewrite(session)
        except Exception as exc:  # saving is best effort; the edit itself stands
            log.warning("could not save the edited history: %s", exc)


def pin_last(session: Any) -> str:
    """``/pin``: pin the latest user message so compaction never drops it."""
    for msg in reversed(session.messages):
        if msg.role == "user" and msg.text.strip():
            if msg.pinned:
                return f'Already pinned: "{_brief(msg.text, 60)}"'
            msg.pinned = True
            _resave(session)
            return f'Pinned: "{_brief(msg.text, 60)}". Compaction will keep it word for word.'
    return "Nothing to pin yet: there is no message from you in this session."


async def compact(session: Any) -> str:
    """``/compact``: replace the history with one model-written summary (irreversible).
    Pinned messages stay.  On a model failure the history is left as it was."""
    if not session.messages:
        return "Nothing to compact: the session is empty."
    if getattr(session, "busy", False):
        return "The agent is working; compact after the turn ends (or press esc)."
    before = len(session.messages)
    budget = threshold_of(session)
    try:
        summary = await summarize(session, None, session.messages, chunk_chars=budget * 2,
                                  cause="command:compact")
    except Exception as exc:
        return f"Compaction failed, history unchanged: {exc}"
    pinned = [m for m in keepers(session.messages, len(session.messages)) if m.pinned]
    session.messages[:] = [Message.user(COMPACT_PREFIX + summary), *pinned]
    session.data.pop("prune", None)
    _resave(session)
    kept = f" (and kept {len(pinned)} pinned)" if pinned else ""
    return f"compacted {before} messages into 1{kept}"


def _session_of(app: Any) -> Any:
    return getattr(app, "session", None)


def run_pin(app: Any, args: str) -> str | None:
    session = _session_of(app)
    if session is None:
        return show(app, "No session to pin in.")
    return show(app, pin_last(session))


async def run_compact(app: Any, args: str) -> str | None:
    session = _session_of(app)
    if session is None:
        return show(app, "No session to compact.")
    return show(app, await compact(session))


@hookimpl
def agent_register_commands(register, config):
    register(SlashCommand("pin", "keep your last message word for word through compaction",
                          run_pin))
    register(SlashCommand("compact", "replace the conversation with a summary (irreversible)",
                          run_compact))
