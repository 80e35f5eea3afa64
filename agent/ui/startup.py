"""Building the session the UI runs, and the startup header.

The runtime is built like headless mode builds it (providers via hooks, settings, tools) but
with the UI's approver.  With no usable provider (no key, unknown name) the app still starts:
the header says so and the provider setup opens.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from agent import __version__
from agent.contract.blocks import Block

if TYPE_CHECKING:
    from agent.contract.providers import ProviderChoice
    from agent.ui.app import App


class NoProvider(Exception):
    """No provider can be built from the config (the message says why)."""


def build_runtime(app: App) -> Any:
    """The runtime for the configured provider; raises :class:`NoProvider`."""
    from agent.boot.runtime import StartupError, provider_settings
    from agent.loop.session import Runtime

    config, hooks = app.config, app.hooks
    specs = hooks.providers(config)
    try:
        settings = provider_settings(config, specs)
    except StartupError as exc:
        raise NoProvider(str(exc)) from None
    provider = hooks.select_provider(config, specs, settings)
    if provider is None:
        raise NoProvider(f'no plugin could build the provider "{settings.provider}"')
    return Runtime(config=config, hooks=hooks, tools=hooks.tools(config), provider=provider,
                   approver=app.approve, model=settings.model,
                   asker=app.ctx.ask_raw,  # the ask tool's question channel
                   provider_name=settings.provider, provider_spec=specs.get(settings.provider),
                   ui=app.ctx)  # tools and plugins reach the UI through session.runtime.ui


def open_session(app: App, runtime: Any) -> Any:
    """The plugins' session (recorded, resumed with -c/-r: ``agent_open_session``), or an
    unsaved one when no plugin saves sessions."""
    return app.hooks.open_session(runtime, app.config.resume_session_id)


def attach(app: App, runtime: Any) -> None:
    """Use ``runtime`` from now on: a new session, or the same one with a new provider."""
    app.runtime = runtime
    if app.session is None:
        app.session = open_session(app, runtime)
        _load_history(app)
        read_only = (getattr(app.session.recorder, "read_only", None)
                     or getattr(app.session, "unsaved_reason", None))
        if read_only:  # the banner is up from the first frame, not after the first prompt
            from agent.ui.turns import UNSAVED_PANEL

            app.set_live(UNSAVED_PANEL, ("error", f"NOT SAVED: {read_only}"))
        take = getattr(app.session.recorder, "take_events", None)
        for event in take() if take is not None else ():
            app.view.on_event(event)  # a fork at load is told from the first frame
        if app.session.usage.input_tokens:  # a resumed session: what it has cost so far
            app.earlier_cost = app.session.hooks.price_usage(app.session.model,
                                                             app.session.usage)
            app.earlier_unpriced = app.earlier_cost is None
    else:
        app.session.runtime = runtime
        app.session.model = runtime.model
    app.update_status()


def _load_history(app: App) -> None:
    recorder = getattr(app.session, "recorder", None)
    if recorder is None:
        return
    store = getattr(recorder, "store", None)  # the core's state database, prompt history in it
    if store is None:
        return
    cwd = str(app.workspace)
    try:
        app.editor.history.items = store.history(cwd)
    except Exception:  # a broken store costs the history, not the app
        app.editor.history.items = []
    app.editor.history.index = len(app.editor.history.items)

    def save(text: str) -> None:
        try:
            store.add_history(cwd, text)  # plain prompts only; newest 200 kept
        except Exception:
            pass

    app.editor.history._save = save


YOLO_LINE = "approvals: OFF (--yolo), but deny rules and the guard still apply"
DEFAULT_APPROVALS = "approvals: asks before writes, edits, commands, network and MCP tools"


def header(app: App, problem: str = "") -> str:
    """The startup header: the UI's own lines and the plugins' (``agent_header_lines``),
    in order."""
    config = app.config
    lines: list[tuple[int, str]] = []
    session, runtime = app.session, app.runtime
    if runtime is None:
        lines.append((0, f"agent {__version__}  no provider configured"))
        if problem:
            lines.append((1, problem))
    else:
        provider = runtime.provider_name or config.get("provider") or ""
        lines.append((0, f"agent {__version__}  {provider}/{runtime.model}  "
                         f"session {session.id[:8]}"))
        lines.append((10, f"agent: {app.agent_name()}  thinking: {session.thinking}"))
    home = os.path.expanduser("~")
    cwd = str(app.workspace)
    lines.append((20, "cwd: " + ("~" + cwd[len(home):] if cwd.startswith(home + os.sep)
                                 else cwd)))
    if session is not None and session.messages:
        lines.append((30, f"resumed {len(session.messages)} messages"))
    host = app.boot.host
    active = sorted(n for n, st in host.status.items() if st.state in ("enabled", "essential"))
    if active:
        lines.append((60, "plugins: " + ", ".join(active)))
    for failure in host.failures():
        lines.append((61, f"plugin {failure.name}: {failure.error}"))
    for problem_line in list(app.hooks.problems) + list(app.keymap.problems):
        lines.append((62, problem_line))
    for notice in getattr(config, "notices", []) or []:
        lines.append((85, str(notice)))
    if config.get("yolo"):
        lines.append((90, YOLO_LINE))
    elif config.get("permission"):
        lines.append((90, "approvals: rules for " + ", ".join(sorted(config.get("permission")))
                      + ", defaults elsewhere"))
    else:
        lines.append((90, DEFAULT_APPROVALS))
    from agent.loop.gate import flag_rules

    flags = flag_rules(config)
    if flags is not None:  # --allow/--deny/--permission-mode: say what this run adds
        lines.append((90, flags.describe()))
    from agent.contain.sandbox import sandbox_for

    lines.append((91, sandbox_for(config).describe()))
    sets = config.get("tool_sets")
    if sets:
        lines.append((95, "tool sets: " + ", ".join(["core"] + [s for s in sets
                                                               if s != "core"])))
    lines.append((100, "/help for commands"))
    lines += [(line.order, line.text) for line in app.hooks.header_lines(config, session)]
    lines.sort(key=lambda line: line[0])  # stable: equal orders keep their places
    return "\n".join(text for _, text in lines)


def refresh_header(app: App) -> None:
    """Draw the header again (the provider changed): in place while it is in the transcript,
    else (printed for good in inline mode, or cleared) as a new block."""
    entry = getattr(app, "header_entry", None)
    if entry is not None and entry in app.transcript.walker:
        entry.block.text = header(app)
        app.transcript.update(entry)
    else:
        app.header_entry = app.transcript.add(Block("header", header(app)))
    app.redraw.request()


def start(app: App, prompt: str | None = None) -> None:
    from agent.ui import turns

    problem = ""
    try:
        attach(app, build_runtime(app))
    except NoProvider as exc:
        problem = str(exc)
    except Exception as exc:  # a failed resume (-c/-r) or store problem
        problem = str(exc)
        app.supervisor.report("starting the session", exc)
    app.header_entry = app.transcript.add(Block("header", header(app, problem)))
    if app.session is not None and app.session.messages:
        turns.replay(app, app.session.messages)
    app.update_status()
    if app.runtime is None:
        app.supervisor.spawn(_onboard(app, prompt, problem), "the provider setup")
    elif prompt:
        app.submit(prompt)


async def _onboard(app: App, prompt: str | None, problem: str) -> None:
    if await app.setup_provider(problem) and prompt:
        app.submit(prompt)


async def setup_provider(app: App, problem: str = "") -> bool:
    """The plugins' provider setup (``agent_setup_provider``), its choice saved and used; True
    when a provider is in use now."""
    config = app.config
    try:
        choice = await app.hooks.setup_provider(app.ctx, config, app.hooks.providers(config),
                                                problem)
    except Exception as exc:  # reported by the hooks; the app goes on without a provider
        app.add("error", f"the provider setup failed: {type(exc).__name__}: {exc}")
        return False
    if choice is False:
        app.add("error", f"no enabled plugin offers the provider setup: set provider, model and "
                         f"api_key in {config.config_file} (see docs/configuration.md)")
        return False
    if choice is None:
        app.add("info", "provider setup cancelled")
        return False
    return use_provider(app, choice)


def use_provider(app: App, choice: ProviderChoice) -> bool:
    """Save ``choice`` to ``config.toml`` (other keys and comments kept) and switch to it."""
    from agent.boot.config import ConfigError, update_file

    config = app.config
    changes: dict[str, Any] = {"provider": choice.provider, "model": choice.model,
                               "base_url": choice.base_url, "preset": choice.preset or None,
                               "api_key": choice.api_key}
    try:
        update_file(config.config_file, changes)
    except (ConfigError, OSError) as exc:
        app.add("error", f"could not save the provider: {exc}")
        return False
    # The choice applies now: it outranks what the environment or flags said at startup.
    for layer in (config.flag_values, config.env_values):
        for name in changes:
            layer.pop(name, None)
    for name, value in changes.items():
        if value is None:
            config.file_data.pop(name, None)
        else:
            config.file_data[name] = value
    try:
        attach(app, build_runtime(app))
    except NoProvider as exc:
        app.add("error", str(exc))
        return False
    refresh_header(app)  # it said "no provider configured"
    app.update_status()
    app.add("info", f"{choice.label or choice.provider} configured with {choice.model}\n"
                    f"saved to {config.config_file}")
    return True
