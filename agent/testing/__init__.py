"""Helpers for testing plugins: a real plugin host, tool contexts, and gate decisions.

Nothing here mocks the core: it builds the same objects ``agent`` builds at startup, from the
installed entry points (optionally narrowed) plus the plugin objects a test passes in.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agent.boot import plugins as plugin_loading
from agent.boot.config import CORE_OPTIONS, Config, Paths, build
from agent.contract.hooks import Hooks
from agent.contract.options import OptionRegistry
from agent.contract.tools import AllowedBy, Tool, ToolCall, ToolContext, ToolResult
from agent.loop.gate import Approver, Gate, GateDecision

if TYPE_CHECKING:
    from agent.contract.events import Event
    from agent.loop.session import Session


def make_boot(workspace: Path, home: Path, *, builtins: Iterable[str] | None = None,
              extra: Iterable[tuple[str, object]] = (), file_data: Mapping[str, Any] | None = None,
              flags: Mapping[str, Any] | None = None, headless: bool = False
              ) -> tuple[Config, Hooks]:
    """A configured plugin host.  ``builtins`` narrows the installed plugins to those names
    (None keeps all); ``extra`` adds plugin objects; ``home`` plays ``AGENT_HOME``."""
    host = plugin_loading.load(enabled=set(builtins or ()), extra=extra,
                               only=None if builtins is None else set(builtins))
    hooks = Hooks(host.pm)
    options = OptionRegistry()
    for option in CORE_OPTIONS:
        options.add(option)
    hooks.addoption(options)
    paths = Paths(config_dir=home, state_dir=home / "state", home=home)
    config = build(paths, options, dict(file_data or {}), dict(flags or {}), env={},
                   workspace=workspace)
    config.headless = headless
    config.plugins = host
    hooks.configure(config)
    return config, hooks


def tool_context(config: Config, tool_name: str, args: dict[str, Any] | None = None, *,
                 session: Session | None = None, call_id: str = "call_test",
                 output: list[str] | None = None,
                 allowed_by: AllowedBy = "user") -> ToolContext:
    """A :class:`ToolContext` like the session builds for one call.  ``allowed_by`` is who
    let it run (default: the user said yes; ``"policy"`` for a call nobody approved)."""
    call = ToolCall(call_id, tool_name, dict(args or {}))
    sink = output if output is not None else []
    return ToolContext(workspace=config.workspace, state_dir=config.state_dir, call=call,
                       config=config, session=session, emit_output=sink.append,
                       allowed_by=allowed_by)


async def run_tool(tool: Tool, args: dict[str, Any], config: Config, *,
                   session: Session | None = None,
                   output: list[str] | None = None,
                   allowed_by: AllowedBy = "user") -> ToolResult:
    """Validate ``args`` and run ``tool`` as the session would (errors become results),
    as approved by ``allowed_by`` (see :func:`tool_context`)."""
    from agent.contract.tools import ToolError
    from agent.contract.validate import check_arguments
    from agent.loop.saved_results import keep_large

    try:
        check_arguments(tool, args)
        out = await tool.run(args, tool_context(config, tool.name, args, session=session,
                                                 output=output, allowed_by=allowed_by))
    except ToolError as exc:
        return ToolResult(str(exc), is_error=True)
    result = out if isinstance(out, ToolResult) else ToolResult(str(out))
    result.output = keep_large(result.output, state_dir=config.state_dir,
                               session_id=getattr(session, "id", None) or "test",
                               call_id="call_test")
    return result


async def gate_decision(config: Config, hooks: Hooks, tool: Tool, args: dict[str, Any], *,
                        approver: Approver | None = None, yolo: bool = False,
                        origin: str = "model", session: Session | None = None
                        ) -> GateDecision:
    """What the gate decides for one call of ``tool`` (guards, rules, yolo, approver)."""
    gate = Gate(hooks, config, approver, yolo=yolo)
    call = ToolCall("call_test", tool.name, dict(args), origin=origin)
    return await gate.decide(call, tool, tool.effects(args), session)


def make_session(config: Config, hooks: Hooks, *, provider: str = "openai", model: str = "m",
                 base_url: str | None = None, api_key: str = "test-key",
                 approver: Approver | None = None, max_retries: int = 0, **session_kwargs: Any
                 ) -> Session:
    """A :class:`agent.loop.session.Session` over a real provider plugin (e.g. pointed at a local
    fake server with ``base_url``), built the way the CLI builds one."""
    from dataclasses import replace

    from agent.boot.runtime import provider_settings
    from agent.loop.session import Runtime, Session

    config.flag_values.update({"provider": provider, "model": model})
    if base_url:
        config.flag_values["base_url"] = base_url
    config.env_values["api_key"] = api_key
    specs = hooks.providers(config)
    settings = replace(provider_settings(config, specs, env={}), max_retries=max_retries)
    built = hooks.select_provider(config, specs, settings)
    if built is None:
        raise ValueError(f"no plugin could build the provider {provider!r}")
    runtime = Runtime(config=config, hooks=hooks, tools=hooks.tools(config), provider=built,
                      approver=approver, model=settings.model,
                      provider_name=settings.provider, provider_spec=specs[settings.provider])
    return Session(runtime, **session_kwargs)


async def collect(session: Session, prompt: str) -> list[Event]:
    """Run one turn and return every event."""
    return [event async for event in session.run(prompt)]
