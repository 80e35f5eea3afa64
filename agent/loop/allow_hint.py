"""What would allow a refused call: the exact config line, flag or command, for the person.

A refusal tells the model why; the person also needs to know what they could change, since
``--yolo`` never lifts a deny.  :func:`allow_hint` names it from who refused (a guard plugin,
a permission rule and where it came from, ``--yolo`` meeting a command it cannot check).
"""

from __future__ import annotations

from typing import Any


def allow_hint(by: str, source: str, config: Any = None) -> str:
    """How the person could let a call refused by ``by`` (``guard``, ``rule``, ``yolo``)
    with verdict source ``source`` run; "" when nothing they configure would."""
    where = _config_file(config)
    if by == "guard" and source:
        return (f"no rule, \"always\" or --yolo lifts a guard's refusal: run it yourself, or "
                f"turn the {source} plugin off with --disable {source} (or plugins.disabled = "
                f"[\"{source}\"] in {where})")
    if by == "yolo":
        return (f"yolo_unresolved = \"ask\" in {where} makes --yolo ask you about commands "
                "it cannot check; without --yolo you are asked; or run it yourself")
    if by != "rule" or not source:
        return ""
    if source.startswith("project "):
        return (f"the project's rule {source[len('project '):]} = \"deny\" refuses it: "
                "change the project's [permission] table (project rules only tighten)")
    if source.startswith("default"):
        return (f"the default rule {source} = \"deny\" refuses it: a [permission] rule of "
                f"yours for this tool in {where} replaces the default ones "
                "(docs/permissions.md)")
    if source.startswith("-") or "--deny" in source or "command line" in source:
        return f"the run's own {source} refuses it: leave that flag out"
    key, _, pattern = source.partition(": ")
    if pattern:
        return (f"remove or narrow the rule {pattern} = \"deny\" under [permission] {key} "
                f"in {where}")
    return f"change the [permission] rules for {key} in {where}"


def _config_file(config: Any) -> str:
    try:
        return str(config.config_file)
    except Exception:  # a config without a file (tests, embedders)
        return "config.toml"
