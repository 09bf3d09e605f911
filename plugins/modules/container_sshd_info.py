#!/usr/bin/python
# Copyright: multinode.horovod contributors
# SPDX-License-Identifier: GPL-3.0-or-later
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Read what container_sshd must know of a host before it changes anything."""

from __future__ import annotations

DOCUMENTATION = r"""
module: container_sshd_info
short_description: Read who listens on the container sshd's port, and the host keys
description:
  - Lists the host's TCP listeners (C(ss -Hltnp)); those in the cgroup of O(container_pid) are the
    container's, as C(docker top) lists them.
  - Reads each host private key C(ssh_host_*_key) in O(key_dir) with C(ssh-keygen -y).
  - Used by multinode.horovod.container_sshd before it writes anything.
version_added: 0.1.0
author: multinode.horovod contributors (!UNKNOWN)
options:
  port:
    description: The TCP port of the container's sshd.
    type: int
    required: true
  container_pid:
    description: The host PID of a process of the container (C(State.Pid) of C(docker inspect)); 0 for none.
    type: int
    default: 0
  key_dir:
    description: The host directory of the host keys.
    type: path
    required: true
requirements: [ss (iproute2), ssh-keygen, root]
attributes:
  check_mode:
    support: full
    description: Only reads.
"""

EXAMPLES = r"""
- name: Read who listens on the port and the host keys
  multinode.horovod.container_sshd_info:
    port: "{{ container_sshd_port }}"
    container_pid: "{{ container.container.State.Pid }}"
    key_dir: "{{ sshd_dir }}"
  register: sshd_info
"""

RETURN = r"""
port_users:
  description: The processes (C(name), C(pid)) listening on O(port) but the container's sshd, sorted, each once.
  returned: success
  type: list
  elements: dict
host_sshd_ports:
  description: The ports an sshd outside the container listens on, sorted.
  returned: success
  type: list
  elements: int
host_keys:
  description: >-
    Each host private key's C(mode), C(owner), C(group) and C(public_key) (C(TYPE BLOB) as
    C(ssh-keygen -y) derives it; empty when the key does not load), by path.
  returned: success
  type: dict
"""

import glob
import os
import re
from collections.abc import Iterable, Mapping
from typing import Any

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.multinode.horovod.plugins.module_utils.ssh_keys import Run, private_key

# A process in ss -p's users:((...)) column: ("name",pid=N,fd=M).
SS_USER_RE = re.compile(r'\("([^"]*)",pid=(\d+),')


def listeners(ss_lines: Iterable[str]) -> list[dict[str, Any]]:
    """The TCP listeners in `ss -Hltnp` lines: ``{port, name, pid}``, one per process holding the socket
    (name and pid None when ss shows no process)."""
    out: list[dict[str, Any]] = []
    for line in ss_lines:
        fields = line.split()
        if len(fields) < 5:
            continue
        port = fields[3].rpartition(":")[2]
        if not port.isdigit():
            continue
        for name, pid in SS_USER_RE.findall(" ".join(fields[5:])) or [(None, None)]:
            out.append({"port": int(port), "name": name, "pid": int(pid) if pid else None})
    return out


def cgroup(pid: int) -> str:
    """The cgroups of a process, "" when it is gone."""
    try:
        with open(f"/proc/{pid}/cgroup", encoding="utf-8") as handle:
            return handle.read()
    except OSError:
        return ""


def port_users(found: Iterable[Mapping[str, Any]], port: int, ours: Iterable[int]) -> dict[str, list[Any]]:
    """The listeners on `port` that are not the container's sshd (``port_users``) and the ports an sshd
    outside the container listens on (``host_sshd_ports``); `ours`: the PIDs in the container."""
    ours = set(ours)
    items = list(found)
    foreign = {
        (str(item["name"]), item["pid"])
        for item in items
        if item["port"] == port and (item["pid"] not in ours or item["name"] != "sshd")
    }
    return {
        "port_users": [{"name": name, "pid": pid} for name, pid in sorted(foreign, key=lambda i: (i[0], str(i[1])))],
        "host_sshd_ports": sorted(
            {item["port"] for item in items if item["name"] == "sshd" and item["pid"] not in ours}
        ),
    }


def host_keys(key_dir: str, run: Run) -> dict[str, dict[str, Any]]:
    paths = sorted(glob.glob(os.path.join(glob.escape(key_dir), "ssh_host_*_key")))
    return {path: key for path in paths if os.path.isfile(path) and (key := private_key(path, run))}


def describe(port: int, container_pid: int, key_dir: str, run: Run) -> dict[str, Any]:
    rc, out, err = run(["ss", "-Hltnp"])
    if rc != 0:
        raise OSError(f"ss -Hltnp failed: {err.strip()}")
    found = listeners(out.splitlines())
    theirs = cgroup(container_pid) if container_pid else ""
    ours = {item["pid"] for item in found if item["pid"] and theirs and cgroup(item["pid"]) == theirs}
    return {**port_users(found, port, ours), "host_keys": host_keys(key_dir, run)}


def main() -> None:
    module = AnsibleModule(
        argument_spec={
            "port": {"type": "int", "required": True},
            "container_pid": {"type": "int", "default": 0},
            "key_dir": {"type": "path", "required": True},
        },
        supports_check_mode=True,
    )
    params = module.params
    try:
        result = describe(params["port"], params["container_pid"], params["key_dir"], module.run_command)
    except OSError as err:
        module.fail_json(msg=str(err))
    module.exit_json(changed=False, **result)


if __name__ == "__main__":
    main()
