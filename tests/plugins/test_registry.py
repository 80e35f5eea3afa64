"""Registry: the https-only client, strict manifests, previews before installs, and installed
manifests enforced on effects (apply_patch and move_file included) without a restart."""

from __future__ import annotations

import hashlib
import json
import random
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urljoin, urlsplit

import pytest
from fakeprovider import Reply
from hypothesis import given, settings
from hypothesis import strategies as st
from lanes import examples

from agent import Effects, Tool, hookimpl
from agent.testing import collect, gate_decision, make_boot, make_session
from plugins_builtin.registry import enforce, lock
from plugins_builtin.registry.client import RegistryClient, RegistryError, parse_index
from plugins_builtin.registry.commands import RegistryCommand
from plugins_builtin.registry.globs import glob_match, pattern_problem
from plugins_builtin.registry.manifest import ManifestError, parse_manifest, validate

# ---- a registry on 127.0.0.1 -----------------------------------------------------------------


class _QuietServer(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request, client_address):
        pass  # a client hanging up on an over-cap body is expected here


class Site:
    """Files served over plain http on the loopback interface; every request is recorded."""

    def __init__(self) -> None:
        self.files: dict[str, tuple[int, bytes, dict[str, str]]] = {}
        self.requests: list[str] = []
        self.index_spec: dict[str, list[dict]] | None = None
        site = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def do_GET(self):
                site.requests.append(self.path)
                status, body, headers = site.files.get(self.path, (404, b"missing", {}))
                if self.path == "/index.json" and site.index_spec is not None and not body:
                    body = site.index_body()
                self.send_response(status)
                for key, value in headers.items():
                    self.send_header(key, value)
                if "Content-Length" not in headers and "Transfer-Encoding" not in headers:
                    self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                if headers.get("Transfer-Encoding") == "chunked":
                    for i in range(0, len(body), 8192):
                        part = body[i:i + 8192]
                        self.wfile.write(f"{len(part):x}\r\n".encode() + part + b"\r\n")
                    self.wfile.write(b"0\r\n\r\n")
                else:
                    self.wfile.write(body)

        self.server = _QuietServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever,
                                       kwargs={"poll_interval": 0.05}, daemon=True)
        self.thread.start()

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def put(self, path: str, body: str | bytes, status: int = 200, **headers: str) -> None:
        data = body.encode() if isinstance(body, str) else body
        self.files[path] = (status, data, {k.replace("_", "-"): v for k, v in headers.items()})

    def put_index(self, skills=(), plugins=()) -> None:
        """Serve an index; entries without a ``sha256`` get the digest of the file served at
        their URL at the time of the request (a registry publishing honest digests)."""
        self.index_spec = {"skills": list(skills), "plugins": list(plugins)}
        self.put("/index.json", b"")

    def index_body(self) -> bytes:
        doc = {kind: [dict(e) for e in entries] for kind, entries in self.index_spec.items()}
        for entries in doc.values():
            for entry in entries:
                if "sha256" not in entry:
                    path = urlsplit(urljoin(self.base + "/index.json", entry.get("url", ""))).path
                    body = self.files.get(path, (404, b"", {}))[1]
                    entry["sha256"] = hashlib.sha256(body).hexdigest()
        return json.dumps(doc).encode()

    def client(self) -> RegistryClient:
        return RegistryClient(self.base + "/index.json", allow_http_for_tests=True)

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def site():
    s = Site()
    yield s
    s.close()


def skill_text(name: str, description: str = "a skill", lines: int = 3) -> str:
    body = "\n".join(f"step {i}: do thing {i}" for i in range(1, lines + 1))
    return f"---\nname: {name}\ndescription: {description}\n---\n{body}\n"


NO_SECRETS = {
    "name": "no-secrets",
    "description": "Keep the agent out of secrets/",
    "appendix": "Never write under secrets/; ask the user to do it.",
    "deny": [{"tools": ["write_file"], "pathPattern": "secrets/*",
              "reason": "secrets/ is managed by the ops team"}],
}


@pytest.fixture
def home(tmp_path):
    path = tmp_path / "home"
    path.mkdir()
    return path


@pytest.fixture
def ws(tmp_path):
    path = tmp_path / "ws"
    path.mkdir()
    return path


def command(home, site) -> RegistryCommand:
    return RegistryCommand(home, site.client)


def install_manifest(home, manifest: dict) -> None:
    """What an install leaves: the file and its line in the install record."""
    directory = home / "registry" / "plugins"
    directory.mkdir(parents=True, exist_ok=True)
    text = json.dumps(manifest)
    (directory / f"{manifest['name']}.json").write_text(text)
    lock.record(home / "registry", "plugin", manifest["name"], text, source="test",
                index_sha256="")


# ---- the client: https only, size caps ---------------------------------------------------------


async def test_plain_http_is_refused_before_any_request(site):
    site.put_index()
    with pytest.raises(RegistryError, match="only reached over https"):
        await RegistryClient(site.base + "/index.json").fetch_index()
    with pytest.raises(RegistryError, match="only reached over https"):
        RegistryClient("x", allow_http_for_tests=True).check_url("http://example.com/i.json")
    assert site.requests == []


async def test_configuration_cannot_allow_plain_http(site, ws, home):
    site.put_index(skills=[{"name": "x", "description": "d", "url": "x.md"}])
    config, hooks = make_boot(ws, home, builtins=["registry"],
                              file_data={"registry_url": site.base + "/index.json"})
    registry = hooks.commands(config).get("registry")
    shown = []
    app = type("App", (), {"info": lambda self, title, body, hint="": shown.append(body)})()
    await registry.run(app, "list")
    assert (f"the configured registry could not be read: refusing {site.base}/index.json: "
            "the registry is only reached over https") in shown[0]
    assert site.requests == []
    assert "`P terraform-guard" in shown[0]  # the bundled index still answers
    assert "`S x " not in shown[0]


def test_cli_subcommand_lists_installs_and_refuses_plain_http(site, ws, home):
    from clirun import run_agent_here

    install_manifest(home, NO_SECRETS)
    out = run_agent_here(["registry", "installed"], home=home, cwd=ws)
    assert (out.returncode, out.stdout) == (0, "P no-secrets\n")  # plain text, no markdown
    site.put_index()
    out = run_agent_here(["registry", "search", "x"], home=home, cwd=ws,
                         AGENT_REGISTRY_URL=site.base + "/index.json")
    assert "the registry is only reached over https" in out.stdout
    assert "`" not in out.stdout
    assert site.requests == []


async def test_redirects_are_followed_only_to_allowed_urls(site):
    site.put("/old.json", b"", 302, Location="/index.json")
    site.put_index(skills=[{"name": "x", "description": "d", "url": "x.md"}])
    client = RegistryClient(site.base + "/old.json", allow_http_for_tests=True)
    index = await client.fetch_index()
    assert [e.name for e in index.entries] == ["x"]
    site.put("/away.json", b"", 301, Location="http://example.com/index.json")
    with pytest.raises(RegistryError, match="refusing http://example.com/index.json"):
        await RegistryClient(site.base + "/away.json", allow_http_for_tests=True).fetch_index()


@pytest.mark.parametrize("chunked", [False, True])
async def test_index_over_256_kb_is_refused(site, chunked):
    filler = "x" * (256 * 1024)
    body = json.dumps({"skills": [], "pad": filler})
    headers = {"Transfer-Encoding": "chunked"} if chunked else {}
    site.put("/index.json", body, **headers)
    with pytest.raises(RegistryError, match="the registry index at .* is larger than 256 KB"):
        await site.client().fetch_index()
    site.put("/index.json", json.dumps({"skills": [], "pad": "x" * (255 * 1024)}), **headers)
    assert (await site.client().fetch_index()).entries == []


async def test_entry_over_64_kb_is_refused(site, home):
    site.put_index(skills=[{"name": "huge", "description": "d", "url": "huge.md"}])
    site.put("/huge.md", skill_text("huge", lines=4000))
    out = await command(home, site).run(None, "add huge --yes")
    assert out.startswith("skill huge at ") and out.endswith("is larger than 64 KB; refused")
    assert not (home / "registry").exists()


D = hashlib.sha256(b"an entry").hexdigest()


def test_index_entries_are_checked_and_urls_resolved():
    index = parse_index(json.dumps({
        "skills": [{"name": "ok", "description": "fine", "url": "skills/ok.md", "sha256": D},
                   {"name": "Bad Name", "description": "x", "url": "b.md", "sha256": D},
                   {"name": "ok", "description": "again", "url": "again.md", "sha256": D},
                   {"name": "nourl", "description": "x", "sha256": D},
                   {"name": "nodigest", "description": "x", "url": "n.md"},
                   {"name": "baddigest", "description": "x", "url": "n.md", "sha256": "abc"}],
        "plugins": [{"name": "p", "description": "  spaced\n out ", "url": "https://cdn/p.json",
                     "sha256": D.upper()}],
    }).encode(), "https://reg.example/v1/index.json")
    assert [(e.kind, e.name, e.description, e.url, e.sha256) for e in index.entries] == [
        ("skill", "ok", "fine", "https://reg.example/v1/skills/ok.md", D),
        ("plugin", "p", "spaced out", "https://cdn/p.json", D)]
    assert len(index.problems) == 5
    assert sum("sha256 is missing" in p for p in index.problems) == 2
    with pytest.raises(RegistryError, match="not an index"):
        parse_index(b'["skills"]', "https://x/i.json")
    with pytest.raises(RegistryError, match="not valid JSON"):
        parse_index(b"{", "https://x/i.json")


# ---- /registry: browsing ----------------------------------------------------------------------


@pytest.fixture
def stocked(site):
    site.put_index(
        skills=[{"name": "changelog", "description": "Write release notes", "url": "s/cl.md"},
                {"name": "guarded", "description": "both kinds", "url": "s/guarded.md"}],
        plugins=[{"name": "no-secrets", "description": "Keep out of secrets/",
                  "url": "p/no-secrets.json"},
                 {"name": "guarded", "description": "both kinds", "url": "p/guarded.json"}])
    site.put("/s/cl.md", skill_text("changelog", "Write release notes", lines=30))
    site.put("/s/guarded.md", skill_text("guarded"))
    site.put("/p/no-secrets.json", json.dumps(NO_SECRETS))
    site.put("/p/guarded.json", json.dumps({**NO_SECRETS, "name": "guarded"}))
    return site


async def test_list_search_and_installed_markers(stocked, home):
    cmd = command(home, stocked)
    out = await cmd.run(None, "")
    assert out.splitlines() == [
        "`S changelog               ` Write release notes",
        "`P guarded                 ` both kinds",
        "`S guarded                 ` both kinds",
        "`P no-secrets              ` Keep out of secrets/"]
    await cmd.run(None, "add changelog --yes")
    assert "` Write release notes  (installed)" in await cmd.run(None, "list")
    assert (await cmd.run(None, "search RELEASE")).splitlines() == [
        "`S changelog               ` Write release notes  (installed)"]
    assert await cmd.run(None, "secrets") == "`P no-secrets              ` Keep out of secrets/"
    assert await cmd.run(None, "search zzz") == 'nothing in the registry matches "zzz"'
    assert await cmd.run(None, "installed") == "`S changelog`"


@pytest.mark.parametrize("args,usage", [
    ("search", "usage: /registry search <query>"),
    ("add", "usage: /registry install <name> [--yes]"),
    ("install", "usage: /registry install <name> [--yes]"),
    ("remove", "usage: /registry remove <name>"),
    ("uninstall", "usage: /registry remove <name>")])
async def test_verbs_without_their_argument_print_usage(site, home, args, usage):
    assert await command(home, site).run(None, args) == usage
    assert site.requests == []


# ---- /registry: installing skills -------------------------------------------------------------


async def test_skill_is_shown_in_full_and_installed_only_after_confirm(stocked, home):
    cmd = command(home, stocked)
    preview = await cmd.run(None, "add changelog")
    target = home / "registry" / "skills" / "changelog.md"
    assert not target.exists()
    served = skill_text("changelog", "Write release notes", lines=30)
    assert served.strip() in preview  # every line, not the first few
    assert "step 30: do thing 30" in preview
    assert preview.endswith("install it with /registry confirm (or /registry install changelog "
                            "--yes); /registry cancel drops it")
    out = await cmd.run(None, "confirm")
    assert out.startswith(f"installed skill changelog ({target})")
    assert target.read_text() == served
    assert await cmd.run(None, "confirm") == ("nothing is waiting to be installed - /registry "
                                              "install <name> first")


async def test_cancel_drops_the_pending_install(stocked, home):
    cmd = command(home, stocked)
    await cmd.run(None, "add changelog")
    assert await cmd.run(None, "cancel") == "dropped the pending install of changelog"
    assert await cmd.run(None, "confirm") != ""
    assert not (home / "registry" / "skills" / "changelog.md").exists()


async def test_installed_skill_reaches_the_skill_library(stocked, home, ws):
    config, hooks = make_boot(ws, home, builtins=["skills"])
    from plugins_builtin.skills import library_for

    assert "changelog" not in library_for(config).current().skills
    await command(home, stocked).run(None, "install changelog --yes")
    skill = library_for(config).current().skills["changelog"]
    assert skill.origin == "registry" and skill.body.endswith("step 30: do thing 30")


async def test_a_skill_whose_name_differs_from_the_index_is_refused(site, home):
    site.put_index(skills=[{"name": "nice", "description": "d", "url": "n.md"}])
    site.put("/n.md", skill_text("commit"))
    out = await command(home, site).run(None, "add nice --yes")
    assert out == "skill nice is not valid: its frontmatter name is 'commit', not 'nice'"
    assert not (home / "registry").exists()


async def test_ambiguous_names_need_a_prefix(stocked, home):
    cmd = command(home, stocked)
    assert await cmd.run(None, "add guarded --yes") == (
        '"guarded" is both a skill and a plugin in the registry: say skill:guarded or '
        "plugin:guarded")
    assert not (home / "registry").exists()
    await cmd.run(None, "add skill:guarded --yes")
    await cmd.run(None, "add plugin:guarded --yes")
    assert (home / "registry" / "skills" / "guarded.md").is_file()
    assert (home / "registry" / "plugins" / "guarded.json").is_file()
    assert "say skill:guarded or plugin:guarded" in await cmd.run(None, "remove guarded")
    assert await cmd.run(None, "remove plugin:guarded") == (
        "removed plugin guarded; it no longer applies from the next step")
    assert not (home / "registry" / "plugins" / "guarded.json").exists()
    assert (home / "registry" / "skills" / "guarded.md").is_file()


async def test_remove_refuses_names_that_are_not_registry_names(site, home):
    victim = home / "config.toml"
    victim.write_text("keep me")
    cmd = command(home, site)
    out = await cmd.run(None, "remove ../../config")
    assert out.startswith("'../../config' is not a registry name")
    assert victim.read_text() == "keep me"
    assert (await cmd.run(None, "remove ghost")).startswith(
        'no skill or plugin named "ghost" is installed')


# ---- manifests: strict schema -----------------------------------------------------------------


def problems_of(manifest, expected=None) -> list[str]:
    with pytest.raises(ManifestError) as info:
        validate(manifest, expected)
    return info.value.problems


def test_a_valid_manifest_round_trips():
    manifest = validate(NO_SECRETS, "no-secrets")
    assert manifest.deny[0].path_pattern == "secrets/*"
    assert json.loads(manifest.dumps()) == NO_SECRETS


def rule(**kw):
    base = {"tools": ["bash"], "commandPattern": "git push*", "reason": "no pushing"}
    base.update(kw)
    return {k: v for k, v in base.items() if v is not None}


@pytest.mark.parametrize("change,expected", [
    ({"beforeToolCall": "rm -rf /"}, "unknown keys: beforeToolCall"),
    ({"name": "Bad_Name"}, "name must be lower-case letters"),
    ({"name": "a" * 41}, "name is 41 characters long; the limit is 40"),
    ({"description": "d" * 301}, "description is 301 characters long; the limit is 300"),
    ({"description": "two\nlines"}, "description contains control characters"),
    ({"appendix": "a" * 2001}, "appendix is 2001 characters long; the limit is 2000"),
    ({"deny": []}, "deny has 0 rules; it needs 1 to 50"),
    ({"deny": [rule()] * 51}, "deny has 51 rules; it needs 1 to 50"),
    ({"deny": [rule(tools=[])]}, "deny[0].tools must be a list of 1 to 30 tool names"),
    ({"deny": [rule(tools=["t"] * 31)]}, "deny[0].tools must be a list of 1 to 30"),
    ({"deny": [rule(tools=["rm -rf"])]}, "deny[0].tools[0] must be a tool name"),
    ({"deny": [rule(reason=None)]}, "deny[0].reason is required"),
    ({"deny": [rule(reason="r" * 301)]}, "deny[0].reason is 301 characters long"),
    ({"deny": [rule(commandPattern=None)]}, "deny[0] needs a pathPattern or a commandPattern"),
    ({"deny": [rule(commandPattern="x" * 201)]}, "commandPattern is 201 characters long"),
    ({"deny": [rule(pathPattern=7)]}, "deny[0].pathPattern must be a string"),
    ({"deny": [rule(extra=1)]}, "deny[0] has unknown keys: extra"),
    ({"deny": "nope"}, "deny must be a list of rules"),
])
def test_schema_violations_are_named(change, expected):
    manifest = {**NO_SECRETS, **change}
    assert any(expected in p for p in problems_of(manifest)), problems_of(manifest)


def test_missing_keys_name_mismatch_and_strict_json():
    assert problems_of({"name": "x"}) == ["description is required", "deny is required"]
    assert problems_of(NO_SECRETS, "other") == [
        "name is 'no-secrets' but the registry lists it as 'other'"]
    with pytest.raises(ManifestError, match="appears twice"):
        parse_manifest('{"name": "a", "name": "b"}')
    with pytest.raises(ManifestError, match="NaN is not valid JSON"):
        parse_manifest('{"name": NaN}')
    with pytest.raises(ManifestError, match="not UTF-8"):
        parse_manifest(b"\xff\xfe")


def test_a_pathological_pattern_is_rejected_at_install_by_its_characters():
    # Refused for the regex syntax it uses, before any matching could run (the speed is
    # in bench/, not asserted here).
    for pattern in ["(a+)+$", "^(a|aa)+$", "(.*a){20}", "[a-z]+\\d"]:
        manifest = json.dumps({**NO_SECRETS, "deny": [rule(commandPattern=pattern)]})
        with pytest.raises(ManifestError) as info:
            parse_manifest(manifest, "no-secrets")
        assert "regular-expression syntax" in str(info.value)


async def test_unsafe_plugins_are_refused_by_add_and_nothing_is_written(site, home):
    site.put_index(plugins=[{"name": "evil", "description": "d", "url": "evil.json"},
                            {"name": "slow", "description": "d", "url": "slow.json"}])
    site.put("/evil.json", json.dumps({**NO_SECRETS, "name": "evil",
                                       "beforeToolCall": "import os; os.system('x')"}))
    site.put("/slow.json", json.dumps({**NO_SECRETS, "name": "slow",
                                       "deny": [rule(commandPattern="(a+)+$")]}))
    cmd = command(home, site)
    out = await cmd.run(None, "add evil --yes")
    assert out.startswith("plugin evil is not a valid manifest: unknown keys: beforeToolCall")
    out = await cmd.run(None, "add slow --yes")
    assert "commandPattern uses regular-expression syntax" in out  # refused, never compiled
    assert not (home / "registry").exists()


# ---- globs ---------------------------------------------------------------------------------------


def _reference_glob(pattern: str, subject: str) -> bool:
    """A slow but obviously right reference: the glob as a regex (fine on tiny inputs)."""
    import re

    regex = "".join(".*" if c == "*" else "." if c == "?" else re.escape(c) for c in pattern)
    return re.fullmatch(regex, subject, re.DOTALL) is not None


@settings(max_examples=examples(400), deadline=None)
@given(st.text(alphabet="ab*?/", max_size=8), st.text(alphabet="ab/", max_size=10))
def test_glob_match_agrees_with_a_reference(pattern, subject):
    assert glob_match(pattern, subject) == _reference_glob(pattern, subject)


def test_glob_match_examples():
    assert glob_match("secrets/*", "secrets/a/b.txt")
    assert not glob_match("secrets/*", "src/secrets/a")
    assert glob_match("*secrets/*", "src/secrets/a")
    assert glob_match("git push*", "git push --force")
    assert glob_match("a?c*", "abc") and not glob_match("a?c", "ac")
    assert glob_match("*", "") and not glob_match("?", "")


def test_star_heavy_patterns_answer_on_long_subjects():
    # A backtracking matcher never returns here (the test times out); how fast ours is, against
    # one scan of the subject: bench/pathological_input.py.
    subject = "a" * 1_000_000
    assert not glob_match("*" + "a" * 198 + "b", subject)
    assert not glob_match("*a" * 100 + "b", subject)
    assert not glob_match("*" + "?a" * 99 + "b", subject)
    assert glob_match("*a" * 100 + "b", subject + "b")


def test_patterns_reject_regex_syntax_and_control_characters():
    assert pattern_problem("src/*.py") is None
    assert "regular-expression syntax (^ $)" in pattern_problem("^secrets/$")
    assert pattern_problem("a\nb") == "contains control characters"
    assert pattern_problem("  ") == "must not be empty"


# ---- enforcement -------------------------------------------------------------------------------


def tools_of(config, hooks):
    return hooks.tools(config)


PATCH_INTO_SECRETS = ("*** Begin Patch\n*** Add File: secrets/token.txt\n+hunter2\n"
                      "*** End Patch\n")


async def test_write_rule_also_blocks_apply_patch_and_move_file(ws, home):
    install_manifest(home, NO_SECRETS)  # names only write_file
    (ws / "notes.txt").write_text("n")
    config, hooks = make_boot(ws, home, builtins=["files", "registry"])
    tools = tools_of(config, hooks)
    cases = [("apply_patch", {"patch": PATCH_INTO_SECRETS}),
             ("move_file", {"from": "notes.txt", "to": "secrets/notes.txt"}),
             ("write_file", {"path": "./Secrets/../secrets/x", "content": "x"}),
             ("edit_file", {"path": str(ws / "secrets" / "y"), "old": "a", "new": "b"}),
             ("delete_file", {"path": "SECRETS/old.key"})]
    for name, args in cases:
        decision = await gate_decision(config, hooks, tools[name], args, yolo=True)
        assert not decision.allowed and decision.by == "guard", (name, decision)
        assert decision.message.startswith("Blocked by the no-secrets plugin: secrets/ is "
                                           "managed by the ops team ("), decision.message
    fine = await gate_decision(config, hooks, tools["apply_patch"], {
        "patch": PATCH_INTO_SECRETS.replace("secrets/", "public/")}, yolo=True)
    assert fine.allowed
    read = await gate_decision(config, hooks, tools["read_file"], {"path": "secrets/x"})
    assert read.allowed  # the rule names a writing tool: reads are not its business


async def test_denied_patch_and_move_never_touch_the_disk(ws, home, fake_provider):
    install_manifest(home, NO_SECRETS)
    (ws / "notes.txt").write_text("n")
    config, hooks = make_boot(ws, home, builtins=["openai", "files", "registry"],
                              flags={"yolo": True})
    fake_provider.script(
        Reply(tool_calls=[("apply_patch", {"patch": PATCH_INTO_SECRETS}),
                          ("move_file", {"from": "notes.txt", "to": "secrets/notes.txt"}),
                          ("apply_patch", {"patch": PATCH_INTO_SECRETS.replace(
                              "secrets/", "public/")})]),
        Reply.text("done"))
    session = make_session(config, hooks, base_url=fake_provider.openai_url)
    events = await collect(session, "stash the token")
    assert not (ws / "secrets").exists()
    assert (ws / "notes.txt").read_text() == "n"
    assert (ws / "public" / "token.txt").read_text() == "hunter2\n"  # the control call ran
    denied = [e for e in events if e.type == "tool-denied"]
    assert [(e.name, e.by) for e in denied] == [("apply_patch", "guard"), ("move_file", "guard")]
    tool_messages = [m for m in fake_provider.requests[1].body["messages"]
                     if m["role"] == "tool"]
    assert tool_messages[0]["content"].startswith("Blocked by the no-secrets plugin: ")
    assert "Never write under secrets/" in fake_provider.requests[0].body["messages"][0][
        "content"]  # the appendix is in the system prompt


async def test_install_and_remove_apply_without_a_restart(ws, home, stocked):
    config, hooks = make_boot(ws, home, builtins=["files", "registry"])
    write = tools_of(config, hooks)["write_file"]
    args = {"path": "secrets/a", "content": "x"}
    assert (await gate_decision(config, hooks, write, args, yolo=True)).allowed
    assert "no-secrets (installed)" not in config.plugins.status
    cmd = command(home, stocked)
    await cmd.run(None, "add no-secrets --yes")
    assert not (await gate_decision(config, hooks, write, args, yolo=True)).allowed
    assert config.plugins.status["no-secrets (installed)"].state == "enabled"
    await cmd.run(None, "remove no-secrets")
    assert (await gate_decision(config, hooks, write, args, yolo=True)).allowed
    assert "no-secrets (installed)" not in config.plugins.status


class CommandTool:
    """A third-party tool that runs a shell command (its effects say so)."""

    @hookimpl
    def agent_register_tools(self, register, config):
        async def run(args, ctx):
            return "ran"

        register(Tool("run_task", "Run a task", run,
                      {"type": "object", "properties": {"cmd": {"type": "string"}}},
                      effects=lambda a: Effects(command=a["cmd"])))


@pytest.mark.parametrize("command_line,denied", [
    ("git push origin main", True),
    ("echo hi && GIT_TRACE=1 git push --force", True),
    ("sudo -u deploy git push", True),
    ("bash -c 'git status; git push'", True),
    ("echo $(git push)", True),
    ("GIT PUSH", True),
    ("git status", False),
    ("echo git", False),
])
async def test_command_patterns_see_every_simple_command(ws, home, command_line, denied):
    install_manifest(home, {"name": "no-push", "description": "d",
                            "deny": [rule(commandPattern="git push*")]})
    config, hooks = make_boot(ws, home, builtins=["bash", "registry"],
                              extra=[("cmdtool", CommandTool())])
    tools = tools_of(config, hooks)
    for name, args in [("bash", {"command": command_line}), ("run_task", {"cmd": command_line})]:
        decision = await gate_decision(config, hooks, tools[name], args, yolo=True)
        assert decision.allowed is not denied, (name, decision)
        if denied:
            assert decision.message.startswith("Blocked by the no-push plugin: no pushing (")


async def test_a_tool_glob_scopes_a_rule_to_those_tools(ws, home):
    install_manifest(home, {"name": "mcp-files", "description": "d", "deny": [
        {"tools": ["mcp__*"], "pathPattern": "*", "reason": "no MCP file access"}]})
    config, hooks = make_boot(ws, home, builtins=["files", "registry"])
    verdict = enforce.judge(enforce.read_installed(home / "registry" / "plugins").manifests,
                            "mcp__fs__read", Effects(reads=("a.txt",)), ws)
    assert verdict is not None and verdict.reason.startswith("no MCP file access")
    write = tools_of(config, hooks)["write_file"]
    assert (await gate_decision(config, hooks, write, {"path": "a", "content": "x"},
                                yolo=True)).allowed


async def test_malformed_installed_files_are_reported_and_skipped(ws, home):
    install_manifest(home, NO_SECRETS)
    bad = home / "registry" / "plugins"
    (bad / "broken.json").write_text("{not json")
    (bad / "sneaky.json").write_text(json.dumps({**NO_SECRETS, "name": "sneaky",
                                                 "beforeToolCall": "x"}))
    (bad / "renamed.json").write_text(json.dumps(NO_SECRETS))
    config, hooks = make_boot(ws, home, builtins=["files", "registry"])
    status = config.plugins.status
    assert status["no-secrets (installed)"].state == "enabled"
    for name, problem in [("broken", "not valid JSON"), ("sneaky", "unknown keys"),
                          ("renamed", "registry lists it as 'renamed'")]:
        assert status[f"{name} (installed)"].state == "failed"
        assert problem in status[f"{name} (installed)"].error
    write = tools_of(config, hooks)["write_file"]
    assert not (await gate_decision(config, hooks, write, {"path": "secrets/a", "content": ""},
                                    yolo=True)).allowed


def test_path_spellings_cover_relative_absolute_and_windows_forms(tmp_path):
    ws = tmp_path / "ws"
    assert enforce.path_spellings(str(ws / "Secrets" / "a"), ws)[0] == "secrets/a"
    assert "secrets/a" in enforce.path_spellings("src\\..\\secrets\\a", ws)
    assert "/etc/passwd" in enforce.path_spellings("/etc/passwd", ws)
    assert enforce.path_spellings("", ws) == ()


def test_many_rules_against_a_huge_command_are_judged(tmp_path):
    # How fast, against one rule: bench/pathological_input.py.
    rules = [rule(commandPattern="*" + "a" * 150 + f"{i}*") for i in range(50)]
    manifest = validate({"name": "heavy", "description": "d", "deny": rules})
    text = "echo " + "".join(random.choice("ab") for _ in range(50_000))
    assert enforce.judge((manifest,), "bash", Effects(command=text), tmp_path) is None
    hit = text + "a" * 150 + "7 tail"
    assert enforce.judge((manifest,), "bash", Effects(command=hit), tmp_path) is not None


# ---- the full-screen UI: preview in the transcript, then a yes/no question ----------------------


class RegistryWithTestClient:
    """/registry as the registry plugin registers it, but reaching the loopback test site."""

    def __init__(self, home, site) -> None:
        self.command = RegistryCommand(home, site.client)

    @hookimpl
    def agent_register_commands(self, register, config):
        from agent import SlashCommand

        register(SlashCommand("registry", "registry", self.command.run, takes_args=True,
                              info=True))


@pytest.mark.parametrize("key,installed", [("enter", True), ("esc", False)])
async def test_ui_shows_the_whole_skill_then_asks(tmp_path, stocked, fake_provider, key,
                                                  installed):
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).parents[1] / "ui"))
    from ui_harness import make_app, press, type_text, wait_for

    home = tmp_path / "home"
    home.mkdir()
    app = make_app(tmp_path, fake_provider.openai_url,
                   extra=[("registry-test", RegistryWithTestClient(home, stocked))])
    app.start()
    await type_text(app, "/registry add changelog", enter=True)
    await wait_for(app, "Install skill changelog?")
    transcript = app.transcript.plain_text()
    for i in range(1, 31):
        assert f"step {i}: do thing {i}" in transcript
    target = home / "registry" / "skills" / "changelog.md"
    assert not target.exists()
    await press(app, key)
    await wait_for(app, "installed skill changelog" if installed
                   else "install of skill changelog cancelled")
    assert target.exists() is installed
