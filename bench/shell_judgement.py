"""Permission fatigue and the cost of judging a command.

50 everyday commands a coding agent runs: how many run without a prompt under the default
policy (no rules), and how many of their writing variants do (the goal is none).  Then the
analyser's cost: the median time to judge a 200-character command and a 30 KB one, beside
the old hand-written splitter measured in the same run.  Run ``python bench/shell_judgement.py``.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

import _old_splitter  # noqa: E402

from agent.contract.tools import Effects  # noqa: E402
from agent.loop import permissions  # noqa: E402
from agent.shell.analysis import analyse  # noqa: E402
from agent.shell.parse import parse  # noqa: E402

# (everyday command, a writing variant of it)
EVERYDAY: list[tuple[str, str]] = [
    ("ls", "ls > listing.txt"),
    ("ls -la src", "ls -la src | tee listing.txt"),
    ("pwd", "pwd > here.txt"),
    ("cat README.md", "cat README.md > copy.md"),
    ("head -n 40 src/app.py", "head -n 40 src/app.py > top.py"),
    ("tail -n 20 build.log", "tail -n 20 build.log >> summary.log"),
    ("wc -l src/*.py", "wc -l src/*.py > counts.txt"),
    ("tree -L 2", "tree -L 2 -o tree.txt"),
    ("stat setup.cfg", "stat setup.cfg | tee stat.txt"),
    ("file src/app.py", "file -C -m magic.mgc"),
    ("which python3", "which python3 > where.txt"),
    ("rg TODO src", "rg --pre ./filter.sh TODO src"),
    ("rg -n 'def main' --type py", "rg -n 'def main' --type py > hits.txt"),
    ("grep -rn import src", "grep -rn import src > imports.txt"),
    ("grep -c error build.log", "grep -c error build.log | tee n.txt"),
    ("find . -name '*.py'", "find . -name '*.pyc' -delete"),
    ("find src -type f -newer setup.cfg", "find src -type f -exec touch {} +"),
    ("git status", "git status > status.txt"),
    ("git status --short", "git stash"),
    ("git diff", "git diff --output=changes.patch"),
    ("git diff --stat HEAD~1", "git diff HEAD~1 > last.patch"),
    ("git log --oneline -20", "git log --oneline -20 --output=log.txt"),
    ("git show HEAD", "git show HEAD > head.patch"),
    ("git branch", "git branch topic"),
    ("git branch -a", "git branch -D topic"),
    ("git blame src/app.py", "git blame src/app.py > blame.txt"),
    ("git ls-files", "git ls-files | tee files.txt"),
    ("git rev-parse HEAD", "git rev-parse HEAD > rev.txt"),
    ("git log -p -- src/app.py | head -50", "git log -p -- src/app.py > history.txt"),
    ("git remote -v", "git remote add upstream ../x"),
    ("git tag", "git tag v1.0"),
    ("du -sh .", "du -sh . > size.txt"),
    ("df -h", "df -h > disk.txt"),
    ("date", "date > now.txt"),
    ("echo $PATH", "echo $PATH > path.txt"),
    ("sort names.txt | uniq -c", "sort -o names.txt names.txt"),
    ("diff a.txt b.txt", "diff a.txt b.txt > ab.diff"),
    ("jq .name package.json", "jq .name package.json > name.txt"),
    ("python3 --version", "python3 --version > version.txt"),
    ("node --version", "node --version | tee node.txt"),
    ("pip list", "pip list > requirements.txt"),
    ("sed -n '1,20p' setup.cfg", "sed -i 's/a/b/' setup.cfg"),
    ("awk '{print $1}' names.txt", "awk '{print $1 > \"out\"}' names.txt"),
    ("cut -d, -f1 data.csv | sort | uniq", "cut -d, -f1 data.csv > col.txt"),
    ("ls src && cat setup.cfg", "ls src && cat setup.cfg > x.cfg"),
    ("cd src && ls", "cd src && touch new.py"),
    ("for f in src/*.py; do wc -l \"$f\"; done", "for f in src/*.py; do touch \"$f\"; done"),
    ("npm test", "npm test > test.log"),
    ("pytest -q", "pytest -q > pytest.log"),
    ("make", "make > make.log"),
]
#: The ones that are not read-only (they run project code): asked about by design.
RUNS_CODE = {"npm test", "pytest -q", "make"}


def workspace() -> str:
    ws = tempfile.mkdtemp(prefix="judge-")
    subprocess.run(["git", "init", "-q"], cwd=ws, check=True)
    os.makedirs(os.path.join(ws, "src"))
    return ws


def allowed(command: str, ws: str) -> bool:
    effects = Effects(command=command)
    return permissions.decide("bash", effects, {}, workspace=ws).decision == "allow"


def median_ms(fn, text: str, runs: int) -> float:
    times = []
    for _ in range(runs):
        analyse.cache_clear()
        started = time.perf_counter()
        fn(text)
        times.append(time.perf_counter() - started)
    return statistics.median(times) * 1000


SHORT = ("git status --short && git diff --stat HEAD~1 | head -20; for f in src/*.py; do "
         "wc -l \"$f\"; done; grep -rn 'TODO' src | sort | uniq -c | sort -rn | head -5 && "
         "find . -name '*.py' -newer setup.cfg | xargs wc -l")[:200]
LONG = " && ".join(f"test -f src/mod{i}.py && grep -c 'def ' src/mod{i}.py" for i in range(640))
HEREDOC = "cat > notes.md <<'EOF'\n" + ("A line of notes about the module, long enough.\n" * 700)[
    :30_000] + "EOF\n"


def main() -> None:
    ws = workspace()
    read_only = [c for c, _ in EVERYDAY if c not in RUNS_CODE]
    runs_free = [c for c in read_only if allowed(c, ws)]
    asked = [c for c in read_only if c not in runs_free]
    writing_free = [w for _, w in EVERYDAY if allowed(w, ws)]
    print(f"everyday commands: {len(EVERYDAY)} ({len(read_only)} read-only, "
          f"{len(RUNS_CODE)} run project code)")
    print(f"read-only ones running without a prompt: {len(runs_free)} of {len(read_only)} "
          f"(goal >= 45)")
    if asked:
        print("  still asked: " + "; ".join(asked))
    print(f"their writing variants running without a prompt: {len(writing_free)} of "
          f"{len(EVERYDAY)} (goal 0)")
    if writing_free:
        print("  ESCAPED: " + "; ".join(writing_free))
    print()
    print("| analyser cost | ours ms | old splitter ms | ratio | goal |")
    print("|---|---|---|---|---|")
    for label, text, runs, goal in (("200 characters", SHORT, 300, "<= 2 ms"),
                                    (f"{len(LONG) // 1000} KB chain", LONG, 15, "<= 50 ms"),
                                    (f"{len(HEREDOC) // 1000} KB here-document", HEREDOC, 15,
                                     "<= 50 ms")):
        ours = median_ms(analyse, text, runs)
        old = median_ms(_old_splitter.parse, text, runs)
        print(f"| {label} | {ours:.3f} | {old:.3f} | {ours / old:.2f}x | {goal} |")
    parsed_only = median_ms(parse, LONG, 15)
    print(f"\n(parse alone on the chain: {parsed_only:.2f} ms; the rest is the analysis)")


if __name__ == "__main__":
    main()
