"""A misspelt config key is named at start, with the nearest known key, never ignored silently:
on headless stderr, in the UI's start-up notices and in ``agent doctor``."""

from __future__ import annotations

from clirun import run_agent_here
from fakeprovider import Reply


def _headless(tmp_path, fake_provider, *, user: str = "", project: str = ""):
    """A headless turn with ``user`` as config.toml and ``project`` as .agent/config.toml;
    returns the finished process and the home it ran with."""
    home, ws = tmp_path / "home", tmp_path / "ws"
    (ws / ".agent").mkdir(parents=True)
    home.mkdir()
    if user:
        (home / "config.toml").write_text(user, encoding="utf-8")
    if project:
        (ws / ".agent" / "config.toml").write_text(project, encoding="utf-8")
    fake_provider.script(Reply.text("hello"))
    proc = run_agent_here(["-p", "hi"], home=home, cwd=ws, AGENT_PROVIDER="openai",
                          AGENT_BASE_URL=fake_provider.openai_url, AGENT_MODEL="fake-model",
                          OPENAI_API_KEY="sk-test")
    return proc, home, ws


def _line(stderr: str, key: str) -> str:
    return next(ln for ln in stderr.splitlines() if f'"{key}"' in ln)


def test_headless_run_names_a_typo_with_the_nearest_key(tmp_path, fake_provider):
    proc, home, _ = _headless(tmp_path, fake_provider,
                              user='sandbox_netwrk = true\nmax_step = 3\nthinking = "low"\n')
    assert proc.returncode == 0, proc.stderr
    assert 'unknown config key "sandbox_netwrk" (did you mean "sandbox_network"?)' in proc.stderr
    assert 'unknown config key "max_step" (did you mean "max_steps"?)' in proc.stderr
    assert '"thinking"' not in proc.stderr  # a known key is not named
    assert str(home / "config.toml") in proc.stderr


def test_a_key_nothing_is_close_to_is_still_named_without_a_guess(tmp_path, fake_provider):
    proc, _, _ = _headless(tmp_path, fake_provider, user="zzqq_frobnicate = 1\n")
    line = _line(proc.stderr, "zzqq_frobnicate")
    assert "did you mean" not in line and "it has no effect" in line


def test_project_config_typos_are_named_too(tmp_path, fake_provider):
    proc, _, ws = _headless(tmp_path, fake_provider, project="permision = {}\n")
    assert 'unknown config key "permision" (did you mean "permission"?)' in proc.stderr
    assert str(ws / ".agent" / "config.toml") in proc.stderr


def test_a_disabled_plugins_key_is_named_with_the_caveat(tmp_path, fake_provider):
    # mcp_servers is the mcp plugin's option: with mcp disabled no loaded plugin declares it.
    proc, _, _ = _headless(tmp_path, fake_provider,
                           user='mcp_servers = {}\n[plugins]\ndisabled = ["mcp"]\n')
    assert "a disabled plugin may read it" in _line(proc.stderr, "mcp_servers")


def test_doctor_lists_unknown_keys(tmp_path):
    home, ws = tmp_path / "home", tmp_path / "ws"
    ws.mkdir()
    home.mkdir()
    (home / "config.toml").write_text("yollo = true\n", encoding="utf-8")
    proc = run_agent_here(["doctor", "--no-provider"], home=home, cwd=ws)
    config_line = next(ln for ln in proc.stdout.splitlines() if ln.split()[1:2] == ["config"])
    assert config_line.startswith("warn")
    assert 'unknown config key "yollo" (did you mean "yolo"?)' in config_line
