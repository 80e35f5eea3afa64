"""Fetching the registry: the index and its entries, over https only, with size caps.

The index is JSON (at most 256 KB)::

    {"version": "2026.12.1",
     "skills":  [{"name": "...", "description": "...", "url": "https://.../x.md",
                  "sha256": "<hex digest of the file>"}],
     "plugins": [{"name": "...", "description": "...", "url": "https://.../x.json",
                  "sha256": "..."}]}

Entry URLs may be relative to the index URL.  Every entry carries the sha256 of its file; a
download whose digest differs is refused.  An entry (a skill's markdown or a plugin's manifest)
is at most 64 KB.  Every URL, redirects included, must be https; plain http is possible only
through the ``allow_http_for_tests`` constructor argument, which no setting reaches, and then
only to the loopback interface.  When ``registry_public_key`` is configured, the index must
come with a detached ed25519 signature at ``<index URL>.sig`` (base64) that verifies.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import hashlib
import json
import re
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urljoin, urlsplit

from .manifest import MAX_DESCRIPTION, name_problem

_DIGEST = re.compile(r"^[0-9a-f]{64}$")

INDEX_CAP = 256 * 1024
ENTRY_CAP = 64 * 1024
MAX_REDIRECTS = 3
TIMEOUT = 20.0
LOOPBACK = frozenset({"127.0.0.1", "localhost", "::1"})
KINDS = ("skill", "plugin")
# identity: the size cap then bounds what is read and what is decoded alike.
HEADERS = {"Accept": "application/json, text/markdown, text/plain",
           "Accept-Encoding": "identity"}


class RegistryError(Exception):
    """A problem talking to the registry or reading its answers; the message is for the user."""


@dataclass(frozen=True)
class Entry:
    """One index entry: ``kind`` is ``skill`` or ``plugin``; ``url`` is absolute."""

    kind: str
    name: str
    description: str
    url: str
    #: the sha256 (hex) the index gives for the entry's file
    sha256: str = ""
    #: where the entry was listed: ``bundled`` or the index URL
    source: str = ""


@dataclass
class Index:
    url: str
    entries: list[Entry] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    version: str = ""

    def named(self, name: str) -> list[Entry]:
        return [e for e in self.entries if e.name == name]

    def search(self, query: str) -> list[Entry]:
        """Entries whose name or description contains ``query`` (case-insensitive)."""
        q = query.lower()
        return [e for e in self.entries if q in e.name.lower() or q in e.description.lower()]


def parse_index(data: bytes, url: str) -> Index:
    """Decode and check the index; unusable entries are skipped and described in
    ``problems``.  A document that is not an index at all raises :class:`RegistryError`."""
    try:
        doc = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:
        raise RegistryError(f"the registry index at {url} is not valid JSON: {exc}") from None
    if not isinstance(doc, dict) or not any(isinstance(doc.get(k), list)
                                            for k in ("skills", "plugins")):
        raise RegistryError(f"the registry index at {url} is not an index: expected an "
                            'object with "skills" and/or "plugins" lists')
    index = Index(url, version=str(doc.get("version") or ""))
    for kind in KINDS:
        items = doc.get(kind + "s", [])
        if not isinstance(items, list):
            index.problems.append(f'"{kind}s" is not a list')
            continue
        seen: set[str] = set()
        for i, item in enumerate(items):
            where = f"{kind}s[{i}]"
            entry_or_problem = _entry(kind, item, url, where)
            if isinstance(entry_or_problem, str):
                index.problems.append(entry_or_problem)
            elif entry_or_problem.name in seen:
                index.problems.append(f"{where}: {entry_or_problem.name} is listed twice; "
                                      "the first is used")
            else:
                seen.add(entry_or_problem.name)
                index.entries.append(entry_or_problem)
    index.entries.sort(key=lambda e: (e.name, e.kind))
    return index


def _entry(kind: str, item: Any, base: str, where: str) -> Entry | str:
    if not isinstance(item, dict):
        return f"{where}: not an object"
    name = item.get("name")
    why = name_problem(name)
    if why:
        return f"{where}: name {why}"
    description = item.get("description", "")
    if not isinstance(description, str):
        return f"{where} ({name}): description must be a string"
    description = " ".join(description.split())[:MAX_DESCRIPTION]
    url = item.get("url")
    if not isinstance(url, str) or not url.strip():
        return f"{where} ({name}): url is missing"
    digest = item.get("sha256")
    if not isinstance(digest, str) or not _DIGEST.match(digest.lower()):
        return f"{where} ({name}): sha256 is missing or not a hex sha256 digest"
    return Entry(kind, str(name), description, urljoin(base, url.strip()), digest.lower(),
                 base)


def check_digest(entry: Entry, data: bytes) -> None:
    """Refuse ``data`` unless its sha256 is the one the index gave for ``entry``."""
    got = hashlib.sha256(data).hexdigest()
    if got != entry.sha256:
        raise RegistryError(f"{entry.kind} {entry.name}: the downloaded file's sha256 is "
                            f"{got[:16]}..., not {entry.sha256[:16]}... as the index says; "
                            "refused (the file or the index was changed)")


def verify_signature(data: bytes, signature_b64: bytes, public_key_b64: str, url: str) -> None:
    """Check a detached ed25519 signature over ``data``; raise :class:`RegistryError`."""
    from cryptography.exceptions import InvalidSignature
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

    try:
        key = Ed25519PublicKey.from_public_bytes(base64.b64decode(public_key_b64.strip(),
                                                                  validate=True))
    except (binascii.Error, ValueError) as exc:
        raise RegistryError(f"registry_public_key is not a base64 ed25519 public key: {exc}"
                            ) from None
    try:
        signature = base64.b64decode(signature_b64.strip(), validate=True)
        key.verify(signature, data)
    except (binascii.Error, ValueError, InvalidSignature):
        raise RegistryError(f"the registry index at {url} is not signed by the key in "
                            "registry_public_key; refused") from None


class RegistryClient:
    """Downloads from the registry at ``index_url``.

    ``transport`` is an httpx2 transport (default: a real connection); ``allow_http_for_tests``
    lets tests use a plain-http server on the loopback interface.
    """

    def __init__(self, index_url: str, *, allow_http_for_tests: bool = False,
                 transport: Any = None, timeout: float = TIMEOUT,
                 public_key: str = "") -> None:
        self.index_url = index_url.strip()
        self.allow_http = allow_http_for_tests
        self.transport = transport
        self.timeout = timeout
        self.public_key = public_key.strip()

    def check_url(self, url: str) -> None:
        """Refuse anything but https (or loopback http when testing)."""
        try:
            parts = urlsplit(url)
        except ValueError:
            raise RegistryError(f"not a URL: {url!r}") from None
        if parts.scheme == "https" and parts.hostname:
            return
        if (self.allow_http and parts.scheme == "http"
                and (parts.hostname or "") in LOOPBACK):
            return
        raise RegistryError(f"refusing {url}: the registry is only reached over https")

    async def fetch_index(self) -> Index:
        if not self.index_url:
            raise RegistryError("no registry configured: set registry_url in config.toml "
                                "(see docs/registry.md)")
        data = await self.get(self.index_url, INDEX_CAP, "the registry index")
        if self.public_key:
            signature = await self.get(self.index_url + ".sig", 1024,
                                       "the registry index's signature")
            verify_signature(data, signature, self.public_key, self.index_url)
        return parse_index(data, self.index_url)

    async def fetch_entry(self, entry: Entry) -> bytes:
        data = await self.get(entry.url, ENTRY_CAP, f"{entry.kind} {entry.name}")
        check_digest(entry, data)
        return data

    async def get(self, url: str, cap: int, what: str) -> bytes:
        """GET ``url`` (redirects followed and re-checked), refusing bodies over ``cap``."""
        import httpx2

        from agent.loop.retry import verify_context

        try:
            async with asyncio.timeout(self.timeout):
                # verify_context(): what verify=True gives, without loading the CA bundle
                # again for every request (about 35 ms of CPU each)
                async with httpx2.AsyncClient(transport=self.transport, follow_redirects=False,
                                              verify=verify_context(),
                                              timeout=httpx2.Timeout(self.timeout)) as client:
                    for _ in range(MAX_REDIRECTS + 1):
                        self.check_url(url)
                        async with client.stream("GET", url, headers=HEADERS) as response:
                            if response.is_redirect and "location" in response.headers:
                                url = urljoin(url, response.headers["location"])
                                continue
                            return await _read_capped(response, url, cap, what)
                    raise RegistryError(f"{what}: more than {MAX_REDIRECTS} redirects")
        except TimeoutError:
            raise RegistryError(f"{what}: {url} did not answer within {self.timeout:g} s") \
                from None
        except httpx2.HTTPError as exc:
            raise RegistryError(f"{what}: could not fetch {url}: "
                                f"{exc or type(exc).__name__}") from None


async def _read_capped(response: Any, url: str, cap: int, what: str) -> bytes:
    if response.status_code != 200:
        raise RegistryError(f"{what}: {url} answered HTTP {response.status_code}")
    too_big = RegistryError(f"{what} at {url} is larger than {cap // 1024} KB; refused")
    declared = response.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > cap:
        raise too_big
    body = bytearray()
    async for chunk in response.aiter_bytes():
        body.extend(chunk)
        if len(body) > cap:
            raise too_big
    return bytes(body)
