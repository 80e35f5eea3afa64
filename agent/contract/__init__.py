"""The contract: the types and hooks plugins implement against, and the typed facade the core calls
them through.

Empty on purpose: nothing is imported eagerly (start-up time is measured).
"""
