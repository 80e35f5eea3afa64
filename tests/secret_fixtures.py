"""Secret files of every shape, with canaries, for the secrets tests."""

from __future__ import annotations

import os

CANARY = "CANARY-7f3a9e"


def secret_tree(ws):
    """A workspace with canaries in secret files of every shape, and plain files to find."""
    files = {
        ".env": f"TOKEN={CANARY}-dotenv\n",
        "sub/.ENV": f"TOKEN={CANARY}-upper\n",
        "conf/.env/prod.json": f'{{"token": "{CANARY}-envdir"}}\n',
        "a/b/c/credentials.json": f'{{"k": "{CANARY}-nested"}}\n',
        "deploy/id_rsa": f"-----BEGIN KEY-----\n{CANARY}-sshkey\n",
        ".env.local": f"X={CANARY}-ignored\n",
        ".gitignore": ".env.local\n",
        "main.py": "# CANARY-PUBLIC marker, not a secret\n",
        ".env.example": "TOKEN=CANARY-PUBLIC-template\n",
    }
    for rel, text in files.items():
        (ws / rel).parent.mkdir(parents=True, exist_ok=True)
        (ws / rel).write_text(text)
    os.symlink("deploy/id_rsa", ws / "notes.txt")        # an innocent name for a key
    os.symlink(".env", ws / "settings.cfg")
    os.symlink("conf/.env", ws / "configdir")            # a link to a secret directory
    return files
