"""Startup: `agent --version`, `agent --help`, `agent plugins` against `python -c pass` and a
bare `import openai`.  Prints a markdown table; run `python bench/startup.py`."""

from __future__ import annotations

import sys

from _common import isolated_env, python_pass, row, wall


def main() -> list[str]:
    env = isolated_env()
    base = python_pass()
    agent = [sys.executable, "-m", "agent"]
    lines = ["| measurement | ours | baseline | ratio |", "|---|---|---|---|"]
    for label, args in (("agent --version", ["--version"]), ("agent --help", ["--help"]),
                        ("agent plugins", ["plugins"])):
        lines.append(row(label, wall(agent + args, env=env), base, "python -c pass"))
    sdk = wall([sys.executable, "-c", "import openai"], env=env)
    lines.append(row("python -c 'import openai' (what we avoid)", sdk, base, "python -c pass"))
    return lines


if __name__ == "__main__":
    print("\n".join(main()))
