"""UI commands: /help /tools /plugins /keys /provider /models /model /exit /clear.

Each command only needs the command context (``docs/ui.md``); none imports a provider SDK.
``/cost`` belongs to the ``budget`` plugin (it splits the session's spend from its subagents').
This plugin also declares the UI's settings: ``keys``, ``colors``, ``mouse``,
``bell_on_approval``, ``print_transcript``, ``ui`` (``ui.alt_screen``) and ``inline``.
"""

from __future__ import annotations

from typing import Any

from agent import ConfigError, Option, SlashCommand, hookimpl


@hookimpl
def agent_addoption(options):
    options.add(Option("keys", type="dict", default={},
                       help="key binding overrides: \"key\" = \"command\" (docs/keybindings.md)"))
    options.add(Option("colors", default="auto", env="AGENT_COLORS",
                       choices=("auto", "mono", "16", "256", "truecolor"),
                       help="colour depth of the full-screen UI"))
    options.add(Option("mouse", type="bool", default=False,
                       help="let the UI take the mouse (wheel scrolls the transcript; the "
                            "terminal's own selection then needs shift)"))
    options.add(Option("bell_on_approval", type="bool", default=False,
                       help="ring the terminal bell when a call waits for approval or a question"))
    options.add(Option("print_transcript", type="bool", default=True,
                       help="on exit, write the conversation (styled as shown) to the normal "
                            "screen, into the terminal's scrollback"))
    options.add(Option("ui", type="dict", default={},
                       help="UI table: alt_screen = false never uses the alternate screen "
                            "(inline mode, like --inline); inline_reflow = false leaves "
                            "printed rows as drawn when the width changes"))
    options.add(Option("inline", type="bool", default=False, flag="--inline",
                       help="inline mode: no alternate screen; finished blocks go to the "
                            "terminal's own scrollback as the session runs"))


#: With no [ui] table there is nothing to check at startup: the plugin stays unimported
#: until the UI asks for its commands (a headless run never does).
AGENT_IDLE_WHEN = {"config": {"ui": {}}}

UI_KEYS = {"alt_screen": bool, "inline_reflow": bool}


@hookimpl
def agent_configure(config):
    table = config.get("ui") or {}
    if not isinstance(table, dict):
        raise ConfigError(f"ui must be a table (like [ui] alt_screen = false), got {table!r}")
    for key, value in table.items():
        if key not in UI_KEYS:
            raise ConfigError(f"ui.{key} is not a UI setting (known: "
                              f"{', '.join('ui.' + k for k in UI_KEYS)})")
        if not isinstance(value, UI_KEYS[key]):
            raise ConfigError(f"ui.{key} must be true or false, got {value!r}")


# ---- /help ----------------------------------------------------------------------------------

KEY_HELP = (
    ("enter", "submit"), ("meta enter", "newline"), ("esc", "cancel"), ("ctrl c", "interrupt"),
    ("ctrl r", "toggle-reasoning"), ("ctrl o", "toggle-folds"), ("page up", "scroll-up"),
    ("ctrl end", "scroll-bottom"), ("tab", "complete"), ("up", "history-prev"),
)


def help_text(app: Any) -> str:
    lines = []
    for cmd in app.commands.sorted():
        name = f"/{cmd.name}" + (f" {cmd.args}" if cmd.args else "")
        alias = f" (also /{', /'.join(cmd.aliases)})" if cmd.aliases else ""
        lines.append(f"`{name.ljust(22)}` {cmd.summary}{alias}")
    lines += ["", "**keys**"]
    from agent.ui.keymap import ACTIONS

    for default_key, command in KEY_HELP:
        keys = app.keymap.keys_for(command) or [default_key]
        lines.append(f"`{' / '.join(keys[:2]).ljust(22)}` {ACTIONS.get(command, command)}")
    lines += ["", "Prompts typed while a turn runs are queued and run in order afterwards; "
                  "esc stops the turn and clears the queue.",
              "All bindings: docs/keybindings.md"]
    return "\n".join(lines)


def cmd_help(app: Any, args: str) -> None:
    app.info("commands", help_text(app), "type / for the menu")


# ---- /tools, /plugins ----------------------------------------------------------------------


def cmd_tools(app: Any, args: str) -> str | None:
    session = app.session
    if session is None:
        return "no provider configured yet - run /provider"
    offered = {t.name for t in session.tools_for_step()}
    lines = []
    for name in sorted(session.tools):
        tool = session.tools[name]
        where = tool.tool_set or (f"plugin {tool.plugin}" if tool.plugin else "session")
        mark = "" if name in offered else "  (not offered)"
        lines.append(f"- `{name}`  {where}{mark}")
    app.info("tools", "\n".join(lines) or "no tools",
             f"{len(offered)} offered this turn of {len(session.tools)} registered")
    return None


def cmd_plugins(app: Any, args: str) -> str | None:
    host = app.plugins
    hooks = getattr(app, "hooks", None)
    config = getattr(app, "config", None)
    rows = (hooks.plugin_rows(config.paths.config_dir, host.status)
            if hooks is not None and config is not None else dict(host.status))
    lines = []
    for name in sorted(rows):
        st = rows[name]
        if st.state in ("enabled", "essential"):
            lines.append(f"`{name.ljust(12)}` {st.description or st.module}")
    for failure in (rows[n] for n in sorted(rows) if rows[n].state == "failed"):
        lines.append(f"**{failure.name}** failed: {failure.error}")
    if not lines:
        return "no plugins active"
    app.info("plugins", "\n".join(lines), "agent plugins disable NAME turns one off")
    return None


def cmd_keys(app: Any, args: str) -> None:
    from agent.ui.keymap import ACTIONS

    lines = []
    for b in app.keymap.bindings():
        lines.append(f"`{(b.context + ' ' + b.key).ljust(24)}` {b.command}: "
                     f"{ACTIONS.get(b.command, 'runs /' + b.command)}")
    app.info("keys", "\n".join(lines), "override in config.toml [keys]")


# ---- providers and models -------------------------------------------------------------------


async def cmd_provider(app: Any, args: str) -> None:
    await app.setup_provider()


async def cmd_models(app: Any, args: str) -> str | None:
    session = app.session
    if session is None:
        return "no API key set - run /provider"
    provider = session.runtime.provider
    try:
        models = sorted(set(await provider.list_models()))
    except Exception as exc:
        message = getattr(exc, "message", None) or str(exc)
        app.warn(f"could not list models: {message[:200]}")
        models = []
    if not models:
        return "no models to choose from - use /model <id> or /provider"
    choice = await app.pick(f"Choose a model ({len(models)} available)", models,
                            current=session.model, free_text="type a model id myself...")
    if not choice:
        return None
    app.set_model(choice.strip())
    return f"model is now {choice.strip()}"


async def cmd_model(app: Any, args: str) -> str | None:
    model = args.strip()
    if not model:
        return await cmd_models(app, args)
    if app.session is None:
        return "no provider configured yet - run /provider"
    app.set_model(model)
    return f"model is now {model}"


def cmd_exit(app: Any, args: str) -> None:
    app.quit()


@hookimpl
def agent_register_commands(register, config):
    register(SlashCommand("help", "list commands and keys", cmd_help, aliases=("?",), info=True))
    register(SlashCommand("tools", "the tools the model may use", cmd_tools, info=True))
    register(SlashCommand("plugins", "active plugins and load errors", cmd_plugins, info=True))
    register(SlashCommand("keys", "every key binding", cmd_keys, info=True))
    register(SlashCommand("provider", "set up the provider, key and model", cmd_provider,
                          aliases=("login",), info=True))
    register(SlashCommand("models", "choose a model from the endpoint's list", cmd_models))
    register(SlashCommand("model", "switch the model (not saved)", cmd_model, args="<id>",
                          takes_args=True))
    register(SlashCommand("exit", "quit (works mid-turn)", cmd_exit, aliases=("quit",),
                          info=True))
