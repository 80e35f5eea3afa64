"""Running the installed ``agent`` command as a user would, with an isolated AGENT_HOME."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

SCRUBBED = ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "AGENT_API_KEY", "AGENT_PROVIDER",
            "AGENT_MODEL", "AGENT_BASE_URL", "AGENT_DISABLE_PLUGINS", "AGENT_OPENAI_API")


def agent_env(home: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in SCRUBBED}
    env["AGENT_HOME"] = str(home)
    env.update(extra)
    return env


def run_agent(args: list[str], *, home: Path, cwd: Path, input: str | None = None,
              timeout: float = 60, **env: str) -> subprocess.CompletedProcess[str]:
    """``agent ARGS`` (via ``python -m agent`` so the test's interpreter is used)."""
    return subprocess.run([sys.executable, "-m", "agent", *args], cwd=cwd, input=input,
                          capture_output=True, text=True, timeout=timeout,
                          env=agent_env(home, **env))
