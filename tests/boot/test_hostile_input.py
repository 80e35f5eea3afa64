"""Hostile input, property-based: whatever a model, a config file, an environment variable or
a terminal throws at the parsers and encoders, they answer with a value or their own clear
error, never another exception, never a hang.

- the JSON event encoder and both headless printers (lone surrogates included);
- the config loader: random TOML-ish bytes, environment values and in-place updates;
- tool-argument validation against every installed tool's schema, and each tool's effects;
- the markdown renderer at several widths.

Paths, permission rules, registry manifests and patches are in test_hostile_paths.py.
"""

from __future__ import annotations

import io
import json
import string
from itertools import zip_longest
from pathlib import Path

import jsonschema
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from lanes import examples

from agent.boot.config import ConfigError, Paths, build, read_toml, update_file
from agent.boot.headless import JsonPrinter, TextPrinter
from agent.boot.headless_result import TurnRecord
from agent.contract import events as ev
from agent.contract.tools import Effects, ToolError
from agent.contract.validate import check_arguments, parse_arguments

ROOT = Path(__file__).resolve().parents[2]
SCHEMA = jsonschema.Draft202012Validator(
    json.loads((ROOT / "docs" / "events.schema.json").read_text()))
FAST = settings(max_examples=examples(100), deadline=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture,
                                       HealthCheck.too_slow])

#: Characters that break naive encoders: lone surrogates (both halves, surrogateescape
#: bytes), a valid pair split into code points, NUL, line separators, BOM, wide and
#: combining characters.
NASTY = "\ud800\udbff\udc00\udfff\udcff\udc80\ud83d\ude00\x00\n\r\u2028\u2029\ufeff世\u0301\x1b"
ANY_CHAR = st.characters(exclude_categories=())  # every code point, surrogates (Cs) included
NASTY_CHAR = st.characters(categories=(), include_characters=NASTY)


def weave(texts: tuple[str, str]) -> str:
    """The characters of both texts, alternating, then the rest of the longer one."""
    plain, nasty = texts
    return "".join(a + b for a, b in zip_longest(plain, nasty, fillvalue=""))


#: Up to 60 characters, about half of them from NASTY: woven one by one between any other
#: code points, or as one run amid them (a split surrogate pair next to its other half).
#: Built from two texts of one character class each rather than a text of
#: ``one_of(characters, sampled_from(NASTY))``: hypothesis draws a single-class text in one
#: step, but builds and validates a new strategy for every character drawn through a
#: ``one_of``, which made each text three times as expensive (1.7 s against 0.5 s of CPU
#: for 300 texts) and was most of what this module's examples cost.
ANY_TEXT = st.one_of(
    st.tuples(st.text(ANY_CHAR, max_size=30), st.text(NASTY_CHAR, max_size=30)).map(weave),
    st.tuples(st.text(ANY_CHAR, max_size=20), st.text(NASTY_CHAR, max_size=20),
              st.text(ANY_CHAR, max_size=20)).map("".join))


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """Every installed plugin, booted once: its options and its tools."""
    from agent.testing import make_boot

    tmp = tmp_path_factory.mktemp("installed")
    (tmp / "ws").mkdir()
    config, hooks = make_boot(tmp / "ws", tmp / "home")
    tools = hooks.tools(config)
    yield config, hooks, tools
    hooks.unconfigure(config)


# ---- the JSON event encoder --------------------------------------------------------------------


def json_values(text=ANY_TEXT):
    return st.recursive(
        st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False,
                                                               allow_infinity=False) | text,
        lambda inner: st.lists(inner, max_size=4) | st.dictionaries(text, inner, max_size=4),
        max_leaves=12)


#: Built once: hypothesis validates a strategy object on its first draw, so one built inside
#: a test body is validated anew in every example, which cost more than the draw itself
#: (``from_schema`` below draws thousands per run).
JSON_VALUES = json_values()
TOKENS = st.none() | st.integers(0, 10**9)
EVENT_STRATEGIES = {
    ev.TextEvent: st.builds(ev.TextEvent, ANY_TEXT),
    ev.ReasoningEvent: st.builds(ev.ReasoningEvent, ANY_TEXT),
    ev.ToolStartEvent: st.builds(ev.ToolStartEvent, ANY_TEXT, ANY_TEXT),
    ev.ToolCallEvent: st.builds(ev.ToolCallEvent, ANY_TEXT, ANY_TEXT,
                                st.dictionaries(ANY_TEXT, json_values(), max_size=4),
                                st.sampled_from(["model", "user", ""]) | ANY_TEXT),
    ev.ToolOutputEvent: st.builds(ev.ToolOutputEvent, ANY_TEXT, ANY_TEXT),
    ev.ToolResultEvent: st.builds(ev.ToolResultEvent, ANY_TEXT, ANY_TEXT, ANY_TEXT,
                                  st.none() | ANY_TEXT),
    ev.ToolErrorEvent: st.builds(ev.ToolErrorEvent, ANY_TEXT, ANY_TEXT, ANY_TEXT),
    ev.ToolDeniedEvent: st.builds(ev.ToolDeniedEvent, ANY_TEXT, ANY_TEXT, ANY_TEXT,
                                  st.sampled_from(["guard", "rule", "user", "headless"])),
    ev.CompactedEvent: st.builds(ev.CompactedEvent, st.integers(0, 10**6),
                                 st.integers(0, 10**6)),
    ev.NoticeEvent: st.builds(ev.NoticeEvent, ANY_TEXT),
    ev.ErrorEvent: st.builds(ev.ErrorEvent, ANY_TEXT,
                             st.sampled_from(["provider", "budget", "internal"]),
                             st.none() | st.integers(100, 599)),
    ev.SaveFailedEvent: st.builds(ev.SaveFailedEvent, ANY_TEXT, st.integers(0, 10**6),
                                  ANY_TEXT),
    ev.SessionForkedEvent: st.builds(ev.SessionForkedEvent, ANY_TEXT, ANY_TEXT, st.booleans()),
    ev.DoneEvent: st.builds(ev.DoneEvent,
                            st.sampled_from(["end", "max_steps", "error", "interrupted",
                                             "budget"]),
                            TOKENS, TOKENS, TOKENS,
                            st.none() | st.floats(0, 1000, allow_nan=False),
                            st.integers(0, 1000)),
}


class _Ran:
    """What a result reads of the session it reports on."""

    id = "0193a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b"


def result_event(done: ev.DoneEvent, answer: str, denied: ev.ToolDeniedEvent | None,
                 code: int, files: list[str]) -> ev.ResultEvent:
    record = TurnRecord()
    for event in (denied, ev.TextEvent(answer), done):
        if event is not None:
            record.see(event)
    return record.build(_Ran(), code, done.cost_usd, files)


EVENT_STRATEGIES[ev.InitEvent] = st.builds(
    ev.InitEvent, ANY_TEXT.filter(bool), ANY_TEXT, ANY_TEXT, st.lists(ANY_TEXT, max_size=4),
    st.sampled_from(["default", "accept-edits", "plan"]))
EVENT_STRATEGIES[ev.ResultEvent] = st.builds(
    result_event, EVENT_STRATEGIES[ev.DoneEvent], ANY_TEXT,
    st.none() | EVENT_STRATEGIES[ev.ToolDeniedEvent], st.integers(0, 255),
    st.lists(ANY_TEXT, max_size=3))
EVENTS = st.one_of(*EVENT_STRATEGIES.values())


def strict_utf8() -> io.TextIOWrapper:
    """A stdout as a UTF-8 terminal gives it: encoding errors raise."""
    return io.TextIOWrapper(io.BytesIO(), encoding="utf-8", errors="strict", newline="\n")


def written(stream: io.TextIOWrapper) -> bytes:
    stream.flush()
    return stream.buffer.getvalue()  # type: ignore[attr-defined]


def test_every_event_type_is_covered():
    assert set(EVENT_STRATEGIES) == set(ev.EVENT_TYPES.values())


@FAST
@given(event=EVENTS)
def test_every_event_is_one_line_of_valid_json(event):
    line = event.to_line()
    assert "\n" not in line and "\r" not in line
    data = json.loads(line.encode("utf-8"))  # encodable, and parses as UTF-8 JSON
    assert data["type"] == event.type and data["schema_version"] == ev.SCHEMA_VERSION
    SCHEMA.validate(data)
    out = strict_utf8()
    JsonPrinter(out)(event)
    raw = written(out)
    assert raw.count(b"\n") == 1 and raw.endswith(b"\n")
    assert json.loads(raw) == data


@FAST
@given(event=EVENTS)
def test_plain_printer_never_fails_on_a_utf8_terminal(event):
    out, err = strict_utf8(), strict_utf8()
    TextPrinter(out, err)(event)
    written(out).decode("utf-8")
    written(err).decode("utf-8")


def test_valid_text_survives_the_encoder_unchanged():
    event = ev.TextEvent("naïve 世界 😀 \u2028 done")
    assert json.loads(event.to_line())["text"] == event.text
    lone = ev.ToolResultEvent("c1", "list_dir", "caf\udce9.txt \ud800 \ud83d\ude00")
    assert json.loads(lone.to_line())["output"] == "caf\ufffd.txt \ufffd 😀"


# ---- the config loader ---------------------------------------------------------------------------

TOML_ALPHABET = string.ascii_letters + string.digits + " =\"'[]{}.,#\n\t-_+:\\" + "é世\x00\x7f"
KEYS = ["provider", "model", "max_steps", "max_retries", "retry_after_cap", "request_timeout",
        "thinking", "yolo", "tool_sets", "permission", "plugins", "mcp_servers", "keys",
        "unknown_key", "max_spend_usd", "colors", "reasoning_efforts"]
TOML_VALUES = st.recursive(
    st.booleans() | st.integers(-2**63, 2**63 - 1) | st.floats(allow_nan=True)
    | st.text(max_size=20) | st.sampled_from(["off", "max", "openai", "core", "allow", ""]),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner,
                                                                  max_size=3),
    max_leaves=6)


def toml_documents():
    import tomlkit

    structured = st.dictionaries(st.sampled_from(KEYS), TOML_VALUES, max_size=6).map(
        lambda d: tomlkit.dumps(d).encode("utf-8", "surrogatepass"))
    soup = st.text(TOML_ALPHABET, max_size=200).map(lambda t: t.encode("utf-8"))
    lines = st.lists(st.sampled_from([
        "[permission]", "[plugins]", "max_steps = 3", "max_steps = \"many\"", "yolo = yes",
        "model = ", "x = [1, 2", "[[a]]", "a.b.c = 1", "a = { b = 1 }", '"q" = 1',
        "tool_sets = \"core,git\"", "[mcp_servers.x]", "command = 5", "\ufeffmodel = \"m\"",
        "provider = \"openai\"", "permission = 3", "thinking = \"sometimes\"", "max_steps = 1e9",
    ]), max_size=8).map(lambda ls: "\n".join(ls).encode())
    return st.one_of(structured, soup, lines, st.binary(max_size=120))


@settings(max_examples=examples(200), deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(raw=toml_documents())
def test_any_config_file_gives_a_config_or_an_error_naming_the_file(installed, tmp_path, raw):
    config, _, _ = installed
    home = tmp_path / "cfg"
    home.mkdir(exist_ok=True)
    path = home / "config.toml"
    path.write_bytes(raw)
    paths = Paths(config_dir=home, state_dir=home / "state", home=home)
    try:
        data = read_toml(path)
        built = build(paths, config.options, data, {}, env={}, workspace=tmp_path)
    except ConfigError as exc:
        assert str(path) in str(exc), str(exc)
        assert "Traceback" not in str(exc)
        return
    for option in config.options:  # every known key came out with its declared type
        value = built.get(option.key)
        if option.type == "int" and value is not None:
            assert isinstance(value, int) and not isinstance(value, bool)
        if option.type in ("int", "float") and value is not None:
            assert value == value  # never NaN
            if option.minimum is not None:
                assert value >= option.minimum, (option.key, value)
        if option.choices and option.key in built.file_data:
            assert value in option.choices


@pytest.mark.parametrize("line,key,why", [
    ("max_retries = -1", "max_retries", "must be at least 0, got -1"),
    ("request_timeout = 0", "request_timeout", "must be at least 0.1, got 0.0"),
    ("request_timeout = nan", "request_timeout", "must be a number, got nan"),
    ("max_steps = 0", "max_steps", "must be at least 1, got 0"),
    ("max_tokens = -5", "max_tokens", "must be at least 1, got -5"),
    ("retry_after_cap = -1.5", "retry_after_cap", "must be at least 0, got -1.5"),
])
def test_numbers_out_of_range_are_refused_by_name(installed, tmp_path, line, key, why):
    # Unchecked, these surfaced mid-turn as "RuntimeError: could not resolve response",
    # instant timeouts, or "stopped after -3 steps".
    config, _, _ = installed
    path = tmp_path / "config.toml"
    path.write_text(line + "\n")
    paths = Paths(config_dir=tmp_path, state_dir=tmp_path / "state", home=tmp_path)
    with pytest.raises(ConfigError) as info:
        build(paths, config.options, read_toml(path), {}, env={}, workspace=tmp_path)
    assert str(info.value) == f"{path}: '{key}' {why}"


def test_a_flag_out_of_range_names_the_flag(installed, tmp_path):
    config, _, _ = installed
    paths = Paths(config_dir=tmp_path, state_dir=tmp_path / "state", home=tmp_path)
    with pytest.raises(ConfigError) as info:
        build(paths, config.options, {}, {"max_steps": "0"}, env={}, workspace=tmp_path)
    assert str(info.value) == "--max-steps: 'max_steps' must be at least 1, got 0"


ENV_OPTIONS = ["AGENT_MAX_STEPS", "AGENT_THINK", "AGENT_PROVIDER", "AGENT_OPENAI_API",
               "AGENT_SEND_REASONING", "AGENT_MODEL"]


@FAST
@given(env=st.dictionaries(st.sampled_from(ENV_OPTIONS), ANY_TEXT.filter(lambda s: "\x00" not in s),
                           max_size=4))
def test_any_environment_gives_a_config_or_an_error_naming_the_variable(installed, tmp_path,
                                                                       env):
    config, _, _ = installed
    paths = Paths(config_dir=tmp_path, state_dir=tmp_path / "state", home=tmp_path)
    try:
        build(paths, config.options, {}, {}, env=env, workspace=tmp_path)
    except ConfigError as exc:
        assert any(f"${name}" in str(exc) for name in env), str(exc)


@settings(max_examples=examples(80), deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(raw=toml_documents(), value=st.text(max_size=30))
def test_updating_any_config_file_keeps_it_readable(tmp_path, raw, value):
    path = tmp_path / "config.toml"
    path.write_bytes(raw)
    try:
        update_file(path, {"model": value, "plugins.disabled": ["time"]})
    except ConfigError as exc:
        assert str(path) in str(exc)
        assert path.read_bytes() == raw  # a file it cannot parse is left as it was
        return
    data = read_toml(path)
    assert data["model"] == value and data["plugins"]["disabled"] == ["time"]


# ---- tool arguments ------------------------------------------------------------------------------


@FAST
@given(raw=st.one_of(ANY_TEXT, json_values().map(json.dumps),
                     st.text("{}[]\":,0123456789.eEtrufalsn \\", max_size=40)))
def test_argument_text_parses_to_an_object_or_a_tool_error(raw):
    try:
        value = parse_arguments("some_tool", raw)
    except ToolError as exc:
        assert "some_tool" in str(exc)
        return
    assert isinstance(value, dict)


PATHLIKE_WORDS = st.sampled_from(["", ".", "..", "../x", "/etc/passwd", "a/b.txt", "*",
                                  "**/*.py", "\\", "~", "-rf", "$(x)"])
_strings: dict[int, st.SearchStrategy] = {}
_enums: dict[str, st.SearchStrategy] = {}


def schema_strings(min_length: int) -> st.SearchStrategy:
    """Text for a string of at least ``min_length`` characters, or a path-like word; one
    strategy per length, built on first use (see JSON_VALUES for why)."""
    if min_length not in _strings:
        _strings[min_length] = st.one_of(ANY_TEXT.filter(lambda s: len(s) >= min_length),
                                         PATHLIKE_WORDS)
    return _strings[min_length]


def schema_enum(values: list) -> st.SearchStrategy:
    key = json.dumps(values, sort_keys=True)
    if key not in _enums:
        _enums[key] = st.sampled_from(values)
    return _enums[key]


def from_schema(schema: dict, draw, depth: int = 0):
    """A value shaped like ``schema`` (loosely: types, enums, required keys, bounds), or
    now and then a wrong one, so both sides of validation get exercised."""
    if draw(st.integers(0, 9)) == 0 or depth > 3:
        return draw(JSON_VALUES)
    if "enum" in schema:
        return draw(schema_enum(schema["enum"]))
    kind = schema.get("type", "object")
    if isinstance(kind, list):
        kind = draw(st.sampled_from(kind))
    if kind == "object":
        props = schema.get("properties", {})
        required = set(schema.get("required", []))
        out = {}
        for name, sub in props.items():
            if name in required or draw(st.booleans()):
                out[name] = from_schema(sub, draw, depth + 1)
        return out
    if kind == "array":
        return [from_schema(schema.get("items", {}), draw, depth + 1)
                for _ in range(draw(st.integers(0, 3)))]
    if kind == "integer":
        lo, hi = schema.get("minimum", -10**6), schema.get("maximum", 10**6)
        return draw(st.integers(lo, hi))
    if kind == "number":
        return draw(st.floats(-1e6, 1e6, allow_nan=False))
    if kind == "boolean":
        return draw(st.booleans())
    if kind == "string":
        return draw(schema_strings(schema.get("minLength", 0)))
    return draw(JSON_VALUES)


@settings(max_examples=examples(300), deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(data=st.data())
def test_any_arguments_to_any_tool_validate_or_fail_clearly(installed, data):
    _, _, tools = installed
    tool = tools[data.draw(st.sampled_from(sorted(tools)))]
    args = from_schema(tool.parameters, data.draw)
    if not isinstance(args, dict):
        args = {"value": args}
    try:
        check_arguments(tool, args)
    except ToolError as exc:
        assert str(exc).startswith(f"Invalid arguments for {tool.name}:")
        return
    # Valid by the schema: the gate needs its effects, and must get them or a ToolError.
    try:
        effects = tool.effects(args)
    except ToolError:
        return
    assert isinstance(effects, Effects)
    for path in effects.reads + effects.writes + effects.deletes:
        assert isinstance(path, str)


# ---- the markdown renderer -----------------------------------------------------------------------

MARKDOWN = st.lists(st.one_of(
    st.sampled_from(["# ", "## ", "- ", "* ", "1. ", "> ", "```", "```py\n", "~~~", "---",
                     "| a | b |\n|---|---|\n| 1 | 2 |", "- [ ] ", "- [x] ", "**", "_", "`",
                     "~~", "[link](http://x)", "![img](y)", "\n", "\n\n", "    ", "\t", "<b>",
                     "&amp;", "\\", "snake_case_name", "世界", "😀", "\u0301", "\x1b[31m",
                     "\ud800"]),
    st.text(max_size=15)), max_size=40).map("".join)


@settings(max_examples=examples(120), deadline=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(text=MARKDOWN)
def test_any_text_renders_at_every_width(text):
    markdown = pytest.importorskip("plugins_builtin.markdown")
    from agent.ui import textlayout

    textlayout.install()  # the layout every Text gets in the app (agent/ui/app.py)
    for width in (1, 2, 7, 40, 120):
        canvas = markdown.render(text).render((width,))
        assert all(len(row) >= 0 for row in canvas.text)
        assert canvas.cols() == width


def test_a_long_hostile_answer_renders_at_the_width_asked():
    # How long it takes, against plain prose of the same length: bench/pathological_input.py.
    markdown = pytest.importorskip("plugins_builtin.markdown")
    nasty = ("*" * 5000 + "_" * 5000 + "`" * 3000 + "[" * 3000 + "> " * 2000 + "\n"
             + "| a " * 500 + "|\n" + "|---" * 500 + "|\n" + "- " * 2000 + "x")
    canvas = markdown.render(nasty).render((80,))
    assert canvas.cols() == 80 and canvas.rows() > 0


def test_updating_a_file_without_a_final_newline(tmp_path):
    # tomlkit wrote the new key straight after the last line: 'a.b.c = 1model = "m"'.
    path = tmp_path / "config.toml"
    path.write_bytes(b"a.b.c = 1")
    update_file(path, {"model": "m", "plugins.disabled": ["time"]})
    assert read_toml(path) == {"a": {"b": {"c": 1}}, "model": "m",
                               "plugins": {"disabled": ["time"]}}


@pytest.mark.parametrize("content,expected", [
    (b'model = "caf\xe9"\n', "cannot be read"),
    (b"plugins = 3\n", "'plugins' is not a table"),
    (b"[[plugins]]\nname = 1\n", "'plugins' is not a table"),
])
def test_plugins_disable_on_a_config_it_cannot_update(tmp_path, monkeypatch, capsys, content,
                                                      expected):
    from agent.boot.cli import main

    monkeypatch.setenv("AGENT_HOME", str(tmp_path))
    (tmp_path / "config.toml").write_bytes(content)
    assert main(["plugins", "disable", "time"]) == 2
    err = capsys.readouterr().err
    assert expected in err and str(tmp_path / "config.toml") in err
    assert (tmp_path / "config.toml").read_bytes() == content
