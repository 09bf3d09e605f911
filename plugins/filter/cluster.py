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

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ansible.errors import AnsibleFilterError
from ansible_collections.multinode.horovod.plugins.module_utils import gate
from ansible_collections.multinode.horovod.plugins.module_utils.numbers import positive

HEADER = "Fix the inventory first (nothing was changed):"
# An image ID as `docker container inspect --format {{.Image}}` prints it.
IMAGE_ID_RE = re.compile(r"^sha256:[0-9a-f]+$")
IPV4_RE = re.compile(r"^[0-9.]+$")


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


def cluster_image_ids(nodes: Sequence[Mapping[str, Any]], hostvars: Mapping[str, Any], fact: str) -> dict[str, str]:
    """``{node: image ID of its container}`` from what each node registered as `fact`
    (playbooks/container_images.yml: ``docker container inspect``). A node it did not reach, one
    without the container, or an answer that is not an image ID is left out: the launch preflight
    compares the IDs it gets and names the nodes it lacks."""
    out = {}
    for node in nodes:
        name = str(node["name"])
        read = (hostvars.get(name) or {}).get(fact) or {}
        image = str(read.get("stdout") or "").strip() if read.get("rc", 1) == 0 else ""
        if IMAGE_ID_RE.match(image):
            out[name] = image
    return out


def cluster_node_ips(nodes: Sequence[Mapping[str, Any]], resolved: Iterable[Mapping[str, Any]]) -> dict[str, list[str]]:
    """``{node: [IPv4 addresses]}``: a node given by an IPv4 address is that address; a node given by a
    name is what the name resolved to (the ``results`` of an ansible.builtin.getent ahostsv4 loop over
    the names), without loopback (sshd cannot listen there for the other nodes)."""
    found: dict[str, list[str]] = {}
    for result in resolved or []:
        facts = (result.get("ansible_facts") or {}).get("getent_ahostsv4") or {}
        found[str(result.get("item"))] = [str(ip) for ip in facts if not str(ip).startswith("127.")]
    return {
        str(node["name"]): [str(node["address"])]
        if IPV4_RE.match(str(node["address"]))
        else found.get(str(node["address"]), [])
        for node in nodes
    }


class FilterModule:
    """Inventory contract filters."""

    def filters(self) -> dict[str, Any]:
        return {
            "cluster_gate": cluster_gate,
            "cluster_image_ids": cluster_image_ids,
            "cluster_node_ips": cluster_node_ips,
            "cluster_nodes": cluster_nodes,
            "cluster_probe_sections": cluster_probe_sections,
            "cluster_problems": cluster_problems,
            "cluster_report": cluster_report,
            "cluster_settings": cluster_settings,
            "read_only_export_options": read_only_export_options,
            "read_only_mount_options": read_only_mount_options,
        }
