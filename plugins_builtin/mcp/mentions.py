"""MCP resources as mentions: ``@server:uri`` in a prompt attaches that resource.

The ``@`` picker lists each connected server's resources (as listed when it connected) next
to workspace files; choosing one inserts ``@server:uri``, and sending the prompt reads the
resource and attaches its text (and images) to it.  The user chose it, so it is read
without an approval, as ``@path`` reads a file.  A uri the server does not list (from a
template, say) can be typed by hand.
"""

from __future__ import annotations

from typing import Any

from agent import Attachment, MentionEntry, MentionError, MentionSource
from plugins_builtin.mcp.resources import READ_RESOURCE


def mention_source(st: Any) -> MentionSource:
    """The ``mcp`` mention source over the plugin state ``st``."""
    manager = st.manager

    def entries() -> list[MentionEntry]:
        out = []
        for server in sorted(manager.listed_resources):
            for res in manager.listed_resources[server]:
                about = res["name"] + (f" ({res['mime']})" if res["mime"] else "")
                out.append(MentionEntry(f"{server}:{res['uri']}", about.strip()))
        return out

    async def resolve(token: str) -> Attachment | None:
        from plugins_builtin.mcp.connection import CallFailed

        server, sep, uri = token.partition(":")
        if not sep or not uri or server not in manager.servers:
            return None  # not a server's: a file path, an address, a word
        try:
            text, is_error, images = await manager.resources(server, READ_RESOURCE,
                                                             {"uri": uri})
        except CallFailed as exc:
            raise MentionError(str(exc)) from None
        if is_error:
            raise MentionError(text)
        return Attachment(text, list(images))

    return MentionSource("mcp", entries, resolve)
