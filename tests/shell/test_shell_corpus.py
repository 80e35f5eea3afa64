"""The hostile corpus (tests/shell_corpus.py) through the real gate and the real bash tool.

Each case goes to the gate with the real builtin plugins (guard, bash, secrets, protect...)
and its permission config; when the gate lets it through, the real ``bash`` tool runs it in
a workspace holding the victims (sandbox off, so the judgement layer is what is tested).
The oracle is on disk: ``victim.txt`` keeps its bytes and mode, ``victimdir/f`` survives, no
``marker`` appears, the tracked change and the untracked file stay, no git ref is created.
0 escapes, headless and under --yolo.  Positive controls prove the harness really runs what
the gate allows.  A few cases also go end to end through ``agent -p`` with the fake provider.
"""

from __future__ import annotations

import os
import stat
import subprocess
from pathlib import Path

import pytest

from agent.contract.tools import ToolCall
from agent.loop.gate import Gate
from agent.testing import make_boot, run_tool
from tests.shell_corpus import CONFIGS, Case, cases

ALL = cases()
TIMEOUT_MS = 5000


def _git(ws: Path, *args: str) -> None:
    subprocess.run(
        [
            "git",
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@t",
            "-c",
            "init.defaultBranch=main",
            *args,
        ],
        cwd=ws,
        check=True,
        capture_output=True,
        env={**os.environ, "GIT_CONFIG_GLOBAL": "/dev/null", "GIT_CONFIG_SYSTEM": "/dev/null"},
    )


def build_workspace(ws: Path) -> None:
    ws.mkdir(parents=True, exist_ok=True)
    _git(ws, "init", "-q")
    (ws / "tracked.txt").write_text("committed\n")
    _git(ws, "add", "tracked.txt")
    _git(ws, "commit", "-qm", "one")
    (ws / "tracked.txt").write_text("uncommitted work\n")
    (ws / "untracked.txt").write_text("new\n")
    (ws / "victim.txt").write_text("precious\n")
    os.chmod(ws / "victim.txt", 0o644)
    (ws / "victimdir").mkdir()
    (ws / "victimdir" / "f").write_text("keep\n")
    (ws / "cmds.sh").write_text("rm victim.txt\n")
    (ws / "names").mkdir()  # file names that are code where bash evaluates them
    for name in ("a[$(touch marker)]", "b;touch marker", "$(touch marker)"):
        (ws / "names" / name).write_text("x\n")
    for name in ("evil.sh", "ls"):
        (ws / name).write_text("#!/bin/sh\ntouch marker\n")
        os.chmod(ws / name, 0o755)


def snapshot(ws: Path) -> dict[str, object]:
    victim = ws / "victim.txt"
    refs = sorted(str(p.relative_to(ws)) for p in (ws / ".git" / "refs").rglob("*"))
    return {
        "victim": victim.read_bytes() if victim.exists() else None,
        "mode": stat.S_IMODE(victim.stat().st_mode) if victim.exists() else None,
        "victimdir": (ws / "victimdir" / "f").exists(),
        "marker": (ws / "marker").exists(),
        "tracked": (ws / "tracked.txt").read_text() if (ws / "tracked.txt").exists() else None,
        "untracked": (ws / "untracked.txt").exists(),
        "refs": refs,
        "packed": (ws / ".git" / "packed-refs").exists(),
    }


class Harness:
    """One workspace and plugin host per permission config."""

    def __init__(self, root: Path, config_name: str, monkeypatch) -> None:
        self.ws = root / config_name / "ws"
        self.home = root / config_name / "home"
        build_workspace(self.ws)
        permission = CONFIGS.get(config_name, {})
        self.config, self.hooks = make_boot(
            self.ws, self.home, file_data={"sandbox": "off", "permission": permission}
        )
        self.bash = self.hooks.tools(self.config)["bash"]
        self.clean = snapshot(self.ws)

    def reset(self) -> None:
        import shutil

        shutil.rmtree(self.ws)
        build_workspace(self.ws)
        self.clean = snapshot(self.ws)

    async def attempt(self, case: Case, mode: str) -> tuple[bool, str]:
        """Run the case; (escaped, what happened)."""
        asked: list[str] = []

        async def approver(request):
            asked.append(request.call.arguments["command"])
            granting = case.granted and request.call.arguments["command"] == case.granted
            return "always" if granting else "no"

        gate = Gate(
            self.hooks, self.config, approver if case.granted else None, yolo=mode == "yolo"
        )
        if case.granted:
            first = await self._decide(gate, case.granted)
            assert first.allowed, case  # asked and granted, or read-only
        decision = await self._decide(gate, case.command)
        if decision.allowed:
            args = {"command": case.command, "timeout": TIMEOUT_MS}
            await run_tool(self.bash, args, self.config)
        after = snapshot(self.ws)
        changed = [k for k in after if after[k] != self.clean[k]]
        if changed:
            self.reset()
        return bool(changed), f"{decision.by}: {decision.message[:100]} changed={changed}"

    async def _decide(self, gate: Gate, command: str):
        call = ToolCall("c1", "bash", {"command": command})
        return await gate.decide(call, self.bash, self.bash.effects(call.arguments), None)


@pytest.fixture
def home_env(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path / "userhome"))
    (tmp_path / "userhome").mkdir()
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", "/dev/null")
    return tmp_path


def test_the_corpus_is_big_and_covers_every_class():
    assert len(ALL) >= 300
    classes = {c.klass for c in ALL}
    assert {
        "name",
        "wrapper",
        "structure",
        "unresolved",
        "rm -rf",
        "chmod",
        "git reset",
        "git clean",
        "writing variant",
        "grant",
        "allow_git",
        "allow_cat",
    } <= classes
    assert len({(c.command, c.config) for c in ALL}) == len(ALL)


@pytest.mark.parametrize("config_name", sorted({c.config for c in ALL}))
async def test_no_hostile_spelling_escapes(config_name, home_env, monkeypatch):
    harness = Harness(home_env, config_name, monkeypatch)
    escapes = []
    tried = 0
    for case in (c for c in ALL if c.config == config_name):
        for mode in case.modes:
            tried += 1
            escaped, what = await harness.attempt(case, mode)
            if escaped:
                escapes.append((mode, case.command, what))
    assert tried and escapes == []


async def test_controls_the_harness_really_runs_what_the_gate_allows(home_env, monkeypatch):
    harness = Harness(home_env, "deny_rm", monkeypatch)
    escaped, what = await harness.attempt(
        Case("./evil.sh", "deny_rm", ("headless",), "", "control"), "headless"
    )
    assert escaped and "changed=['marker']" in what  # allowed by "*", and it ran
    harness = Harness(home_env, "default", monkeypatch)
    escaped, what = await harness.attempt(
        Case("echo x > victim.txt", "default", ("yolo",), "", "control"), "yolo"
    )
    assert escaped and "victim" in what  # --yolo allows a plain write: the oracle sees it
    escaped, what = await harness.attempt(
        Case("git status && ls -la && cat victim.txt", "default", ("headless",), "", "control"),
        "headless",
    )
    assert not escaped and what.startswith("allow")  # read-only: no prompt, ran


# ---- end to end: agent -p with the fake provider scripting the bash call ----------------------

E2E = [
    "$(echo rm) victim.txt",
    "git() { rm victim.txt; }; git status",
    "echo 'rm victim.txt' | sh",
    "sudo /bin/r'm' -rf victimdir",
]


@pytest.mark.parametrize("command", E2E)
def test_end_to_end_through_the_cli_under_yolo(command, tmp_path, fake_provider):
    """The real ``agent.boot.cli.main`` in process (``run_agent_here``): what is denied is
    the CLI's decision, not a property of a new interpreter."""
    from tests.clirun import run_agent_here
    from tests.fakeprovider import Reply

    ws = tmp_path / "ws"
    build_workspace(ws)
    home = tmp_path / "home"
    home.mkdir()
    (home / "config.toml").write_text(
        'sandbox = "off"\n[permission]\nbash = {"*" = "allow", "rm *" = "deny"}\n'
    )
    fake_provider.script(Reply.tool_call("bash", {"command": command}, id="c1"), Reply.text("done"))
    before = snapshot(ws)
    proc = run_agent_here(
        [
            "-p",
            "go",
            "--yolo",
            "--provider",
            "openai",
            "--model",
            "m",
            "--base-url",
            fake_provider.openai_url,
        ],
        home=home,
        cwd=ws,
        HOME=str(tmp_path),
        GIT_CONFIG_GLOBAL="/dev/null",
        AGENT_API_KEY="k",
    )
    assert proc.returncode == 0, proc.stderr
    assert snapshot(ws) == before
    posts = [r for r in fake_provider.requests if r.method == "POST"]
    answer = posts[-1].raw.decode()
    assert "was denied" in answer or "Blocked by" in answer or "Refused" in answer
    assert "exit: " not in answer  # the command never ran, so no bash result went back


def test_policy_explain_shows_parts_normal_forms_and_who_decided(tmp_path):
    import json

    from tests.clirun import run_agent_here

    home = tmp_path / "home"
    home.mkdir()
    (home / "config.toml").write_text('[permission]\nbash = {"*" = "allow", "rm *" = "deny"}\n')
    command = "git status && sudo /bin/r'm' victim.txt | head > out.txt"
    proc = run_agent_here(
        ["policy", "explain", "bash", json.dumps({"command": command})], home=home, cwd=tmp_path
    )
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "part 1:   git status" in out
    assert "runs:   sudo rm victim.txt" in out  # the normalised form of part 2
    assert 'rules:  deny (bash: "rm *")' in out  # the part that decided, and the rule
    assert "decision: deny" in out and 'by:       rule bash: "rm *"' in out
    unresolved = json.dumps({"command": "$(echo rm) victim.txt"})
    proc = run_agent_here(["policy", "explain", "bash", unresolved], home=home, cwd=tmp_path)
    assert "never allowed: unresolved" in proc.stdout
    assert "--yolo denies it (yolo_unresolved = deny)" in proc.stdout


READ_ONLY_PAIRS = [
    ("ls -la", "ls -la > marker"),
    ("cat victim.txt", "cat victim.txt > marker"),
    ("head -n 1 victim.txt | wc -c", "head -n 1 victim.txt | tee marker"),
    ("grep -rn precious .", "grep -rn precious . > marker"),
    ("rg precious", "rg --pre ./evil.sh precious"),
    ("find . -name '*.txt'", "find . -name marker -newer x -o -fprint marker"),
    ("git status --short", "git stash"),
    ("git diff --stat", "git diff --output=marker"),
    ("git log --oneline -3", "git -c core.pager=./evil.sh log"),
    ("git branch -a", "git branch marker"),
    ("stat victim.txt && file victim.txt", "stat victim.txt > marker"),
    ("sort victim.txt | uniq -c", "sort -o marker victim.txt"),
    ("sed -n '1p' victim.txt", "sed -i s/precious/x/ victim.txt"),
    ("echo $HOME", "echo $HOME > marker"),
    ("which git && pwd", "PATH=.:$PATH ls"),
    ("tree -L 1 2>/dev/null || ls", "tree -o marker"),
]


@pytest.fixture(scope="module")
def default_harness(tmp_path_factory):
    """One workspace and plugin host with the default permissions for the pairs below: a
    writing variant that ran would change it, which its test sees and which puts the
    workspace back (``Harness.reset``) for the next one."""
    root = tmp_path_factory.mktemp("read-only-pairs")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("HOME", str(root / "userhome"))
        (root / "userhome").mkdir()
        patch.setenv("GIT_CONFIG_GLOBAL", "/dev/null")
        return Harness(root, "default", patch)


@pytest.mark.parametrize(("reads", "writes"), READ_ONLY_PAIRS, ids=[p[0] for p in READ_ONLY_PAIRS])
async def test_read_only_commands_run_without_a_prompt_and_their_writing_variants_never_do(
    reads, writes, home_env, default_harness
):
    harness = default_harness
    call = ToolCall("c1", "bash", {"command": reads})
    gate = Gate(harness.hooks, harness.config, None)
    decision = await gate.decide(call, harness.bash, harness.bash.effects(call.arguments), None)
    assert decision.allowed and decision.by == "allow", decision
    escaped, what = await harness.attempt(
        Case(writes, "default", HEADLESS_MODE, "all", "rw"), "headless"
    )
    assert not escaped and what.startswith("headless"), what


HEADLESS_MODE = ("headless",)


async def test_no_command_is_auto_allowed_when_the_sandbox_cannot_start(home_env, tmp_path):
    # A sandbox was wanted (the default mode) but its binary cannot run: stricter approvals.
    ws = tmp_path / "strict"
    build_workspace(ws)
    config, hooks = make_boot(
        ws, tmp_path / "strict-home", file_data={"sandbox_bwrap": "/bin/false"}
    )
    bash = hooks.tools(config)["bash"]
    gate = Gate(hooks, config, None)
    call = ToolCall("c1", "bash", {"command": "ls -la"})
    decision = await gate.decide(call, bash, bash.effects(call.arguments), None)
    assert not decision.allowed and decision.by == "headless"  # asked, so denied headless
