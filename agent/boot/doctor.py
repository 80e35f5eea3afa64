"""``agent doctor``: is this machine ready?  Config keys, sandbox, ripgrep, git, terminal, state,
provider.

Each check prints one line, ``ok``, ``warn`` or ``FAIL``, what was found and, when something
is wrong, what to do.  The exit code is 1 when a check failed (a warning alone is 0), so a
setup script can run it.  The provider check asks the configured endpoint for its models with
the same client a session uses; it is the only check that leaves the machine.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
import subprocess
import sys
import sysconfig
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

#: Seconds the provider gets to list its models.
PROVIDER_TIMEOUT = 10.0


@dataclass
class Check:
    name: str
    level: str  # "ok", "warn", "FAIL"
    detail: str


def _version(argv: list[str]) -> str:
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"(did not run: {exc})"
    return (done.stdout or done.stderr).strip().splitlines()[0] if (
        done.stdout or done.stderr).strip() else f"(exit {done.returncode})"


def check_sandbox(config: Any) -> Check:
    """Whether commands get walls: the probe's answer, plus one real command run inside."""
    from agent.contain.sandbox import OFF, WORKSPACE_WRITE, sandbox_for

    sandbox = sandbox_for(config)
    if sandbox.mode == OFF:
        return Check("sandbox", "warn", sandbox.describe() + ". Set sandbox = "
                     '"workspace-write" in the config to contain commands.')
    probe = sandbox.status
    if not probe.ok:
        return Check("sandbox", "FAIL", f"cannot start: {probe.detail}. Every command will be "
                     "asked about. Fix: allow unprivileged user namespaces (sysctl "
                     "kernel.unprivileged_userns_clone=1; on Ubuntu 23.10+ "
                     "kernel.apparmor_restrict_unprivileged_userns=0, or install the "
                     "distribution's bubblewrap package, whose AppArmor profile allows them), "
                     "or set sandbox_bwrap to a working bwrap. docs/security.md")
    try:
        argv, _ = sandbox.command(["true"], mode=WORKSPACE_WRITE)
        done = subprocess.run(argv, capture_output=True, text=True, timeout=20,
                              cwd=sandbox.workspace, env=sandbox.environment())
        ran = done.returncode == 0
        why = done.stderr.strip()[-200:]
    except (OSError, subprocess.TimeoutExpired) as exc:
        ran, why = False, str(exc)
    if not ran:
        return Check("sandbox", "FAIL", f"the probe passed but a command failed in the "
                     f"sandbox: {why}")
    version = _version([probe.program, "--version"]) if probe.backend == "bwrap" else ""
    where = f"{probe.program}" + (f", {version}" if version else "")
    return Check("sandbox", "ok", f"{sandbox.describe()[len('sandbox: '):]}; {where}")


def check_ripgrep(config: Any) -> Check:
    configured = config.get("rg_path")
    candidate = os.path.join(sysconfig.get_path("scripts"), "rg")
    path = configured or (candidate if os.access(candidate, os.X_OK) else shutil.which("rg"))
    if not path:
        return Check("ripgrep", "warn", "not found: grep uses its slower pure-Python search. "
                     "pip install ripgrep, or set rg_path")
    return Check("ripgrep", "ok", f"{path}, {_version([path, '--version'])}")


def check_git(config: Any) -> Check:
    path = shutil.which("git")
    if not path:
        return Check("git", "warn", "not found: the git tools will say so. Install git")
    return Check("git", "ok", f"{path}, {_version([path, '--version'])}")


def check_terminal(config: Any) -> Check:
    term = os.environ.get("TERM", "")
    encoding = (getattr(sys.stdout, "encoding", "") or "").lower()
    problems = []
    if not sys.stdout.isatty():
        problems.append("stdout is not a terminal (fine for -p; the full-screen UI needs one)")
    if not term or term == "dumb":
        problems.append(f"TERM is {term or 'unset'}: the UI needs a real terminal type")
    if "utf" not in encoding:
        problems.append(f"the output encoding is {encoding or 'unknown'}, not UTF-8 "
                        "(set LANG=C.UTF-8 or similar)")
    size = shutil.get_terminal_size((0, 0))
    found = f"TERM={term or '(unset)'}, {encoding or '?'}, {size.columns}x{size.lines}"
    colors = os.environ.get("COLORTERM", "")
    if colors:
        found += f", COLORTERM={colors}"
    if problems:
        return Check("terminal", "warn", found + "; " + "; ".join(problems))
    return Check("terminal", "ok", found)


def check_state(config: Any) -> Check:
    """Config and state are the user's alone (0700 directories, 0600 files)."""
    loose = []
    for path in (config.paths.config_dir, config.paths.state_dir, config.config_file,
                 config.state_dir / "agent.db"):
        try:
            mode = stat.S_IMODE(os.stat(path).st_mode)
        except OSError:
            continue
        if mode & 0o077:
            loose.append(f"{path} is {oct(mode)}")
    if loose:
        return Check("state", "warn", "; ".join(loose) + " (agent tightens these to 0700/0600 "
                     "on its next run)")
    return Check("state", "ok", f"{config.state_dir} private (0700/0600)")


def check_database(config: Any) -> Check:
    """The state database reads whole (``PRAGMA quick_check``, every message body)."""
    from agent.state.salvage import check
    from agent.state.store import DB_NAME

    path = config.state_dir / DB_NAME
    if not path.is_file():
        return Check("database", "ok", f"{path} not created yet")
    problems = check(path)
    if problems:
        return Check("database", "FAIL", f"{path} is damaged: {'; '.join(problems[:3])}. "
                     "agent doctor --repair copies every readable session into a new "
                     "database and moves this one aside")
    return Check("database", "ok", f"{path} reads whole")


def repair_database(config: Any, out: Any) -> int:
    """``agent doctor --repair``: salvage every readable row of a damaged database into a
    new file, move the damaged one aside (with its -wal and -shm) and put the new one in its
    place.  Refused while a live agent process holds a session in it."""
    from agent.state import salvage
    from agent.state.store import DB_NAME, StoreError, connect

    path = config.state_dir / DB_NAME
    if not path.is_file():
        print(f"nothing to repair: {path} does not exist", file=out)
        return 0
    problems = salvage.check(path)
    if not problems:
        print(f"nothing to repair: {path} reads whole", file=out)
        return 0
    users = salvage.live_writers(path)
    if users:
        print(f"agent: not repaired: {path} is in use by agent ({', '.join(users)}); end "
              "those runs first", file=sys.stderr)
        return 1
    new = path.with_name(f".{DB_NAME}.repair-{os.getpid()}")
    for suffix in ("", "-wal", "-shm"):
        with contextlib.suppress(FileNotFoundError):
            os.unlink(f"{new}{suffix}")
    try:
        conn = connect(new, schemas=config.store_schemas)
    except StoreError as exc:
        print(f"agent: not repaired: cannot create a new database: {exc}", file=sys.stderr)
        return 1
    try:
        result = salvage.salvage(path, conn)
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        conn.close()
    aside = salvage.aside_name(path)
    for suffix in ("", "-wal", "-shm"):
        with contextlib.suppress(FileNotFoundError):
            os.replace(f"{path}{suffix}", f"{aside}{suffix}")
    for suffix in ("-wal", "-shm"):
        with contextlib.suppress(FileNotFoundError):
            os.unlink(f"{new}{suffix}")
    os.replace(new, path)
    lost = sum(n for n in result.lost.values() if n > 0)
    print(f"repaired {path}: {result.sessions} session(s) and "
          f"{result.copied.get('messages', 0)} message(s) salvaged"
          + (f"; {lost} unreadable row(s) left behind" if lost else ""), file=out)
    print(f"the damaged database was moved aside to {aside}", file=out)
    return 0


def check_provider(boot: Any) -> Check:
    """GET the models of the configured endpoint with the provider plugin's own client."""
    import asyncio

    from agent.boot.runtime import StartupError, provider_settings

    config, hooks = boot.config, boot.hooks
    specs = hooks.providers(config)
    try:
        settings = provider_settings(config, specs)
    except StartupError as exc:
        return Check("provider", "FAIL", str(exc))
    spec = specs[settings.provider]
    base_url = settings.base_url or spec.default_base_url or "(the SDK's default)"
    from dataclasses import replace

    settings = replace(settings, max_retries=0, timeout=PROVIDER_TIMEOUT)

    async def listing() -> list[str]:
        provider = spec.create(settings)
        try:
            return await asyncio.wait_for(provider.list_models(), PROVIDER_TIMEOUT)
        finally:
            close = getattr(provider, "aclose", None)
            if close is not None:
                try:
                    await close()
                except Exception:  # noqa: BLE001 - closing must not hide the answer
                    pass

    try:
        models = asyncio.run(listing())
    except TimeoutError:
        return Check("provider", "FAIL", f"{settings.provider} at {base_url}: no answer "
                     f"within {PROVIDER_TIMEOUT:g} s")
    except Exception as exc:  # noqa: BLE001 - any failure is the finding
        message = getattr(exc, "message", None) or str(exc) or type(exc).__name__
        return Check("provider", "FAIL", f"{settings.provider} at {base_url}: {message[:300]}")
    model = settings.model or "(no model set)"
    listed = "listed" if settings.model in models else "not among the listed models"
    return Check("provider", "ok" if settings.model in models or not models else "warn",
                 f"{settings.provider} at {base_url} answers: {len(models)} models; "
                 f"model {model} {listed}")


def check_config(config: Any) -> Check:
    from agent.boot.config_keys import config_unknown_keys, some_plugins_disabled

    unknown = config_unknown_keys(config)
    if not unknown:
        return Check("config", "ok", f"every key of {config.config_file} is known")
    disabled = some_plugins_disabled(config)
    return Check("config", "warn", "; ".join(u.message(some_plugins_disabled=disabled)
                                           for u in unknown))


CHECKS: tuple[Callable[[Any], Check], ...] = (check_config, check_sandbox, check_ripgrep,
                                              check_git, check_terminal, check_state,
                                              check_database)


def run(boot: Any, *, provider: bool = True, out: Any = None) -> int:
    """Run every check, print one line each; 1 if any failed."""
    out = out or sys.stdout
    results = []
    for check in CHECKS:
        try:
            results.append(check(boot.config))
        except Exception as exc:  # noqa: BLE001 - a broken check is a finding, not a crash
            results.append(Check(check.__name__[6:], "FAIL", f"the check failed: {exc}"))
    if provider:
        results.append(check_provider(boot))
    width = max(len(r.name) for r in results)
    for result in results:
        print(f"{result.level:<4}  {result.name:<{width}}  {result.detail}", file=out)
    return 1 if any(r.level == "FAIL" for r in results) else 0


def cmd_doctor(argv: list[str]) -> int:
    """``agent doctor [--no-provider] [--repair]``."""
    from agent.boot.runtime import StartupError, finish_config, load_plugins

    unknown = [a for a in argv if a not in ("--no-provider", "--repair")]
    if unknown:
        print("usage: agent doctor [--no-provider] [--repair]", file=sys.stderr)
        return 2
    try:
        paths, file_data, host, hooks, options = load_plugins()
        boot = finish_config(paths, file_data, host, hooks, options, {}, headless=True)
    except StartupError as exc:
        print(f"agent: {exc}", file=sys.stderr)
        return exc.code
    try:
        if "--repair" in argv:
            return repair_database(boot.config, sys.stdout)
        return run(boot, provider="--no-provider" not in argv)
    finally:
        hooks.unconfigure(boot.config)
