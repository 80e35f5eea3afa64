"""MCP server settings: reading ``[mcp_servers.NAME]`` tables, and validating new entries.

No MCP SDK here: this module is imported at startup and by ``agent mcp add``.
"""

from __future__ import annotations

import hashlib
import json
import re
import shlex
from dataclasses import dataclass, field
from typing import Any

DEFAULT_CALL_TIMEOUT = 60.0
DEFAULT_STARTUP_TIMEOUT = 30.0

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9-]*$")


@dataclass(frozen=True)
class ServerConfig:
    """One configured server.  ``kind`` is ``local`` (a command over stdio) or ``remote``
    (a URL: Streamable HTTP, or SSE when ``transport == "sse"``).  ``problem`` is set when the
    table cannot be used; such a server is reported as failed and never started."""

    name: str
    kind: str = "local"
    command: str = ""
    args: tuple[str, ...] = ()
    env: tuple[tuple[str, str], ...] = ()
    cwd: str | None = None
    url: str = ""
    transport: str = "http"
    headers: tuple[tuple[str, str], ...] = ()
    #: ``oauth``: sign in through the server's OAuth authorisation server (remote only)
    auth: str = ""
    timeout: float = DEFAULT_CALL_TIMEOUT
    startup_timeout: float = DEFAULT_STARTUP_TIMEOUT
    #: inherited variables the server still gets although they look like credentials
    env_passthrough: tuple[str, ...] = ()
    #: "" (not sandboxed), "workspace-write" or "read-only" (``sandbox = true`` is the first)
    sandbox: str = ""
    network: bool = False  # a sandboxed server's network access
    problem: str = ""
    raw: dict[str, Any] = field(default_factory=dict, compare=False, hash=False, repr=False)

    @property
    def where(self) -> str:
        """The command line or the URL, as shown by ``/mcp``."""
        if self.kind == "remote":
            return self.url
        if not self.command:
            return ""
        return " ".join(shlex.quote(p) for p in (self.command, *self.args))

    def fingerprint(self) -> str:
        """A hash of everything that decides which tools the server offers (the tools cache
        key).  Timeouts are left out; secrets in env and headers go in only hashed."""
        data = {"kind": self.kind, "command": self.command, "args": list(self.args),
                "env": sorted(self.env), "cwd": self.cwd, "url": self.url,
                "transport": self.transport, "headers": sorted(self.headers)}
        return hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()[:16]


def parse_servers(table: Any) -> dict[str, ServerConfig]:
    """``config.get("mcp_servers")`` → servers by name.  Hand-written entries skip the
    wizard's checks, but an entry that cannot work carries a ``problem`` instead of
    stopping startup."""
    if not isinstance(table, dict):
        return {}
    return {str(name): parse_server(str(name), value) for name, value in table.items()}


def parse_server(name: str, value: Any) -> ServerConfig:
    """One ``[mcp_servers.NAME]`` table → :class:`ServerConfig` (with ``problem`` if bad)."""
    def bad(message: str) -> ServerConfig:
        raw = value if isinstance(value, dict) else {}
        url = raw.get("url")
        return ServerConfig(name=name, kind="remote" if "url" in raw else "local",
                            url=url if isinstance(url, str) else "", problem=message, raw=raw)

    if "__" in name:
        return bad('the name may not contain "__" (it separates server and tool names)')
    if not isinstance(value, dict):
        return bad("the entry must be a table with a command or a url")
    try:
        timeout = _seconds(value, "timeout", DEFAULT_CALL_TIMEOUT)
        startup = _seconds(value, "startup_timeout", DEFAULT_STARTUP_TIMEOUT)
    except ValueError as exc:
        return bad(str(exc))
    if "url" in value:
        url = value["url"]
        if not isinstance(url, str) or not url.startswith(("http://", "https://")):
            return bad("url must start with http:// or https://")
        transport = value.get("type", "http")
        if transport not in ("http", "sse"):
            return bad(f'type must be "http" or "sse", not {transport!r}')
        headers = value.get("headers", {})
        if not _str_map(headers):
            return bad("headers must be a table of strings")
        auth = value.get("auth", "")
        if auth not in ("", "oauth"):
            return bad(f'auth must be "oauth" (or left out), not {auth!r}')
        return ServerConfig(name=name, kind="remote", url=url, transport=transport,
                            headers=tuple(sorted(headers.items())), auth=auth,
                            timeout=timeout, startup_timeout=startup, raw=value)
    command = value.get("command")
    if not isinstance(command, str) or not command.strip():
        return bad("a local server needs a command (or a remote one a url)")
    args = value.get("args", [])
    if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
        return bad("args must be a list of strings")
    env = value.get("env", {})
    if not _str_map(env):
        return bad("env must be a table of strings")
    cwd = value.get("cwd")
    if cwd is not None and not isinstance(cwd, str):
        return bad("cwd must be a string")
    passthrough = value.get("env_passthrough", [])
    if not isinstance(passthrough, list) or not all(isinstance(n, str) for n in passthrough):
        return bad("env_passthrough must be a list of variable names")
    sandbox = value.get("sandbox", False)
    if sandbox is True:
        sandbox = "workspace-write"
    elif sandbox is False:
        sandbox = ""
    if sandbox not in ("", "workspace-write", "read-only"):
        return bad('sandbox must be true, false, "workspace-write" or "read-only", '
                   f"not {sandbox!r}")
    network = value.get("network", False)
    if not isinstance(network, bool):
        return bad("network must be true or false")
    return ServerConfig(name=name, kind="local", command=command, args=tuple(args),
                        env=tuple(sorted(env.items())), cwd=cwd, timeout=timeout,
                        startup_timeout=startup, env_passthrough=tuple(passthrough),
                        sandbox=sandbox, network=network, raw=value)


def _seconds(value: dict[str, Any], key: str, default: float) -> float:
    seconds = value.get(key, default)
    if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or seconds <= 0:
        raise ValueError(f"{key} must be a number of seconds above 0, not {seconds!r}")
    return float(seconds)


def _str_map(value: Any) -> bool:
    return isinstance(value, dict) and all(
        isinstance(k, str) and isinstance(v, str) for k, v in value.items())


def format_seconds(seconds: float) -> str:
    """``60 s``, ``0.5 s``."""
    return f"{seconds:g} s"


# ---- validation for /mcp add and `agent mcp add` ------------------------------------------


def check_name(name: str, existing: Any = ()) -> str | None:
    """The problem with a new server name, or None.  Checked as the user types."""
    name = name.strip()
    if not name:
        return "a name is required"
    if "__" in name:
        return 'the name may not contain "__" (it separates server and tool names)'
    if not _NAME.match(name):
        return "use letters, digits and hyphens only, starting with a letter or digit"
    if name in existing:
        return f'an MCP server named "{name}" is already configured'
    return None


def check_url(url: str) -> str | None:
    if not url.strip():
        return "a URL is required"
    if not url.strip().startswith(("http://", "https://")):
        return "the URL must start with http:// or https://"
    return None


def split_args(text: str) -> list[str]:
    """Arguments typed on one line: split on spaces, quoted runs kept, quotes stripped.
    Raises ValueError (an unclosed quote)."""
    try:
        return shlex.split(text)
    except ValueError as exc:
        raise ValueError(f"the arguments could not be split: {exc}") from None


def parse_headers(text: str | list[str]) -> dict[str, str]:
    """``KEY: value, OTHER: value`` (or a list of ``KEY: value``) → a dict; empty → {}.
    Raises ValueError naming the bad part."""
    parts = text if isinstance(text, list) else text.split(",")
    headers: dict[str, str] = {}
    for part in parts:
        if not part.strip():
            continue
        key, sep, value = part.partition(":")
        if not sep or not key.strip() or " " in key.strip():
            raise ValueError(f'headers look like "KEY: value, OTHER: value"; '
                             f'could not read "{part.strip()}"')
        headers[key.strip()] = value.strip()
    return headers


def new_entry(kind: str, target: str, extra: list[str] | dict[str, str] | None = None
              ) -> dict[str, Any]:
    """The table written for a new server: ``{command, args}`` or ``{url, headers}``.
    Raises ValueError with the wizard's message for bad input."""
    if kind == "local":
        if not target.strip():
            raise ValueError("a command is required")
        entry: dict[str, Any] = {"command": target.strip()}
        args = list(extra or [])
        if args:
            entry["args"] = args
        return entry
    if kind == "remote":
        problem = check_url(target)
        if problem:
            raise ValueError(problem)
        entry = {"url": target.strip()}
        headers = dict(extra or {})
        if headers:
            entry["headers"] = headers
        return entry
    raise ValueError(f'the kind must be "local" or "remote", not {kind!r}')
