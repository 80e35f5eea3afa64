"""Refuses reads and writes of secrets (.env files, keys, credentials) by any tool.

The policy itself is the core's (:mod:`agent.contain.secrets`): the file and git tools apply it to
what they read as a second wall, and the sandbox hides the same files from commands.  This
guard applies it to every call's effects, so a third-party tool that reads or writes a
secret path is refused before it runs, whatever it is called.
"""

from __future__ import annotations

from agent import Verdict, hookimpl
from agent.contain.secrets import policy_for, why_secret

__all__ = ["why_secret", "agent_guard_tool_call"]

ADVICE = "Tell the user what to put there and let them write it."


def _policy(session):
    config = getattr(session, "config", None)
    return policy_for(config, getattr(session, "workspace", None))


@hookimpl
def agent_guard_tool_call(call, effects, session):
    """Deny any call that would read, write or delete a secret path (as written, or where a
    symlink leads), whatever the tool; only the user's ``secrets_allow`` opens one."""
    if not (effects.reads or effects.changed_paths):
        return None
    policy = _policy(session)
    for path in effects.changed_paths:
        verdict = policy.check(path)
        if verdict:
            via = "" if verdict.spelling == path else f", which leads to {verdict.spelling}"
            return Verdict.deny(f"refusing to write {path}{via} ({verdict.why}). {ADVICE}",
                                "secrets")
    for path in effects.reads:
        verdict = policy.check(path)
        if verdict:
            return Verdict.deny(verdict.message("read"), "secrets")
    return None
