"""The openai provider posts its request bodies itself (the SDK client's ``post``) rather than
through the resource's ``create``, which first walks the body against the SDK's TypedDicts.
What reaches the server must be what ``create`` would have sent: for every request shape the
provider builds (chat and responses; official and compatible endpoints; reasoning on and off;
text, images, tool calls, tool results with and without images, reasoning items), the raw
body bytes and the headers the fake provider received are compared, both ways."""

from __future__ import annotations

import pytest
from fakeprovider import Reply

import plugins_builtin.openai as provider_openai
from agent.contract.messages import (
    ImagePart,
    Message,
    ReasoningPart,
    TextPart,
    ToolCallPart,
    ToolResultPart,
)
from agent.contract.providers import ProviderRequest, ProviderSettings

PNG = ImagePart(media_type="image/png", data="iVBORw0KGgo=", source="shot.png")

TOOLS = [
    {"name": "read_file", "description": "Read a file",
     "parameters": {"type": "object", "properties": {"path": {"type": "string"}},
                    "required": ["path"]}},
    {"name": "current_time", "description": "", "parameters": None},
]


def history() -> list[Message]:
    """Every kind of part a conversation carries back to the model."""
    call = ToolCallPart(id="call_1", name="read_file", arguments={"path": "a.txt"},
                        raw_arguments='{"path": "a.txt"}', item_id="fc_1")
    broken = ToolCallPart(id="call_2", name="read_file", arguments={},
                          raw_arguments='{"path": ')
    return [
        Message.user("Look at a.txt — «unicode» \u2028 and \"quotes\""),
        Message("assistant", [
            ReasoningPart("thinking it over", encrypted="enc-1", item_id="rs_1",
                          provider="openai"),
            ReasoningPart("someone else's", signature="sig", provider="anthropic"),
            TextPart("Reading it."), call, broken]),
        Message("tool", [ToolResultPart("call_1", "read_file", "line 1\nline 2"),
                         ToolResultPart("call_2", "read_file", "bad arguments", is_error=True),
                         ]),
        Message("assistant", [ReasoningPart("only reasoning", encrypted="enc-2",
                                            item_id="rs_2", provider="openai")]),
        Message("assistant", [ToolCallPart(id="call_3", name="current_time")]),
        Message("tool", [ToolResultPart("call_3", "current_time", "shown",
                                        images=[PNG])]),
        Message("user", [TextPart("and this picture"), PNG]),
        Message("user", [PNG]),
        Message.user(""),
    ]


def request(name: str) -> ProviderRequest:
    """The request called ``name`` (built per test: a module-level one would stay alive, and
    tests/loop/test_long_turn_memory.py counts the live requests of the process)."""
    return {
        "plain": lambda: ProviderRequest(model="m", system="be brief",
                                         messages=[Message.user("hi")]),
        "no system": lambda: ProviderRequest(model="", system="", messages=[Message.user("hi")]),
        "everything": lambda: ProviderRequest(model="m", system="sys", messages=history(),
                                              tools=TOOLS, thinking="high", max_tokens=123),
        "thinking off": lambda: ProviderRequest(model="m", system="sys", messages=history(),
                                                tools=TOOLS, thinking="off"),
    }[name]()


NAMES = ["plain", "no system", "everything", "thinking off"]


def shapes(url: str, official: bool, reasoning: bool):
    options = {} if reasoning else {"send_reasoning": False}
    settings = ProviderSettings(provider="openai", model="default-model", api_key="sk-k",
                                base_url=url, max_retries=0, options=options)
    endpoint = provider_openai.Endpoint(settings)
    # The official API's body (max_completion_tokens), sent to the local server.
    endpoint.official = official
    return [provider_openai.ChatProvider(endpoint), provider_openai.ResponsesProvider(endpoint)]


async def send(shape, params, *, through_create: bool) -> None:
    headers = {"x-stainless-retry-count": "0"}
    if through_create:
        resource = shape.resource(shape.endpoint.client())
        stream = await resource.create(**params, extra_headers=headers)
    else:
        stream = await shape.open(params, headers)
    async with stream:
        async for _ in stream.response.aiter_bytes():
            pass


@pytest.mark.parametrize("official", [False, True], ids=["compatible", "official"])
@pytest.mark.parametrize("reasoning", [True, False], ids=["reasoning", "no-reasoning"])
@pytest.mark.parametrize("name", NAMES)
async def test_the_body_posted_is_the_one_create_would_post(fake_provider, name, official,
                                                            reasoning):
    for shape in shapes(fake_provider.openai_url, official, reasoning):
        params = shape.params(request(name))
        fake_provider.script(Reply.text("a"), Reply.text("b"))
        await send(shape, params, through_create=True)
        await send(shape, params, through_create=False)
        by_create, by_post = fake_provider.requests[-2:]
        assert by_post.path == by_create.path == "/v1" + shape.path
        assert by_post.raw == by_create.raw
        assert list(by_post.headers.items()) == list(by_create.headers.items())
        assert by_post.headers["authorization"] == "Bearer sk-k"
        await shape.aclose()


async def test_an_argument_create_would_refuse_is_refused(fake_provider):
    chat = shapes(fake_provider.openai_url, False, True)[0]
    params = {**chat.params(request("plain")), "temprature": 0.5}
    with pytest.raises(TypeError, match="temprature"):
        await chat.open(params)
    assert fake_provider.requests == []
