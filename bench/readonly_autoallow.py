"""Benchmark: everyday read-only commands under the read-only sandbox they now get.

    python bench/readonly_autoallow.py            # 50 commands, 30 timing calls each way
    python bench/readonly_autoallow.py --runs 15

A command the default policy judges read-only runs without a prompt, in the read-only
sandbox (nobody approved it).  In one run, side by side, this prints:

- how many of 50 everyday read-only commands (listing, reading, searching, git inspection)
  the default policy still allows without a prompt (target: at least 45), and for each
  allowed one whether its result under the read-only sandbox is the same as unsandboxed
  (the bash tool's whole result: exit code, stdout, stderr);
- what the read-only sandbox adds per call: the bash tool running ``true`` with nobody's
  approval (read-only sandbox) against the same tool with ``sandbox = "off"``, alternating
  call by call so both see the same machine load; medians and the difference (goal: at
  most 15 ms).

The workspace is a local clone of this repository.  Not a test: nothing is asserted.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from agent.contain.sandbox import sandbox_for  # noqa: E402
from agent.loop import permissions  # noqa: E402
from agent.testing import make_boot, run_tool  # noqa: E402

EVERYDAY = (
    "ls", "ls -la", "ls -R docs | head -20", "pwd", "cat README.md | head -20",
    "head -5 setup.cfg", "tail -3 setup.cfg", "wc -l agent/contain/*.py",
    "sed -n 1,5p README.md", "nl setup.cfg | head", "sort setup.cfg | head -5",
    "cut -d= -f1 setup.cfg | head", "awk '{print $1}' README.md | head -3",
    "grep -n sandbox docs/security.md | head -5", "grep -rn 'def main' agent | head -5",
    "grep -c import agent/__init__.py", "find . -name '*.py' -path '*contain*' | sort | head",
    "find docs -type f | sort | head -5", "du -sh agent", "tr a-z A-Z < setup.cfg | head -3",
    "uniq README.md | head -3", "diff setup.cfg setup.cfg", "md5sum README.md",
    "sha256sum setup.cfg", "cksum README.md", "od -c setup.cfg | head -3",
    "basename agent/contain/sandbox.py", "dirname agent/contain/sandbox.py",
    "realpath setup.cfg", "test -f README.md && echo yes", "echo hello",
    "printf '%s\\n' a b", "which git", "uname -s", "git status", "git status --short",
    "git log --oneline -5", "git log -1 --format=%an", "git show --stat HEAD | head -20",
    "git diff HEAD --stat", "git branch", "git rev-parse HEAD", "git ls-files | wc -l",
    "git grep -n 'def spawn' | head -3", "git blame -L1,3 README.md",
    "git shortlog -sn HEAD | head -3", "git tag", "git remote -v", "git describe --always",
    "git diff HEAD~1 --name-only",
)


def clone(dest: Path) -> Path:
    ws = dest / "ws"
    subprocess.run(["git", "clone", "-q", "--no-hardlinks", str(ROOT), str(ws)], check=True)
    return ws


def judged_read_only(command: str, ws: Path) -> bool:
    from plugins_builtin.bash import _effects

    verdict = permissions.decide("bash", _effects({"command": command}), {}, {},
                                 workspace=str(ws))
    return verdict.decision == "allow" and verdict.source == "default"


def bare_bwrap(bwrap: str, runs: int) -> list[float]:
    """A bwrap with namespaces and a read-only root, no walls of ours: the floor."""
    argv = [bwrap, "--unshare-user", "--disable-userns", "--cap-drop", "ALL", "--unshare-pid",
            "--unshare-ipc", "--die-with-parent", "--unshare-net", "--ro-bind", "/", "/",
            "--dev", "/dev", "--proc", "/proc", "--", "true"]
    return [_timed(argv) for _ in range(runs)]


def bare_true(runs: int) -> list[float]:
    return [_timed(["true"]) for _ in range(runs)]


def _timed(argv: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(argv, check=False)
    return time.perf_counter() - start


async def main(runs: int) -> None:
    with tempfile.TemporaryDirectory(prefix="agent-bench-ro-") as tmp:
        base = Path(tmp)
        ws = clone(base)
        on, on_hooks = make_boot(ws, base / "a", builtins=["bash"])
        off, off_hooks = make_boot(ws, base / "b", builtins=["bash"],
                                   file_data={"sandbox": "off"})
        if not sandbox_for(on).active:
            raise SystemExit(sandbox_for(on).describe())
        bash_on, bash_off = on_hooks.tools(on)["bash"], off_hooks.tools(off)["bash"]

        allowed = same = 0
        print(f"{'command':48} {'prompt':8} read-only sandbox")
        for command in EVERYDAY:
            if not judged_read_only(command, ws):
                print(f"{command[:48]:48} {'asked':8} -")
                continue
            allowed += 1
            contained = await run_tool(bash_on, {"command": command}, on, allowed_by="policy")
            plain = await run_tool(bash_off, {"command": command}, off, allowed_by="user")
            equal = contained.output == plain.output
            same += equal
            print(f"{command[:48]:48} {'none':8} {'same output' if equal else 'DIFFERENT'}")
            if not equal:
                print("    sandboxed:  ", contained.output[:200].replace("\n", " | "))
                print("    unsandboxed:", plain.output[:200].replace("\n", " | "))

        times: dict[str, list[float]] = {"on": [], "off": []}
        for _ in range(2):  # warm both
            await run_tool(bash_on, {"command": "true"}, on, allowed_by="policy")
            await run_tool(bash_off, {"command": "true"}, off, allowed_by="user")
        for _ in range(runs):
            for name, tool, config, who in (("on", bash_on, on, "policy"),
                                            ("off", bash_off, off, "user")):
                start = time.perf_counter()
                await run_tool(tool, {"command": "true"}, config, allowed_by=who)  # type: ignore[arg-type]
                times[name].append(time.perf_counter() - start)
        ro = statistics.median(times["on"]) * 1000
        plain_ms = statistics.median(times["off"]) * 1000
        bare = statistics.median(bare_bwrap(sandbox_for(on).status.program, runs)) * 1000
        true = statistics.median(bare_true(runs)) * 1000
        print()
        print(f"allowed without a prompt: {allowed} of {len(EVERYDAY)} (target >= 45); "
              f"same output as unsandboxed: {same} of {allowed}")
        print(f"bash `true`, median of {runs}: read-only sandbox {ro:.1f} ms, unsandboxed "
              f"{plain_ms:.1f} ms, added {ro - plain_ms:.1f} ms (goal <= 15 ms), "
              f"ratio {ro / plain_ms:.2f}")
        print(f"the machine, same run: a bare `bwrap ... true` {bare:.1f} ms against `true` "
              f"{true:.1f} ms (bubblewrap's own share of the added cost)")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=30)
    asyncio.run(main(parser.parse_args().runs))
