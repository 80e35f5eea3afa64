"""Mentions: ``@source:thing`` in a prompt attaches what it names.

A plugin registers a :class:`MentionSource` (hook ``agent_register_mentions``): the entries
the input editor's ``@`` picker lists next to workspace files, and ``resolve``, which turns
a mentioned token into an :class:`Attachment`.  The MCP plugin lists each server's resources
as ``server:uri``, so ``@docs:file:///guide.md`` attaches that resource's content.

:func:`expand` builds the user message of a prompt: the text as typed, then each attachment
(text in a ``<resource ...>`` block, images as image parts for the provider's own blocks).  A
mention that cannot be read stays as typed and yields a warning; nothing else is lost.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from agent.contract.messages import ImagePart, Message, TextPart, bounded_images

#: ``@`` at the start of the text or after whitespace, then no whitespace.
_MENTION = re.compile(r"(?:^|(?<=\s))@(\S+)")
#: Trailing sentence punctuation is not part of a mention (``see @docs:a.md.``).
_TRAILING = ".,;!?"
#: Most mentions attached from one prompt, characters per attachment and in all.
MAX_MENTIONS = 20
MAX_CHARS = 30_000
MAX_TOTAL_CHARS = 100_000


@dataclass(frozen=True)
class MentionEntry:
    """One thing the ``@`` picker offers: ``token`` is inserted after the ``@``
    (``feat:memo://notes/today``), ``label`` describes it (``today (text/plain)``)."""

    token: str
    label: str = ""


@dataclass
class Attachment:
    """What a mention attaches: ``text`` (sent inside ``<resource name="TOKEN">``) and
    images."""

    text: str
    images: list[ImagePart] = field(default_factory=list)


class MentionError(Exception):
    """A mention a source knows but could not read; the message says why, for the user."""


@dataclass
class MentionSource:
    """A plugin's mentionable things.

    - ``entries()``: what the ``@`` picker lists, cheap and synchronous (from a cache; called
      as the user types).
    - ``resolve(token)``: the :class:`Attachment` for ``token`` (without the ``@``), None
      when the token is not this source's (``@dataclass``, a file path), or raise
      :class:`MentionError`.  Runs on the front end's loop; may wait for a server.
    """

    name: str
    entries: Callable[[], list[MentionEntry]]
    resolve: Callable[[str], Awaitable[Attachment | None]]


def mentions(text: str) -> list[str]:
    """The ``@`` tokens of ``text`` in order, once each, trailing punctuation removed."""
    seen: list[str] = []
    for m in _MENTION.finditer(text):
        token = m.group(1).rstrip(_TRAILING)
        if token and token not in seen:
            seen.append(token)
    return seen


async def expand(text: str, sources: list[MentionSource]) -> tuple[Message, list[str]]:
    """The user message for prompt ``text`` with what its mentions name attached, and a
    warning for each mention that could not be."""
    if not sources or "@" not in text:
        return Message.user(text), []
    blocks: list[str] = []
    images: list[ImagePart] = []
    warnings: list[str] = []
    total = 0
    for token in mentions(text):
        attachment = None
        for source in sources:
            try:
                attachment = await source.resolve(token)
            except MentionError as exc:
                warnings.append(f"@{token} is not attached: {exc}")
                break
            except Exception as exc:  # a broken source loses the mention, not the prompt
                warnings.append(f"@{token} is not attached: {source.name} failed: "
                                f"{type(exc).__name__}: {exc}")
                break
            if attachment is not None:
                break
        if attachment is None:
            continue
        if len(blocks) >= MAX_MENTIONS:
            warnings.append(f"@{token} is not attached: at most {MAX_MENTIONS} mentions are "
                            "attached from one prompt")
            continue
        body = attachment.text
        if len(body) > MAX_CHARS:
            body = body[:MAX_CHARS] + f"\n... [cut at {MAX_CHARS:,} characters]"
        if total + len(body) > MAX_TOTAL_CHARS:
            warnings.append(f"@{token} is not attached: the attachments of one prompt are "
                            f"limited to {MAX_TOTAL_CHARS:,} characters")
            continue
        total += len(body)
        blocks.append(f'<resource name="{token}">\n{body}\n</resource>')
        images.extend(attachment.images)
    if not blocks:
        return Message.user(text), warnings
    kept, dropped = bounded_images(images)
    body = "\n\n".join([text.rstrip(), *blocks, *dropped])
    return Message("user", [TextPart(body), *kept]), warnings
