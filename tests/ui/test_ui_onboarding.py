"""The provider setup: opens without a provider, writes config.toml keeping what was there."""

from __future__ import annotations

import tomllib

import pytest
from fakeprovider import Reply
from ui_harness import idle, make_app, press, screen, type_text, wait_for

from agent import hookimpl
from agent.contract.providers import ProviderChoice
from plugins_builtin import anthropic as provider_anthropic
from plugins_builtin import openai as provider_openai
from plugins_builtin.setup.onboarding import mask_key
from plugins_builtin.setup.presets import offered

#: the setup's list with both shipped provider plugins loaded (as the app loads them here)
PRESETS = offered({"openai": provider_openai.SPEC, "anthropic": provider_anthropic.SPEC})

CUSTOM_OPENAI = next(i for i, p in enumerate(PRESETS) if p.id == "custom-openai")


@pytest.fixture(autouse=True)
def no_keys(monkeypatch):
    for name in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "AGENT_API_KEY", "AGENT_PROVIDER",
                 "AGENT_MODEL", "AGENT_BASE_URL"):
        monkeypatch.delenv(name, raising=False)


def unconfigured(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    (home / "config.toml").write_text('# my settings\nthinking = "high"  # keep me\n')
    return make_app(tmp_path, None, builtins=["anthropic"])


async def choose_custom(app, url):
    await wait_for(app, "Choose a provider")
    rows = screen(app)
    assert "agent 0.1.0  no provider configured" in rows
    for preset in ("Anthropic", "OpenRouter", "Ollama", "LM Studio", "Custom Anthropic-compatible"):
        assert preset in rows
    await press(app, *["down"] * CUSTOM_OPENAI, "enter")
    await wait_for(app, "endpoint URL")
    await type_text(app, url, enter=True)


async def test_setup_opens_fetches_models_and_writes_the_config(tmp_path, fake_provider):
    app = unconfigured(tmp_path)
    app.start()
    await choose_custom(app, fake_provider.openai_url)
    await wait_for(app, "API key")
    await type_text(app, "sk-secret-key-1234")
    rows = screen(app)
    assert "sk-secret" not in rows and "******************" in rows
    await press(app, "enter")
    rows = await wait_for(app, "Choose a model (2 available)")
    assert f"key {mask_key('sk-secret-key-1234')}" in rows and "sk-s...1234" in rows
    assert "type a model id myself..." in rows
    models_call = fake_provider.requests[0]
    assert models_call.path == "/v1/models"
    assert models_call.headers["authorization"] == "Bearer sk-secret-key-1234"
    await press(app, "enter")
    rows = await wait_for(app, "configured with fake-model")
    text = (tmp_path / "home" / "config.toml").read_text()
    assert text.startswith("# my settings\n") and "# keep me" in text
    data = tomllib.loads(text)
    assert data == {"thinking": "high", "provider": "openai", "model": "fake-model",
                    "base_url": fake_provider.openai_url, "preset": "custom-openai",
                    "api_key": "sk-secret-key-1234"}
    fake_provider.script(Reply.text("hello from the new provider"))
    await type_text(app, "hi", enter=True)
    await wait_for(app, "hello from the new provider")
    assert fake_provider.requests[-1].body["model"] == "fake-model"


async def test_unlisted_models_fall_back_to_typing_an_id(tmp_path, fake_provider):
    fake_provider.models_reply = Reply.error(500, message="boom")
    app = unconfigured(tmp_path)
    app.start()
    await choose_custom(app, fake_provider.openai_url)
    await wait_for(app, "API key")
    await type_text(app, "k", enter=True)
    rows = await wait_for(app, "Model id")
    assert "could not list models" in rows
    await type_text(app, "my-model", enter=True)
    await wait_for(app, "configured with my-model")


async def test_cancelled_setup_leaves_prompts_refused(tmp_path, fake_provider):
    app = unconfigured(tmp_path)
    app.start()
    await wait_for(app, "Choose a provider")
    await press(app, "esc")
    await wait_for(app, "provider setup cancelled")
    await type_text(app, "hello", enter=True)
    assert "no provider configured yet - run /provider" in screen(app)
    await type_text(app, "/tools", enter=True)
    assert screen(app).count("no provider configured yet") >= 2
    assert (tmp_path / "home" / "config.toml").read_text().startswith("# my settings")
    await type_text(app, "/provider", enter=True)
    await wait_for(app, "Choose a provider")
    await idle(app)


async def test_keyless_preset_skips_the_key(tmp_path, fake_provider):
    app = unconfigured(tmp_path)
    app.start()
    await wait_for(app, "Choose a provider")
    ollama = next(i for i, p in enumerate(PRESETS) if p.id == "ollama")
    await press(app, *["down"] * ollama, "enter")
    rows = await wait_for(app, "Model id")  # nothing listens there: type the model
    assert "Ollama API key" not in rows  # never asked (the header may name the missing key)
    await type_text(app, "llama3", enter=True)
    await wait_for(app, "Ollama configured with llama3")
    data = tomllib.loads((tmp_path / "home" / "config.toml").read_text())
    assert data["api_key"] == "not-needed" and data["base_url"] == "http://localhost:11434/v1"


async def test_keyless_custom_endpoint_validated_url_and_the_header_refreshes(
        tmp_path, fake_provider):
    app = unconfigured(tmp_path)
    app.start()
    await wait_for(app, "Choose a provider")
    await press(app, *["down"] * CUSTOM_OPENAI, "enter")
    await wait_for(app, "endpoint URL")
    await type_text(app, "not a url")
    assert "x a URL has no spaces" in screen(app)  # checked as it is typed
    await press(app, "enter")  # refused: the setup stays on the URL
    assert "endpoint URL" in screen(app) and app.modal is not None
    await press(app, *["backspace"] * len("not a url"))
    await type_text(app, "localhost:8000")
    assert "x it starts with http:// or https://" in screen(app)
    await press(app, "ctrl u")  # as in a shell: the field is cleared to its start
    assert "> localhost" not in screen(app) and "x type the endpoint's URL" in screen(app)
    await type_text(app, "http://one two")
    await press(app, "ctrl w")  # the word before the cursor goes
    assert "> http://one " in screen(app) and "> http://one two" not in screen(app)
    await press(app, "ctrl a", "ctrl k")  # to the start, then everything after the cursor
    assert "> http://one" not in screen(app) and "x type the endpoint's URL" in screen(app)
    await type_text(app, fake_provider.openai_url)
    assert "x " not in screen(app).split("endpoint URL")[1].split("└")[0]
    await press(app, "enter")
    rows = await wait_for(app, "API key")
    assert "empty if the endpoint needs no key" in rows
    await press(app, "enter")  # no key: a keyless endpoint, not a cancelled setup
    rows = await wait_for(app, "Choose a model (2 available)")
    await press(app, "enter")
    rows = await wait_for(app, "configured with fake-model")
    assert "setup cancelled" not in rows
    # the header and the status bar say what is configured now
    assert "no provider configured" not in rows
    assert "agent 0.1.0  openai/fake-model" in rows
    assert rows.splitlines()[-1].startswith("fake-model  default/")
    data = tomllib.loads((tmp_path / "home" / "config.toml").read_text())
    assert data["api_key"] == "not-needed" and data["base_url"] == fake_provider.openai_url
    fake_provider.script(Reply.text("answered without a key"))
    await type_text(app, "hi", enter=True)
    await wait_for(app, "answered without a key")


async def test_an_empty_key_for_a_hosted_provider_is_refused_not_a_cancel(tmp_path):
    app = unconfigured(tmp_path)
    app.start()
    await wait_for(app, "Choose a provider")
    openai = next(i for i, p in enumerate(PRESETS) if p.id == "openai")
    await press(app, *["down"] * openai, "enter")
    await wait_for(app, "API key")
    await press(app, "enter")
    rows = screen(app)
    assert "x the key is empty: paste it, or esc to cancel" in rows and app.modal is not None
    assert "setup cancelled" not in rows


async def test_without_the_setup_plugin_the_app_says_how_to_configure_a_provider(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    (home / "config.toml").write_text('thinking = "high"\n')
    app = make_app(tmp_path, None, without=["setup"])
    app.start()
    rows = await wait_for(app, "no enabled plugin offers the provider setup")
    flat = " ".join(rows.split())  # the line wraps on screen
    assert "set provider, model and api_key in" in flat and "docs/configuration.md" in flat
    assert "Choose a provider" not in rows and app.modal is None
    assert (home / "config.toml").read_text() == 'thinking = "high"\n'  # untouched


class HouseSetup:
    """A third-party setup: one question, and the core saves what it returns."""

    def __init__(self, url):
        self.url = url
        self.problems: list[str] = []

    @hookimpl
    def agent_setup_provider(self, ui, config, providers, problem):
        self.problems.append(problem)

        async def choose():
            model = await ui.prompt_text("house model id")
            return ProviderChoice("openai", model, base_url=self.url, api_key="house-key",
                                  label="House gateway") if model else None
        return choose()


async def test_a_third_party_setup_plugin_answers_the_no_provider_hook(tmp_path,
                                                                       fake_provider):
    house = HouseSetup(fake_provider.openai_url)
    home = tmp_path / "home"
    home.mkdir()
    (home / "config.toml").write_text("# mine\n")
    app = make_app(tmp_path, None, without=["setup"], extra=[("house", house)])
    app.start()
    await wait_for(app, "house model id")
    assert house.problems and house.problems[0]  # told why: no provider is usable
    await type_text(app, "house-model", enter=True)
    rows = await wait_for(app, "House gateway configured with house-model")
    assert "agent 0.1.0  openai/house-model" in rows
    text = (home / "config.toml").read_text()
    assert text.startswith("# mine\n")
    assert tomllib.loads(text) == {"provider": "openai", "model": "house-model",
                                   "base_url": fake_provider.openai_url, "api_key": "house-key"}
    fake_provider.script(Reply.text("hello from the house"))
    await type_text(app, "hi", enter=True)
    await wait_for(app, "hello from the house")
    assert fake_provider.requests[-1].headers["authorization"] == "Bearer house-key"


class BrokenSetup:
    @hookimpl
    def agent_setup_provider(self, ui, config, providers, problem):
        async def choose():
            raise RuntimeError("house directory unreachable")
        return choose()


async def test_a_setup_plugin_that_fails_is_reported_and_the_app_goes_on(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    (home / "config.toml").write_text("# mine\n")
    app = make_app(tmp_path, None, without=["setup"], extra=[("house", BrokenSetup())])
    app.start()
    rows = await wait_for(app, "the provider setup failed")
    assert "house directory unreachable" in " ".join(rows.split())
    assert "no enabled plugin offers" not in rows and app.modal is None
    assert any("agent_setup_provider failed" in p for p in app.hooks.problems)
    assert (home / "config.toml").read_text() == "# mine\n"
