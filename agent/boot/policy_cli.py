"""``agent policy explain TOOL 'ARGS-JSON'``: which guard or rule decides a call, and why;
with ``--headless``, what an ``agent -p`` run (nobody to ask) would do with it and the hint
the model would be given."""

from __future__ import annotations

import argparse
import sys
from typing import Any


def _fail(message: str, code: int) -> int:
    print(f"agent: {message}", file=sys.stderr)
    return code


def cmd_policy(argv: list[str]) -> int:
    """``agent policy explain TOOL 'ARGS-JSON'``: which guard or rule decides a call, and why."""
    import json

    from agent.boot.runtime import StartupError, finish_config, load_plugins
    from agent.contract.tools import ToolCall, ToolError
    from agent.contract.validate import check_arguments
    from agent.lib.visible import visible
    from agent.loop import permissions
    from agent.loop.gate import Gate
    from agent.loop.permission_flags import MODES, FlagRuleError, FlagRules

    usage = ("usage: agent policy explain TOOL ['ARGS-JSON'] [--headless] [--yolo] "
             "[--allow RULE] [--deny RULE] [--permission-mode MODE]")
    parser = argparse.ArgumentParser(prog="agent policy", add_help=False)
    parser.error = lambda message: (_ for _ in ()).throw(ValueError(message))  # type: ignore
    parser.add_argument("verb", choices=("explain",))
    parser.add_argument("tool")
    parser.add_argument("args", nargs="?", default="{}")
    parser.add_argument("--yolo", action="store_true")
    parser.add_argument("--headless", action="store_true")
    parser.add_argument("--allow", action="append", default=[])
    parser.add_argument("--deny", action="append", default=[])
    parser.add_argument("--permission-mode", choices=MODES)
    try:
        ns = parser.parse_args(argv)
    except ValueError as exc:
        return _fail(f"{exc}\n{usage}", 2)
    tool_name, raw = ns.tool, ns.args
    try:
        args = json.loads(raw)
        if not isinstance(args, dict):
            raise ValueError("the arguments must be a JSON object")
    except ValueError as exc:
        return _fail(f"ARGS-JSON is not a JSON object: {exc}", 2)
    try:
        permission_flags = FlagRules.parse(ns.allow, ns.deny)
    except FlagRuleError as exc:
        return _fail(str(exc), 2)
    flag_values = {k: v for k, v in (("yolo", ns.yolo or None),
                                     ("permission_mode", ns.permission_mode)) if v}
    try:
        paths, file_data, host, hooks, options = load_plugins()
        boot = finish_config(paths, file_data, host, hooks, options, flag_values,
                             permission_flags=permission_flags)
    except StartupError as exc:
        return _fail(str(exc), exc.code)
    from agent.boot.plugins import unloadable_guards

    refusal = unloadable_guards(host)
    if refusal:  # its answer would leave out a guard the real run cannot start without
        return _fail(refusal, 2)
    tools = hooks.tools(boot.config)
    tool = tools.get(tool_name)
    if tool is None:
        return _fail(f'no tool named "{tool_name}". Tools: {", ".join(sorted(tools))}', 2)
    try:
        check_arguments(tool, args)
        effects = tool.effects(args)
    except ToolError as exc:
        return _fail(str(exc), 2)
    gate = Gate(hooks, boot.config, None, yolo=bool(boot.config.get("yolo")))

    def show(line: str) -> None:  # hidden and reordering characters spelled out
        print(visible(line))

    verdict, by = gate.verdict(ToolCall("explain", tool_name, args), effects, None)
    show(f"tool:     {tool_name} (plugin {tool.plugin or '?'})")
    show(f"effects:  {_describe_effects(effects)}")
    for line in permissions.explain_command(tool_name, effects, gate.user_rules,
                                            getattr(boot.config, "workspace", None)):
        show(line)
    show(f"decision: {verdict.decision}")
    show(f"by:       {by} {verdict.source}".rstrip())
    if verdict.reason:
        show(f"why:      {verdict.reason}")
    if ns.headless:
        import asyncio

        headless_gate = Gate(hooks, boot.config, None, yolo=bool(boot.config.get("yolo")))
        decided = asyncio.run(headless_gate.decide(ToolCall("explain", tool_name, args), tool,
                                                   effects, None))
        if decided.allowed:
            show(f"headless: allow ({decided.by})")
        else:
            show(f"headless: deny ({decided.by}); the model is told: {decided.message}")
        return 0
    if verdict.decision == "ask" and permissions.unresolved_reason(effects):
        yolo = ("asks too (yolo_unresolved = ask)" if boot.config.get("yolo_unresolved") == "ask"
                else "denies it (yolo_unresolved = deny)")
        show(f"then:     it cannot be checked without running it: --yolo {yolo}; "
             "headless denies it; the UI asks, and \"always\" grants nothing")
    elif verdict.decision == "ask":
        show("then:     --yolo would allow it; headless without --yolo denies it; "
             "the UI asks")
    return 0


def _describe_effects(effects: Any) -> str:
    parts = [f"{name}={list(getattr(effects, name))}" for name in ("reads", "writes", "deletes",
                                                                   "urls", "targets")
             if getattr(effects, name, ())]
    if effects.command:
        parts.append(f"command={effects.command!r}")
    if getattr(effects, "network", False):
        parts.append("network (asks to run with network access)")
    if effects.opaque:
        parts.append("opaque (cannot be known in advance)")
    return ", ".join(parts) or "none"


