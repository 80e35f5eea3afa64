"""OAuth for Streamable HTTP servers (``auth = "oauth"``), through the SDK's client auth.

The SDK's :class:`mcp.client.auth.OAuthClientProvider` does discovery, dynamic client
registration, PKCE, the code exchange and refreshes. agent gives it:

- a token file per server, ``<state dir>/mcp/oauth/<server>.json``, written atomically with
  mode 0600 in a 0700 directory (tokens and the registered client), **bound to where they were
  issued**: the server's origin and resource URL are stored with them, and a server whose URL
  now differs (another origin, another path) gets no token and no client and is signed in
  again, so a token never follows a server name to a new URL;
- never a token over plain ``http`` except to a loopback address (:func:`transport_problem`);
- the browser step: the authorisation URL is opened with :mod:`webbrowser` (which honours
  ``$BROWSER``) and printed, and a one-shot listener on 127.0.0.1 receives the redirect;
- no browser where nobody can use one: a headless run with no valid token fails the
  connection with ``run agent mcp login NAME``.
"""

from __future__ import annotations

import asyncio
import ipaddress
import json
import logging
import os
import socket
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

from agent import atomic_write

log = logging.getLogger("agent.mcp")

#: How long the browser step may take before the login gives up.
LOGIN_TIMEOUT = 300.0


class LoginRequired(Exception):
    """No usable token and no way to ask the user here."""


def token_path(state_dir: Path, server: str) -> Path:
    return Path(state_dir) / "mcp" / "oauth" / f"{server}.json"


_DEFAULT_PORTS = {"http": 80, "https": 443}


def _is_loopback(host: str) -> bool:
    host = host.strip("[]").lower()
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def binding(url: str) -> dict[str, str]:
    """Where a token for ``url`` belongs: its origin (``scheme://host:port``, lower-cased,
    default port left out) and its resource URL (the origin and the path, no fragment)."""
    parts = urlsplit(url.strip())
    scheme = parts.scheme.lower()
    host = (parts.hostname or "").lower()
    if ":" in host:
        host = f"[{host}]"
    try:
        port = parts.port
    except ValueError:
        port = None
    origin = f"{scheme}://{host}" + (f":{port}" if port and port != _DEFAULT_PORTS.get(scheme)
                                     else "")
    resource = origin + (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    return {"origin": origin, "resource": resource}


def transport_problem(url: str) -> str | None:
    """Why a token must not be sent to ``url`` (None when it may): only ``https``, or plain
    ``http`` to a loopback address, where nothing crosses a network."""
    parts = urlsplit(url.strip())
    scheme = parts.scheme.lower()
    if scheme == "https" or (scheme == "http" and _is_loopback(parts.hostname or "")):
        return None
    return (f'auth = "oauth" needs an https URL (or a loopback address): {url} would send the '
            "sign-in token unencrypted, so it is not sent")


class TokenFile:
    """The SDK's ``TokenStorage`` over one JSON file, private to the user, bound to ``url``:
    what was saved for another origin or resource URL reads as nothing, and writing replaces
    it (tokens and registered client together)."""

    def __init__(self, path: Path, url: str = "") -> None:
        self.path = path
        self.binding = binding(url)

    def saved_for(self) -> str | None:
        """The resource URL the saved sign-in was made for when it is not this server's
        (``"an unknown URL"`` for a file from before tokens were bound); None when it is, or
        when nothing is saved."""
        data = self._read()
        if not data or data.get("bound") == self.binding:
            return None
        bound = data.get("bound")
        return str(bound.get("resource")) if isinstance(bound, dict) else "an unknown URL"

    def _bound(self) -> dict[str, Any]:
        data = self._read()
        return data if data.get("bound") == self.binding else {}

    def _read(self) -> dict[str, Any]:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        return data if isinstance(data, dict) else {}

    def _write(self, key: str, value: Any) -> None:
        data = self._bound()  # what another URL's sign-in left is dropped, not merged
        data["bound"] = self.binding
        data[key] = value
        self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        os.chmod(self.path.parent, 0o700)
        atomic_write(self.path, json.dumps(data, indent=1), mode=0o600)

    async def get_tokens(self) -> Any:
        from mcp.shared.auth import OAuthToken

        raw = self._bound().get("tokens")
        return OAuthToken.model_validate(raw) if isinstance(raw, dict) else None

    async def set_tokens(self, tokens: Any) -> None:
        self._write("tokens", tokens.model_dump(mode="json", exclude_none=True))

    async def get_client_info(self) -> Any:
        from mcp.shared.auth import OAuthClientInformationFull

        raw = self._bound().get("client")
        return OAuthClientInformationFull.model_validate(raw) if isinstance(raw, dict) else None

    async def set_client_info(self, client_info: Any) -> None:
        self._write("client", client_info.model_dump(mode="json", exclude_none=True))

    def registered_port(self) -> int | None:
        """The callback port of the client registered earlier (it must be reused)."""
        uris = (self._bound().get("client") or {}).get("redirect_uris") or []
        try:
            return urlsplit(str(uris[0])).port if uris else None
        except ValueError:
            return None


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class Callback:
    """A one-shot listener on 127.0.0.1 that takes the authorisation redirect."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.result: asyncio.Future[Any] | None = None
        self._server: asyncio.AbstractServer | None = None

    @property
    def uri(self) -> str:
        return f"http://127.0.0.1:{self.port}/callback"

    async def start(self) -> None:
        self.result = asyncio.get_running_loop().create_future()
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", self.port)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            request = (await asyncio.wait_for(reader.readline(), 10)).decode("latin-1")
            target = request.split(" ")[1] if request.count(" ") >= 2 else "/"
            query = parse_qs(urlsplit(target).query)
            ok = "code" in query
            body = (b"agent is signed in; you can close this tab." if ok else
                    b"agent did not get an authorisation code.")
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: "
                         + str(len(body)).encode() + b"\r\nConnection: close\r\n\r\n" + body)
            await writer.drain()
            if self.result is not None and not self.result.done():
                from mcp.shared.auth import AuthorizationCodeResult

                if ok:
                    self.result.set_result(AuthorizationCodeResult(
                        code=query["code"][0], state=(query.get("state") or [None])[0]))
                else:
                    error = (query.get("error") or ["no code"])[0]
                    self.result.set_exception(LoginRequired(f"the sign-in failed: {error}"))
        except (OSError, TimeoutError, IndexError):
            pass
        finally:
            writer.close()

    async def wait(self) -> Any:
        assert self.result is not None
        try:
            return await asyncio.wait_for(self.result, LOGIN_TIMEOUT)
        finally:
            if self._server is not None:
                self._server.close()


def make_auth(server: Any, state_dir: Path, *, interactive: bool,
              say: Callable[[str], None] | None = None) -> Any:
    # ``say`` shows the sign-in URL: stderr for ``agent mcp login``; the log under the
    # full-screen UI, where nothing may write to the terminal (the browser still opens).
    """The httpx auth for ``server``: tokens from its file, a browser login when needed and
    ``interactive``, otherwise :class:`LoginRequired`."""
    from mcp.client.auth import OAuthClientProvider
    from mcp.shared.auth import OAuthClientMetadata

    problem = transport_problem(server.url)
    if problem:
        raise LoginRequired(f"mcp server {server.name}: {problem}")
    storage = TokenFile(token_path(state_dir, server.name), server.url)
    callback = Callback(storage.registered_port() or _free_port())
    moved = storage.saved_for()

    async def redirect(url: str) -> None:
        again = (f" again (the saved sign-in was for {moved}, the server is now "
                 f"{storage.binding['resource']})" if moved else "")
        if not interactive:
            raise LoginRequired(f"mcp server {server.name} needs you to sign in{again}: run "
                                f"agent mcp login {server.name}")
        await callback.start()
        (say or _log)(f"Sign in to the MCP server {server.name}{again}: {url}")
        # On a thread: a browser command may block until it exits, and the redirect it
        # makes must reach the listener on this loop meanwhile.
        threading.Thread(target=_open_browser, args=(url,), daemon=True).start()

    metadata = OAuthClientMetadata(
        client_name="agent", redirect_uris=[callback.uri], response_types=["code"],
        grant_types=["authorization_code", "refresh_token"], token_endpoint_auth_method="none")
    return OAuthClientProvider(server_url=server.url, client_metadata=metadata, storage=storage,
                               redirect_handler=redirect, callback_handler=callback.wait)


def _open_browser(url: str) -> None:
    import webbrowser

    try:
        webbrowser.open(url)
    except Exception as exc:  # noqa: BLE001 - the printed URL still works
        log.info("could not open a browser: %s", exc)


def stderr(text: str) -> None:
    print(f"agent: {text}", file=sys.stderr, flush=True)


def _log(text: str) -> None:
    log.warning("%s", text)
