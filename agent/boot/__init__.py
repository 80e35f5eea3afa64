"""Start-up and front doors: the command line, headless mode, doctor, config, plugin discovery and
loading.

Empty on purpose: nothing is imported eagerly (start-up time is measured).
"""
