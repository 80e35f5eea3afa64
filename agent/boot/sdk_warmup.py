"""Start importing the provider SDK first, on a thread, in a run that will send a request.

Importing a provider's SDK takes longer than everything else a headless run does
before its request, and none of that (plugins, the config, the store, instruction files)
needs the SDK.  So ``agent -p`` guesses the provider as soon as it has read the config file,
the way :func:`agent.boot.runtime.provider_settings` will choose it, from the provider specs the
plugin description cache recorded (no plugin is imported for it), and imports that provider's
``ProviderSpec.warm_modules`` on a daemon thread.  The provider's own
``import`` later finds the module done, or waits for the thread to finish it (the import
lock); a wrong guess costs only the import.  Never used on the way to ``--help``,
``--version`` or the first frame.

Either way the event loop never waits for an SDK import itself: before a session's first
request, :func:`import_off_loop` imports the provider's ``warm_modules`` on a worker thread
and awaits it there, so a prompt sent while the warm-up thread is still importing (or before
it began) leaves the screen drawing and the keys echoing instead of freezing on the import
lock for the 1-2 s the import takes on a loaded machine.
"""

from __future__ import annotations

import importlib
import logging
import sys
import threading
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

log = logging.getLogger("agent.sdk_warmup")

#: Standard library modules both the SDKs and agent's own code import: taken on this thread
#: first, so the two threads never wait for each other's half-imported modules.
SHARED = ("asyncio", "ssl", "json", "email.utils", "email.message", "http.client",
          "urllib.parse", "concurrent.futures", "uuid", "typing", "base64")


def recorded_providers(cache_file: Path | None) -> list[dict[str, Any]]:
    """The provider specs the plugin description cache recorded (their plain fields), read
    without importing any plugin; empty when there is no usable cache (the first run)."""
    if cache_file is None:
        return []
    from agent.boot import plugin_cache

    specs = []
    for entry in plugin_cache.read(cache_file).values():
        for call in entry.get("recorded", {}).get("agent_register_providers", []):
            fields = call.get("fields") if isinstance(call, dict) else None
            if isinstance(fields, dict) and isinstance(fields.get("name"), str):
                specs.append({k: plugin_cache.decode_value(v) for k, v in fields.items()})
    return specs


def guess_provider(argv: Sequence[str], env: Mapping[str, str],
                   file_data: Mapping[str, Any], specs: Sequence[Mapping[str, Any]]) -> str:
    """The provider this run will most likely use: ``--provider``, ``AGENT_PROVIDER``, the
    config file's ``provider``, else the one :func:`agent.contract.providers.auto_provider` would
    pick from the recorded specs (highest ``auto_priority`` whose key variable is set)."""
    for index, arg in enumerate(argv):
        if arg == "--provider" and index + 1 < len(argv):
            return argv[index + 1]
        if arg.startswith("--provider="):
            return arg.split("=", 1)[1]
    if env.get("AGENT_PROVIDER"):
        return env["AGENT_PROVIDER"]
    if isinstance(file_data.get("provider"), str):
        return str(file_data["provider"])
    ranked = sorted((s for s in specs if isinstance(s.get("auto_priority"), int)),
                    key=lambda s: (-int(s["auto_priority"]), str(s["name"])))
    keyed = [s for s in ranked if s.get("env_key") and env.get(str(s["env_key"]))]
    chosen = keyed or ranked
    return str(chosen[0]["name"]) if chosen else ""


def guess_modules(argv: Sequence[str], env: Mapping[str, str],
                  file_data: Mapping[str, Any], cache_file: Path | None) -> tuple[str, ...]:
    """The SDK modules (``ProviderSpec.warm_modules``) of the guessed provider."""
    specs = recorded_providers(cache_file)
    name = guess_provider(argv, env, file_data, specs)
    for spec in specs:
        if spec["name"] == name:
            modules = spec.get("warm_modules") or ()
            return tuple(str(m) for m in modules)
    return ()


#: Modules :func:`import_off_loop` has seen imported (or fail).  Not ``sys.modules``: a
#: module is listed there from the moment its import starts, half-initialised.
_IMPORTED: set[str] = set()


async def import_off_loop(modules: Iterable[str]) -> None:
    """Import ``modules`` (a :class:`agent.contract.providers.ProviderSpec`'s ``warm_modules``) on a
    daemon thread and wait for them there, not on the event loop.  An import another thread
    has under way (the warm-up) is waited for on that thread too, by the import lock.  A
    failed import is left for the provider to report when it imports for real.  Not the
    loop's default executor: leaving the program waits for its threads, and an import
    cannot be interrupted, so quitting mid-import would hang until it ends."""
    from agent.loop.streaming import on_daemon_thread

    for name in modules:
        if name in _IMPORTED:
            continue
        try:
            await on_daemon_thread(_import, name)
        except Exception:
            log.debug("could not import %s ahead of the request", name, exc_info=True)
        _IMPORTED.add(name)
    for thread, warming in _WARMING:
        if thread.is_alive() and set(warming) & set(modules):
            # the import it made is the one waited for above; what it does after it (let
            # the collector go, agent.lib.collector) is over before the request is made.
            # A warm-up that guessed another provider is not waited for.
            await on_daemon_thread(thread.join)


def _import(name: str) -> None:
    """Import ``name``; one that is not imported yet (no warm-up began it) with the
    collector held off and what it made frozen after, as on the warm-up thread."""
    if name in sys.modules:
        importlib.import_module(name)  # done, or under way on another thread: wait for it
        return
    from agent.lib import collector

    with collector.held():
        importlib.import_module(name)


#: The warm-up thread of this process and what it imports, once :func:`start` began one.
_WARMING: list[tuple[threading.Thread, tuple[str, ...]]] = []


def start(modules: Sequence[str]) -> threading.Thread | None:
    """Import ``modules`` (an SDK's, from :func:`guess_modules`) on a daemon thread."""
    if not modules or all(name in sys.modules for name in modules):
        return None  # nothing to do (an embedding process imported them already)

    for name in SHARED:
        importlib.import_module(name)

    from agent.lib import collector

    def work() -> None:
        # The collector stays off until the import is done, even if the turn resumes it
        # meanwhile: see agent.lib.collector.
        with collector.held():
            for name in modules:
                try:
                    importlib.import_module(name)
                except Exception:  # the provider will report it when it imports for real
                    log.debug("could not import %s ahead", name, exc_info=True)
                    return

    thread = threading.Thread(target=work, name="sdk-import", daemon=True)
    thread.start()
    _WARMING[:] = [(thread, tuple(modules))]
    return thread
