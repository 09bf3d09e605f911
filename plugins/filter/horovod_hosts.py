# Copyright: multinode.horovod contributors
# SPDX-License-Identifier: GPL-3.0-or-later
"""Filters that turn a Horovod host list into what horovodrun is given: ``-H``, a host file, the ranks' hosts.

A host list is ``[{name, address, slots}, ...]``: ``name`` is the inventory name, ``address``
what the other nodes use to reach it (it goes into ``-H`` unless ``key='name'``), ``slots`` the
number of processes it runs. One validator (:func:`host_errors`) serves every filter and the
role's input rules; it lives in plugins/module_utils/horovod_hosts.py, so a bad list is described
the same way everywhere.

What horovodrun prints is read by the filters of horovod_output.py. This file holds several filters,
so, as in ansible-core, each one's DOCUMENTATION, EXAMPLES and RETURN live next to it in
``<filter name>.yml``, which ``ansible-doc -t filter`` reads.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ansible.errors import AnsibleFilterError
from ansible_collections.multinode.horovod.plugins.module_utils.horovod_hosts import host_errors, slot_count
from ansible_collections.multinode.horovod.plugins.module_utils.numbers import positive

__all__ = ["FilterModule", "host_errors", "hostfile", "hosts_arg", "rank_hosts", "total_slots"]

KEYS = ("address", "name")


def _validated(hosts: object) -> list[Mapping[str, Any]]:
    errors = host_errors(hosts)
    if errors:
        raise AnsibleFilterError("invalid Horovod host list: " + "; ".join(errors))
    return list(hosts)  # type: ignore[call-overload]  # host_errors proved it is a list of mappings


def _key(key: str) -> str:
    if key not in KEYS:
        raise AnsibleFilterError(f"key must be one of {', '.join(KEYS)}, got {key!r}")
    return key


def _allocate(hosts: object, np: object) -> list[tuple[Mapping[str, Any], int]]:
    """The hosts that get processes and how many, filled in list order as horovodrun assigns ranks.

    horovodrun's Gloo launcher starts one process per slot of ``-H`` whatever ``-np`` says, so a
    run of fewer processes than slots must be given exactly ``np`` slots.
    """
    valid = _validated(hosts)
    total = sum(slot_count(h["slots"]) or 0 for h in valid)
    if np is None:
        wanted = total
    else:
        wanted = positive(np) or 0
        if wanted < 1 or wanted > total:
            raise AnsibleFilterError(f"np must be a whole number from 1 to the {total} slots of the hosts, got {np!r}")
    plan = []
    for host in valid:
        take = min(slot_count(host["slots"]) or 0, wanted)
        if take:
            plan.append((host, take))
        wanted -= take
    return plan


def hosts_arg(hosts: object, key: str = "address", np: object = None) -> str:
    """The value of ``horovodrun -H``: ``host:slots`` pairs joined by commas, trimmed to ``np``."""
    field = _key(key)
    return ",".join(f"{h[field]}:{n}" for h, n in _allocate(hosts, np))


def hostfile(hosts: object, key: str = "address", np: object = None) -> str:
    """The text of a ``horovodrun --hostfile`` (and mpirun) host file: ``host slots=N`` lines."""
    field = _key(key)
    return "".join(f"{h[field]} slots={n}\n" for h, n in _allocate(hosts, np))


def total_slots(hosts: object) -> int:
    """The sum of the slots of a valid host list."""
    return sum(slot_count(h["slots"]) or 0 for h in _validated(hosts))


def rank_hosts(hosts: object, np: object = None) -> list[str]:
    """The name of the host each rank runs on, by rank, as horovodrun assigns them."""
    return [str(h["name"]) for h, n in _allocate(hosts, np) for _ in range(n)]


class FilterModule:
    """multinode.horovod host-list filters."""

    def filters(self) -> dict[str, Any]:
        return {
            "horovod_hosts": hosts_arg,
            "horovod_hostfile": hostfile,
            "horovod_total_slots": total_slots,
            "horovod_hosts_errors": host_errors,
            "horovod_rank_hosts": rank_hosts,
        }
