"""The entry point scan without a cache file, repeated in one process (``make_boot`` and the
in-process CLI runs of the test suite do it hundreds of times per worker): what this process
read before is reused only while nothing it was read from has changed, so every answer is
still what ``importlib.metadata`` says now."""

from __future__ import annotations

import importlib.metadata
import os
import time

import pytest

from agent.boot import entry_points

GROUPS = ("agent.plugins", "agent.plugins.opt_in")
OLD = time.time() - 3600  # older than the scan's two-second "too recent to trust" window


def make_dist(site, name, points):
    info = site / f"{name}-1.0.dist-info"
    info.mkdir(parents=True)
    (site / f"{name}.py").write_text(f'"""The {name} plugin."""\n')
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(
        "[agent.plugins]\n" + "".join(f"{p} = {name}\n" for p in points))
    return info


def age(path, when=OLD):
    """Date ``path`` and what is in it ``when``, as an install long ago would be."""
    for inner in sorted(path.rglob("*"), reverse=True):
        os.utime(inner, (when, when))
    os.utime(path, (when, when))


def names_now():
    return {ep.name for ep in entry_points.scan(GROUPS)}


def names_importlib_finds():
    return {ep.name for group in GROUPS
            for ep in importlib.metadata.entry_points().select(group=group)}


def install_later(site, info):
    make_dist(site, "late", ["late"])


def rewrite_in_place(site, info):
    points = info / "entry_points.txt"
    points.write_text(points.read_text().replace("early = early", "later = early"))


def uninstall(site, info):
    for path in info.iterdir():
        path.unlink()
    info.rmdir()


@pytest.mark.parametrize("change", [install_later, rewrite_in_place, uninstall])
def test_a_change_after_an_earlier_scan_in_this_process_is_seen(tmp_path, monkeypatch, change):
    site = tmp_path / "site"
    info = make_dist(site, "early", ["early"])
    age(site)
    monkeypatch.syspath_prepend(str(site))
    assert "early" in names_now()
    assert names_now() == names_importlib_finds()  # the second scan, from what was read
    change(site, info)
    # Dated back again, to another old time: what the scan read is no longer too recent to be
    # reused, and importlib.metadata's own listing (kept by the folder's mtime) is refreshed.
    age(site, OLD + 60)
    assert names_now() == names_importlib_finds()
    assert ("early" in names_now()) == (change is install_later)


def test_a_site_put_on_the_path_later_in_this_process_is_read(tmp_path, monkeypatch):
    assert "newcomer" not in names_now()
    site = tmp_path / "site"
    make_dist(site, "newcomer", ["newcomer"])
    age(site)
    monkeypatch.syspath_prepend(str(site))
    assert "newcomer" in names_now()
    monkeypatch.undo()
    assert "newcomer" not in names_now()

