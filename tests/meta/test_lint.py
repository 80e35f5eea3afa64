"""The tree stays clean under the project's ruff settings, and the core type-checks under
``mypy --strict`` (both configured in pyproject.toml)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).parents[2]


def mypy_seed() -> Path | None:
    """Where a copy of the last good run's mypy cache is kept, outside any checkout: a fresh
    clone (CI's, a new worktree) starts from it instead of analysing the core and everything
    it imports anew. None without a home to keep it in."""
    try:
        base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    except RuntimeError:  # no HOME and no password entry
        return None
    return base / "agent-tests" / "mypy-cache"


def test_ruff_finds_nothing():
    ruff = shutil.which("ruff") or str(Path(sys.executable).parent / "ruff")
    proc = subprocess.run([ruff, "check", "--output-format", "concise", "."], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def seed_mypy_cache(cache: Path, seed: Path) -> bool:
    """Copy ``seed`` to ``cache`` if the checkout has none yet; whether it did.

    mypy checks every cached module against its source (size and mtime, then the content's
    hash when either differs, as they do in another checkout), so a seed from another tree
    or an older commit gives the same answer as no cache, only sooner: on a cold cache the
    check costs about 12 s of CPU, from a seed 2 s, warm 0.5 s.  Best effort: any error
    leaves the checkout without a cache, as before."""
    if cache.exists() or not seed.is_dir():
        return False
    staging = cache.with_name(f"{cache.name}.seeding-{os.getpid()}")
    try:
        shutil.copytree(seed, staging)
        staging.rename(cache)
    except OSError:
        shutil.rmtree(staging, ignore_errors=True)
        return False
    return True


def keep_mypy_cache(cache: Path, seed: Path) -> None:
    """Make ``cache`` the new seed. The seed is only ever replaced whole (a copy renamed
    into place), never written in place, so a concurrent :func:`seed_mypy_cache` copies a
    complete one or fails and runs cold."""
    staging = seed.with_name(f"{seed.name}.new-{os.getpid()}")
    retired = seed.with_name(f"{seed.name}.old-{os.getpid()}")
    try:
        seed.parent.mkdir(parents=True, exist_ok=True)
        shutil.copytree(cache, staging)
        if seed.exists():
            seed.rename(retired)
        staging.rename(seed)
    except OSError:
        pass
    finally:
        shutil.rmtree(staging, ignore_errors=True)
        shutil.rmtree(retired, ignore_errors=True)


def test_mypy_strict_finds_nothing_in_the_core():
    # pyproject.toml's [tool.mypy] names the files (agent/, without agent/ui) and strict mode;
    # the cache lives in the checkout (.mypy_cache, ignored by git), so a rerun takes seconds,
    # and a checkout without one starts from the last good run's (mypy_seed()).
    cache, seed = ROOT / ".mypy_cache", mypy_seed()
    if seed is not None:
        seed_mypy_cache(cache, seed)
    proc = subprocess.run([sys.executable, "-m", "mypy", "--no-error-summary"], cwd=ROOT,
                          capture_output=True, text=True, timeout=300)
    if proc.returncode == 0 and seed is not None and cache.is_dir():
        keep_mypy_cache(cache, seed)
    assert proc.returncode == 0, (
        "mypy --strict found errors in the core; annotate the code (a `# type: ignore[code]` "
        "only where a dependency ships no types, with the reason):\n" + proc.stdout + proc.stderr)
    assert proc.stdout.strip() == "", proc.stdout


def test_a_checkout_without_a_mypy_cache_starts_from_the_seed(tmp_path):
    seed, cache = tmp_path / "seed", tmp_path / "checkout" / ".mypy_cache"
    cache.parent.mkdir()
    assert not seed_mypy_cache(cache, seed) and not cache.exists()  # no seed yet: cold
    (seed / "3.11").mkdir(parents=True)
    (seed / "3.11" / "cache.0.db").write_bytes(b"old")
    assert seed_mypy_cache(cache, seed)
    assert (cache / "3.11" / "cache.0.db").read_bytes() == b"old"
    (cache / "3.11" / "cache.0.db").write_bytes(b"new")
    assert not seed_mypy_cache(cache, seed)  # a cache of its own is never overwritten
    assert (cache / "3.11" / "cache.0.db").read_bytes() == b"new"
    keep_mypy_cache(cache, seed)
    assert (seed / "3.11" / "cache.0.db").read_bytes() == b"new"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["checkout", "seed"]  # no leftovers
