# Copyright: multinode.horovod contributors
# SPDX-License-Identifier: GPL-3.0-or-later
"""Filters of the site playbook: the gate on the inventory, and the inventory turned into role input.

`cluster_report` and `cluster_problems` list everything wrong with an inventory (the rules live in
plugins/module_utils/gate.py), so the first play can stop before any change and name every fix at
once; `cluster_gate` is the same gate for a play's `hosts:` keyword, which Ansible evaluates even when
`--start-at-task` or `--skip-tags always` skip the first play's tasks; `cluster_settings` is the
site's settings with their defaults (one table for the gate and the plays); `cluster_nodes` turns the
inventory's hosts into the `[{name, address, slots}]` list the roles take; `cluster_probe_sections`
splits the node probe's one command into what each of its programs printed. Unit-tested in
tests/unit/test_cluster_filters.py and, through ansible-playbook, tests/unit/test_site_validation.py.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ansible.errors import AnsibleFilterError
from ansible_collections.multinode.horovod.plugins.module_utils import gate
from ansible_collections.multinode.horovod.plugins.module_utils.numbers import positive

HEADER = "Fix the inventory first (nothing was changed):"


def cluster_nodes(names: Sequence[str], hostvars: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The hosts as the roles take them: name, the address other nodes use, and slots."""
    nodes = []
    for name in names:
        host = hostvars[name]
        slots = positive(host.get("horovod_slots"))
        if slots is None:
            slots = positive(host.get("docker_horovod_gpu_count")) or 1
        nodes.append({"name": name, "address": gate.address_of(name, host), "slots": slots})
    return nodes


def cluster_probe_sections(text: str) -> dict[str, str]:
    """The output of one command that ran several (probe_node.yml), split at its ``@@ NAME`` lines:
    {NAME: what that part printed}. Text before the first mark is dropped."""
    sections: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in str(text).splitlines():
        if line.startswith("@@ "):
            current = sections.setdefault(line[3:].strip(), [])
        elif current is not None:
            current.append(line)
    return {name: "".join(f"{line}\n" for line in lines) for name, lines in sections.items()}


def cluster_report(groups: Mapping[str, Sequence[str]], hostvars: Mapping[str, Any]) -> dict[str, list[str]]:
    """{errors, warnings}: errors stop the run before any host is touched."""
    return gate.check(groups, hostvars).as_dict()


def cluster_problems(groups: Mapping[str, Sequence[str]], hostvars: Mapping[str, Any]) -> list[str]:
    """Every way the inventory breaks the contract, each with its fix; empty when it is sound."""
    return gate.check(groups, hostvars).errors


def cluster_gate(groups: Mapping[str, Sequence[str]], hostvars: Mapping[str, Any] | None) -> list[str]:
    """An empty host list when the inventory is sound; otherwise the run stops here with every fix.

    `hostvars` is None only where Ansible has none (`--syntax-check`), which runs nothing to gate."""
    if hostvars is None:
        return []
    errors = gate.check(groups, hostvars).errors
    if errors:
        raise AnsibleFilterError(HEADER + "\n- " + "\n- ".join(errors))
    return []


def cluster_settings(host_vars: Mapping[str, Any]) -> dict[str, Any]:
    """The site's settings (horovod_*) for one host: the inventory's values over the defaults."""
    return gate.settings_of(host_vars)


def read_only_export_options(options: Sequence[str]) -> list[str]:
    """The share's export options for the artifact directory: ro instead of rw."""
    return gate.read_only_export_options(options)


def read_only_mount_options(options: Sequence[str]) -> list[str]:
    """The share's mount options for the artifact directory: ro instead of rw."""
    return gate.read_only_mount_options(options)


class FilterModule:
    """Inventory contract filters."""

    def filters(self) -> dict[str, Any]:
        return {
            "cluster_gate": cluster_gate,
            "cluster_nodes": cluster_nodes,
            "cluster_probe_sections": cluster_probe_sections,
            "cluster_problems": cluster_problems,
            "cluster_report": cluster_report,
            "cluster_settings": cluster_settings,
            "read_only_export_options": read_only_export_options,
            "read_only_mount_options": read_only_mount_options,
        }
