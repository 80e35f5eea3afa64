"""Where the registry's entries come from: the bundled index, plus the configured one.

The bundled index always answers (no network); ``registry_url`` adds an index fetched over
https.  A name the bundled index already has is kept bundled: a remote index cannot replace a
curated guard.  A remote index that cannot be read is reported under the listing while the
bundled entries stay usable.
"""

from __future__ import annotations

from dataclasses import replace

from . import bundled
from .client import Entry, Index, RegistryClient, RegistryError, check_digest, parse_index


def bundled_index() -> Index:
    index = parse_index(bundled.index_bytes(), bundled.SCHEME)
    index.url = bundled.SOURCE
    # Entry paths are relative to the bundled directory: address them as bundled:<path>.
    index.entries = [replace(e, url=bundled.SCHEME + e.url.removeprefix(bundled.SCHEME),
                             source=bundled.SOURCE) for e in index.entries]
    return index


class Sources:
    """The bundled index and, when configured, the remote one, as one index."""

    def __init__(self, remote: RegistryClient | None) -> None:
        self.remote = remote if remote is not None and remote.index_url else None

    async def fetch_index(self) -> Index:
        index = bundled_index()
        if self.remote is None:
            return index
        try:
            other = await self.remote.fetch_index()
        except RegistryError as exc:
            index.problems.append(f"the configured registry could not be read: {exc}")
            return index
        have = {(e.kind, e.name) for e in index.entries}
        for entry in other.entries:
            if (entry.kind, entry.name) in have:
                index.problems.append(f"{entry.kind} {entry.name} from {other.url} is "
                                      "shadowed by the bundled entry of the same name")
            else:
                index.entries.append(entry)
        index.problems += other.problems
        index.entries.sort(key=lambda e: (e.name, e.kind))
        return index

    async def fetch_entry(self, entry: Entry) -> bytes:
        if entry.url.startswith(bundled.SCHEME):
            try:
                data = bundled.read(entry.url)
            except OSError as exc:
                raise RegistryError(f"{entry.kind} {entry.name}: the bundled file cannot be "
                                    f"read: {exc}") from None
            check_digest(entry, data)
            return data
        if self.remote is None:
            raise RegistryError(f"{entry.kind} {entry.name} comes from a registry that is no "
                                "longer configured")
        return await self.remote.fetch_entry(entry)
