# Copyright: multinode.horovod contributors
# SPDX-License-Identifier: GPL-3.0-or-later
"""The collection builds, installs offline from its tarball, and documents every role."""

from __future__ import annotations

import importlib
import os
import re
import shutil
import subprocess
import tarfile
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


# What a built collection holds at its top level: the files ansible-galaxy writes, the documents and
# the directories of the collection itself (LICENSE and docs/ where the checkout has them).
BUILT = {"MANIFEST.json", "FILES.json"}
SHIPPED = {"README.md", "CHANGELOG.md", "LICENSE", "site.yml", "meta", "roles", "playbooks", "plugins"}
SHIPPED |= {"inventories", "docs", "changelogs", "SECURITY.md"}
# What a working tree gathers that is no part of the collection: caches, virtualenvs, logs, builds.
LITTER = [
    ".pytest_cache/v/cache/nodeids",
    ".ruff_cache/0.1/123",
    ".mypy_cache/3.11/x.json",
    ".venv/bin/python",
    ".venv/lib/python3.11/site-packages/x.py",
    "venv/bin/python",
    ".cache/logs/x.log",
    ".cache/collections/ansible_collections/multinode/horovod/README.md",
    ".ansible/collections/x",
    ".tox/py/x",
    "__pycache__/x.cpython-311.pyc",
    "plugins/filter/__pycache__/cluster.cpython-311.pyc",
    "plugins/filter/stray.pyc",
    "make-test.log",
    "roles/nfs_server/debug.log",
    "tests/output/junit/x.xml",
    "molecule/nfs_server/.molecule/state.yml",
    "roles/nfs_server/.molecule/state.yml",
    "playbooks/.site.yml.swp",
    "multinode-horovod-0.0.1.tar.gz",
    "site.retry",
]


def tracked_files() -> list[str]:
    res = subprocess.run(["git", "ls-files", "-z"], cwd=REPO, capture_output=True, text=True, check=False)
    if res.returncode != 0 or not shutil.which("ansible-galaxy"):
        pytest.skip("needs a git checkout and ansible-galaxy on PATH")
    return [name for name in res.stdout.split("\0") if name and (REPO / name).exists()]


def test_a_build_from_a_used_tree_ships_the_collection_and_nothing_else(tmp_path):
    tree = tmp_path / "checkout"
    tracked = tracked_files()
    for name in tracked:
        (tree / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(REPO / name, tree / name, follow_symlinks=False)
    for name in LITTER:
        (tree / name).parent.mkdir(parents=True, exist_ok=True)
        (tree / name).write_text("litter\n")
    out = tmp_path / "out"
    run("ansible-galaxy", "collection", "build", "--output-path", str(out), str(tree))
    (tarball,) = out.glob("multinode-horovod-*.tar.gz")
    with tarfile.open(tarball) as tar:
        members = tar.getmembers()
    shipped = {m.name for m in members if not m.isdir()}

    top = {name.split("/", 1)[0] for name in shipped}
    assert top <= BUILT | SHIPPED, f"not part of a collection: {sorted(top - BUILT - SHIPPED)}"
    assert BUILT | {"README.md", "meta", "roles", "playbooks", "plugins", "site.yml"} <= top
    # Every tracked file of the collection's own directories ships, and nothing else does.
    wanted = {name for name in tracked if name.split("/", 1)[0] in SHIPPED}
    assert shipped - BUILT == wanted, (
        f"shipped but not the collection's: {sorted(shipped - BUILT - wanted)}; missing: {sorted(wanted - shipped)}"
    )


@pytest.mark.parametrize("role", ROLES)
def test_ansible_doc_documents_every_role_option(installed, role):
    _unused, env = installed
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


def templated_descriptions(spec: object) -> list[str]:
    """Descriptions in an argument spec with Jinja markers: the role's argument validation templates
    the whole spec, descriptions included, so '{{ ... }}' there fails every run of the role (defaults
    may be templates, on purpose)."""
    found: list[str] = []
    if isinstance(spec, dict):
        for key, value in spec.items():
            if key in ("description", "short_description"):
                lines = value if isinstance(value, list) else [value]
                found += [str(line) for line in lines if re.search(r"\{\{|\{%|\{#", str(line))]
            else:
                found += templated_descriptions(value)
    elif isinstance(spec, list):
        for item in spec:
            found += templated_descriptions(item)
    return found


@pytest.mark.parametrize("role", ROLES)
def test_argument_spec_descriptions_hold_no_template(role):
    spec = yaml.safe_load((REPO / "roles" / role / "meta" / "argument_specs.yml").read_text())
    assert templated_descriptions(spec) == []


def test_a_template_in_a_description_is_found():
    bad = {"options": {"x": {"default": "{{ y }}/runs", "description": ["Image ID ({{.Image}})."]}}}
    assert templated_descriptions(bad) == ["Image ID ({{.Image}})."]


FILTER_FILES = sorted(p.stem for p in (REPO / "plugins" / "filter").glob("*.py"))


@pytest.mark.parametrize("plugin", FILTER_FILES)
def test_every_filter_has_its_documentation_file(plugin):
    """ansible-doc reads a filter's documentation from <name>.yml beside the plugin file."""
    module = importlib.import_module(f"ansible_collections.multinode.horovod.plugins.filter.{plugin}")
    for name in module.FilterModule().filters():
        doc = REPO / "plugins" / "filter" / f"{name}.yml"
        assert doc.is_file(), f"{plugin}.py: {name} has no {doc.name}"
        text = doc.read_text()
        for section in ("DOCUMENTATION:", "EXAMPLES:", "RETURN:", f"name: {name}"):
            assert section in text, f"{doc.name}: {section}"


# --- vars/main.yml holds constants only ----------------------------------------------------------
# Decisions live in unit-tested filters (plugins/filter/) called by the tasks; a role's vars/main.yml
# names fixed values. A template there may only name a variable (of that file, the role's inputs, or a
# fact the role's tasks set), maybe as a string, or read one of the role's files.
_REFERENCE = re.compile(r"\s*[A-Za-z_]\w*(\s*\|\s*string)?\s*")
_FILE_LOOKUP = re.compile(r"\s*lookup\('ansible\.builtin\.file', '[\w.-]+'\)\s*")


def computed_values(values: object, where: str = "") -> list[str]:
    """The entries of a vars file that compute something (a filter, a test, a condition, a loop)."""
    if isinstance(values, dict):
        return [problem for key, value in values.items() for problem in computed_values(value, f"{where}{key}.")]
    if isinstance(values, list):
        return [problem for i, value in enumerate(values) for problem in computed_values(value, f"{where}{i}.")]
    text = str(values)
    bad = ["{%"] if "{%" in text else []
    bad += [
        e for e in re.findall(r"{{(.*?)}}", text, re.S) if not (_REFERENCE.fullmatch(e) or _FILE_LOOKUP.fullmatch(e))
    ]
    return [f"{where.rstrip('.')}: {item.strip()}" for item in bad]


@pytest.mark.parametrize("role", ROLES)
def test_vars_main_holds_constants_only(role):
    path = REPO / "roles" / role / "vars" / "main.yml"
    values = yaml.safe_load(path.read_text()) if path.is_file() else {}
    assert computed_values(values or {}) == []


def test_a_computed_value_in_vars_main_is_found():
    values = {
        "__x_dir": "/etc/x",
        "__x_file": "{{ __x_dir }}/f",
        "__x_port": ["-p", "{{ x_port | string }}"],
        "__x_code": "{{ lookup('ansible.builtin.file', 'helper.py') }}",
        "__x_np": "{{ x_hosts | length }}",
        "__x_env": {"line": "{% for k in x_env %}{{ k }}{% endfor %}"},
        "__x_when": "{{ 'a' if x_flag else 'b' }}",
    }
    assert computed_values(values) == [
        "__x_np: x_hosts | length",
        "__x_env.line: {%",
        "__x_when: 'a' if x_flag else 'b'",
    ]


def test_the_playbooks_vars_run_no_jinja_programs():
    # Loops and assignments belong in filters (plugins/filter/cluster.py: cluster_image_ids...).
    for path in sorted((REPO / "playbooks" / "vars").glob("*.yml")):
        assert "{%" not in path.read_text(), path.name
