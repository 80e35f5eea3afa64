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
