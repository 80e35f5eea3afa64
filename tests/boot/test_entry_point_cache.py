"""The entry point scan cache (agent.boot.entry_points): the same answer as
``importlib.metadata``, read again wherever a distribution appears or changes, and never
trusted when it is corrupt or not the user's own file."""

from __future__ import annotations

import importlib.metadata
import json
import os
import stat
import subprocess
import sys
import time

import pytest
from clirun import agent_env, run_agent_here

from agent.boot import entry_points

GROUPS = ("agent.plugins", "agent.plugins.opt_in")
OLD = time.time() - 3600  # older than the cache's two-second "too recent to trust" window


def make_dist(site, name, points, version="1.0"):
    """An installed distribution as pip lays it out: a module and its dist-info."""
    info = site / f"{name}-{version}.dist-info"
    info.mkdir(parents=True)
    (site / f"{name}.py").write_text(f'"""The {name} plugin."""\n')
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
    (info / "entry_points.txt").write_text(
        "[agent.plugins]\n" + "".join(f"{p} = {name}\n" for p in points))
    return info


def age(*paths):
    """Date ``paths`` (and what is in them) an hour back, as an install long ago would be."""
    for path in paths:
        for inner in sorted(path.rglob("*"), reverse=True) if path.is_dir() else []:
            os.utime(inner, (OLD, OLD))
        os.utime(path, (OLD, OLD))


def settled(home, cwd, site):
    """A first run (it imports the plugins, whose byte code lands in the site), then the
    site aged and listed again: from now on its record in the cache is current."""
    listed(home, cwd, site)
    age(site)
    rows = listed(home, cwd, site)
    assert record_for(home, site)["stat"] != [-1]  # really cached, not read anew each time
    return rows


def listed(home, cwd, site):
    proc = run_agent_here(["plugins"], home=home, cwd=cwd, PYTHONPATH=str(site))
    assert proc.returncode == 0, proc.stderr
    return {line.split()[0]: line for line in proc.stdout.splitlines()}


def cache_of(home):
    return home / "state" / "entry-points.json"


def record_for(home, site):
    return json.loads(cache_of(home).read_text())["entries"][str(site)]


def test_same_answer_as_importlib_metadata_including_shadowed_names(tmp_path, monkeypatch):
    first, second = tmp_path / "first", tmp_path / "second"
    make_dist(first, "twin", ["twin_a"])
    make_dist(second, "twin", ["twin_b"], version="2.0")  # hidden: same name, later on the path
    make_dist(second, "solo", ["solo"])
    age(first, second)
    monkeypatch.syspath_prepend(str(second))
    monkeypatch.syspath_prepend(str(first))
    everything = importlib.metadata.entry_points()
    expected = [(ep.group, ep.name, ep.value, ep.dist.metadata["Name"],
                 ep.dist.metadata["Version"])
                for group in GROUPS for ep in everything.select(group=group)]
    cache = tmp_path / "state" / "entry-points.json"
    for _ in range(2):  # read anew, then from the cache
        found = entry_points.scan(GROUPS, cache)
        got = [(ep.group, ep.name, ep.value, ep.dist_name, ep.dist_version)
               for group in GROUPS for ep in found if ep.group == group]
        assert got == expected
    names = [name for _, name, *_ in expected]
    assert "twin_a" in names and "solo" in names and "twin_b" not in names
    assert stat.S_IMODE(cache.stat().st_mode) == 0o600


def test_a_plugin_installed_later_is_found(tmp_path):
    home, site = tmp_path / "h", tmp_path / "site"
    make_dist(site, "early", ["early"])
    assert "early" in settled(home, tmp_path, site)
    make_dist(site, "late", ["late"])  # what pip install writes: a new dist-info
    rows = listed(home, tmp_path, site)
    assert "late" in rows and "early" in rows


def test_entry_points_rewritten_in_place_are_read_again(tmp_path):
    """``setup.py egg_info`` rewrites entry_points.txt without touching the folder: even with
    the old mtimes put back, the change is seen (the inode change time cannot be put back)."""
    home, site = tmp_path / "h", tmp_path / "site"
    info = make_dist(site, "grower", ["grower"])
    rows = settled(home, tmp_path, site)
    assert "grower" in rows and "grown" not in rows
    points = info / "entry_points.txt"
    before = points.stat()
    points.write_text("[agent.plugins]\ngrown  = grower\n")  # same size, same inode
    age(site)
    after = points.stat()
    assert (after.st_size, after.st_ino, after.st_mtime_ns) == \
        (before.st_size, before.st_ino, before.st_mtime_ns)
    rows = listed(home, tmp_path, site)
    assert "grown" in rows and "grower" not in rows


def test_an_uninstalled_plugin_is_gone(tmp_path):
    home, site = tmp_path / "h", tmp_path / "site"
    info = make_dist(site, "goner", ["goner"])
    assert "goner" in settled(home, tmp_path, site)
    for path in info.iterdir():
        path.unlink()
    info.rmdir()
    assert "goner" not in listed(home, tmp_path, site)


def _inject_ghost(home, site):
    """The cache file with an entry point no distribution declares, on ``site``'s record."""
    data = json.loads(cache_of(home).read_text())
    data["entries"][str(site)]["dists"][0]["eps"].append(["agent.plugins", "ghost", "ghost"])
    cache_of(home).write_text(json.dumps(data))


@pytest.mark.parametrize("mode, trusted", [(0o600, True), (0o644, False), (0o620, False)])
def test_a_cache_file_others_could_write_is_not_trusted(tmp_path, mode, trusted):
    home, site = tmp_path / "h", tmp_path / "site"
    make_dist(site, "real", ["real"])
    settled(home, tmp_path, site)
    _inject_ghost(home, site)
    os.chmod(cache_of(home), mode)
    # 0600: the file is what decides (so its mode must be checked); otherwise it is rebuilt
    assert ("ghost" in listed(home, tmp_path, site)) is trusted
    if not trusted:
        assert stat.S_IMODE(cache_of(home).stat().st_mode) == 0o600
        assert "ghost" not in cache_of(home).read_text()


@pytest.mark.parametrize("content", [b"", b"{not json", b"[]", b'{"key": 1, "entries": {}}',
                                     b"\xff\xfe garbage"])
def test_a_corrupt_cache_file_is_rebuilt(tmp_path, content):
    home, site = tmp_path / "h", tmp_path / "site"
    make_dist(site, "real", ["real"])
    settled(home, tmp_path, site)
    cache_of(home).write_bytes(content)
    os.chmod(cache_of(home), 0o600)
    rows = listed(home, tmp_path, site)
    assert "real" in rows and "core" in rows
    assert record_for(home, site)["dists"][0]["eps"] == [["agent.plugins", "real", "real"]]


def test_a_malformed_record_is_read_again(tmp_path):
    home, site = tmp_path / "h", tmp_path / "site"
    make_dist(site, "real", ["real"])
    settled(home, tmp_path, site)
    data = json.loads(cache_of(home).read_text())
    data["entries"][str(site)]["dists"][0]["eps"] = "not a list"
    cache_of(home).write_text(json.dumps(data))
    assert "real" in listed(home, tmp_path, site)


@pytest.mark.e2e  # starts the interpreter: what a new process imports is the point
def test_help_reads_no_distribution_metadata_once_cached(tmp_path):
    """The point of the cache: a second start does not import importlib.metadata at all."""
    home = tmp_path / "h"
    probe = ("import sys, io, contextlib\n"
             "from agent.boot.cli import main\n"
             "with contextlib.redirect_stdout(io.StringIO()) as out:\n"
             "    code = main(['--help'])\n"
             "print(code, 'importlib.metadata' in sys.modules)\n"
             "print(out.getvalue())\n")
    env = agent_env(home)
    env.pop("PYTHONPATH", None)  # only the interpreter's own, long installed, site dirs
    runs = [subprocess.run([sys.executable, "-c", probe], cwd=tmp_path, env=env,
                           capture_output=True, text=True, timeout=120) for _ in range(3)]
    for proc in runs:
        assert proc.returncode == 0, proc.stderr
    first, *later = (proc.stdout.split("\n", 1) for proc in runs)
    assert first[0] == "0 True"  # nothing cached yet: read with importlib.metadata
    # The interpreter's site-packages is shared with every other process on the machine: an
    # install there between two starts rightly makes the next one read it again, so one of
    # the two later starts (not necessarily both) must have read no metadata at all.
    assert "0 False" in [run[0] for run in later]
    assert all(run[1] == first[1] for run in later) and "usage: agent" in first[1]
