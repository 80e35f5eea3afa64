"""A guard plugin: refuse kubectl and helm commands aimed at a production context.

Guards see a call's *effects* (the paths it touches, the shell command it runs, the URLs it
fetches), never the tool's own arguments, so one guard covers every tool that runs commands.
A guard returns a ``Verdict`` (deny or ask) or None; it must be a plain (not async) function,
fast and side-effect free. Anything else it returns, an exception, or a guard slower than
``guard_timeout`` denies the call: write guards that fail closed on purpose, too.
"""

from __future__ import annotations

import shlex

from agent import Verdict, hookimpl

#: The kube contexts this team treats as production. A real plugin would read them from its
#: own config key (see ``agent_addoption`` in docs/plugins/hooks.md).
PRODUCTION = ("prod", "production")
TOOLS = ("kubectl", "helm")


def production_target(command: str) -> str | None:
    """Why ``command`` reaches a production cluster, or None. Raises ValueError when the
    command cannot be read (unbalanced quotes): the caller then asks instead of guessing."""
    words = shlex.split(command, posix=True)
    for i, word in enumerate(words):
        if word.rsplit("/", 1)[-1] not in TOOLS:
            continue
        rest = words[i + 1:]
        for j, arg in enumerate(rest):
            value = None
            if arg in ("--context", "--kube-context") and j + 1 < len(rest):
                value = rest[j + 1]
            elif arg.startswith(("--context=", "--kube-context=")):
                value = arg.split("=", 1)[1]
            if value is not None and value.lower() in PRODUCTION:
                return f"{word} against the {value} context"
    return None


@hookimpl
def agent_guard_tool_call(call, effects, session):
    if not effects.command:
        return None
    try:
        why = production_target(effects.command)
    except ValueError:
        if any(tool in effects.command for tool in TOOLS):
            return Verdict.ask("the command could not be read; check it targets no "
                               "production cluster")
        return None
    if why:
        return Verdict.deny(f"{why}: production changes go through the deploy pipeline")
    return None
