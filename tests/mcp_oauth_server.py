"""An MCP server over Streamable HTTP behind the SDK's own OAuth authorisation server.

The authorisation provider approves every request at once (it plays a user who clicks
"allow"), issues codes and bearer tokens in memory, and supports dynamic client registration,
so a client goes through discovery, registration, PKCE, the redirect and the code exchange.
``presented`` records the path and ``Authorization`` header of every request that reached
the server, whatever route it asked for: the oracle for "the token is never received by the
wrong server".
"""

from __future__ import annotations

import secrets
import time
from typing import Any

# The SDK is imported where it is used, not here: every pytest worker imports this module
# when it collects tests/plugins/test_mcp_oauth.py, also the ones that then run no MCP test
# (the e2e lane's), and importing mcp costs about 2 s of CPU.


class ApprovingProvider:
    def __init__(self) -> None:
        self.clients: dict[str, Any] = {}
        self.codes: dict[str, Any] = {}  # code -> mcp's AuthorizationCode
        self.tokens: dict[str, Any] = {}  # token -> mcp's AccessToken
        self.authorized = 0
        self.presented: list[tuple[str, str]] = []  # (path, Authorization header)

    async def get_client(self, client_id):
        return self.clients.get(client_id)

    async def register_client(self, info):
        self.clients[info.client_id] = info

    async def authorize(self, client, params):
        from mcp.server.auth.provider import AuthorizationCode, construct_redirect_uri

        self.authorized += 1
        code = secrets.token_urlsafe(16)
        self.codes[code] = AuthorizationCode(
            code=code, client_id=client.client_id, redirect_uri=params.redirect_uri,
            redirect_uri_provided_explicitly=params.redirect_uri_provided_explicitly,
            code_challenge=params.code_challenge, scopes=params.scopes or [],
            expires_at=time.time() + 300, resource=params.resource)
        return construct_redirect_uri(str(params.redirect_uri), code=code, state=params.state)

    async def load_authorization_code(self, client, code):
        return self.codes.get(code)

    async def exchange_authorization_code(self, client, code):
        from mcp.server.auth.provider import AccessToken
        from mcp.shared.auth import OAuthToken

        del self.codes[code.code]
        token = secrets.token_urlsafe(16)
        self.tokens[token] = AccessToken(token=token, client_id=client.client_id,
                                         scopes=code.scopes, resource=code.resource,
                                         expires_at=int(time.time()) + 3600)
        return OAuthToken(access_token=token, token_type="Bearer", expires_in=3600)

    async def load_access_token(self, token):
        return self.tokens.get(token)

    async def load_refresh_token(self, client, refresh_token):
        return None

    async def exchange_refresh_token(self, client, refresh_token, scopes):
        raise NotImplementedError

    async def revoke_token(self, token):
        self.tokens.pop(getattr(token, "token", ""), None)

    async def exchange_identity_assertion(self, *args, **kwargs):
        raise NotImplementedError


def make_app(base: str, provider: ApprovingProvider) -> Any:
    from mcp.server.auth.settings import AuthSettings, ClientRegistrationOptions
    from mcp.server.mcpserver import MCPServer

    server = MCPServer("secure", auth_server_provider=provider, auth=AuthSettings(
        issuer_url=base, resource_server_url=base + "/mcp", validate_token_resource=False,
        client_registration_options=ClientRegistrationOptions(enabled=True)))

    @server.tool()
    def whoami() -> str:
        """Greets a signed-in client."""
        return "hello, signed-in client"

    app = server.streamable_http_app()

    async def recording(scope, receive, send):
        if scope["type"] == "http":
            for key, value in scope["headers"]:
                if key == b"authorization":
                    provider.presented.append((scope["path"], value.decode("latin-1")))
        await app(scope, receive, send)

    return recording
