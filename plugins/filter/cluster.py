# Copyright: multinode.horovod contributors
# SPDX-License-Identifier: GPL-3.0-or-later
"""Filters of the site's playbooks: the gate, and the settings and role inputs of a host.

The rules and the mapping live in plugins/plugin_utils/gate.py and cluster.py; tested in
tests/unit/plugins/filter/test_cluster_filters.py, and through ansible-playbook in test_site_validation.py and
test_site_mapping.py.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ansible.errors import AnsibleFilterError
from ansible_collections.multinode.horovod.plugins.plugin_utils import cluster, gate

HEADER = "Fix the inventory first (nothing was changed):"
IPV4_RE = re.compile(r"^[0-9.]+$")


def cluster_report(groups: Mapping[str, Sequence[str]], hostvars: Mapping[str, Any]) -> dict[str, list[str]]:
    """{errors, warnings}: errors stop the run before any host is touched."""
    return gate.check(groups, hostvars).as_dict()


def cluster_gate(groups: Mapping[str, Sequence[str]], hostvars: Mapping[str, Any] | None) -> list[str]:
    """An empty host list when the inventory is sound; otherwise the run stops here with every fix.

    `hostvars` is None only where Ansible has none (`--syntax-check`), which runs nothing to gate."""
    if hostvars is None:
        return []
    errors = gate.check(groups, hostvars).errors
    if errors:
        raise AnsibleFilterError(HEADER + "\n- " + "\n- ".join(errors))
    return []


def cluster_nodes(names: Sequence[str], hostvars: Mapping[str, Any], judged: Any = None) -> list[dict[str, Any]]:
    """The hosts as the roles take them: name, the address other nodes use, and slots; `judged`, the gate's
    (``__horovod_gate.nodes``): the addresses and horovod_slots it judged, which no fact a node returns
    overrides."""
    return cluster.nodes(names, hostvars, judged)


def cluster_slots(
    name: str, hostvars: Mapping[str, Any], judged: Any = None, gpus: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """{slots, source, problem}: the slots host `name` offers and why, and why the run must stop there ("" when
    it need not): the one decision (cluster.slots_of) that also gives the nodes' slots to the roles. `judged`
    as for cluster_nodes; `gpus`: what docker_horovod_info read of the host's GPUs (its indexes are checked
    against horovod_gpu_ids)."""
    listed = None if gpus is None else list(gpus.get("indexes") or [])
    return cluster.slots_of(name, hostvars[name], judged, listed)


def cluster_roles(groups: Mapping[str, Sequence[str]], hostvars: Mapping[str, Any], host: str) -> list[str]:
    """The roles the site runs on `host`."""
    return cluster.roles_on(cluster.Site(groups, hostvars), host)


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
    """The site's filters."""

    def filters(self) -> dict[str, Any]:
        return {
            "cluster_gate": cluster_gate,
            "cluster_node_ips": cluster_node_ips,
            "cluster_nodes": cluster_nodes,
            "cluster_report": cluster_report,
            "cluster_roles": cluster_roles,
            "cluster_slots": cluster_slots,
        }
