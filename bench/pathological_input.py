"""Pathological input for the glob matcher, the registry's rules and the markdown renderer.

The tests prove these inputs get the right answer (a backtracking matcher would never return
and the test would time out); this measures how long they take, each against a baseline on
input of the same size in the same run: one ``str.find`` scan of the subject for the globs,
one plain rule for the registry, plain prose of the same length for markdown. Best of N.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from agent import Effects  # noqa: E402
from agent.lib.globmatch import glob_match  # noqa: E402


def best(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=5)
    repeat = parser.parse_args().repeat
    rows = []

    subject = "a" * 1_000_000
    scan = best(lambda: subject.find("b"), repeat)
    for name, pattern in [("*a{198}b", "*" + "a" * 198 + "b"), ("(*a){100}b", "*a" * 100 + "b"),
                          ("*(?a){99}b", "*" + "?a" * 99 + "b")]:
        took = best(lambda p=pattern: glob_match(p, subject), repeat)
        rows.append((f"glob {name} on 1,000,000 chars", took, "one str.find scan", scan))
    short = "a" * 5000
    took = best(lambda: glob_match("*a*a*a*a*a*a*a*a*a*a*a*b", short), repeat)
    rows.append(("glob (*a){11}*b on 5,000 chars", took, "one str.find scan",
                 best(lambda: short.find("b"), repeat)))

    from plugins_builtin.registry import enforce
    from plugins_builtin.registry.manifest import validate

    def manifest(patterns):
        return validate({"name": "heavy", "description": "d",
                         "deny": [{"tools": ["bash"], "commandPattern": p, "reason": "r"}
                                  for p in patterns]})

    heavy = manifest(["*" + "a" * 150 + f"{i}*" for i in range(50)])
    plain = manifest(["rm -rf /*"])
    text = "echo " + "".join(random.Random(7).choice("ab") for _ in range(50_000))
    rows.append(("registry: 50 star-heavy rules, 50,000-char command",
                 best(lambda: enforce.judge((heavy,), "bash", Effects(command=text), ROOT),
                      repeat),
                 "one plain rule", best(lambda: enforce.judge(
                     (plain,), "bash", Effects(command=text), ROOT), repeat)))

    from plugins_builtin import markdown
    nasty = ("*" * 5000 + "_" * 5000 + "`" * 3000 + "[" * 3000 + "> " * 2000 + "\n"
             + "| a " * 500 + "|\n" + "|---" * 500 + "|\n" + "- " * 2000 + "x")
    words = "the quick brown fox jumps over the lazy dog "
    prose = (words * (len(nasty) // len(words) + 1))[:len(nasty)]
    rows.append((f"markdown: hostile answer ({len(nasty):,} chars) at width 80",
                 best(lambda: markdown.render(nasty).render((80,)), repeat),
                 "prose of the same length", best(lambda: markdown.render(prose).render((80,)),
                                                  repeat)))

    print(f"{'case':52} {'ours':>10}  {'baseline':>33}  ratio")
    for name, ours, base_name, base in rows:
        print(f"{name:52} {ours * 1000:8.2f}ms  {base_name:>24} {base * 1000:6.2f}ms  "
              f"{ours / base:7.1f}x")


if __name__ == "__main__":
    main()
