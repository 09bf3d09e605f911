# Copyright: multinode.horovod contributors
# SPDX-License-Identifier: GPL-3.0-or-later
"""A Horovod host list, ``[{name, address, slots}, ...]``: every way one can be wrong, and what horovodrun
is given from it (``-H``, a host file, the host of each rank).

``name`` is the inventory name, ``address`` what the other nodes reach it by, ``slots`` the number of
processes it runs. Shared by horovod_launch's input rules and its filters, so a bad list is described
the same way everywhere.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from ansible_collections.multinode.horovod.plugins.module_utils.numbers import positive

FIELDS = ("name", "address", "slots")
# Host names and IPv4 addresses. horovodrun splits each -H item on ':' and the list on ',', so
# neither may appear; whitespace would split the hostfile line.
HOST_RE = re.compile(r"[A-Za-z0-9_]([A-Za-z0-9._-]*[A-Za-z0-9_])?")


def describe(index: int, host: object) -> str:
    """How a message names entry `index` of a host list: by index, and by name when it has one."""
    if isinstance(host, Mapping) and isinstance(host.get("name"), str) and host.get("name"):
        return f"host {index} ({host['name']})"
    return f"host {index}"


def slot_count(value: object) -> int | None:
    """The slot count, or None when the value is not a whole number of 1 or more."""
    return positive(value)


def host_errors(hosts: object) -> list[str]:
    """Every problem of a host list, one readable sentence each; empty when the list is valid."""
    if not isinstance(hosts, list | tuple):
        return [f"the host list must be a list of {{name, address, slots}} dictionaries, got {type(hosts).__name__}"]
    if not hosts:
        return ["the host list is empty: give at least one {name, address, slots} entry"]
    errors: list[str] = []
    seen: dict[str, dict[str, int]] = {"name": {}, "address": {}}
    for index, host in enumerate(hosts):
        where = describe(index, host)
        if not isinstance(host, Mapping):
            errors.append(f"{where}: must be a dictionary with name, address and slots, got {host!r}")
            continue
        unknown = sorted(str(k) for k in host if k not in FIELDS)
        if unknown:
            errors.append(f"{where}: unknown key(s) {', '.join(unknown)}; only name, address and slots are allowed")
        for field in ("name", "address"):
            value = host.get(field)
            if not isinstance(value, str) or not value:
                errors.append(f"{where}: {field} is missing or empty; set it to a host name or IPv4 address")
            elif not HOST_RE.fullmatch(value):
                errors.append(
                    f"{where}: {field} {value!r} is not a host name or IPv4 address "
                    "(letters, digits, '.', '-', '_'; no spaces, ',' or ':', so no IPv6)"
                )
            elif value in seen[field]:
                errors.append(
                    f"{where}: {field} {value!r} is also used by host {seen[field][value]}; "
                    f"each host needs its own {field}"
                )
            else:
                seen[field][value] = index
        if "slots" not in host:
            errors.append(f"{where}: slots is missing; set it to the number of processes to run there (1 or more)")
        elif slot_count(host["slots"]) is None:
            errors.append(
                f"{where}: slots must be a whole number of 1 or more, got {host['slots']!r}; "
                "set it to the number of processes to run there (usually its GPU count, 1 without GPUs)"
            )
    return errors


def allocate(hosts: object, np: object = None) -> list[tuple[Mapping[str, Any], int]]:
    """The hosts that get processes and how many, filled in list order as horovodrun assigns ranks.

    horovodrun's Gloo launcher starts one process per slot of ``-H`` whatever ``-np`` says, so a run of
    fewer processes than slots must be given exactly ``np`` slots. Raises ValueError on a bad list or np.
    """
    errors = host_errors(hosts)
    if errors:
        raise ValueError("invalid Horovod host list: " + "; ".join(errors))
    valid: list[Mapping[str, Any]] = list(hosts)  # type: ignore[call-overload]
    total = sum(slot_count(h["slots"]) or 0 for h in valid)
    wanted = total if np is None else positive(np) or 0
    if not 1 <= wanted <= total:
        raise ValueError(f"np must be a whole number from 1 to the {total} slots of the hosts, got {np!r}")
    plan = []
    for host in valid:
        take = min(slot_count(host["slots"]) or 0, wanted)
        if take:
            plan.append((host, take))
        wanted -= take
    return plan


def hosts_arg(hosts: object, np: object = None) -> str:
    """The value of ``horovodrun -H``: ``address:slots`` pairs joined by commas, trimmed to ``np``."""
    return ",".join(f"{h['address']}:{n}" for h, n in allocate(hosts, np))


def hostfile(hosts: object, key: str = "address", np: object = None) -> str:
    """The text of a ``horovodrun --hostfile`` (and mpirun) host file: ``host slots=N`` lines, the host
    being each entry's `key` (address or name)."""
    if key not in ("address", "name"):
        raise ValueError(f"key must be address or name, got {key!r}")
    return "".join(f"{h[key]} slots={n}\n" for h, n in allocate(hosts, np))


def rank_hosts(hosts: object, np: object = None) -> list[str]:
    """The name of the host each rank runs on, by rank, as horovodrun assigns them."""
    return [str(h["name"]) for h, n in allocate(hosts, np) for _unused in range(n)]
