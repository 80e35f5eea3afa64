"""Containment: the sandbox every process starts in, the workspace jail, the secrets policy, safe
git, file modes.

Empty on purpose: nothing is imported eagerly (start-up time is measured).
"""
