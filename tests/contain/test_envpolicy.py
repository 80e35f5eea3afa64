"""The rules that say which environment variables are credentials (agent.contain.envpolicy),
read directly: the issue's examples are secret, the everyday variables a build needs are not."""

from __future__ import annotations

import pytest

from agent.contain.envpolicy import (
    EnvPolicy,
    is_secret_name,
    is_secret_value,
    policy_from_config,
    scrub_environment,
    shell_env_problems,
)

SECRET_NAMES = [
    "OPENAI_API_KEY", "STRIPE_APIKEY", "API_KEYS", "GITHUB_TOKEN", "GH_TOKEN", "GH_PAT",
    "GITHUB_PAT", "CLIENT_SECRET", "db_password", "PGPASSWORD", "MY_PASSWD", "MYSQL_PWD",
    "SERVICE_CREDENTIALS", "GOOGLE_APPLICATION_CREDENTIALS", "BASIC_AUTH", "OAUTH",
    "NPM_CONFIG__AUTH", "npm_config_//registry.npmjs.org/:_authToken", "NODE_AUTH_TOKEN",
    "SESSION_COOKIE", "DJANGO_SESSION", "AWS_SESSION_TOKEN", "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY", "AWS_CONTAINER_CREDENTIALS_FULL_URI",
    "AZURE_STORAGE_CONNECTION_STRING", "AZURE_CLIENT_CERTIFICATE_PATH", "ARM_CLIENT_SECRET",
    "CARGO_REGISTRY_TOKEN", "CARGO_REGISTRIES_MINE_TOKEN", "TWINE_PASSWORD",
    "POETRY_HTTP_BASIC_PRIVATE_USERNAME", "POETRY_PYPI_TOKEN_PYPI", "BUNDLE_GEMS__EXAMPLE__COM",
    "GEM_HOST_API_KEY", "HF_TOKEN", "VAULT_TOKEN", "SENTRY_DSN", "DOCKER_AUTH_CONFIG",
    "SSH_AUTH_SOCK", "GPG_AGENT_INFO", "DBUS_SESSION_BUS_ADDRESS", "AGENT_MODEL",
    "ARTIFACTORY_USER", "SIGNING_PRIVATE_KEY",
]
PLAIN_NAMES = [
    "PATH", "HOME", "USER", "SHELL", "TERM", "LANG", "LC_ALL", "PWD", "OLDPWD", "PYTHONPATH",
    "MANPATH", "VIRTUAL_ENV", "CONDA_PREFIX", "GOPATH", "CARGO_HOME", "RUSTUP_HOME", "NVM_DIR",
    "GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "GIT_COMMITTER_NAME", "EDITOR", "PAGER", "TZ",
    "TMPDIR", "XDG_CACHE_HOME", "XDG_SESSION_TYPE", "DESKTOP_SESSION", "KEYTIMEOUT",
    "TOKENIZERS_PARALLELISM", "PYTHON_COMPAT", "XAUTHORITY", "KUBECONFIG", "BUNDLE_PATH",
    "NODE_ENV", "CI", "DISPLAY", "COLORTERM", "PIP_INDEX_URL", "AWS_REGION", "AWS_PROFILE",
]


@pytest.mark.parametrize("name", SECRET_NAMES)
def test_credential_names_are_secret(name):
    assert is_secret_name(name)


@pytest.mark.parametrize("name", PLAIN_NAMES)
def test_everyday_names_are_not(name):
    assert not is_secret_name(name)


@pytest.mark.parametrize("value,secret", [
    ("postgres://admin:hunter2@db:5432/app", True),
    ("https://user:pw@pypi.internal/simple", True),
    ("redis://:onlypassword@cache:6379/0", True),
    ("amqp://guest:guest@localhost//", True),
    ("sk-abcdefghijklmnopqrstuv", True),
    ("ghp_abcdefghijklmnopqrstuvwxyz0123", True),
    ("github_pat_11ABCDEFG0abcdefghijklmnop", True),
    ("xoxb-1234567890-abcdef", True),
    ("AKIAIOSFODNN7EXAMPLE", True),
    ("https://pypi.org/simple", False),
    ("git@github.com:me/repo.git", False),
    ("ssh://git@host/repo", False),
    ("https://user@host/path", False),
    ("/usr/local/bin:/usr/bin", False),
    ("en_US.UTF-8", False),
    ("task-runner-abcdefghijklmnopqrst", False),
    ("10.0.0.1:8080", False),
])
def test_values_that_are_credentials(value, secret):
    assert is_secret_value(value) is secret


def test_the_scrub_keeps_plain_variables_and_held_keys_go_under_any_name():
    env = {"PATH": "/bin", "OPENAI_API_KEY": "a", "RENAMED": "sk-held-by-the-agent",
           "DATABASE_URL": "postgres://u:p@db/x", "PLAIN": "x", "KEEP_TOKEN": "t"}
    assert scrub_environment(env, keep=["KEEP_TOKEN"],
                             secret_values=["sk-held-by-the-agent"]) == {
        "PATH": "/bin", "PLAIN": "x", "KEEP_TOKEN": "t"}


def test_policy_include_exclude_and_set():
    policy = EnvPolicy(include=("gh_*", "AWS_*"), exclude=("AWS_SESSION_TOKEN", "NOISY_*"),
                       assign=(("CI", "1"),))
    env = {"GH_PAT": "p", "AWS_ACCESS_KEY_ID": "i", "AWS_SESSION_TOKEN": "s", "NOISY_X": "n",
           "PATH": "/bin", "STRIPE_API_KEY": "k"}
    assert policy.apply(env) == {"GH_PAT": "p", "AWS_ACCESS_KEY_ID": "i", "PATH": "/bin",
                                 "CI": "1"}
    # an exact name a caller keeps (an MCP server's env_passthrough) beats exclude
    assert "NOISY_X" in policy.apply(env, keep=["NOISY_X"])


def test_policy_from_config_reads_shell_env_and_the_older_passthrough():
    config = {"shell_env": {"include": ["A_*"], "exclude": ["B"], "set": {"C": "1"}},
              "sandbox_env_passthrough": ["MY_TOKEN"]}
    policy = policy_from_config(config)
    assert policy == EnvPolicy(include=("A_*", "MY_TOKEN"), exclude=("B",),
                               assign=(("C", "1"),))
    assert policy_from_config({}) == EnvPolicy()


@pytest.mark.parametrize("table,problem", [
    ({"include": ["A"], "exclude": [], "set": {"X": "1"}}, None),
    ("GH_PAT", "shell_env must be a table"),
    ({"include": "GH_PAT"}, "shell_env.include must be a list"),
    ({"exclude": [1]}, "shell_env.exclude must be a list"),
    ({"set": {"X": 1}}, "shell_env.set must be a table of strings"),
    ({"inherit": "all"}, "shell_env.inherit is not a known key"),
])
def test_shell_env_problems(table, problem):
    found = shell_env_problems(table)
    if problem is None:
        assert found == []
    else:
        assert found and found[0].startswith(problem)
