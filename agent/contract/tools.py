"""Tools: what a plugin offers the model, and what a call would do before it runs.

A tool states its *effects* (the paths it reads, writes and deletes, the shell command it runs,
the URLs it fetches, and what else it acts on: a skill, a subagent kind, a search pattern, a git
ref) from its arguments alone, before anything happens.  The gate, the
permission rules and every guard look only at effects, so a new write tool from a third-party
plugin is covered by the path guards without being named anywhere.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from agent.boot.config import Config
    from agent.loop.session import Session

from agent.contract.messages import ImagePart

#: The one-line refusal every tool raises when its arguments break the schema.
ToolRun = Callable[[dict[str, Any], "ToolContext"], Awaitable["str | ToolResult"]]
#: What :func:`tool` decorates: ``fn(args, ctx)``, async or plain.
ToolFunction = Callable[[dict[str, Any], "ToolContext"],
                        "str | ToolResult | Awaitable[str | ToolResult]"]


@dataclass(frozen=True)
class Effects:
    """What a tool call would touch, computed from its arguments before it runs.

    Paths are as the model wrote them (relative to the workspace, or absolute); guards
    normalise them.  ``opaque`` marks a call whose effects cannot be known (MCP tools, a
    plugin tool that does not say): it is always asked about unless a rule allows it.
    """

    reads: tuple[str, ...] = ()
    writes: tuple[str, ...] = ()
    deletes: tuple[str, ...] = ()
    command: str | None = None
    urls: tuple[str, ...] = ()
    opaque: bool = False
    #: what the call acts on when that is no path, command or URL: a skill's name, a
    #: subagent's kind, a search pattern, a git ref.  Permission rules match targets like
    #: any other subject (``skill = {"*" = "allow", "commit" = "deny"}``); a target alone
    #: never makes a call mutating.
    targets: tuple[str, ...] = ()
    #: The command asks to run with network access (the sandbox blocks it otherwise); the
    #: gate always asks about it unless ``sandbox_network = true``.
    network: bool = False
    #: Walls of the sandbox the call asks to lift, each named: ``socket:/run/docker.sock``
    #: (reach that unix socket), ``write:.git/config`` (write that persistence file).  Only a
    #: person's yes lifts one: the gate asks about such a call whatever rules, grants or
    #: ``--yolo`` say, and a headless run denies it.
    escalates: tuple[str, ...] = ()

    @property
    def mutating(self) -> bool:
        """True when the call may change anything: files, processes, or unknown state."""
        return bool(self.writes or self.deletes or self.command or self.opaque
                    or self.escalates)

    @property
    def read_only(self) -> bool:
        """True when the call at most reads workspace files (no command, URL or write)."""
        return not (self.mutating or self.urls)

    @property
    def changed_paths(self) -> tuple[str, ...]:
        """Every path the call may create, overwrite or remove."""
        return self.writes + self.deletes

    def subjects(self) -> tuple[str, ...]:
        """The strings permission patterns are matched against (paths, command, URLs,
        targets)."""
        out: list[str] = [*self.reads, *self.writes, *self.deletes]
        if self.command is not None:
            out.append(self.command)
        out.extend(self.urls)
        out.extend(self.targets)
        return tuple(dict.fromkeys(out))


UNKNOWN_EFFECTS = Effects(opaque=True)
NO_EFFECTS = Effects()


class ToolError(Exception):
    """Raised by a tool to fail the call with a message the model reads and can act on."""


@dataclass
class ToolResult:
    """The outcome of a tool call.

    ``output`` is what the model sees.  ``summary`` is a short line for the transcript
    (``12 hits``, ``exit 0, 3 lines out``); ``display`` carries extra data for renderers
    (for example a diff), never sent to the model.  ``images``
    (:class:`agent.contract.messages.ImagePart`) go to the model in the provider's own image blocks
    next to ``output``; the core drops those past the limits of
    :func:`agent.contract.messages.bounded_images` and says so in the output.
    """

    output: str
    is_error: bool = False
    summary: str | None = None
    display: dict[str, Any] | None = None
    images: list[ImagePart] = field(default_factory=list)


@dataclass(frozen=True)
class Change:
    """One change a call would make to a file's text, as the approval dialog shows it.

    ``old`` is the text replaced: a snippet of the file (its line number is found in the
    file), ``""`` for a new file, or None for *the file's whole current content* (the front
    end reads it; a file that is missing counts as empty).  ``new`` replaces it.  ``label``
    follows the path on the diff's header (``(edit 2)``, ``(new file)``).  ``atomic``: the
    change is one hunk, accepted or rejected whole (a patch section).
    """

    path: str
    old: str | None
    new: str
    label: str = ""
    atomic: bool = False


@dataclass(frozen=True)
class Description:
    """How a call reads to the user, worked out from its arguments alone (before it runs).

    - ``details``: the key arguments on the call's transcript line: the first follows
      ``* name`` on the same line, the others go under it (``("calc.py", "- return 1")``).
    - ``question``: the approval dialog's title, one sentence saying what will happen:
      ``Edit calc.py (+1 −1)?``, ``Run `pytest -q`?``, ``Fetch https://example.com?``.
      Empty: the front end asks ``allow <name>?``.
    - ``changes``: the file changes the call would make (:class:`Change`): the dialog shows
      them as a diff whose hunks the user may accept one by one, and the transcript keeps
      the applied diff.  Any tool that edits text gets that dialog by declaring them.
    - ``revise``: given, for each change in order, the text that is to replace its ``old``
      (its ``new`` with the rejected hunks undone; its ``old`` when all were rejected),
      returns the call's arguments that make only that change.  None: the hunks of this
      call cannot be rejected one by one (rejecting any denies the call).

    Front ends clip long lines; a tool need not.
    """

    details: tuple[str, ...] = ()
    question: str = ""
    changes: tuple[Change, ...] = ()
    revise: Callable[[tuple[str, ...]], dict[str, Any]] | None = None


@dataclass
class ToolCall:
    """One call the model asked for: its id, the tool name and the decoded arguments.

    ``raw_arguments`` keeps the exact JSON text the model sent, so a malformed call can be
    reported and replayed faithfully.  ``origin`` names who asked: ``"model"`` for the main
    agent, ``"worker"`` (etc.) for a subagent, ``"user"`` for a command the person typed
    (``!cmd``).  ``by_user`` is True only for such a call: typing it was the person's yes, so
    the gate runs what would otherwise be asked about (a guard's or a rule's deny still
    wins).  It is a field of its own, not an origin name, because a subagent kind may be
    called anything, ``user`` included.
    """

    id: str
    name: str
    arguments: dict[str, Any]
    raw_arguments: str = ""
    origin: str = "model"
    by_user: bool = False


#: Who let a call run (:attr:`ToolContext.allowed_by`, set from the gate's decision):
#:
#: - ``policy``: nobody said yes; the default policy judged the call read-only (a shell
#:   command the judge proved read-only, in any permission mode, plan mode included);
#: - ``rule``: an allow rule of the user's config; ``flag``: an ``--allow`` rule of the run;
#:   ``mode``: the permission mode (``accept-edits``);
#: - ``grant``: an "always" answer given earlier in the session; ``user``: a yes to this call;
#: - ``yolo``: ``--yolo`` turned an *ask* into *allow*.
#:
#: Only ``policy`` is a call no person approved: a tool that can run programs must run it
#: where it cannot write, connect or persist (bash uses the ``read-only`` sandbox).
AllowedBy = Literal["policy", "rule", "flag", "mode", "grant", "user", "yolo"]
ALLOWED_BY: tuple[AllowedBy, ...] = ("policy", "rule", "flag", "mode", "grant", "user", "yolo")


@dataclass
class ToolContext:
    """What a running tool may use.  Built by the session for each call.

    ``allowed_by`` says who let the call run (:data:`AllowedBy`).  It defaults to
    ``policy``, the most contained answer, so a context built without the gate's word never
    gains the walls' exceptions a person's approval brings.
    """

    workspace: Path
    state_dir: Path
    call: ToolCall
    config: Config
    session: Session | None = None
    emit_output: Callable[[str], None] = lambda chunk: None
    allowed_by: AllowedBy = "policy"

    @property
    def approved(self) -> bool:
        """True when a person (an answer, a grant, a rule, a flag, the mode or ``--yolo``)
        let the call run; False when only the default policy's read-only verdict did."""
        return self.allowed_by != "policy"

    def resolve(self, path: str) -> Path:
        """Resolve ``path`` inside the workspace (see :func:`agent.contain.paths.jail`)."""
        from agent.contain.paths import jail

        return jail(self.workspace, path)


@dataclass
class Tool:
    """A tool the model may call.

    Plugins build one directly (``Tool(name=..., run=...)``) or with :func:`tool`.

    - ``parameters`` is a JSON schema (``type: object``); arguments are validated against it
      before anything else, so ``run`` only ever sees well-typed input.
    - ``effects(args)`` says what the call would touch.  The default, for a tool that does not
      say, is *opaque*: the call is asked about every time.
    - ``tool_set`` names the optional set the tool belongs to (``core``, ``edit-plus``, ``git``,
      ``net``); ``None`` means a session or plugin tool that tool sets never withhold.
    - ``read_only`` marks tools offered to read-only agents and explore subagents.
    - ``subjectless`` says no call ever has a subject for permission patterns to match
      (a clock, a todo list): pattern rules on the tool are refused at startup.
    - ``run(args, ctx)`` is async; it returns text or a :class:`ToolResult`, or raises
      :class:`ToolError`.  Streaming output goes through ``ctx.emit_output``.
    - ``describe(args)`` says how a call reads to the user: its transcript line and the
      approval dialog's wording (a :class:`Description`).  It must not touch anything (it
      runs before the gate) and may be given arguments that break the schema.  The default
      (None) shows the first string argument and asks ``allow <name>?``.
    """

    name: str
    description: str
    run: ToolRun
    parameters: dict[str, Any] = field(
        default_factory=lambda: {"type": "object", "properties": {}, "additionalProperties": False}
    )
    effects: Callable[[dict[str, Any]], Effects] = lambda args: UNKNOWN_EFFECTS
    tool_set: str | None = None
    read_only: bool = False
    prompt: str | None = None  # one line for the system prompt's tool guide, if any
    plugin: str = ""  # set by the core: which plugin registered the tool
    #: True when the tool's calls never carry a path, command, URL or target, so a
    #: permission pattern other than ``"*"`` could never match one; such a rule is refused
    #: at startup instead of being silently ignored.
    subjectless: bool = False
    describe: Callable[[dict[str, Any]], Description] | None = None

    def description_of(self, args: dict[str, Any]) -> Description | None:
        """``describe(args)``; None when the tool does not describe its calls or its
        ``describe`` fails (a broken description must never stop a call)."""
        if self.describe is None:
            return None
        try:
            found = self.describe(args if isinstance(args, dict) else {})
        except Exception:
            return None
        return found if isinstance(found, Description) else None

    def spec(self) -> dict[str, Any]:
        """The provider-neutral declaration sent to the model."""
        return {"name": self.name, "description": self.description, "parameters": self.parameters}


def tool(
    name: str,
    description: str,
    parameters: dict[str, Any] | None = None,
    *,
    effects: Callable[[dict[str, Any]], Effects] | None = None,
    tool_set: str | None = None,
    read_only: bool = False,
    prompt: str | None = None,
    describe: Callable[[dict[str, Any]], Description] | None = None,
) -> Callable[[ToolFunction], Tool]:
    """Decorator turning an async (or plain) function ``fn(args, ctx)`` into a :class:`Tool`."""

    def wrap(fn: ToolFunction) -> Tool:
        async def run(args: dict[str, Any], ctx: ToolContext) -> str | ToolResult:
            out = fn(args, ctx)
            if isinstance(out, Awaitable):
                return await out
            return out

        return Tool(
            name=name,
            description=description,
            run=run,
            parameters=parameters or {"type": "object", "properties": {}},
            effects=effects or (lambda args: UNKNOWN_EFFECTS),
            tool_set=tool_set,
            read_only=read_only,
            prompt=prompt,
            describe=describe,
        )

    return wrap


#: Cap on any single tool result the model sees (characters).
RESULT_CAP = 30_000


def cap_output(text: str, limit: int = RESULT_CAP) -> str:
    """Truncate ``text`` to ``limit`` characters with a note saying how much was cut."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}\n... [truncated {len(text) - limit} chars]"
