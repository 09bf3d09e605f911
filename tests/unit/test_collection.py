"""The collection builds, installs offline from its tarball, and documents every role."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
ROLES = sorted(p.name for p in (REPO / "roles").iterdir() if (p / "meta" / "argument_specs.yml").is_file())


def run(*argv: str, env: dict[str, str] | None = None, cwd: Path | None = None) -> str:
    res = subprocess.run(argv, capture_output=True, text=True, env=env, cwd=cwd, check=False)
    assert res.returncode == 0, f"{' '.join(argv)} failed:\n{res.stdout}\n{res.stderr}"
    return res.stdout


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    if not shutil.which("ansible-galaxy"):
        pytest.skip("ansible-galaxy is not on PATH (run through make unit)")
    out = tmp_path_factory.mktemp("build")
    dest = tmp_path_factory.mktemp("collections")
    run("ansible-galaxy", "collection", "build", "--output-path", str(out), str(REPO))
    (tarball,) = out.glob("multinode-horovod-*.tar.gz")
    # --offline: dependencies must come from what is installed (the `ansible` package), not Galaxy.
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=str(dest))
    run("ansible-galaxy", "collection", "install", "--offline", "-p", str(dest), str(tarball), env=env)
    return dest, env


def test_tarball_holds_no_test_scaffolding(installed):
    dest, _ = installed
    root = dest / "ansible_collections" / "multinode" / "horovod"
    assert (root / "galaxy.yml").exists() or (root / "MANIFEST.json").exists()
    for unwanted in (".venv", ".cache", "molecule", "tools", "images", ".git"):
        assert not (root / unwanted).exists(), f"{unwanted} shipped in the collection"


@pytest.mark.parametrize("role", ROLES)
def test_ansible_doc_documents_every_role_option(installed, role):
    _, env = installed
    text = run("ansible-doc", "-t", "role", f"multinode.horovod.{role}", env=env, cwd=Path("/"))
    spec = yaml.safe_load((REPO / "roles" / role / "meta" / "argument_specs.yml").read_text())
    for option in spec["argument_specs"]["main"]["options"]:
        assert option in text, f"ansible-doc for {role} does not mention {option}"


@pytest.mark.parametrize("role", ROLES)
def test_defaults_match_the_argument_spec(role):
    spec = yaml.safe_load((REPO / "roles" / role / "meta" / "argument_specs.yml").read_text())
    options = spec["argument_specs"]["main"]["options"]
    defaults_file = REPO / "roles" / role / "defaults" / "main.yml"
    defaults = yaml.safe_load(defaults_file.read_text()) or {} if defaults_file.exists() else {}
    assert set(defaults) == {name for name, opt in options.items() if not opt.get("required")}, (
        f"{role}: defaults/main.yml and the argument spec list different options"
    )
    for name, value in defaults.items():
        assert options[name].get("default") == value, f"{role}: {name} default differs from the spec"
