"""Building a run: config file → plugins → options → config → tools and provider.

Shared by the full-screen UI, headless mode, subcommands and tests, so every front end starts
the same way.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agent.boot import config as cfg
from agent.boot import plugins
from agent.contract.hooks import Hooks
from agent.contract.options import OptionRegistry
from agent.contract.provider_spec import ProviderSpec, auto_provider

if TYPE_CHECKING:
    from agent.contract.providers import ProviderSettings

#: Where in the state dir the plugin descriptions are cached (:mod:`agent.boot.plugin_cache`).
PLUGIN_CACHE_FILE = "plugin-cache.json"

#: Where in the state dir the entry point scan is cached (:mod:`agent.boot.entry_points`).
ENTRY_POINT_CACHE_FILE = "entry-points.json"


class StartupError(Exception):
    """A problem that stops startup, with its exit code (2 = usage or config)."""

    def __init__(self, message: str, code: int = 2) -> None:
        super().__init__(message)
        self.code = code


@dataclass
class Boot:
    """Everything loaded before a session can start."""

    config: cfg.Config
    host: plugins.PluginHost
    hooks: Hooks
    options: OptionRegistry


def blocked_plugins(file_data: Mapping[str, Any], env: Mapping[str, str],
                    flag_disabled: Iterable[str]) -> set[str]:
    """Plugins to block before import: config ``plugins.disabled`` + env + ``--disable``."""
    names: set[str] = set()
    section = file_data.get("plugins", {})
    if isinstance(section, dict) and isinstance(section.get("disabled"), list):
        names.update(str(n) for n in section["disabled"])
    names.update(n.strip() for n in env.get("AGENT_DISABLE_PLUGINS", "").split(",") if n.strip())
    names.update(flag_disabled)
    return names


def enabled_plugins(file_data: Mapping[str, Any], flag_enabled: Iterable[str]) -> set[str]:
    names = set(flag_enabled)
    section = file_data.get("plugins", {})
    if isinstance(section, dict) and isinstance(section.get("enabled"), list):
        names.update(str(n) for n in section["enabled"])
    return names


def load_plugins(*, env: Mapping[str, str] | None = None, disable: Iterable[str] = (),
                 enable: Iterable[str] = (), no_plugins: bool = False,
                 extra: Iterable[tuple[str, object]] = (),
                 warm_sdk_for: Sequence[str] | None = None) -> tuple[
                     cfg.Paths, dict[str, Any], plugins.PluginHost, Hooks, OptionRegistry]:
    """Read the config file and load plugins; raises :class:`StartupError` on a bad file.

    ``warm_sdk_for`` (the command line of a run that will send a request) starts the likely
    provider's SDK import on a thread first (:mod:`agent.boot.sdk_warmup`)."""
    env = os.environ if env is None else env
    paths = cfg.Paths.resolve(env)
    try:
        file_data = cfg.read_toml(paths.config_file)
    except cfg.ConfigError as exc:
        raise StartupError(str(exc)) from None
    cached = env.get("AGENT_PLUGIN_CACHE", "1") != "0"
    cache = paths.state_dir / PLUGIN_CACHE_FILE if cached else None
    if warm_sdk_for is not None and env.get("AGENT_SDK_WARMUP", "1") != "0":
        from agent.boot import sdk_warmup

        sdk_warmup.start(sdk_warmup.guess_modules(warm_sdk_for, env, file_data, cache))
    host = plugins.load(disabled=blocked_plugins(file_data, env, disable),
                        enabled=enabled_plugins(file_data, enable),
                        builtin_only=no_plugins, extra=extra, cache=cache,
                        entry_point_cache=paths.state_dir / ENTRY_POINT_CACHE_FILE
                        if cached else None)
    hooks = Hooks(host.pm)
    options = OptionRegistry()
    for option in cfg.CORE_OPTIONS:
        options.add(option)
    hooks.addoption(options)
    return paths, file_data, host, hooks, options


def finish_config(paths: cfg.Paths, file_data: dict[str, Any], host: plugins.PluginHost,
                  hooks: Hooks, options: OptionRegistry, flag_values: Mapping[str, Any], *,
                  env: Mapping[str, str] | None = None, workspace: Path | None = None,
                  headless: bool = False, permission_flags: Any = None,
                  no_plugins: bool = False,
                  foreign_rules: Mapping[str, list[str]] | None = None) -> Boot:
    """Validate every config layer, read the project config, run ``agent_configure``.
    ``permission_flags`` are the run's ``--allow``/``--deny`` rules, ``no_plugins`` is
    ``--no-plugins``."""
    try:
        config = cfg.build(paths, options, file_data, flag_values, env, workspace)
        project_file = config.workspace / ".agent" / "config.toml"
        project = cfg.read_toml(project_file)
    except cfg.ConfigError as exc:
        raise StartupError(str(exc)) from None
    config.headless = headless
    config.plugins = host
    config.permission_flags = permission_flags
    config.no_plugins = no_plugins
    config.foreign_tool_rules = {k: list(v) for k, v in (foreign_rules or {}).items() if v}
    # A project may tighten permissions, never loosen them (see agent.loop.permissions).
    config.project_permission = project.get("permission", {})
    config.project_config = project
    try:
        hooks.configure(config)
    except cfg.ConfigError as exc:
        raise StartupError(str(exc)) from None
    if config.foreign_tool_rules:  # typed, and no plugin read them: never ignore a deny
        raise StartupError("--allowedTools/--disallowedTools take Claude Code's rule syntax, "
                           "which the compat plugin reads, and it is not enabled; enable it "
                           "or write the rules as --allow/--deny TOOL:PATTERN")
    from agent.boot import config_keys

    # After configure: the notices of a run name every key no loaded plugin declared.
    config.notices.extend(config_keys.warnings(config))
    from agent.contain.private import secure_home
    from agent.contain.sandbox import sandbox_for

    secure_home(paths, deep=False)  # an older, looser install is tightened on its next start
    sandbox_for(config)  # starts the sandbox probe now, in the background
    return Boot(config, host, hooks, options)


def provider_settings(config: cfg.Config, specs: Mapping[str, ProviderSpec],
                      env: Mapping[str, str] | None = None, *, require_key: bool = True
                      ) -> ProviderSettings:
    """Resolve provider, model, URL and key.  Key order: ``AGENT_API_KEY`` > config
    ``api_key`` > the provider's standard variable (``OPENAI_API_KEY``...)."""
    from agent.contract.providers import ProviderSettings

    env = os.environ if env is None else env
    name = config.get("provider") or auto_provider(specs, env)
    available = ", ".join(sorted(specs)) or "none (are the provider plugins disabled?)"
    if not name:
        raise StartupError("no provider chosen: set provider in the config file, "
                           f"AGENT_PROVIDER or --provider. Available: {available}")
    spec = specs.get(name)
    if spec is None:
        raise StartupError(f'unknown provider "{name}". Available: {available}')
    key = config.get("api_key") or (env.get(spec.env_key) if spec.env_key else None)
    base_url = config.get("base_url") or None
    if not key and (spec.keyless or _is_local(base_url)):
        # Local servers (Ollama, LM Studio, llama.cpp) take any key or none at all.
        key = "not-needed"
    if not key and require_key:
        where = f"set {spec.env_key} or AGENT_API_KEY" if spec.env_key else "set AGENT_API_KEY"
        raise StartupError(
            f'no API key for provider "{name}": {where}, or add api_key to '
            f"{config.config_file}")
    return ProviderSettings(
        provider=name,
        model=config.get("model") or spec.default_model or "",
        base_url=base_url,
        api_key=key,
        max_retries=int(config.get("max_retries")),
        timeout=float(config.get("request_timeout")),
        retry_after_cap=float(config.get("retry_after_cap")),
        retry_backoff=float(config.get("retry_backoff")),
        stream_idle_timeout=float(config.get("stream_idle_timeout")),
        request_deadline=float(config.get("request_deadline")),
        options={o.key: config.get(o.key) for o in config.options},
    )


def _is_local(base_url: str | None) -> bool:
    """True for an endpoint on this machine (``localhost``, ``127.x``, ``::1``)."""
    if not base_url:
        return False
    from urllib.parse import urlsplit

    host = (urlsplit(base_url).hostname or "").lower()
    return host == "localhost" or host.endswith(".localhost") or host.startswith("127.") \
        or host == "::1"
