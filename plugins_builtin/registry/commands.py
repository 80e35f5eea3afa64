"""``/registry``: browse the index, preview an entry in full, install it, remove it.

Nothing is installed unseen: ``add`` downloads and validates the entry and shows all of it
(a skill's whole text; every rule and the appendix of a plugin manifest).  In the full-screen
UI a yes/no question follows; elsewhere the install waits for ``/registry confirm`` (or was
asked for up front with ``--yes``).  Installs go to ``<config dir>/registry/skills/NAME.md``
and ``<config dir>/registry/plugins/NAME.json`` and take effect at the next step.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agent import atomic_write
from agent.lib import frontmatter

from . import lock
from .client import Entry, Index, RegistryError
from .manifest import Manifest, ManifestError, name_problem, parse_manifest

USAGE = ("usage: /registry [list | installed | search <query> | show <name> | "
         "install <name> [--yes] | confirm | cancel | remove <name> | update [<name>] [--yes] | "
         "verify]")
SKILL_BODY_CAP = 20_000
VERBS = {"install": "add", "uninstall": "remove", "rm": "remove", "ls": "list",
         "info": "show"}


@dataclass
class Pending:
    """A validated entry waiting for the user's yes: exactly these bytes get installed."""

    entry: Entry
    text: str
    digest: str


@dataclass
class Reply:
    """What a subcommand has to say: a panel (title, body, hint) or one line."""

    body: str
    title: str = ""
    hint: str = ""
    error: bool = False


def fence(text: str, info: str = "") -> str:
    """``text`` in a fenced code block whose fence no run of backticks inside can close."""
    longest = max((len(m) for m in re.findall(r"`+", text)), default=0)
    bar = "`" * max(3, longest + 1)
    return f"{bar}{info}\n{text.rstrip()}\n{bar}"


def code(text: str) -> str:
    """Inline code that survives backticks in ``text``."""
    longest = max((len(m) for m in re.findall(r"`+", text)), default=0)
    bar = "`" * (longest + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{bar}{pad}{text}{pad}{bar}"


def plain(text: str) -> str:
    """Markdown made for a panel, as plain text for a terminal: fence lines dropped, inline
    code and bold unwrapped."""
    out = []
    for line in text.splitlines():
        if re.fullmatch(r"`{3,}\w*", line.strip()):
            continue
        line = re.sub(r"(`+) ?(.+?) ?\1", r"\2", line)
        out.append(re.sub(r"\*\*(.+?)\*\*", r"\1", line))
    return "\n".join(out)


def split_name(arg: str) -> tuple[str | None, str]:
    """``skill:x`` → (``skill``, ``x``); ``x`` → (None, ``x``)."""
    kind, sep, name = arg.partition(":")
    if sep and kind in ("skill", "plugin"):
        return kind, name
    return None, arg


# ---- validating and previewing entries -----------------------------------------------------


def check_skill(data: bytes, name: str) -> tuple[str, list[str]]:
    """The skill's text and notes for the preview; raises :class:`RegistryError` when the
    download is not a usable skill named ``name``."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise RegistryError(f"skill {name}: not UTF-8 text") from None
    if "\x00" in text:
        raise RegistryError(f"skill {name}: contains NUL bytes")
    doc = frontmatter.parse(text)
    problems = []
    if not doc.has_frontmatter:
        problems.append("it has no --- frontmatter")
    if doc.problem:
        problems.append(f"its {doc.problem}")
    if doc.meta.get("name", "").strip() != name:
        problems.append(f"its frontmatter name is {doc.meta.get('name', '').strip()!r}, "
                        f"not {name!r}")
    if not doc.meta.get("description", "").strip():
        problems.append("its frontmatter has no description")
    if not doc.body.strip():
        problems.append("its body is empty")
    if problems:
        raise RegistryError(f"skill {name} is not valid: " + "; ".join(problems))
    notes = []
    if len(doc.body.strip()) > SKILL_BODY_CAP:
        notes.append(f"The body is {len(doc.body.strip()):,} characters; only the first "
                     f"{SKILL_BODY_CAP:,} are used.")
    return text, notes


def check_plugin(data: bytes, name: str) -> Manifest:
    try:
        return parse_manifest(data, expected_name=name)
    except ManifestError as exc:
        raise RegistryError(f"plugin {name} is not a valid manifest: " + "; ".join(
            exc.problems)) from None


def skill_preview(entry: Entry, text: str, digest: str, notes: list[str]) -> str:
    doc = frontmatter.parse(text)
    lines = [f"**skill {code(entry.name)}** from {entry.url}",
             f"description: {doc.meta.get('description', '').strip()}",
             f"{len(text):,} characters, sha256 {digest[:16]}",
             "",
             "Installed, it joins the skill list in the system prompt; when the agent loads "
             "it, it follows it as if you had written it. Read all of it:",
             "", fence(text, "markdown")]
    lines += ["", *notes] if notes else []
    return "\n".join(lines)


def plugin_preview(entry: Entry, manifest: Manifest, digest: str) -> str:
    lines = [f"**plugin {code(entry.name)}** from {entry.url}: {manifest.description}",
             f"sha256 {digest[:16]}",
             "",
             "A registry plugin is data, not code: it can only refuse tool calls and add text "
             "to the system prompt. It refuses:"]
    for i, rule in enumerate(manifest.deny, 1):
        what = []
        if rule.path_pattern is not None:
            what.append(f"paths matching {code(rule.path_pattern)}")
        if rule.command_pattern is not None:
            what.append(f"commands matching {code(rule.command_pattern)}")
        tools = ", ".join(code(t) for t in rule.tools)
        lines.append(f"{i}. {tools}: {' or '.join(what)}, saying \"{rule.reason}\"")
    if manifest.appendix:
        lines += ["", "It adds this to the system prompt:", "", fence(manifest.appendix, "text")]
    else:
        lines += ["", "It adds nothing to the system prompt."]
    return "\n".join(lines)


# ---- the installed directory -----------------------------------------------------------------


class Installs:
    """The registry's files under ``<config dir>/registry``."""

    def __init__(self, config_dir: Path) -> None:
        self.root = Path(config_dir) / "registry"

    def path(self, kind: str, name: str) -> Path:
        if kind == "skill":
            return self.root / "skills" / f"{name}.md"
        return self.root / "plugins" / f"{name}.json"

    def installed(self, kind: str) -> list[str]:
        directory = self.root / (kind + "s")
        suffix = ".md" if kind == "skill" else ".json"
        try:
            return sorted(p.name[:-len(suffix)] for p in directory.iterdir()
                          if p.name.endswith(suffix) and p.is_file())
        except OSError:
            return []

    def is_installed(self, kind: str, name: str) -> bool:
        return self.path(kind, name).is_file()

    def write(self, entry: Entry, text: str) -> Path:
        """Write atomically, so a reader never sees half a file, and record its digest."""
        path = self.path(entry.kind, entry.name)
        lock.record(self.root, entry.kind, entry.name, text, source=entry.source or "",
                    index_sha256=entry.sha256)
        atomic_write(path, text, make_parents=True)
        return path

    def remove(self, kind: str, name: str) -> None:
        self.path(kind, name).unlink()
        lock.forget(self.root, kind, name)

    def verify(self, kind: str, name: str) -> str | None:
        """Why the installed file may not be used, or None when it is as installed."""
        try:
            data = self.path(kind, name).read_bytes()
        except OSError as exc:
            return f"cannot be read: {exc}"
        return lock.problem(self.root, kind, name, data)


# ---- the command ------------------------------------------------------------------------------


class RegistryCommand:
    """The state and verbs of ``/registry`` for one config dir.

    ``client_factory()`` builds the :class:`RegistryClient` (tests pass one that allows a
    loopback http server).  ``cli`` words the confirm step for ``agent registry``, where
    nothing is pending between runs.
    """

    def __init__(self, config_dir: Path, client_factory: Callable[[], Any], *,
                 cli: bool = False) -> None:
        self.installs = Installs(config_dir)
        self.client_factory = client_factory
        self.cli = cli
        self.pending: Pending | None = None

    async def run(self, app: Any, args: str) -> str | None:
        """Run ``/registry ARGS`` and show the result through ``app`` (or return it as text
        when ``app`` cannot show panels)."""
        try:
            reply = await self.dispatch(app, args)
        except RegistryError as exc:
            reply = Reply(str(exc), error=True)
        if reply is None:
            return None
        return show(app, reply)

    async def dispatch(self, app: Any, args: str) -> Reply | None:
        words = args.split()
        verb = VERBS.get(words[0], words[0]) if words else "list"
        rest = words[1:]
        if verb == "list":
            return await self.listing(None)
        if verb == "installed":
            return self.installed()
        if verb == "search":
            if not rest:
                return Reply("usage: /registry search <query>", error=True)
            return await self.listing(" ".join(rest))
        yes = "--yes" in rest or "-y" in rest
        names = [w for w in rest if w not in ("--yes", "-y")]
        if verb == "add":
            if len(names) != 1:
                return Reply("usage: /registry install <name> [--yes]", error=True)
            return await self.add(app, names[0], yes=yes)
        if verb == "show":
            if len(names) != 1:
                return Reply("usage: /registry show <name>", error=True)
            return await self.show(names[0])
        if verb == "update":
            return await self.update(app, names, yes=yes)
        if verb == "verify":
            return self.verify_all()
        if verb == "remove":
            if len(rest) != 1:
                return Reply("usage: /registry remove <name>", error=True)
            return self.remove(rest[0])
        if verb == "confirm":
            return self.confirm()
        if verb == "cancel":
            if self.pending is None:
                return Reply("nothing is waiting to be installed")
            name, self.pending = self.pending.entry.name, None
            return Reply(f"dropped the pending install of {name}")
        if verb in ("help", "-h", "--help"):
            return Reply(USAGE)
        return await self.listing(args.strip())  # any other word searches

    # ---- browsing ----

    async def listing(self, query: str | None) -> Reply:
        index = await self.client_factory().fetch_index()
        entries = index.entries if query is None else index.search(query)
        lines = []
        for e in entries:
            mark = "  (installed)" if self.installs.is_installed(e.kind, e.name) else ""
            lines.append(f"`{e.kind[0].upper()} {e.name:<24}` {e.description}{mark}")
        if not lines:
            lines.append(f'nothing in the registry matches "{query}"' if query
                         else "the registry is empty")
        lines += _index_problems(index)
        title = f'registry: "{query}"' if query else "registry"
        return Reply("\n".join(lines), title,
                     "S skill, P plugin - /registry install <name> shows one in full before "
                     "installing it")

    def installed(self) -> Reply:
        lines = [f"`S {n}`" for n in self.installs.installed("skill")]
        lines += [f"`P {n}`" for n in self.installs.installed("plugin")]
        if not lines:
            return Reply("nothing installed from the registry")
        return Reply("\n".join(lines), "installed from the registry",
                     f"files under {self.installs.root}; /registry remove <name>")

    # ---- installing ----

    async def _prepare(self, arg: str) -> tuple[Pending, str]:
        """Fetch (digest checked), validate and preview the entry ``arg`` names."""
        kind, name = split_name(arg)
        why = name_problem(name)
        if why:
            raise RegistryError(f"{name!r} is not a registry name: it {why}")
        client = self.client_factory()
        index = await client.fetch_index()
        entry = self._pick(index, kind, name)
        data = await client.fetch_entry(entry)
        digest = hashlib.sha256(data).hexdigest()
        if entry.kind == "skill":
            text, notes = check_skill(data, entry.name)
            preview = skill_preview(entry, text, digest, notes)
        else:
            manifest = check_plugin(data, entry.name)
            text = manifest.dumps()
            preview = plugin_preview(entry, manifest, digest)
        return Pending(entry, text, digest), preview

    async def show(self, arg: str) -> Reply:
        pending, preview = await self._prepare(arg)
        entry = pending.entry
        state = ("installed" if self.installs.is_installed(entry.kind, entry.name)
                 else "not installed")
        return Reply(f"{preview}\n\n{entry.kind} {entry.name} is {state}",
                     f"registry: {entry.name}", f"/registry install {entry.name} installs it")

    async def add(self, app: Any, arg: str, *, yes: bool) -> Reply | None:
        pending, preview = await self._prepare(arg)
        entry = pending.entry
        if self.installs.is_installed(entry.kind, entry.name):
            preview += f"\n\nThis replaces the installed {entry.kind} {entry.name}."
        if yes:
            return _with_preview(app, preview, self._install(pending))
        if _can_confirm(app):
            app.write(preview)
            if await app.confirm(f"Install {entry.kind} {entry.name}?",
                                 "read it above first: enter installs, esc cancels"):
                return Reply(self._install(pending))
            return Reply(f"install of {entry.kind} {entry.name} cancelled")
        self.pending = pending
        how = (f"rerun with --yes to install it: agent registry install {arg} --yes" if self.cli
               else f"install it with /registry confirm (or /registry install {arg} --yes); "
                    "/registry cancel drops it")
        return _with_preview(app, preview, how)

    def _pick(self, index: Index, kind: str | None, name: str) -> Entry:
        found = [e for e in index.named(name) if kind is None or e.kind == kind]
        if not found:
            raise RegistryError(f'no {kind or "entry"} named "{name}" in the registry - try '
                                f"/registry search {name}")
        if len(found) > 1:
            raise RegistryError(f'"{name}" is both a skill and a plugin in the registry: say '
                                f"skill:{name} or plugin:{name}")
        return found[0]

    def confirm(self) -> Reply:
        if self.pending is None:
            return Reply("nothing is waiting to be installed - /registry install <name> first",
                         error=True)
        pending, self.pending = self.pending, None
        return Reply(self._install(pending))

    def _install(self, pending: Pending) -> str:
        entry = pending.entry
        path = self.installs.write(entry, pending.text)
        when = ("the agent can load it from its next step" if entry.kind == "skill"
                else "its rules apply from the next tool call")
        return f"installed {entry.kind} {entry.name} ({path}); {when}"

    # ---- keeping installs current and intact ----

    async def update(self, app: Any, names: list[str], *, yes: bool) -> Reply | None:
        """Reinstall installed entries whose index digest changed (or the ``names``)."""
        recorded = lock.load(self.installs.root)
        index = await self.client_factory().fetch_index()
        wanted = [(k, n) for k in ("skill", "plugin") for n in self.installs.installed(k)
                  if not names or n in names]
        stale = []
        for kind, name in wanted:
            found = [e for e in index.named(name) if e.kind == kind]
            if found and recorded.get(kind, {}).get(name, {}).get("index_sha256") \
                    != found[0].sha256:
                stale.append(f"{kind}:{name}")
        if not stale:
            return Reply("every installed entry is up to date" if wanted
                         else "nothing installed from the registry to update")
        if not yes:
            return Reply("updates available: " + ", ".join(stale) + " - "
                         + ("agent registry update --yes" if self.cli
                            else "/registry update --yes") + " installs them")
        lines = [(await self.add(app, arg, yes=True) or Reply("")).body for arg in stale]
        return Reply("\n".join(line for line in lines if line))

    def verify_all(self) -> Reply:
        """Every installed file against the install record."""
        lines, bad = [], 0
        for kind in ("skill", "plugin"):
            for name in self.installs.installed(kind):
                problem = self.installs.verify(kind, name)
                bad += problem is not None
                lines.append(f"{kind} {name}: " + ("ok" if problem is None else problem))
        if not lines:
            return Reply("nothing installed from the registry")
        return Reply("\n".join(lines), "registry verify",
                     f"{bad} changed since install" if bad else "all as installed",
                     error=bool(bad))

    # ---- removing ----

    def remove(self, arg: str) -> Reply:
        kind, name = split_name(arg)
        why = name_problem(name)
        if why:
            return Reply(f"{name!r} is not a registry name: it {why}", error=True)
        kinds = [k for k in ("skill", "plugin")
                 if (kind is None or k == kind) and self.installs.is_installed(k, name)]
        if not kinds:
            return Reply(f'no {kind or "skill or plugin"} named "{name}" is installed from '
                         "the registry (see /registry installed)", error=True)
        if len(kinds) > 1:
            return Reply(f'"{name}" is installed both as a skill and as a plugin: say '
                         f"skill:{name} or plugin:{name}", error=True)
        self.installs.remove(kinds[0], name)
        return Reply(f"removed {kinds[0]} {name}; it no longer applies from the next step")


def _can_confirm(app: Any) -> bool:
    return (bool(getattr(app, "interactive", False)) and callable(getattr(app, "confirm", None))
            and callable(getattr(app, "write", None)))


def _with_preview(app: Any, preview: str, line: str) -> Reply:
    """The preview goes into the transcript (where it can be scrolled in full) when the front
    end has one; otherwise it leads the reply."""
    if callable(getattr(app, "write", None)):
        app.write(preview)
        return Reply(line)
    return Reply(preview + "\n\n" + line)


def _index_problems(index: Index) -> list[str]:
    if not index.problems:
        return []
    shown = index.problems[:5]
    more = len(index.problems) - len(shown)
    return ["", "entries skipped: " + "; ".join(shown) + (f" (and {more} more)" if more else "")]


def show(app: Any, reply: Reply) -> str | None:
    """Put ``reply`` on screen through the command context, or return it as text."""
    if reply.error and callable(getattr(app, "error", None)):
        app.error(reply.body)
        return None
    multi = "\n" in reply.body or reply.title
    if multi and callable(getattr(app, "info", None)):
        app.info(reply.title or "registry", reply.body, reply.hint)
        return None
    return reply.body
