"""Builtin plugins: each module is one plugin, listed under the agent.plugins entry points."""
