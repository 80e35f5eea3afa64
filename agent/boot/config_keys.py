"""Config keys no option declares: a typo is named at start, with the nearest known key.

Unknown keys are kept in the config (a plugin that is disabled this run may own them), but a
misspelt key silently doing nothing is the worst kind of setting, so every start names each one
once: in the UI's start-up notices, on stderr in headless runs, and in ``agent doctor``.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class UnknownKey:
    """``key`` of the file at ``where`` matches no declared option; ``nearest`` is the closest
    declared key, when one is close enough to be the likely intent."""

    key: str
    where: Path
    nearest: str | None

    def message(self, *, some_plugins_disabled: bool = False) -> str:
        hint = f' (did you mean "{self.nearest}"?)' if self.nearest else ""
        owner = "; a disabled plugin may read it" if some_plugins_disabled else ""
        return f'{self.where}: unknown config key "{self.key}"{hint}; it has no effect{owner}'


def nearest_key(key: str, known: Iterable[str]) -> str | None:
    """The known key ``key`` most likely misspells, or None when none is close."""
    found = difflib.get_close_matches(key, sorted(set(known)), n=1, cutoff=0.75)
    return found[0] if found else None


def unknown_keys(data: Mapping[str, Any], known: Iterable[str], where: Path) -> list[UnknownKey]:
    """The top-level keys of one config file's ``data`` that no option declares."""
    names = set(known)
    return [UnknownKey(key, where, nearest_key(key, names))
            for key in data if key not in names]


def config_unknown_keys(config: Any) -> list[UnknownKey]:
    """Unknown keys of the user's config file and of the workspace's ``.agent/config.toml``."""
    known = {option.key for option in config.options}
    found = unknown_keys(config.file_data, known, config.config_file)
    project = config.project_config or {}
    found += unknown_keys(project, known, config.workspace / ".agent" / "config.toml")
    return found


def some_plugins_disabled(config: Any) -> bool:
    """Whether a plugin the user turned off (or that failed to load) is missing this run, so an
    unknown key may be one of its settings.  Opt-in plugins nobody enabled do not count: their
    keys have no effect, and saying so plainly is the point."""
    host = config.plugins
    if host is None:
        return False
    return any(status.state in ("disabled", "failed")
               for status in host.status.values())


def warnings(config: Any) -> list[str]:
    """One line per unknown key, for the start-up notices and headless stderr."""
    disabled = some_plugins_disabled(config)
    return [unknown.message(some_plugins_disabled=disabled)
            for unknown in config_unknown_keys(config)]
