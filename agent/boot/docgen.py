"""Generated reference docs: ``python -m agent.boot.docgen`` rewrites them from the code.

Tests compare the committed files with what this module generates, so the docs cannot drift.
"""

from __future__ import annotations

import inspect
import sys
from collections.abc import Callable
from pathlib import Path

DOCS = Path(__file__).resolve().parents[2] / "docs"


def hooks_reference() -> str:
    """``docs/plugins/hooks.md``: every hookspec, its signature, kind and docstring."""
    from agent.contract import hookspecs

    lines = ["# Hook reference", "",
             "Generated from `agent/contract/hookspecs.py` by `python -m agent.boot.docgen`; "
             "do not edit.",
             "", "Implement a hook by defining a function with its name, decorated with",
             "`agent.hookimpl`, in a module listed under the `agent.plugins` entry point group.",
             "You may accept any subset of the arguments.", "",
             "The signatures are the typed contract (`mypy --strict` checks the core against",
             "them).  `Session`, `Config` and `CommandContext` are importable from `agent`;",
             "`OptionSink`, `CliRegistrar`, `CliHandler` and `SecretMatcher` are defined in",
             "`agent.contract.hookspecs`; the rest are the classes named in each docstring.", ""]
    for name, fn in inspect.getmembers(hookspecs, inspect.isfunction):
        if not name.startswith("agent_"):
            continue
        opts = getattr(fn, "agent_spec", {}) or {}
        kinds = [k for k in ("firstresult", "historic") if opts.get(k)]
        kind = ", ".join(kinds) or "collect-all"
        lines += [f"## {name}", "", f"`{name}{_signature(fn)}` ({kind})", "",
                  inspect.cleandoc(fn.__doc__ or ""), ""]
    return "\n".join(lines).rstrip() + "\n"


def _signature(fn: Callable[..., object]) -> str:
    """``(a: Config, b: Session) -> None``: the annotations as written in the spec (they are
    strings under ``from __future__ import annotations``, which ``inspect`` would quote)."""
    sig = inspect.signature(fn)
    params = ", ".join(f"{p.name}: {p.annotation}" if p.annotation is not p.empty else p.name
                       for p in sig.parameters.values())
    ret = "" if sig.return_annotation is sig.empty else f" -> {sig.return_annotation}"
    return f"({params}){ret}"


GENERATED = {"plugins/hooks.md": hooks_reference}


def main(argv: list[str]) -> int:
    for rel, make in GENERATED.items():
        path = DOCS / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(make(), encoding="utf-8")
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
