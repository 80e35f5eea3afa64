"""Refuses writes to secrets (.env files, keys, credentials) from any tool."""

from __future__ import annotations

import re

from agent import Verdict, hookimpl
from agent.pathparts import segments

ADVICE = "Tell the user what to put there and let them write it."

_KEY_EXTENSIONS = (".pem", ".key", ".p12", ".pfx", ".jks", ".keystore")
_SSH_KEYS = re.compile(r"^id_(rsa|ed25519|ecdsa|dsa)(\.pub)?$")
_CREDENTIAL_DOTFILES = frozenset({".npmrc", ".pypirc", ".netrc", ".pgpass"})
_CREDENTIAL_FILES = re.compile(r"^(credentials|secrets?)\.(json|ya?ml|toml|ini)$")
_SECRET_DIRS = frozenset({".aws", ".ssh", ".gnupg"})


def why_secret(parts: list[str]) -> str | None:
    """Why a path made of ``parts`` (lower-cased segments) holds secrets, or None."""
    if not parts:
        return None
    for directory in parts[:-1]:
        if directory in _SECRET_DIRS:
            return f"everything under {directory}/ is credentials"
    name = parts[-1]
    if name in _SECRET_DIRS:
        return f"{name} holds credentials"
    if (name == ".env" or name.startswith(".env.")) and name != ".env.example":
        return "environment files hold secrets"
    if name.endswith(_KEY_EXTENSIONS):
        return "keys and certificates are secrets"
    if _SSH_KEYS.match(name):
        return "SSH keys are secrets"
    if name in _CREDENTIAL_DOTFILES:
        return f"{name} holds registry or database credentials"
    if _CREDENTIAL_FILES.match(name):
        return "credentials files hold secrets"
    return None


@hookimpl
def agent_guard_tool_call(call, effects, session):
    """Deny any call that would write or delete a secrets file, whatever the tool."""
    workspace = getattr(session, "workspace", None)
    for path in effects.changed_paths:
        why = why_secret(segments(path, workspace))
        if why:
            return Verdict.deny(f"refusing to write {path} ({why}). {ADVICE}", "secrets")
    return None
