"""The network backend under the SDKs' HTTP client (``agent.loop.netio``): every wire format
streams through it, over TLS too, a connection is reused from one step to the next, and a
certificate the client does not trust is a clear connection error.  Real SDKs, the fake
server on 127.0.0.1."""

from __future__ import annotations

import ssl

import pytest
from faultkit import FORMATS, IDS, open_session, shown_text
from tlscerts import make_certificates
from wirecheck import assert_human

from agent.testing import collect
from agent.testing.fakeprovider import FakeProvider, Reply


@pytest.fixture
def tls_provider(tmp_path):
    ca, leaf, key = make_certificates(tmp_path / "server")
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(leaf, key)
    srv = FakeProvider.start(ssl_context=context)
    srv.cert_file = str(ca)
    try:
        yield srv
    finally:
        srv.stop()


def test_the_sdk_client_reads_on_the_asyncio_backend():
    from agent.loop.netio import AsyncioBackend
    from agent.loop.retry import async_http_client

    client = async_http_client(timeout=5)
    assert isinstance(client._transport._pool._network_backend, AsyncioBackend)


@pytest.mark.parametrize("fmt", FORMATS, ids=IDS)
async def test_a_stream_over_tls(tmp_path, tls_provider, monkeypatch, fmt):
    monkeypatch.setenv("SSL_CERT_FILE", tls_provider.cert_file)  # its CA is trusted
    answer = "".join(f"w{i} " for i in range(60))
    tls_provider.script(Reply.text(answer, pieces=60), Reply.text("again"))
    session = open_session(tmp_path, tls_provider, fmt)
    events = await collect(session, "hello")
    assert events[-1].reason == "end", events
    assert shown_text(events) == answer == session.messages[-1].text
    events = await collect(session, "more")
    assert shown_text(events) == "again"
    assert tls_provider.base_url.startswith("https://")


@pytest.mark.parametrize("fmt", FORMATS, ids=IDS)
async def test_an_untrusted_certificate_is_a_clear_connection_error(tmp_path, tls_provider,
                                                                   monkeypatch, fmt):
    monkeypatch.delenv("SSL_CERT_FILE", raising=False)
    monkeypatch.delenv("SSL_CERT_DIR", raising=False)
    tls_provider.script(Reply.text("never shown"))
    session = open_session(tmp_path, tls_provider, fmt)
    events = await collect(session, "hello")
    errors = [e for e in events if e.type == "error"]
    assert len(errors) == 1 and events[-1].reason == "error"
    message = errors[0].error
    assert message.startswith(f"could not connect to 127.0.0.1:{tls_provider.port}: ")
    assert "certificate verify failed" in message
    assert_human(message)
    assert tls_provider.requests == []  # the handshake failed: nothing was sent


@pytest.mark.parametrize("fmt", FORMATS, ids=IDS)
async def test_steps_reuse_one_connection(tmp_path, fake_provider, fmt):
    # The body is read to its end (past [DONE] on chat), so the pool keeps the connection.
    fake_provider.script(Reply(tool_calls=[("peek", {})]), Reply.text("done"))
    session = open_session(tmp_path, fake_provider, fmt)
    events = await collect(session, "hello")
    assert events[-1].reason == "end" and shown_text(events) == "done"
    assert len(fake_provider.requests) == 2
    peers = {req.peer for req in fake_provider.requests}
    assert len(peers) == 1, peers


@pytest.mark.parametrize("fmt", FORMATS, ids=IDS)
async def test_a_pooled_connection_the_server_closed_is_not_reused(tmp_path, fake_provider, fmt):
    """The server ends the kept-alive connection after the first step without saying so:
    before the next request the pool asks our transport whether the idle connection is
    readable (its EOF is), and opens a new one instead of sending into a closed socket.
    No retry is allowed, so a send on the dead connection would end the turn in an error."""
    import asyncio

    from agent import NO_EFFECTS, Tool, hookimpl

    first = Reply(tool_calls=[("wait_closed", {})])
    first.close_after = True

    class WaitClosed:
        @hookimpl
        def agent_register_tools(self, register):
            async def wait_closed(args, ctx):
                assert await asyncio.to_thread(first.closed.wait, 10)
                return "closed"

            register(Tool("wait_closed", "Wait.", wait_closed,
                          {"type": "object", "properties": {}},
                          effects=lambda a: NO_EFFECTS, read_only=True))

    fake_provider.script(first, Reply.text("done"))
    session = open_session(tmp_path, fake_provider, fmt, extra=[("wait", WaitClosed())])
    events = await collect(session, "hello")
    assert events[-1].reason == "end" and shown_text(events) == "done", events[-3:]
    assert "closed" in str(fake_provider.requests[1].body)  # the tool ran, then step two
    assert len(fake_provider.requests) == 2
    assert len({req.peer for req in fake_provider.requests}) == 2


async def test_a_chat_body_that_does_not_end_after_done_still_finishes_the_step(
        tmp_path, fake_provider):
    # All five events of the answer, [DONE] last, then the server holds the body open: the
    # step must not wait for stream_idle_timeout (60 s here) to end what is complete.
    fake_provider.script(Reply.stall(60, after=5, reply=Reply("Hi there", pieces=1)),
                         Reply.text("next"))
    session = open_session(tmp_path, fake_provider, ("openai", "chat"),
                           stream_idle_timeout=60, request_timeout=60)
    events = await collect(session, "hello")
    assert events[-1].reason == "end", events
    assert session.messages[-1].text == "Hi there"
    events = await collect(session, "again")  # on a new connection: the old one was dropped
    assert shown_text(events) == "next"


def test_the_idle_connection_poll_sees_data_an_eof_and_a_closed_socket():
    """The poll behind that answer when the loop has not yet read the EOF: real sockets."""
    import socket

    from agent.loop.netio import _socket_readable

    ours, peer = socket.socketpair()
    try:
        assert not _socket_readable(ours)  # idle: reusable
        peer.send(b"x")
        assert _socket_readable(ours)  # bytes nobody asked for
        ours.recv(1)
        assert not _socket_readable(ours)
        peer.close()
        assert _socket_readable(ours)  # the peer's EOF
    finally:
        ours.close()
    assert _socket_readable(ours)  # a closed socket (fileno -1) is never reused
