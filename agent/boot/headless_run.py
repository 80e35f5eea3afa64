"""Starting ``agent -p``: the flags only headless runs take, the prompt (with piped stdin),
the session to run (``--session-id``), the start-up notes, and closing the session.

The turns themselves are :mod:`agent.boot.headless`; the final record is
:mod:`agent.boot.headless_result`; ``--input-format stream-json`` is
:mod:`agent.boot.stream_input`; piped stdin is :mod:`agent.boot.stdin_prompt`.
"""

from __future__ import annotations

import io
import re
import sys
import uuid
from typing import Any

#: A ``--session-id`` that is not a UUID: lowercase letters, digits, ``.``, ``_`` and ``-``
#: (ids are matched lowercased by ``-r``, so a capital letter could never be found again).
_NAME = re.compile(r"[a-z0-9][a-z0-9._-]{0,63}")


def _fail(message: str, code: int) -> int:
    print(f"agent: {message}", file=sys.stderr)
    return code


def check_flags(args: Any) -> str:
    """A message for headless flags used wrongly (exit 2), or ``""``."""
    headless = bool(args.headless)
    for flag, value in (("--json", args.json), ("--output-format", args.output_format),
                        ("--input-format", args.input_format), ("--no-stdin", args.no_stdin),
                        ("--verbose", args.verbose),
                        ("--raw-output", getattr(args, "raw_output", False))):
        if value and not headless:
            return f"{flag} only works with -p"
    if args.json and args.output_format not in (None, "stream-json"):
        return (f"--json is --output-format stream-json; it cannot be combined with "
                f"--output-format {args.output_format}")
    if args.session_id is not None and normal_session_id(args.session_id) is None:
        return (f"--session-id {args.session_id!r}: give a UUID, or a name of lowercase "
                "letters, digits, '.', '_' and '-' (at most 64 characters)")
    return ""


def normal_session_id(text: str) -> str | None:
    """``text`` as a session id (a UUID in its canonical lowercase form), or None."""
    raw = text.strip()
    try:
        return str(uuid.UUID(raw))
    except ValueError:
        pass
    return raw if _NAME.fullmatch(raw) else None


def resolve_session_id(boot: Any, given: str) -> int:
    """``--session-id ID``: continue the saved session whose id is exactly ID, or start a
    new one that will be saved under it (``config.new_session_id``).  Returns an exit code
    (0, or 2 when no enabled plugin keeps saved sessions)."""
    from agent.loop.session import SessionLookupError

    wanted = normal_session_id(given)
    assert wanted is not None  # check_flags refused it otherwise
    try:
        found = boot.hooks.find_session(boot.config, continue_=False, resume=wanted)
    except SessionLookupError:
        found = ""  # none saved under that id (or only ids it is a prefix of): a new one
    if found is None:
        return _fail("--session-id continues or saves a session, but no enabled plugin keeps "
                     "saved sessions (see agent plugins list)", 2)
    if found == wanted:
        boot.config.resume_session_id = wanted
    else:
        boot.config.new_session_id = wanted
    return 0


def stdin_stream() -> Any:
    """Standard input as bytes (an embedder's text stream is encoded), or None."""
    stream = sys.stdin
    if stream is None:
        return None
    buffer = getattr(stream, "buffer", None)
    if buffer is not None:
        return buffer
    if stream.isatty():
        return None
    return io.BytesIO(stream.read().encode("utf-8", "surrogateescape"))


def read_prompt(boot: Any, args: Any) -> tuple[str | None, str]:
    """The headless prompt and the piped stdin block that follows it
    (:func:`agent.boot.stdin_prompt.prompt_with_stdin`), or None and the message to fail
    with."""
    from agent.boot.stdin_prompt import DEFAULT_MAX_BYTES, StdinError, prompt_with_stdin

    if args.input_format == "stream-json":
        return args.prompt or "", ""  # stdin carries the messages
    limit = boot.config.get("stdin_max_bytes")
    try:
        prompt, piped = prompt_with_stdin(
            args.prompt, stdin_stream(), use_stdin=not args.no_stdin,
            max_bytes=DEFAULT_MAX_BYTES if limit is None else int(limit),
            warn=lambda text: print(f"agent: {text}", file=sys.stderr))
    except StdinError as exc:
        return None, str(exc)
    if not prompt.strip():
        return None, "-p needs a prompt argument or piped stdin"
    return prompt, piped


def run(boot: Any, args: Any) -> int:
    """Run ``agent -p`` to its end; the exit code (docs/headless.md)."""
    from agent.boot import headless
    from agent.boot.runtime import StartupError, provider_settings
    from agent.loop.session import Runtime, SessionLookupError

    prompt, piped = read_prompt(boot, args)
    if prompt is None:
        return _fail(piped, 2)
    verbose = bool(args.verbose or args.v_flag)
    output = args.output_format or ("stream-json" if args.json else "text")
    config, hooks = boot.config, boot.hooks
    specs = hooks.providers(config)
    try:
        settings = provider_settings(config, specs)
    except StartupError as exc:
        return _fail(str(exc), exc.code)
    provider = hooks.select_provider(config, specs, settings)
    if provider is None:
        return _fail(f'no plugin could build the provider "{settings.provider}"', 2)
    tools = hooks.tools(config)
    runtime = Runtime(config=config, hooks=hooks, tools=tools, provider=provider,
                      approver=None, model=settings.model, provider_name=settings.provider,
                      provider_spec=specs.get(settings.provider))
    try:
        session = hooks.open_session(runtime, config.resume_session_id)
    except SessionLookupError as exc:
        return _fail(str(exc), 2)
    new_id = getattr(config, "new_session_id", None)
    if new_id and not session.messages:
        session.id = new_id  # saved under the id asked for, from its first message
    if config.resume_session_id or args.continue_session or args.resume or new_id:
        # A script that resumes (or names) a session learns which one ran, on stderr.
        print(f"agent: session {session.id}", file=sys.stderr)
    if verbose and not config.get("yolo"):
        print("agent: headless mode denies every tool call that needs approval (writes, edits, "
              "commands, network, MCP tools) unless --allow RULE or --yolo allows it",
              file=sys.stderr)
    for problem in hooks.problems:
        print(f"agent: {problem}", file=sys.stderr)
    from agent.contain.sandbox import sandbox_for

    sandbox = sandbox_for(config)
    if not sandbox.active:  # said once, on stderr, never silently
        print(f"agent: {sandbox.describe()}", file=sys.stderr)
    messages = None
    if args.input_format == "stream-json":
        from agent.boot.stream_input import MessageStream

        messages = MessageStream(stdin_stream() or io.BytesIO())
    code = headless.EXIT_PROVIDER
    try:
        code = headless.run(session, prompt, output=output, messages=messages,
                            raw_output=bool(getattr(args, "raw_output", False)), piped=piped)
    finally:
        closed = hooks.close_session(session)
        for note in closed.notes:
            print(f"agent: {note}", file=sys.stderr)
        if closed.unsaved and code == headless.EXIT_OK:
            code = headless.EXIT_UNSAVED  # messages missing from the store: never a silent 0
        hooks.unconfigure(config)
    return code
