"""Small shared helpers with no knowledge of the agent: atomic writes, frontmatter, globs, path
parts, the walker, money.

Empty on purpose: nothing is imported eagerly (start-up time is measured).
"""
