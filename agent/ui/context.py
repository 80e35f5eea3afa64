"""The command context: the ``app`` object a ``SlashCommand.run(app, args)`` receives.

It is the stable face of the full-screen UI for plugins (documented in ``docs/ui.md``).
Everything here is safe to call from a command, sync or async; nothing blocks the screen.
A command may also just return a string: it is shown as an info line.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agent.contract.blocks import Block
from agent.ui.widgets.lists import Item

if TYPE_CHECKING:
    from agent.ui.app import App

ASK_DISMISSED = "The user dismissed this question; use your best judgement."


class CommandContext:
    """What slash commands (and tools, via ``session.runtime.ui``) may do with the UI."""

    interactive = True

    def __init__(self, app: App) -> None:
        self._app = app

    # ---- what there is ----

    @property
    def session(self) -> Any:
        """The running :class:`agent.loop.session.Session` (None before a provider is set up)."""
        return self._app.session

    @property
    def runtime(self) -> Any:
        return self._app.runtime

    @property
    def config(self) -> Any:
        return self._app.config

    @property
    def hooks(self) -> Any:
        return self._app.hooks

    @property
    def plugins(self) -> Any:
        """The plugin host (``.status`` per plugin, ``.failures()``)."""
        return self._app.boot.host

    @property
    def commands(self) -> Any:
        """The :class:`agent.contract.commands.CommandRegistry` (for /help-like commands)."""
        return self._app.commands

    @property
    def keymap(self) -> Any:
        return self._app.keymap

    @property
    def workspace(self) -> Path:
        return self._app.workspace

    def context_tokens(self) -> int:
        """The history's size in tokens, estimated as characters / 4."""
        return self._app.context_tokens()

    @property
    def busy(self) -> bool:
        """True while a turn runs."""
        return self._app.busy

    # ---- showing things ----

    def info(self, title: str, body: str | None = None, hint: str = "") -> None:
        """``info(title, body, hint)``: a bordered panel above the prompt (body is markdown);
        esc or the next prompt dismisses it.  ``info(text)``: one line goes to the
        transcript as an info line, several lines open an untitled panel."""
        if body is None:
            if "\n" not in title.strip():
                self._app.add("info", title)
                return
            title, body = "", title
        self._app.show_info(title, body, hint)

    def notice(self, text: str) -> None:
        """A dim line in the transcript."""
        self._app.add("info", text)

    def warn(self, text: str) -> None:
        """A highlighted line in the transcript."""
        self._app.add("notice", text)

    def error(self, text: str) -> None:
        """An ``error: ...`` line in red."""
        self._app.add("error", text)

    def write(self, text: str, kind: str = "markdown") -> None:
        """A transcript block of any kind (``markdown`` by default)."""
        self._app.add(kind, text)

    def add_block(self, block: Block) -> None:
        self._app.transcript.add(block)
        self._app.redraw.request()

    def set_live(self, key: str, text: str | None) -> None:
        """A small panel above the prompt that stays until set to None (task lists...)."""
        self._app.set_live(key, text)

    def set_status(self, note: str) -> None:
        """A short note at the end of the status bar ('' clears it)."""
        self._app.update_status(note=note)

    def redraw(self) -> None:
        self._app.redraw.request()

    def clear_transcript(self, *, wipe_scrollback: bool = True) -> None:
        """Empty the transcript (and the terminal's scrollback)."""
        self._app.clear_transcript(wipe_scrollback)

    clear_screen = clear_transcript

    def show_history(self) -> None:
        """Show the session's messages in the transcript again (after /resume)."""
        from agent.ui.turns import replay

        if self._app.session is not None:
            replay(self._app, self._app.session.messages)
            self._app.update_status()

    # ---- acting ----

    def submit(self, text: str) -> None:
        """As if the user typed ``text`` and pressed enter (queued while a turn runs)."""
        self._app.submit(text)

    def run_prompt(self, prompt: str) -> None:
        """Start a model turn with ``prompt`` (queued while a turn runs); not echoed as a
        command, so built-in prompts like /init can be long."""
        self._app.submit(prompt, as_prompt=True)

    def quit(self) -> None:
        self._app.quit()

    def spawn(self, coro: Coroutine[Any, Any, Any], name: str = "command") -> Any:
        """Run a coroutine as a supervised task (its failure becomes an error line)."""
        return self._app.supervisor.spawn(coro, name)

    def set_model(self, model: str) -> None:
        """Use ``model`` for the next requests (not saved to the config)."""
        self._app.set_model(model)

    async def setup_provider(self) -> bool:
        """Open the provider setup (what /provider does); True when a provider was saved."""
        return await self._app.setup_provider()

    # ---- asking the user ----

    async def pick(self, title: str, items: Iterable[Any], *, hint: str = "",
                   current: Any = None, multiple: bool = False, free_text: str | None = None,
                   max_rows: int = 10, filterable: bool | None = None) -> Any:
        """Let the user choose with the arrows and enter; returns the chosen value (a list
        with ``multiple``, the typed text for the ``free_text`` entry) or None when
        cancelled.  With ``filterable`` (the default for more than 8 entries) typing narrows
        the list.

        ``items`` are strings, ``(label, value)`` or ``(label, value, hint)`` tuples, or
        :class:`agent.ui.widgets.lists.Item`.
        """
        entries = [_item(x) for x in items]
        index = next((i for i, e in enumerate(entries) if e.value == current), 0)
        from agent.ui.widgets.panels import Picker

        if filterable is None:
            filterable = len(entries) > 8 and not free_text
        picker = Picker(title, entries, hint=hint, index=index, max_rows=max_rows,
                        multiple=multiple, free_text=free_text, filterable=filterable)
        return await self._app.run_modal(picker)

    async def prompt_text(self, title: str, *, hint: str = "", mask: bool = False,
                          default: str = "",
                          validate: Callable[[str], str | None] | None = None) -> str | None:
        """One line of text from the user (``mask`` hides it); None when cancelled.
        ``validate(text)`` says what is wrong (None: nothing), checked as the user types;
        enter is refused until it passes."""
        from agent.ui.widgets.panels import TextPrompt

        return await self._app.run_modal(TextPrompt(title, hint, mask=mask, default=default,
                                                    validate=validate))

    async def confirm(self, title: str, body: str = "") -> bool:
        """Yes or no (enter = yes, esc = no)."""
        answer = await self.pick(title, [("yes", True), ("no", False)], hint=body)
        return bool(answer)

    async def ask_raw(self, question: str, options: Iterable[Any] = (),
                      multiple: bool = False) -> str | list[str] | None:
        """The ``ask`` panel (the runtime's ``asker``): the question (markdown), options
        (``{"label", "detail"}`` dicts or strings, recommended first) and free text.  Returns
        the chosen label, a list of labels (``multiple``), the typed text, or None when the
        user dismissed the question."""
        from agent.ui.widgets.panels import Picker

        entries = []
        for opt in options:
            if isinstance(opt, dict):
                label = str(opt.get("label", ""))
                entries.append(Item(label, label, detail=str(opt.get("detail") or "")))
            else:
                entries.append(Item(str(opt), str(opt)))
        if entries:  # the model is told to put its recommendation first
            entries[0].hint = "(recommended)"
        body = self._app.render_block(Block("markdown", question))
        picker = Picker("agent is asking", entries, multiple=multiple,
                        free_text="type your own answer...", style="ask", body=body,
                        footer="enter to choose, esc to skip" + (
                            ", space ticks" if multiple else ""))
        self._app.bell_if_wanted()
        live = self._app.live
        live.hide_tools = True  # the panel shows the question: no spinner repeating it
        live.refresh()
        try:
            return await self._app.run_modal(picker)
        finally:
            live.hide_tools = False
            live.refresh()

    async def ask(self, question: str, options: Iterable[Any] = (), *,
                  multiple: bool = False) -> str:
        """Like :meth:`ask_raw`, but returns a text for a model (never None)."""
        answer = await self.ask_raw(question, options, multiple)
        if answer is None:
            return ASK_DISMISSED
        if isinstance(answer, list):
            return ", ".join(answer) if answer else "(the user chose none of the options)"
        return str(answer)


def _item(x: Any) -> Item:
    if isinstance(x, Item):
        return x
    if isinstance(x, tuple):
        label, value, *rest = x
        return Item(str(label), value, str(rest[0]) if rest else "")
    return Item(str(x), x)
