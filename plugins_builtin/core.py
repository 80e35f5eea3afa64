"""The essential core: the base system prompt, the tool guide, and default provider choice."""

from __future__ import annotations

import platform

from agent import Fragment, hookimpl

IDENTITY = """\
You are agent, a coding agent working in the user's terminal. You read the codebase, edit
files, run commands and tests, and report what you did. Work in the current workspace; every
path you pass to a tool is relative to it.

How to work:
- Look before you change: read the files you will touch and the tests that cover them.
- Make the smallest change that does what was asked; keep the project's style.
- After changing code, run the relevant tests or checks and report the real outcome.
- When the request is ambiguous and a wrong guess would be costly, ask; otherwise take the
  most reasonable reading, say which, and go on.
- A denied tool call is final: do not retry it or work around it; tell the user what you
  needed and why.
- Be brief. Lead with the answer; show paths as `path:line`."""

HEADLESS = """\
This is a non-interactive run: nobody can answer questions or approve tool calls. Decide for
yourself, state your assumptions in the answer, and expect calls that need approval to be
denied unless the user passed --yolo."""


@hookimpl
def agent_prompt_fragments(session):
    """Identity, environment, and a line per tool actually offered this step."""
    config = session.config
    frags = [Fragment("identity", IDENTITY, order=0)]
    env = (f"Environment: {platform.system()} {platform.machine()}, "
           f"workspace {config.workspace}.")
    frags.append(Fragment("environment", env, order=10))
    if config.headless:
        frags.append(Fragment("headless", HEADLESS, order=20))
    guide = [f"- {t.name}: {t.prompt}" for t in session.offered_tools if t.prompt]
    if guide:
        frags.append(Fragment("tool-guide", "Tool notes:\n" + "\n".join(guide), order=100))
    return frags


@hookimpl
def agent_select_provider(config, providers, settings):
    """The provider named in the settings, built from its registered spec."""
    spec = providers.get(settings.provider)
    if spec is None:
        return None
    return spec.create(settings)
