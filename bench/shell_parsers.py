"""Which shell parser should judge commands: tree-sitter-bash, bashlex, or the old splitter.

One corpus of command lines, each with the programs it really runs.  For each parser:
how many lines it reads completely and right (every program found), how many it reads
*wrong while claiming success* (a program missed and no error: an escape), how many it
refuses (a parse error: fails closed, so a person is asked), and its median time on a
200-character and a 30 KB command.  bashlex is optional (``pip install bashlex``; GPL-3,
so it could never ship with agent); each parser gets the same wrapper peeling and nested
``-c`` reading, so the parsers are what differs.  Run ``python bench/shell_parsers.py``.
"""

from __future__ import annotations

import os
import statistics
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

import _old_splitter  # noqa: E402

from agent.shell import parse as shell  # noqa: E402
from agent.shell.wrappers import peel, script_operand  # noqa: E402

# (command line, programs it runs).  Grown from the spellings in the permission issue.
CORPUS: list[tuple[str, set[str]]] = [
    ("ls -la", {"ls"}),
    ("git status && rm -rf x", {"git", "rm"}),
    ("a | b |& c; d & e || f", {"a", "b", "c", "d", "e", "f"}),
    ("echo $(rm -rf x)", {"echo", "rm"}),
    ("echo `rm x`", {"echo", "rm"}),
    ('echo "in $(rm x) quotes"', {"echo", "rm"}),
    ("(cd sub; rm x) && echo", {"cd", "rm", "echo"}),
    ("{ rm -rf a; }", {"rm"}),
    ("if true; then rm x; elif a; then b; else c; fi", {"true", "rm", "a", "b", "c"}),
    ("while read f; do rm $f; done < list", {"read", "rm"}),
    ("until false; do rm x; done", {"false", "rm"}),
    ("for f in *; do rm \"$f\"; done", {"rm"}),
    ("for ((i=0;i<3;i++)); do rm x$i; done", {"rm"}),
    ("case $x in a) rm x;; *) ls;; esac", {"rm", "ls"}),
    ("f() { rm -rf d; }; f", {"rm", "f"}),
    ("function g { rm x; }", {"rm"}),
    ("! rm x", {"rm"}),
    ("diff <(rm a) >(tee b)", {"diff", "rm", "tee"}),
    ("cat <<EOF\n$(rm x)\nEOF", {"cat", "rm"}),
    ("cat <<EOF\n`rm x`\nEOF", {"cat", "rm"}),
    ("cat <<'EOF'\n$(not run)\nEOF", {"cat"}),
    ("bash -c 'rm -rf x'", {"bash", "rm"}),
    ("sh -c \"bash -c 'rm x'\"", {"sh", "bash", "rm"}),
    ("eval 'rm -rf x'", {"eval", "rm"}),
    ("x=${y:-$(rm z)}", {"rm"}),
    ("echo $((1 + $(rm q)))", {"echo", "rm"}),
    ("[[ -f $(rm a) ]] && [ -f b ]", {"rm"}),
    ("export A=$(rm x)", {"rm"}),
    ("local b=`rm y`", {"rm"}),
    ("echo ${x//a/$(rm)}", {"echo", "rm"}),
    ("a=(1 $(rm x)); echo", {"rm", "echo"}),
    ("sudo -u root env A=1 timeout 5 nice -n 3 rm -rf x", {"rm"}),
    ("env -S 'rm -rf x'", {"rm"}),
    ("find . -exec rm {} \\;", {"find", "rm"}),
    ("find . | xargs -0 rm", {"find", "rm"}),
    ("r\\m x; 'r'm y; $'\\x72m' z", {"rm"}),
    ("echo a # ; rm x", {"echo"}),
    ("echo 'a; rm x'", {"echo"}),
    ("echo \"a; rm x\"", {"echo"}),
    ("echo a\\;rm x", {"echo"}),
    ("time rm x", {"rm"}),
    ("coproc rm x", {"rm"}),
    ("select x in a; do rm; done", {"rm"}),
    ("cmd1 &\ncmd2", {"cmd1", "cmd2"}),
    ("a \\\n b; c", {"a", "c"}),
    ("echo hi >&2 2>/dev/null; rm x", {"echo", "rm"}),
    ("trap 'rm x' EXIT", {"trap", "rm"}),
    ("echo 'unbalanced; rm x", None),
    ("echo $(rm", None),
    ("if true; then rm x", None),
]


# ---- adapters: each returns (names found, read without error) ---------------------------------

def ours(text: str) -> tuple[set[str], bool]:
    script = shell.parse(text)
    return {c.name for c in script.commands if c.name}, script.complete


def old(text: str) -> tuple[set[str], bool]:
    script = _old_splitter.parse(text)
    return ({os.path.basename(c.argv[0]) for c in script.commands if c.argv}, script.complete)


def bashlex_names(text: str, depth: int = 0) -> tuple[set[str], bool]:
    import bashlex

    names: set[str] = set()
    try:
        trees = bashlex.parse(text)
    except Exception:
        return names, False
    ok = True

    class Visitor(bashlex.ast.nodevisitor):
        def visitcommand(self, node, parts):
            nonlocal ok
            words = [p.word for p in parts if p.kind == "word"]
            peeled = peel(words, [False] * len(words))
            if peeled.argv:
                names.add(os.path.basename(peeled.argv[0]))
                found = script_operand(peeled.argv, peeled.dynamic)
                if found and depth < 10:
                    inner, inner_ok = bashlex_names(found[0], depth + 1)
                    names.update(inner)
                    ok = ok and inner_ok
            return True

    for tree in trees:
        Visitor().visit(tree)
    return names, ok


def score(adapter) -> dict[str, int]:
    counts = {"right": 0, "escape": 0, "refused": 0, "crash": 0}
    for text, expected in CORPUS:
        try:
            found, complete = adapter(text)
        except Exception:
            counts["crash"] += 1
            continue
        if expected is None:
            counts["right" if not complete else "escape"] += 1
        elif not complete:
            counts["refused"] += 1
        elif expected <= found:
            counts["right"] += 1
        else:
            counts["escape"] += 1
    return counts


def median_ms(adapter, text: str, runs: int) -> float:
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        adapter(text)
        times.append(time.perf_counter() - started)
    return statistics.median(times) * 1000


SHORT = ("git status && git diff --stat | head -20; for f in src/*.py; do wc -l \"$f\"; done; "
         "echo $(date) > /dev/null && sudo -u me env A=1 timeout 5 rm -rf build || "
         "find . -name '*.pyc' -exec rm {} \\;")[:200]
LONG = "cat > big.py <<'EOF'\n" + ("print('x' * 40)  # some generated code here\n" * 700)[
    :30_000] + "EOF\n"
CHAIN = " && ".join(f"test -f f{i} && echo \"$(basename f{i})\"" for i in range(720))


def main() -> None:
    parsers = [("tree-sitter-bash (agent.shell.parse)", ours), ("old splitter", old)]
    try:
        import bashlex  # noqa: F401
        parsers.append(("bashlex 0.18", bashlex_names))
    except ImportError:
        print("(bashlex not installed: pip install bashlex to include it)")
    print(f"corpus: {len(CORPUS)} command lines\n")
    print("| parser | right | escapes | refused (asks) | crashes | 200 chars ms | 30 KB heredoc ms"
          " | 30 KB chain ms |")
    print("|---|---|---|---|---|---|---|---|")
    for label, adapter in parsers:
        counts = score(adapter)
        short = median_ms(adapter, SHORT, 200)
        long = median_ms(adapter, LONG, 15)
        chain = median_ms(adapter, CHAIN, 15)
        print(f"| {label} | {counts['right']} | {counts['escape']} | {counts['refused']} | "
              f"{counts['crash']} | {short:.3f} | {long:.2f} | {chain:.2f} |")


if __name__ == "__main__":
    main()
