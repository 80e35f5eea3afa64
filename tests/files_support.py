"""Helpers for the files plugin tests: a booted host with only the files plugin, and a way
to call its tools exactly as the session does (schema check, run, cap)."""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agent.contract.tools import ToolResult
from agent.testing import make_boot, run_tool


@dataclass
class FilesEnv:
    workspace: Path
    home: Path
    config: Any
    hooks: Any
    tools: dict[str, Any]

    async def call(self, name: str, args: dict[str, Any], session: Any = None) -> ToolResult:
        return await run_tool(self.tools[name], args, self.config, session=session)

    async def ok(self, name: str, args: dict[str, Any]) -> str:
        result = await self.call(name, args)
        assert not result.is_error, result.output
        return result.output

    async def err(self, name: str, args: dict[str, Any]) -> str:
        result = await self.call(name, args)
        assert result.is_error, result.output
        return result.output

    async def look(self, rel: str) -> None:
        """Read ``rel`` with read_file, as the model does before it changes a file."""
        await self.ok("read_file", {"path": rel})

    def write(self, rel: str, content: str | bytes) -> Path:
        path = self.workspace / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, encoding="utf-8")
        return path

    def read(self, rel: str) -> str:
        return (self.workspace / rel).read_text(encoding="utf-8")


def boot_files(tmp_path: Path, **file_data: Any) -> FilesEnv:
    workspace = tmp_path / "ws"
    home = tmp_path / "home"
    workspace.mkdir(parents=True, exist_ok=True)
    home.mkdir(parents=True, exist_ok=True)
    config, hooks = make_boot(workspace, home, builtins=["files"], file_data=file_data)
    tools = {name: tool for name, tool in hooks.tools(config).items() if tool.plugin == "files"}
    return FilesEnv(workspace.resolve(), home, config, hooks, tools)


def snapshot(root: Path) -> dict[str, str]:
    """Every entry under ``root`` with a content hash (links by target), for "unchanged"."""
    out: dict[str, str] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            path = Path(dirpath) / name
            rel = path.relative_to(root).as_posix()
            if path.is_symlink():
                out[rel] = "link:" + os.readlink(path)
            elif path.is_dir():
                out[rel] = "dir"
            else:
                out[rel] = hashlib.sha256(path.read_bytes()).hexdigest()
    return out
