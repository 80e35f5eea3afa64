"""Which environment variables are credentials, and the environment a process gets without them.

Every process agent starts (commands, git, formatters, hooks, MCP servers) inherits the agent's
environment less what this module calls secret, so ``printenv``, ``env``, ``set``, ``export -p``
and ``declare -x`` show nothing secret.  A variable is secret by its **name** (a word such as
KEY, SECRET, TOKEN, PASSWORD, PASSWD, CREDENTIAL(S), AUTH, PAT, SESSION or COOKIE; a cloud's or
a package registry's credential variable; ``AGENT_*``) or by its **value** (a URL with a
password in it, a token of a well-known shape, or a key agent holds, whatever it is called).

The user brings one back explicitly: config ``shell_env`` (``include`` / ``exclude`` glob
patterns, and ``set``), the older ``sandbox_env_passthrough`` list, and per MCP server ``env``
and ``env_passthrough``.  Pure functions only, so tests read the rules directly.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

#: Words that make a name secret wherever they appear in it (``PGPASSWORD``,
#: ``NPM_CONFIG__AUTHTOKEN``, ``SESSION_COOKIE``).
SECRET_SUBSTRINGS = ("SECRET", "TOKEN", "PASSWORD", "PASSWD", "CREDENTIAL", "COOKIE",
                     "SESSION", "CONNECTION_STRING")
#: Short words that make a name secret as the end of one of its words (``OPENAI_APIKEY``,
#: ``OAUTH``, ``NPM_CONFIG__AUTH``), never at its start: ``KEYBOARD`` and ``AUTHOR`` are not
#: secrets.
SECRET_WORD_ENDS = ("KEY", "AUTH")
#: Short words that make a name secret only as a whole word of it (``GH_PAT``, ``MYSQL_PWD``,
#: ``SENTRY_DSN``): ``PATH``, ``COMPAT`` and ``OLDPWD`` are not secrets.
SECRET_WORDS = ("PAT", "PWD", "DSN")
#: Names with a secret word that are not credentials (``PWD`` is the working directory; the
#: session variables of a desktop login name it, they grant nothing).
NOT_SECRET = frozenset({"PWD", "OLDPWD", "TOKENIZERS_PARALLELISM", "XDG_SESSION_ID",
                        "XDG_SESSION_TYPE", "XDG_SESSION_CLASS", "XDG_SESSION_DESKTOP",
                        "DESKTOP_SESSION", "TERM_SESSION_ID", "KEYTIMEOUT"})
#: Cloud and package-registry credential variables that no word above names, and the agent
#: sockets a process could ask for signatures through.
SECRET_NAMES = frozenset({
    "AWS_ACCESS_KEY_ID", "AWS_CONTAINER_CREDENTIALS_FULL_URI",
    "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", "AWS_WEB_IDENTITY_TOKEN_FILE",
    "AZURE_CLIENT_CERTIFICATE_PATH", "AZURE_CLIENT_CERTIFICATE_PASSWORD",
    "AZURE_FEDERATED_TOKEN_FILE", "AZURE_STORAGE_CONNECTION_STRING", "AZURE_STORAGE_SAS_TOKEN",
    "GOOGLE_APPLICATION_CREDENTIALS", "CLOUDSDK_AUTH_ACCESS_TOKEN_FILE",
    "DOCKER_AUTH_CONFIG", "PGPASSFILE", "GPG_AGENT_INFO", "SSH_AUTH_SOCK"})
#: Prefixes of variables that carry registry credentials in their value whatever the rest of
#: the name says (Bundler's ``BUNDLE_GEMS__EXAMPLE__COM=user:password``, Poetry's
#: ``POETRY_HTTP_BASIC_<REPO>_*``, uv's ``UV_INDEX_<NAME>_*``, Cargo's registries).
SECRET_PREFIXES = ("AGENT_", "POETRY_HTTP_BASIC_", "POETRY_PYPI_TOKEN_", "CARGO_REGISTRIES_",
                   "ARTIFACTORY_", "JFROG_")

#: A URL that carries a password: ``scheme://user:password@host``.
_URL_PASSWORD = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*://[^/\s:@]*:[^/\s@]+@")
#: Tokens whose shape names them, whatever variable holds them.
_TOKEN_VALUE = re.compile(
    r"(?:^|[^A-Za-z0-9])(?:sk-[A-Za-z0-9_\-]{16,}|gh[pousr]_[A-Za-z0-9]{20,}|"
    r"github_pat_[A-Za-z0-9_]{20,}|glpat-[A-Za-z0-9_\-]{16,}|xox[abpors]-[A-Za-z0-9\-]{10,}|"
    r"AKIA[0-9A-Z]{16}|npm_[A-Za-z0-9]{30,}|pypi-[A-Za-z0-9_\-]{30,}|hf_[A-Za-z0-9]{30,})")
_WORDS = re.compile(r"[A-Z0-9]+")


def _bundler_host(upper: str) -> bool:
    # BUNDLE_GEMS__EXAMPLE__COM: a host written with "__" for its dots (BUNDLE_PATH is not).
    return upper.startswith("BUNDLE_") and "__" in upper


def is_secret_name(name: str) -> bool:
    """True for a variable whose name says it holds a credential (see the module doc)."""
    upper = name.upper()
    if upper in NOT_SECRET:
        return False
    if upper in SECRET_NAMES or upper.startswith(SECRET_PREFIXES) or _bundler_host(upper):
        return True
    if any(word in upper for word in SECRET_SUBSTRINGS):
        return True
    for word in _WORDS.findall(upper):
        if word.rstrip("S").endswith(SECRET_WORD_ENDS) or word.rstrip("S") in SECRET_WORDS:
            return True
    return False


def is_secret_value(value: str) -> bool:
    """True for a value that is a credential whatever its variable is called: a URL with a
    password in it (``postgres://admin:pw@db``), or a token of a well-known shape."""
    return bool(_URL_PASSWORD.search(value) or _TOKEN_VALUE.search(value))


def is_secret_variable(name: str, value: str = "") -> bool:
    """True when ``name=value`` must not reach a process agent starts."""
    return is_secret_name(name) or is_secret_value(value)


def _matches(name: str, patterns: Iterable[str]) -> bool:
    upper = name.upper()
    return any(fnmatch.fnmatchcase(upper, p.upper()) for p in patterns)


@dataclass(frozen=True)
class EnvPolicy:
    """What the user changed about the scrub: ``include`` patterns bring variables back,
    ``exclude`` patterns take more out (and win over ``include``), ``assign`` (the config's
    ``set``) adds or replaces variables.  Patterns are shell globs, matched
    case-insensitively (``NPM_*``)."""

    include: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()
    assign: tuple[tuple[str, str], ...] = ()

    def keeps(self, name: str) -> bool:
        """True when ``include`` brings ``name`` back (and ``exclude`` does not take it)."""
        return _matches(name, self.include) and not _matches(name, self.exclude)

    def apply(self, env: Mapping[str, str], *, keep: Iterable[str] = (),
              secret_values: Sequence[str] = ()) -> dict[str, str]:
        """``env`` scrubbed: see :func:`scrub_environment`; ``keep`` names exact variables to
        keep as well (an MCP server's ``env_passthrough``)."""
        kept = set(keep)
        values = {v for v in secret_values if v and len(v) >= 8}
        out: dict[str, str] = {}
        for name, value in env.items():
            # An exact name the caller keeps (an MCP server's env_passthrough) is the most
            # specific choice; then exclude, then include, then the default rules.
            if name in kept:
                out[name] = value
            elif _matches(name, self.exclude):
                continue
            elif self.keeps(name) or not (is_secret_variable(name, value) or value in values):
                out[name] = value
        out.update(self.assign)
        return out


def policy_from_config(config: Any) -> EnvPolicy:
    """The :class:`EnvPolicy` of a run's config: ``shell_env`` plus the names in
    ``sandbox_env_passthrough`` (kept, as before ``shell_env`` existed)."""
    found = config.get("shell_env") if config is not None else None
    raw: Mapping[str, Any] = found if isinstance(found, Mapping) else {}
    passthrough = config.get("sandbox_env_passthrough") if config is not None else None
    include = [*_strings(raw.get("include")), *_strings(passthrough)]
    assigned = raw.get("set")
    values: Mapping[str, Any] = assigned if isinstance(assigned, Mapping) else {}
    return EnvPolicy(include=tuple(include), exclude=tuple(_strings(raw.get("exclude"))),
                     assign=tuple((str(k), str(v)) for k, v in values.items()))


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, (list, tuple)):
        return [str(v) for v in value]
    return []


def shell_env_problems(value: Any) -> list[str]:
    """What is wrong with a ``shell_env`` table, one sentence each (empty when it is fine)."""
    if not isinstance(value, Mapping):
        return ["shell_env must be a table: [shell_env] include = [...], exclude = [...], "
                "set = { NAME = \"value\" }"]
    problems = []
    for key in value:
        if key not in ("include", "exclude", "set"):
            problems.append(f"shell_env.{key} is not a known key (include, exclude, set)")
    for key in ("include", "exclude"):
        patterns = value.get(key, [])
        if not (isinstance(patterns, list) and all(isinstance(p, str) for p in patterns)):
            problems.append(f"shell_env.{key} must be a list of name patterns, like "
                            '["GITHUB_TOKEN", "NPM_*"]')
    values = value.get("set", {})
    if not (isinstance(values, Mapping) and all(isinstance(v, str) for v in values.values())):
        problems.append('shell_env.set must be a table of strings, like { CI = "1" }')
    return problems


def scrub_environment(env: Mapping[str, str], *, keep: Sequence[str] = (),
                      secret_values: Sequence[str] = (),
                      policy: EnvPolicy | None = None) -> dict[str, str]:
    """``env`` without credentials: every variable :func:`is_secret_variable` names and every
    one whose value is one of ``secret_values`` (the keys the agent holds, whatever they are
    called), except the names in ``keep`` and what ``policy`` brings back."""
    return (policy or EnvPolicy()).apply(env, keep=keep, secret_values=secret_values)
