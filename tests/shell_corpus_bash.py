"""Hostile spellings built on how bash reads a line, and on how programs read their options.

Added to :func:`tests.shell_corpus.cases` (same harness, same oracles).  Classes:

- ``continuation``: a backslash-newline anywhere inside a word (``r\\<NL>m``, ``--for\\<NL>ce``)
  is removed by bash before it reads words, so these are the plain hazards.
- ``backtick``: backticks nested at any depth, inside ``${...}``, in double quotes and in
  here-documents.
- ``evaluated name``: bash evaluates array subscripts in names (``test -v``, ``printf -v``,
  ``read``, ``declare``) and every variable an arithmetic context names, running the
  substitutions in them.
- ``program options``: programs on the read-only list given an option or operand that writes,
  runs a program or reads a file the policy cannot see (awk, xargs, sort, uniq, pip, rg, tar...).
- ``glob loop``: a loop over file names whose values reach a context that reads them as code.
"""

from __future__ import annotations

NL = "\\\n"  # a line continuation


def continuations(command: str, word: str) -> list[str]:
    """``command`` with a line continuation put at every place inside ``word`` (its first
    occurrence)."""
    start = command.index(word)
    out = []
    for cut in range(1, len(word)):
        spliced = word[:cut] + NL + word[cut:]
        out.append(command[:start] + spliced + command[start + len(word):])
    return out


# (command, the word to split): must still be denied (rm rule) / refused (guard).
CONTINUATION_DENY_RM = [
    ("rm victim.txt", "rm"),
    ("/bin/rm victim.txt", "/bin/rm"),
    ("echo x | xargs rm victim.txt", "xargs"),
    ("sudo rm victim.txt", "sudo"),
    ("bash -c 'rm victim.txt'", "bash"),
]
CONTINUATION_GUARD = [
    ("rm -rf victimdir", "rm"),
    ("rm -rf victimdir", "-rf"),
    ("rm --recursive victimdir", "--recursive"),
    ("chmod 777 victim.txt", "chmod"),
    ("chmod 777 victim.txt", "777"),
    ("chmod o+w victim.txt", "o+w"),
    ("git reset --hard", "reset"),
    ("git reset --hard", "--hard"),
    ("git clean -fd", "clean"),
    ("git clean -fd", "-fd"),
    ("find . -name victimdir -exec rm -rf {} +", "-exec"),
]
CONTINUATION_WRITES = [
    ("find . -name victim.txt -delete", "-delete"),
    ("find . -maxdepth 1 -name victim.txt -exec rm {} +", "-exec"),
    ("sort -o marker victim.txt", "-o"),
    ("sort --output=marker victim.txt", "--output"),
    ("ls > marker", "ls"),
    ("tee marker < victim.txt", "tee"),
    ("sed -i s/precious/gone/ victim.txt", "-i"),
    ("touch marker", "touch"),
    ("git branch marker", "branch"),
    ("uniq victim.txt marker", "uniq"),
    ("awk 'BEGIN{system(\"touch marker\")}'", "system"),
]
CONTINUATION_EXTRA = [
    "r\\\n\\\nm victim.txt",
    "\\\nrm victim.txt",
    "rm\\\n victim.txt",
    "echo $(r\\\nm victim.txt)",
    "echo `r\\\nm victim.txt`",
    'echo "$(r\\\nm victim.txt)"',
    "x=$(r\\\nm victim.txt)",
    "cat <<EOF\n$(r\\\nm victim.txt)\nEOF",
    "bash <<EOF\nr\\\nm victim.txt\nEOF",
    "bash <<'EOF'\nr\\\nm victim.txt\nEOF",
    "eval 'r\\\nm victim.txt'",
    "sh -c 'r\\\nm victim.txt'",
    "echo a\\\n#b; rm victim.txt",
    "echo a\\\n#b\\\n; rm victim.txt",
    "true # \\\nrm victim.txt",
    "r\\\nm -- victim.txt",
    "$'\\x72'\\\nm victim.txt",
    "r'm'\\\n victim.txt",
    "{ r\\\nm victim.txt; }",
]

BACKTICK = [
    "echo ${x:-`touch marker`}",
    'echo "${x:-`touch marker`}"',
    "echo ${x:=`touch marker`}",
    "echo ${x:+`touch marker`}",
    "echo ${x#`touch marker`}",
    "echo ${x/`touch marker`/y}",
    "echo ${x/y/`touch marker`}",
    "echo `echo \\`touch marker\\``",
    "echo `echo \\`echo \\\\\\`touch marker\\\\\\`\\``",
    'echo "`echo \\`touch marker\\``"',
    "echo ${x:-$(touch marker)}",
    "echo ${x:-${y:-`touch marker`}}",
    "cat <<EOF\n${x:-`touch marker`}\nEOF",
    "cat <<EOF\n`echo \\`touch marker\\``\nEOF",
    "x=`touch marker`",
    "export X=`touch marker`",
    "local_x=${y:-`touch marker`}",
    "ls `touch marker`",
    "ls ${x:-`touch marker`}",
    "[[ -n ${x:-`touch marker`} ]]",
    "echo ${#x[`touch marker`]}",
    "echo ${x[`touch marker`]}",
    "case `touch marker` in *) ;; esac",
    "for i in `touch marker`; do :; done",
    "echo `touch marker`${x}",
    'echo "a`touch marker`b"',
]

EVALUATED = [
    "test -v 'a[$(touch marker)]'",
    'test -v "a[$(touch marker)]"',
    "[ -v 'a[$(touch marker)]' ]",
    "[[ -v a[$(touch marker)] ]]",
    "[[ -v 'a[$(touch marker)]' ]]",
    "[[ -R 'a[$(touch marker)]' ]]",
    "printf -v 'a[$(touch marker)]' x",
    "printf -v'a[$(touch marker)]' x",
    "printf -- x; printf -v 'a[$(touch marker)]' x",
    "read 'a[$(touch marker)]' <<< x",
    "read -r 'a[$(touch marker)]' < victim.txt",
    "read -a 'a[$(touch marker)]' <<< x",
    "mapfile 'a[$(touch marker)]' < victim.txt",
    "readarray -t 'a[$(touch marker)]' < victim.txt",
    "getopts a 'a[$(touch marker)]'",
    "declare 'a[$(touch marker)]=1'",
    "declare -a 'a[$(touch marker)]'",
    "local_x=1; declare -n r='a[$(touch marker)]'; echo $r",
    "declare -i n; n='a[$(touch marker)]'",
    "typeset -i n; n='a[$(touch marker)]'",
    "let 'x=a[$(touch marker)]'",
    "let x=1 'y=a[$(touch marker)]'",
    "x='a[$(touch marker)]'; echo $((x))",
    "x='a[$(touch marker)]'; echo $(( x + 1 ))",
    "x='a[$(touch marker)]'; (( x ))",
    "x='a[$(touch marker)]'; [[ $x -eq 1 ]]",
    "x='a[$(touch marker)]'; [[ 1 -lt x ]]",
    "x='a[$(touch marker)]'; let y=x",
    "x='a[$(touch marker)]'; echo ${!x}",
    "x='a[$(touch marker)]'; echo ${a[x]}",
    "x='a[$(touch marker)]'; a[x]=1",
    "x='a[$(touch marker)]'; for ((i=x; i<1; i++)); do :; done",
    "x='a[$(touch marker)]'; echo ${y:x}",
    "x='a[$(touch marker)]'; echo ${y:0:x}",
    "x='a[$(touch marker)]'; [ $x ]",
    "read x < cmds.sh; echo $((x))",
    "read -r x <<< 'a[$(touch marker)]'; echo $((x))",
    "x=$(cat victim.txt); echo $((x))",
    "for x in 'a[$(touch marker)]'; do echo $((x)); done",
    "echo $(( a[$(touch marker)] ))",
    "(( a[$(touch marker)] ))",
    "echo $(( $(echo 'a[$(touch marker)]') ))",
    "echo $(( `echo 1` ))",
    "echo $(( 'a[$(touch marker)]' ))",
    "mapfile -t lines < victim.txt; echo $(( lines ))",
    "x=1; x='a[$(touch marker)]'; echo $((x))",
    "export x='a[$(touch marker)]'; echo $((x))",
    "declare x='a[$(touch marker)]'; echo $((x))",
    "printf -v x 'a[$(touch marker)]'; echo $((x))",
    "unset 'a[$(touch marker)]'",
]

PROGRAM_OPTIONS = [
    # awk: every option form before a program that runs or writes
    "awk -v x=1 'BEGIN{system(\"touch marker\")}'",
    "awk -vx=1 'BEGIN{system(\"touch marker\")}'",
    "awk -v x=1 -v y=2 'BEGIN{system(\"touch marker\")}'",
    "awk -F: 'BEGIN{system(\"touch marker\")}'",
    "awk -F : 'BEGIN{system(\"touch marker\")}'",
    "awk -F: -v a=b 'BEGIN{print > \"marker\"}'",
    "awk -- 'BEGIN{system(\"touch marker\")}'",
    "awk -W exec cmds.sh",
    "awk -Wexec cmds.sh",
    "awk -f cmds.sh victim.txt",
    "awk '{print | \"sh\"}' cmds.sh",
    "awk '{print > \"marker\"}' victim.txt",
    "awk 'BEGIN{printf \"x\" > \"marker\"}'",
    "awk 'BEGIN{print \"x\" >> \"marker\"}'",
    "awk 'BEGIN{\"touch marker\" | getline}'",
    "awk 'BEGIN { system (\"touch marker\") }'",
    "awk 'BEGIN{system(\"touch \" \"marker\")}'",
    "mawk 'BEGIN{system(\"touch marker\")}'",
    "mawk -v x=1 'BEGIN{system(\"touch marker\")}'",
    "/usr/bin/awk -vx=1 'BEGIN{system(\"touch marker\")}'",
    "p='BEGIN{system(\"touch marker\")}'; awk \"$p\"",
    "awk \"$(printf 'BEGIN{system(\\\"touch marker\\\")}')\"",
    # xargs: the command gets arguments from its input
    "echo -delete | xargs find . -name victim.txt",
    "printf '%s\\n' -exec touch marker ';' | xargs find . -maxdepth 0",
    "echo -fprint marker | xargs find . -maxdepth 0",
    "echo -o marker | xargs sort victim.txt",
    "echo --output=marker | xargs sort victim.txt",
    "echo victim.txt marker | xargs uniq",
    "echo marker | xargs -I{} sort -o {} victim.txt",
    "echo marker | xargs -I % sort -o % victim.txt",
    "echo marker | xargs tee < /dev/null",
    "echo marker | xargs -n1 touch",
    "echo victim.txt | xargs -r sed -i s/precious/gone/",
    "echo -i | xargs sed s/precious/gone/ victim.txt",
    "echo 'w marker' | xargs -0 sed -n",
    # uniq and xxd: an output operand
    "uniq - marker < victim.txt",
    "uniq victim.txt marker",
    "uniq -c victim.txt marker",
    "uniq -- victim.txt marker",
    "uniq -f 0 victim.txt marker",
    "uniq --skip-fields=0 victim.txt marker",
    "uniq -w 3 victim.txt marker",
    "xxd victim.txt marker",
    "xxd - marker < victim.txt",
    "xxd -r - marker < /dev/null",
    # pip: logging and other options that write
    "pip list --log marker",
    "pip3 list --log=marker",
    "pip freeze --log marker",
    "pip check --log marker",
    "python3 -m pip list --log marker",
    "pip list --log-file marker",
    "pip --log marker list",
    # find, sed, tee: writing forms
    "find . -maxdepth 0 -fprintf marker x",
    "find . -maxdepth 0 -fls marker",
    "find . -maxdepth 0 -fprint0 marker",
    "find . -newer victim.txt -o -fprint marker",
    "sed --expression='w marker' victim.txt",
    "sed -s -n 'w marker' victim.txt",
    "sed 'e touch marker' victim.txt",
    "sed -n '1{w marker\n}' victim.txt",
    "sed 's/p/q/;w marker' victim.txt",
    "sed -n p\\;w\\ marker victim.txt",
    "tee -a marker < /dev/null",
    "sort -omarker victim.txt",
    "sort -ro marker victim.txt",
    "sort --outp=marker victim.txt",
    "sort -k1 -o marker victim.txt",
]

# The workspace holds names/a[$(touch marker)], names/b;touch marker and names/$(touch marker):
# a loop's variable is a file name an attacker chose, so every context that reads it as code
# (arithmetic, a name bash evaluates, eval, sh -c, a pipe into a shell) must ask.
GLOB_LOOPS = [
    "for f in names/*; do echo $(( ${f#names/} )); done",
    "for f in names/*; do echo $(( $(basename \"$f\") )); done",
    "for f in names/*; do a=${f#names/}; echo $((a)); done",
    "for f in names/*; do [[ ${f#names/} -eq 1 ]]; done",
    "for f in names/*; do let \"x=${f#names/}\"; done",
    "for f in names/*; do (( ${f#names/} )); done",
    "for f in names/*; do test -v \"${f#names/}\"; done",
    "for f in names/*; do [[ -v ${f#names/} ]]; done",
    "for f in names/*; do printf -v \"${f#names/}\" x; done",
    "for f in names/*; do read \"${f#names/}\" <<< x; done",
    "for f in names/*; do declare \"${f#names/}=1\"; done",
    "for f in names/*; do eval \"${f#names/}\"; done",
    "for f in names/*; do eval \"$f\"; done",
    "for f in names/*; do bash -c \"echo ${f#names/}\"; done",
    "for f in names/*; do sh -c \"$f\"; done",
    "for f in names/*; do echo \"${f#names/}\" | sh; done",
    "for f in names/*; do awk \"BEGIN{print ${f#names/}}\"; done",
    "for f in names/*; do source \"$f\"; done",
    "for f in names/*; do . \"$f\"; done",
    "for f in names/*; do ${f#names/}; done",
    "for f in names/*; do \"$f\"; done",
    "for f in names/*; do trap \"${f#names/}\" EXIT; done",
    "for f in names/*; do env -S \"${f#names/}\"; done",
    "for f in names/*; do xargs -I{} sh -c '{}' <<< \"${f#names/}\"; done",
    "for f in names/*; do x=${f#names/}; echo ${!x}; done",
    "for f in names/*; do echo ${y:${f#names/}}; done",
]


def continuation_commands() -> dict[str, list[str]]:
    """Every spliced command, by the oracle that catches it."""
    deny_rm = [c for command, word in CONTINUATION_DENY_RM
               for c in continuations(command, word)] + CONTINUATION_EXTRA
    guard = [c for command, word in CONTINUATION_GUARD for c in continuations(command, word)]
    writes = [c for command, word in CONTINUATION_WRITES for c in continuations(command, word)]
    return {"deny_rm": deny_rm, "guard": guard, "writes": writes}
