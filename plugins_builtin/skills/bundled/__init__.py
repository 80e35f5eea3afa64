"""The skills bundled with agent, one markdown file each (shipped as package data)."""
