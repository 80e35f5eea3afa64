"""Registry: /registry installs skills and data-only plugins (deny rules, prompt text) over https.

A registry plugin is a JSON manifest of deny rules and an optional prompt appendix, never
code.  Installed manifests live in ``<config dir>/registry/plugins``; they are enforced on the
effects of every tool call (paths and shell commands) and re-read when the directory changes,
so an install or a removal applies from the next call.  See ``docs/registry.md``.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

from agent import Fragment, Option, SlashCommand, hookimpl
from agent.boot.plugins import PluginStatus

from .client import RegistryClient, RegistryError
from .commands import Installs, RegistryCommand, plain
from .enforce import InstalledPlugins, judge, read_installed
from .sources import Sources

INSTALLED_SUFFIX = " (installed)"
GUARD_NAME = "registry-installed"

#: Nothing installed (no <config dir>/registry): no manifest to enforce, no skill to check,
#: so a run need not import this plugin (agent.boot.lazy_plugins); /registry still imports it.
AGENT_IDLE_WHEN = {"absent": ["registry"]}


class InstalledManifests:
    """The hooks that put installed manifests in force for one configuration.

    Registered on the plugin manager at configure time (so a guard call without a session,
    as in ``agent policy explain``, still knows which config dir to read).
    """

    def __init__(self, config: Any) -> None:
        self.config = config
        self.plugins = InstalledPlugins(Path(config.paths.config_dir) / "registry" / "plugins")
        self._reported: object = None

    def current(self):
        installed = self.plugins.current()
        if installed is not self._reported:
            self._reported = installed
            _report(getattr(self.config, "plugins", None), installed)
        return installed

    @hookimpl
    def agent_guard_tool_call(self, call, effects, session):
        workspace = getattr(session, "workspace", None) or self.config.workspace
        return judge(self.current().manifests, call.name, effects, workspace)

    @hookimpl
    def agent_prompt_fragments(self, session):
        return [Fragment(f"registry-{m.name}",
                         f"From the installed plugin {m.name}:\n{m.appendix}", order=90)
                for m in self.current().manifests if m.appendix]


def _report(host: Any, installed: Any) -> None:
    """Show installed manifests in ``/plugins`` and the header as ``NAME (installed)``, and
    malformed ones as failed plugins."""
    status = getattr(host, "status", None)
    if not isinstance(status, dict):
        return
    for key in [k for k in status if k.endswith(INSTALLED_SUFFIX)]:
        del status[key]
    for manifest in installed.manifests:
        name = manifest.name + INSTALLED_SUFFIX
        status[name] = PluginStatus(name, "enabled", module="registry manifest",
                                    description=manifest.description)
    for path, problem in installed.problems:
        name = Path(path).name.removesuffix(".json") + INSTALLED_SUFFIX
        status[name] = PluginStatus(name, "failed", module=path,
                                    error=f"{path} skipped: {problem}")


def installed_rows(config_dir: Path) -> list[PluginStatus]:
    """Each installed manifest as a plugin row, read fresh (a file that turned invalid, or
    was changed since its install, shows as failed at once)."""
    installed = read_installed(Path(config_dir) / "registry" / "plugins")
    rows = [PluginStatus(m.name + INSTALLED_SUFFIX, "enabled", module="registry manifest",
                         description=m.description) for m in installed.manifests]
    for path, problem in installed.problems:
        name = Path(path).name.removesuffix(".json") + INSTALLED_SUFFIX
        rows = [r for r in rows if r.name != name]  # a changed bundled one: still enforced
        rows.append(PluginStatus(name, "failed", module=path,
                                 error=f"{path} skipped: {problem}"))
    return rows


def refuse_changed_skills(config_dir: Path) -> list[str]:
    """Registry skills changed since their install are moved aside (``NAME.md.refused``), so
    the skill loader never reads them; returns what was refused and why."""
    installs = Installs(Path(config_dir))
    refused = []
    for name in installs.installed("skill"):
        problem = installs.verify("skill", name)
        if problem is None:
            continue
        path = installs.path("skill", name)
        try:
            path.replace(path.with_name(path.name + ".refused"))
        except OSError as exc:
            problem += f" (and it could not be moved aside: {exc})"
        refused.append(f"registry skill {name} refused: {problem}")
    return refused


@hookimpl
def agent_plugin_rows(config_dir):
    return installed_rows(config_dir)


def client_for(config: Any) -> Sources:
    """The bundled index plus the configured one (https only: no setting allows anything
    else; signed when ``registry_public_key`` is set)."""
    return Sources(RegistryClient(str(config.get("registry_url") or ""),
                                  public_key=str(config.get("registry_public_key") or "")))


@hookimpl
def agent_addoption(options):
    options.add(Option("registry_url", default="", env="AGENT_REGISTRY_URL", metavar="URL",
                       help="https URL of a registry index /registry browses besides the "
                            "bundled one (docs/registry.md)"))
    options.add(Option("registry_public_key", default="", metavar="KEY",
                       help="base64 ed25519 public key: the registry_url index must carry a "
                            "signature by it (<index URL>.sig)"))


@hookimpl
def agent_configure(config):
    if config.no_plugins:  # --no-plugins: installed manifests stay out too
        return
    hooks = InstalledManifests(config)
    host = getattr(config, "plugins", None)
    if host is not None:
        previous = host.pm.get_plugin(GUARD_NAME)
        if previous is not None:  # configured again: the new config's hooks replace them
            host.pm.unregister(previous)
        host.pm.register(hooks, name=GUARD_NAME)
    hooks.current()  # report malformed installs at startup
    # Before the skills plugin loads its catalogue (plugin-name order): a registry skill
    # changed since its install is refused, not read.
    for notice in refuse_changed_skills(Path(config.paths.config_dir)):
        if config.headless:  # the UI shows notices in its header; headless says it on stderr
            print(f"agent: {notice}", file=sys.stderr, flush=True)
        else:
            config.notices.append(notice)


@hookimpl
def agent_register_commands(register, config):
    command = RegistryCommand(Path(config.paths.config_dir), lambda: client_for(config))
    register(SlashCommand(
        "registry", "browse, preview and install skills and plugins", command.run,
        args="[list|installed|search <q>|add <name>|remove <name>]", takes_args=True,
        info=True))


def registry_cli(argv: list[str], boot: Any) -> int:
    """``agent registry [list | installed | search Q | show NAME | install NAME [--yes] |
    remove NAME | update [NAME] [--yes] | verify]``."""
    config = boot.config
    command = RegistryCommand(Path(config.paths.config_dir), lambda: client_for(config),
                              cli=True)
    try:
        reply = asyncio.run(command.dispatch(None, " ".join(argv)))
    except RegistryError as exc:
        print(f"agent: {exc}", file=sys.stderr)
        return 1
    if reply is None:
        return 0
    print(plain(reply.body), file=sys.stderr if reply.error else sys.stdout)
    return 1 if reply.error else 0


@hookimpl
def agent_register_cli_commands(register):
    register("registry", registry_cli, "browse and install registry skills and plugins",
             usage=[("[list | search Q | show NAME]", "browse the registry"),
                    ("install NAME | remove NAME | update [NAME]",
                     "manage installed skills and plugins"),
                    ("installed | verify", "what is installed, and whether it is intact")])
