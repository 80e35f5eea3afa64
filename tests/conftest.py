"""Shared fixtures: the same ones plugin authors get from ``agent.testing.pytest_plugin``.

Hypothesis runs without deadlines (see below).

The example third-party plugin in ``tests/example_plugin`` is made discoverable for this test
run only: its package and a ``dist-info`` (what pip would write) go into a throwaway directory
put on ``sys.path`` and ``PYTHONPATH``. Nothing is installed into the user's environment, so
their own ``agent`` keeps exactly the shipped plugins after the tests.
"""

from __future__ import annotations

import faulthandler
import os
import shutil
import signal
import sys
import tempfile
import tomllib
import typing
from pathlib import Path

import lanes
import pytest
from hypothesis import settings

# hangwatch: pytest-timeout's hang protection from one watchdog thread, not a thread a test.
pytest_plugins = ["agent.testing.pytest_plugin", "hangwatch"]

EXAMPLE_SOURCE = Path(__file__).parent / "example_plugin"
_throwaway: list[Path] = []
_keep_open: list[typing.TextIO] = []

# Hypothesis fails an example that takes longer than its deadline (200 ms by default): a
# wall-clock assertion, which a loaded machine breaks for no fault of the code. The suite has
# none (tests/meta/test_suite_hygiene.py); hangs are caught by pytest-timeout.
settings.register_profile("suite", deadline=None)
settings.load_profile("suite")

# Byte code is cached, as Python does by default, even where the environment says not to
# (PYTHONDONTWRITEBYTECODE=1, common in CI images and set on ours). Without the cache every
# pytest worker rewrites the asserts of every test module again (about 10 s of CPU per worker
# on the 2-core CI machine), and every ``agent`` process a test starts compiles agent/ and the
# builtin plugins from source before doing anything. Set here, before the test modules are
# collected, and in the environment the agent processes inherit.
sys.dont_write_bytecode = False
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)


def lay_out_distribution(source: Path, target: Path) -> None:
    """Copy a pure-Python project into ``target`` with the dist-info pip would write for it."""
    project = tomllib.loads((source / "pyproject.toml").read_text())["project"]
    name, version = project["name"], project["version"]
    for package in tomllib.loads((source / "pyproject.toml").read_text())["tool"][
            "setuptools"]["packages"]:
        shutil.copytree(source / package, target / package,
                        ignore=shutil.ignore_patterns("__pycache__"))
    info = target / f"{name.replace('-', '_')}-{version}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(
        f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n"
        f"Summary: {project.get('description', '')}\n")
    groups = project.get("entry-points", {})
    (info / "entry_points.txt").write_text("".join(
        f"[{group}]\n" + "".join(f"{key} = {value}\n" for key, value in entries.items()) + "\n"
        for group, entries in groups.items()))


def pytest_configure(config: pytest.Config) -> None:
    # Before any test module is collected: their @settings read lanes.examples() on import.
    lanes.configure(config)
    if lanes.fast_lane():
        settings.register_profile("fast-lane", parent=settings.get_profile("suite"),
                                  max_examples=lanes.examples(settings.default.max_examples))
        settings.load_profile("fast-lane")
    # pytest collects garbage five times at the end of every process (for unraisable
    # exceptions of objects freed late): a full pass over a worker's heap (the SDKs,
    # hypothesis, every module) each time, 1-2 s of CPU a worker on the tail of the run.
    # One pass still finds them (pytester sets it to 0 for the runs it makes in-process).
    try:
        from _pytest.unraisableexception import gc_collect_iterations_key
    except ImportError:  # another pytest: its own default
        pass
    else:
        config.stash[gc_collect_iterations_key] = 1
    # `kill -USR1 PID` of a pytest process (the controller or an xdist worker) writes every
    # thread's stack to $TMPDIR/agent-pytest-stacks-PID.txt: how a run that stalls without a
    # test timing out is read (stderr is captured at this point, so not there).
    stacks = open(Path(tempfile.gettempdir()) / f"agent-pytest-stacks-{os.getpid()}.txt", "w")
    _keep_open.append(stacks)
    faulthandler.register(signal.SIGUSR1, file=stacks, all_threads=True)
    target = Path(tempfile.mkdtemp(prefix="agent-test-plugins-"))
    _throwaway.append(target)
    lay_out_distribution(EXAMPLE_SOURCE, target)
    sys.path.insert(0, str(target))
    previous = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(target), previous]))


def pytest_unconfigure(config: pytest.Config) -> None:
    for stacks in _keep_open:
        faulthandler.unregister(signal.SIGUSR1)
        stacks.close()
        if os.path.getsize(stacks.name) == 0:  # nobody asked: leave no trace
            os.unlink(stacks.name)
    for path in _throwaway:
        shutil.rmtree(path, ignore_errors=True)


@pytest.hookimpl(optionalhook=True)  # no hook without pytest-xdist
def pytest_xdist_auto_num_workers(config: pytest.Config) -> int | None:
    # `-n auto`: one worker more than there are cores. Part of the suite waits (a subprocess
    # starting, a terminal drawing, a server's reply), and a third worker on two cores runs
    # while another waits: measured on the 2-core machine, the whole suite 165-170 s with two
    # workers and 155 s with three, the fast lane 95 s and 77 s (four: 93 s, each worker's
    # start-up costing more than the overlap gains). PYTEST_XDIST_AUTO_NUM_WORKERS still wins.
    if os.environ.get("PYTEST_XDIST_AUTO_NUM_WORKERS"):
        return None  # pytest-xdist's own hook reads it
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return (cores or 1) + 1
