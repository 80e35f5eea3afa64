"""Finding, blocking and loading plugins from the ``agent.plugins`` entry point group.

Builtins and third-party plugins load by the same path.  A plugin named in
``plugins.disabled`` (config), ``--disable NAME`` or ``AGENT_DISABLE_PLUGINS`` is never
imported.  A plugin that fails to import or register is reported and skipped, unless it is a
guard (it implements, or its source names, ``agent_guard_tool_call``): then ``agent`` does
not start until it is fixed or disabled (:func:`unloadable_guards`), since the calls it was
installed to refuse would run.  Essential plugins refuse to be disabled.
"""

from __future__ import annotations

import inspect
import logging
import sys
import time
import traceback
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import pluggy

try:  # what pluggy's own register uses; see _Manager.register
    from pluggy._hooks import HookCaller, HookImpl, normalize_hookimpl_opts
except ImportError:  # another pluggy: its register runs unchanged
    HookCaller = HookImpl = normalize_hookimpl_opts = None  # type: ignore[assignment,misc]

from agent.boot.entry_points import EntryPoint
from agent.boot.entry_points import scan as scan_groups
from agent.boot.lazy_plugins import LazyPlugin
from agent.contract import hookspecs

ENTRY_POINT_GROUP = "agent.plugins"

#: Plugins the core cannot work without (base prompt, default provider selection).
ESSENTIAL = frozenset({"core"})

#: Plugins that stay off unless named in ``plugins.enabled`` declare it themselves: an entry
#: of the same name in this group (metadata only, so it is known without importing them).
OPT_IN_GROUP = "agent.plugins.opt_in"

#: The distribution that ships the builtin plugins (``--no-plugins`` keeps only these).
BUILTIN_DISTRIBUTION = "agent-cli"

log = logging.getLogger("agent.plugins")


@dataclass
class PluginStatus:
    """How one plugin fared: ``state`` is ``enabled``, ``essential``, ``disabled``,
    ``opt-in`` (available, not enabled), or ``failed`` (with ``error``)."""

    name: str
    state: str
    module: str = ""
    distribution: str = ""
    error: str = ""
    description: str = ""
    #: it implements (or, failed, declares) ``agent_guard_tool_call``: a guard that cannot
    #: load keeps the agent from starting (see :func:`unloadable_guards`)
    guard: bool = False


def scan(cache: Path | None = None) -> tuple[list[EntryPoint], frozenset[str]]:
    """The plugins' entry points (sorted by name, the first of duplicate names wins) and the
    names declared opt-in (:data:`OPT_IN_GROUP`), from one pass over the installed
    distributions' metadata; with ``cache`` (a file in the state dir) only the ``sys.path``
    entries that changed since are read (:mod:`agent.boot.entry_points`)."""
    found = scan_groups((ENTRY_POINT_GROUP, OPT_IN_GROUP), cache)
    seen: dict[str, EntryPoint] = {}
    for ep in found:
        if ep.group == ENTRY_POINT_GROUP:
            seen.setdefault(ep.name, ep)
    opt_in = frozenset(ep.name for ep in found if ep.group == OPT_IN_GROUP)
    return [seen[name] for name in sorted(seen)], opt_in


def entry_points() -> list[EntryPoint]:
    """Every entry point in the group, sorted by name (first of duplicate names wins)."""
    return scan()[0]


def opt_in_names() -> frozenset[str]:
    """Plugins that declared themselves opt-in (:data:`OPT_IN_GROUP`): installed, but off
    until ``plugins.enabled`` or ``--enable`` names them."""
    return scan()[1]


_MISSING = object()

#: The hook implementations :meth:`_Manager.register` built for a plugin module, by module
#: and attribute, with the options they were built from.  pluggy's ``HookImpl`` holds the
#: plugin, its name, the function, its argument names and the options, and nothing of the
#: manager, so the next host registering the same module (a second plugin host; the test
#: suite's in-process runs) takes the same one while all of those are the same.  Building one
#: costs an ``inspect.signature`` (112 of them a load: about half of a load's CPU).  An
#: implementation holds its module, so the entries of a module that is no longer the one
#: imported under its name (forgotten, imported anew, or never imported) are dropped by
#: :func:`new_manager`.
_IMPLS: dict[ModuleType, dict[str, tuple[Any, dict[str, Any]]]] = {}

#: What :meth:`_Manager._walk` last found in a plugin module: the name it was registered
#: under, the module's namespace then (a copy) and the implementations with their options
#: then.  While the namespace holds the very same objects (and no ``__dir__`` makes ``dir()``
#: differ from it), looking through it again finds the same hook options;
#: an implementation's options changed in place are seen and send it through the walk.
#: Pruned with :data:`_IMPLS`.
_WALKED: dict[ModuleType, tuple[str, dict[str, object], list[tuple[str, Any, dict[str, Any]]]]] \
    = {}


def _unchanged_walk(plugin: ModuleType, name: str) -> list[tuple[str, Any]] | None:
    walked = _WALKED.get(plugin)
    if walked is None or walked[0] != name:
        return None
    namespace, before = plugin.__dict__, walked[1]
    if "__dir__" in namespace or len(namespace) != len(before) \
            or not all(namespace.get(key, _MISSING) is value for key, value in before.items()):
        return None
    if not all(impl.opts == opts for _hook, impl, opts in walked[2]):
        return None
    return [(hook, impl) for hook, impl, _opts in walked[2]]


#: Whether this pluggy has what :meth:`_Manager.register` uses of its internals (pluggy 1.x
#: does); without it pluggy's own ``register`` runs.
_REUSE_IMPLS = all(hasattr(HookCaller, part) for part in (
    "_add_hookimpl", "_maybe_apply_history", "has_spec")) and all(
    hasattr(pluggy.PluginManager, part) for part in ("_verify_hook", "_hookexec"))


class _Manager(pluggy.PluginManager):
    """pluggy's manager, reading a :class:`LazyPlugin`'s hook options from its description
    instead of inspecting each of its ~50 attributes (30 plugins: ~1,500 lookups a start)."""

    def parse_hookimpl_opts(self, plugin: object, name: str) -> Any:
        if type(plugin) is LazyPlugin:
            return plugin.hook_opts(name)
        return super().parse_hookimpl_opts(plugin, name)

    def register(self, plugin: Any, name: str | None = None) -> str | None:
        """pluggy's ``register``, except that a plugin module's hook implementations are
        the ones this process built before for the same module, name, function and options
        (:data:`_IMPLS`): building one inspects the function's signature, most of a load's
        cost; and a module whose namespace holds the very objects it held when last
        registered under this name is not looked through again (:data:`_WALKED`).  Anything
        else (an instance, a stand-in, a name already taken or blocked, a pluggy without the
        parts used here) goes through pluggy's own ``register``."""
        taken = getattr(self, "_name2plugin", None)
        if not _REUSE_IMPLS or not isinstance(taken, dict) or not isinstance(plugin, ModuleType) \
                or name is None or name in taken or plugin in taken.values():
            return super().register(plugin, name)
        found = _unchanged_walk(plugin, name)
        if found is None:
            found = self._walk(plugin, name)
        # Every implementation is checked before any is added (as pluggy 1.7 does): a
        # plugin with one hook that does not fit leaves none of the others registered.
        for hook_name, impl in found:
            hook = getattr(self.hook, hook_name, None)
            if hook is not None and hook.has_spec():
                self._verify_hook(hook, impl)
        taken[name] = plugin
        for hook_name, impl in found:
            hook = getattr(self.hook, hook_name, None)
            if hook is None:
                hook = HookCaller(hook_name, self._hookexec)
                setattr(self.hook, hook_name, hook)
            elif hook.has_spec():
                hook._maybe_apply_history(impl)
            hook._add_hookimpl(impl)
        return name

    def _walk(self, plugin: ModuleType, name: str) -> list[tuple[str, Any]]:
        """The hook implementations of ``plugin`` by hook name, in pluggy's order (its
        attributes sorted), each taken from :data:`_IMPLS` where still the same."""
        known = _IMPLS.setdefault(plugin, {})
        namespace = dict(plugin.__dict__)  # before looking: what the result was found in
        found: list[tuple[str, Any]] = []
        snapshots: list[tuple[str, Any, dict[str, Any]]] = []
        for attr in dir(plugin):
            opts = self.parse_hookimpl_opts(plugin, attr)
            if opts is None:
                continue
            normalize_hookimpl_opts(opts)
            function = getattr(plugin, attr)
            held = known.get(attr)
            # the options as they were when it was built: pluggy hands out the function's own
            # dict, which may have been changed in place since
            if held is not None and held[0].function is function \
                    and held[0].plugin_name == name and held[1] == opts:
                impl = held[0]
            else:
                impl = HookImpl(plugin, name, function, opts)
                known[attr] = impl, dict(opts)
            hook_name = opts.get("specname") or attr
            found.append((hook_name, impl))
            snapshots.append((hook_name, impl, dict(opts)))
        _WALKED[plugin] = name, namespace, snapshots
        return found


def new_manager() -> pluggy.PluginManager:
    """A fresh plugin manager with the hookspecs, nothing registered (tests build their own)."""
    for module in [m for m in _IMPLS if sys.modules.get(m.__name__) is not m]:
        del _IMPLS[module]
        _WALKED.pop(module, None)
    if not _SIGNED:
        _sign_hookspecs()
    pm = _Manager("agent")
    pm.add_hookspecs(hookspecs)
    return pm


_SIGNED: list[bool] = []


def _sign_hookspecs() -> None:
    """Give each hookspec function its own signature as ``__signature__``: pluggy takes
    every spec's argument names from ``inspect.signature`` for each new manager (about 45
    hooks, a fifth of a load's CPU), which returns a function's ``__signature__`` when it has
    one instead of building it again.  The same signature; computed once a process."""
    for name, function in vars(hookspecs).items():
        if name.startswith("agent_") and inspect.isfunction(function) \
                and getattr(function, "agent_spec", None) is not None:
            function.__signature__ = inspect.signature(function)  # type: ignore[attr-defined]
    _SIGNED.append(True)


class PluginHost:
    """The loaded plugin manager plus a status record for every plugin it knows of."""

    def __init__(self, pm: pluggy.PluginManager) -> None:
        self.pm = pm
        self.status: dict[str, PluginStatus] = {}
        #: names in plugins.disabled / plugins.enabled that match no installed plugin
        self.unknown: list[str] = []

    def register(self, plugin: object, name: str, *, state: str = "enabled") -> bool:
        """Register ``plugin`` under ``name``; a failure is recorded, never raised."""
        try:
            self.pm.register(plugin, name=name)
        except Exception as exc:  # a broken plugin is skipped (a guard stops the start)
            if self.pm.get_plugin(name) is plugin:  # pluggy < 1.7 stops half-way through
                self.pm.unregister(plugin, name)
            self.status[name] = PluginStatus(name, "failed", error=_describe(exc),
                                             guard=_has_guard(plugin))
            log.warning("plugin %s failed to register: %s", name, exc)
            return False
        problem = _guard_problem(self.pm, plugin)
        if problem is not None:  # a guard that cannot work must not leave its tools behind
            self.pm.unregister(plugin)
            self.status[name] = PluginStatus(name, "failed", error=problem, guard=True)
            log.warning("plugin %s refused: %s", name, problem)
            return False
        module = getattr(plugin, "__name__", type(plugin).__name__)
        doc = (getattr(plugin, "__doc__", "") or "").strip().splitlines()
        self.status[name] = PluginStatus(name, state, module=module,
                                         description=doc[0] if doc else "")
        return True

    def enabled_names(self) -> list[str]:
        return sorted(n for n, s in self.status.items() if s.state in ("enabled", "essential"))

    def failures(self) -> list[PluginStatus]:
        return [s for s in self.status.values() if s.state == "failed"]


def unloadable_guards(host: PluginHost) -> str | None:
    """Why the agent must not start: a guard plugin that is enabled but failed to load
    (its calls would run unchecked), named with the reason and how to go on; else None."""
    bad = sorted((s for s in host.failures() if s.guard), key=lambda s: s.name)
    if not bad:
        return None
    lines = [f"guard plugin {s.name} cannot be loaded: {s.error}" for s in bad]
    names = ", ".join(f'"{s.name}"' for s in bad)
    flags = " ".join(f"--disable {s.name}" for s in bad)
    lines.append("A guard refuses calls; without it they would run unchecked, so agent does "
                 f"not start. Fix the plugin, or disable it by name: {flags} (or "
                 f"plugins.disabled = [{names}] in config.toml, or AGENT_DISABLE_PLUGINS).")
    return "\n".join(lines)


def load(
    *,
    disabled: Iterable[str] = (),
    enabled: Iterable[str] = (),
    builtin_only: bool = False,
    extra: Iterable[tuple[str, object]] = (),
    cache: Path | None = None,
    entry_point_cache: Path | None = None,
    only: Iterable[str] | None = None,
) -> PluginHost:
    """Load every plugin of the entry point group, honouring blocks before import.

    ``disabled`` names are never imported (essential ones excepted); ``enabled`` switches on
    opt-in builtins; ``builtin_only`` (``--no-plugins``) blocks every plugin that does not
    ship with ``agent`` itself, unless it is named in ``enabled``.
    ``extra`` registers in-process plugin objects (used by tests and embedders).
    ``cache`` is the plugin description file (:mod:`agent.boot.plugin_cache`): a plugin with a
    current description is registered as a :class:`agent.boot.lazy_plugins.LazyPlugin` and
    imported when first needed; the others are imported now and described for next time.
    Without it every plugin is imported now.  ``entry_point_cache`` keeps the entry point
    scan (:func:`scan`).  ``only`` (when given) disables every installed plugin it does not
    name, the essential ones excepted: ``disabled`` computed from the same scan.
    """
    disabled_set = set(disabled)
    enabled_set = set(enabled)
    host = PluginHost(new_manager())
    described = _Descriptions(cache, host)
    points, opt_in = scan(entry_point_cache)
    known = {ep.name for ep in points}
    if only is not None:
        disabled_set |= known - set(only) - ESSENTIAL
    host.unknown = sorted((disabled_set | enabled_set) - known)
    for ep in points:
        name = ep.name
        essential = name in ESSENTIAL
        dist_name, dist_version = ep.dist_name, ep.dist_version
        dist = f"{dist_name} {dist_version}".strip()
        third_party = dist_name != BUILTIN_DISTRIBUTION
        blocked_as_third_party = builtin_only and third_party and name not in enabled_set
        if not essential and (name in disabled_set or blocked_as_third_party):
            host.status[name] = PluginStatus(name, "disabled", module=ep.value, distribution=dist)
            host.pm.set_blocked(name)
            continue
        if name in opt_in and name not in enabled_set:
            host.status[name] = PluginStatus(name, "opt-in", module=ep.value, distribution=dist)
            continue
        plugin = described.lazy(ep, dist)
        if plugin is None:
            try:
                plugin = ep.load()
            except Exception as exc:
                host.status[name] = PluginStatus(
                    name, "failed", module=ep.value, distribution=dist, error=_describe(exc),
                    guard=described.was_guard(name) or _declares_guard(ep.module))
                log.warning("plugin %s failed to import:\n%s", name, traceback.format_exc())
                described.forget(name)
                continue
            described.add(ep, dist, plugin)
        if host.register(plugin, name, state="essential" if essential else "enabled"):
            host.status[name].distribution = dist
            host.status[name].module = ep.value
            if isinstance(plugin, LazyPlugin):
                plugin.attach(host.pm)
    for name, plugin in extra:
        host.register(plugin, name)
    _drop_unknown_hooks(host)
    described.save()
    return host


class _Descriptions:
    """The cached plugin descriptions of one load: used where current, rebuilt where not."""

    def __init__(self, path: Path | None, host: PluginHost) -> None:
        from agent.boot import plugin_cache

        self.path = path
        self.host = host
        self.entries = plugin_cache.read(path) if path is not None else {}
        self.changed = False

    def lazy(self, ep: EntryPoint, dist: str) -> object | None:
        """A stand-in for ``ep`` when its description is current, else None."""
        from agent.boot import plugin_cache

        entry = self.entries.get(ep.name)
        if self.path is None or entry is None or not plugin_cache.still_current(
                entry, ep.value, dist) or not plugin_cache.imports_described_copy(
                entry, ep.module):
            return None
        return LazyPlugin(ep.name, entry, ep.load, self._failed)

    def add(self, ep: EntryPoint, dist: str, plugin: object) -> None:
        from agent.boot import plugin_cache

        if self.path is None:
            return
        entry = _described_before(ep, dist)
        if entry is None:
            try:
                entry = plugin_cache.describe(plugin, ep.module, ep.value, dist)
            except Exception:  # an undescribable plugin is simply imported every run
                log.debug("plugin %s cannot be described", ep.name, exc_info=True)
                self.entries.pop(ep.name, None)
                self.changed = True
                return
            _remember_description(ep, dist, entry)
        self.entries[ep.name] = entry
        self.changed = True

    def was_guard(self, name: str) -> bool:
        """The plugin's last description had a guard hook."""
        entry = self.entries.get(name) or {}
        return any(isinstance(h, dict) and h.get("attr") == GUARD_HOOK
                   for h in entry.get("hooks", ()))

    def forget(self, name: str) -> None:
        if self.entries.pop(name, None) is not None:
            self.changed = True

    def save(self) -> None:
        from agent.boot import plugin_cache

        if self.path is not None and self.changed:
            plugin_cache.write(self.path, self.entries)

    def _failed(self, name: str, exc: BaseException) -> None:
        """A stand-in whose import failed: reported like a plugin that fails at startup, and
        described again next run."""
        status = self.host.status.get(name)
        self.host.status[name] = PluginStatus(
            name, "failed", module=status.module if status else "",
            distribution=status.distribution if status else "", error=_describe(exc),
            guard=self.was_guard(name))
        log.warning("plugin %s failed to import:\n%s", name, traceback.format_exc())
        self.forget(name)
        self.save()


#: The descriptions this process made, by entry point name, value and distribution: a later
#: load in the same process whose cache file lacks the entry (a second plugin host of an
#: embedder; the test suite's in-process runs, each with a new state dir) takes it from here
#: instead of describing the plugin again (about 2 ms a plugin, 30 of them a run).  An entry
#: is used only while :func:`agent.boot.plugin_cache.still_current` holds for it, as the
#: file's entries are, and only for the module file it was made from.
_DESCRIBED: dict[tuple[str, str, str], dict[str, Any]] = {}

#: A file modified less than this before it was described may change again within the same
#: mtime tick, unseen by :func:`agent.boot.plugin_cache.still_current`: not remembered.
_SETTLED_NS = 2_000_000_000


def _described_before(ep: EntryPoint, dist: str) -> dict[str, Any] | None:
    """This process's description of ``ep`` if its files are as they were then."""
    from agent.boot import plugin_cache

    entry = _DESCRIBED.get((ep.name, ep.value, dist))
    if entry is None:
        return None
    origin = getattr(sys.modules.get(ep.module), "__file__", None)
    if origin not in plugin_cache.key_files(entry) or not plugin_cache.still_current(
            entry, ep.value, dist):
        # another copy of the module (another site on the path), or its files changed
        _DESCRIBED.pop((ep.name, ep.value, dist), None)
        return None
    return entry


def _remember_description(ep: EntryPoint, dist: str, entry: dict[str, Any]) -> None:
    from agent.boot import plugin_cache

    files = plugin_cache.key_files(entry)
    settled = time.time_ns() - _SETTLED_NS
    if files and all(mtime < settled for mtime, _size in files.values()):
        _DESCRIBED[(ep.name, ep.value, dist)] = entry


def _drop_unknown_hooks(host: PluginHost) -> None:
    """``check_pending`` with recovery: a plugin implementing a misspelled hook is reported
    as failed and unregistered, and the rest carry on."""
    while True:
        try:
            host.pm.check_pending()
            return
        except pluggy.PluginValidationError as exc:
            bad = getattr(exc, "plugin", None)
            bad_name = host.pm.get_name(bad) if bad is not None else None
            if not bad_name:
                raise
            host.pm.unregister(bad)
            host.status[bad_name] = PluginStatus(bad_name, "failed", error=_describe(exc),
                                                 guard=_has_guard(bad))


#: The hook that makes a plugin a guard.
GUARD_HOOK = "agent_guard_tool_call"


def _has_guard(plugin: object) -> bool:
    """``plugin`` defines the guard hook, or a hook named like one (a misspelt
    ``agent_guard_*`` is a guard that would never run)."""
    try:
        return any(attr.startswith("agent_guard") for attr in dir(plugin))
    except Exception:
        return True  # it cannot even be looked at: assume the worst


def _declares_guard(module: str) -> bool:
    """The source of ``module`` (found without running any of it) names the guard hook: a
    plugin that failed to import is a guard when its own text says so."""
    from importlib.machinery import PathFinder

    path: Any = None
    spec = None
    for part in module.split("."):
        spec = PathFinder.find_spec(part, path)
        if spec is None:
            return False
        path = spec.submodule_search_locations
    origin = getattr(spec, "origin", None)
    try:
        text = Path(origin).read_text(errors="replace") if origin else ""
    except OSError:
        return False
    return "agent_guard" in text


def _guard_problem(pm: pluggy.PluginManager, plugin: object) -> str | None:
    """Why ``plugin``'s guard hook cannot be used (it is ``async def``), or None."""
    for impl in pm.hook.agent_guard_tool_call.get_hookimpls():
        if impl.plugin is plugin:
            problem = async_guard_problem(impl.function)
            if problem is not None:
                return problem
    return None


def async_guard_problem(function: Callable[..., Any]) -> str | None:
    """Why a guard implementation cannot be used, or None.

    Hooks are synchronous (pluggy never awaits), so an ``async def`` guard would return a
    coroutine that nobody runs, and its checks would never happen.
    """
    if inspect.iscoroutinefunction(function) or inspect.isasyncgenfunction(function):
        return ("its agent_guard_tool_call is async def, but guards must be plain functions "
                "(hooks are synchronous; a coroutine would never run, so its checks would "
                "never happen); the plugin was not loaded")
    return None


def _describe(exc: BaseException) -> str:
    text = str(exc).strip() or type(exc).__name__
    return f"{type(exc).__name__}: {text}" if type(exc).__name__ not in text else text
