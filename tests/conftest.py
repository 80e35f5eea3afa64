"""Shared fixtures: the same ones plugin authors get from ``agent.testing.pytest_plugin``."""

pytest_plugins = ["agent.testing.pytest_plugin"]
