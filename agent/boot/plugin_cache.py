"""The plugin description cache: what each plugin contributes, without importing it.

Importing every plugin costs far more than running all their hooks, and most runs need only
some of them (a provider that is not selected, MCP with no server configured).  So the first
run imports each plugin once and records a *description* of it, derived from the module
itself: every hook implementation with its pluggy options and argument names, the options
``agent_addoption`` declares, and the registrations of hooks that do not depend on the config
(providers, CLI subcommands).  Later runs register a stand-in built from the description
(:mod:`agent.boot.lazy_plugins`) and import the plugin when one of its hooks is first called.

An entry is keyed by the entry point, its distribution's name and version, and the size and
mtime of every file of the plugin's module (and of the directories holding them, so a new
file counts); any change rebuilds that entry.  The file lives in the state dir, 0600.  A file
that is not ours (another owner, group or other bits set), does not parse, or has an entry of
the wrong shape is never trusted: the affected plugins are imported and described again.
"""

from __future__ import annotations

import inspect
import json
import keyword
import os
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pluggy

from agent.boot.cli_help import normalise_usage

#: Bumped when the shape of an entry changes, so an old file is rebuilt, never misread.
FORMAT = 6

#: Registration hooks whose contributions are recorded (when the plugin's implementation
#: does not read the config): replaying them needs no import.
RECORDED = ("agent_addoption", "agent_register_providers", "agent_register_cli_commands",
            "agent_register_tools")

#: The module attribute where a plugin says when it has nothing to do (see docs/plugins.md).
IDLE_ATTRIBUTE = "AGENT_IDLE_WHEN"


class NotRecordable(Exception):
    """A contribution that cannot be written down (it reads the config, or holds objects
    that are not plain data): the hook imports its plugin when called."""


# ---- the file -------------------------------------------------------------------------------

def read(path: Path) -> dict[str, dict[str, Any]]:
    """The cached entries by plugin name; empty when the file is missing, not ours or
    malformed (then everything is described again)."""
    from agent.contain.private import read_private

    raw = read_private(path)  # someone else could have written it: it decides which hooks run
    if raw is None:
        return {}
    try:
        data = json.loads(raw)
    except ValueError:
        return {}
    if not isinstance(data, dict) or data.get("format") != FORMAT \
            or data.get("python") != _python() or not isinstance(data.get("plugins"), dict):
        return {}
    return {name: entry for name, entry in data["plugins"].items()
            if isinstance(name, str) and well_formed(entry)}


#: The entries last written and their text: a process that writes the same entries again
#: (a load with a new state dir takes this process's descriptions, agent.boot.plugins) reuses
#: the text, as long as every entry is the very object it was made from.  Entries are never
#: changed once made (a changed plugin gets a new one).
_last_written: tuple[dict[str, dict[str, Any]], str] | None = None


def write(path: Path, entries: dict[str, dict[str, Any]]) -> None:
    """Replace the cache file (0600, atomically); a failure only costs the next run time."""
    from agent.contain.private import private_dir
    from agent.lib.atomic import AtomicWriteError, atomic_write

    global _last_written
    last = _last_written
    if last is not None and last[0].keys() == entries.keys() \
            and all(last[0][name] is entry for name, entry in entries.items()):
        payload = last[1]
    else:
        payload = json.dumps({"format": FORMAT, "python": _python(), "plugins": entries},
                             sort_keys=True, separators=(",", ":"))
        _last_written = dict(entries), payload
    try:
        private_dir(path.parent)
        atomic_write(path, payload, mode=0o600, fsync=False)
    except (OSError, AtomicWriteError):
        pass


def _python() -> str:
    return f"{sys.implementation.name}-{sys.version_info[0]}.{sys.version_info[1]}"


# ---- keys -----------------------------------------------------------------------------------

def key_of(value: str, dist: str, files: dict[str, list[int]]) -> dict[str, Any]:
    return {"value": value, "dist": dist, "files": files}


def key_files(entry: dict[str, Any]) -> dict[str, list[int]]:
    """``path -> [mtime_ns, size]`` of the files ``entry`` was described from."""
    files: dict[str, list[int]] = entry["key"]["files"]
    return files


def module_files(module_name: str) -> dict[str, list[int]]:
    """``path -> [mtime_ns, size]`` for the files (and directories) of an imported module:
    a package's whole tree, or the one file."""
    module = sys.modules.get(module_name)
    origin = getattr(module, "__file__", None)
    if not origin:
        return {}
    found: dict[str, list[int]] = {}
    root = Path(origin).parent if hasattr(module, "__path__") else None
    paths: Iterator[str]
    if root is None:
        paths = iter([origin])
    else:
        paths = _tree(root)
    for path in paths:
        try:
            info = os.stat(path)
        except OSError:
            continue
        found[path] = [info.st_mtime_ns, info.st_size]
    return found


def _tree(root: Path) -> Iterator[str]:
    for directory, dirs, names in os.walk(root):
        dirs[:] = [d for d in dirs if d != "__pycache__" and not d.startswith(".")]
        yield directory
        for name in names:
            if not name.endswith((".pyc", ".pyo")):
                yield os.path.join(directory, name)


def still_current(entry: dict[str, Any], value: str, dist: str) -> bool:
    """Whether ``entry`` describes the entry point ``value`` of ``dist`` as it is on disk."""
    key = entry["key"]
    if key["value"] != value or key["dist"] != dist or not key["files"]:
        return False
    for path, (mtime, size) in key["files"].items():
        try:
            info = os.stat(path)
        except OSError:
            return False
        if info.st_mtime_ns != mtime or info.st_size != size:
            return False
    return True


def imports_described_copy(entry: dict[str, Any], module_name: str) -> bool:
    """Whether importing ``module_name`` now would load a file ``entry`` was described from.

    :func:`still_current` sees that the described files are unchanged, not that they are
    still the ones imported: another copy of the same distribution (same name and version)
    put earlier on the path would be imported instead, and its tools and hooks are not the
    ones described.  The module is looked up the way ``import`` would (every finder of
    ``sys.meta_path``, each parent package's path) without running any of its code; a module
    that cannot be found that way counts as not described (it is then imported and
    described as usual)."""
    origin = _origin_without_import(module_name)
    return origin is not None and origin in key_files(entry)


def _origin_without_import(module_name: str) -> str | None:
    search: Any = None  # sys.path, for a top-level name
    spec: Any = None
    parts = module_name.split(".")
    for depth in range(1, len(parts) + 1):
        name = ".".join(parts[:depth])
        module = sys.modules.get(name)
        if module is not None:
            spec = getattr(module, "__spec__", None)
            search = getattr(module, "__path__", None)
        else:
            spec = _find_spec(name, search)
            search = spec.submodule_search_locations if spec is not None else None
        if spec is None or (depth < len(parts) and search is None):
            return None
    origin = getattr(spec, "origin", None)
    return origin if isinstance(origin, str) else None


def _find_spec(name: str, search: Any) -> Any:
    for finder in sys.meta_path:
        find = getattr(finder, "find_spec", None)
        if find is None:
            continue
        try:
            spec = find(name, search)
        except Exception:  # a finder that cannot answer: the module counts as not found
            return None
        if spec is not None:
            return spec
    return None


def plain_parameter(name: object) -> bool:
    """Whether ``name`` can be a parameter of a generated stub: an identifier, no keyword."""
    return isinstance(name, str) and name.isidentifier() and not keyword.iskeyword(name)


def well_formed(entry: Any) -> bool:
    """Whether ``entry`` has the shape :func:`describe` writes (anything else is rebuilt)."""
    try:
        key = entry["key"]
        assert isinstance(key["value"], str) and isinstance(key["dist"], str)
        for path, pair in key["files"].items():
            assert isinstance(path, str) and len(pair) == 2
            assert all(isinstance(n, int) for n in pair)
        assert isinstance(entry["module"], str) and isinstance(entry["doc"], str)
        for hook in entry["hooks"]:
            assert isinstance(hook["attr"], str) and isinstance(hook["opts"], dict)
            assert hook["kind"] in ("plain", "async", "generator", "asyncgen")
            assert all(plain_parameter(a) for a in hook["params"])
            assert len(set(hook["params"])) == len(hook["params"])
            assert isinstance(hook["self"], bool)
        for name, calls in entry["recorded"].items():
            assert name in RECORDED and isinstance(calls, list)
        idle = entry["idle"]
        assert idle is None or _idle_problem(idle) is None
    except (AssertionError, KeyError, TypeError, ValueError, AttributeError):
        return False
    return True


# ---- describing a plugin --------------------------------------------------------------------

def describe(plugin: object, module_name: str, value: str, dist: str) -> dict[str, Any]:
    """The entry for an imported ``plugin`` (the entry point's loaded object)."""
    parser = pluggy.PluginManager("agent")
    hooks: list[dict[str, Any]] = []
    for attr in dir(plugin):
        try:
            opts = parser.parse_hookimpl_opts(plugin, attr)
        except Exception:
            opts = None
        if opts is None:
            continue
        function = getattr(plugin, attr)
        params = [p.name for p in inspect.signature(function).parameters.values()]
        hooks.append({"attr": attr, "opts": {k: v for k, v in dict(opts).items()},
                      "kind": _kind(function), "params": params,
                      "self": inspect.ismethod(function)})
    doc = (getattr(plugin, "__doc__", "") or "").strip().splitlines()
    idle = getattr(plugin, IDLE_ATTRIBUTE, None)
    if idle is not None and _idle_problem(idle) is not None:
        idle = None  # a malformed declaration only costs laziness, never behaviour
    recorded: dict[str, list[Any]] = {}
    entry: dict[str, Any] = {
        "key": key_of(value, dist, module_files(module_name)),
        "module": getattr(plugin, "__name__", type(plugin).__name__),
        "doc": doc[0] if doc else "",
        "hooks": hooks,
        "recorded": recorded,
        "idle": _plain(idle) if idle is not None else None,
    }
    for hook in hooks:
        name = hook["opts"].get("specname") or hook["attr"]
        if name in RECORDED and not hook["opts"].get("hookwrapper") \
                and not hook["opts"].get("wrapper") and hook["kind"] == "plain":
            try:
                recorded[name] = record(name, getattr(plugin, hook["attr"]))
            except NotRecordable:
                pass
    json.dumps(entry)  # every value above is plain data; fail here, not when writing
    return entry


def _kind(function: Callable[..., Any]) -> str:
    if inspect.isasyncgenfunction(function):
        return "asyncgen"
    if inspect.iscoroutinefunction(function):
        return "async"
    if inspect.isgeneratorfunction(function):
        return "generator"
    return "plain"


def _idle_problem(idle: Any) -> str | None:
    if not isinstance(idle, dict) or set(idle) - {"config", "absent"}:
        return "AGENT_IDLE_WHEN is a dict with 'config' and/or 'absent'"
    config = idle.get("config", {})
    absent = idle.get("absent", [])
    if not isinstance(config, dict) or not all(isinstance(k, str) for k in config):
        return "AGENT_IDLE_WHEN['config'] maps config keys to their idle values"
    if not isinstance(absent, (list, tuple)) or not all(isinstance(p, str) for p in absent):
        return "AGENT_IDLE_WHEN['absent'] lists paths relative to the config dir"
    try:
        json.dumps(config)
    except (TypeError, ValueError):
        return "AGENT_IDLE_WHEN['config'] values are plain data"
    return None


def _plain(idle: dict[str, Any]) -> dict[str, Any]:
    return {"config": dict(idle.get("config", {})), "absent": list(idle.get("absent", []))}


# ---- recording registrations ----------------------------------------------------------------

class _NoConfig:
    """Passed as ``config`` while recording: touching it means the contribution depends on
    the config, so it is not recorded."""

    def __getattr__(self, name: str) -> Any:
        raise NotRecordable(f"reads config.{name}")

    def __bool__(self) -> bool:
        raise NotRecordable("tests the config")


NO_CONFIG = _NoConfig()


def record(hook_name: str, function: Callable[..., Any]) -> list[Any]:
    """Call ``function`` with recording stand-ins; the calls it made, as plain data."""
    calls: list[Any] = []
    if hook_name == "agent_addoption":
        class Options:
            @staticmethod
            def add(option: Any) -> None:
                calls.append(encode_dataclass(option, allow_callables=False))

        _call(function, options=Options())
    elif hook_name == "agent_register_providers":
        def register_spec(spec: Any) -> None:
            calls.append(encode_dataclass(spec, allow_callables=True))

        _call(function, register=register_spec, config=NO_CONFIG)
    elif hook_name == "agent_register_tools":
        # A tool's name, description and schema are what a turn needs of it until the model
        # calls it: its run, effects and describe import the plugin when called.
        def register_tool(tool: Any) -> None:
            calls.append(encode_dataclass(tool, allow_callables=True))

        _call(function, register=register_tool, config=NO_CONFIG)
    elif hook_name == "agent_register_cli_commands":
        def register_cli(name: str, handler: Any, summary: str = "", usage: Any = ()) -> None:
            if not isinstance(name, str) or not isinstance(summary, str) \
                    or not callable(handler):
                raise NotRecordable("unusual registration")
            try:
                rows = [list(row) for row in normalise_usage(usage)]
            except ValueError:
                raise NotRecordable("unusual usage lines") from None
            calls.append({"name": name, "summary": summary, "usage": rows})

        _call(function, register=register_cli)
    else:
        raise NotRecordable(hook_name)
    return calls


def _call(function: Callable[..., Any], **available: Any) -> None:
    names = [p.name for p in inspect.signature(function).parameters.values()]
    if any(n not in available for n in names):
        raise NotRecordable("unexpected arguments")
    try:
        function(**{n: available[n] for n in names})
    except NotRecordable:
        raise
    except Exception as exc:  # it raises when called for real too: let it, then
        raise NotRecordable(str(exc)) from None


def encode_dataclass(obj: Any, *, allow_callables: bool) -> dict[str, Any]:
    """``{"type": "module:Class", "fields": {...}, "lazy": [names]}``: plain fields kept,
    callables (when allowed) named in ``lazy`` to be fetched from the real object later."""
    import dataclasses

    if not dataclasses.is_dataclass(obj) or isinstance(obj, type):
        raise NotRecordable("not a dataclass")
    cls = type(obj)
    if not cls.__module__.startswith("agent."):
        raise NotRecordable("not one of agent's types")
    fields: dict[str, Any] = {}
    lazy: list[str] = []
    for field in dataclasses.fields(obj):
        if not field.init:
            raise NotRecordable(f"{field.name} is not set by the constructor")
        value = getattr(obj, field.name)
        if callable(value) and not isinstance(value, type):
            if not allow_callables:
                raise NotRecordable(f"{field.name} is callable")
            lazy.append(field.name)
            continue
        fields[field.name] = encode_value(value)
    return {"type": f"{cls.__module__}:{cls.__qualname__}", "fields": fields, "lazy": lazy}


def encode_value(value: Any) -> Any:
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        if value != value or value in (float("inf"), float("-inf")):
            raise NotRecordable("not a finite float")
        return value
    if isinstance(value, tuple):
        return {"tuple": [encode_value(v) for v in value]}
    if isinstance(value, list):
        return {"list": [encode_value(v) for v in value]}
    if isinstance(value, dict) and all(isinstance(k, str) for k in value):
        return {"dict": {k: encode_value(v) for k, v in value.items()}}
    import dataclasses

    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {"dataclass": encode_dataclass(value, allow_callables=False)}
    raise NotRecordable(f"{type(value).__name__} is not plain data")


def decode_value(value: Any) -> Any:
    if isinstance(value, dict):
        if "tuple" in value:
            return tuple(decode_value(v) for v in value["tuple"])
        if "list" in value:
            return [decode_value(v) for v in value["list"]]
        if "dataclass" in value:
            call = value["dataclass"]
            cls = decode_type(call["type"])
            return cls(**{k: decode_value(v) for k, v in call["fields"].items()})
        return {k: decode_value(v) for k, v in value["dict"].items()}
    return value


def decode_type(name: str) -> type:
    """The class named ``module:Qualname`` (only agent's own modules are looked in)."""
    import importlib

    module_name, _, qualname = name.partition(":")
    if not module_name.startswith("agent.") or not qualname.isidentifier():
        raise NotRecordable(name)
    cls = getattr(importlib.import_module(module_name), qualname, None)
    if not isinstance(cls, type):
        raise NotRecordable(name)
    return cls
