"""Images and structured content from MCP tools reach the model in the provider's own content
blocks: a real MCP server over stdio returns a PNG, and the request the fake provider received
carries it as an image block of its wire format (chat completions, responses, anthropic), also
after the session is resumed; an endpoint set not to take images gets a placeholder, said once.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from clirun import run_agent_here
from fakeprovider import Reply
from mcp_features import features_home
from wirecheck import assert_valid_request

from agent.contract.messages import (
    MAX_IMAGE_BYTES,
    ImagePart,
    Message,
    ToolResultPart,
    bounded_images,
)

PNG = ("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU"
       "5ErkJggg==")
DATA_URL = f"data:image/png;base64,{PNG}"

WIRES = {  # wire format -> agent flags
    "chat": ["--provider", "openai"],
    "responses": ["--provider", "openai"],
    "anthropic": ["--provider", "anthropic"],
}


def _home(tmp_path: Path, wire: str, extra: str = "") -> tuple[Path, Path]:
    home, ws = features_home(
        tmp_path, top=extra + (f'openai_api = "{wire}"\n' if wire != "anthropic" else ""))
    return home, ws


def _run(wire, fake_provider, home, ws, *args):
    url = fake_provider.base_url if wire == "anthropic" else fake_provider.openai_url
    proc = run_agent_here(["--yolo", "--json", *WIRES[wire], "--base-url", url, "--model", "m",
                           *args], home=home, cwd=ws, OPENAI_API_KEY="x", ANTHROPIC_API_KEY="x",
                          )  # starts a Python MCP server: slow on a loaded machine
    assert proc.returncode == 0, proc.stderr
    return proc


def native_images(request) -> list[tuple[str, str]]:
    """Every image block in a recorded request as (where, data URL), read the way its wire
    format spells it: chat ``image_url`` parts of user messages, responses ``input_image``
    items of function call outputs and user messages, anthropic ``image`` blocks inside a
    ``tool_result`` or a user message."""
    body, found = request.body, []
    if request.path == "/v1/chat/completions":
        for m in body["messages"]:
            if m["role"] == "user" and isinstance(m["content"], list):
                found += [("user", p["image_url"]["url"]) for p in m["content"]
                          if p["type"] == "image_url"]
    elif request.path == "/v1/responses":
        for item in body["input"]:
            content = item.get("output") if item["type"] == "function_call_output" \
                else item.get("content")
            if isinstance(content, list):
                found += [(item["type"], p["image_url"]) for p in content
                          if p["type"] == "input_image"]
    else:
        for m in body["messages"]:
            for block in m["content"]:
                inner = block.get("content") if block["type"] == "tool_result" else [block]
                for b in inner if isinstance(inner, list) else []:
                    if b["type"] == "image":
                        src = b["source"]
                        assert src["type"] == "base64"
                        found.append((block["type"],
                                      f"data:{src['media_type']};base64,{src['data']}"))
    return found


WHERE = {"chat": "user", "responses": "function_call_output", "anthropic": "tool_result"}


@pytest.mark.parametrize("wire", sorted(WIRES))
def test_an_mcp_image_reaches_the_model_natively_and_survives_a_resume(
        wire, tmp_path, fake_provider):
    home, ws = _home(tmp_path, wire)
    fake_provider.script(Reply.tool_call("mcp__feat__snapshot", {}, id="c1"),
                         Reply.text("a red dot"), Reply.text("still red"))
    _run(wire, fake_provider, home, ws, "-p", "look at the screen")
    after_call = fake_provider.requests[1]
    assert_valid_request(after_call)
    assert native_images(after_call) == [(WHERE[wire], DATA_URL)]
    body = json.dumps(after_call.body)
    # The text keeps a marker where the image was, and the structured content as JSON.
    assert "the screen now" in body and "[image 1: image/png, 70 bytes]" in body
    assert "[structured content]" in body and '\\"width\\": 1' in body
    assert after_call.raw.count(PNG.encode()) == 1  # sent once, as the image itself
    # The saved session gives the image back: the next turn's request still has it.
    _run(wire, fake_provider, home, ws, "-c", "-p", "and now?")
    resumed = fake_provider.requests[2]
    assert_valid_request(resumed)
    assert native_images(resumed) == [(WHERE[wire], DATA_URL)]


@pytest.mark.parametrize("wire", ["chat", "responses"])
def test_an_endpoint_without_images_gets_a_placeholder_said_once(wire, tmp_path,
                                                                 fake_provider):
    home, ws = _home(tmp_path, wire, "send_images = false\n")
    fake_provider.script(Reply.tool_call("mcp__feat__snapshot", {}, id="c1"),
                         Reply.tool_call("mcp__feat__snapshot", {}, id="c2"),
                         Reply.text("no idea"))
    proc = _run(wire, fake_provider, home, ws, "-p", "look twice")
    for request in fake_provider.requests[1:]:
        assert_valid_request(request)
        assert native_images(request) == []
        assert PNG.encode() not in request.raw
    host = fake_provider.base_url.split("//", 1)[1].rstrip("/")
    last = json.dumps(fake_provider.requests[2].body)
    assert last.count("[image from mcp__feat__snapshot (image/png, 70 bytes) not shown: "
                      f"{host} is set not to take images (send_images = false)]") == 2
    notices = [json.loads(line) for line in proc.stdout.splitlines()
               if json.loads(line)["type"] == "notice" and "image" in line]
    assert len(notices) == 1, notices
    assert "does not take images: 1 image is sent as a text placeholder" in \
        notices[0]["text"]


def test_images_are_bounded_with_a_note_for_each_one_dropped():
    big = ImagePart("image/png", "A" * ((MAX_IMAGE_BYTES // 3 + 1) * 4), "mcp__s__big")
    svg = ImagePart("image/svg+xml", PNG, "mcp__s__svg")
    broken = ImagePart("image/png", "not base64!", "mcp__s__broken")
    kept, notes = bounded_images([ImagePart("image/png", PNG), big, svg, broken])
    assert [k.data for k in kept] == [PNG]
    assert notes == [
        "[image from mcp__s__big (image/png, 5.0 MB) not shown: dropped, larger than the "
        "5.0 MB an image may be]",
        "[image from mcp__s__svg (image/svg+xml, 70 bytes) not shown: dropped, models take "
        "only PNG, JPEG, GIF and WebP images]",
        "[image from mcp__s__broken (image/png, 8 bytes) not shown: dropped, its data is not "
        "valid base64]",
    ]
    many, notes = bounded_images([ImagePart("image/png", PNG)] * 10)
    assert len(many) == 8 and len(notes) == 2 and "only 8 images" in notes[0]


def test_images_round_trip_through_the_stored_form():
    msg = Message("tool", [ToolResultPart("c1", "mcp__s__shot", "the screen",
                                          images=[ImagePart("image/png", PNG, "mcp__s__shot")])])
    user = Message("user", [ImagePart("image/jpeg", PNG, "feat:memo://a.jpg")])
    for original in (msg, user):
        again = Message.from_dict(json.loads(json.dumps(original.to_dict())))
        assert again == original


def test_an_image_is_estimated_as_an_image_not_as_its_base64():
    from plugins_builtin.prune import tokens

    screenshot = ImagePart("image/png", "A" * 1_400_000, "mcp__s__shot")  # about 1 MB
    with_image = Message("tool", [ToolResultPart("c1", "mcp__s__shot", "the screen",
                                                 images=[screenshot])])
    plain = Message("tool", [ToolResultPart("c1", "mcp__s__shot", "the screen")])
    assert 1_500 < tokens(with_image) - tokens(plain) < 1_700
