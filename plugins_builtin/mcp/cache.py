"""The tools cache: ``<state dir>/mcp/tools-cache.json``.

Each server's last tool list, keyed by server name and the hash of its config
(:meth:`ServerConfig.fingerprint`), so a restart registers the tools at once while the
servers are still starting.  A changed config misses the cache; a server that connects
overwrites its entry.  A broken or unreadable file is treated as empty: it is only a cache.
"""

from __future__ import annotations

import json
import logging
import threading
from pathlib import Path
from typing import Any

from agent import atomic_write

log = logging.getLogger("agent.mcp")

VERSION = 2  # 2: tool definitions carry task_support and annotation hints

#: A tool as cached and as the plugin passes it around: name, description, input_schema.
ToolDef = dict[str, Any]

_lock = threading.Lock()


def cache_path(state_dir: Path) -> Path:
    return Path(state_dir) / "mcp" / "tools-cache.json"


def _read(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict) or data.get("version") != VERSION:
        return {}
    servers = data.get("servers")
    return servers if isinstance(servers, dict) else {}


def load(state_dir: Path, name: str, fingerprint: str) -> list[ToolDef] | None:
    """The cached tools of ``name`` for this config, or None (never seen, or changed)."""
    entry = _read(cache_path(state_dir)).get(name)
    if not isinstance(entry, dict) or entry.get("hash") != fingerprint:
        return None
    tools = entry.get("tools")
    if not isinstance(tools, list):
        return None
    return [t for t in tools if isinstance(t, dict) and isinstance(t.get("name"), str)]


def load_prompts(state_dir: Path, name: str, fingerprint: str) -> list[dict[str, Any]]:
    """The cached prompts of ``name`` for this config (empty when none are known)."""
    entry = _read(cache_path(state_dir)).get(name)
    if not isinstance(entry, dict) or entry.get("hash") != fingerprint:
        return []
    prompts = entry.get("prompts")
    return [p for p in prompts if isinstance(p, dict) and isinstance(p.get("name"), str)] \
        if isinstance(prompts, list) else []


def store(state_dir: Path, name: str, fingerprint: str, tools: list[ToolDef],
          prompts: list[dict[str, Any]] | None = None) -> None:
    """Save ``tools`` (and ``prompts``) for ``name`` (atomically; a failure is logged, never
    raised)."""
    path = cache_path(state_dir)
    with _lock:
        try:
            servers = _read(path)
            entry: dict[str, Any] = {"hash": fingerprint, "tools": tools}
            if prompts:
                entry["prompts"] = prompts
            if servers.get(name) == entry:
                return
            servers[name] = entry
            atomic_write(path, json.dumps({"version": VERSION, "servers": servers}, indent=1,
                                          ensure_ascii=False), make_parents=True)
        except OSError as exc:
            log.warning("could not write the MCP tools cache %s: %s", path, exc)
