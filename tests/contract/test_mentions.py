"""``@token`` mentions: a plugin's MentionSource (hook ``agent_register_mentions``) attaches
what a prompt names, through a real session to the request bytes; MCP resources as
``@server:uri`` headless too."""

from __future__ import annotations

import json

from clirun import run_agent_here
from fakeprovider import Reply
from mcp_features import features_home

from agent import Attachment, ImagePart, MentionEntry, MentionError, MentionSource, hookimpl
from agent.contract.mentions import MAX_CHARS, expand, mentions
from agent.testing import collect, make_boot, make_session

PNG = ("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU"
       "5ErkJggg==")
TICKETS = {"T-1": "the login page is slow", "T-2": "x" * (MAX_CHARS + 10)}


class Tickets:
    """A third-party mention source: ``@ticket:T-1``."""

    @hookimpl
    def agent_register_mentions(self, register, config):
        async def resolve(token):
            kind, _, key = token.partition(":")
            if kind != "ticket":
                return None
            if key == "shot":
                return Attachment("a screenshot", [ImagePart("image/png", PNG, token)])
            if key not in TICKETS:
                raise MentionError(f"no ticket {key}")
            return Attachment(TICKETS[key])

        register(MentionSource("tickets", lambda: [MentionEntry(f"ticket:{k}", "ticket")
                                                   for k in TICKETS], resolve))


def test_mentions_are_found_once_each_without_trailing_punctuation():
    assert mentions("see @a:b, then @a:b. and @c/d.py! but not me@x.org") == ["a:b", "c/d.py"]


async def test_agent_register_mentions_attaches_to_the_request(tmp_path, fake_provider):
    ws = tmp_path / "ws"
    ws.mkdir()
    config, hooks = make_boot(ws, tmp_path / "home", builtins=["openai"],
                              extra=[("tickets", Tickets())])
    sources = hooks.mentions(config)
    assert [e.token for s in sources for e in s.entries()] == ["ticket:T-1", "ticket:T-2"]
    message, warnings = await expand("fix @ticket:T-1 and @ticket:T-9, see @README.md",
                                     sources)
    assert warnings == ["@ticket:T-9 is not attached: no ticket T-9"]
    fake_provider.script(Reply.text("on it"), Reply.text("seen"))
    session = make_session(config, hooks, base_url=fake_provider.openai_url)
    await collect(session, message)
    sent = fake_provider.requests[0].body["messages"][-1]
    assert sent == {"role": "user", "content": (
        "fix @ticket:T-1 and @ticket:T-9, see @README.md\n\n"
        '<resource name="ticket:T-1">\nthe login page is slow\n</resource>')}
    long, _ = await expand("@ticket:T-2 @ticket:shot", sources)
    await collect(session, long)
    content = fake_provider.requests[1].body["messages"][-1]["content"]
    assert f"... [cut at {MAX_CHARS:,} characters]" in content[0]["text"]
    assert content[1] == {"type": "image_url",
                          "image_url": {"url": f"data:image/png;base64,{PNG}"}}


def test_headless_prompt_attaches_an_mcp_resource(tmp_path, fake_provider):
    home, ws = features_home(tmp_path)
    fake_provider.script(Reply.text("tea and Ada"))
    proc = run_agent_here(["-p", "summarise @feat:memo://notes/today and @feat:memo://gone",
                           "--json", "--provider", "openai", "--base-url", fake_provider.openai_url,
                           "--model", "m"], home=home, cwd=ws, OPENAI_API_KEY="x")
    assert proc.returncode == 0, proc.stderr
    sent = fake_provider.requests[0].body["messages"][-1]["content"]
    assert sent == ("summarise @feat:memo://notes/today and @feat:memo://gone\n\n"
                    '<resource name="feat:memo://notes/today">\n'
                    "[resource memo://notes/today]\nbuy tea\ncall Ada\n</resource>")
    notices = [json.loads(line)["text"] for line in proc.stdout.splitlines()
               if json.loads(line)["type"] == "notice"]
    assert any(n.startswith("@feat:memo://gone is not attached: mcp server feat could not")
               for n in notices), notices
