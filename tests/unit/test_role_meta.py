# Copyright: multinode.horovod contributors
# SPDX-License-Identifier: GPL-3.0-or-later
"""Every role's meta/main.yml tells the truth: the Ansible it needs and the platforms it is tested on.

TESTED is the one list of what the test beds run: the host releases of tools/images.py and
tools/umlbed/debian.py (MNH_DEBIAN; make test-all runs every scenario on each). A role declares
exactly these platforms, needs the ansible-core that meta/runtime.yml requires, and ships
vars/<name>.yml only for a declared platform (the NFS roles load vars/<os_family>.yml,
vars/<distribution>.yml and vars/<distribution>_<major version>.yml).
"""

from __future__ import annotations

import importlib
import re
import sys
from pathlib import Path

import pytest
import yaml
from checkout import load

REPO = Path(__file__).resolve().parents[2]
ROLES = sorted(p.parent.parent.name for p in (REPO / "roles").glob("*/meta/main.yml"))
TESTED = {"Debian": ["bookworm", "trixie"]}
MAJOR = {"bookworm": "12", "trixie": "13"}  # ansible_facts['distribution_major_version'] of each tested release


def version(text: str) -> tuple[int, ...]:
    parts = [int(p) for p in text.split(".")]
    return tuple(parts + [0] * (3 - len(parts)))


def required_ansible() -> tuple[int, ...]:
    spec = yaml.safe_load((REPO / "meta" / "runtime.yml").read_text())["requires_ansible"]
    match = re.fullmatch(r">=\s*([0-9.]+)(?:\s*,.*)?", spec.strip())
    assert match, f"meta/runtime.yml: requires_ansible {spec!r} has no '>=' minimum first"
    return version(match.group(1))


def galaxy_info(role: str) -> dict:
    return yaml.safe_load((REPO / "roles" / role / "meta" / "main.yml").read_text())["galaxy_info"]


def declared(info: dict) -> dict[str, list[str]]:
    return {p["name"]: [str(v) for v in p.get("versions", [])] for p in info.get("platforms", [])}


def stray_vars_files(role_dir: Path, platforms: dict[str, list[str]]) -> list[str]:
    """vars/<name>.yml files of a role that name no declared platform."""
    allowed = {"main"} | set(platforms)
    allowed |= {f"{name}_{MAJOR[v]}" for name, versions in platforms.items() for v in versions if v in MAJOR}
    return sorted(p.name for p in (role_dir / "vars").glob("*.yml") if p.stem not in allowed)


def test_the_tested_list_is_what_the_test_images_run():
    load("tools/progress.py", "progress")  # images.py imports it as its sibling
    images = load("tools/images.py", "mnh_images_meta")
    umlbed_debian = load("tools/umlbed/debian.py", "mnh_umlbed_debian_meta")
    assert list(images.RELEASES) == TESTED["Debian"]
    assert list(umlbed_debian.RELEASES) == TESTED["Debian"]
    assert images.DEFAULT_RELEASE in TESTED["Debian"]
    assert set(MAJOR) == {v for versions in TESTED.values() for v in versions}


@pytest.mark.parametrize("role", ROLES)
def test_min_ansible_version_is_what_runtime_yml_requires(role):
    minimum = galaxy_info(role)["min_ansible_version"]
    assert isinstance(minimum, str), f"{role}: quote min_ansible_version ({minimum!r} is read as a number)"
    assert version(minimum) == required_ansible(), f"{role}: min_ansible_version {minimum} != meta/runtime.yml"


@pytest.mark.parametrize("role", ROLES)
def test_platforms_are_exactly_the_tested_ones(role):
    assert declared(galaxy_info(role)) == TESTED


@pytest.mark.parametrize("role", ROLES)
def test_os_vars_files_belong_to_a_declared_platform(role):
    assert stray_vars_files(REPO / "roles" / role, declared(galaxy_info(role))) == []


def test_a_vars_file_of_an_undeclared_platform_is_found(tmp_path):
    (tmp_path / "vars").mkdir()
    for name in ("main", "Debian", "Debian_12", "Debian_11", "RedHat", "Ubuntu"):
        (tmp_path / "vars" / f"{name}.yml").write_text("---\n")
    assert stray_vars_files(tmp_path, TESTED) == ["Debian_11.yml", "RedHat.yml", "Ubuntu.yml"]


def test_version_compares_padded():
    assert version("2.18") == version("2.18.0") != version("2.16")


# --- every input listed once: defaults/main.yml and meta/argument_specs.yml --------------------------
# A role's rules (plugins/plugin_utils/<role>_rules.py) get its inputs from its argument spec: its first
# check hands role_problems every variable with the role's prefix (the varnames and vars lookups), and
# role_problems takes the options of the spec from them. So a new variable needs its default, its spec
# option and its README row, and nothing lists it again.
RULES = sorted(role for role in ROLES if (REPO / "plugins" / "plugin_utils" / f"{role}_rules.py").is_file())


def read_by_rules(role: str) -> set[str]:
    """The role variables the rules module names: "nfs_server_exports" or f"{P}nodes" (P, the prefix)."""
    text = (REPO / "plugins" / "plugin_utils" / f"{role}_rules.py").read_text()
    found = set(re.findall(rf"[\"'{{]({role}_\w+)", text))
    return found | {f"{role}_{name}" for name in re.findall(r"\{P\}(\w+)", text)}


@pytest.mark.parametrize("role", RULES)
def test_the_rules_read_only_options_of_the_argument_spec(role):
    roles = importlib.import_module("ansible_collections.multinode.horovod.plugins.plugin_utils.roles")
    assert read_by_rules(role), f"{role}_rules.py names no variable: the test reads the wrong file"
    assert read_by_rules(role) - set(roles.spec(role)) == set()


@pytest.mark.parametrize("role", sorted(set(RULES) - {"ssh_trust"}))
def test_the_first_check_hands_the_rules_every_option(role):
    (first, *_unused) = yaml.safe_load((REPO / "roles" / role / "tasks" / "assert.yml").read_text())
    assert first["name"] == "Check the role's inputs", f"{role}: the input rules must be the role's first check"
    problems = " ".join(first["vars"][f"__{role}_problems"].split())
    assert problems == (
        f"{{{{ dict(__{role}_set | zip(query('ansible.builtin.vars', *__{role}_set))) "
        f"| multinode.horovod.role_problems('{role}', __{role}_setting_names | default({{}})) }}}}"
    )
    assert first["vars"][f"__{role}_set"] == f"{{{{ query('ansible.builtin.varnames', '^{role}_') }}}}"


@pytest.mark.parametrize("role", RULES)
def test_role_problems_hands_the_rules_exactly_the_spec_options(role, monkeypatch):
    roles = importlib.import_module("ansible_collections.multinode.horovod.plugins.plugin_utils.roles")
    filters = importlib.import_module("ansible_collections.multinode.horovod.plugins.filter.role_rules")
    seen = {}
    monkeypatch.setattr(roles, "rules", lambda name: lambda inputs: seen.update(inputs) or [("x", name)])
    given = {name: f"value of {name}" for name in roles.spec(role)} | {f"{role}_typo": 1, "unrelated": 2}
    assert filters.role_problems(given, role) == [f"x: {role}"]
    assert seen == {name: f"value of {name}" for name in roles.spec(role)}


def test_a_rule_on_a_variable_outside_the_spec_is_found(tmp_path, monkeypatch):
    rules = tmp_path / "plugins" / "plugin_utils" / "nfs_client_rules.py"
    rules.parent.mkdir(parents=True)
    rules.write_text('inputs.get("nfs_client_wait_timeout")\ninputs.get("nfs_client_timeout")\n')
    monkeypatch.setattr(sys.modules[__name__], "REPO", tmp_path)
    assert read_by_rules("nfs_client") == {"nfs_client_wait_timeout", "nfs_client_timeout"}
