"""secrets and protect: refuse writes by effects, so they cover tools they never heard of."""

from __future__ import annotations

import pytest

from agent import Effects, Tool, ToolCall, hookimpl
from agent.contract.messages import Message, TextPart, ToolCallPart
from agent.contract.providers import StepFinished, Usage
from agent.lib.pathparts import segments
from agent.loop.session import Runtime, Session
from agent.testing import gate_decision, make_boot, run_tool
from plugins_builtin.protect import why_protected
from plugins_builtin.secrets import why_secret


class ScribblePlugin:
    """A third-party plugin with a write tool neither guard names anywhere."""

    def __init__(self) -> None:
        async def scribble(args, ctx):
            target = ctx.resolve(args["where"])
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(args.get("text", "scribbled"))
            return f"scribbled on {args['where']}"

        self.tool = Tool(
            name="scribble", description="Write a note somewhere.", run=scribble,
            parameters={"type": "object", "properties": {"where": {"type": "string"},
                                                         "text": {"type": "string"}},
                        "required": ["where"]},
            effects=lambda args: Effects(writes=(args["where"],)))

    @hookimpl
    def agent_register_tools(self, register, config):
        register(self.tool)


def erase_tool() -> Tool:
    async def never(args, ctx):
        raise AssertionError("a refused call must never run")
    return Tool(name="erase", description="Delete a file.", run=never,
                parameters={"type": "object", "properties": {"target": {"type": "string"}}},
                effects=lambda args: Effects(deletes=(args["target"],)))


@pytest.fixture
def boot(tmp_path):
    workspace = tmp_path / "ws"
    workspace.mkdir()
    plugin = ScribblePlugin()
    config, hooks = make_boot(workspace, tmp_path / "home", builtins=["secrets", "protect"],
                              extra=[("scribble", plugin)])
    return config, hooks, hooks.tools(config)["scribble"]


# ---- secrets ----------------------------------------------------------------------------------

SECRET = [
    ".env", ".env.local", "x/.env.production", "config/.ENV", "app\\.env",
    "certs/server.pem", "tls.key", "store.p12", "a.pfx", "java/keys.jks", "release.keystore",
    "id_rsa", "home/.ssh/id_ed25519", "keys/id_ecdsa.pub", "id_dsa",
    ".npmrc", "sub/.pypirc", ".netrc", ".pgpass",
    "credentials.json", "deploy/secrets.yaml", "secret.toml", "conf/credentials.ini",
    "secrets.yml", ".aws/config", ".ssh/known_hosts", "me/.gnupg/pubring.kbx",
    "C:\\Users\\me\\.aws\\credentials", "./a/../.env",
    ".ENV", "Config/.Env.Local", ".env/prod.json", "deploy/.ENV/keys.txt", "prod.env",
    "a.env.bak", "certs.PEM/readme.md", "ID_RSA", "home/.git-credentials",
]
NOT_SECRET = [
    ".env.example", "docs/env.md", "src/environment.ts", ".envrc.md", "keynote.txt",
    "monkey.py", "id_rsa_notes.md", "credentials.py", "secrets_manager.go", "src/aws/client.py",
    "ssh/README.md", "package.json", "README.md", ".env.sample", "docs/.env.template",
    "environment/x.py", "src/envelope.ts",
]


@pytest.mark.parametrize("path", SECRET)
def test_secret_paths(path):
    assert why_secret(segments(path)) is not None


@pytest.mark.parametrize("path", NOT_SECRET)
def test_ordinary_paths_are_not_secret(path):
    assert why_secret(segments(path)) is None


# ---- protect ----------------------------------------------------------------------------------

PROTECTED = [
    ".git/config", ".git/hooks/pre-commit", "sub/.git/HEAD", ".GIT\\config",
    "bun.lock", "bun.lockb", "package-lock.json", "web/pnpm-lock.yaml", "yarn.lock",
    "Cargo.lock", "poetry.lock", "uv.lock", "composer.lock", "go.sum", "Gemfile.lock",
    "node_modules/x/index.js", "web/node_modules/a.js", "vendor/lib.php",
    "target/debug/app", "target/release/app.d", ".next/cache/x", ".nuxt/a", ".svelte-kit/b",
    ".venv/lib/site.py", ".tox/py311/x", ".mypy_cache/a", ".pytest_cache/v", ".ruff_cache/x",
    ".turbo/log", ".parcel-cache/x", "web\\node_modules\\main.js",
    ".git", "sub/.git", "vendor/lib/.GIT", "a/b/.git/config", "a/.git/modules/x/config",
]
NOT_PROTECTED = [
    "src/gitignore-parser.ts", ".gitignore", ".github/workflows/ci.yml", "docs/dist-layout.md",
    "distributed/queue.ts", "src/build.py", "builder/x.py", "output/a.txt", "target/notes.md",
    "src/target.rs", "lock.json", "package.json", "vendored.md", "node_modules.md",
    # directories people make for their own output: not another tool's files
    "out/a", "build/x", "dist/bundle.js", "build/out.o", "out/index.html", "coverage/lcov.info",
    "web/dist/main.js",
]


@pytest.mark.parametrize("path", PROTECTED)
def test_protected_paths(path):
    assert why_protected(segments(path)) is not None


@pytest.mark.parametrize("path", NOT_PROTECTED)
def test_lookalikes_pass(path):
    assert why_protected(segments(path)) is None


def test_absolute_paths_are_judged_inside_the_workspace(tmp_path):
    workspace = tmp_path / "build" / "project"
    assert why_protected(segments(str(workspace / "src" / "a.py"), workspace)) is None
    assert why_protected(segments(str(workspace / "node_modules" / "a.js"), workspace)) \
        is not None


# ---- through the gate, with a tool neither plugin names ------------------------------------

async def test_gate_denies_a_new_write_tool_by_its_effects(boot):
    config, hooks, scribble = boot
    cases = {
        ".env": ("secrets", "refusing to write .env (environment files hold secrets). Tell the "
                 "user what to put there and let them write it."),
        "package-lock.json": ("protect", "refusing to write package-lock.json (a lockfile "
                              "written by the package manager). Regenerate it with the tool "
                              "that owns it rather than editing it."),
        ".git/config": ("protect", "refusing to write .git/config (git's own data; change it "
                        "with git commands). Regenerate it with the tool that owns it rather "
                        "than editing it."),
    }
    for path, (plugin, message) in cases.items():
        decision = await gate_decision(config, hooks, scribble, {"where": path}, yolo=True)
        assert not decision.allowed, path
        assert decision.by == "guard" and decision.source == plugin
        assert decision.message == f"Blocked by the {plugin} plugin: {message}"


async def test_deletes_are_guarded_too(boot):
    config, hooks, _ = boot
    decision = await gate_decision(config, hooks, erase_tool(), {"target": "sub\\.ssh\\id_rsa"},
                                   yolo=True)
    assert not decision.allowed and decision.source == "secrets"
    decision = await gate_decision(config, hooks, erase_tool(), {"target": "yarn.lock"},
                                   yolo=True)
    assert not decision.allowed and decision.source == "protect"


async def test_ordinary_writes_pass_and_run(boot):
    config, hooks, scribble = boot
    decision = await gate_decision(config, hooks, scribble, {"where": "notes/todo.md"},
                                   yolo=True)
    assert decision.allowed
    result = await run_tool(scribble, {"where": "notes/todo.md"}, config)
    assert not result.is_error
    assert (config.workspace / "notes/todo.md").read_text() == "scribbled"


def test_commands_are_not_their_business_but_reads_of_secrets_are(boot):
    _, hooks, _ = boot
    assert hooks.guard(ToolCall("c", "peek", {}), Effects(command="echo x > .env"), None) == []
    assert hooks.guard(ToolCall("c", "peek", {}), Effects(reads=(".git/config",)), None) == []
    verdicts = hooks.guard(ToolCall("c", "peek", {}), Effects(reads=("src/.ENV",)), None)
    assert [(v.decision, v.source) for v in verdicts] == [("deny", "secrets")]


async def test_a_refused_write_never_touches_the_disk(boot):
    config, hooks, _ = boot
    (config.workspace / ".git").mkdir()
    (config.workspace / ".git" / "config").write_text("[core]\n")
    calls = [("c1", ".env"), ("c2", "package-lock.json"), ("c3", ".git/config")]

    class Provider:
        label = "scripted"
        replies = [Message("assistant", [ToolCallPart(i, "scribble", {"where": p})
                                         for i, p in calls]),
                   Message("assistant", [TextPart("ok")])]

        async def stream(self, request):
            yield StepFinished(self.replies.pop(0), Usage())

    async def approve(request):
        return "yes"

    session = Session(Runtime(config, hooks, hooks.tools(config), Provider(), approver=approve))
    events = [e async for e in session.run("scribble everywhere")]
    denied = [e for e in events if e.type == "tool-denied"]
    assert [e.id for e in denied] == ["c1", "c2", "c3"]
    assert not any(e.type == "tool-result" for e in events)
    assert not (config.workspace / ".env").exists()
    assert not (config.workspace / "package-lock.json").exists()
    assert (config.workspace / ".git" / "config").read_text() == "[core]\n"


def test_the_quick_prefilter_never_hides_a_secret_name():
    # Every name the rules call secret passes the prefilter that lets walks skip the rules.
    from agent.contain import secrets

    # (why_secret_name is the rule itself, without the prefilter.)
    names = SECRET + [g.replace("*", "x") for g in secrets.SECRET_NAME_GLOBS]
    checked = 0
    for path in names:
        for part in segments(path):
            if secrets.why_secret_name(part) is not None:
                assert secrets._MAYBE_SECRET.search(part), path
                checked += 1
    assert checked >= len(names)


# ---- everyday neighbours of the protected set, through the gate and the real bash tool -------

EVERYDAY_WRITES = [
    ("mkdir -p out/a", "out/a"),
    ("mkdir -p build && touch build/x", "build/x"),
    ("mkdir -p dist && echo x > dist/app.js", "dist/app.js"),
    ("mkdir -p coverage && touch coverage/lcov.info", "coverage/lcov.info"),
    ("mkdir -p src/build && touch src/build/gen.py", "src/build/gen.py"),
]
STILL_PROTECTED = [
    ("mkdir -p node_modules/x", "node_modules/x"),
    ("touch package-lock.json", "package-lock.json"),
    ("mkdir -p .venv/lib && touch .venv/lib/x", ".venv/lib/x"),
    ("echo x > .git/description", ".git/description"),
]


@pytest.mark.parametrize(("command", "made"), EVERYDAY_WRITES)
async def test_everyday_output_directories_are_not_protected(command, made, tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    config, hooks = make_boot(ws, tmp_path / "home", file_data={"sandbox": "off"},
                              flags={"yolo": True})
    bash = hooks.tools(config)["bash"]
    decision = await gate_decision(config, hooks, bash, {"command": command}, yolo=True)
    assert decision.allowed, decision
    await run_tool(bash, {"command": command}, config)
    assert (ws / made).exists()


@pytest.mark.parametrize(("command", "made"), STILL_PROTECTED)
async def test_files_a_tool_owns_stay_protected_from_commands(command, made, tmp_path):
    ws = tmp_path / "ws"
    (ws / ".git").mkdir(parents=True)
    config, hooks = make_boot(ws, tmp_path / "home", file_data={"sandbox": "off"},
                              flags={"yolo": True})
    bash = hooks.tools(config)["bash"]
    decision = await gate_decision(config, hooks, bash, {"command": command}, yolo=True)
    if decision.allowed:
        await run_tool(bash, {"command": command}, config)
    assert not decision.allowed and decision.source == "protect", decision
    assert not (ws / made).exists()
