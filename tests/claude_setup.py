"""A workspace and home holding a real-world Claude Code setup and a Codex config.

The project: commands with arguments (one nested, one with ``argument-hint`` strict YAML
rejects), a skill, two agents, ``.claude/settings.json`` with allow, ask and deny rules and
three hooks, ``.mcp.json`` with a stdio server (``tests/mcp_stub.py``).  The home:
``~/.claude/settings.json`` with a rule of its own and ``~/.codex/config.toml`` with an MCP
server, plus a Codex prompt.  Hooks write what they saw under ``<tmp>/seen``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

STUB = str(Path(__file__).parent / "mcp_stub.py")

REVIEW = """\
---
description: Review a pull request
argument-hint: [pr-number] [focus]
allowed-tools: Bash(git diff:*), Bash(gh pr view:*)
model: claude-sonnet-4
---
Review pull request #$1, paying most attention to $2.
Everything you were given: $ARGUMENTS
"""

COMPONENT = """\
---
description: Scaffold a React component
---
Create a React component named $ARGUMENTS under src/components with a test next to it.
"""

FIX = "Find and fix issue $1. Run the tests before you say it is done.\n"

SKILL = """\
---
name: release-notes
description: Write release notes from the git log since the last tag
---
Run `git log $(git describe --tags --abbrev=0)..HEAD --oneline` and group the entries.
"""

REVIEWER = """\
---
name: code-reviewer
description: Reviews changed code for bugs and style. Use after every change.
tools: Read, Grep, Glob
model: sonnet
---
You are a senior reviewer. Read the diff, then list defects by severity.
"""

TESTER = """\
---
name: test-runner
description: Runs the test suite and fixes failures
tools: Bash, Read, Edit
---
You run the tests and fix what fails, one failure at a time.
"""

PRE_HOOK = """\
import json, sys
event = json.load(sys.stdin)
open(sys.argv[1], "a").write(json.dumps(event) + "\\n")
command = event.get("tool_input", {}).get("command", "")
if "rm " in command:
    print("rm is not allowed here; move files to trash/ instead", file=sys.stderr)
    sys.exit(2)
"""

POST_HOOK = """\
import json, sys
event = json.load(sys.stdin)
open(sys.argv[1], "a").write(json.dumps(event) + "\\n")
"""


def build(tmp: Path) -> tuple[Path, Path, Path]:
    """``(workspace, home, seen)``: the fixture, hooks logging into ``seen``."""
    ws, home, seen = tmp / "ws", tmp / "userhome", tmp / "seen"
    for d in (ws, home, seen):
        d.mkdir(parents=True, exist_ok=True)
    claude = ws / ".claude"
    (claude / "commands" / "frontend").mkdir(parents=True)
    (claude / "commands" / "review-pr.md").write_text(REVIEW)
    (claude / "commands" / "frontend" / "component.md").write_text(COMPONENT)
    (claude / "commands" / "fix-issue.md").write_text(FIX)
    (claude / "skills" / "release-notes").mkdir(parents=True)
    (claude / "skills" / "release-notes" / "SKILL.md").write_text(SKILL)
    (claude / "agents").mkdir()
    (claude / "agents" / "code-reviewer.md").write_text(REVIEWER)
    (claude / "agents" / "test-runner.md").write_text(TESTER)
    (claude / "hooks").mkdir()
    (claude / "hooks" / "pre.py").write_text(PRE_HOOK)
    (claude / "hooks" / "post.py").write_text(POST_HOOK)
    py = sys.executable
    settings = {
        "permissions": {
            "allow": ["Bash(echo:*)", "Bash(npm run test:*)", "Read(src/**)",
                      "mcp__stub__echo"],
            "ask": ["Bash(git push:*)"],
            "deny": ["Read(./.env)", "Bash(touch:*)", "WebFetch(domain:evil.example)",
                     "WebSearch"],
        },
        "hooks": {
            "PreToolUse": [{"matcher": "Bash", "hooks": [
                {"type": "command",
                 "command": f'{py} "$CLAUDE_PROJECT_DIR/.claude/hooks/pre.py" {seen}/pre.jsonl'}]}],
            "PostToolUse": [{"matcher": "Bash|Edit|Write", "hooks": [
                {"type": "command",
                 "command": f'{py} "$CLAUDE_PROJECT_DIR/.claude/hooks/post.py" '
                            f'{seen}/post.jsonl'}]}],
            "Stop": [{"hooks": [{"type": "command",
                                 "command": f"echo stopped >> {seen}/stop.txt"}]}],
        },
    }
    (claude / "settings.json").write_text(json.dumps(settings, indent=2))
    (ws / ".mcp.json").write_text(json.dumps({"mcpServers": {
        "stub": {"command": py, "args": [STUB], "env": {"STUB_FROM": "claude"}}}}, indent=2))
    (ws / ".env").write_text("API_KEY=sk-fixture-secret\n")
    (ws / "src").mkdir()
    (ws / "src" / "app.py").write_text("print('app')\n")
    # the user's side
    (home / ".claude").mkdir()
    (home / ".claude" / "settings.json").write_text(json.dumps({
        "permissions": {"deny": ["Bash(npm publish:*)"]}, "theme": "dark"}))
    (home / ".codex" / "prompts").mkdir(parents=True)
    (home / ".codex" / "prompts" / "explain.md").write_text(
        "---\ndescription: Explain code\n---\nExplain $1 to a new teammate.\n")
    (home / ".codex" / "config.toml").write_text(
        'model = "o4-mini"\n\n[mcp_servers.codex-stub]\n'
        f'command = {json.dumps(py)}\nargs = [{json.dumps(STUB)}]\n')
    return ws, home, seen
