"""The SSE splitter the providers read their streams with: every line ending, any chunking
(a split at every byte offset), comments, multi-line data, event names, and the one rule for
malformed events (the good events before a bad one still come out)."""

from __future__ import annotations

import json

import pytest

from agent.lib.sse import DONE, MalformedStream, SSESplitter

#: A stream using every line ending, comments, fields that mean nothing to a model, data
#: over two lines, a bare ``data`` line (an empty data line), an event without data, UTF-8,
#: and the end marker.
STREAM = (b'event: a\r\ndata: {"x": 1}\r\n\r\n'
          b': keep-alive\n\n'
          b'event: b\rdata: [1,\rdata: 2]\r\r'
          b'id: 7\nretry: 10\ndata:{"no": "space"}\n\n'
          b'event: lonely\n\n'
          b'data: "caf\xc3\xa9 \xe2\x9c\x93"\r\n\r\n'
          b'data\ndata: {"after": "an empty data line"}\n\n'
          b'data: [DONE]\n\n')

EXPECTED = [("a", {"x": 1}), ("b", [1, 2]), (None, {"no": "space"}),
            (None, "caf\u00e9 \u2713"), (None, {"after": "an empty data line"}), (None, DONE)]


def split(stream: bytes, cuts: list[int], named: bool = False) -> tuple[list, SSESplitter]:
    splitter = SSESplitter(named)
    events: list = []
    bounds = [0, *cuts, len(stream)]
    for start, end in zip(bounds, bounds[1:], strict=False):
        events += splitter.feed(stream[start:end])
    return events, splitter


def test_the_stream_in_one_read():
    events, splitter = split(STREAM, [])
    assert events == EXPECTED and splitter.error is None


def test_a_split_at_every_byte_offset_gives_the_same_events():
    for cut in range(1, len(STREAM)):
        events, splitter = split(STREAM, [cut])
        assert events == EXPECTED, cut
        assert splitter.error is None, cut


def test_two_splits_at_many_pairs_of_offsets_and_one_byte_reads():
    for first in range(1, len(STREAM), 3):
        for second in range(first + 1, len(STREAM), 5):
            events, _ = split(STREAM, [first, second])
            assert events == EXPECTED, (first, second)
    events, _ = split(STREAM, list(range(1, len(STREAM))))
    assert events == EXPECTED


def test_an_event_goes_out_as_soon_as_its_blank_line_arrives():
    splitter = SSESplitter()
    assert splitter.feed(b'data: {"a": 1}\r\n') == []
    # A CR that ends the read: the event is complete at once, not when the next byte comes.
    assert splitter.feed(b"\r") == [(None, {"a": 1})]
    # ... and the LF that was the other half of that CRLF is not a second blank line.
    assert splitter.feed(b'\ndata: {"b": 2}\n') == []
    assert splitter.feed(b"\n") == [(None, {"b": 2})]


def test_an_event_name_does_not_leak_into_the_next_event():
    events, _ = split(b"event: ping\n\ndata: {}\n\n", [])
    assert events == [(None, {})]


def test_a_long_line_over_many_reads():
    value = {"text": "x" * 200_000}
    stream = b"data: " + json.dumps(value).encode() + b"\n\n"
    events, _ = split(stream, list(range(1000, len(stream), 1000)))
    assert events == [(None, value)]


@pytest.mark.parametrize("bad, why", [
    (b"data: {this is not json\n\n", "an event whose data is not JSON: data: {this is not json"),
    (b'dta: {"oops": 1}\n\n', 'a line that is not an SSE field: dta: {"oops": 1}'),
    (b"data: \xff\xfe\n\n", "an event whose data is not JSON: data: \ufffd\ufffd"),
    (b"data:\n\n", "an event whose data is not JSON: data: "),
])
def test_a_bad_event_stops_the_stream_after_the_good_ones(bad, why):
    good = b'event: e\ndata: {"n": 1}\n\n'
    later = b'data: {"n": 2}\n\n'
    for cut in range(0, len(good + bad) + 1):
        stream = good + bad + later
        events, splitter = split(stream, [cut] if 0 < cut < len(stream) else [])
        assert events == [("e", {"n": 1})], cut  # the good one, never the one after
        assert isinstance(splitter.error, MalformedStream)
        assert str(splitter.error) == why
    assert splitter.feed(later) == []  # nothing is read after the error


def test_named_events_need_their_name():
    splitter = SSESplitter(named=True)
    assert splitter.feed(b'event: message_start\ndata: {"type": "message_start"}\n\n') == [
        ("message_start", {"type": "message_start"})]
    assert splitter.feed(b'data: {"type": "content_block_delta", "index": 0}\n\n') == []
    assert str(splitter.error) == ('an event without an event: line: data: {"type": '
                                   '"content_block_delta", "index": 0}')


def test_the_offending_line_is_clipped():
    splitter = SSESplitter()
    splitter.feed(b"data: {" + b"y" * 500 + b"\n\n")
    assert splitter.error is not None
    assert splitter.error.line == "data: {" + "y" * 73 + "..."


def test_comments_and_blank_lines_alone_make_no_events():
    events, splitter = split(b": ping\n\n:\n\n\n\r\n\r", [])
    assert events == [] and splitter.error is None
