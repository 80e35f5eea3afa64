"""What the core knows about a provider comes from its ProviderSpec: which one is picked when
the user named none (auto_priority + its key variable), and the SDK modules to warm."""

from __future__ import annotations

import pytest

from agent import ProviderSpec, hookimpl
from agent.boot.runtime import StartupError, provider_settings
from agent.loop.session import Runtime
from agent.testing import make_boot


class Local:
    """A third-party provider that wants to be picked first when its key is set."""

    @hookimpl
    def agent_register_providers(self, register):
        register(ProviderSpec(name="localai", create=lambda settings: None,
                              env_key="LOCALAI_KEY", default_model="tiny",
                              auto_priority=30, warm_modules=("localai_sdk",)))


@pytest.fixture
def boot(tmp_path):
    made = []

    def make(*extra):
        ws = tmp_path / "ws"
        ws.mkdir(exist_ok=True)
        config, hooks = make_boot(ws, tmp_path / "home", builtins=["openai", "anthropic"],
                                  extra=[("localai", p) for p in extra])
        made.append((config, hooks))
        return config, hooks

    yield make
    for config, hooks in made:
        hooks.unconfigure(config)


@pytest.mark.parametrize(("env", "picked"), [
    ({"OPENAI_API_KEY": "o"}, "openai"),
    ({"ANTHROPIC_API_KEY": "a"}, "anthropic"),
    ({"OPENAI_API_KEY": "o", "ANTHROPIC_API_KEY": "a"}, "anthropic"),
])
def test_the_provider_whose_key_is_set_is_picked(boot, env, picked):
    config, hooks = boot()
    settings = provider_settings(config, hooks.providers(config), env)
    assert settings.provider == picked
    assert settings.api_key == env[f"{picked.upper()}_API_KEY"]


def test_without_any_key_the_most_preferred_provider_asks_for_its_key(boot):
    config, hooks = boot()
    with pytest.raises(StartupError, match='no API key for provider "anthropic": set '
                                           "ANTHROPIC_API_KEY or AGENT_API_KEY"):
        provider_settings(config, hooks.providers(config), {})


def test_a_third_party_spec_takes_part_in_the_choice_by_its_own_facts(boot):
    config, hooks = boot(Local())
    specs = hooks.providers(config)
    chosen = provider_settings(config, specs, {"LOCALAI_KEY": "k", "OPENAI_API_KEY": "o"})
    assert (chosen.provider, chosen.model, chosen.api_key) == ("localai", "tiny", "k")
    # Its key not set: a provider whose key is set wins over a higher priority without one.
    assert provider_settings(config, specs, {"OPENAI_API_KEY": "o"}).provider == "openai"


def test_providers_that_do_not_take_part_are_used_only_when_named(boot):
    class Named:
        @hookimpl
        def agent_register_providers(self, register):
            register(ProviderSpec(name="manual", create=lambda s: None, keyless=True))

    ws_config, hooks = boot(Named())
    only = {"manual": hooks.providers(ws_config)["manual"]}
    with pytest.raises(StartupError, match="no provider chosen: set provider in the config "
                                           "file, AGENT_PROVIDER or --provider. Available: "
                                           "manual"):
        provider_settings(ws_config, only, {})
    ws_config.flag_values["provider"] = "manual"
    assert provider_settings(ws_config, only, {}).provider == "manual"


def test_the_runtime_declares_every_field(boot):
    config, hooks = boot()
    runtime = Runtime(config=config, hooks=hooks, tools={}, provider=None)
    with pytest.raises(AttributeError):
        runtime.provider_label = "set on the side"  # type: ignore[attr-defined]
    runtime.provider_name = "openai"  # a declared field
    assert runtime.provider_name == "openai"
