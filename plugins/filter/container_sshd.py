# Copyright: multinode.horovod contributors
# SPDX-License-Identifier: GPL-3.0-or-later
"""container_sshd's decisions for its tasks: who listens on the port, and where the role knocks.

Kept in Python so that they are unit-tested (tests/unit/test_container_sshd_filters.py); the role's
tasks read the host in one command (container, image, listeners, processes, files) and apply these.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from typing import Any

# A process in ss -p's users:((...)) column: ("name",pid=N,fd=M).
SS_USER_RE = re.compile(r'\("([^"]*)",pid=(\d+),')


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


def _sections(text: str) -> dict[str, list[str]]:
    """The lines of each ``@@ NAME`` section (NAME a word; ``@@ /path`` lines belong to the listing)."""
    sections: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in (text or "").splitlines():
        if line.startswith("@@ ") and not line.startswith("@@ /"):
            current = sections.setdefault(line[3:].strip(), [])
        elif current is not None:
            current.append(line)
    return sections


def listeners(ss_lines: Iterable[str]) -> list[dict[str, Any]]:
    """The TCP listeners in `ss -Hltnp` lines, as listen_ports_facts gives them: ``{port, address, name,
    pid}``, one per process holding the socket (a listener without a process shown has name and pid
    None)."""
    out: list[dict[str, Any]] = []
    for line in ss_lines or []:
        fields = str(line).split()
        if len(fields) < 5:
            continue
        address, _, port = fields[3].rpartition(":")
        if not port.isdigit():
            continue
        users = SS_USER_RE.findall(" ".join(fields[5:]))
        for name, pid in users or [(None, None)]:
            out.append({"port": int(port), "address": address, "name": name, "pid": int(pid) if pid else None})
    return out


def host_read(text: str) -> dict[str, Any]:
    """What tasks/assert.yml's one read command printed (vars/main.yml, __container_sshd_read_script):
    ``container``: the container's `docker inspect` (None when there is none); ``image_rc`` and
    ``image_output``: the image check's exit status and output; ``listeners``: the host's TCP listeners
    (see listeners); ``top``: the container's process IDs, as `docker top NAME -o pid` printed them;
    ``banner``: the first line sshd sent on the port (its SSH banner; empty when nothing answered)."""
    sections = _sections(text)
    try:
        inspected = json.loads("\n".join(sections.get("inspect", [])) or "[]")
    except ValueError:
        inspected = []
    image = sections.get("image", [])
    rc = image[0].strip() if image else ""
    return {
        "container": inspected[0] if isinstance(inspected, list) and inspected else None,
        "image_rc": int(rc) if rc.isdigit() else -1,
        "image_output": "\n".join(image[1:]).strip(),
        "listeners": listeners(sections.get("ss", [])),
        "top": sections.get("top", []),
        "banner": next(iter(sections.get("banner", [])), "").strip(),
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
            "container_sshd_host_read": host_read,
            "container_sshd_probe_address": probe_address,
        }
