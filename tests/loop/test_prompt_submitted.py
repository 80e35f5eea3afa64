"""``agent_prompt_submitted``: a plugin may refuse the person's prompt (nothing is sent,
nothing joins the history) or add context to it; a broken plugin is ignored."""

from __future__ import annotations

from fakeprovider import Reply

from agent import Verdict, hookimpl
from agent.testing import collect, make_boot, make_session


class PromptGate:
    @hookimpl
    def agent_prompt_submitted(self, prompt, session):
        if "password" in prompt:
            return Verdict.deny("do not paste credentials into the prompt")
        return "context: the build is frozen"


class Broken:
    @hookimpl
    def agent_prompt_submitted(self, prompt, session):
        raise RuntimeError("boom")


def session_with(tmp_path, fake_provider, *plugins):
    ws = tmp_path / "ws"
    ws.mkdir()
    config, hooks = make_boot(ws, tmp_path / "home", builtins=["openai"],
                              extra=[(type(p).__name__.lower(), p) for p in plugins])
    return make_session(config, hooks, base_url=fake_provider.openai_url)


async def test_a_refused_prompt_is_never_sent_nor_kept(tmp_path, fake_provider):
    session = session_with(tmp_path, fake_provider, PromptGate())
    events = await collect(session, "my password is hunter2")
    assert not fake_provider.requests and session.messages == []
    error = next(e for e in events if e.type == "error")
    assert error.kind == "refused" and "credentials" in error.error
    assert events[-1].type == "done" and events[-1].reason == "error"


async def test_context_is_sent_with_the_prompt_and_a_broken_plugin_is_ignored(
        tmp_path, fake_provider):
    fake_provider.script(Reply.text("ok"))
    session = session_with(tmp_path, fake_provider, PromptGate(), Broken())
    events = await collect(session, "ship it")
    assert events[-1].reason == "end"
    content = fake_provider.requests[0].body["messages"][-1]["content"]
    texts = [c["text"] for c in content] if isinstance(content, list) else [content]
    assert "ship it" in texts[0] and "context: the build is frozen" in "\n".join(texts)
