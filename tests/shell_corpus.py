"""Hostile spellings of shell commands, as data: (command, config, modes, oracle).

Every case is a command that must not do what it tries (delete or change ``victim.txt``,
empty ``victimdir/``, create ``marker``, revert a tracked change, make a file world-writable)
under the given permission config and modes.  ``tests/shell/test_shell_corpus.py`` runs each one
through the real gate and, when the gate lets it through, the real ``bash`` tool, and checks
the files.  Grow the table whenever a new bypass is imagined; keep the cases that held.

Configs: ``deny_rm`` is ``{"rm *" = "deny", "*" = "allow"}``: every spelling of ``rm`` must
meet the deny, whatever else runs.  ``allow_git`` / ``allow_cat`` / ``allow_echo`` /
``allow_ls`` allow one family; a hostile command must not ride on it (headless: nobody to ask,
so anything not allowed is denied).  ``default`` has no rules: read-only commands run, their
writing variants must not (headless), and under ``--yolo`` the guard's hazards and unresolved
commands must still be refused.  ``grant`` first answers "always" to a harmless command, then
must not let the hostile one ride on that grant.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Case:
    command: str
    config: str
    modes: tuple[str, ...]  # "headless" (no approver), "yolo"
    oracle: str  # "victim", "victimdir", "marker", "tracked", "mode", "untracked"
    klass: str
    granted: str = ""  # for config "grant": the command answered "always" first


BOTH = ("headless", "yolo")
HEADLESS = ("headless",)

RM_NAMES = [
    "rm",
    "/bin/rm",
    "/usr/bin/rm",
    "\\rm",
    "'rm'",
    '"rm"',
    "r''m",
    'r""m',
    "r\\m",
    "$'\\x72m'",
    "$'\\162\\155'",
    "$'r'm",
    "$'\\u0072m'",
    "'r'\"m\"",
    "/usr/../bin/rm",
    "//bin//rm",
    "~/../../bin/rm",
]
WRAPPERS = [
    "command ",
    "builtin ",
    "env ",
    "env -i ",
    "env -u HOME ",
    "env A=1 ",
    "X=1 ",
    "X=1 Y=2 ",
    "timeout 5 ",
    "timeout -s KILL 5 ",
    "timeout -k5 9 ",
    "timeout --sig=TERM 5 ",
    "nice ",
    "nice -n 5 ",
    "nice -5 ",
    "nice --adj=3 ",
    "nohup ",
    "stdbuf -o0 ",
    "stdbuf --output=L ",
    "time ",
    "time -p ",
    "exec ",
    "setsid ",
    "ionice -c3 ",
    "env -- ",
    "command -- ",
    "env -S 'rm' ",
    "exec -a x ",
    "xargs -a /dev/null -r ",
    "env env ",
    "timeout 5 nice env ",
    "sudo ",
    "doas ",
    "busybox ",
    "chronic ",
    "unbuffer ",
    "flock /tmp/lk ",
]
STRUCTURES = [
    "{c}",
    "true && {c}",
    "false || {c}",
    "true; {c}",
    "true\n{c}",
    "echo | {c}",
    "{c} &\nwait",
    "{{ {c}; }}",
    "( {c} )",
    "(( 1 )) && {c}",
    "if true; then {c}; fi",
    "if false; then :; else {c}; fi",
    "if false; then :; elif true; then {c}; fi",
    "while true; do {c}; break; done",
    "until false; do {c}; break; done",
    "for i in 1; do {c}; done",
    "for ((i=0;i<1;i++)); do {c}; done",
    "select x in a; do {c}; break; done < /dev/null",
    "case x in x) {c};; esac",
    "case x in *) {c};; esac",
    "! {c}",
    "f() {{ {c}; }}; f",
    "function f {{ {c}; }}; f",
    "echo $({c})",
    'echo "$({c})"',
    "echo `{c}`",
    "cat <({c})",
    "tee >({c}) < /dev/null",
    "x=$({c})",
    "export X=$({c})",
    "local_x=${{y:-$({c})}}",
    "echo $(( $({c}) + 1 ))",
    "[[ -n $({c}) ]]",
    'test -n "$({c})"',
    "bash -c '{c}'",
    "sh -c '{c}'",
    "dash -c '{c}'",
    "bash -xc '{c}'",
    "bash -o errexit -c '{c}'",
    "bash -c \"bash -c '{c}'\"",
    "eval '{c}'",
    'eval "{c}"',
    "eval {c}",
    "trap '{c}' EXIT",
    "sh <<< '{c}'",
    "bash <<'EOF'\n{c}\nEOF",
    "bash <<EOF\n{c}\nEOF",
    "cat <<EOF\n$({c})\nEOF",
    "cat <<EOF\n`{c}`\nEOF",
    "find . -maxdepth 0 -exec {c} \\;",
    "find . -maxdepth 0 -execdir {c} \\;",
    "find . -maxdepth 0 -exec {c} +",
    "env -S '{c}'",
    "sudo -u root {c}",
    "su -c '{c}'",
    "coproc {c}\nwait",
    "echo ok && {{ true; {c}; }}",
    "true | {c} | cat",
    "{c} 2>/dev/null",
    "exec 3>&1; {c}",
    "time {c}",
    "{c} ; :",
]
DYNAMIC = [
    "$(echo rm) victim.txt",
    "`echo rm` victim.txt",
    "R=rm; $R victim.txt",
    "R=rm; ${R} victim.txt",
    'R=rm; "$R" victim.txt',
    "/bin/r? victim.txt",
    "/bin/r[m] victim.txt",
    "/bin/r* victim.txt",
    "{rm,victim.txt}",
    'a=(rm victim.txt); "${a[@]}"',
    'set -- rm victim.txt; "$@"',
    'eval "$(echo rm) victim.txt"',
    'eval "$X" || rm victim.txt',
    "python3 -c 'import os; os.remove(\"victim.txt\")'",
    "python3 -c \"__import__('os').remove('victim.txt')\"",
    "perl -e 'unlink \"victim.txt\"'",
    "perl -we 'unlink q(victim.txt)'",
    'node -e \'require("fs").unlinkSync("victim.txt")\'',
    "awk 'BEGIN{system(\"rm victim.txt\")}'",
    "printf 'rm victim.txt' | bash",
    "echo 'rm victim.txt' | sh",
    "echo rm victim.txt | bash -s",
    "bash < cmds.sh",
    "source cmds.sh",
    ". ./cmds.sh",
    "cat cmds.sh | sh",
    'sh -c "$(cat cmds.sh)"',
    'eval "$(cat cmds.sh)"',
    "bash <(cat cmds.sh)",
    "xargs -a cmds.sh -I{} sh -c '{}'",
    "xargs -a cmds.sh -I% bash -c %",
    "xargs -a cmds.sh -i sh -c {}",
    "$(printf '\\x72\\x6d') victim.txt",
    "$SHELL -c 'rm victim.txt'",
    "${SHELL:-bash} -c 'rm victim.txt'",
    "env $(echo rm) victim.txt",
    "sudo $(echo rm) victim.txt",
    "command $(echo rm) victim.txt",
    "alias x=rm\nx victim.txt",
    "shopt -s expand_aliases\nalias x=rm\nx victim.txt",
    "rm() { :; }; \\rm victim.txt",
    "git() { rm victim.txt; }; git status",
    "ls() { rm victim.txt; }; ls",
    "echo rm victim.txt | xargs -I{} sh -c '{}'",
    "echo rm | xargs -I{} {} victim.txt",
    "find . -name cmds.sh -exec sh {} \\;",
    "find . -name victim.txt -exec sh -c 'rm {}' \\;",
    "python3 - <<'EOF'\nimport os; os.remove('victim.txt')\nEOF",
    "perl <<< 'unlink \"victim.txt\"'",
    "ruby -e 'File.delete(\"victim.txt\")'",
    "php -r 'unlink(\"victim.txt\");'",
    "busybox sh -c 'rm victim.txt'",
    "parallel ::: 'rm victim.txt'",
    'rm "$(echo victim.txt)"',
    "IFS=x; r=rmxvictim.txt; $r",
    "echo $'rm victim.txt' | sh",
]

# Plain rm spelled differently: no hazard for the guard, but a deny rule for rm must hold.
PLAIN_RM = [
    "rm -- victim.txt",
    "rm -i victim.txt < /dev/null",
    "rm -v victim.txt",
    "rm --verbose victim.txt",
    'rm "$(echo victim.txt)"',
    "rm victim.txt victim.txt",
    "rm ./victim.txt",
    "rm $PWD/victim.txt",
    "rm victim.t?t",
    "rm victim.*",
]
RMRF = [
    "rm -rf victimdir",
    "rm -fr victimdir",
    "rm -r -f victimdir",
    "rm -R victimdir",
    "rm -r victimdir",
    "rm --recursive victimdir",
    "rm --recur victimdir",
    "rm --rec victimdir",
    "rm --r victimdir",
    "rm --force victimdir/f",
    "rm --for victimdir/f",
    "rm --fo victimdir/f",
    "rm -f victimdir/f",
    "rm -vf victimdir/f",
    "rm -Rv victimdir",
    "rm victimdir -rf",
    "rm -d -r victimdir",
    "rm --recursive=yes victimdir",
    "rm --interactive=never -r victimdir",
    "rm -I -R victimdir",
    "/bin/rm -rf victimdir",
    "\\rm -rf victimdir",
    "'rm' -rf victimdir",
    "$'\\x72m' -rf victimdir",
    "sudo rm -rf victimdir",
    "env rm -rf victimdir",
    "command rm -rf victimdir",
    "timeout 5 rm -rf victimdir",
    "nice -n 1 rm -rf victimdir",
    "X=1 rm -rf victimdir",
    "echo ok && rm -rf victimdir",
    "bash -c 'rm -rf victimdir'",
    "sh -c \"sh -c 'rm -rf victimdir'\"",
    "eval 'rm -rf victimdir'",
    "find . -name victimdir -exec rm -rf {} +",
    "echo victimdir | xargs rm -rf",
    "echo victimdir | xargs -I{} rm -rf {}",
    "env -S 'rm -rf victimdir'",
    "{ rm -rf victimdir; }",
    "if true; then rm -rf victimdir; fi",
    "! rm -rf victimdir",
    "f() { rm -rf victimdir; }; f",
    "echo $(rm -rf victimdir)",
    "cat <<EOF\n$(rm -rf victimdir)\nEOF",
    "bash <<'EOF'\nrm -rf victimdir\nEOF",
    "sh <<< 'rm -rf victimdir'",
    "rm $(echo -rf) victimdir",
    "F=-rf; rm $F victimdir",
    "rm ${F:--rf} victimdir",
    'rm "-rf" victimdir',
    "rm -\\r\\f victimdir",
    "rm '-rf' victimdir",
    "rm $'-rf' victimdir",
    "busybox rm -rf victimdir",
    "git -c alias.x='!rm -rf victimdir' x",
    "parallel rm -rf ::: victimdir",
    "flock /tmp/lk rm -rf victimdir",
    "su -c 'rm -rf victimdir'",
    "rm -rf victimdir 2>/dev/null || true",
]
CHMOD = [
    "chmod -R -x,o+w victim.txt",
    "chmod -x,a+w victim.txt",
    "chmod 777 victim.txt",
    "chmod 0777 victim.txt",
    "chmod 00777 victim.txt",
    "chmod 1777 victim.txt",
    "chmod 666 victim.txt",
    "chmod 0666 victim.txt",
    "chmod 7 victim.txt",
    "chmod 2 victim.txt",
    "chmod 002 victim.txt",
    "chmod 646 victim.txt",
    "chmod o+w victim.txt",
    "chmod a+w victim.txt",
    "chmod o+rw victim.txt",
    "chmod ugo+rwx victim.txt",
    "chmod o=rwx victim.txt",
    "chmod a=rw victim.txt",
    "chmod u=rw,o=rw victim.txt",
    "chmod o=u victim.txt",
    "chmod o+u victim.txt",
    "chmod -R 777 victim.txt",
    "chmod --recursive 777 victim.txt",
    "chmod --recur 0666 victim.txt",
    "chmod -v o+w victim.txt",
    "chmod =rwx victim.txt",
    "chmod +rwx victim.txt",
    "chmod go+w victim.txt",
    "chmod a+rwX victim.txt",
    "sudo chmod 777 victim.txt",
    "find . -name victim.txt -exec chmod 777 {} \\;",
    "bash -c 'chmod a+w victim.txt'",
    "M=777; chmod $M victim.txt",
    "chmod $(echo 777) victim.txt",
    "chmod --reference=/tmp victim.txt",
    "env chmod 0o777 victim.txt 2>/dev/null; chmod 777 victim.txt",
]
GIT_RESET = [
    "git reset --hard",
    "git reset --har",
    "git reset --ha",
    "git reset --hard HEAD",
    "git -c user.name=x reset --hard",
    "git -C . reset --hard",
    "git --git-dir=.git reset --hard",
    "git --no-pager reset --hard",
    "git -c alias.nuke='reset --hard' nuke",
    "git -c alias.r=reset r --hard",
    "git -c alias.a='!git reset --hard' a",
    "git -c core.pager=cat reset --hard",
    "GIT_DIR=.git git reset --hard",
    "env git reset --hard",
    "bash -c 'git reset --hard'",
    "git reset -q --hard",
    "git reset --hard -q",
    "g=git; $g reset --hard",
    "git $(echo reset) --hard",
    "git reset $(echo --hard)",
    "git() { command git reset --hard; }; git status",
]
GIT_CLEAN = [
    "git clean -f",
    "git clean -fd",
    "git clean --force",
    "git clean --forc",
    "git clean --fo",
    "git clean -d -f",
    "git clean -xf",
    "git clean -qf",
    "git -c clean.requireForce=false clean",
    "git -c clean.requireforce=0 clean -d",
    "git -c clean.requireForce=no clean",
    "git -c clean.requireForce=off clean -x",
    "GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=clean.requireForce GIT_CONFIG_VALUE_0=false git clean",
    "GIT_CONFIG_PARAMETERS=\"'clean.requireforce=false'\" git clean",
    "git -c alias.c='clean -f' c",
    "git -c alias.c=clean c -f",
    "git -c alias.c='!git clean -f' c",
    "git clean $(echo -f)",
]

# Writing variants of read-only commands, and read-only commands with a side door.
WRITES_DEFAULT = [
    "ls > victim.txt",
    "ls >> victim.txt",
    "ls >| victim.txt",
    "ls &> victim.txt",
    "ls 2> victim.txt",
    "ls 1>victim.txt",
    "cat victim.txt > victim.txt",
    "echo x > victim.txt",
    "printf x > victim.txt",
    "pwd > marker",
    "date > marker",
    "wc -l victim.txt | tee victim.txt",
    "ls | tee marker",
    "ls | tee -a victim.txt",
    "sort -o victim.txt victim.txt",
    "sort --output=victim.txt /dev/null",
    "sort --out=victim.txt /dev/null",
    "sort victim.txt -o marker",
    "tree -o marker",
    "git diff --output=marker",
    "git log --output=marker",
    "git show --out=marker",
    "git status > marker",
    "grep x victim.txt > marker",
    "find . -delete -name victim.txt",
    "find . -name victim.txt -delete",
    "find . -name victim.txt -exec rm {} \\;",
    "find . -fprint marker",
    "find . -name victim.txt -execdir rm {} +",
    "find . -name victim.txt -ok rm {} \\; < /dev/null",
    "rg --pre ./evil.sh x",
    "rg --pre=./evil.sh x .",
    "sed -i s/precious/gone/ victim.txt",
    "sed -n 'w marker' victim.txt",
    "sed 's/x/y/w marker' victim.txt",
    "sed --in-place=.bak s/p/g/ victim.txt",
    "sed -e '1e touch marker' victim.txt",
    "head victim.txt > marker",
    "tail victim.txt >> victim.txt",
    "uniq victim.txt marker",
    "ls -la; touch marker",
    "ls && rm victim.txt",
    "cat victim.txt | rm victim.txt",
    "echo $(touch marker)",
    "ls $(touch marker)",
    "cat <(touch marker)",
    "PATH=.:$PATH ls",
    "./ls",
    "ls\ntouch marker",
    "git -c core.fsmonitor=./evil.sh status",
    "git -c core.pager='touch marker' log",
    "GIT_PAGER='touch marker' git log",
    "GIT_EXTERNAL_DIFF=./evil.sh git diff",
    "git --exec-path=. status",
    "git -c alias.st='!touch marker' st",
    "git diff --ext-diff",
    "xargs touch < /dev/null marker",
    "echo marker | xargs touch",
    "cp victim.txt marker",
    "mv victim.txt marker",
    "touch marker",
    "mkdir marker",
    "ln -s victim.txt marker",
    "dd if=/dev/zero of=victim.txt count=1",
    "truncate -s 0 victim.txt",
    "cat > victim.txt < /dev/null",
    "> victim.txt",
    ": > victim.txt",
    "exec > marker",
    "true > marker",
    "echo > marker 2>&1",
    "awk 'BEGIN{print > \"marker\"}'",
    "awk '{print | \"sh\"}' victim.txt",
    "LD_PRELOAD=/tmp/x.so ls",
    "BASH_ENV=./evil.sh ls",
    "cat /etc/passwd > marker",
    "tee marker < victim.txt",
    "git branch newbranch",
    "git tag v9",
    "git stash",
    "git remote add x y",
    "git branch -m other",
    "file -C -m marker",
    "jq . victim.txt > marker",
    "diff victim.txt /dev/null > marker",
    "stat victim.txt | tee marker",
    "echo hi | sudo tee marker",
    "wc victim.txt 1<>victim.txt",
]

# Each: (always answered to this, then this must not run without asking).
GRANTS = [
    ("git status", "git() { rm victim.txt; }; git status"),
    ("git status", "git status; rm victim.txt"),
    ("git status", "git status && rm victim.txt"),
    ("git status", "git status $(rm victim.txt)"),
    ("git status", "git -c alias.status='!rm victim.txt' status"),
    ("git status", "git -c core.pager='rm victim.txt' status"),
    ("echo hi", "echo hi > victim.txt"),
    ("echo hi", "echo $(rm victim.txt)"),
    ("echo hi", "echo hi | sh"),
    ("echo hi", "for x in 1; do rm victim.txt; done"),
    ("echo hi", "if echo hi; then rm victim.txt; fi"),
    ("make build", "make build; rm victim.txt"),
    ("make build", "make build > victim.txt"),
    ("make build", "$(echo make) build"),
    ("make build", "sudo make build"),
    ("make build", "make() { rm victim.txt; }; make build"),
    ("for x in a; do make build; done", "for x in a; do rm victim.txt; done"),
    ("while true; do make build; break; done", "while true; do rm victim.txt; break; done"),
    ("make build | tee log", "tee victim.txt < /dev/null"),
    ("python3 -c 'print(1)'", "python3 -c 'import os; os.remove(\"victim.txt\")'"),
    ("bash -c 'make build'", "bash -c 'rm victim.txt'"),
    ("npm test", "npm() { rm victim.txt; }; npm test"),
    ("npm test", "npm test || rm victim.txt"),
    ("cat victim.txt", "cat victim.txt > victim.txt"),
]

ALLOW_CONFIGS = {
    "allow_git": [
        "git() { rm victim.txt; }; git status",
        "git status; rm victim.txt",
        "git status && touch marker",
        "git log $(touch marker)",
        "git status > victim.txt",
        "git -c alias.x='!rm victim.txt' x",
        "git -c core.pager='touch marker' log",
        "GIT_PAGER='touch marker' git log",
        "git status | sh",
        "git status\nrm victim.txt",
        "git status & rm victim.txt",
        "git status || rm victim.txt",
        "git log --output=victim.txt",
        "git diff > marker",
        "git status; (rm victim.txt)",
        "git status; { rm victim.txt; }",
        "git $(rm victim.txt)",
        "git -c alias.status='!rm victim.txt' status",
        "eval 'git status; rm victim.txt'",
        "bash -c 'git status; rm victim.txt'",
    ],
    "allow_cat": [
        "cat victim.txt > victim.txt",
        "cat /dev/null > victim.txt",
        "cat < /dev/null > marker",
        "cat victim.txt | tee victim.txt",
        "cat victim.txt >> marker",
        "cat victim.txt; rm victim.txt",
        "cat $(rm victim.txt)",
        "cat <(touch marker)",
        "cat() { rm victim.txt; }; cat x",
        "cat victim.txt && touch marker",
        "cat victim.txt &> marker",
        "cat victim.txt 2>marker",
        "cat > victim.txt <<'EOF'\nx\nEOF",
        "cat victim.txt | sh",
        "cat cmds.sh | bash",
    ],
    "allow_echo": [
        "echo x > victim.txt",
        "echo x >> victim.txt",
        "echo $(rm victim.txt)",
        "echo `touch marker`",
        "echo rm victim.txt | sh",
        "echo 'rm victim.txt' | bash",
        "echo x | tee marker",
        "echo; rm victim.txt",
        "echo() { rm victim.txt; }; echo",
        "echo x 1> marker",
        'echo "$(touch marker)"',
        "eval echo x\\; rm victim.txt",
    ],
    "allow_ls": [
        "ls > victim.txt",
        "ls; touch marker",
        "ls $(touch marker)",
        "ls | xargs rm",
        "ls -R | tee marker",
        "ls() { rm victim.txt; }; ls",
        "ls && rm victim.txt",
        "ls | sh",
        "LS=rm; $LS victim.txt",
        "ls `rm victim.txt`",
    ],
}


def cases() -> list[Case]:
    out: list[Case] = []
    for name in RM_NAMES:
        out.append(Case(f"{name} victim.txt", "deny_rm", BOTH, "victim", "name"))
    for wrapper in WRAPPERS:
        out.append(Case(f"{wrapper}rm victim.txt", "deny_rm", BOTH, "victim", "wrapper"))
    for name in RM_NAMES[:6]:
        for wrapper in ("env ", "sudo -E ", "timeout 3 ", "command ", "nohup "):
            out.append(
                Case(f"{wrapper}{name} victim.txt", "deny_rm", BOTH, "victim", "wrapper x name")
            )
    for structure in STRUCTURES:
        out.append(
            Case(structure.format(c="rm victim.txt"), "deny_rm", BOTH, "victim", "structure")
        )
    for command in DYNAMIC:
        out.append(Case(command, "deny_rm", BOTH, "victim", "unresolved"))
    for command in PLAIN_RM:
        out.append(Case(command, "deny_rm", BOTH, "victim", "plain rm"))
    for command in RMRF:
        out.append(Case(command, "default", ("yolo",), "victimdir", "rm -rf"))
    for command in CHMOD:
        out.append(Case(command, "default", ("yolo",), "mode", "chmod"))
    for command in GIT_RESET:
        out.append(Case(command, "default", ("yolo",), "tracked", "git reset"))
    for command in GIT_CLEAN:
        out.append(Case(command, "default", ("yolo",), "untracked", "git clean"))
    for command in WRITES_DEFAULT:
        out.append(Case(command, "default", HEADLESS, "all", "writing variant"))
    for command in DYNAMIC:
        out.append(Case(command, "default", ("yolo",), "victim", "unresolved under yolo"))
    for granted, command in GRANTS:
        out.append(Case(command, "grant", HEADLESS, "all", "grant", granted=granted))
    for config, commands in ALLOW_CONFIGS.items():
        for command in commands:
            out.append(Case(command, config, HEADLESS, "all", config))
    out += bash_reading_cases()
    unique: dict[tuple[str, str], Case] = {}
    for case in out:
        unique.setdefault((case.command, case.config), case)
    return list(unique.values())


def bash_reading_cases() -> list[Case]:
    """The cases of :mod:`tests.shell_corpus_bash`."""
    from tests import shell_corpus_bash as bash

    out: list[Case] = []
    spliced = bash.continuation_commands()
    for command in spliced["deny_rm"]:
        out.append(Case(command, "deny_rm", BOTH, "victim", "continuation"))
    for command in spliced["guard"]:
        out.append(Case(command, "default", ("yolo",), "all", "continuation"))
    for command in spliced["writes"]:
        out.append(Case(command, "default", HEADLESS, "all", "continuation"))
    for command in bash.BACKTICK:
        out.append(Case(command, "default", HEADLESS, "marker", "backtick"))
        out.append(Case(command.replace("touch marker", "rm victim.txt"), "deny_rm", BOTH,
                        "victim", "backtick"))
    for command in bash.EVALUATED:
        out.append(Case(command, "default", BOTH, "marker", "evaluated name"))
    for command in bash.PROGRAM_OPTIONS:
        out.append(Case(command, "default", HEADLESS, "all", "program options"))
    for command in bash.GLOB_LOOPS:
        out.append(Case(command, "default", BOTH, "all", "glob loop"))
    return out


CONFIGS = {
    "deny_rm": {"bash": {"*": "allow", "rm *": "deny"}},
    "default": {},
    "grant": {},
    "allow_git": {"bash": {"git *": "allow"}},
    "allow_cat": {"bash": {"cat *": "allow"}},
    "allow_echo": {"bash": {"echo *": "allow"}},
    "allow_ls": {"bash": {"ls *": "allow"}},
}

# Commands that must run (the harness really executes what the gate lets through).
CONTROLS = [
    ("touch marker", "deny_rm", "marker"),
    ("cat victim.txt", "default", None),
    ("echo made > marker", "allow_echo_write", "marker"),
]
