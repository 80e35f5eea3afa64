"""Agent variants (default, quick, deep, plan, review) and the /agent and /think commands.

A variant is a preset for the main session: its thinking level, its step cap, a paragraph
appended to the system prompt, and whether it may change anything.  ``plan`` and ``review``
are read-only: only tools marked ``read_only`` are offered (no writes, no shell, no worker
subagent) and their prompt says so.

The variant is chosen with the ``agent`` key (``--agent NAME``, ``AGENT_AGENT``).  A thinking
level or step cap the user set explicitly (``--think``/``AGENT_THINK``/the file,
``--max-steps``/...) wins over the variant's, so ``--agent deep --think low`` is deep with low
thinking.  In a session ``/agent NAME`` switches variant and ``/think LEVEL`` changes only the
level; a level picked with ``/think`` survives later ``/agent`` switches.

State, for the UI and other plugins: ``session.data["agent"]`` is the variant's name and
``session.data["read_only"]`` is True in a read-only variant (the ``subagents`` plugin then
withholds the worker kind).  Subagent sessions are left alone.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from agent import ConfigError, Fragment, Option, SlashCommand, StatusInfo, hookimpl
from agent.contract.providers import THINKING_LEVELS


@dataclass(frozen=True)
class Variant:
    """A preset for the main session."""

    name: str
    summary: str
    thinking: str
    max_steps: int
    read_only: bool = False
    appendix: str = ""


QUICK = """\
Agent: quick. This is a small, well-scoped task. Do not deliberate or explore beyond the
files it names; do not keep a task list. Make the change, check it once, report in a few
lines."""

DEEP = """\
Agent: deep. This task deserves care. Before changing anything, form more than one
hypothesis and read enough of the code to tell them apart. Record what you learn that will
matter later with the remember tool when it is available. In your report, separate what you
verified (ran, read, tested) from what you believe but did not check."""

PLAN = """\
Agent: plan. You are in planning mode and you change nothing: no file is written, no command
is run, and no tool that could change anything is available. Read what you need, then produce
a plan: the files to change and how, the order of the steps, the risks, and how each step
will be verified. Never describe an edit as made; describe it as proposed. If a question
decides the plan, ask it when you can, or state the assumption you chose."""

REVIEW = """\
Agent: review. You are reviewing, and you change nothing: no file is written, no command is
run, and no tool that could change anything is available. Report defects in order of
severity: incorrect behaviour first, then missing validation at trust boundaries, security,
resource leaks, and last clarity. For each give the file and line, what is wrong, why it
matters, and the fix. If the code is fine, say so plainly instead of inventing problems."""

VARIANTS: dict[str, Variant] = {v.name: v for v in (
    Variant("default", "balanced: medium thinking, every tool", "medium", 50),
    Variant("quick", "small scoped tasks: no thinking, 12 steps", "off", 12, appendix=QUICK),
    Variant("deep", "hard problems: max thinking, 80 steps", "max", 80, appendix=DEEP),
    Variant("plan", "read-only planning: high thinking, changes nothing", "high", 50,
            read_only=True, appendix=PLAN),
    Variant("review", "read-only review: high thinking, changes nothing", "high", 50,
            read_only=True, appendix=REVIEW),
)}

#: session.data keys this plugin owns.
AGENT_KEY = "agent"
READ_ONLY_KEY = "read_only"
THINKING_CHOSEN_KEY = "thinking_chosen"  # the user picked the level (flag, file, /think)


def available() -> str:
    return ", ".join(VARIANTS)


def unknown_agent(name: str) -> str:
    return f'Unknown agent "{name}". Available: {available()}'


# ---- applying a variant (pure functions over a session-like object) --------------------------


def apply_variant(session: Any, name: str, *, keep_thinking: bool = False,
                  keep_steps: bool = False) -> Variant:
    """Make ``session`` run as variant ``name``; raises KeyError for an unknown name.

    ``keep_thinking`` / ``keep_steps`` leave a level or cap the user chose in place."""
    variant = VARIANTS[name]
    if not keep_thinking:
        session.thinking = variant.thinking
        # A variant the user picked chose its level; the default one chose nothing.
        session.thinking_chosen = variant.name != "default"
    if not keep_steps:
        session.max_steps = variant.max_steps
    session.data[AGENT_KEY] = variant.name
    session.data[READ_ONLY_KEY] = variant.read_only
    return variant


def current_variant(session: Any) -> Variant:
    return VARIANTS.get(str(session.data.get(AGENT_KEY) or "default"), VARIANTS["default"])


def switch_agent(session: Any, args: str) -> str:
    """``/agent [NAME]``: show the variants, or switch to one.  Returns the line to show."""
    name = args.strip().lower()
    current = current_variant(session)
    if not name:
        lines = [f"{'*' if v.name == current.name else ' '} {v.name:<8} {v.summary}"
                 for v in VARIANTS.values()]
        return "\n".join([f"agent: {current.name}  thinking: {session.thinking}  "
                          f"steps: {session.max_steps}", *lines])
    if name not in VARIANTS:
        return unknown_agent(name)
    config = session.config
    keep_thinking = bool(session.data.get(THINKING_CHOSEN_KEY))
    keep_steps = config.source("max_steps") != "default"
    variant = apply_variant(session, name, keep_thinking=keep_thinking, keep_steps=keep_steps)
    note = " (read-only: nothing will be changed)" if variant.read_only else ""
    return (f"agent: {variant.name}  thinking: {session.thinking}  "
            f"steps: {session.max_steps}{note}")


def set_thinking(session: Any, args: str) -> str:
    """``/think [LEVEL]``: show the level, or change it (for this session)."""
    level = args.strip().lower()
    if not level:
        return f"thinking: {session.thinking}  (levels: {', '.join(THINKING_LEVELS)})"
    if level not in THINKING_LEVELS:
        return (f'Unknown thinking level "{level}". '
                f"Available: {', '.join(THINKING_LEVELS)}")
    session.thinking = level
    session.thinking_chosen = True
    session.data[THINKING_CHOSEN_KEY] = True
    return f"thinking: {level}"


def _say(app: Any, text: str) -> str | None:
    """Show ``text`` through the command context when it can, else hand it back."""
    if "\n" in text and hasattr(app, "info"):
        title, _, body = text.partition("\n")
        app.info(title, body)
        return None
    if hasattr(app, "notice"):
        app.notice(text)
        return None
    return text


def cmd_agent(app: Any, args: str) -> Any:
    session = getattr(app, "session", None)
    if session is None:
        return "no session yet - run /provider first"
    if not args.strip() and callable(getattr(app, "pick", None)):
        return _pick_agent(app, session)  # a front end with pickers: arrows and enter
    return _say(app, switch_agent(session, args))


async def _pick_agent(app: Any, session: Any) -> str | None:
    current = current_variant(session)
    items = [(f"{v.name:<8} {v.summary}", v.name,
              "read-only" if v.read_only else "") for v in VARIANTS.values()]
    name = await app.pick(f"Agent variant (now {current.name})", items, current=current.name)
    if not name:
        return None
    return _say(app, switch_agent(session, name))


def cmd_think(app: Any, args: str) -> Any:
    session = getattr(app, "session", None)
    if session is None:
        return "no session yet - run /provider first"
    if not args.strip() and callable(getattr(app, "pick", None)):
        return _pick_thinking(app, session)
    return _say(app, set_thinking(session, args))


async def _pick_thinking(app: Any, session: Any) -> str | None:
    level = await app.pick(f"Thinking level (now {session.thinking})", list(THINKING_LEVELS),
                           current=session.thinking)
    if not level:
        return None
    return _say(app, set_thinking(session, level))


# ---- hooks ----------------------------------------------------------------------------------


@hookimpl
def agent_status(session):
    """The variant in use, for the status bar."""
    name = session.data.get(AGENT_KEY)
    return StatusInfo(agent=str(name)) if name else None


@hookimpl
def agent_addoption(options):
    options.add(Option("agent", default="default", flag="--agent", env="AGENT_AGENT",
                       metavar="NAME",
                       help=f"agent variant: {available()} (docs/agents.md)"))


@hookimpl
def agent_configure(config):
    name = str(config.get("agent") or "default")
    if name not in VARIANTS:
        raise ConfigError(unknown_agent(name))


@hookimpl
def agent_session_start(session):
    if session.origin != "model" or getattr(session, "parent", None) is not None:
        return
    config = session.config
    chosen = config.source("thinking") != "default"
    session.data[THINKING_CHOSEN_KEY] = chosen
    apply_variant(session, str(config.get("agent") or "default"), keep_thinking=chosen,
                  keep_steps=config.source("max_steps") != "default")


@hookimpl
def agent_offered_tools(tools, session):
    if session.origin != "model" or not session.data.get(READ_ONLY_KEY):
        return None
    return [t for t in tools if t.read_only]


@hookimpl
def agent_prompt_fragments(session):
    if session.origin != "model":
        return None
    variant = current_variant(session)
    if not variant.appendix:
        return None
    return Fragment("agent-variant", variant.appendix, order=30)


@hookimpl
def agent_register_commands(register, config):
    register(SlashCommand("agent", "show or switch the agent variant", cmd_agent,
                          args="[name]", takes_args=True))
    register(SlashCommand("think", "show or set the thinking level", cmd_think,
                          args="[off|low|medium|high|max]", takes_args=True))
