"""Start importing the provider SDK first, on a thread, in a run that will send a request.

Importing ``openai`` or ``anthropic`` takes longer than everything else a headless run does
before its request, and none of that (plugins, the config, the store, instruction files)
needs the SDK.  So ``agent -p`` guesses the provider as soon as it has read the config file,
the way :func:`agent.runtime.provider_settings` will choose it, and imports that SDK's client
and the one resource the default wire API posts to on a daemon thread.  The provider's own
``import`` later finds the module done, or waits for the thread to finish it (the import
lock); a wrong guess costs only the import.  Never used on the way to ``--help``,
``--version`` or the first frame.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping, Sequence
from typing import Any

log = logging.getLogger("agent.sdk_warmup")

#: What a provider's first request imports: the client and the one resource its wire API
#: posts to (``openai_api = "responses"`` imports the responses types, otherwise only chat's).
SDK_MODULES = {
    "openai": ("openai", "openai.resources.chat.completions"),
    "openai/responses": ("openai", "openai.resources.responses"),
    "anthropic": ("anthropic", "anthropic.resources.messages"),
}

#: Standard library modules both the SDKs and agent's own code import: taken on this thread
#: first, so the two threads never wait for each other's half-imported modules.
SHARED = ("asyncio", "ssl", "json", "email.utils", "email.message", "http.client",
          "urllib.parse", "concurrent.futures", "uuid", "typing", "base64")


def guess_provider(argv: Sequence[str], env: Mapping[str, str],
                   file_data: Mapping[str, Any]) -> str:
    """The provider this run will most likely use: ``--provider``, ``AGENT_PROVIDER``, the
    config file's ``provider``, else the first standard key present (anthropic, openai)."""
    for index, arg in enumerate(argv):
        if arg == "--provider" and index + 1 < len(argv):
            return argv[index + 1]
        if arg.startswith("--provider="):
            return arg.split("=", 1)[1]
    if env.get("AGENT_PROVIDER"):
        return env["AGENT_PROVIDER"]
    if isinstance(file_data.get("provider"), str):
        return str(file_data["provider"])
    for name, key in (("anthropic", "ANTHROPIC_API_KEY"), ("openai", "OPENAI_API_KEY")):
        if env.get(key):
            return name
    return "anthropic"


def guess_modules(argv: Sequence[str], env: Mapping[str, str],
                  file_data: Mapping[str, Any]) -> tuple[str, ...]:
    """The modules the guessed provider's first request will import."""
    provider = guess_provider(argv, env, file_data)
    if provider == "openai":
        api = env.get("AGENT_OPENAI_API") or file_data.get("openai_api")
        if api == "responses":
            provider = "openai/responses"
    return SDK_MODULES.get(provider, ())


def start(modules: Sequence[str]) -> threading.Thread | None:
    """Import ``modules`` (an SDK's, from :func:`guess_modules`) on a daemon thread."""
    if not modules:
        return None
    import importlib

    for name in SHARED:
        importlib.import_module(name)

    def work() -> None:
        for name in modules:
            try:
                importlib.import_module(name)
            except Exception:  # the provider will report it when it imports for real
                log.debug("could not import %s ahead", name, exc_info=True)
                return

    thread = threading.Thread(target=work, name="sdk-import", daemon=True)
    thread.start()
    return thread
