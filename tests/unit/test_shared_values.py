# Copyright: multinode.horovod contributors
# SPDX-License-Identifier: GPL-3.0-or-later
"""Each shared value is defined once, and every copy that must stay a copy agrees with it.

The values several roles, the site and the tools share (the ssh port, the container name, the share
paths, the host directories of the ssh roles) are written once, in plugins/module_utils/defaults.py;
the roles' rules and jobs.py import them, and a site setting takes its default from the role variable
it becomes (cluster.SETTINGS). What cannot import them is checked here:

- a role's default (defaults/main.yml, which users of the role alone need) equals the site's setting
  it is mapped from, and its README table shows it (test_collection.py checks the argument spec);
- a role's constants (vars/main.yml) and tools/lab.py's equal defaults.py;
- no other file of the collection or the tools holds a literal copy: every occurrence of a shared
  value is in ALLOWED, with the reason it is a definition or means something else. A stale entry fails
  too, so a changed value in defaults.py shows every copy that was left behind.

Tests and Molecule scenarios are not scanned: their literals are expectations.
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import yaml
from ansible_collections.multinode.horovod.plugins.module_utils import defaults
from ansible_collections.multinode.horovod.plugins.plugin_utils import cluster, roles
from checkout import load

REPO = Path(__file__).resolve().parents[2]
SCANNED = ("roles", "playbooks", "plugins", "tools", "inventories", "site.yml")
SKIPPED_PARTS = {"__pycache__"}

# The shared values as they are searched, longest first: a match is not counted again by a shorter
# pattern (/data1/share is SHARE_DIR, not also SHARE_ROOT). A path matches with anything below it.
_END = r"(?![\w-]|\.\w)"  # a full stop may follow, /data1.old may not
PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = tuple(
    (name, re.compile(pattern))
    for name, pattern in (
        ("SSHD_DIR", re.escape(defaults.SSHD_DIR) + _END),
        ("SSH_DIR", re.escape(defaults.SSH_DIR) + _END),
        ("CONTAINER_OWN_DIR", re.escape(defaults.CONTAINER_OWN_DIR) + _END),
        ("CONFIG_ROOT", re.escape(defaults.CONFIG_ROOT) + _END),
        ("CONTAINER_SSH_DIR", r"(?<![\w.-])" + re.escape(defaults.CONTAINER_SSH_DIR) + _END),
        ("SHARE_DIR", r"(?<![\w.-])" + re.escape(defaults.SHARE_DIR) + _END),
        ("ARTIFACT_DIR", r"(?<![\w.-])" + re.escape(defaults.ARTIFACT_DIR) + _END),
        ("SHARE_ROOT", r"(?<![\w.-])" + re.escape(defaults.SHARE_ROOT) + _END),
        ("SSH_PORT", rf"(?<![0-9]){defaults.SSH_PORT}(?![0-9])"),
        # The name as a value, not as part of multinode.horovod, horovod/horovod, horovod_launch or horovod==.
        ("CONTAINER_NAME", r"(?<![\w./:=@-])" + re.escape(defaults.CONTAINER_NAME) + r"(?![\w./:=@-])"),
    )
)


def occurrences(text: str) -> Counter[str]:
    """How often each shared value occurs in `text`."""
    found: Counter[str] = Counter()
    for name, pattern in PATTERNS:
        found[name] += len(pattern.findall(text))
        text = pattern.sub(lambda m: "\0" * len(m.group()), text)
    return +found


def scanned_files() -> list[Path]:
    files = []
    for top in SCANNED:
        path = REPO / top
        for file in [path] if path.is_file() else sorted(path.rglob("*")):
            if file.is_file() and not SKIPPED_PARTS & set(file.parts) and file.suffix != ".md":
                files.append(file)
    return files


def copies() -> Counter[tuple[str, str]]:
    """{(path, value name): count} over every scanned file."""
    found: Counter[tuple[str, str]] = Counter()
    for file in scanned_files():
        try:
            text = file.read_text()
        except UnicodeDecodeError:
            continue
        for name, count in occurrences(text).items():
            found[(file.relative_to(REPO).as_posix(), name)] = count
    return found


DEFINITION = "a definition: checked against defaults.py by this module"
SPEC = "the argument spec's default; test_collection.py checks it equals defaults/main.yml"
DOC = "documentation of the role or plugin (ansible-doc text, an example, a comment)"
GALAXY = "a Galaxy tag, not the container name"
MESSAGE = "a task message quoting the default; a role cannot read its own default once the caller sets it"
# Every place a shared value may be written, with how often and why; everything else must hand it on.
ALLOWED: dict[tuple[str, str], tuple[int, str]] = {
    ("plugins/module_utils/defaults.py", "CONFIG_ROOT"): (1, "the source"),
    # The parent of the roles' directories, which no role owns: teardown removes it once it is empty.
    ("playbooks/teardown.yml", "CONFIG_ROOT"): (2, "the roles' common parent, removed by teardown when empty"),
    ("plugins/module_utils/defaults.py", "CONTAINER_NAME"): (1, "the source"),
    ("plugins/module_utils/defaults.py", "CONTAINER_SSH_DIR"): (1, "the source"),
    ("plugins/module_utils/defaults.py", "SHARE_ROOT"): (1, "the source"),
    ("plugins/module_utils/defaults.py", "SSH_PORT"): (1, "the source"),
    # The roles' own defaults (users include a role on its own) and their argument specs.
    ("roles/container_sshd/defaults/main.yml", "CONTAINER_NAME"): (1, DEFINITION),
    ("roles/container_sshd/defaults/main.yml", "SSH_PORT"): (1, DEFINITION),
    ("roles/docker_horovod/defaults/main.yml", "CONTAINER_NAME"): (1, DEFINITION),
    ("roles/docker_horovod/defaults/main.yml", "SHARE_ROOT"): (1, DEFINITION),
    ("roles/horovod_launch/defaults/main.yml", "CONTAINER_NAME"): (1, DEFINITION),
    ("roles/horovod_launch/defaults/main.yml", "CONTAINER_SSH_DIR"): (1, DEFINITION),
    ("roles/horovod_launch/defaults/main.yml", "SHARE_DIR"): (1, DEFINITION),
    ("roles/horovod_launch/defaults/main.yml", "ARTIFACT_DIR"): (1, DEFINITION),
    ("roles/horovod_launch/defaults/main.yml", "SSH_PORT"): (1, DEFINITION),
    ("roles/ssh_trust/defaults/main.yml", "CONTAINER_NAME"): (1, DEFINITION),
    ("roles/ssh_trust/defaults/main.yml", "SSH_PORT"): (1, DEFINITION),
    ("roles/container_sshd/meta/argument_specs.yml", "CONTAINER_NAME"): (1, SPEC),
    ("roles/container_sshd/meta/argument_specs.yml", "SSH_PORT"): (1, SPEC),
    ("roles/docker_horovod/meta/argument_specs.yml", "CONTAINER_NAME"): (1, SPEC),
    ("roles/docker_horovod/meta/argument_specs.yml", "SHARE_ROOT"): (1, SPEC),
    ("roles/horovod_launch/meta/argument_specs.yml", "CONTAINER_NAME"): (1, SPEC),
    ("roles/horovod_launch/meta/argument_specs.yml", "CONTAINER_SSH_DIR"): (1, SPEC),
    ("roles/horovod_launch/meta/argument_specs.yml", "SHARE_DIR"): (1, SPEC),
    ("roles/horovod_launch/meta/argument_specs.yml", "ARTIFACT_DIR"): (1, SPEC),
    ("roles/horovod_launch/meta/argument_specs.yml", "SSH_PORT"): (1, SPEC),
    ("roles/ssh_trust/meta/argument_specs.yml", "CONTAINER_NAME"): (1, SPEC),
    ("roles/ssh_trust/meta/argument_specs.yml", "SSH_PORT"): (1, SPEC),
    ("roles/container_sshd/meta/argument_specs.yml", "SSHD_DIR"): (1, DOC),
    ("roles/ssh_trust/meta/argument_specs.yml", "CONTAINER_SSH_DIR"): (1, DOC),
    ("roles/ssh_trust/meta/argument_specs.yml", "SSHD_DIR"): (1, DOC),
    ("roles/ssh_trust/meta/argument_specs.yml", "SSH_DIR"): (1, DOC),
    # The roles' constants (ROLE_CONSTANTS below).
    ("roles/container_sshd/vars/main.yml", "CONTAINER_SSH_DIR"): (
        2,
        "__container_sshd_authorized_keys, and its comment",
    ),
    ("roles/container_sshd/vars/main.yml", "SSHD_DIR"): (1, DEFINITION),
    ("roles/docker_horovod/vars/main.yml", "CONFIG_ROOT"): (1, DEFINITION),
    ("roles/docker_horovod/vars/main.yml", "CONTAINER_OWN_DIR"): (1, DEFINITION),
    ("roles/docker_horovod/vars/main.yml", "CONTAINER_SSH_DIR"): (1, DEFINITION),
    ("roles/docker_horovod/vars/main.yml", "SSHD_DIR"): (1, DEFINITION),
    ("roles/docker_horovod/vars/main.yml", "SSH_DIR"): (1, DEFINITION),
    ("roles/ssh_trust/vars/main.yml", "CONTAINER_SSH_DIR"): (2, "__ssh_trust_container_dir, and its comment"),
    ("roles/horovod_launch/vars/main.yml", "CONTAINER_SSH_DIR"): (2, "__horovod_launch_ssh_wrapper, and its comment"),
    ("roles/ssh_trust/vars/main.yml", "SSHD_DIR"): (1, DEFINITION),
    ("roles/ssh_trust/vars/main.yml", "SSH_DIR"): (1, DEFINITION),
    ("roles/container_sshd/tasks/assert.yml", "SSH_PORT"): (1, MESSAGE),
    ("roles/ssh_trust/tasks/assert.yml", "SSH_PORT"): (1, MESSAGE + " (container_sshd's default)"),
    ("roles/container_sshd/meta/main.yml", "CONTAINER_NAME"): (1, GALAXY),
    ("roles/docker_horovod/meta/main.yml", "CONTAINER_NAME"): (1, GALAXY),
    ("roles/horovod_launch/meta/main.yml", "CONTAINER_NAME"): (1, GALAXY),
    ("roles/nfs_client/meta/main.yml", "CONTAINER_NAME"): (1, GALAXY),
    ("roles/nfs_server/meta/main.yml", "CONTAINER_NAME"): (1, GALAXY),
    ("roles/ssh_trust/meta/main.yml", "CONTAINER_NAME"): (1, GALAXY),
    ("roles/horovod_launch/files/horovod_probe.py", "CONTAINER_NAME"): (1, "the Python package's name (metadata)"),
    # The plugins' documentation.
    ("plugins/filter/docker_horovod_archive_problem.yml", "SHARE_DIR"): (1, DOC),
    ("plugins/module_utils/paths.py", "SHARE_ROOT"): (1, DOC),
    ("plugins/modules/image_archive_info.py", "SHARE_DIR"): (1, DOC),
    # Inventories: the example shows the defaults (test_the_example_inventory_shows_the_defaults); the
    # lab's archive lies on its share, the default share directory.
    ("inventories/example/group_vars/horovod_cluster.yml", "CONTAINER_NAME"): (1, DEFINITION),
    ("inventories/example/group_vars/horovod_cluster.yml", "SHARE_DIR"): (2, "the default, and data on it"),
    ("inventories/example/group_vars/horovod_cluster.yml", "ARTIFACT_DIR"): (2, "examples in it: an archive, a script"),
    ("inventories/example/group_vars/horovod_cluster.yml", "SHARE_ROOT"): (1, DEFINITION),
    ("inventories/example/group_vars/horovod_cluster.yml", "SSH_PORT"): (1, DEFINITION),
    ("inventories/lab/group_vars/horovod_cluster.yml", "SHARE_DIR"): (1, "a comment"),
    ("inventories/lab/group_vars/horovod_cluster.yml", "ARTIFACT_DIR"): (
        2,
        "the lab's archive in its artifact directory, and a comment",
    ),
    # tools/lab.py: its constants (checked below), its docstring, the guide's example named horovod,
    # and the lab machine's own root account (not the container's).
    ("tools/lab.py", "SHARE_DIR"): (2, "SHARE_DIR, checked, and the docstring"),
    ("tools/lab.py", "ARTIFACT_DIR"): (2, "ARTIFACT_DIR, checked, and the docstring"),
    ("tools/lab.py", "CONTAINER_NAME"): (4, "CONTAINER, checked; the example called horovod (3)"),
    ("tools/lab.py", "CONTAINER_SSH_DIR"): (5, "the lab machine's own /root/.ssh, not the container's"),
    ("tools/lab.py", "SSH_DIR"): (1, "SSH_TRUST_DIR, checked"),
}

# Constants of the roles' vars/main.yml that are the shared values (the roles must agree on them).
ROLE_CONSTANTS = {
    "container_sshd": {
        "__container_sshd_dir": defaults.SSHD_DIR,
        "__container_sshd_authorized_keys": f"{defaults.CONTAINER_SSH_DIR}/authorized_keys",
    },
    "docker_horovod": {
        "__docker_horovod_config_root": defaults.CONFIG_ROOT,
        "__docker_horovod_sshd_dir": defaults.SSHD_DIR,
        "__docker_horovod_ssh_dir": defaults.SSH_DIR,
        "__docker_horovod_container_ssh_dir": defaults.CONTAINER_SSH_DIR,
        "__docker_horovod_own_dir": defaults.CONTAINER_OWN_DIR,
    },
    "ssh_trust": {
        "__ssh_trust_dir": defaults.SSH_DIR,
        "__ssh_trust_container_dir": defaults.CONTAINER_SSH_DIR,
        "__ssh_trust_host_key_dir": defaults.SSHD_DIR,
    },
    "horovod_launch": {"__horovod_launch_ssh_wrapper": defaults.SSH_WRAPPER},
}
# Role defaults that are shared values without a site setting of their own.
ROLE_DEFAULTS = {
    ("horovod_launch", "horovod_launch_ssh_identity_file"): defaults.SSH_KEY_FILE,
    # The site derives horovod_artifact_dir from the share root; the role alone has the default's value.
    ("horovod_launch", "horovod_launch_artifact_dir"): defaults.ARTIFACT_DIR,
}


def unlisted(found: Counter[tuple[str, str]]) -> list[str]:
    """The copies that ALLOWED does not list (or not that often), and the entries no longer found."""
    problems = [
        f"{path}: {count} x {name} ({getattr(defaults, name)!r}); hand it on from plugins/module_utils/defaults.py"
        f" or cluster.SETTINGS{f', ALLOWED has {ALLOWED[(path, name)][0]}' if (path, name) in ALLOWED else ''}"
        for (path, name), count in sorted(found.items())
        if ALLOWED.get((path, name), (0, ""))[0] != count
    ]
    problems += [
        f"{path}: ALLOWED lists {name}, which is no longer there; update ALLOWED (or the copy left behind)"
        for (path, name) in sorted(ALLOWED)
        if (path, name) not in found
    ]
    return problems


def role_file(role: str, *parts: str) -> Any:
    return yaml.safe_load((REPO / "roles" / role / Path(*parts)).read_text()) or {}


def test_no_copy_of_a_shared_value_outside_its_definitions():
    assert unlisted(copies()) == []


def test_a_stray_copy_and_a_stale_entry_are_found():
    found = Counter({key: count for key, (count, _unused) in ALLOWED.items()})
    found[("playbooks/site.yml", "SSH_PORT")] += 1
    del found[("roles/ssh_trust/defaults/main.yml", "SSH_PORT")]
    problems = unlisted(found)
    assert len(problems) == 2
    assert problems[0].startswith("playbooks/site.yml: 1 x SSH_PORT (12345); hand it on")
    assert problems[1].startswith("roles/ssh_trust/defaults/main.yml: ALLOWED lists SSH_PORT, which is no longer")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("port: 12345", {"SSH_PORT": 1}),
        ("0123456789 112345 123456", {}),
        ("path: /data1/share/x and /data1, /data10 /data1.old /data1/sharefoo.", {"SHARE_DIR": 1, "SHARE_ROOT": 2}),
        ("/etc/multinode-horovod/sshd/sshd_config /etc/multinode-horovod/ssh.", {"SSHD_DIR": 1, "SSH_DIR": 1}),
        ("/etc/multinode-horovod/x /etc/multinode-horovod/container/s.sh", {"CONFIG_ROOT": 1, "CONTAINER_OWN_DIR": 1}),
        ("/root/.ssh/id /root/.sshd", {"CONTAINER_SSH_DIR": 1}),
        ("name: horovod\nexec horovod sh 'horovod'", {"CONTAINER_NAME": 3}),
        ("multinode.horovod horovod/horovod:0.28.1 horovod_launch horovod-cpu horovod==0.28.1 Horovod", {}),
    ],
)
def test_occurrences(text, expected):
    assert dict(occurrences(text)) == expected


@pytest.mark.parametrize("setting", [s for s in cluster.SETTINGS if s.default is not None], ids=str)
def test_role_defaults_are_the_settings_defaults(setting):
    for variable in setting.becomes:
        role = cluster.role_of(variable)
        value = role_file(role, "defaults", "main.yml")[variable]
        assert value == setting.default, f"roles/{role}: {variable} is {value!r}, {setting.name} is {setting.default!r}"


def test_the_other_shared_role_defaults():
    for (role, variable), value in ROLE_DEFAULTS.items():
        assert role_file(role, "defaults", "main.yml")[variable] == value, f"roles/{role}: {variable}"
    trust = role_file("ssh_trust", "vars", "main.yml")
    assert defaults.SSH_KEY_FILE == f"{trust['__ssh_trust_container_dir']}/{trust['__ssh_trust_key_name']}"


@pytest.mark.parametrize("role", sorted(ROLE_CONSTANTS))
def test_role_constants_are_the_shared_values(role):
    constants = role_file(role, "vars", "main.yml")
    assert {name: constants.get(name) for name in ROLE_CONSTANTS[role]} == ROLE_CONSTANTS[role]


TABLE_ROW = re.compile(r"^\| `(?P<name>[a-z_]+)` \| `(?P<value>[^`]*)` \|", re.M)


@pytest.mark.parametrize("role", roles.ROLES)
def test_readme_tables_show_the_role_defaults(role):
    role_defaults = role_file(role, "defaults", "main.yml")
    rows = {m["name"]: m["value"] for m in TABLE_ROW.finditer((REPO / "roles" / role / "README.md").read_text())}
    shown = {name: yaml.safe_load(value) for name, value in rows.items() if name in role_defaults}
    assert shown == role_defaults, f"roles/{role}/README.md: the variables table differs from defaults/main.yml"


def test_the_lab_uses_the_shared_values():
    lab = load("tools/lab.py", "lab_shared_values")
    assert (lab.SHARE_DIR, lab.ARTIFACT_DIR, lab.CONTAINER, lab.SSH_TRUST_DIR) == (
        defaults.SHARE_DIR,
        defaults.ARTIFACT_DIR,
        defaults.CONTAINER_NAME,
        defaults.SSH_DIR,
    )
