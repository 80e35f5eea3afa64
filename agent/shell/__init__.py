"""The command-line reader: what a bash command line would run, read with the tree-sitter grammar.

Empty on purpose: nothing is imported eagerly (start-up time is measured).
"""
