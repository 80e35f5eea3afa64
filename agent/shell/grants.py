"""What "always" names: the words of a command up to the one that says what runs.

Answering "always" grants a prefix of each part of a command and anything after it
(:func:`agent.loop.permissions.grant_patterns`).  The prefix is the narrowest that names what
ran: for a tool with subcommands the subcommand (``git status``, with the options before it:
``git -C sub log``), for an interpreter the script or module it runs (``python3 x.py``,
``python3 -m pytest``), so a grant for ``python3 x.py`` never covers ``python3 -m pip
install ...``; for any other program the program.
"""

from __future__ import annotations

import re

#: Programs whose first operand is a subcommand: "always" for ``git status`` grants
#: ``git status *``, not all of git; options before the subcommand are kept with it.
_SUBCOMMAND_TOOLS = frozenset({
    "git", "npm", "pnpm", "yarn", "cargo", "go", "pip", "pip3", "uv", "poetry", "docker",
    "podman", "kubectl", "make", "npx", "gh", "systemctl", "apt", "apt-get", "brew", "dotnet",
    "mvn", "gradle", "terraform", "helm", "conda", "bundle", "rake", "composer", "deno",
    "bun"})

#: Interpreters, whose first operand is the program they run: "always" for ``python3
#: x.py`` grants ``python3 x.py *``, so it never covers ``python3 -m pip install ...``.
_INTERPRETER = re.compile(
    r"(python|pypy|node|nodejs|ruby|perl|php|lua|luajit|Rscript|tclsh|bash|sh|zsh|dash|ksh|"
    r"fish|pwsh|osascript|java|julia|elixir|escript|guile|racket|sbcl|swift)[0-9.]*")

#: Options (of a subcommand tool or an interpreter) whose value is the next word.
_VALUE_OPTIONS = frozenset({"-C", "-c", "--git-dir", "--work-tree", "--namespace", "-W", "-X",
                            "-r", "--require", "-I", "-f", "--file", "--prefix", "-p",
                            "--project", "--directory", "-cp", "-classpath", "--loader"})

#: An option that names what runs with its value (a module, a jar): the grant ends there.
_RUNS_OPTIONS = frozenset({"-m", "-jar"})


def naming_words(words: list[str]) -> list[str]:
    """The words of a command up to the one that names what runs: the subcommand of a tool
    that has them, the script (or ``-m`` module) of an interpreter, else the program; empty
    when a tool or an interpreter is given no operand."""
    program = words[0]
    if program not in _SUBCOMMAND_TOOLS and not _INTERPRETER.fullmatch(program):
        return words[:1]
    out, i = [program], 1
    while i < len(words):
        word = words[i]
        if word in _RUNS_OPTIONS or word in _VALUE_OPTIONS:
            out += words[i:i + 2]
            i += 2
            if word in _RUNS_OPTIONS and i <= len(words):
                return out
            continue
        out.append(word)
        if not word.startswith("-"):
            return out  # the subcommand, the script
        i += 1
    return []
