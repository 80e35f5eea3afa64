#!/usr/bin/env python3
"""What every run pays before its first request, measured in one process.

1. A new state database (a first run, or each in-process run of the test suite in a new
   ``AGENT_HOME``): built in place (its empty file made first, the way it was built before)
   against built whole beside it and linked into place, the first build of a process and
   the next ones (written from the process's image of the first).  Wall and CPU, median.
2. ``plugins.load()`` of every installed plugin: pluggy's own ``register`` against the
   reuse of the hook implementations this process built before for the same module.

    python bench/per_run.py [--runs N]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def _medians(fn, runs: int) -> tuple[float, float]:
    walls, cpus = [], []
    for _ in range(runs):
        wall, cpu = time.perf_counter(), time.process_time()
        fn()
        walls.append(time.perf_counter() - wall)
        cpus.append(time.process_time() - cpu)
    return statistics.median(walls), statistics.median(cpus)


def bench_store(runs: int) -> None:
    from agent.state import store
    from agent.testing import make_boot

    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        config, _hooks = make_boot(base, base / "boot")
        schemas = config.store_schemas
        count = iter(range(10 ** 9))

        def new_folder() -> Path:
            return base / f"s{next(count)}"

        def in_place() -> None:
            folder = new_folder()
            folder.mkdir(mode=0o700)
            (folder / store.DB_NAME).touch(mode=0o600)
            store.Store.open(folder, schemas).close()

        def whole_first() -> None:
            store._IMAGES.clear()
            store.Store.open(new_folder(), schemas).close()

        def whole_again() -> None:
            store.Store.open(new_folder(), schemas).close()

        whole_again()  # the image
        base_wall, base_cpu = _medians(in_place, runs)
        for name, fn in (("built whole, first of a process", whole_first),
                         ("built whole, from the image", whole_again)):
            wall, cpu = _medians(fn, runs)
            print(f"new state database, {name}: {wall * 1000:6.2f} ms wall, "
                  f"{cpu * 1000:5.2f} ms CPU; in place {base_wall * 1000:6.2f} ms wall, "
                  f"{base_cpu * 1000:5.2f} ms CPU (x{base_wall / wall:.1f} wall, "
                  f"x{base_cpu / cpu:.1f} CPU faster)")


def bench_plugin_load(runs: int) -> None:
    from agent.boot import plugins

    for _ in range(3):
        plugins.load()
    results = {}
    for reuse in (False, True, False, True):  # alternated: the load weighs on both alike
        plugins._REUSE_IMPLS = reuse
        results.setdefault(reuse, []).append(_medians(plugins.load, runs)[1])
    plugins._REUSE_IMPLS = True
    own, ours = min(results[False]), min(results[True])
    print(f"plugins.load(): pluggy's register {own * 1000:5.2f} ms CPU, hook implementations "
          f"reused {ours * 1000:5.2f} ms CPU (x{own / ours:.1f} faster)")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=30)
    args = parser.parse_args()
    bench_store(args.runs)
    bench_plugin_load(args.runs)


if __name__ == "__main__":
    main()
