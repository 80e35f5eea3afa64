"""Benchmark: our grep / glob / list_dir tools against raw ripgrep on the same tree.

    python bench/grep_list.py               # builds a tree from a copy of the stdlib
    python bench/grep_list.py --tree DIR    # or measures an existing tree
    python bench/grep_list.py --repeat 7

Prints best-of-N wall times and ours/raw ratios.  Not a test: nothing is asserted.  The raw
baselines get the same ignore behaviour (hidden files on, .git and node_modules off) but
ripgrep's own parallel traversal; ours walks in Python and hands ripgrep the file list, so
.agentignore is honoured and output order is stable.
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from agent.testing import make_boot, run_tool  # noqa: E402
from plugins_builtin.files import search  # noqa: E402
from plugins_builtin.files.listing import GLOB, LIST_DIR  # noqa: E402
from plugins_builtin.files.search import GREP  # noqa: E402

RAW_FILTERS = ["--hidden", "--no-require-git", "--no-config", "-g", "!.git", "-g",
               "!node_modules"]
PATTERNS = [
    ("literal, many hits", r"def __init__\(", False),
    ("regex, many hits", r"\w+Error\(", False),
    ("case-insensitive alternation", "todo|fixme", True),
    ("no hit (full scan)", "zq_no_such_token_qz", False),
]


def build_tree(dest: Path) -> Path:
    """A copy of the stdlib with a root and a nested .gitignore (and an .agentignore)."""
    stdlib = Path(sysconfig.get_path("stdlib"))
    tree = dest / "tree"
    shutil.copytree(stdlib, tree, ignore=shutil.ignore_patterns("site-packages"),
                    symlinks=True)
    (tree / ".gitignore").write_text("__pycache__/\n*.pyc\n*.so\n")
    if (tree / "test").is_dir():
        (tree / "test" / ".gitignore").write_text("*.txt\n")
    (tree / ".agentignore").write_text("idlelib/\n")
    return tree


def best(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tree", type=Path, help="measure this directory instead")
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args(argv)
    rg = search.find_rg()
    if rg is None:
        print("rg not found: install ripgrep==14.1.0", file=sys.stderr)
        return 1
    with tempfile.TemporaryDirectory() as tmp:
        tree = (args.tree or build_tree(Path(tmp))).resolve()
        home = Path(tmp) / "home"
        home.mkdir()
        config, _ = make_boot(tree, home, builtins=["files"])
        fallback, _ = make_boot(tree, home, builtins=["files"], file_data={"grep_fallback": True})

        def ours(tool, tool_args, cfg=config):
            return lambda: asyncio.run(run_tool(tool, tool_args, cfg))

        def raw(*rg_args):
            return lambda: subprocess.run([rg, *rg_args], cwd=tree, capture_output=True)

        files = subprocess.run([rg, "--files", *RAW_FILTERS], cwd=tree, capture_output=True,
                               text=True).stdout.count("\n")
        print(f"tree: {tree}  ({files} files visible to rg --files)")
        print(f"best of {args.repeat}; times in ms\n")
        rows = []
        raw_files = best(raw("--files", *RAW_FILTERS), args.repeat)
        rows.append(("glob **/* (all files)", best(ours(GLOB, {"pattern": "**/*",
                                                                "limit": 10**9}), args.repeat),
                     raw_files))
        rows.append(("glob **/*.py", best(ours(GLOB, {"pattern": "**/*.py", "limit": 10**9}),
                                          args.repeat), raw_files))
        rows.append(("list_dir depth 2", best(ours(LIST_DIR, {}), args.repeat), raw_files))
        rows.append(("list_dir depth 6", best(ours(LIST_DIR, {"depth": 6}), args.repeat),
                     raw_files))
        for label, pattern, icase in PATTERNS:
            tool_args = {"pattern": pattern, "ignoreCase": icase}
            rg_args = ["--line-number", "--no-heading", "--color", "never", "--max-count",
                       "200", *RAW_FILTERS, *(["--ignore-case"] if icase else []),
                       "--regexp", pattern, "."]
            raw_time = best(raw(*rg_args), args.repeat)
            rows.append((f"grep {label}", best(ours(GREP, tool_args), args.repeat), raw_time))
            rows.append(("  (python fallback)", best(ours(GREP, tool_args, fallback),
                                                      max(1, args.repeat // 2)), raw_time))
        width = max(len(r[0]) for r in rows)
        print(f"{'operation'.ljust(width)}  {'ours':>8}  {'raw rg':>8}  ours/raw")
        for label, mine, base in rows:
            print(f"{label.ljust(width)}  {mine * 1000:8.1f}  {base * 1000:8.1f}  "
                  f"{mine / base:7.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
