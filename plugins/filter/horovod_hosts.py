# Copyright: multinode.horovod contributors
# SPDX-License-Identifier: GPL-3.0-or-later
"""Filters that turn a Horovod host list into what horovodrun needs, and read what it prints.

A host list is ``[{name, address, slots}, ...]``: ``name`` is the inventory name, ``address``
what the other nodes use to reach it (it goes into ``-H`` unless ``key='name'``), ``slots`` the
number of processes it runs. One validator (:func:`host_errors`) serves every filter and the
role's input rules; it lives in plugins/module_utils/horovod_hosts.py, so a bad list is described
the same way everywhere.

This file holds several filters, so, as in ansible-core, each one's DOCUMENTATION, EXAMPLES and
RETURN live next to it in ``<filter name>.yml``, which ``ansible-doc -t filter`` reads.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from ansible.errors import AnsibleFilterError
from ansible_collections.multinode.horovod.plugins.module_utils.horovod_hosts import host_errors, slot_count

__all__ = [
    "FilterModule",
    "check_build",
    "failed_rank",
    "host_errors",
    "hostfile",
    "hosts_arg",
    "rank_dir",
    "rank_hosts",
    "total_slots",
]

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
        wanted = slot_count(np) or 0
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


# horovodrun (Gloo) ends a failed run with
#   "The first process to do so was:\n\nProcess name: 2\nExit code: 1"
# and logs "Process 2 exit with status code 1." for each failure; mpirun names the rank in
# "Process name: [[1234,1],2]" or "rank 2 with PID ... exited on signal".
FIRST_FAILURE_RES = (
    # Gloo names a rank (``2``), mpirun ``[[1234,1],2]``; an elastic run names a slot (``10.0.0.2[0]``, the
    # host and its local rank), which is no rank: the next pattern finds it in "Process N exit ...".
    re.compile(
        r"first process to do so was:\s*Process name:\s*(?:\[\[\d+,\d+\],)?(\d+)\]?[ \t]*(?:\r?\n|$)", re.IGNORECASE
    ),
    re.compile(r"Process (\d+) exit with status code [1-9]"),
    re.compile(r"^\s*Process name:\s*\[\[\d+,\d+\],(\d+)\]", re.MULTILINE),
    re.compile(r"rank (\d+) with PID \d+ on node \S+ exited on signal"),
)


def failed_rank(output: object) -> int | None:
    """The rank horovodrun (or mpirun) reports as the first to fail, or None when none is named."""
    text = "" if output is None else str(output)
    for pattern in FIRST_FAILURE_RES:
        match = pattern.search(text)
        if match:
            return int(match.group(1))
    return None


def rank_dir(rank: object, np: object) -> str:
    """The directory horovodrun's Gloo launcher writes rank ``rank``'s output to under
    ``--output-filename``: ``rank.N`` with N zero-padded to the width of ``np - 1``."""
    try:
        number, size = int(rank), int(np)  # type: ignore[call-overload]
    except (TypeError, ValueError) as exc:
        raise AnsibleFilterError(f"rank and np must be whole numbers, got {rank!r} and {np!r}") from exc
    if size < 1 or not 0 <= number < size:
        raise AnsibleFilterError(f"rank must be in 0..np-1 with np >= 1, got rank {number} and np {size}")
    width = len(str(size - 1))
    return f"rank.{number:0{width}d}"


CHECK_SECTIONS = {
    "available frameworks": "frameworks",
    "available controllers": "controllers",
    "available tensor operations": "tensor_operations",
}
CHECK_LINE_RE = re.compile(r"^\s*\[(?P<mark>[ Xx])\]\s*(?P<name>\S.*?)\s*$")
VERSION_RE = re.compile(r"Horovod v?(?P<version>[0-9][0-9A-Za-z.+-]*)")


def check_build(output: object) -> dict[str, Any]:
    """Parse ``horovodrun --check-build``: the version and, per section, the lower-cased names
    marked ``[X]``."""
    text = "" if output is None else str(output)
    result: dict[str, Any] = {"version": "", "frameworks": [], "controllers": [], "tensor_operations": []}
    version = VERSION_RE.search(text)
    if version:
        result["version"] = version.group("version").rstrip(":")
    section: str | None = None
    for line in text.splitlines():
        heading = line.strip().rstrip(":").lower()
        if heading in CHECK_SECTIONS:
            section = CHECK_SECTIONS[heading]
            continue
        match = CHECK_LINE_RE.match(line)
        if section and match and match.group("mark") in "Xx":
            result[section].append(match.group("name").lower())
    if not result["version"] and not any(result[s] for s in CHECK_SECTIONS.values()):
        raise AnsibleFilterError(
            "this is not the output of 'horovodrun --check-build' (no version, no [X] lines): " + text[:200]
        )
    return result


class FilterModule:
    """multinode.horovod host-list and horovodrun-output filters."""

    def filters(self) -> dict[str, Any]:
        return {
            "horovod_hosts": hosts_arg,
            "horovod_hostfile": hostfile,
            "horovod_total_slots": total_slots,
            "horovod_hosts_errors": host_errors,
            "horovod_failed_rank": failed_rank,
            "horovod_rank_dir": rank_dir,
            "horovod_rank_hosts": rank_hosts,
            "horovod_check_build": check_build,
        }
