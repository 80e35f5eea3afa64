"""The source trees the tests of the tree itself (tests/meta) read: each file parsed once per
test process, and a faster :func:`ast.walk`.

The meta tests (layers, import cycles, literals in the core, the suite's hygiene) each read
every module of ``agent/``, ``plugins_builtin/`` or ``tests/`` and walk every node: about
1,300 parses and 2.7 million nodes visited through ``ast.walk`` per run, most of it the same
files read again by the next test.  A parse is kept by the file's path, size and mtime, so a
file that changed is read again; nothing here changes what a checker sees.  The trees
live as long as the process, out of the garbage collector's reach (see :func:`parse`).
"""

from __future__ import annotations

import ast
import gc
import os
from collections.abc import Iterator
from pathlib import Path

_parsed: dict[str, tuple[tuple[int, int], ast.Module]] = {}
#: Every node of a tree from :func:`parse`, in :func:`ast.walk`'s order, by the tree's id,
#: with the tree itself (kept alive by ``_parsed``, so its id is not reused).
_nodes: dict[int, tuple[ast.Module, list[ast.AST]]] = {}


def parse(path: Path) -> ast.Module:
    """``ast.parse`` of the file at ``path`` (UTF-8), once while the file is unchanged.  The
    tree is shared: a checker reads it, never changes it."""
    key = str(path)
    info = os.stat(key)
    stamp = (info.st_size, info.st_mtime_ns)
    known = _parsed.get(key)
    if known is not None and known[0] == stamp:
        return known[1]
    source = Path(key).read_text(encoding="utf-8")
    # A parse makes an object per node, none of which can be garbage before it is done, yet
    # the allocations set off collection after collection, each walking the young nodes;
    # and a kept tree is walked again by every full collection for the rest of the test
    # process. So the collector is paused for the parse and what exists then is frozen
    # out of its reach, as the agent does with what its start-up made (agent/lib/
    # collector.py). Measured over the ~530 files of agent/, plugins_builtin/, tests/ and
    # bench/ with 3 million allocations after: parse 3.1 s of CPU and later collections
    # 5.2 s as it was, 1.3 s and 1.9 s paused and frozen.
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        tree = ast.parse(source, key)
    finally:
        gc.freeze()
        if was_enabled:
            gc.enable()
    if known is not None:
        _nodes.pop(id(known[1]), None)
    _parsed[key] = (stamp, tree)
    _nodes[id(tree)] = (tree, [])
    return tree


def walk(node: ast.AST) -> Iterator[ast.AST]:
    """Every node under ``node`` (itself included) in the order :func:`ast.walk` gives them
    (breadth first), without its per-node generator overhead; for a whole tree from
    :func:`parse` the list is kept."""
    kept = _nodes.get(id(node))
    if kept is not None and kept[0] is node:
        if not kept[1]:
            kept[1].extend(_all_nodes(node))
        return iter(kept[1])
    return iter(_all_nodes(node))


def _all_nodes(node: ast.AST) -> list[ast.AST]:
    found = [node]
    for current in found:  # grows while it is read: breadth first, as ast.walk
        for field in current._fields:
            value = getattr(current, field, None)
            if isinstance(value, list):
                found.extend(item for item in value if isinstance(item, ast.AST))
            elif isinstance(value, ast.AST):
                found.append(value)
    return found
