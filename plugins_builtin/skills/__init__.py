"""Skills: task playbooks listed in the system prompt, loaded on demand by the skill tool; /skills.

The system prompt carries only the catalogue (name and description of each skill); the model
loads a body with the ``skill`` tool when the task matches.  Nine skills are bundled; more come
from the registry (``/registry``), the user's config dir and the project's ``.agent/skills``.
``--no-skills`` turns all of it off.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from agent import (
    Description,
    Effects,
    Fragment,
    HeaderLine,
    Option,
    SlashCommand,
    Tool,
    ToolError,
    ToolResult,
    hookimpl,
)

from .library import Catalogue, Library

TOOL_NAME = "skill"

_libraries: dict[tuple[Path, Path, Path | None], Library] = {}

#: How many libraries are kept, the most recently used: one process uses one or two; one
#: that works in many workspaces (an embedder; the test suite's in-process runs) would
#: otherwise keep every workspace's skills.  A library re-reads its files when they change,
#: so one dropped and made again answers the same.
LIBRARIES_KEPT = 8


def library_for(config: Any) -> Library:
    """The :class:`Library` of ``config``'s config dir and workspace (one per pair)."""
    home = None if config.get("compat") is False else Path(
        config.get("compat_home") or os.path.expanduser("~"))
    key = (Path(config.paths.config_dir), Path(config.workspace), home)
    lib = _libraries.pop(key, None)
    if lib is None:
        lib = Library(key[0], key[1], home=home)
    _libraries[key] = lib  # the most recently used last
    while len(_libraries) > LIBRARIES_KEPT:
        del _libraries[next(iter(_libraries))]
    return lib


def enabled(config: Any) -> bool:
    return bool(config.get("skills", True))


# ---- the skill tool ----------------------------------------------------------------------------


def load_skill(catalogue: Catalogue, name: str) -> ToolResult:
    """What the ``skill`` tool returns for ``name``; an unknown name is a :class:`ToolError`
    listing the available ones."""
    skill = catalogue.get(name.strip())
    if skill is None:
        available = ", ".join(catalogue.skills) or "none"
        raise ToolError(f'No skill named "{name}". Available: {available}.')
    text = (f'Skill "{skill.name}" ({skill.origin}). Follow these instructions for this task.'
            f"\n\n{skill.body}")
    return ToolResult(text, summary=f"{skill.name} ({skill.origin})")


async def run_skill(args: dict[str, Any], ctx: Any) -> ToolResult:
    return load_skill(library_for(ctx.config).current(), str(args["name"]))


SKILL_TOOL = Tool(
    name=TOOL_NAME,
    describe=lambda args: Description((str(args.get("name") or ""),),
                                      f"Load the skill {args.get('name') or '?'}?"),
    description=("Load a skill: instructions for a kind of task (committing, debugging, "
                 "reviewing...). The system prompt lists the skills by name and description; "
                 "pass the name. Follow what it returns."),
    run=run_skill,
    parameters={
        "type": "object",
        "properties": {"name": {"type": "string", "description": "the skill's name"}},
        "required": ["name"],
        "additionalProperties": False,
    },
    effects=lambda args: Effects(targets=(str(args.get("name", "")),)),  # rules match the name
    read_only=True,
)


# ---- /skills -----------------------------------------------------------------------------------


def skills_report(config: Any) -> tuple[str, str]:
    """The ``/skills`` panel: (body, hint)."""
    if not enabled(config):
        return "Skills are off for this run (--no-skills).", ""
    catalogue = library_for(config).current()
    lines = [f"`{s.name:<12} {s.origin:<9}` {s.description}" for s in catalogue.skills.values()]
    if not lines:
        lines = ["No skills found."]
    for skipped in catalogue.skipped:
        lines.append(f"skipped {skipped.path}: {skipped.reason}")
    lines += ["", "`/registry` to browse and install more"]
    return "\n".join(lines), "the agent loads one with the skill tool"


def cmd_skills(app: Any, args: str, config: Any) -> str | None:
    body, hint = skills_report(config)
    info = getattr(app, "info", None)
    if callable(info):
        info("skills", body, hint)
        return None
    return body


# ---- hooks -------------------------------------------------------------------------------------


@hookimpl
def agent_addoption(options):
    options.add(Option("skills", type="bool", default=True, flag="--no-skills", negate=True,
                       help="load no skills and offer no skill tool (default: load them)"))


@hookimpl
def agent_register_tools(register, config):
    if enabled(config):
        register(SKILL_TOOL)


@hookimpl
def agent_offered_tools(tools, session):
    """The skill tool is offered only while there is a skill to load (installs and new files
    are seen at the next step, without a restart)."""
    if not any(t.name == TOOL_NAME for t in tools):
        return None
    if library_for(session.config).current().skills:
        return None
    return [t for t in tools if t.name != TOOL_NAME]


def header_line(config: Any, shown: int = 10) -> str:
    """The startup header's line: ``skills: N (names...)``."""
    if not enabled(config):
        return "skills: off (--no-skills)"
    names = list(library_for(config).current().skills)
    more = ", ..." if len(names) > shown else ""
    listed = f" ({', '.join(names[:shown])}{more})" if names else ""
    return f"skills: {len(names)}{listed}"


@hookimpl
def agent_header_lines(config, session):
    return HeaderLine(header_line(config), order=50) if session is not None else None


@hookimpl
def agent_prompt_fragments(session):
    if not any(t.name == TOOL_NAME for t in session.offered_tools):
        return None
    text = library_for(session.config).current().prompt_text()
    return Fragment("skills", text, order=150) if text else None


@hookimpl
def agent_register_commands(register, config):
    register(SlashCommand("skills", "the skills the agent can load",
                          lambda app, args: cmd_skills(app, args, config), info=True))
