"""One turn: the agent loop, the gate every tool call passes, permission rules, guards, and the
stream/retry plumbing.

Empty on purpose: nothing is imported eagerly (start-up time is measured).
"""
