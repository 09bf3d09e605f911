# Copyright: multinode.horovod contributors
# SPDX-License-Identifier: GPL-3.0-or-later
"""container_sshd's decisions for its tasks: who listens on the port, and where the role knocks.

Kept in Python so that they are unit-tested (tests/unit/test_container_sshd_filters.py); the role's
tasks read the host (listen_ports_facts, docker top) and apply these.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any


def _pids(top_lines: Iterable[str]) -> set[int]:
    """Process IDs (host view) in `docker top NAME -o pid` lines, without the header."""
    pids = set()
    for line in top_lines or []:
        text = str(line).strip()
        if text.isdigit():
            pids.add(int(text))
    return pids


def port_users(
    tcp_listen: Iterable[Mapping[str, Any]],
    top_lines: Iterable[str],
    port: Any,
    ansible_port: Any = 22,
    connection: Any = "ssh",
) -> dict[str, list[Any]]:
    """Who listens on `port` besides the container's sshd, and the host's own sshd ports.

    `tcp_listen` is listen_ports_facts' list ({port, pid, name, ...}); `top_lines` what `docker top NAME -o
    pid` printed (every process of the container: its sshd is ours, whatever it listens on).
    Returns {foreign: [{name, pid}] of listeners on `port` that are not the container's sshd, sorted and
    each once; host_sshd_ports: the ports an sshd outside the container listens on, and the port Ansible
    connects to when it connects over ssh, sorted}.
    """
    ours = _pids(top_lines)
    wanted = int(port)
    listeners = list(tcp_listen or [])
    foreign = {
        (str(item.get("name")), item.get("pid"))
        for item in listeners
        if int(item.get("port", -1)) == wanted and (item.get("pid") not in ours or item.get("name") != "sshd")
    }
    host_ports = {int(item["port"]) for item in listeners if item.get("name") == "sshd" and item.get("pid") not in ours}
    if "ssh" in str(connection or "ssh"):
        host_ports.add(int(ansible_port or 22))
    return {
        "foreign": [
            {"name": name, "pid": pid} for name, pid in sorted(foreign, key=lambda item: (item[0], str(item[1])))
        ],
        "host_sshd_ports": sorted(host_ports),
    }


def probe_address(listen_addresses: Iterable[str]) -> str:
    """Where the role checks that sshd answers: loopback unless sshd listens on given addresses only (then
    the first, without an IPv6 literal's brackets)."""
    addresses = [str(address) for address in listen_addresses or []]
    if not addresses or "0.0.0.0" in addresses:
        return "127.0.0.1"
    return re.sub(r"^\[(.*)\]$", r"\1", addresses[0])


class FilterModule:
    """container_sshd's port users and probe address."""

    def filters(self) -> dict[str, Any]:
        return {
            "container_sshd_port_users": port_users,
            "container_sshd_probe_address": probe_address,
        }
