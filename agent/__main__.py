"""``python -m agent``."""

from agent.boot.cli import main

raise SystemExit(main())
