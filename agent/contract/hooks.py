"""The typed facade over the plugin hooks: the only place the core calls ``pm.hook``.

Collect-all hooks are called one implementation at a time, in plugin-name order, so results
are deterministic, the core knows which plugin contributed what, and one plugin raising is
isolated (logged and reported) instead of breaking the others.  Guards are the exception to
"isolated": a guard that raises, hangs or answers garbage denies the call
(:mod:`agent.loop.guards`).
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Awaitable, Callable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import pluggy

if TYPE_CHECKING:
    import urwid

    from agent.boot.cli_help import CliCommand
    from agent.boot.config import Config
    from agent.boot.plugins import PluginStatus
    from agent.contract.blocks import Block
    from agent.contract.commands import CommandRegistry, SlashCommand
    from agent.contract.events import DoneEvent, Event
    from agent.contract.hookspecs import CliHandler, SecretMatcher
    from agent.contract.mentions import MentionSource
    from agent.contract.options import OptionRegistry
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
    from agent.loop.guards import GuardRunner
    from agent.loop.session import Runtime, Session, SessionClosed
    from agent.state.schema import StoreSchema
    from agent.ui.context import CommandContext
    from agent.ui.keymap import Keymap
    from agent.ui.widgets.blocks import Theme

# The types above are needed at run time only by the hooks that use them, and imported there:
# ``--help`` and a headless turn call few hooks and should not pay for defining them all.

log = logging.getLogger("agent.hooks")


class Hooks:
    """Typed calls into the plugins registered in ``pm``."""

    def __init__(self, pm: pluggy.PluginManager) -> None:
        self.pm = pm
        #: problems worth showing the user (a plugin raising in a hook, a name clash)
        self.problems: list[str] = []
        self._guards: GuardRunner | None = None

    @property
    def guards(self) -> GuardRunner:
        """The runner of the guard hooks (made on first use: most runs check no call before
        their first request)."""
        if self._guards is None:
            from agent.loop.guards import GuardRunner

            self._guards = GuardRunner(self.problems.append)
        return self._guards

    # ---- plumbing ---------------------------------------------------------------------------

    def _impls(self, hook_name: str) -> Iterator[tuple[str, Callable[..., Any], tuple[str, ...]]]:
        caller = getattr(self.pm.hook, hook_name)
        impls = [i for i in caller.get_hookimpls() if not i.hookwrapper and not i.wrapper]
        for impl in sorted(impls, key=lambda i: i.plugin_name):
            yield impl.plugin_name, impl.function, tuple(impl.argnames)

    def _each(self, hook_name: str, **kwargs: Any) -> Iterator[tuple[str, Any]]:
        """Call every implementation separately; yield (plugin, result); isolate errors."""
        for plugin, fn, argnames in self._impls(hook_name):
            try:
                result = fn(**{k: kwargs[k] for k in argnames})
            except Exception as exc:
                self._problem(plugin, hook_name, exc)
                continue
            yield plugin, result

    def _problem(self, plugin: str, hook_name: str, exc: BaseException) -> None:
        msg = f"plugin {plugin}: {hook_name} failed: {type(exc).__name__}: {exc}"
        log.warning(msg, exc_info=exc)
        self.problems.append(msg)

    # ---- configuration ----------------------------------------------------------------------

    def addoption(self, options: OptionRegistry) -> None:
        """Collect declared options (historic: plugins registered later are called too)."""
        for plugin, fn, _ in self._impls("agent_addoption"):
            proxy = _PluginOptions(options, plugin)
            try:
                fn(options=proxy)
            except Exception as exc:
                self._problem(plugin, "agent_addoption", exc)

    def configure(self, config: Config) -> None:
        """Collect the plugins' store schemas into ``config.store_schemas`` (so a plugin may
        open the store from its own ``agent_configure``), then run ``agent_configure``.
        ``ConfigError`` propagates (it stops startup)."""
        from agent.boot.config import ConfigError

        config.store_schemas = self.store_schemas(config)
        for plugin, fn, argnames in self._impls("agent_configure"):
            try:
                fn(**{k: {"config": config}[k] for k in argnames})
            except ConfigError:
                raise
            except Exception as exc:
                self._problem(plugin, "agent_configure", exc)

    def unconfigure(self, config: Config) -> None:
        for plugin, fn, argnames in reversed(list(self._impls("agent_unconfigure"))):
            try:
                fn(**{k: {"config": config}[k] for k in argnames})
            except Exception as exc:
                self._problem(plugin, "agent_unconfigure", exc)

    # ---- contributions ----------------------------------------------------------------------

    def tools(self, config: Config) -> dict[str, Tool]:
        """Every registered tool by name; the tool's ``plugin`` attribute names its source."""
        tools: dict[str, Tool] = {}
        for plugin, fn, argnames in self._impls("agent_register_tools"):
            def register(tool: Tool, _plugin: str = plugin) -> None:
                if tool.name in tools:
                    self.problems.append(
                        f"plugin {_plugin}: tool {tool.name} already registered by "
                        f"{getattr(tools[tool.name], 'plugin', '?')}; ignored")
                    return
                tool.plugin = _plugin
                tools[tool.name] = tool
            try:
                fn(**{k: {"register": register, "config": config}[k] for k in argnames})
            except Exception as exc:
                self._problem(plugin, "agent_register_tools", exc)
        return tools

    def providers(self, config: Config) -> dict[str, ProviderSpec]:
        specs: dict[str, ProviderSpec] = {}
        for plugin, fn, argnames in self._impls("agent_register_providers"):
            def register(spec: ProviderSpec) -> None:
                specs.setdefault(spec.name, spec)
            try:
                fn(**{k: {"register": register, "config": config}[k] for k in argnames})
            except Exception as exc:
                self._problem(plugin, "agent_register_providers", exc)
        return specs

    def select_provider(self, config: Config, providers: dict[str, ProviderSpec],
                        settings: ProviderSettings) -> Provider | None:
        """The provider for this session (wrappers such as ``fallback`` included)."""
        provider: Provider | None = self.pm.hook.agent_select_provider(
            config=config, providers=providers, settings=settings)
        return provider

    async def setup_provider(self, ui: CommandContext, config: Config,
                             providers: dict[str, ProviderSpec], problem: str = ""
                             ) -> ProviderChoice | Literal[False] | None:
        """Run the first plugin's provider setup; its :class:`ProviderChoice`, None when the
        user cancelled it, False when no plugin offers a setup (or it answered with something
        else, which is reported).  A setup that raises is reported and the error propagates
        (the front end says the setup failed)."""
        from agent.contract.providers import ProviderChoice

        for plugin, fn, argnames in self._impls("agent_setup_provider"):
            kwargs = {"ui": ui, "config": config, "providers": providers, "problem": problem}
            try:
                work = fn(**{k: kwargs[k] for k in argnames})
                if work is None:
                    continue
                result = await work if inspect.isawaitable(work) else work
            except Exception as exc:
                self._problem(plugin, "agent_setup_provider", exc)
                raise
            if result is None or isinstance(result, ProviderChoice):
                return result
            self.problems.append(f"plugin {plugin}: agent_setup_provider gave {result!r}, "
                                 f"not a ProviderChoice; ignored")
            return False
        return False

    def commands(self, config: Config) -> CommandRegistry:
        from agent.contract.commands import CommandRegistry

        registry = CommandRegistry()
        for plugin, fn, argnames in self._impls("agent_register_commands"):
            def register(cmd: SlashCommand, _plugin: str = plugin) -> None:
                cmd.plugin = cmd.plugin or _plugin
                taken = registry.get(cmd.name)
                if taken is not None:  # first plugin (by name) keeps it, as for tools
                    self.problems.append(f"plugin {_plugin}: /{cmd.name} already registered "
                                         f"by {taken.plugin}; ignored")
                    return
                registry.register(cmd)
            try:
                fn(**{k: {"register": register, "config": config}[k] for k in argnames})
            except Exception as exc:
                self._problem(plugin, "agent_register_commands", exc)
        return registry

    def store_schemas(self, config: Config) -> list[StoreSchema]:
        """Every plugin's :class:`agent.state.schema.StoreSchema`, in plugin-name order.  A
        schema must carry its plugin's own name (no plugin migrates another's tables)."""
        from agent.state.schema import StoreSchema

        found: list[StoreSchema] = []
        for plugin, result in self._each("agent_store_schema", config=config):
            if result is None:
                continue
            if not isinstance(result, StoreSchema) or result.name != plugin:
                self.problems.append(
                    f"plugin {plugin}: agent_store_schema must return a StoreSchema named "
                    f"{plugin!r}, not {result!r}; its tables are not migrated")
                continue
            found.append(result)
        return found

    def cli_commands(self) -> dict[str, CliCommand]:
        """Plugin subcommands by name (the first plugin by name keeps a name)."""
        from agent.boot.cli_help import CliCommand, normalise_usage

        found: dict[str, CliCommand] = {}
        for plugin, fn, _argnames in self._impls("agent_register_cli_commands"):
            def register(name: str, handler: CliHandler, summary: str = "",
                         usage: Sequence[tuple[str, str] | str] = (), _plugin: str = plugin
                         ) -> None:
                found.setdefault(name, CliCommand(name, handler, summary,
                                                  normalise_usage(usage), _plugin))
            try:
                fn(register=register)
            except Exception as exc:
                self._problem(plugin, "agent_register_cli_commands", exc)
        return found

    def register_keys(self, keymap: Keymap) -> None:
        for _ in self._each("agent_register_keys", keymap=keymap):
            pass

    # ---- per step / per call ----------------------------------------------------------------

    def offered_tools(self, tools: list[Tool], session: Session) -> list[Tool]:
        """Each plugin narrows what the previous ones left (errors isolated)."""
        for plugin, fn, argnames in self._impls("agent_offered_tools"):
            kwargs = {"tools": list(tools), "session": session}
            try:
                result = fn(**{k: kwargs[k] for k in argnames})
            except Exception as exc:
                self._problem(plugin, "agent_offered_tools", exc)
                continue
            if result is not None:
                tools = list(result)
        return tools

    def prompt_fragments(self, session: Session) -> list[Fragment]:
        from agent.contract.prompt import Fragment

        out: list[Fragment] = []
        for _plugin, result in self._each("agent_prompt_fragments", session=session):
            if result is None:
                continue
            items = [result] if isinstance(result, Fragment) else list(result)
            out.extend(f for f in items if isinstance(f, Fragment))
        return out

    async def prepare_request(self, request: ProviderRequest, session: Session) -> ProviderRequest:
        """Each plugin's adjustment in turn; an awaitable result is awaited (a plugin whose
        hook or awaitable raises is reported and skipped).  :class:`BudgetExceeded` is the
        exception: it propagates, so a spending cap can stop the request."""
        from agent.contract.providers import BudgetExceeded

        for plugin, fn, argnames in self._impls("agent_prepare_request"):
            kwargs = {"request": request, "session": session}
            try:
                result = fn(**{k: kwargs[k] for k in argnames})
                if inspect.isawaitable(result):
                    result = await result
            except BudgetExceeded:
                raise
            except Exception as exc:
                self._problem(plugin, "agent_prepare_request", exc)
                continue
            if result is not None:
                request = result
        return request

    def request_done(self, session: Session, model: str, usage: Usage | None, *,
                     nested: bool = False) -> None:
        """Book a finished (or, with ``usage`` None, abandoned) model request of ``session``
        in every ledger (errors isolated)."""
        for _ in self._each("agent_request_done", session=session, model=model, usage=usage,
                            nested=nested):
            pass

    def price_usage(self, model: str, usage: Usage) -> float | None:
        """The first plugin's price of ``usage`` with ``model`` in US dollars, or None when
        no plugin can price it."""
        for _plugin, result in self._each("agent_price_usage", model=model, usage=usage):
            if isinstance(result, (int, float)) and not isinstance(result, bool):
                return float(result)
        return None

    def session_spent(self, session: Session) -> tuple[float, bool] | None:
        """``(usd, unpriced)`` this run from the first plugin keeping a ledger, or None."""
        for _plugin, result in self._each("agent_session_spent", session=session):
            if result is not None:
                usd, unpriced = result
                return float(usd), bool(unpriced)
        return None

    def turn_files_changed(self, session: Session) -> list[str] | None:
        """The files the session's last turn changed, merged from every plugin answering
        ``agent_turn_files_changed`` (sorted), or None when none answered."""
        found: set[str] | None = None
        for plugin, result in self._each("agent_turn_files_changed", session=session):
            if result is None:
                continue
            if not isinstance(result, (list, tuple, set, frozenset)):
                self.problems.append(f"plugin {plugin}: agent_turn_files_changed returned "
                                     f"{type(result).__name__}, not a list; ignored")
                continue
            found = (found or set()) | {str(p) for p in result}
        return None if found is None else sorted(found)

    def persisted_keys(self, config: Config) -> frozenset[str]:
        """Every ``session.data`` key a plugin declared as saved with the session (a
        non-string key is ignored)."""
        keys: set[str] = set()
        for _plugin, result in self._each("agent_persisted_keys", config=config):
            keys.update(k for k in result or () if isinstance(k, str))
        return frozenset(keys)

    def find_session(self, config: Config, *, continue_: bool = False,
                     resume: str | None = None) -> str | None:
        """The saved session's id ``-c``/``-r`` ask for, or None when no plugin keeps saved
        sessions.  :class:`agent.loop.session.SessionLookupError` (none matches) propagates."""
        from agent.loop.session import SessionLookupError

        for plugin, fn, argnames in self._impls("agent_find_session"):
            kwargs = {"config": config, "continue_": continue_, "resume": resume}
            try:
                result = fn(**{k: kwargs[k] for k in argnames})
            except SessionLookupError:
                raise
            except Exception as exc:
                self._problem(plugin, "agent_find_session", exc)
                raise SessionLookupError(f"cannot look up saved sessions: plugin {plugin} "
                                         f"failed: {type(exc).__name__}: {exc}") from None
            if isinstance(result, str) and result:
                return result
        return None

    def open_session(self, runtime: Runtime, session_id: str | None = None) -> Session:
        """The main session a front end runs: the first plugin's (recorded, resumed from
        ``session_id``), else an unsaved one.  :class:`agent.loop.session.SessionLookupError`
        propagates; so does any failure while a saved session is asked for, as a
        SessionLookupError (a resume must not silently start a new session)."""
        from agent.loop.session import Session, SessionLookupError

        for plugin, fn, argnames in self._impls("agent_open_session"):
            kwargs = {"runtime": runtime, "session_id": session_id}
            try:
                result = fn(**{k: kwargs[k] for k in argnames})
            except SessionLookupError:
                raise
            except Exception as exc:
                self._problem(plugin, "agent_open_session", exc)
                if session_id:
                    raise SessionLookupError(f"cannot resume {session_id}: plugin {plugin} "
                                             f"failed: {type(exc).__name__}: {exc}") from None
                continue
            if isinstance(result, Session):
                return result
        if session_id:
            raise SessionLookupError(f"cannot resume {session_id}: no enabled plugin keeps "
                                     f"saved sessions")
        return Session(runtime)

    def close_session(self, session: Session) -> SessionClosed:
        """What the plugin that saved ``session`` says as the front end lets it go (an empty
        :class:`agent.loop.session.SessionClosed` when none answers; errors isolated)."""
        from agent.loop.session import SessionClosed

        for _plugin, result in self._each("agent_close_session", session=session):
            if isinstance(result, SessionClosed):
                return result
        return SessionClosed()

    def farewell(self, session: Session) -> str:
        """The text the UI prints after it exits (``Good bye.`` when no plugin answers)."""
        for _plugin, result in self._each("agent_farewell", session=session):
            if isinstance(result, str) and result:
                return result
        return "Good bye."

    def session_start(self, session: Session) -> None:
        """Let plugins set up a new session (errors isolated)."""
        for _ in self._each("agent_session_start", session=session):
            pass

    def prompt_submitted(self, prompt: str, session: Session) -> tuple[str | None, str]:
        """(why the prompt is refused, or None; the context plugins add to it), from
        ``agent_prompt_submitted`` in plugin-name order (errors isolated)."""
        from agent.contract.verdict import Verdict

        context: list[str] = []
        for plugin, result in self._each("agent_prompt_submitted", prompt=prompt,
                                         session=session):
            if isinstance(result, Verdict) and result.decision == "deny":
                return result.reason or f"refused by the {plugin} plugin", ""
            if isinstance(result, str) and result.strip():
                context.append(result.strip())
        return None, "\n\n".join(context)

    def before_tool_call(self, call: ToolCall, effects: Effects, session: Session) -> None:
        """Tell observers an approved call is about to run (errors isolated)."""
        for _ in self._each("agent_before_tool_call", call=call, effects=effects,
                            session=session):
            pass

    def guard(self, call: ToolCall, effects: Effects, session: Session | None, *,
              timeout: float | None = None) -> list[Verdict]:
        """Every guard's verdict, for callers without an event loop (see :meth:`guard_async`).
        ``timeout`` defaults to :data:`agent.loop.guards.DEFAULT_TIMEOUT`."""
        from agent.boot.lazy_plugins import import_now
        from agent.loop.guards import DEFAULT_TIMEOUT

        import_now(self.pm, "agent_guard_tool_call")
        return self.guards.run_sync(self._impls("agent_guard_tool_call"),
                                    {"call": call, "effects": effects, "session": session},
                                    DEFAULT_TIMEOUT if timeout is None else timeout)

    async def guard_async(self, call: ToolCall, effects: Effects, session: Session | None, *,
                          timeout: float | None = None) -> list[Verdict]:
        """Every guard's verdict, each guard on its own thread, awaited for at most
        ``timeout`` seconds (:data:`agent.loop.guards.DEFAULT_TIMEOUT` by default).  A guard
        that raises, hangs or answers anything but None or a valid Verdict denies the call
        (fail closed; see :mod:`agent.loop.guards`)."""
        from agent.boot.lazy_plugins import import_now
        from agent.loop.guards import DEFAULT_TIMEOUT

        import_now(self.pm, "agent_guard_tool_call")
        return await self.guards.run(self._impls("agent_guard_tool_call"),
                                     {"call": call, "effects": effects, "session": session},
                                     DEFAULT_TIMEOUT if timeout is None else timeout)

    def mentions(self, config: Config) -> list[MentionSource]:
        """Every plugin's mention sources (``@`` picker entries, prompt attachments), in
        plugin-name order; a failing implementation is isolated."""
        from agent.contract.mentions import MentionSource

        found: list[MentionSource] = []
        for plugin, fn, argnames in self._impls("agent_register_mentions"):
            def register(source: MentionSource) -> None:
                if isinstance(source, MentionSource):
                    found.append(source)
            try:
                fn(**{k: {"register": register, "config": config}[k] for k in argnames})
            except Exception as exc:
                self._problem(plugin, "agent_register_mentions", exc)
        return found

    def late_tools(self, config: Config) -> list[str]:
        """Every plugin's patterns of tools registered after startup (``agent_late_tools``)."""
        found: list[str] = []
        for _, result in self._each("agent_late_tools", config=config):
            if isinstance(result, (list, tuple)):
                found.extend(p for p in result if isinstance(p, str) and p)
        return found

    def secret_matchers(self, config: Config) -> list[SecretMatcher]:
        """Every plugin's secret-path matchers, in plugin-name order (errors isolated)."""
        found: list[SecretMatcher] = []
        for _, result in self._each("agent_secret_matchers", config=config):
            items = result if isinstance(result, (list, tuple)) else [result]
            found.extend(m for m in items if callable(m))
        return found

    def plugin_rows(self, config_dir: Path, status: dict[str, PluginStatus]
                    ) -> dict[str, PluginStatus]:
        """``status`` (the loaded plugins' rows) with every plugin's extra rows merged in, by
        name; a failing implementation is isolated."""
        rows = dict(status)
        for _, result in self._each("agent_plugin_rows", config_dir=config_dir):
            for row in result if isinstance(result, (list, tuple)) else []:
                name = getattr(row, "name", None)
                if isinstance(name, str) and getattr(row, "state", None):
                    rows[name] = row
        return rows

    def tool_result(self, call: ToolCall, result: ToolResult, session: Session) -> ToolResult:
        """Each plugin sees the previous plugin's replacement (errors isolated)."""
        from agent.contract.tools import ToolResult

        for plugin, fn, argnames in self._impls("agent_tool_result"):
            kwargs = {"call": call, "result": result, "session": session}
            try:
                out = fn(**{k: kwargs[k] for k in argnames})
            except Exception as exc:
                self._problem(plugin, "agent_tool_result", exc)
                continue
            if isinstance(out, ToolResult):
                result = out
        return result

    def after_turn(self, done: DoneEvent, session: Session
                   ) -> list[tuple[str, Awaitable[None]]]:
        """Every plugin's after-turn work, as ``(plugin, awaitable)`` in plugin-name order
        (a hook that raises or returns something not awaitable is reported and skipped)."""
        work: list[tuple[str, Awaitable[None]]] = []
        for plugin, result in self._each("agent_after_turn", session=session, done=done):
            if result is None:
                continue
            if not inspect.isawaitable(result):
                self.problems.append(f"plugin {plugin}: agent_after_turn returned "
                                     f"{type(result).__name__}, not an awaitable; ignored")
                continue
            work.append((plugin, result))
        return work

    def report(self, plugin: str, what: str, exc: BaseException) -> None:
        """Log and keep a plugin's failure outside a hook call (its after-turn work, say)."""
        self._problem(plugin, what, exc)

    def event(self, event: Event, session: Session) -> None:
        for _ in self._each("agent_event", event=event, session=session):
            pass

    def live_panels(self, session: Session, state: LiveState) -> list[Panel]:
        """Every plugin's live panels, in ``(order, key)`` order (a later duplicate key is
        dropped)."""
        from agent.contract.panels import Panel

        found: dict[str, Panel] = {}
        for plugin, result in self._each("agent_live_panels", session=session, state=state):
            if result is None:
                continue
            for panel in [result] if isinstance(result, Panel) else list(result):
                if not isinstance(panel, Panel):
                    self.problems.append(f"plugin {plugin}: agent_live_panels returned "
                                         f"{panel!r}, not a Panel")
                    continue
                found.setdefault(panel.key, panel)
        return sorted(found.values(), key=lambda p: (p.order, p.key))

    def header_lines(self, config: Config, session: Session | None) -> list[HeaderLine]:
        """Every plugin's startup header lines, in plugin-name order (the UI sorts by order)."""
        from agent.contract.panels import HeaderLine

        out: list[HeaderLine] = []
        for plugin, result in self._each("agent_header_lines", config=config, session=session):
            if result is None:
                continue
            for line in [result] if isinstance(result, HeaderLine) else list(result):
                if isinstance(line, HeaderLine):
                    out.append(line)
                else:
                    self.problems.append(f"plugin {plugin}: agent_header_lines returned "
                                         f"{line!r}, not a HeaderLine")
        return out

    def status(self, session: Session) -> StatusInfo:
        """The status facts the plugins know, field by field from the first that knows it."""
        from agent.contract.panels import StatusInfo

        merged: dict[str, Any] = {}
        for _plugin, result in self._each("agent_status", session=session):
            if isinstance(result, StatusInfo):
                for name, value in vars(result).items():
                    if value is not None:
                        merged.setdefault(name, value)
        return StatusInfo(**merged)

    def render_block(self, block: Block, width: int, theme: Theme) -> urwid.Widget | None:
        widget: urwid.Widget | None = self.pm.hook.agent_render_block(block=block, width=width,
                                                                     theme=theme)
        return widget


class _PluginOptions:
    """What one plugin's ``agent_addoption`` is given: ``add`` registers the option as that
    plugin's."""

    __slots__ = ("_options", "_plugin")

    def __init__(self, options: OptionRegistry, plugin: str) -> None:
        self._options = options
        self._plugin = plugin

    def add(self, option: Any) -> None:
        self._options.add(_tag(option, self._plugin))


def _tag(option: Any, plugin: str) -> Any:
    from dataclasses import replace

    return replace(option, plugin=plugin) if option.plugin == "core" else option
