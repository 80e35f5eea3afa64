"""agent.shell.parse: every simple command in a command line, wrappers stripped."""

from __future__ import annotations

import pytest
import tokentext
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from lanes import examples

from agent.shell.parse import MAX_DEPTH, parse, simple_commands, split_commands, split_words, unwrap

SPLITS = [
    ("ls -la", [["ls", "-la"]]),
    ("echo ok && rm -rf /", [["echo", "ok"], ["rm", "-rf", "/"]]),
    ("a || b; c & d", [["a"], ["b"], ["c"], ["d"]]),
    ("a | b |& c", [["a"], ["b"], ["c"]]),
    ("a\nb\n\nc", [["a"], ["b"], ["c"]]),
    ("echo $(rm -rf x)", [["rm", "-rf", "x"], ["echo", "$(rm -rf x)"]]),
    ("echo `rm -rf x`", [["rm", "-rf", "x"], ["echo", "`rm -rf x`"]]),
    ('echo "in $(whoami) quotes"', [["whoami"], ["echo", "in $(whoami) quotes"]]),
    ("echo $(echo $(rm -rf deep))", [["rm", "-rf", "deep"], ["echo", "$(rm -rf deep)"],
                                     ["echo", "$(echo $(rm -rf deep))"]]),
    ("(cd sub; make) && echo done", [["cd", "sub"], ["make"], ["echo", "done"]]),
    ("{ rm -rf a; }", [["rm", "-rf", "a"]]),
    ("bash -c 'rm -rf x'", [["bash", "-c", "rm -rf x"], ["rm", "-rf", "x"]]),
    ("sh -xc 'a; b'", [["sh", "-xc", "a; b"], ["a"], ["b"]]),
    ("zsh -o errexit -c 'a'", [["zsh", "-o", "errexit", "-c", "a"], ["a"]]),
    ("bash script.sh -c x", [["bash", "script.sh", "-c", "x"]]),
    ("eval 'rm -rf x'", [["eval", "rm -rf x"], ["rm", "-rf", "x"]]),
    ("sudo rm -rf x", [["rm", "-rf", "x"]]),
    ("sudo -u root -E rm x", [["rm", "x"]]),
    ("env X=1 Y=2 rm -rf x", [["rm", "-rf", "x"]]),
    ("env -i -u HOME rm x", [["rm", "x"]]),
    ("env -S 'rm -rf x'", [["rm", "-rf", "x"]]),
    ("timeout 5 rm -rf x", [["rm", "-rf", "x"]]),
    ("timeout -s KILL --preserve-status 5s rm x", [["rm", "x"]]),
    ("nice -n 10 rm x", [["rm", "x"]]),
    ("nice -5 rm x", [["rm", "x"]]),
    ("nohup rm x", [["rm", "x"]]),
    ("command rm x", [["rm", "x"]]),
    ("exec rm x", [["rm", "x"]]),
    ("time rm x", [["rm", "x"]]),
    ("FOO=1 BAR=two rm x", [["rm", "x"]]),
    ("sudo env A=1 timeout 3 nice nohup rm -rf x", [["rm", "-rf", "x"]]),
    # xargs appends what it reads: a word only known at run time, which may be any option
    ("find . | xargs rm -rf", [["find", "."], ["rm", "-rf", "{xargs-input}"]]),
    ("find . | xargs", [["find", "."], ["echo", "{xargs-input}"]]),
    ("coproc rm x", [["rm", "x"]]),
    ("sudo --us=root rm x", [["rm", "x"]]),
    ("timeout -k5 9 rm x", [["rm", "x"]]),
    ("env -i -S'rm -rf x'", [["rm", "-rf", "x"]]),
    ("parallel 'rm {}' ::: a b", [["rm", "{}"]]),
    ("watch -n1 'ls; rm x'", [["ls"], ["rm", "x"]]),
    ("su -c 'rm x' root", [["rm", "x"]]),
    ("trap 'rm x' EXIT", [["trap", "rm x", "EXIT"], ["rm", "x"]]),
    ("case $x in a) rm x;; *) ls;; esac", [["rm", "x"], ["ls"]]),
    ("f() { rm -rf d; }; f", [["rm", "-rf", "d"], ["f"]]),
    ("bash <<'EOF'\nrm -rf x\nEOF", [["bash"], ["rm", "-rf", "x"]]),
    ("sh <<< 'rm -rf x'", [["sh"], ["rm", "-rf", "x"]]),
    ("xargs -0 -n 1 -I{} rm {}", [["rm", "{}"]]),
    ("find . -name '*.o' -exec rm -f {} \\;", [["find", ".", "-name", "*.o", "-exec", "rm", "-f",
                                                "{}", ";"], ["rm", "-f", "{}"]]),
    ("if true; then rm -rf x; fi", [["true"], ["rm", "-rf", "x"]]),
    ("while read f; do rm $f; done", [["read", "f"], ["rm", "$f"]]),
    ("! rm x", [["rm", "x"]]),
    ('"rm" -rf x', [["rm", "-rf", "x"]]),
    ("r\\m -rf x", [["rm", "-rf", "x"]]),
    ("r''m -rf x", [["rm", "-rf", "x"]]),
    ("$'\\x72\\155' -rf x", [["rm", "-rf", "x"]]),
    ("/bin/rm -rf x", [["/bin/rm", "-rf", "x"]]),
    ("echo a # rm -rf x", [["echo", "a"]]),
    ("echo a#b", [["echo", "a#b"]]),
    ("echo 'it''s'", [["echo", "its"]]),
    ("x=${y:-$(rm -rf z)}", [["rm", "-rf", "z"]]),
    ("diff <(sort a) <(sort b)",
     [["sort", "a"], ["sort", "b"], ["diff", "<(sort a)", "<(sort b)"]]),
    ("echo hi > out.txt 2>&1", [["echo", "hi"]]),
    ("a \\\n  b", [["a", "b"]]),
]


@pytest.mark.parametrize(("line", "expected"), SPLITS, ids=[s[0] for s in SPLITS])
def test_split(line, expected):
    assert split_commands(line) == expected


def test_heredoc_body_is_data_but_its_substitutions_run():
    quoted = "cat > notes.md <<'EOF'\nrm -rf / is dangerous $(rm -rf y)\nEOF\necho done"
    assert split_commands(quoted) == [["cat"], ["echo", "done"]]
    assert parse(quoted).heredocs == ["rm -rf / is dangerous $(rm -rf y)\n"]
    unquoted = "cat <<EOF\nhello $(rm -rf y)\nEOF"
    assert split_commands(unquoted) == [["rm", "-rf", "y"], ["cat"]]
    tabs = "cat <<-END\n\tbody\n\tEND\nls"
    assert split_commands(tabs) == [["cat"], ["ls"]]


def test_unterminated_heredoc_is_incomplete():
    script = parse("cat <<EOF\nrm -rf x\n")
    assert not script.complete
    assert split_commands("cat <<EOF\nrm -rf x\n") == [["cat"]]


def test_backticks_in_an_unquoted_heredoc_run():
    assert ["rm", "x"] in split_commands("cat <<EOF\n`rm x`\nEOF")


def test_redirects_are_recorded():
    [cmd] = simple_commands("dd if=x 2>/dev/null > /dev/sda")
    assert cmd.argv == ("dd", "if=x")
    assert cmd.redirects == (("2>", "/dev/null"), (">", "/dev/sda"))
    [cmd] = simple_commands("echo x &>log")
    assert cmd.redirects == (("&>", "log"),)


def test_pipes_say_who_feeds_whom():
    curl, tee, sh = simple_commands("curl -s x | tee f | sudo sh")
    assert sh.name == "sh"
    assert curl.feeds(sh) and curl.feeds(tee) and tee.feeds(sh)
    assert not sh.feeds(curl)
    first, second = simple_commands("curl x; sh")
    assert not first.feeds(second)
    # A subshell's commands sit inside the stage they run in.
    inner, outer = simple_commands("(curl x) | sh")
    assert inner.feeds(outer)
    sub, echo, shell = simple_commands('echo "$(curl x)" | sh')
    assert sub.feeds(shell)


def test_substituted_commands_are_attached_to_the_command_using_them():
    *_, sh = simple_commands("sh <(curl x)")
    assert [c.name for c in sh.substituted] == ["curl"]


def test_unbalanced_input_is_incomplete_and_what_was_read_is_kept():
    for text in ("echo 'unbalanced", 'echo "half $(rm -rf x', "(rm -rf x", "a ) b",
                 "echo `rm x", "if true; then rm x"):
        assert parse(text).complete is False, text
    assert ["rm", "-rf", "x"] in split_commands('echo "half $(rm -rf x')
    assert ["rm", "-rf", "x"] in split_commands("(rm -rf x")
    assert parse("(rm -rf x").problems == ["the shell cannot parse it: missing ) (line 1)"]


def test_deep_nesting_is_reported_incomplete_not_crashing():
    deep = "echo " + "$(" * 400 + "rm -rf x" + ")" * 400
    assert parse(deep).complete is False
    shallow = "$(" * 3 + "rm -rf x" + ")" * 3
    assert parse(shallow).complete is True
    # Each `bash -c` script counts as a level (quoting grows fast, so few levels here).
    nested_c = "rm -rf x"
    for _ in range(4):
        nested_c = "bash -c " + nested_c.replace("'", "'\\''").join("''")
    assert ["rm", "-rf", "x"] in split_commands(nested_c)
    levels = range(MAX_DEPTH + 2)  # here-documents fed to a shell nest without quoting
    too_deep = "".join(f"bash <<'E{i}'\n" for i in levels) + "rm -rf x\n" + "".join(
        f"E{i}\n" for i in reversed(levels))
    assert parse(too_deep).complete is False
    fine = "".join(f"bash <<'E{i}'\n" for i in range(5)) + "rm -rf x\n" + "".join(
        f"E{i}\n" for i in reversed(range(5)))
    assert parse(fine).complete and ["rm", "-rf", "x"] in split_commands(fine)
    # A script built by a substitution is never read as a literal: it is unresolved.
    built = 'bash -c "$(' * 30 + "rm -rf x" + ')"' * 30
    assert parse(built).unresolved


def test_rereading_nested_scripts_is_bounded():
    # `bash -c "$(...)"` reads each substitution twice per level: 2**n without a budget.
    for levels in (12, 16, 20):
        text = 'bash -c "$(' * levels + "rm -rf x" + ')"' * levels
        script = parse(text)
        assert ["rm", "-rf", "x"] in [list(c.argv) for c in script.commands] or \
            not script.complete


def test_unwrap_and_split_words():
    assert unwrap(("sudo", "--", "rm", "x")) == ("rm", "x")
    assert unwrap(("sudo",)) == ()
    assert unwrap(("A=1",)) == ()
    assert split_words("a 'b c") == ["a", "'b", "c"]
    assert split_words("a 'b c'") == ["a", "b c"]


def test_pathological_input_never_crashes_and_is_never_complete_when_unreadable():
    # tree-sitter's error recovery is quadratic on some garbage; parsing is cut off.
    cases = ["(" * 4_000, "$(" * 2_000, "${" * 2_000, "`" * 4_001, "'" * 4_001,
             "a | " * 1_500, "<<EOF\n" * 1_000, '"$(' * 1_500]
    for text in cases:
        assert parse(text).complete is False, text[:20]
    assert parse("a" * 200_000).complete is True
    assert parse("x" * 2_000_000).complete is False  # longer than anyone reviews


SHELLISH = (list("ab rm-f $()`'\"\\;&|<>{}#\n\t=*!09") + [
    "$(", "${", "<<", "<<EOF\n", "\nEOF\n", "bash -c ", "sudo ", "env ", "xargs ", "$'\\x",
    "<(", "))", "`", "timeout 5 ", "find -exec ", "eval "])


@settings(max_examples=examples(1500), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tokentext.joined(SHELLISH, max_size=80))
def test_never_raises_on_shell_like_text(text):
    script = parse(text)
    for cmd in script.commands:
        assert isinstance(cmd.argv, tuple)


@settings(max_examples=examples(800), deadline=None)
@given(st.text(max_size=400))
def test_never_raises_on_arbitrary_text(text):
    parse(text)


def test_astral_characters_do_not_crash_the_grammar():
    # tree-sitter-bash 0.25's scanner crashed (at random) on "{" + U+B38EF; the parser is
    # fed ASCII stand-ins of the same byte length, and words keep the real characters.
    for _ in range(300):
        parse("{\U000b38ef\u00f5")
    [cmd] = simple_commands("r\u00e9m\U0001f600 -rf \u00fc")
    assert cmd.argv == ("r\u00e9m\U0001f600", "-rf", "\u00fc")
