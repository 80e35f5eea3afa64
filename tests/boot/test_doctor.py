"""``agent doctor``: the installed CLI, a fresh AGENT_HOME, the fake provider on 127.0.0.1."""

from __future__ import annotations

import socket

import pytest
from clirun import run_agent_here


@pytest.fixture
def dirs(tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    return tmp_path / "home", ws


def lines(stdout: str) -> dict[str, tuple[str, str]]:
    """check name -> (level, detail)."""
    out = {}
    for line in stdout.splitlines():
        level, name, detail = line.split(None, 2)
        out[name] = (level, detail)
    return out


def provider_env(url: str) -> dict[str, str]:
    return {"AGENT_PROVIDER": "openai", "AGENT_BASE_URL": url, "AGENT_MODEL": "fake-model",
            "OPENAI_API_KEY": "sk-doctor-key"}


def test_everything_ready(dirs, fake_provider):
    home, ws = dirs
    proc = run_agent_here(["doctor"], home=home, cwd=ws, **provider_env(fake_provider.openai_url))
    found = lines(proc.stdout)
    assert set(found) == {"config", "sandbox", "ripgrep", "git", "terminal", "state",
                          "database", "provider"}
    assert found["config"][0] == "ok"
    assert found["sandbox"][0] == "ok" and found["sandbox"][1].startswith("workspace-write")
    assert "bubblewrap" in found["sandbox"][1]
    assert found["git"][0] == "ok" and "git version" in found["git"][1]
    assert found["provider"] == ("ok", f"openai at {fake_provider.openai_url} answers: "
                                       "2 models; model fake-model listed")
    assert found["terminal"][0] == "warn"  # stdout is a pipe here
    assert proc.returncode == 0, proc.stdout + proc.stderr
    models = [r for r in fake_provider.requests if r.path == "/v1/models"]
    assert models and models[0].headers["authorization"] == "Bearer sk-doctor-key"


def test_an_unreachable_provider_fails_and_says_where(dirs):
    home, ws = dirs
    closed = socket.socket()
    closed.bind(("127.0.0.1", 0))
    url = f"http://127.0.0.1:{closed.getsockname()[1]}/v1"
    closed.close()  # nothing listens there now
    proc = run_agent_here(["doctor"], home=home, cwd=ws, **provider_env(url))
    level, detail = lines(proc.stdout)["provider"]
    assert level == "FAIL" and detail.startswith(f"openai at {url}: ")
    assert proc.returncode == 1


def test_a_sandbox_that_cannot_start_fails_with_the_fix(dirs):
    home, ws = dirs
    home.mkdir()
    (home / "config.toml").write_text('sandbox_bwrap = "/bin/false"\n')
    proc = run_agent_here(["doctor", "--no-provider"], home=home, cwd=ws)
    level, detail = lines(proc.stdout)["sandbox"]
    assert level == "FAIL" and detail.startswith("cannot start: /bin/false: ")
    assert "Every command will be asked about" in detail and "docs/security.md" in detail
    assert "provider" not in lines(proc.stdout)
    assert proc.returncode == 1


def test_sandbox_off_is_a_warning(dirs):
    home, ws = dirs
    proc = run_agent_here(["doctor", "--no-provider"], home=home, cwd=ws, AGENT_SANDBOX="off")
    level, detail = lines(proc.stdout)["sandbox"]
    assert level == "warn" and detail.startswith("sandbox: OFF (by choice)")
    assert proc.returncode == 0


def test_bad_arguments_are_a_usage_error(dirs):
    home, ws = dirs
    proc = run_agent_here(["doctor", "--frobnicate"], home=home, cwd=ws)
    assert proc.returncode == 2 and "usage: agent doctor" in proc.stderr
