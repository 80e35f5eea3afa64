"""``agent --help``'s epilog, generated from the commands, options and providers of this run.

The core's own subcommands describe themselves in :data:`CORE_COMMANDS`; a plugin's come from
``agent_register_cli_commands`` (its ``summary``, and ``usage`` lines when it gives them), so
a subcommand a plugin adds is listed where the builtin ones are, and a disabled plugin's is
not.  The environment section lists every option's variable and each provider's key
variable.  Standard library only: this runs on the way to ``--help``.
"""

from __future__ import annotations

import textwrap
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

#: Width of the ``agent NAME ARGS`` column; longer invocations put their text on the next line.
COLUMN = 34
WIDTH = 92


@dataclass(frozen=True)
class CliCommand:
    """A shell subcommand ``agent NAME ...``.

    ``handler(argv, boot)`` runs it and returns the exit code; ``summary`` is its one-line
    description; ``usage`` lists ``(arguments, what they do)`` pairs for the help text (an
    empty tuple shows ``agent NAME ...`` with the summary).  ``plugin`` names its source.
    """

    name: str
    handler: Callable[..., int]
    summary: str = ""
    usage: tuple[tuple[str, str], ...] = ()
    plugin: str = ""


#: The core's subcommands (``agent.boot.cli.SUBCOMMANDS``), as the help shows them.
CORE_COMMANDS: tuple[tuple[str, tuple[tuple[str, str], ...]], ...] = (
    ("plugins", (("[list]", "list plugins and their status"),
                 ("disable NAME", "block a plugin (it is never imported)"),
                 ("enable NAME", "unblock a plugin, or switch on an opt-in one"))),
    ("policy", (("explain TOOL JSON", "which guard or rule decides a call, and why"),)),
    ("doctor", (("[--no-provider]", "check the sandbox, ripgrep, git, terminal, state, the "
                                     "database and that the configured provider answers"),
                ("--repair", "salvage a damaged state database into a new one, the old one "
                             "moved aside"))),
)


def normalise_usage(usage: Iterable[Any]) -> tuple[tuple[str, str], ...]:
    """``usage`` as registered: pairs, or plain strings (arguments without a description).
    Raises ValueError for anything else, so a plugin's mistake is reported, not printed."""
    rows: list[tuple[str, str]] = []
    for item in usage:
        if isinstance(item, str):
            rows.append((item, ""))
        elif isinstance(item, (tuple, list)) and len(item) == 2 \
                and all(isinstance(part, str) for part in item):
            rows.append((item[0], item[1]))
        else:
            raise ValueError(f"usage entries are (arguments, description) pairs, not {item!r}")
    return tuple(rows)


def _row(invocation: str, text: str) -> list[str]:
    """One help row: the invocation, then its text in the second column (wrapped)."""
    lead = "  " + invocation
    if not text:
        return [lead]
    indent = " " * COLUMN
    wrapped = textwrap.wrap(text, WIDTH - COLUMN) or [""]
    if len(lead) < COLUMN:
        return [lead.ljust(COLUMN) + wrapped[0], *(indent + w for w in wrapped[1:])]
    return [lead, *(indent + w for w in wrapped)]


def command_rows(plugin_commands: Mapping[str, CliCommand]) -> list[str]:
    """The ``commands:`` section: the core's subcommands, then the plugins', by name."""
    lines = ["commands:"]
    entries: list[tuple[str, Sequence[tuple[str, str]], str]] = [
        (name, usage, "") for name, usage in CORE_COMMANDS]
    entries += [(name, cmd.usage, cmd.summary) for name, cmd in sorted(plugin_commands.items())]
    for name, usage, summary in entries:
        if not usage:
            lines += _row(f"agent {name} ...", summary)
            continue
        for arguments, text in usage:
            lines += _row(f"agent {name} {arguments}".rstrip(), text)
    return lines


def epilog(config_file: Any, plugin_commands: Mapping[str, CliCommand],
           env_vars: Iterable[str], provider_keys: Iterable[str],
           example_provider: tuple[str, str] | None) -> str:
    """The whole epilog.  ``env_vars`` are the options' variables, ``provider_keys`` the
    providers' key variables, ``example_provider`` a registered ``(name, default model)``
    for the config example (None when no provider is installed)."""
    lines = command_rows(plugin_commands)
    lines += ["", "configuration:",
              f"  config file: {config_file}   (AGENT_HOME relocates config and state)",
              "  precedence:  config file < environment < flags", "  example:"]
    if example_provider is not None:
        name, model = example_provider
        lines.append(f'    provider = "{name}"')
        if model:
            lines.append(f'    model = "{model}"')
    lines += ['    thinking = "medium"', "    [plugins]", '    disabled = ["NAME"]']
    names = sorted(set(env_vars)) + ["AGENT_HOME", "AGENT_DISABLE_PLUGINS (comma-separated)"]
    names += sorted(set(provider_keys))
    lines += ["", "environment:"]
    lines += textwrap.wrap("  ".join(names), WIDTH - 2, initial_indent="  ",
                           subsequent_indent="  ", break_on_hyphens=False)
    return "\n".join(lines) + "\n"
