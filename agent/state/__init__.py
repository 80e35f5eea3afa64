"""The state database: one SQLite store and the tables plugins declare in it.

Empty on purpose: nothing is imported eagerly (start-up time is measured).
"""
