"""The ask tool: questions reach the front end's asker; withheld where nobody can answer."""

from __future__ import annotations

import asyncio

import pytest
from fakeprovider import Reply

from agent.testing import collect, make_boot, make_session

BUILTINS = ["openai", "files", "agents", "subagents", "ask"]


class Asker:
    """A front end's question channel: records questions, answers from a list."""

    def __init__(self, *answers) -> None:
        self.answers = list(answers)
        self.questions: list[tuple] = []
        self.active = 0
        self.most_active = 0

    async def __call__(self, question, options, multiple):
        self.questions.append((question, options, multiple))
        self.active += 1
        self.most_active = max(self.most_active, self.active)
        await asyncio.sleep(0.05)
        self.active -= 1
        return self.answers.pop(0)


def boot(tmp_path, *, headless=False, **flags):
    ws = tmp_path / "ws"
    ws.mkdir(exist_ok=True)
    return make_boot(ws, tmp_path / "home", builtins=BUILTINS, flags=flags, headless=headless)


def session_with(config, hooks, fake_provider, asker):
    session = make_session(config, hooks, base_url=fake_provider.openai_url)
    session.runtime.asker = asker
    return session


def tool_names(request) -> set[str]:
    return {t["function"]["name"] for t in request.body.get("tools", [])}


def told(request, call_id: str) -> str:
    return next(m["content"] for m in request.body["messages"]
                if m["role"] == "tool" and m["tool_call_id"] == call_id)


QUESTION = {"question": "Which database?",
            "options": [{"label": "sqlite", "detail": "no server"}, {"label": "postgres"}]}


@pytest.mark.parametrize("answer, expected", [
    ("sqlite", "The user answered: sqlite"),
    ("use duckdb instead", "The user answered: use duckdb instead"),
    (None, "The user dismissed this; use your best judgement."),
])
async def test_the_answer_reaches_the_model(tmp_path, fake_provider, answer, expected):
    config, hooks = boot(tmp_path)
    asker = Asker(answer)
    fake_provider.script(Reply.tool_call("ask", QUESTION, id="a1"), Reply.text("ok"))
    session = session_with(config, hooks, fake_provider, asker)
    await collect(session, "set up storage")
    assert "ask" in tool_names(fake_provider.requests[0])
    assert asker.questions == [("Which database?", [
        {"label": "sqlite", "detail": "no server"}, {"label": "postgres", "detail": ""}], False)]
    assert told(fake_provider.requests[1], "a1") == expected


async def test_several_choices_and_questions_put_one_at_a_time(tmp_path, fake_provider):
    config, hooks = boot(tmp_path)
    asker = Asker(["lint", "test"], [])
    multi = {"question": "Which checks?", "multiple": True,
             "options": [{"label": "lint"}, {"label": "test"}, {"label": "typecheck"}]}
    fake_provider.script(Reply(tool_calls=[("ask", multi, "a1"), ("ask", multi, "a2")]),
                         Reply.text("ok"))
    session = session_with(config, hooks, fake_provider, asker)
    await collect(session, "set up CI")
    assert asker.most_active == 1 and len(asker.questions) == 2
    assert asker.questions[0][2] is True
    assert told(fake_provider.requests[1], "a1") == "The user chose: lint; test"
    assert told(fake_provider.requests[1], "a2") == "The user chose none of the options."


async def test_headless_runs_are_not_offered_ask(tmp_path, fake_provider):
    config, hooks = boot(tmp_path, headless=True)
    fake_provider.script(Reply.tool_call("ask", QUESTION, id="a1"), Reply.text("ok"))
    asker = Asker("sqlite")
    session = session_with(config, hooks, fake_provider, asker)
    await collect(session, "set up storage")
    assert "ask" not in tool_names(fake_provider.requests[0])
    assert "Unknown tool: ask" in told(fake_provider.requests[1], "a1")
    assert asker.questions == []


async def test_without_a_question_channel_ask_is_not_offered(tmp_path, fake_provider):
    config, hooks = boot(tmp_path)
    fake_provider.script(Reply.text("ok"))
    session = make_session(config, hooks, base_url=fake_provider.openai_url)
    await collect(session, "hi")
    assert "ask" not in tool_names(fake_provider.requests[0])


async def test_plan_agent_keeps_ask_and_subagents_never_get_it(tmp_path, fake_provider):
    config, hooks = boot(tmp_path, agent="plan")
    fake_provider.script(
        Reply.tool_call("task", {"description": "look", "prompt": "look around"}, id="t1"),
        Reply.text("nothing here"), Reply.text("plan ready"))
    session = session_with(config, hooks, fake_provider, Asker())
    await collect(session, "plan it")
    parent, child, _ = fake_provider.requests
    assert "ask" in tool_names(parent) and "write_file" not in tool_names(parent)
    assert "ask" not in tool_names(child)


async def test_a_front_end_ui_ask_is_used_when_there_is_no_asker(tmp_path, fake_provider):
    config, hooks = boot(tmp_path)
    calls: list = []

    class Ui:
        async def ask(self, question, options=(), *, multiple=False):
            calls.append((question, multiple))
            return "postgres"

    fake_provider.script(Reply.tool_call("ask", QUESTION, id="a1"), Reply.text("ok"))
    session = make_session(config, hooks, base_url=fake_provider.openai_url)
    session.runtime.ui = Ui()
    await collect(session, "set up storage")
    assert calls == [("Which database?", False)]
    assert told(fake_provider.requests[1], "a1") == "The user answered: postgres"
