"""What a ``git`` command line really does: its subcommand, resolved options and config.

``git -c alias.st='reset --hard' st``, ``git -c clean.requireForce=false clean``,
``git -c core.pager='rm -rf x' log`` and ``GIT_PAGER='rm -rf x' git log`` all do more than
their spelling says.  :func:`read_git` resolves the global options, ``-c`` and
``GIT_CONFIG_*`` settings, aliases given on the command line, and the subcommand's options
(unique prefixes as git's parse-options accepts them), and lists every program a setting
makes git run, so those are judged as commands too.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from agent.shell.options import Parsed, Spec, parse_options, same, spec
from agent.shell.wrappers import split_words

# git's own options before the subcommand that take a separate value.
_GLOBAL_VALUE = frozenset({"-C", "-c", "--git-dir", "--work-tree", "--namespace",
                           "--exec-path", "--super-prefix", "--config-env", "--list-cmds",
                           "--attr-source"})
_GLOBAL_LONG = ("git-dir", "work-tree", "namespace", "exec-path", "super-prefix",
                "config-env", "list-cmds", "attr-source", "bare", "no-pager", "paginate",
                "no-replace-objects", "literal-pathspecs", "glob-pathspecs",
                "noglob-pathspecs", "icase-pathspecs", "no-optional-locks", "html-path",
                "man-path", "info-path", "version", "help", "no-advice")

#: Config keys (lower-case; ``*`` one section part) whose value is a command git runs.
PROGRAM_KEYS = ("core.pager", "core.editor", "core.sshcommand", "core.fsmonitor",
                "core.askpass", "core.gitproxy", "core.hookspath", "sequence.editor",
                "diff.external", "diff.*.command", "diff.*.textconv", "merge.*.driver",
                "filter.*.clean", "filter.*.smudge", "filter.*.process", "gpg.program",
                "gpg.*.program", "credential.helper", "credential.*.helper",
                "uploadpack.packobjectshook", "remote.*.uploadpack", "remote.*.receivepack",
                "pager.*", "alias.*", "interactive.difffilter", "difftool.*.cmd",
                "mergetool.*.cmd", "web.browser", "browser.*.cmd", "man.*.cmd",
                "instaweb.httpd", "sendemail.*", "include.path", "includeif.*.path",
                "protocol.ext.allow", "protocol.allow", "core.worktree",
                "core.alternaterefscommand", "browser.*.path", "man.*.path",
                "guitool.*.cmd", "trailer.*.command", "trailer.*.cmd", "submodule.*.update",
                "remote.*.vcs", "uploadarchive.*", "receive.procreceiverefs",
                "core.fsmonitorhookversion", "difftool.*.path", "mergetool.*.path",
                "core.sshcommand", "ssh.variant")
#: Environment variables whose value is a command git runs.
PROGRAM_ENV = frozenset({"GIT_PAGER", "GIT_EDITOR", "GIT_SEQUENCE_EDITOR", "GIT_SSH",
                         "GIT_SSH_COMMAND", "GIT_ASKPASS", "GIT_EXTERNAL_DIFF",
                         "GIT_PROXY_COMMAND", "GIT_EXEC_PATH", "PAGER", "EDITOR", "VISUAL"})

SUBCOMMANDS: dict[str, Spec] = {
    "reset": spec("qpNU", "", long=same("hard", "soft", "mixed", "merge", "keep", "quiet",
                                         "patch", "intent-to-add", "no-refresh", "refresh",
                                         "recurse-submodules", "no-recurse-submodules",
                                         "pathspec-file-nul"),
                  long_args=same("pathspec-from-file")),
    "clean": spec("dfinqxXe", "e", long=same("force", "dry-run", "interactive", "quiet"),
                  long_args=same("exclude"), names={"f": "force", "n": "dry-run",
                                                    "i": "interactive"}),
    "push": spec("fnquv46d", "o", long=same("force", "all", "branches", "mirror", "tags",
                                            "follow-tags", "dry-run", "porcelain", "delete",
                                            "prune", "no-verify", "verify", "atomic",
                                            "set-upstream", "quiet", "verbose", "progress",
                                            "thin", "no-thin", "ipv4", "ipv6", "no-force",
                                            "no-force-with-lease", "force-if-includes",
                                            "no-force-if-includes", "signed", "no-signed"),
                 long_args=same("repo", "receive-pack", "exec", "push-option",
                                "recurse-submodules"),
                 long_optional=same("force-with-lease"),
                 names={"f": "force", "d": "delete", "u": "set-upstream"}),
    "branch": spec("dDfmMcCrailvqt", "u", long=same(
        "delete", "force", "move", "copy", "remotes", "all", "list", "verbose", "quiet",
        "track", "no-track", "unset-upstream", "edit-description", "show-current",
        "create-reflog", "ignore-case", "omit-empty", "column", "no-column"),
        long_args=same("set-upstream-to", "sort", "format", "points-at"),
        long_optional=same("contains", "no-contains", "merged", "no-merged", "abbrev",
                           "color"),
        names={"d": "delete", "D": "delete-force", "f": "force", "m": "move", "M": "move",
               "c": "copy", "C": "copy", "l": "list", "a": "all", "r": "remotes"}),
}

_PROGRAM_KEY_RE = [re.compile("^" + re.escape(k).replace(r"\*", r"[^.]+(\.[^.]+)*") + "$")
                   for k in PROGRAM_KEYS]
_FALSE = frozenset({"false", "no", "off", "0"})


def is_program_key(key: str) -> bool:
    return any(r.match(key.lower()) for r in _PROGRAM_KEY_RE)


@dataclass
class GitCall:
    """A resolved git command: global options, ``config`` set on the command line or by
    ``GIT_CONFIG_*`` (keys lower-cased), the subcommand after alias expansion, its words,
    scripts git would run because of the settings, and what could not be resolved."""

    globals: list[str] = field(default_factory=list)
    config: dict[str, str] = field(default_factory=dict)
    sub: str = ""
    args: tuple[str, ...] = ()
    scripts: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    alias: str = ""

    def options(self) -> Parsed | None:
        """The subcommand's options read as git reads them, when it is one we know."""
        table = SUBCOMMANDS.get(self.sub)
        return parse_options(table, list(self.args)) if table else None


def read_git(argv: tuple[str, ...], assignments: tuple[str, ...] = ()) -> GitCall:
    """Resolve ``git ...`` (``argv[0]`` is git) with the ``NAME=value`` assignments before
    it."""
    call = GitCall()
    env = dict(a.split("=", 1) for a in assignments if "=" in a)
    for name, value in env.items():
        if name in PROGRAM_ENV and value:
            call.scripts.append(value)
        if name == "GIT_CONFIG_PARAMETERS":
            for item in re.findall(r"'([^']*)'", value):
                key, _, val = item.partition("=")
                call.config[key.lower()] = val
    count = env.get("GIT_CONFIG_COUNT", "")
    if count.isdigit():
        for i in range(min(int(count), 64)):
            key = env.get(f"GIT_CONFIG_KEY_{i}")
            if key:
                call.config[key.lower()] = env.get(f"GIT_CONFIG_VALUE_{i}", "")
    args = list(argv[1:])
    i = 0
    while i < len(args):
        word = args[i]
        if word in _GLOBAL_VALUE:
            value = args[i + 1] if i + 1 < len(args) else ""
            call.globals.append(word)
            if word == "-c":
                _set(call, value)
            elif word == "--config-env":
                key = value.split("=", 1)[0]
                if is_program_key(key):
                    call.problems.append(f"git --config-env {key} takes a program from the "
                                         "environment")
            i += 2
            continue
        if word.startswith("-c") and len(word) > 2 and not word.startswith("--"):
            call.globals.append("-c")
            _set(call, word[2:])
            i += 1
            continue
        if word.startswith("--"):
            name = word[2:].split("=", 1)[0]
            hits = [g for g in _GLOBAL_LONG if g.startswith(name)]
            canonical = name if name in _GLOBAL_LONG else (hits[0] if len(hits) == 1 else name)
            call.globals.append("--" + canonical)
            if canonical == "config-env" and "=" in word:
                key = word.split("=", 2)[1]
                if is_program_key(key):
                    call.problems.append(f"git --config-env {key} takes a program from the "
                                         "environment")
            i += 1
            continue
        if word.startswith("-"):
            call.globals.append(word)
            i += 1
            continue
        call.sub, call.args = word, tuple(args[i + 1:])
        break
    for key, value in call.config.items():
        if key.startswith("alias."):
            continue
        if is_program_key(key) and value:
            call.scripts.append(value)
    _expand_alias(call)
    return call


def _set(call: GitCall, item: str) -> None:
    key, eq, value = item.partition("=")
    call.config[key.lower()] = value if eq else "true"


def _expand_alias(call: GitCall) -> None:
    """``-c alias.X=...``: git runs the alias for a subcommand it does not have (an alias
    never overrides a builtin).  ``!...`` aliases are shell scripts."""
    for _ in range(8):
        value = call.config.get(f"alias.{call.sub.lower()}")
        if value is None or call.sub in BUILTINS:
            return
        call.alias = call.sub
        if value.startswith("!"):
            script = value[1:]
            if call.args:
                script += " " + " ".join(call.args)
            call.scripts.append(script)
            call.sub, call.args = "", ()
            return
        words = split_words(value)
        if not words:
            return
        call.sub, call.args = words[0], tuple(words[1:]) + call.args
    call.problems.append("git aliases refer to each other")


#: git's own subcommands (an alias of the same name is ignored by git).
BUILTINS = frozenset("""add am annotate apply archive bisect blame branch bundle cat-file
check-attr check-ignore check-mailmap check-ref-format checkout checkout-index cherry
cherry-pick citool clean clone column commit commit-graph commit-tree config count-objects
credential describe diff diff-files diff-index diff-tree difftool fast-export fast-import
fetch fetch-pack filter-branch fmt-merge-msg for-each-ref for-each-repo format-patch fsck gc
get-tar-commit-id grep gui hash-object help hook index-pack init instaweb interpret-trailers
log ls-files ls-remote ls-tree mailinfo mailsplit maintenance merge merge-base merge-file
merge-index merge-tree mergetool mktag mktree multi-pack-index mv name-rev notes pack-objects
pack-redundant pack-refs patch-id prune prune-packed pull push range-diff read-tree rebase
receive-pack reflog remote repack replace rerere reset restore rev-list rev-parse revert rm
send-email send-pack shortlog show show-branch show-index show-ref sparse-checkout stage
stash status stripspace submodule switch symbolic-ref tag unpack-file unpack-objects
update-index update-ref update-server-info upload-archive upload-pack var verify-commit
verify-pack verify-tag version whatchanged worktree write-tree""".split())


def config_is_false(call: GitCall, key: str) -> bool:
    return call.config.get(key, "").strip().lower() in _FALSE
