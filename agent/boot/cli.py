"""Command line: ``agent [options] [PROMPT]``, ``agent -p PROMPT``, and subcommands.

``--version`` answers before anything is loaded; nothing on the way to ``--help`` or the
first frame imports a provider SDK.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Sequence
from typing import Any

from agent import __version__, quiet_logging

USAGE = ("agent [options] [PROMPT]\n"
         "       agent -p PROMPT [--output-format text|json|stream-json]\n"
         "       agent COMMAND ...")



def version_line() -> str:
    """``agent X  python Y  os-arch``, then where this agent runs from (see :func:`origin`)."""
    import platform

    return (f"agent {__version__}  python {platform.python_version()}  "
            f"{platform.system().lower()}-{platform.machine()}\n{origin()}")


def origin() -> str:
    """Whether this is an installed package or a source checkout, and where it lives.

    Decided by where the ``agent`` package was imported from (an installed copy lives in the
    interpreter's site-packages), and for a checkout by pip's ``direct_url.json``, which
    marks an editable install. Only file-system reads: ``--version`` stays fast."""
    import json
    import sysconfig
    from pathlib import Path

    here = Path(__file__).resolve().parents[2]
    paths = sysconfig.get_paths()
    site_dirs = {Path(paths[key]).resolve() for key in ("purelib", "platlib")}
    if here in site_dirs:
        return f"installed package: {here / 'agent'}"
    for site_dir in site_dirs:
        for info in site_dir.glob("agent_cli-*.dist-info/direct_url.json"):
            try:
                record = json.loads(info.read_text())
            except (OSError, ValueError):
                continue
            if record.get("dir_info", {}).get("editable") and \
                    record.get("url", "").removeprefix("file://") == str(here):
                return f"editable install of the source checkout: {here}"
    return f"source checkout, not installed: {here}"


def _early_parser() -> argparse.ArgumentParser:
    """Flags that must be known before plugins load."""
    p = argparse.ArgumentParser(add_help=False)
    p.add_argument("--disable", action="append", default=[])
    p.add_argument("--enable", action="append", default=[])
    p.add_argument("--no-plugins", action="store_true")
    p.add_argument("-p", "--print", dest="headless", action="store_true")
    return p


def help_epilog(options: Any, hooks: Any = None) -> str:
    """``--help``'s epilog: the core's and the loaded plugins' subcommands, the config file,
    every option's variable and each provider's key variable (:mod:`agent.boot.cli_help`)."""
    from agent.boot.cli_help import epilog
    from agent.boot.config import Paths

    commands: dict[str, Any] = {}
    specs: dict[str, Any] = {}
    if hooks is not None:
        commands = {n: c for n, c in hooks.cli_commands().items() if n not in SUBCOMMANDS}
        specs = hooks.providers(None)  # registration needs no config (agent.contract.providers)
    example = None
    if specs:
        from agent.contract.provider_spec import auto_provider

        first = specs.get(auto_provider(specs, {}) or "") or specs[sorted(specs)[0]]
        example = (first.name, first.default_model or "")
    return epilog(Paths.resolve().config_file, commands,
                  [o.env for o in options if o.env],
                  [s.env_key for s in specs.values() if s.env_key], example)


class _Parser(argparse.ArgumentParser):
    """Builds its epilog only when the help is printed: collecting the plugins' subcommands
    and providers is work an ordinary start does not need."""

    def __init__(self, *args: Any, options: Any, hooks: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._epilog_from = (options, hooks)

    def format_help(self) -> str:
        if self.epilog is None:
            self.epilog = help_epilog(*self._epilog_from)
        return super().format_help()


def build_parser(options: Any, hooks: Any = None) -> argparse.ArgumentParser:
    parser = _Parser(
        prog="agent", usage=USAGE, formatter_class=argparse.RawDescriptionHelpFormatter,
        description="A terminal coding agent: reads, edits, runs commands and asks, "
                    "with every change gated behind your approval.",
        options=options, hooks=hooks)
    parser.add_argument("prompt", nargs="?", help="first prompt (with -p: the headless prompt)")
    parser.add_argument("-p", "--print", dest="headless", action="store_true",
                        help="headless: run one turn, print the answer, exit "
                             "(prompt from the argument or stdin)")
    parser.add_argument("--json", action="store_true",
                        help="with -p: one JSON event per line (--output-format stream-json)")
    parser.add_argument("--raw-output", action="store_true",
                        help="with -p in text mode: print the model's text as it came, "
                             "terminal escape sequences included (they are removed otherwise)")
    parser.add_argument("--output-format", choices=("text", "json", "stream-json"),
                        help="with -p: text (the answer), json (one result object at the "
                             "end) or stream-json (one event per line, then the result; "
                             "docs/headless.md)")
    parser.add_argument("--input-format", choices=("text", "stream-json"),
                        help="with -p: text (the prompt) or stream-json (one JSON user "
                             "message per line on stdin, each a turn of one session)")
    parser.add_argument("--no-stdin", action="store_true",
                        help="with -p PROMPT: do not attach piped stdin to the prompt")
    parser.add_argument("--session-id", metavar="ID",
                        help="start or continue exactly the session ID (a UUID or a "
                             "lowercase name), created with that id if new")
    parser.add_argument("-v", dest="v_flag", action="store_true",
                        help="the version; with -p: verbose (the start-up notes on stderr)")
    parser.add_argument("--version", action="store_true", help="print the version")
    parser.add_argument("--verbose", action="store_true",
                        help="with -p: the start-up notes on stderr")
    parser.add_argument("--disable", action="append", default=[], metavar="NAME",
                        help="disable a plugin for this run (repeatable)")
    parser.add_argument("--enable", action="append", default=[], metavar="NAME",
                        help="enable an opt-in plugin for this run (repeatable)")
    parser.add_argument("--no-plugins", action="store_true",
                        help="only agent's own builtin plugins: no third-party plugins, no "
                             "registry manifests (those named with --enable excepted)")
    parser.add_argument("-c", "--continue", dest="continue_session", action="store_true",
                        help="continue the newest saved session of this directory")
    parser.add_argument("-r", "--resume", metavar="ID",
                        help="resume a saved session by id or unique id prefix")
    parser.add_argument("--allow", action="append", default=[], metavar="RULE",
                        help="allow calls matching RULE for this run: TOOL or TOOL:PATTERN, as "
                             "in --allow 'bash:pytest *' --allow edit_file (repeatable; never "
                             "lifts a deny; docs/headless.md)")
    parser.add_argument("--deny", action="append", default=[], metavar="RULE",
                        help="deny calls matching RULE for this run, e.g. --deny 'bash:git push*' "
                             "(repeatable; wins over every allow)")
    seen = {"--disable", "--enable", "--no-plugins", "--json", "--version", "--print",
            "--continue", "--resume", "--allow", "--deny", "--output-format", "--raw-output",
            "--input-format", "--no-stdin", "--session-id", "--verbose"}
    group = parser.add_argument_group("settings (also config keys)")
    for option in options:
        if not option.flag or option.flag in seen:
            continue
        seen.add(option.flag)
        kwargs: dict[str, Any] = {"dest": "opt_" + option.key, "default": None,
                                  "help": option.help + (f" [config: {option.key}]")}
        if option.type == "bool":
            kwargs["action"] = "store_const"
            kwargs["const"] = not option.negate  # --no-X switches store False
        else:
            kwargs["metavar"] = option.metavar or option.key.upper()
            if option.choices:
                kwargs["choices"] = option.choices
        group.add_argument(option.flag, **kwargs)
    if "--max-steps" in seen:  # the name scripts written for Claude Code's -p use
        group.add_argument("--max-turns", dest="opt_max_steps", default=None, metavar="N",
                           help="the same as --max-steps")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] in ("-v", "--version") and len(argv) == 1:
        print(version_line())
        return 0
    from agent.lib import collector

    # no collection while starting: the headless turn, the UI's first frame or a
    # subcommand's own work resumes it (agent.lib.collector)
    with collector.paused_for_startup():
        quiet_logging()
        _forget_earlier_logging()
        try:
            return _dispatch(argv)
        finally:
            _secure_state()


def _secure_state() -> None:
    """At exit: whatever a plugin created in the state dir this run (undo snapshots, caches)
    becomes 0700/0600 like the rest (docs/state.md)."""
    from agent.boot.config import Paths
    from agent.contain.private import secure_home

    try:
        secure_home(Paths.resolve())
    except Exception:  # never let tidying up change the exit code
        pass


def _dispatch(argv: list[str]) -> int:
    from agent.lib import collector

    if argv and argv[0] in SUBCOMMANDS:
        collector.resume()
        return SUBCOMMANDS[argv[0]](argv[1:])
    if argv and not argv[0].startswith("-") and argv[0].isidentifier():
        code = _plugin_subcommand(argv)
        if code is not None:
            return code
    return run_main(argv)


def _plugin_subcommand(argv: list[str]) -> int | None:
    """``agent NAME ...`` for a subcommand a plugin registered; None if there is none."""
    from agent.boot.runtime import StartupError, finish_config, load_plugins
    from agent.lib import collector

    try:
        paths, file_data, host, hooks, options = load_plugins()
    except StartupError as exc:
        return _fail(str(exc), exc.code)
    commands = hooks.cli_commands()
    if argv[0] not in commands:
        return None
    try:
        boot = finish_config(paths, file_data, host, hooks, options, {})
    except StartupError as exc:
        return _fail(str(exc), exc.code)
    setup_logging(boot.config.state_dir)
    collector.resume()
    try:
        return int(commands[argv[0]].handler(argv[1:], boot) or 0)
    finally:
        hooks.unconfigure(boot.config)


def run_main(argv: list[str]) -> int:
    from agent.boot.foreign_flags import normalise
    from agent.boot.runtime import StartupError, finish_config, load_plugins

    argv, foreign_rules = normalise(argv)  # Claude Code's spellings, as people type them
    early, _ = _early_parser().parse_known_args(argv)
    try:
        paths, file_data, host, hooks, options = load_plugins(
            disable=early.disable, enable=early.enable, no_plugins=early.no_plugins,
            warm_sdk_for=argv if early.headless and "--help" not in argv
            and "-h" not in argv else None)
    except StartupError as exc:
        return _fail(str(exc), exc.code)
    parser = build_parser(options, hooks)
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # --help exits 0, a usage error 2
        return int(exc.code or 0)
    headless = bool(args.headless)
    if args.version or (args.v_flag and not headless):
        print(version_line())
        return 0
    flags = {k[4:]: v for k, v in vars(args).items() if k.startswith("opt_") and v is not None}
    from agent.boot import headless_run

    problem = headless_run.check_flags(args)
    if problem:
        return _fail(problem, 2)
    from agent.loop.permission_flags import FlagRuleError, FlagRules

    try:
        permission_flags = FlagRules.parse(args.allow, args.deny)
    except FlagRuleError as exc:
        return _fail(str(exc), 2)
    try:
        boot = finish_config(paths, file_data, host, hooks, options, flags, headless=headless,
                             permission_flags=permission_flags,
                             no_plugins=bool(args.no_plugins), foreign_rules=foreign_rules)
    except StartupError as exc:
        return _fail(str(exc), exc.code)
    setup_logging(boot.config.state_dir)
    from agent.boot.plugins import unloadable_guards

    refusal = unloadable_guards(host)
    if refusal:  # a guard that cannot load fails closed: nothing runs without it
        return _fail(refusal, 2)
    for failure in host.failures():
        print(f"agent: plugin {failure.name} failed to load: {failure.error}", file=sys.stderr)
    for name in host.unknown:
        print(f"agent: plugin {name}: no such plugin (named in {boot.config.config_file})",
              file=sys.stderr)
    if headless:  # the UI shows them among its start-up notices
        from agent.boot.config_keys import warnings as config_key_warnings

        for warning in config_key_warnings(boot.config):
            print(f"agent: {warning}", file=sys.stderr)
    if args.allow or args.deny or boot.config.get("permission") \
            or boot.config.project_permission:
        # A typo in --deny, or a rule that can never match, must not pass silently.
        from agent.loop.rule_check import unmatchable_rule

        known = boot.hooks.tools(boot.config)
        problem = unknown_flag_tools(boot.config, known, boot.hooks.late_tools(boot.config)) \
            or unmatchable_rule(boot.config, known)
        if problem:
            return _fail(problem, 2)
    code = _resolve_resume(boot, args)
    if code:
        return code
    if headless:
        from agent.lib import collector

        collector.resume()
        return headless_run.run(boot, args)
    from agent.ui import launch

    return launch(boot, args.prompt)


def _resolve_resume(boot: Any, args: Any) -> int:
    """``-c``/``-r``: find the session before anything starts (a bad id fails fast, exit 2)
    and leave its id in ``config.resume_session_id`` for ``open_session``."""
    session_id = getattr(args, "session_id", None)
    if not (args.continue_session or args.resume or session_id):
        return 0
    if args.continue_session and args.resume:
        return _fail("-c and -r cannot be used together", 2)
    if session_id and (args.continue_session or args.resume):
        return _fail("--session-id names the session itself; leave out -c and -r", 2)
    from agent.loop.session import SessionLookupError

    if session_id:
        from agent.boot.headless_run import resolve_session_id

        return resolve_session_id(boot, session_id)
    try:
        found = boot.hooks.find_session(boot.config, continue_=args.continue_session,
                                        resume=args.resume)
    except SessionLookupError as exc:
        return _fail(str(exc), 2)
    if found is None:
        flag = "-c" if args.continue_session else "-r"
        return _fail(f"{flag} continues a saved session, but no enabled plugin keeps saved "
                     f"sessions (see agent plugins list)", 2)
    boot.config.resume_session_id = found
    return 0


def _log_file_class() -> Any:
    import logging

    from agent.contain.private import PrivateFileHandler

    class LogFile(PrivateFileHandler):
        """A log file opened on first use that never fails the caller: on a read-only or
        full state dir the record is dropped (the run says so through its own channels)."""

        def emit(self, record: logging.LogRecord) -> None:
            try:
                super().emit(record)
            except OSError:
                pass

        def flush(self) -> None:
            try:
                super().flush()
            except OSError:
                pass

        def close(self) -> None:
            # Closing flushes what is buffered: on a full disk that raises, and the next
            # main() of the process (which closes the last one's handler) must not fail.
            # The file is closed and the handler released either way.
            try:
                super().close()
            except OSError:
                pass

    return LogFile


def unknown_flag_tools(config: Any, tools: dict[str, Any], late: Sequence[str] = ()) -> str:
    """A message naming an ``--allow``/``--deny`` tool that matches no tool, or ``""``.

    A typo in ``--deny`` must not pass silently.  Wildcard keys and tools matching ``late``
    (patterns of tools plugins register after startup, ``agent_late_tools``: an MCP
    server's, before it has connected) are not checked.
    """
    from fnmatch import fnmatchcase

    flags = config.permission_flags
    if flags is None:
        return ""
    for flag, tool in flags.tools():
        if "*" in tool or "?" in tool or tool in tools \
                or any(fnmatchcase(tool, pattern) for pattern in late):
            continue
        return (f"{flag} {tool}: no tool is named {tool!r}. Tools: "
                f"{', '.join(sorted(tools))}")
    return ""


#: The log file handlers :func:`setup_logging` added in this process (by the last
#: :func:`main`, once :func:`_forget_earlier_logging` ran).
_logging_added: list[Any] = []


def setup_logging(state_dir: Any) -> None:
    """Log warnings (and everything with AGENT_DEBUG=1) to ``<state dir>/agent.log`` (until
    the process ends or calls :func:`main` again)."""
    import logging

    from agent.contain.private import private_dir

    try:
        private_dir(state_dir)
        handler = _log_file_class()(state_dir / "agent.log", encoding="utf-8", delay=True)
    except OSError:
        return
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    # On the root logger, so the libraries' records land in the file too: a logger with no
    # handler of its own would otherwise reach logging's last resort, which prints it (a
    # traceback included: the MCP SDK's "OAuth flow error") on the user's stderr.
    logging.getLogger().addHandler(handler)
    _logging_added.append(handler)
    logging.getLogger("agent").setLevel(
        logging.DEBUG if os.environ.get("AGENT_DEBUG") else logging.WARNING)


def _forget_earlier_logging() -> None:
    """Take back the log files an earlier :func:`main` of this process added: a process
    that calls it again (an embedder; the test suite's in-process runs) would otherwise
    write every later record into each earlier run's ``agent.log`` too, holding each file
    open.  (A run's own handler stays until the process ends: what its threads log after
    ``main`` returns still reaches its file.)"""
    import logging

    root = logging.getLogger()
    while _logging_added:
        handler = _logging_added.pop()
        root.removeHandler(handler)
        handler.close()


def _fail(message: str, code: int) -> int:
    print(f"agent: {message}", file=sys.stderr)
    return code


# ---- subcommands ----------------------------------------------------------------------------


def cmd_plugins(argv: list[str]) -> int:
    """``agent plugins [list | enable NAME | disable NAME]``."""
    from agent.boot import plugins
    from agent.boot.config import ConfigError, Paths, read_toml, update_file

    verb = argv[0] if argv else "list"
    paths = Paths.resolve()
    if verb in ("enable", "disable"):
        if len(argv) != 2:
            return _fail(f"usage: agent plugins {verb} NAME", 2)
        name = argv[1]
        known = {ep.name for ep in plugins.entry_points()}  # metadata only: nothing imported
        if name not in known:
            return _fail(f'no such plugin "{name}". Known: {", ".join(sorted(known))}', 2)
        if verb == "disable" and name in plugins.ESSENTIAL:
            return _fail(f"{name} is essential and cannot be disabled", 2)
        try:
            data = read_toml(paths.config_file)
            section = data.get("plugins", {}) if isinstance(data.get("plugins"), dict) else {}
            disabled = [n for n in section.get("disabled", []) if n != name]
            enabled = [n for n in section.get("enabled", []) if n != name]
            if verb == "disable":
                disabled.append(name)
            elif name in plugins.opt_in_names():
                enabled.append(name)
            update_file(paths.config_file, {"plugins.disabled": sorted(disabled),
                                            "plugins.enabled": sorted(enabled)})
        except ConfigError as exc:
            return _fail(str(exc), 2)
        print(f"{name} {verb}d in {paths.config_file}")
        return 0
    if verb != "list":
        return _fail("usage: agent plugins [list | enable NAME | disable NAME]", 2)
    from agent.boot.runtime import StartupError, load_plugins

    try:
        paths, _, host, hooks, _ = load_plugins()
    except StartupError as exc:
        return _fail(str(exc), exc.code)
    rows = hooks.plugin_rows(paths.config_dir, host.status)
    width = max((len(n) for n in rows), default=4)
    for name in sorted(rows):
        st = rows[name]
        detail = st.error if st.state == "failed" else (st.description or st.module)
        print(f"{name:<{width}}  {st.state:<9}  {detail}")
    return 0


def cmd_policy(argv: list[str]) -> int:
    """``agent policy explain TOOL 'ARGS-JSON'``: which guard or rule decides a call, and why
    (:mod:`agent.boot.policy_cli`)."""
    from agent.boot.policy_cli import cmd_policy as policy

    return policy(argv)


def cmd_doctor(argv: list[str]) -> int:
    """``agent doctor``: sandbox, ripgrep, git, terminal, state and provider checks."""
    from agent.boot.doctor import cmd_doctor as doctor

    return doctor(argv)


SUBCOMMANDS: dict[str, Callable[[list[str]], int]] = {
    "plugins": cmd_plugins,
    "policy": cmd_policy,
    "doctor": cmd_doctor,
}


def register_subcommand(name: str, handler: Callable[[list[str]], int]) -> None:
    """Add an ``agent NAME ...`` subcommand (core modules only; plugins use hooks)."""
    SUBCOMMANDS[name] = handler


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
