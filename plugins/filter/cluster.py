"""Filters of the site playbook: the inventory contract (DESIGN.md) checked and turned into role input.

`cluster_problems` lists everything wrong with an inventory, so the first play can stop before any
change and name every fix at once; `cluster_nodes` turns the inventory's hosts into the
`[{name, address, slots}]` list the roles take. Unit-tested in tests/unit/test_cluster_filters.py.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

STORAGE_KINDS = ("nfs", "existing")


def _address(name: str, hostvars: Mapping[str, Any]) -> str:
    host = hostvars[name]
    return str(host.get("horovod_node_address") or host.get("ansible_host") or name)


def _slots(value: Any) -> int | None:
    """A positive int from an int or a digit string; None for anything else."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value if value > 0 else None
    if isinstance(value, str) and value.strip().isdigit():
        number = int(value.strip())
        return number if number > 0 else None
    return None


def cluster_nodes(names: Sequence[str], hostvars: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The hosts as the roles take them: name, the address other nodes use, and slots."""
    nodes = []
    for name in names:
        host = hostvars[name]
        slots = _slots(host.get("horovod_slots"))
        if slots is None:
            slots = _slots(host.get("docker_horovod_gpu_count")) or 1
        nodes.append({"name": name, "address": _address(name, hostvars), "slots": slots})
    return nodes


def cluster_problems(groups: Mapping[str, Sequence[str]], hostvars: Mapping[str, Any]) -> list[str]:
    """Every way the inventory breaks the contract, each with its fix; empty when it is sound."""
    problems: list[str] = []
    masters = list(groups.get("horovod_master", []))
    workers = list(groups.get("horovod_workers", []))
    if not masters:
        problems.append(
            "horovod_master: the group is missing or empty. Put exactly one host in it: the node that "
            "exports the share and launches horovodrun."
        )
    elif len(masters) > 1:
        problems.append(
            f"horovod_master: {len(masters)} hosts ({', '.join(masters)}); there must be exactly one. "
            "Move the others to horovod_workers."
        )
    for name in sorted(set(masters) & set(workers)):
        problems.append(f"{name}: in both horovod_master and horovod_workers; keep it in one of them.")

    nodes = list(dict.fromkeys(masters + workers))
    seen_address: dict[str, str] = {}
    seen_short: dict[str, str] = {}
    for name in nodes:
        host = hostvars[name]
        address = _address(name, hostvars)
        if address in seen_address:
            problems.append(
                f"{name}: address {address} is also {seen_address[address]}'s. Every node needs its own "
                "address (set horovod_node_address or ansible_host)."
            )
        seen_address.setdefault(address, name)
        short = name.split(".")[0]
        if short in seen_short:
            problems.append(
                f"{name}: short host name {short} is also {seen_short[short]}'s; horovodrun and ssh would "
                "mix them up. Rename one of them in the inventory."
            )
        seen_short.setdefault(short, name)
        if "horovod_slots" in host and _slots(host["horovod_slots"]) is None:
            problems.append(
                f"{name}: horovod_slots={host['horovod_slots']!r} is not a positive integer. Set it to the "
                "number of processes for this node (usually its GPUs), or remove it to use the GPUs found."
            )
        storage = host.get("horovod_shared_storage", "nfs")
        if storage not in STORAGE_KINDS:
            problems.append(
                f"{name}: horovod_shared_storage={storage!r}; use 'nfs' (the master exports the share) or "
                "'existing' (a filesystem already mounted at the same path on every node)."
            )
        share_dir = str(host.get("horovod_share_dir", "/data1/share"))
        share_root = str(host.get("horovod_share_root", "/data1")).rstrip("/") or "/"
        if not share_dir.startswith("/") or not (share_dir + "/").startswith(share_root.rstrip("/") + "/"):
            problems.append(
                f"{name}: horovod_share_dir={share_dir!r} must be an absolute path inside "
                f"horovod_share_root={share_root!r} (the directory mounted into the container)."
            )
    return problems


class FilterModule:
    """Inventory contract filters."""

    def filters(self) -> dict[str, Any]:
        return {"cluster_nodes": cluster_nodes, "cluster_problems": cluster_problems}
