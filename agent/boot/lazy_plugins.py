"""Stand-ins that register a plugin from its cached description and import it on first use.

A :class:`LazyPlugin` carries one stub per hook implementation the description lists, with
the real implementation's name, pluggy options and argument names, so pluggy orders, wraps
and validates it exactly as it would the real one (an ``async def`` guard is still refused, a
misspelled hook still fails the plugin).  Calling a stub imports the plugin (once) and calls
the real implementation; from then on pluggy calls the real functions directly.

Recorded registrations (:data:`agent.boot.plugin_cache.RECORDED`) are replayed from the cache while
the plugin is not imported: its options, and providers, tools and CLI subcommands whose
callables (a tool's ``run``, ``effects``, ``describe``) import the plugin when called.

A plugin that declares ``AGENT_IDLE_WHEN`` (config keys at given values, paths under the
config dir absent) is *idle* in a run where all of it holds: its ``agent_configure`` is
deferred, and its per-run hooks (those given a ``session``, plus tool registration and
``agent_unconfigure``) do nothing, so it is never imported.  Any other hook of an idle plugin
(a slash command, a subcommand) imports it and runs the deferred ``agent_configure`` first,
after which it is an ordinary plugin.
"""

from __future__ import annotations

import functools
import inspect
import logging
import threading
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any

from agent.boot import plugin_cache
from agent.contract import hookspecs

log = logging.getLogger("agent.plugins")


def _per_run_hooks() -> frozenset[str]:
    """Hooks an idle plugin skips: every hook given a ``session``, plus configuration, tool
    and mention registration (derived from the hookspecs, so a hook added later is covered)."""
    names = {"agent_configure", "agent_unconfigure", "agent_register_tools",
             "agent_register_mentions"}
    for name, spec in vars(hookspecs).items():
        if name.startswith("agent_") and callable(spec) \
                and "session" in inspect.signature(spec).parameters:
            names.add(name)
    return frozenset(names)


PER_RUN_HOOKS = _per_run_hooks()


_TRAMPOLINES = {
    "plain": "def stub({params}):\n    return forward({args})\n",
    "generator": "def stub({params}):\n    return (yield from forward({args}))\n",
    "async": "async def stub({params}):\n    return await forward({args})\n",
    "asyncgen": "async def stub({params}):\n    async for item in forward({args}):\n"
                "        yield item\n",
}


def trampoline(kind: str, params: list[str], forward: Callable[..., Any]) -> Any:
    """A function of ``kind`` whose own parameters are ``params`` and which hands them on to
    ``forward`` positionally.  Its code object names the parameters, because that is where
    pluggy reads a hook implementation's argument names (``__code__`` since pluggy 1.7, the
    signature before): a ``*args`` stub with a ``__signature__`` would be called with no
    arguments under 1.7.  ``params`` come from a cache file, so only plain identifiers are
    accepted (:func:`agent.boot.plugin_cache.well_formed` refuses a description with others)."""
    if not all(plugin_cache.plain_parameter(p) for p in params) or len(set(params)) != len(
            params):
        raise ValueError(f"not a parameter list: {params!r}")
    namespace: dict[str, Any] = {"forward": forward}
    exec(_trampoline_code(kind, tuple(params)), namespace)
    return namespace["stub"]


@functools.lru_cache(maxsize=256)
def _trampoline_code(kind: str, params: tuple[str, ...]) -> types.CodeType:
    """The compiled definition (compiling is most of a stub's cost; hooks share shapes)."""
    source = _TRAMPOLINES[kind].format(params=", ".join(params), args=", ".join(params))
    return compile(source, f"<agent stand-in {kind}>", "exec")


class LazyPlugin:
    """The registered stand-in for one plugin; see the module docstring."""

    def __init__(self, name: str, entry: dict[str, Any], load: Callable[[], object],
                 on_failure: Callable[[str, BaseException], None]) -> None:
        self._plugin_name = name
        self._entry = entry
        self._load = load
        self._on_failure = on_failure
        self._real: object | None = None
        self._error: BaseException | None = None
        self._pm: Any = None
        self._lock = threading.RLock()  # hooks may first be called on several threads
        #: the config whose ``agent_configure`` was deferred because the plugin is idle
        self._idle_config: Any = None
        self.__name__ = entry["module"]
        self.__doc__ = entry["doc"]
        self._stubs: dict[str, Any] = {}
        for hook in entry["hooks"]:
            stub = self._stub(hook)
            self._stubs[hook["attr"]] = stub
            setattr(self, hook["attr"], stub)

    def __repr__(self) -> str:
        state = "imported" if self._real is not None else "not imported"
        return f"<lazy plugin {self._plugin_name} ({state})>"

    def hook_opts(self, attr: str) -> dict[str, Any] | None:
        """pluggy's options of the hook implementation ``attr`` (what
        ``PluginManager.parse_hookimpl_opts`` would read off the stub), None for any other
        attribute."""
        stub = self._stubs.get(attr)
        return stub.agent_impl if stub is not None else None

    @property
    def imported(self) -> bool:
        return self._real is not None

    def attach(self, pm: Any) -> None:
        """Remember the manager, to point its hook implementations at the real functions."""
        self._pm = pm

    # ---- importing --------------------------------------------------------------------------

    def real(self) -> object:
        """The imported plugin (importing it now if needed); raises what the import raised."""
        if self._real is not None:
            return self._real
        with self._lock:
            if self._real is not None:
                return self._real
            if self._error is not None:
                raise self._error
            try:
                real = self._load()
            except Exception as exc:
                self._error = exc
                self._on_failure(self._plugin_name, exc)
                raise
            self._real = real
            return real

    def _wake(self) -> object:
        """Import, run a deferred ``agent_configure``, then let pluggy call the real hooks."""
        with self._lock:
            real = self.real()
            config, self._idle_config = self._idle_config, None
            if config is not None:
                configure = self._real_function("agent_configure")
                if configure is not None:
                    configure(**_pick(configure, {"config": config}))
            self._rebind()
            return real

    def _real_function(self, hook_name: str) -> Callable[..., Any] | None:
        for hook in self._entry["hooks"]:
            if (hook["opts"].get("specname") or hook["attr"]) == hook_name:
                return getattr(self.real(), hook["attr"])  # type: ignore[no-any-return]
        return None

    def _rebind(self) -> None:
        if self._pm is None or self._real is None:
            return
        for caller in vars(self._pm.hook).values():
            get = getattr(caller, "get_hookimpls", None)
            for impl in get() if get is not None else ():
                if impl.plugin is self:
                    real = getattr(self._real, impl.function.__name__, None)
                    if real is not None:
                        impl.function = real

    # ---- idling -----------------------------------------------------------------------------

    def _idle(self, config: Any) -> bool:
        idle = self._entry.get("idle")
        if not idle or config is None:
            return False
        try:
            for key, value in idle["config"].items():
                if config.get(key) != value:
                    return False
            config_dir = Path(config.paths.config_dir)
            return not any((config_dir / rel).exists() for rel in idle["absent"])
        except Exception:  # cannot tell: not idle (the plugin runs as it always did)
            return False

    # ---- stubs ------------------------------------------------------------------------------

    def _stub(self, hook: dict[str, Any]) -> Callable[..., Any]:
        attr: str = hook["attr"]
        name: str = hook["opts"].get("specname") or attr
        recorded = self._entry["recorded"].get(name)
        lazy = self

        def call(args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
            return getattr(lazy._wake(), attr)(*args, **kwargs)

        def generator_stub(*args: Any, **kwargs: Any) -> Any:
            if lazy._idle_config is not None and name in PER_RUN_HOOKS:
                return (yield)
            return (yield from call(args, kwargs))

        async def async_stub(*args: Any, **kwargs: Any) -> Any:
            return await call(args, kwargs)

        async def asyncgen_stub(*args: Any, **kwargs: Any) -> Any:
            async for item in call(args, kwargs):
                yield item

        def plain_stub(*args: Any, **kwargs: Any) -> Any:
            if lazy._real is None:
                bound = dict(zip(hook["params"], args, strict=False), **kwargs)
                if name == "agent_configure" and lazy._idle(bound.get("config")):
                    lazy._idle_config = bound.get("config")
                    return None
                if lazy._idle_config is not None and name in PER_RUN_HOOKS:
                    return None
                if recorded is not None and lazy._replay(name, recorded, bound):
                    return None
            return call(args, kwargs)

        inner = {"generator": generator_stub, "async": async_stub,
                 "asyncgen": asyncgen_stub}.get(hook["kind"], plain_stub)
        stub: Any = trampoline(hook["kind"], hook["params"], inner)
        stub.__name__ = attr
        stub.__qualname__ = f"{self._plugin_name}.{attr}"
        stub.agent_impl = dict(hook["opts"])
        return stub  # type: ignore[no-any-return]

    # ---- replaying recorded registrations ---------------------------------------------------

    def _replay(self, name: str, calls: list[Any], kwargs: dict[str, Any]) -> bool:
        """Make the recorded registrations again; False (nothing registered) when the record
        no longer fits agent's types, and the real hook must run instead."""
        built: list[tuple[Callable[..., Any], tuple[Any, ...], dict[str, Any]]]
        try:
            if name == "agent_addoption":
                built = [(kwargs["options"].add, (_build(call, {}),), {}) for call in calls]
            elif name in ("agent_register_providers", "agent_register_tools"):
                # One replay stands for one call of the real hook: the callables it hands
                # out come from one real registration, made when the first is called (a
                # tool's run and effects may share state their registration set up).
                made: list[Any] = []
                built = [(kwargs["register"], (_build(call, {
                    field: self._deferred(name, index, field, made)
                    for field in call["lazy"]}),), {})
                    for index, call in enumerate(calls)]
            else:
                built = [(kwargs["register"], (call["name"], self._deferred(name, index, None),
                                               call["summary"]),
                          {"usage": [tuple(row) for row in call.get("usage", ())]})
                         for index, call in enumerate(calls)]
        except Exception:
            log.debug("plugin %s: recorded %s does not fit, importing", self._plugin_name,
                      name, exc_info=True)
            return False
        for register, args, keywords in built:
            register(*args, **keywords)
        return True

    def _deferred(self, hook_name: str, index: int, field: str | None,
                  made: list[Any] | None = None) -> Callable[..., Any]:
        """A callable standing for what the ``index``-th registration passed (``field`` of
        the registered object, or the CLI handler): imports the plugin when called.
        ``made`` holds the real registrations of one replay once one was needed."""
        def deferred(*args: Any, **kwargs: Any) -> Any:
            return self._registered(hook_name, index, field, made)(*args, **kwargs)

        deferred.__name__ = f"{self._plugin_name}_{field or 'handler'}"
        return deferred

    def _registered(self, hook_name: str, index: int, field: str | None,
                    shared: list[Any] | None = None) -> Callable[..., Any]:
        if shared:
            return getattr(shared[index], field or "")  # type: ignore[no-any-return]
        function = self._real_function(hook_name)
        self._wake()
        if function is None:  # the description named a hook the plugin no longer has
            raise RuntimeError(f"plugin {self._plugin_name} has no {hook_name}")
        made: list[Any] = []
        if hook_name == "agent_register_cli_commands":
            def register_cli(name: str, handler: Any, summary: str = "", usage: Any = ()
                             ) -> None:
                made.append(handler)

            function(**_pick(function, {"register": register_cli}))
            return made[index]  # type: ignore[no-any-return]
        function(**_pick(function, {"register": made.append,
                                    "config": plugin_cache.NO_CONFIG}))
        if shared is not None:
            shared[:] = made  # kept only once the registration succeeded
        return getattr(made[index], field or "")  # type: ignore[no-any-return]


def _build(call: dict[str, Any], extra: dict[str, Any]) -> Any:
    cls = plugin_cache.decode_type(call["type"])
    fields = {k: plugin_cache.decode_value(v) for k, v in call["fields"].items()}
    return cls(**fields, **extra)


def _pick(function: Callable[..., Any], available: dict[str, Any]) -> dict[str, Any]:
    return {p: available[p] for p in inspect.signature(function).parameters if p in available}


def import_now(pm: Any, hook_name: str) -> None:
    """Import, on the calling thread, every not yet imported plugin implementing
    ``hook_name`` that will really run it.  Guards run on worker threads under a deadline, and
    an import must not eat into it (a guard that cannot be imported still denies: its stub
    raises when called)."""
    for impl in getattr(pm.hook, hook_name).get_hookimpls():
        plugin = impl.plugin
        if isinstance(plugin, LazyPlugin) and not plugin.imported \
                and not (plugin._idle_config is not None and hook_name in PER_RUN_HOOKS):
            try:
                plugin._wake()
            except Exception:
                pass
