"""The gate: the only place a tool call is allowed to run.

Per call, in order: guards (any deny wins; a guard that raises, hangs past
``guard_timeout`` or answers anything but None or a Verdict denies) → permission rules
(user config or the default policy, tightened by the project) → session grants ("always") →
the repeat guard (a third identical call in a turn is asked about) → ``--yolo`` turns *ask*
into *allow* and never touches a deny → *ask* goes to the front end's approver (headless:
denied, and the model is told).
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from agent.contain import sandbox
from agent.contract.tools import AllowedBy, Effects, Tool, ToolCall
from agent.contract.verdict import Verdict
from agent.loop import permission_hint, permissions
from agent.loop.allow_hint import allow_hint
from agent.loop.guards import DEFAULT_TIMEOUT as DEFAULT_GUARD_TIMEOUT
from agent.loop.permission_flags import FlagRules

if TYPE_CHECKING:
    from agent.boot.config import Config
    from agent.contract.hooks import Hooks
    from agent.loop.session import Session

Answer = Literal["yes", "always", "no"]


@dataclass
class ApprovalRequest:
    """What the front end shows when a call needs the user's yes."""

    call: ToolCall
    tool: Tool
    effects: Effects
    reason: str
    rule: str = ""
    repeating: bool = False
    grants: tuple[str, ...] = ("*",)  # the patterns "always" would grant

    @property
    def grant(self) -> str:
        """The grant as one line for the prompt footer."""
        return ", ".join(self.grants)

    @property
    def origin(self) -> str:
        return self.call.origin

    @property
    def network(self) -> bool:
        """The call asks to run with network access (the sandbox blocks it otherwise)."""
        return bool(getattr(self.effects, "network", False))


@dataclass
class Approval:
    """An answer with conditions, for approvers that let the user change the call.

    ``arguments`` replaces the call's arguments (e.g. an edit with some hunks rejected); the
    session re-checks them and runs the call only if its effects stay within the approved
    ones.  ``note`` is appended to the tool's result so the model learns what was changed.
    ``grants`` replaces the patterns an ``always`` answer grants (the user edited them).
    """

    answer: Answer
    arguments: dict[str, Any] | None = None
    note: str = ""
    grants: tuple[str, ...] | None = None


Approver = Callable[[ApprovalRequest], Awaitable["Answer | Approval"]]


@dataclass
class GateDecision:
    """``allowed`` or not; ``by`` is ``guard``, ``rule``, ``user``, ``headless`` or ``allow``;
    ``message`` is what the model is told on a denial."""

    allowed: bool
    by: str = "allow"
    message: str = ""
    source: str = ""
    arguments: dict[str, Any] | None = None  # the user's edited arguments (see Approval)
    note: str = ""  # appended to the tool's result
    notices: list[str] = field(default_factory=list)  # plugin problems to show the user once
    #: who let an allowed call run (agent.contract.tools.AllowedBy); the tool gets it as
    #: ``ctx.allowed_by`` and runs a ``policy`` call where it cannot write or persist
    allowed_by: AllowedBy = "policy"
    #: for a refusal: the config line, flag or command that would let it run (for the
    #: person, not the model; :mod:`agent.loop.allow_hint`)
    allow_hint: str = ""


HEADLESS_DENIAL = ("{tool} needs approval and this is a headless run, so it was denied. "
                   "Do without it, or tell the user to rerun with {rerun}.")

HEADLESS_UNCHECKABLE = ("{tool} needs approval and this is a headless run, so it was denied: "
                        "its command cannot be checked without running it ({why}), so no rule "
                        "can allow it. Spell the command out literally, or do without it.")

HEADLESS_REPEAT = ("{tool} repeated the same call a third time this turn; that needs the "
                   "user's approval and this is a headless run, so it was denied. Do something "
                   "else.")


ESCALATION_DENIAL = ("{tool} asks to lift the sandbox's walls ({what}), which only a person "
                     "can approve, and nobody can be asked in this run, so it was denied "
                     "(--yolo and --allow do not lift walls). Do without it, or tell the user "
                     "to run the command themselves.")


YOLO_UNRESOLVED = ("{tool} was denied: its command cannot be checked without running it "
                   "({why}), and --yolo approves only the commands it can check; it does not "
                   "approve this one (yolo_unresolved = \"deny\"). Spell the command out "
                   "literally, or ask the user to run it.")


@dataclass
class Grants:
    """Session-only "always" approvals: (tool name, subject pattern)."""

    items: list[tuple[str, str]] = field(default_factory=list)

    def add(self, tool: str, pattern: str) -> None:
        if (tool, pattern) not in self.items:
            self.items.append((tool, pattern))

    def covers(self, tool: str, effects: Effects) -> bool:
        """True when every subject of the call matches a pattern granted for the tool (a
        command that cannot be resolved statically never is: permissions.grants_cover)."""
        return permissions.grants_cover([p for name, p in self.items if name == tool], effects)


def allowed_by_rule(verdict: Verdict) -> AllowedBy:
    """Who an *allow* of the rules came from: the default policy (a call it judged
    read-only: ``policy``), an ``--allow`` flag, the permission mode, or a config rule."""
    if verdict.source == "default":
        return "policy"
    if verdict.source.startswith("--allow"):
        return "flag"
    if verdict.source.startswith("--permission-mode"):
        return "mode"
    return "rule"


def flag_rules(config: Config) -> FlagRules | None:
    """The run's flag rules (``config.permission_flags``, set by the CLI) with the
    ``permission_mode`` key; None when there are none."""
    flags = config.permission_flags
    mode = config.get("permission_mode") or "default"
    if flags is None:
        flags = FlagRules(mode=mode) if mode != "default" else None
    elif mode != flags.mode:
        flags = FlagRules(flags.allow, flags.deny, mode, flags.imported)
    return None if flags is None or flags.empty else flags


class Gate:
    """Decides every tool call of one session."""

    def __init__(self, hooks: Hooks, config: Config, approver: Approver | None,
                 *, yolo: bool = False) -> None:
        self.hooks = hooks
        self.config = config
        self.approver = approver
        self.yolo = yolo
        self.grants = Grants()
        self.user_rules = permissions.parse_rules(config.get("permission", {}))
        self.project_rules = permissions.strip_allows(
            permissions.parse_rules(config.project_permission))
        #: ``--allow``/``--deny``/``--permission-mode`` of this run (agent.loop.permission_flags)
        self.flags = flag_rules(config)
        self._seen: Counter[bytes] = Counter()

    def new_turn(self) -> None:
        """Reset the repeat guard (it counts identical calls within one turn)."""
        self._seen.clear()

    @property
    def guard_timeout(self) -> float:
        """Seconds each guard may take over one call (config ``guard_timeout``)."""
        value = self.config.get("guard_timeout")
        return float(value) if isinstance(value, (int, float)) and value > 0 else \
            DEFAULT_GUARD_TIMEOUT

    def verdict(self, call: ToolCall, effects: Effects,
                session: Session | None) -> tuple[Verdict, str]:
        """Guards and rules without asking anyone: the verdict and who gave it.

        For callers without an event loop (``agent policy explain``); :meth:`decide` awaits
        the guards instead, so a slow one never blocks the loop.
        """
        guards = self.hooks.guard(call, effects, session, timeout=self.guard_timeout)
        return self._combine(call, effects, guards)

    async def _verdict(self, call: ToolCall, effects: Effects,
                       session: Session | None) -> tuple[Verdict, str]:
        guards = await self.hooks.guard_async(call, effects, session,
                                              timeout=self.guard_timeout)
        return self._combine(call, effects, guards)

    def _combine(self, call: ToolCall, effects: Effects,
                 guards: list[Verdict]) -> tuple[Verdict, str]:
        denials = [v for v in guards if v.decision == "deny"]
        if denials:
            return denials[0], "guard"
        rule = permissions.decide(call.name, effects, self.user_rules, self.project_rules,
                                  workspace=getattr(self.config, "workspace", None),
                                  flags=self.flags)
        if rule.decision == "deny":
            return rule, "rule"
        asks = [v for v in guards if v.decision == "ask"]
        if asks:
            return asks[0], "guard"
        floor = sandbox.approval_floor(self.config, effects)
        if floor is not None and rule.decision == "allow":
            return floor, "sandbox"  # no sandbox here, or network asked for: never auto
        return rule, "rule"

    async def decide(self, call: ToolCall, tool: Tool, effects: Effects,
                     session: Session | None) -> GateDecision:
        verdict, by = await self._verdict(call, effects, session)
        notices = self.hooks.guards.take_new_problems()
        if verdict.decision == "deny":
            prefix = f"Blocked by the {verdict.source} plugin: " if by == "guard" else ""
            return GateDecision(False, by, prefix + verdict.reason, verdict.source,
                                notices=notices,
                                allow_hint=allow_hint(by, verdict.source, self.config))
        decision = await self._decide_rest(call, tool, effects, verdict, by)
        decision.notices = notices
        return decision

    def _headless_denial(self, tool_name: str, effects: Effects, by: str,
                         repeating: bool) -> str:
        """What the model is told when nobody can approve a call: the flags that would have
        let it through (each combination tried against the rules first,
        :mod:`agent.loop.permission_hint`)."""
        if repeating:
            return HEADLESS_REPEAT.format(tool=tool_name)
        unresolved = permissions.unresolved_reason(effects)
        if unresolved:
            return HEADLESS_UNCHECKABLE.format(tool=tool_name, why=unresolved)
        hint = "--yolo"
        if by == "rule":  # a guard's or the sandbox's ask is lifted by --yolo alone
            hint = permission_hint.rerun_hint(
                tool_name, effects, self.user_rules, self.project_rules, self.flags,
                getattr(self.config, "workspace", None)) or "--allow RULE (docs/headless.md)"
        return HEADLESS_DENIAL.format(tool=tool_name, rerun=hint)

    async def _decide_rest(self, call: ToolCall, tool: Tool, effects: Effects,
                           verdict: Verdict, by: str) -> GateDecision:
        needs_ask = verdict.decision == "ask"
        allowed_by: AllowedBy = allowed_by_rule(verdict)
        # Lifting a wall of the sandbox is a person's decision, every time: no rule, grant
        # or --yolo gives it.
        escalation = bool(effects.escalates) and not call.by_user
        if escalation:
            needs_ask = True
            verdict = Verdict.ask("it asks to lift the sandbox's walls: "
                                  + ", ".join(effects.escalates), "sandbox")
        # Network for a command is approved per call: an "always" given without it must not
        # carry it along.
        if needs_ask and not escalation and not (by == "sandbox" and effects.network) \
                and self.grants.covers(call.name, effects):
            needs_ask, allowed_by = False, "grant"
        elif allowed_by == "policy" and self.grants.covers(call.name, effects):
            allowed_by = "grant"  # the user's "always" covers it, not only the judge
        repeating = False
        if call.origin == "model":
            # A digest, not the arguments: a long turn of large writes would keep them all.
            key = hashlib.blake2b((call.name + "\0" + json.dumps(
                call.arguments, sort_keys=True, default=str)).encode(), digest_size=16).digest()
            self._seen[key] += 1
            if self._seen[key] >= 3 and not needs_ask:
                repeating = True
                needs_ask = True
                verdict = Verdict.ask(
                    f"{call.name} is repeating the same call (allowed by the rules, but this "
                    "is the third identical call this turn)", "repeat guard")
        if not needs_ask:
            # a command the person typed (!cmd) was approved by typing it
            return GateDecision(True, "allow", source=verdict.source,
                                allowed_by="user" if call.by_user else allowed_by)
        if call.by_user:  # the person typed this command: that was the approval
            return GateDecision(True, "user", source=verdict.source, allowed_by="user")
        if escalation and self.approver is None:
            return GateDecision(False, "headless", ESCALATION_DENIAL.format(
                tool=call.name, what=", ".join(effects.escalates)))
        if self.yolo and not repeating and not escalation:
            unresolved = permissions.unresolved_reason(effects)
            if not unresolved:
                return GateDecision(True, "yolo", source=verdict.source, allowed_by="yolo")
            if self.config.get("yolo_unresolved") != "ask":
                return GateDecision(False, "yolo", YOLO_UNRESOLVED.format(
                    tool=call.name, why=unresolved), "yolo_unresolved",
                    allow_hint=allow_hint("yolo", "yolo_unresolved", self.config))
        if self.approver is None:
            return GateDecision(False, "headless", self._headless_denial(
                call.name, effects, by, repeating))
        grants = permissions.grant_patterns(call.name, effects)
        reply = await self.approver(ApprovalRequest(
            call, tool, effects, verdict.reason, verdict.source, repeating, grants))
        arguments, note = None, ""
        if isinstance(reply, Approval):
            answer, arguments, note = reply.answer, reply.arguments, reply.note
            if reply.grants is not None:
                grants = tuple(reply.grants)
        else:
            answer = reply
        if answer == "always":
            for pattern in grants:
                self.grants.add(call.name, pattern)
        if answer in ("yes", "always"):
            return GateDecision(True, "user", source=verdict.source, arguments=arguments,
                                note=note, allowed_by="user")
        if call.origin != "model":
            return GateDecision(False, "user", "The user denied this call. Stop and report it.")
        return GateDecision(False, "user", "User denied this tool call.")
