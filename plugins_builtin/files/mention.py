"""``@path`` in a prompt attaches that workspace file (numbered lines, like ``read_file``) or
that directory's listing (like ``list_dir``).

It is the person's own action, so no approval is asked, but the same walls as the read tools
hold: the path is jailed to the workspace and the secrets policy refuses what it protects
(``@.env`` is named in a warning and not attached).  A file is cut after
:data:`MENTION_LINES` lines, and every attachment at the mention limits of
:mod:`agent.contract.mentions`, with a note saying so.  A token that names nothing in the
workspace (``@dataclass``, an MCP resource) is left to other sources.
"""

from __future__ import annotations

import os
from typing import Any

from agent import Attachment, MentionError, MentionSource, ToolCall, ToolContext, ToolError

from .common import resolve
from .listing import run_list_dir
from .read import refuse_secret
from .window import read_window

#: lines of a mentioned file attached (a note says where it was cut)
MENTION_LINES = 1000


def _context(config: Any, path: str) -> ToolContext:
    return ToolContext(workspace=config.workspace, state_dir=config.state_dir,
                       call=ToolCall("mention", "read_file", {"path": path}, origin="user",
                                     by_user=True),
                       config=config)


def _exists(config: Any, token: str) -> bool:
    """True when ``token`` is a path that exists as typed (before the jail looks at it): a
    word that merely starts with ``@`` is not a mention of a file."""
    base = os.fspath(config.workspace)
    return os.path.lexists(os.path.join(base, os.path.expanduser(token)))


def source(config: Any) -> MentionSource:
    """The mention source of workspace paths."""

    async def resolve_token(token: str) -> Attachment | None:
        if not _exists(config, token):
            return None
        ctx = _context(config, token)
        try:
            refuse_secret(ctx, token)
            real = resolve(ctx, token)
            if real.is_dir():
                listing = await run_list_dir({"path": token}, ctx)
                return Attachment(f"[directory {token}]\n{listing.output}")
            body = read_window(real, token, 1, MENTION_LINES).body
        except ToolError as exc:
            raise MentionError(str(exc)) from None
        except OSError as exc:
            raise MentionError(f"{token} could not be read: {exc.strerror or exc}") from None
        return Attachment(f"[file {token}]\n{body}")

    # The @ picker lists workspace files itself; this source adds no entries of its own.
    return MentionSource("files", lambda: [], resolve_token)
