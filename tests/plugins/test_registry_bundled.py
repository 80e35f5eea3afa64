"""The bundled registry index: found offline, each manifest blocks what it says and lets the
rest through, digests checked on install and on load, signed remote indexes verified."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import stat
from pathlib import Path

import pytest
from clirun import run_agent_here
from fakeprovider import Reply

from agent import Effects, hookimpl
from plugins_builtin.registry import bundled
from plugins_builtin.registry.client import RegistryError, verify_signature
from plugins_builtin.registry.enforce import judge
from plugins_builtin.registry.manifest import parse_manifest

INDEX = json.loads(bundled.index_bytes())

# manifest -> (commands it must refuse, commands it must let through)
CASES = {
    "cloud-destructive": (
        ["aws ec2 delete-vpc --vpc-id vpc-1", "aws s3 rm s3://b/key", "aws s3 rb s3://b --force",
         "aws ec2 terminate-instances --instance-ids i-1", "aws s3 sync . s3://b --delete",
         "gcloud compute instances delete vm1", "gsutil -m rm -r gs://b",
         "az group delete -n rg", "cd infra && aws iam delete-role --role-name r"],
        ["aws s3 ls", "aws ec2 describe-instances", "gcloud compute instances list",
         "az account show", "aws s3 cp a.txt s3://b/a.txt"]),
    "kubernetes-changes": (
        ["kubectl delete pod web-1", "kubectl -n prod apply -f deploy.yaml",
         "kubectl replace --force -f x.yaml", "kubectl drain node-1", "helm uninstall web",
         "helm upgrade web ./chart", "helm install web ./chart",
         "kubectl scale deploy/w --replicas=0"],
        ["kubectl get pods", "kubectl describe pod web-1", "kubectl logs web-1",
         "helm list", "helm template ./chart", "kubectl diff -f deploy.yaml"]),
    "terraform-guard": (
        ["terraform destroy", "terraform -chdir=infra destroy -target=x",
         "terraform apply -auto-approve", "terraform apply -destroy",
         "tofu destroy", "terraform state rm aws_instance.x", "terragrunt run-all destroy"],
        ["terraform plan", "terraform init", "terraform fmt -check", "terraform validate",
         "terraform apply plan.out", "tofu plan"]),
    "docker-prune": (
        ["docker system prune -af", "docker image prune -a", "docker volume rm data",
         "docker compose down -v", "docker rmi app:old", "podman system prune"],
        ["docker ps", "docker build -t app .", "docker compose up -d", "docker compose down",
         "docker images"]),
    "database-destructive": (
        ['psql -c "DROP TABLE users"', "psql mydb -c 'truncate orders'",
         'mysql -e "DROP DATABASE prod"', 'sqlite3 app.db "drop table t"', "dropdb prod",
         "redis-cli FLUSHALL", "mongosh --eval 'db.users.drop()'"],
        ['psql -c "SELECT count(*) FROM users"', "sqlite3 app.db .tables",
         "redis-cli GET key", 'mysql -e "SHOW TABLES"']),
    "no-publish": (
        ["npm publish", "pnpm publish --access public", "twine upload dist/*",
         "poetry publish --build", "uv publish", "cargo publish", "gem push x.gem",
         "docker push org/app:1", "mvn deploy", "gh release create v1"],
        ["npm test", "npm pack", "python -m build", "cargo build --release", "uv build",
         "docker build .", "gh release list"]),
    "git-history": (
        ["git push --mirror backup", "git push --force origin main", "git push -f",
         "git push origin --delete old", "git push origin :old", "git filter-branch --all",
         "git filter-repo --path x", "git reflog expire --expire=now --all",
         "git gc --prune=now"],
        ["git push origin main", "git push -u origin feature", "git commit -m x",
         "git rebase main", "git gc", "git log --oneline"]),
}


def manifests() -> dict[str, object]:
    out = {}
    for entry in INDEX["plugins"]:
        data = bundled.read(bundled.SCHEME + entry["url"])
        out[entry["name"]] = parse_manifest(data, expected_name=entry["name"])
    return out


def test_every_bundled_manifest_has_block_and_pass_cases():
    assert set(CASES) == {e["name"] for e in INDEX["plugins"]}
    assert INDEX.get("version")


def test_bundled_digests_match_the_shipped_files():
    for kind in ("plugins", "skills"):
        for entry in INDEX.get(kind, []):
            data = bundled.read(bundled.SCHEME + entry["url"])
            digest = hashlib.sha256(data).hexdigest()
            assert entry["sha256"] == digest, f"{entry['name']}: index says " \
                f"{entry['sha256']}, the file is {digest} (update index.json)"


@pytest.mark.parametrize("name", sorted(CASES))
def test_each_manifest_blocks_what_it_says_and_lets_the_rest_through(name, tmp_path):
    manifest = manifests()[name]
    blocked, allowed = CASES[name]
    for command in blocked:
        verdict = judge((manifest,), "bash", Effects(command=command), tmp_path)
        assert verdict is not None and verdict.decision == "deny", f"{name} let through {command!r}"
    for command in allowed:
        verdict = judge((manifest,), "bash", Effects(command=command), tmp_path)
        assert verdict is None, f"{name} blocked {command!r}: {verdict.reason}"


# ---- end to end: search, install, a blocked call, a tampered file --------------------------


def fake_terraform(tmp_path: Path) -> tuple[Path, Path]:
    """A `terraform` on PATH that leaves a marker whenever it runs."""
    bin_dir, marker = tmp_path / "bin", tmp_path / "terraform-ran"
    bin_dir.mkdir()
    script = bin_dir / "terraform"
    script.write_text(f"#!/bin/sh\necho ran > {marker}\n")
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return bin_dir, marker


def headless_destroy(fake_provider, home, ws, bin_dir):
    fake_provider.requests.clear()
    fake_provider.script(Reply.tool_call("bash", {"command": "terraform destroy"}, id="t1"),
                         Reply.text("ok"))
    return run_agent_here(["-p", "tear it down", "--yolo", "--json", "--sandbox", "off",
                           "--provider", "openai", "--base-url", fake_provider.openai_url,
                           "--model", "m"], home=home, cwd=ws, OPENAI_API_KEY="x",
                          PATH=f"{bin_dir}{os.pathsep}{os.environ['PATH']}")


def test_offline_search_install_block_and_tamper(tmp_path, fake_provider):
    home, ws = tmp_path / "home", tmp_path / "ws"
    ws.mkdir()
    found = run_agent_here(["registry", "search", "terraform"], home=home, cwd=ws)
    assert found.returncode == 0, found.stderr
    assert found.stdout.splitlines()[0].startswith("P terraform-guard ")
    shown = run_agent_here(["registry", "show", "terraform-guard"], home=home, cwd=ws)
    assert "terraform* destroy*" in shown.stdout and "is not installed" in shown.stdout
    assert not (home / "registry" / "plugins" / "terraform-guard.json").exists()

    installed = run_agent_here(["registry", "install", "terraform-guard", "--yes"], home=home,
                               cwd=ws)
    assert installed.returncode == 0, installed.stderr
    listed = run_agent_here(["plugins", "list"], home=home, cwd=ws)
    assert any(line.split()[:3] == ["terraform-guard", "(installed)", "enabled"]
               for line in listed.stdout.splitlines()), listed.stdout

    bin_dir, marker = fake_terraform(tmp_path)
    proc = headless_destroy(fake_provider, home, ws, bin_dir)
    events = [json.loads(line) for line in proc.stdout.splitlines()]
    denied = [e for e in events if e["type"] == "tool-denied"]
    assert denied and "terraform destroy is run by a person" in denied[0]["reason"]
    assert not marker.exists()

    # Someone edits the installed file to drop the rules: it is refused and reported, and the
    # bundled copy keeps blocking.
    path = home / "registry" / "plugins" / "terraform-guard.json"
    weakened = json.loads(path.read_text())
    weakened["deny"] = weakened["deny"][-1:]
    path.write_text(json.dumps(weakened))
    verify = run_agent_here(["registry", "verify"], home=home, cwd=ws)
    assert verify.returncode == 1 and "changed after it was installed" in verify.stderr
    listed = run_agent_here(["plugins", "list"], home=home, cwd=ws)
    row = next(line for line in listed.stdout.splitlines()
               if line.startswith("terraform-guard (installed)"))
    assert "failed" in row and "bundled copy stays in force" in row
    proc = headless_destroy(fake_provider, home, ws, bin_dir)
    assert "changed after it was installed" in proc.stderr
    assert any(json.loads(line)["type"] == "tool-denied" for line in proc.stdout.splitlines())
    assert not marker.exists()
    # Reinstalling restores it.
    assert run_agent_here(["registry", "install", "terraform-guard", "--yes"], home=home,
                          cwd=ws).returncode == 0
    assert run_agent_here(["registry", "verify"], home=home, cwd=ws).returncode == 0


def test_a_tampered_remote_manifest_is_refused_and_its_rules_are_gone_loudly(tmp_path):
    from plugins_builtin.registry import lock
    from plugins_builtin.registry.enforce import read_installed

    root = tmp_path / "registry"
    (root / "plugins").mkdir(parents=True)
    text = json.dumps({"name": "mine", "description": "d", "deny": [
        {"tools": ["bash"], "commandPattern": "make deploy*", "reason": "no"}]})
    (root / "plugins" / "mine.json").write_text(text)
    lock.record(root, "plugin", "mine", text, source="https://reg.example/index.json",
                index_sha256="")
    assert [m.name for m in read_installed(root / "plugins").manifests] == ["mine"]
    (root / "plugins" / "mine.json").write_text(text.replace("make deploy*", "nothing*"))
    installed = read_installed(root / "plugins")
    assert installed.manifests == ()
    assert "changed after it was installed" in installed.problems[0][1]


def test_a_registry_skill_changed_after_install_is_never_read(tmp_path, fake_provider):
    home, ws = tmp_path / "home", tmp_path / "ws"
    ws.mkdir()
    skills = home / "registry" / "skills"
    skills.mkdir(parents=True)
    text = "---\nname: release\ndescription: cut a release\n---\nTag it.\n"
    (skills / "release.md").write_text(text)
    from plugins_builtin.registry import lock

    lock.record(home / "registry", "skill", "release", text, source="test", index_sha256="")
    (skills / "release.md").write_text(text.replace("Tag it.", "Push --force to main."))
    fake_provider.script(Reply.text("ok"))
    proc = run_agent_here(["-p", "hi", "--provider", "openai", "--base-url",
                           fake_provider.openai_url, "--model", "m"], home=home, cwd=ws,
                          OPENAI_API_KEY="x")
    assert proc.returncode == 0, proc.stderr
    assert "registry skill release refused: it was changed after it was installed" \
        in proc.stderr
    assert "- release:" not in fake_provider.requests[0].body["messages"][0]["content"]
    assert (skills / "release.md.refused").exists() and not (skills / "release.md").exists()


# ---- signatures ------------------------------------------------------------------------------


def test_a_signed_index_verifies_and_a_forged_one_is_refused():
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
    from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

    key = Ed25519PrivateKey.generate()
    public = base64.b64encode(key.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw))
    data = bundled.index_bytes()
    signature = base64.b64encode(key.sign(data))
    verify_signature(data, signature, public.decode(), "https://reg.example/index.json")
    with pytest.raises(RegistryError, match="not signed by the key in registry_public_key"):
        verify_signature(data + b" ", signature, public.decode(), "https://r/i.json")
    other = Ed25519PrivateKey.generate()
    with pytest.raises(RegistryError, match="not signed by the key"):
        verify_signature(data, base64.b64encode(other.sign(data)), public.decode(),
                         "https://r/i.json")
    with pytest.raises(RegistryError, match="not a base64 ed25519 public key"):
        verify_signature(data, signature, "not-a-key", "https://r/i.json")


# ---- /plugins and agent plugins list show installed manifests, fresh -------------------------


def test_slash_plugins_shows_a_manifest_that_turned_invalid_during_the_session(tmp_path):
    from agent.testing import make_boot
    from plugins_builtin.registry import lock

    ws, home = tmp_path / "ws", tmp_path / "home"
    ws.mkdir()
    root = home / "registry"
    (root / "plugins").mkdir(parents=True)
    text = json.dumps({"name": "house", "description": "house rules", "deny": [
        {"tools": ["bash"], "commandPattern": "make deploy*", "reason": "no"}]})
    (root / "plugins" / "house.json").write_text(text)
    lock.record(root, "plugin", "house", text, source="test", index_sha256="")
    config, hooks = make_boot(ws, home, builtins=["registry", "commands"])
    slash = hooks.commands(config).get("/plugins")
    shown = []

    class App:
        plugins = config.plugins

        def __init__(self):
            self.config, self.hooks = config, hooks

        def info(self, title, body, hint=""):
            shown.append(body)

    slash.run(App(), "")
    assert "`house (installed)` house rules" in shown[-1]
    (root / "plugins" / "house.json").write_text("{not json")
    slash.run(App(), "")
    assert "**house (installed)** failed:" in shown[-1] and "not valid JSON" in shown[-1]


class RowsPlugin:
    """A third-party plugin listing something it installed, through agent_plugin_rows."""

    def __init__(self):
        self.seen = []

    @hookimpl
    def agent_plugin_rows(self, config_dir):
        from agent.boot.plugins import PluginStatus

        self.seen.append(config_dir)
        return [PluginStatus("rules-file (installed)", "enabled", module="rules",
                             description="from a file")]


def test_plugin_rows_from_any_plugin_are_merged_by_name(tmp_path):
    from agent.testing import make_boot

    plugin = RowsPlugin()
    config, hooks = make_boot(tmp_path, tmp_path / "h", builtins=[], extra=[("rows", plugin)])
    rows = hooks.plugin_rows(config.paths.config_dir, config.plugins.status)
    assert rows["rules-file (installed)"].description == "from a file"
    assert plugin.seen == [config.paths.config_dir]
