"""Widgets of the full-screen UI."""
