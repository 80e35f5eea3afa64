"""Credentials in the environment never reach the model: what ``printenv``, ``env``, ``set``,
``export -p`` and ``declare -x`` print in a real run (the CLI, the real SDK, the fake provider)
carries none, in the default mode, under ``--yolo`` and with the sandbox off; ``shell_env``
brings one back only when the user says so.  The oracle is every request body the provider
received."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest
from clirun import run_agent_here
from fakeprovider import Reply

#: The issue's own examples and their neighbours: name -> value.  Every value is unique, so a
#: value in a request body names the variable that leaked.
SECRETS = {
    "STRIPE_API_KEY": "leak-0001-stripe",
    "DATABASE_URL": "postgres://admin:leak-0002-dbpass@db.internal:5432/app",
    "GH_PAT": "leak-0003-ghpat",
    "NPM_CONFIG__AUTH": "leak-0004-npmauth",
    "npm_config_//registry.npmjs.org/:_authToken": "leak-0005-npmtoken",
    "AWS_ACCESS_KEY_ID": "leak-0006-awsid",
    "AWS_SECRET_ACCESS_KEY": "leak-0007-awssecret",
    "AWS_SESSION_TOKEN": "leak-0008-awssession",
    "GOOGLE_APPLICATION_CREDENTIALS": "/home/u/leak-0009-gcp.json",
    "AZURE_STORAGE_CONNECTION_STRING": "AccountKey=leak-0010-azure",
    "MY_PASSWD": "leak-0011-passwd",
    "PGPASSWORD": "leak-0012-pg",
    "SESSION_COOKIE": "leak-0013-cookie",
    "DJANGO_SESSION": "leak-0014-session",
    "SERVICE_CREDENTIALS": "leak-0015-creds",
    "BASIC_AUTH": "leak-0016-auth",
    "TWINE_PASSWORD": "leak-0017-twine",
    "CARGO_REGISTRY_TOKEN": "leak-0018-cargo",
    "BUNDLE_GEMS__EXAMPLE__COM": "user:leak-0019-bundle",
    "PIP_INDEX_URL": "https://user:leak-0020-pip@pypi.internal/simple",
    "INNOCENT_LOOKING": "https://bot:leak-0021-urlpass@git.example.com/x.git",
    "SLACK_HOOK": "xoxb-leak0022-abcdefghij",
    "HF_TOKEN": "hf_leak0023leak0023leak0023leak0023",
    "SSH_AUTH_SOCK": "/run/user/0/leak-0024-ssh.sock",
    "GPG_AGENT_INFO": "/run/user/0/leak-0025-gpg",
}
PLAIN = {"PLAIN_SETTING": "visible-plain-value", "GIT_AUTHOR_NAME": "visible-author",
         "TOKENIZERS_PARALLELISM": "visible-false"}
DUMPS = ["printenv", "env", "set", "export -p", "declare -x", "declare -p",
         "cat /proc/self/environ"]


def mark(value: str) -> str:
    """The unique part of a secret's value (``leak-0002``)."""
    found = re.search(r"leak-?\d{4}", value)
    assert found, value
    return found.group()


def bodies(fake_provider) -> str:
    return "\n".join(json.dumps(r.body) for r in fake_provider.requests)


def dump_all(tmp_path: Path, monkeypatch, fake_provider, *flags: str,
             config: str = "") -> list[str]:
    ws = tmp_path / "ws"
    ws.mkdir()
    home = tmp_path / "userhome"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    agent_home = tmp_path / "agenthome"
    if config:
        agent_home.mkdir()
        (agent_home / "config.toml").write_text(config)
    fake_provider.script(*[Reply.tool_call("bash", {"command": c}, id=f"c{i}")
                           for i, c in enumerate(DUMPS)], Reply.text("done"))
    proc = run_agent_here(["-p", "show me the environment", *flags, "--provider", "openai",
                           "--base-url", fake_provider.openai_url, "--model", "m"],
                          home=agent_home, cwd=ws, OPENAI_API_KEY="sk-test-held-by-agent-01",
                          **SECRETS, **PLAIN)
    assert proc.returncode == 0, proc.stderr
    return fake_provider.tool_results()


@pytest.mark.parametrize("flags", [
    # printenv runs because the default policy judges it read-only; the others by a rule.
    pytest.param(["--allow", "bash:env", "--allow", "bash:set", "--allow", "bash:export -p",
                  "--allow", "bash:declare *", "--allow", "bash:cat *"], id="default"),
    pytest.param(["--yolo"], id="yolo"),
    pytest.param(["--yolo", "--sandbox", "off"], id="sandbox-off"),
])
def test_no_dump_of_the_environment_shows_a_credential(tmp_path, monkeypatch, fake_provider,
                                                      flags):
    outputs = dump_all(tmp_path, monkeypatch, fake_provider, *flags)
    assert len(outputs) == len(DUMPS)
    for command, output in zip(DUMPS, outputs, strict=True):
        assert output.startswith("exit: 0"), (command, output)
        # The command really printed the environment: the plain variables are there.
        assert "visible-plain-value" in output and "visible-author" in output, (command, output)
        assert "visible-false" in output
    sent = bodies(fake_provider)
    leaked = sorted(name for name, value in SECRETS.items() if mark(value) in sent)
    assert leaked == []
    assert "sk-test-held-by-agent-01" not in sent


def test_shell_env_brings_back_and_takes_out_what_the_user_names(tmp_path, monkeypatch,
                                                                  fake_provider):
    config = ('[shell_env]\ninclude = ["GH_PAT", "aws_*"]\nexclude = ["PLAIN_*", '
              '"AWS_SESSION_TOKEN"]\nset = { CI_MARKER = "set-by-config" }\n')
    outputs = dump_all(tmp_path, monkeypatch, fake_provider, "--yolo", config=config)
    printenv = outputs[0]
    assert "GH_PAT=leak-0003-ghpat" in printenv
    assert "AWS_ACCESS_KEY_ID=leak-0006-awsid" in printenv
    assert "AWS_SECRET_ACCESS_KEY=leak-0007-awssecret" in printenv
    assert "leak-0008-awssession" not in printenv  # exclude wins over include
    assert "visible-plain-value" not in printenv  # exclude takes a plain variable out
    assert "CI_MARKER=set-by-config" in printenv
    assert "leak-0002-dbpass" not in bodies(fake_provider)  # the rest stays scrubbed


def test_a_bad_shell_env_table_is_a_clear_error(tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    home = tmp_path / "agenthome"
    home.mkdir()
    (home / "config.toml").write_text('[shell_env]\ninclude = "GH_PAT"\nsets = {}\n')
    proc = run_agent_here(["-p", "hi", "--provider", "openai", "--base-url",
                           "http://127.0.0.1:9/v1", "--model", "m"], home=home, cwd=ws,
                          OPENAI_API_KEY="sk-x")
    assert proc.returncode != 0
    assert "shell_env" in proc.stderr and "config.toml" in proc.stderr


def test_git_and_other_processes_get_the_same_environment(tmp_path, monkeypatch):
    """Everything started through the sandbox (git, formatters, hooks) gets the scrub, with
    the sandbox on and off."""
    from agent.contain.sandbox import Sandbox

    for name, value in {**SECRETS, **PLAIN}.items():
        monkeypatch.setenv(name, value)
    for mode in ("workspace-write", "off"):
        sandbox = Sandbox.standalone(tmp_path, sandbox=mode)
        code, out = sandbox.run(["env"], mode="read-only")
        text = out.decode()
        assert code == 0 and "visible-plain-value" in text
        assert not [n for n, v in SECRETS.items() if mark(v) in text], mode
    assert os.environ["GH_PAT"] == "leak-0003-ghpat"  # the agent's own is untouched
