"""Startup: `agent --version`, `agent --help`, `agent plugins` against `python -c pass` and a
bare `import openai`, and the same of `codex`/`claude` when on PATH (never installed); byte
code cached.  Prints a markdown table; run `python bench/startup.py`."""

from __future__ import annotations

import shutil
import sys

from _common import compile_bytecode, isolated_env, python_pass, row, wall


def main() -> list[str]:
    compile_bytecode()
    env = isolated_env()
    base = python_pass()
    agent = [sys.executable, "-m", "agent"]
    lines = ["| measurement | ours | baseline | ratio |", "|---|---|---|---|"]
    for label, args in (("agent --version", ["--version"]), ("agent --help", ["--help"]),
                        ("agent plugins", ["plugins"])):
        lines.append(row(label, wall(agent + args, env=env), base, "python -c pass"))
    sdk = wall([sys.executable, "-c", "import openai"], env=env)
    lines.append(row("python -c 'import openai' (what we avoid)", sdk, base, "python -c pass"))
    for peer in ("codex", "claude"):
        if shutil.which(peer) is None:
            lines.append(f"| {peer} --version, --help | not on PATH | | |")
            continue
        for flag in ("--version", "--help"):
            lines.append(row(f"{peer} {flag}", wall([peer, flag], env=env), base,
                             "python -c pass"))
    return lines


if __name__ == "__main__":
    print("\n".join(main()))
