"""Every hook a plugin can implement.  These docstrings are the plugin API reference.

Hooks are synchronous (pluggy has no async).  Slow work lives on the objects hooks return:
``Tool.run`` and ``Provider.stream`` are async, ``agent_prepare_request`` may return an
awaitable, and ``agent_after_turn`` returns the awaitable the session runs after a turn.
The core calls hooks only through the typed facade in :mod:`agent.contract.hooks`, which reduces
collect-all results in a deterministic order (by plugin name, never by registration order)
and isolates a plugin that raises.

A plugin is a module (or object) with functions decorated by ``agent.hookimpl``::

    from agent import hookimpl, Tool

    @hookimpl
    def agent_register_tools(register, config):
        register(Tool(name="hello", description="Say hello", run=hello))
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

import pluggy

if TYPE_CHECKING:  # annotations only: importing these here would load the whole core
    import urwid

    from agent.boot.config import Config
    from agent.boot.plugins import PluginStatus
    from agent.boot.runtime import Boot
    from agent.contract.blocks import Block
    from agent.contract.commands import SlashCommand
    from agent.contract.events import DoneEvent, Event
    from agent.contract.mentions import MentionSource
    from agent.contract.options import Option
    from agent.contract.panels import HeaderLine, LiveState, Panel, StatusInfo
    from agent.contract.prompt import Fragment
    from agent.contract.providers import (
        Provider,
        ProviderChoice,
        ProviderRequest,
        ProviderSettings,
        ProviderSpec,
        Usage,
    )
    from agent.contract.tools import Effects, Tool, ToolCall, ToolResult
    from agent.contract.verdict import Verdict
    from agent.loop.session import Runtime, Session, SessionClosed
    from agent.state.schema import StoreSchema
    from agent.ui.context import CommandContext
    from agent.ui.keymap import Keymap
    from agent.ui.widgets.blocks import Theme

hookspec = pluggy.HookspecMarker("agent")


class OptionSink(Protocol):
    """What ``agent_addoption`` receives: ``options.add(option)`` declares a config key."""

    def add(self, option: Option) -> None: ...


#: ``agent NAME ARGS...``: called with the remaining arguments and the loaded boot; returns
#: the exit code.
CliHandler = Callable[[list[str], "Boot"], int]


class CliRegistrar(Protocol):
    """What ``agent_register_cli_commands`` receives as ``register``."""

    def __call__(self, name: str, handler: CliHandler, summary: str = "",
                 usage: Sequence[tuple[str, str] | str] = ()) -> None: ...


#: A secret-path matcher: a path's lower-cased segments relative to the workspace in, why
#: it holds secrets (a short reason) or None out.
SecretMatcher = Callable[[list[str]], "str | None"]


@hookspec(historic=True)
def agent_addoption(options: OptionSink) -> None:
    """Declare config keys, with optional CLI flags and environment variables.

    Called once per plugin right after it is registered (historic), before the config is
    built.  Call ``options.add(Option(...))``; the key becomes readable as
    ``config.get(key)`` with precedence file < env < flag, and appears in ``--help``.
    Return value is ignored.

    Example::

        @hookimpl
        def agent_addoption(options):
            options.add(Option("bell_on_ask", type="bool", default=False,
                               help="ring the bell on approval prompts"))
    """


@hookspec
def agent_configure(config: Config) -> None:
    """Validate settings and set up plugin state, once, after the config is complete.

    ``config`` is the resolved :class:`agent.boot.config.Config`.  Raise ``ConfigError`` with a
    clear message to stop startup (exit code 2).  A stateful plugin may register an object
    carrying more hooks with ``config.plugins.register(obj, name)``.  Return value ignored.

    Example::

        @hookimpl
        def agent_configure(config):
            if config.get("bell_on_ask") and not sys.stderr.isatty():
                config.notices.append("bell: stderr is not a terminal")
    """


@hookspec
def agent_unconfigure(config: Config) -> None:
    """Release plugin resources (processes, connections) when ``agent`` exits.

    Called once, in reverse order of configuration; an error in one plugin does not stop the
    others.  Return value ignored.

    Example::

        @hookimpl
        def agent_unconfigure(config):
            _server.close()
    """


@hookspec
def agent_register_tools(register: Callable[[Tool], None], config: Config) -> None:
    """Contribute tools the model may call.

    Call ``register(tool)`` with an :class:`agent.contract.tools.Tool` for each tool.  The core
    records which plugin registered which tool; a duplicate name keeps the first plugin's
    tool (in plugin-name order) and reports the clash.  Return value ignored.

    Example::

        @hookimpl
        def agent_register_tools(register, config):
            register(Tool(name="current_time", description="Now, ISO 8601",
                          run=now, effects=lambda args: NO_EFFECTS))
    """


@hookspec
def agent_register_providers(register: Callable[[ProviderSpec], None],
                             config: Config) -> None:
    """Contribute model providers.

    Call ``register(spec)`` with an :class:`agent.contract.providers.ProviderSpec`.  The spec's
    ``create(settings)`` must not contact the network or import a heavy SDK until the first
    request.  Return value ignored.

    Example::

        @hookimpl
        def agent_register_providers(register, config):
            register(ProviderSpec(name="echo", create=EchoProvider, keyless=True))
    """


@hookspec(firstresult=True)
def agent_setup_provider(ui: CommandContext, config: Config,
                         providers: Mapping[str, ProviderSpec],
                         problem: str) -> Awaitable[ProviderChoice | None] | None:
    """Run the interactive provider setup: called by the full-screen UI when no provider is
    configured (``problem`` says what is missing, e.g. no API key) and when the user asks for
    it (``/provider``, ``problem`` is "").

    ``ui`` is the UI's :class:`agent.ui.context.CommandContext` (``pick``, ``prompt_text``,
    ``notice``, ``set_live``); ``providers`` maps names to the registered
    :class:`agent.contract.providers.ProviderSpec` (their ``presets`` are the endpoints to offer).
    Return an awaitable (first non-None answer wins) resolving to the
    :class:`agent.contract.providers.ProviderChoice` the user made, or to None when they cancelled.
    The hook itself must return at once.  The UI saves the choice to ``config.toml``
    (other keys and comments kept) and uses it right away.  The builtin ``setup`` plugin
    answers with the onboarding dialog; with no answer the UI says how to configure a
    provider in ``config.toml``.

    Example::

        @hookimpl
        def agent_setup_provider(ui, config, providers, problem):
            async def choose():
                model = await ui.prompt_text("house model id")
                return ProviderChoice("openai", model, base_url=HOUSE_URL) if model else None
            return choose()
    """


@hookspec(firstresult=True)
def agent_select_provider(config: Config, providers: Mapping[str, ProviderSpec],
                          settings: ProviderSettings) -> Provider | None:
    """Build the provider for this session (first non-None result wins).

    ``providers`` maps names to registered specs; ``settings`` is the resolved
    :class:`agent.contract.providers.ProviderSettings` (provider name, model, URL, key).  The
    essential ``core`` plugin answers with ``providers[settings.provider].create(settings)``.
    Wrapper implementations (``wrapper=True``) may wrap the result, as the ``fallback`` plugin does
    to chain endpoints.  Return a :class:`agent.contract.providers.Provider` or None.

    Example::

        @hookimpl(wrapper=True)
        def agent_select_provider(config, providers, settings):
            provider = yield
            return LoggingProvider(provider)
    """


@hookspec
def agent_offered_tools(tools: list[Tool], session: Session) -> list[Tool] | None:
    """Narrow the tools offered for the next step.

    ``tools`` is the list the previous plugins left (already filtered by tool sets).  Return a
    new list to narrow it, or None to leave it.  Applied in plugin-name order, each seeing the
    previous result.  A withheld tool is absent from the request and from the system prompt.

    Example::

        @hookimpl
        def agent_offered_tools(tools, session):
            if session.data.get("read_only"):
                return [t for t in tools if t.read_only]
    """


@hookspec
def agent_prepare_request(
        request: ProviderRequest, session: Session,
) -> ProviderRequest | Awaitable[ProviderRequest | None] | None:
    """Adjust the outgoing model request (compaction, cache markers, extra params).

    ``request`` is an :class:`agent.contract.providers.ProviderRequest`.  Return a replacement
    request or None to leave it; applied in plugin-name order, each seeing the previous result.
    Work that needs the network (a model-written summary) may return an awaitable resolving to a
    request or None; the session awaits it before sending.  Must keep provider invariants (every
    tool result has its call).  The session's own history is never changed by this hook, only what
    is sent.  Setting ``request.metadata["compacted"] = (before, after)`` (message counts) makes the
    session report one ``compacted`` event per turn.

    To refuse the request, raise :class:`agent.contract.providers.BudgetExceeded` (the one exception
    that is not isolated): nothing is sent, and the session ends the turn with an ``error``
    event of kind ``budget`` and ``done`` with reason ``budget``.  Strings appended to
    ``request.metadata["notices"]`` are shown to the user as ``notice`` events; to say
    something *while* slow work runs (before the request is ready), call
    ``session.notify(text)``.

    A plugin that makes its own model call while preparing (a summary) should pass that
    request through ``session.hooks.prepare_request`` first, with ``metadata["nested"] =
    True``, so the spending cap checks it on top of the request being prepared, and book
    its usage with ``session.hooks.request_done(session, model, usage, nested=True)`` (see
    :func:`agent_request_done`).

    Example::

        @hookimpl
        def agent_prepare_request(request, session):
            request.metadata["user"] = "ci"
    """


@hookspec
def agent_request_done(
        session: Session, model: str, usage: Usage | None, nested: bool,
) -> None:
    """Book a model request made for ``session`` once it is over (spending ledgers).

    The session calls this after each step it streamed to the end, with the model that
    answered (a fallback endpoint may answer with another one) and the step's
    :class:`agent.contract.providers.Usage`.  A plugin that makes its own model call for a session
    calls it too, through ``session.hooks.request_done(session, model, usage, nested=...)``:
    ``nested`` is True for a call made while a request is being prepared (a compaction
    summary, see :func:`agent_prepare_request`).  ``usage`` is None when the request ended
    without an answer (it failed, or the session that made it was cancelled): nothing is
    booked, and what a plugin held for it in ``agent_prepare_request`` is released.  The
    builtin cost plugin keeps its ledger and spending caps here.  Return value ignored; an
    exception is logged, never fatal.

    Example::

        @hookimpl
        def agent_request_done(session, model, usage, nested):
            if usage is not None:
                _tokens[model] = _tokens.get(model, 0) + usage.output_tokens
    """


@hookspec(firstresult=True)
def agent_price_usage(model: str, usage: Usage) -> float | None:
    """What ``usage`` (an :class:`agent.contract.providers.Usage`) of ``model`` cost in US dollars.

    Return a float, or None to leave it to another plugin; no answer at all means
    "unpriced".  The core prices each turn with it (the ``done`` event's ``cost_usd``), and
    the usage ledger prices each request; the builtin cost plugin answers from its price table.

    Example::

        @hookimpl
        def agent_price_usage(model, usage):
            if model.startswith("house-"):
                return usage.output_tokens * 2e-6
    """


@hookspec(firstresult=True)
def agent_session_spent(session: Session) -> tuple[float, bool] | None:
    """What ``session`` (with its subagents) has spent this run, for the status bar.

    Return ``(usd, unpriced)``: the US dollars booked so far, and whether some of its
    requests (or the session's current model) have no price, so the figure may be short.
    None when no plugin keeps a ledger (the status bar then shows no cost).

    Example::

        @hookimpl
        def agent_session_spent(session):
            return _spent.get(session.id, 0.0), False
    """


@hookspec
def agent_turn_files_changed(session: Session) -> list[str] | None:
    """The workspace files ``session``'s last turn changed, as a plugin watching the files
    knows them (created, modified, deleted or with a changed mode).

    Called by a front end after a turn's ``done`` event (the headless ``result`` event's
    ``files_changed``).  Return paths relative to the workspace (``[]`` when the turn changed
    nothing), or None to leave it to other plugins.  Every answer is merged; with no answer
    at all the core lists the paths the turn's finished calls declared they change.  The
    builtin ``undo`` plugin answers from the checkpoint it closed for the turn, which also
    covers files a shell command changed.

    Example::

        @hookimpl
        def agent_turn_files_changed(session):
            return sorted(_touched.pop(session.id, set()))
    """


@hookspec
def agent_persisted_keys(config: Config) -> list[str] | None:
    """Name the ``session.data`` keys this plugin keeps that are saved with the session.

    Return a list of keys (or None).  A saved session stores exactly the declared keys whose
    values are plain JSON, and resuming it (``-c``, ``-r``, ``/resume``) restores exactly
    those: every other key is run-time state (handles, flags of the current agent variant)
    that must not come back from an old session.  Declare only keys your plugin owns (its
    name, or a name it documents); the ``todos`` plugin declares ``todos``, the ``sessions``
    plugin ``forked_from``.  Called when a session is saved or loaded.

    Example::

        @hookimpl
        def agent_persisted_keys(config):
            return ["reviewed_files"]
    """


@hookspec(firstresult=True)
def agent_find_session(config: Config, continue_: bool, resume: str | None) -> str | None:
    """Resolve ``-c`` / ``-r ID`` to the id of a saved session, before anything starts.

    ``continue_`` asks for the newest saved session of ``config.workspace``; ``resume`` is an
    id or an id prefix (None without ``-r``).  Return the session's full id (the first
    non-None answer wins), or None to leave it to another plugin.  When no session matches
    (none saved for this directory, an unknown id, a prefix naming several), raise
    :class:`agent.loop.session.SessionLookupError` with the message to show: the CLI prints it
    and exits 2 before any request.  The CLI keeps the id in ``config.resume_session_id``
    and gives it to :func:`agent_open_session`.  The builtin ``sessions`` plugin answers
    from the state database; when no plugin answers, ``-c``/``-r`` exit 2 saying that no
    enabled plugin keeps saved sessions.

    Example::

        @hookimpl
        def agent_find_session(config, continue_, resume):
            if resume and resume in _archive:
                return resume
    """


@hookspec(firstresult=True)
def agent_open_session(runtime: Runtime, session_id: str | None) -> Session | None:
    """Build the main :class:`agent.loop.session.Session` a front end runs (``agent -p`` and
    the full-screen UI), with whatever records it.

    ``runtime`` is the :class:`agent.loop.session.Runtime` to run it with; ``session_id`` is the
    saved session to continue (what ``-c``/``-r`` resolved to) or None for a new one.
    Return ``Session(runtime, recorder=...)`` with its history loaded (first non-None answer
    wins), or None: the core then runs an unsaved ``Session(runtime)``.  Raise
    :class:`agent.loop.session.SessionLookupError` when ``session_id`` cannot be loaded.  When
    nothing can be saved (no usable state database), return a session without a recorder
    whose ``unsaved_reason`` says why, rather than raising.  The builtin ``sessions``
    plugin answers with a recorder committing every message to the state database.

    Example::

        @hookimpl
        def agent_open_session(runtime, session_id):
            return Session(runtime, recorder=JsonlRecorder(runtime.workspace / "log.jsonl"))
    """


@hookspec(firstresult=True)
def agent_close_session(session: Session) -> SessionClosed | None:
    """The front end is done with its main ``session`` (``agent -p`` finished, the UI quit).

    Save what is still unsaved, release what :func:`agent_open_session` opened, and return
    an :class:`agent.loop.session.SessionClosed`: ``notes`` the user must read (headless prints
    them on stderr after ``agent: ``) and ``unsaved``, how many messages are lost (a headless
    run that succeeded then exits 5, never a silent 0).  None: nothing to say.  Called once,
    after the last turn and its after-turn work.

    Example::

        @hookimpl
        def agent_close_session(session):
            _log.close()
            return SessionClosed()
    """


@hookspec(firstresult=True)
def agent_farewell(session: Session) -> str | None:
    """The text the full-screen UI prints in the terminal after it exits, for ``session``
    (how many messages were saved and how to resume them).  Return the text or None; with
    no answer the UI prints ``Good bye.``.

    Example::

        @hookimpl
        def agent_farewell(session):
            return f"Good bye. {len(session.messages)} messages logged to ~/agent.log"
    """


@hookspec
def agent_session_start(session: Session) -> None:
    """Set up a new :class:`agent.loop.session.Session` (the main one, or a subagent's).

    Called once, at the end of the session's constructor, before its first turn.  A plugin
    may adjust the session's attributes here (``thinking``, ``max_steps``, ``model``) and
    keep its own state in ``session.data``.  ``session.origin`` is ``"model"`` for the
    main session and the subagent kind (``explore``, ``review``, ``worker``) otherwise;
    ``session.parent`` is the session that started a subagent (None for the main one).
    Return value ignored; an exception is logged and reported, never fatal.

    Example::

        @hookimpl
        def agent_session_start(session):
            if session.origin == "model" and session.config.get("careful"):
                session.thinking, session.max_steps = "high", 30
    """


@hookspec
def agent_prompt_submitted(prompt: str, session: Session) -> str | Verdict | None:
    """Look at a prompt the person sent, before it joins the history and goes to the model.

    Called once per turn of the main session (never for a subagent's prompt), with the
    prompt's text.  Return ``Verdict.deny(reason)`` to refuse it: it is not added to the
    history, nothing is sent, and the turn ends at once with an ``error`` event (kind
    ``refused``, the reason as its message) and a ``done`` event (reason ``error``).  Return
    a string to add context: it is sent after the prompt, in the same message.  None (or any
    other verdict) lets it go as it is.  An exception is logged and ignored.

    Example::

        @hookimpl
        def agent_prompt_submitted(prompt, session):
            if "password" in prompt.lower():
                return Verdict.deny("do not paste credentials into the prompt")
    """


@hookspec
def agent_before_tool_call(call: ToolCall, effects: Effects, session: Session) -> None:
    """Observe a tool call the gate allowed, just before it runs (snapshots, audit logs).

    Called once per approved call, in the order the calls run, after every guard, rule and
    approval said yes and before ``Tool.run`` starts; a denied call never reaches this hook.
    ``call`` is the :class:`agent.contract.tools.ToolCall`, ``effects`` its
    :class:`agent.contract.tools.Effects`, ``session`` the running session.  This hook cannot stop
    or change the call (that is what ``agent_guard_tool_call`` is for); its return value is ignored
    and an exception is logged, never fatal.  It runs on the event loop: keep it quick (the ``undo``
    plugin copies only files that changed since its last snapshot).

    Example::

        @hookimpl
        def agent_before_tool_call(call, effects, session):
            for path in effects.changed_paths:
                backup(session.workspace / path)
    """


@hookspec
def agent_guard_tool_call(call: ToolCall, effects: Effects,
                          session: Session | None) -> Verdict | None:
    """Decide on a tool call before it runs: return a :class:`agent.contract.verdict.Verdict` or
    None.

    ``call`` is the :class:`agent.contract.tools.ToolCall`; ``effects`` what it would touch
    (:class:`agent.contract.tools.Effects`); ``session`` is None when the call is judged outside a
    session (``agent policy explain``).  Guards look at effects, not tool names, so they cover
    tools they have never heard of.  Any ``deny`` wins over everything, including ``--yolo``
    and user approval; ``ask`` forces a prompt.  The reason of a denial is given to the
    model, so say what to do instead.

    The contract fails closed: a guard that raises, answers anything but None or a valid
    ``Verdict`` (the string ``"deny"``, a dict, a Verdict with an unknown decision), or takes
    longer than ``guard_timeout`` seconds (default 2) denies the call, and the plugin is
    reported once.  Guards run on worker threads, so a slow one never blocks the screen; a
    guard must be a plain function: a plugin whose guard is ``async def`` is refused when it
    registers, and a guard plugin that cannot be registered (``async def``, an import error,
    a hook that does not fit this spec) keeps ``agent`` from starting (exit 2) until it is
    fixed or disabled by name.

    Example::

        @hookimpl
        def agent_guard_tool_call(call, effects, session):
            if any(p.endswith(".lock") for p in effects.writes):
                return Verdict.deny("lockfiles are generated; run the package manager")
    """


@hookspec
def agent_store_schema(config: Config) -> StoreSchema | None:
    """Declare the plugin's own tables in the state database, with their migrations.

    Return an :class:`agent.state.schema.StoreSchema` named after the plugin, or None.  Its
    ``migrations`` are ordered SQL scripts (or functions taking the ``sqlite3`` connection);
    the schema's version is how many there are, recorded per plugin in the ``plugin_schema``
    table.  Whenever the store is opened with :meth:`agent.state.store.Store.for_config` (the way
    a plugin opens it), every plugin's pending migrations run in one write transaction: all
    of them apply, or none.  Append migrations, never edit a shipped one.  A database
    holding a *newer* version of the plugin's tables than its migrations reach is refused
    with a clear error (nothing is touched); a disabled plugin's tables are left as they
    are.  Called once per run, before ``agent_configure``.

    Example::

        SCHEMA = StoreSchema("bookmarks", (
            "CREATE TABLE bookmarks (id INTEGER PRIMARY KEY, project TEXT, url TEXT);",
        ))

        @hookimpl
        def agent_store_schema(config):
            return SCHEMA

        def bookmarks(config):
            with Store.for_config(config) as store:
                return store.query("SELECT url FROM bookmarks")
    """


@hookspec
def agent_late_tools(config: Config) -> list[str] | None:
    """Name the tools this plugin registers only after startup, as glob patterns.

    Tools that appear later (an MCP server's, once it has connected in the background) are
    not in the tool list when ``--allow``/``--deny`` are checked for typos; a rule naming a
    tool that matches one of these patterns is accepted instead of refused.  Return a list
    of patterns (``fnmatch`` syntax) or None.

    Example::

        @hookimpl
        def agent_late_tools(config):
            return ["remote__*"]
    """


@hookspec
def agent_secret_matchers(config: Config) -> SecretMatcher | list[SecretMatcher] | None:
    """Say which workspace paths hold secrets, for the sandbox to hide from every command.

    Return a callable (or a list of them) taking a path's lower-cased segments relative to
    the workspace (``["config", ".env"]``) and returning why it holds secrets (a short
    reason) or None.  The sandbox walks the workspace with every plugin's matchers plus the
    core's own list (``.env`` files, ``*.pem``) and hides each match from ``bash``, git and
    every other process it starts (files read as unreadable, directories as empty).  A
    matcher that raises counts as "secret" (fail closed).  Called once per run.

    Example::

        @hookimpl
        def agent_secret_matchers(config):
            return lambda parts: "vault files" if parts[-1].endswith(".vault") else None
    """


@hookspec
def agent_plugin_rows(config_dir: Path) -> list[PluginStatus] | None:
    """List things a plugin installed that act as plugins, for ``agent plugins list`` and
    ``/plugins`` (the registry's data-only manifests, for instance).

    ``config_dir`` is the user's config directory (a :class:`pathlib.Path`).  Return a list of
    :class:`agent.boot.plugins.PluginStatus` (state ``enabled`` or ``failed`` with its ``error``),
    read fresh on each call so a file that turned invalid during a session shows at once.  A
    row with the name of a loaded plugin replaces that plugin's row.

    Example::

        @hookimpl
        def agent_plugin_rows(config_dir):
            return [PluginStatus("house-rules (installed)", "enabled", module="rules file")]
    """


@hookspec
def agent_prompt_fragments(session: Session) -> Fragment | list[Fragment] | None:
    """Contribute system prompt fragments; called before every model request.

    Return a :class:`agent.contract.prompt.Fragment`, a list of them, or None.  The core sorts all
    fragments by ``(order, key)`` so the prompt is byte-stable; ``session.offered_tools`` tells
    which tools this step offers (describe only those).

    Example::

        @hookimpl
        def agent_prompt_fragments(session):
            return Fragment("house-style", "Prefer small commits.", order=50)
    """


@hookspec
def agent_register_commands(register: Callable[[SlashCommand], None],
                            config: Config) -> None:
    """Contribute slash commands: ``register(SlashCommand(...))``.

    Commands feed the ``/`` menu, ``/help`` and key bindings from one registry.  Return value
    ignored.

    Example::

        @hookimpl
        def agent_register_commands(register, config):
            register(SlashCommand("hello", "say hello", lambda app, args: app.info("hello")))
    """


@hookspec
def agent_register_mentions(register: Callable[[MentionSource], None],
                            config: Config) -> None:
    """Contribute things a prompt can mention: ``register(MentionSource(...))``.

    A :class:`agent.contract.mentions.MentionSource` lists entries for the input editor's ``@``
    picker (shown next to workspace files) and resolves a mentioned ``@token`` into an
    :class:`agent.contract.mentions.Attachment` (text and images) that is sent with the prompt, in
    the UI and headless.  The MCP plugin registers each server's resources as
    ``@server:uri``.  Return value ignored.

    Example::

        @hookimpl
        def agent_register_mentions(register, config):
            async def resolve(token):
                return Attachment(TICKETS[token]) if token in TICKETS else None
            register(MentionSource("tickets", lambda: [MentionEntry(t) for t in TICKETS],
                                   resolve))
    """


@hookspec
def agent_register_cli_commands(register: CliRegistrar) -> None:
    """Contribute shell subcommands: ``register(name, handler, summary, usage=())``.

    ``agent NAME ARGS...`` calls ``handler(argv, boot)`` with the remaining arguments and the
    loaded :class:`agent.boot.runtime.Boot` (config, hooks); it returns the exit code.  Core
    subcommands (``plugins``) cannot be replaced.  ``agent --help`` lists every subcommand
    from these registrations: each ``usage`` pair ``(arguments, what they do)`` is a line,
    and without ``usage`` the ``summary`` is.  Return value ignored.

    Example::

        @hookimpl
        def agent_register_cli_commands(register):
            register("trash", trash_command, "list and restore deleted files",
                     usage=[("[list]", "files deleted in this workspace"),
                            ("restore ID", "put one back")])
    """


@hookspec
def agent_register_keys(keymap: Keymap) -> None:
    """Contribute default key bindings: ``keymap.bind("ctrl r", "toggle-reasoning")``.

    Bindings map keys to named commands; user overrides from the config win.  Return value
    ignored.

    Example::

        @hookimpl
        def agent_register_keys(keymap):
            keymap.bind("f2", "tools", "show the tools panel")
    """


@hookspec(firstresult=True)
def agent_render_block(block: Block, width: int, theme: Theme) -> urwid.Widget | None:
    """Render a transcript :class:`agent.contract.blocks.Block` into an urwid widget (first result
    wins).

    Return None to let another renderer (or the core's plain fallback) handle the block.  Must
    be fast: streaming blocks are re-rendered at up to ~30 frames per second.

    Example::

        @hookimpl
        def agent_render_block(block, width, theme):
            if block.kind == "shout":
                return urwid.Text(block.text.upper())
    """


@hookspec
def agent_live_panels(session: Session, state: LiveState) -> Panel | list[Panel] | None:
    """Live panels this plugin shows above the prompt right now
    (:class:`agent.contract.panels.Panel`).

    Called whenever the status refreshes, after each tool call and about ten times a second
    while a turn runs (``state`` is an :class:`agent.contract.panels.LiveState`: whether a turn
    runs, when it started, the spinner's frame), so it must be cheap and must not block.  Return
    None (or an empty list) to show nothing; a panel disappears when it is no longer returned.

    Example::

        @hookimpl
        def agent_live_panels(session, state):
            jobs = session.data.get("my_jobs") or []
            if state.busy and jobs:
                return Panel("my_jobs", [("dim", f"{len(jobs)} jobs running")])
    """


@hookspec
def agent_header_lines(config: Config,
                       session: Session | None) -> HeaderLine | list[HeaderLine] | None:
    """Lines for the full-screen UI's startup header (:class:`agent.contract.panels.HeaderLine`).

    Called when the header is drawn (at startup, again when the provider changes), only by a
    front end that shows one, so headless runs and subagents never pay for the work.
    ``session`` is None while no provider is set up.  The builtin plugins use orders 40
    (``instructions``), 50 (``skills``), 70 (``memory``) and 80 (``mcp``).

    Example::

        @hookimpl
        def agent_header_lines(config, session):
            return HeaderLine(f"bookmarks: {count(config)}", order=75)
    """


@hookspec
def agent_status(session: Session) -> StatusInfo | None:
    """Facts for the status bar, the per-turn line and ``/cost``
    (:class:`agent.contract.panels.StatusInfo`):
    the agent variant in use, the estimated context of the last request and where compaction
    starts.  Each field is taken from the first plugin (by name) that knows it; None: this
    plugin knows nothing.

    Example::

        @hookimpl
        def agent_status(session):
            return StatusInfo(agent=session.data.get("my_variant"))
    """


@hookspec
def agent_tool_result(call: ToolCall, result: ToolResult,
                      session: Session) -> ToolResult | None:
    """Post-process a tool's result before the model sees it (redaction, annotation).

    ``result`` is an :class:`agent.contract.tools.ToolResult`.  Return a replacement or None;
    applied in plugin-name order.  The core caps every result at 30,000 characters afterwards.

    Example::

        @hookimpl
        def agent_tool_result(call, result, session):
            return replace(result, output=result.output.replace(TOKEN, "[redacted]"))
    """


@hookspec
def agent_after_turn(session: Session, done: DoneEvent) -> Awaitable[None] | None:
    """Start work that follows a turn (formatting the files it changed, a notification).

    Called once per turn that ended with a ``done`` event (``done.reason`` says how), for
    every session (``session.origin`` tells the main one, ``"model"``, from a subagent's),
    right after ``agent_event`` saw that event.  Return an awaitable (a coroutine) doing the
    work, or None; the hook itself must return at once.  The session runs each awaitable as
    a supervised task on the event loop, so the screen keeps answering while it works; an
    exception in it is logged and reported, never fatal.  Blocking calls (a subprocess
    waited on synchronously, ``time.sleep``) would still freeze the screen: await them
    (``asyncio.create_subprocess_exec``, ``Sandbox.spawn``) or use ``asyncio.to_thread``.

    The session's next turn waits for this work before it starts (so the model never races a
    formatter rewriting the files it reads), and ``agent -p`` and the UI wait for it before
    they exit, each for at most ``after_turn_timeout`` seconds (default 120); what is still
    running then is cancelled (``asyncio.CancelledError`` inside the awaitable: stop any
    process you started) and reported.

    Example::

        @hookimpl
        def agent_after_turn(session, done):
            if session.origin == "model" and done.reason == "end":
                return notify_desktop(f"agent finished in {done.steps} steps")
    """


@hookspec
def agent_event(event: Event, session: Session) -> None:
    """Observe coarse events: turn start, each finished tool call, denials, compaction,
    errors and turn end (:mod:`agent.contract.events`).  Per-token deltas never pass through here.

    Return value ignored; an exception is logged and does not stop other plugins.

    Example::

        @hookimpl
        def agent_event(event, session):
            if event.type == "done":
                sys.stderr.write("\\a")
    """
