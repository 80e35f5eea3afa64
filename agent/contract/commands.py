"""Slash commands: one registry feeds the `/` menu, `/help`, the parser and key bindings."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from agent.ui.context import CommandContext


def show(app: Any, text: str) -> str | None:
    """Show ``text`` as a command's answer: through the front end's ``info`` when the command
    context has one, else handed back (headless callers, tests, the shell).  A command may
    also simply return the text; the UI shows a returned string the same way."""
    info = getattr(app, "info", None)
    if callable(info):
        info(text)
        return None
    return text


@dataclass
class SlashCommand:
    """A command typed as ``/name args``.

    ``run(app, args)`` receives the front end's command context (see ``agent.ui``) and the
    text after the name; it may be async.  ``info`` commands work before a provider is
    configured.  ``takes_args`` makes tab completion add a trailing space.  ``expands``
    marks a command that only turns its arguments into a prompt (``app.run_prompt(text)``,
    as custom commands do): ``agent -p "/name args"`` runs it to get the prompt it sends.
    """

    name: str
    summary: str
    run: Callable[[CommandContext, str], Awaitable[Any] | Any]
    aliases: tuple[str, ...] = ()
    args: str = ""
    info: bool = False
    takes_args: bool = False
    plugin: str = ""
    expands: bool = False


@dataclass
class CommandRegistry:
    """Commands by name; aliases resolve to their command."""

    commands: dict[str, SlashCommand] = field(default_factory=dict)
    aliases: dict[str, str] = field(default_factory=dict)

    def register(self, command: SlashCommand) -> None:
        self.commands[command.name] = command
        for alias in command.aliases:
            self.aliases[alias] = command.name

    def get(self, name: str) -> SlashCommand | None:
        name = name.lstrip("/")
        return self.commands.get(self.aliases.get(name, name))

    def sorted(self) -> list[SlashCommand]:
        return sorted(self.commands.values(), key=lambda c: c.name)

    def matching(self, prefix: str) -> list[SlashCommand]:
        """Commands whose name starts with ``prefix`` (exact name first)."""
        prefix = prefix.lstrip("/")
        hits = [c for c in self.sorted() if c.name.startswith(prefix)]
        hits.sort(key=lambda c: (c.name != prefix, c.name))
        return hits
