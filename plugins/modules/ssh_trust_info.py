#!/usr/bin/python
# Copyright: multinode.horovod contributors
# SPDX-License-Identifier: GPL-3.0-or-later
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Read what ssh_trust must know of a node: its host keys, its pins, its authorised keys and its key."""

from __future__ import annotations

DOCUMENTATION = r"""
module: ssh_trust_info
short_description: Read a node's host keys, known_hosts, authorized_keys and client key for ssh_trust
description:
  - Reads every C(ssh_host_*_key.pub) in O(host_key_dir), and names every one that is not one public key
    of a known type on one line (a second line such as C(* ssh-ed25519 KEY) would pin that key for any
    host in known_hosts).
  - Reads C(known_hosts) and C(authorized_keys) in O(ssh_dir), and the client key O(key) with
    C(ssh-keygen -y); resolves the host names among O(addresses).
  - Used by multinode.horovod.ssh_trust before it writes anything.
version_added: 0.1.0
author: multinode.horovod contributors (!UNKNOWN)
options:
  host_key_dir:
    description: The host directory of the container sshd's host keys.
    type: path
    required: true
  ssh_dir:
    description: The host directory ssh_trust fills.
    type: path
    required: true
  key:
    description: The node's client private key.
    type: path
    required: true
  addresses:
    description: The nodes' addresses, IP addresses or host names.
    type: list
    elements: str
    default: []
requirements: [ssh-keygen]
attributes:
  check_mode:
    support: full
    description: Only reads.
"""

EXAMPLES = r"""
- name: Read the host keys, the pins and the client key
  multinode.horovod.ssh_trust_info:
    host_key_dir: "{{ sshd_dir }}"
    ssh_dir: "{{ ssh_dir }}"
    key: "{{ ssh_dir }}/id_ed25519"
    addresses: [192.0.2.10, node-b.example]
  register: trust_read
"""

RETURN = r"""
host_keys:
  description: C(TYPE BLOB) of every host key file that holds one key, sorted ignoring case.
  returned: success
  type: list
  elements: str
bad_host_keys:
  description: C(PATH why) of every other host key file.
  returned: success
  type: list
  elements: str
pinned_lines:
  description: The lines of known_hosts whose second and third fields are one key of a known type.
  returned: success
  type: list
  elements: str
authorized_lines:
  description: The lines of authorized_keys, without comments and empty lines.
  returned: success
  type: list
  elements: str
key:
  description: The client key's C(mode), C(owner), C(group) and C(public_key) as for host keys; {} when none.
  returned: success
  type: dict
sources:
  description: >-
    The IP addresses of O(addresses), then what the host names among them resolve to here (sshd matches
    a key's C(from=) with the source address only); no loopback, each once.
  returned: success
  type: list
  elements: str
unresolved:
  description: The host names of O(addresses) that resolve to nothing here.
  returned: success
  type: list
  elements: str
"""

import glob
import os
import re
import socket
from collections.abc import Callable, Iterable
from typing import Any

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.multinode.horovod.plugins.module_utils.ssh_keys import (
    IP_RE,
    LOOPBACK_RE,
    Run,
    content_lines,
    host_key,
    pinnable,
    private_key,
)

HOST_KEY_FILE_RE = re.compile(r"ssh_host_\w+_key\.pub")


def read_text(path: str, errors: str = "replace") -> str:
    """The text of a regular file (a link is followed), "" when there is none."""
    if not os.path.isfile(path):
        return ""
    with open(path, "rb") as handle:
        return handle.read().decode("utf-8", errors=errors)


def host_keys(key_dir: str) -> tuple[list[str], list[str]]:
    """``"type blob"`` of every host key file that holds one key, and ``"PATH why"`` of the others. The
    files are read with undecodable bytes kept as such, so that a key comment holding them is refused."""
    keys, bad = [], []
    for path in sorted(glob.glob(os.path.join(glob.escape(key_dir), "ssh_host_*_key.pub"))):
        if HOST_KEY_FILE_RE.fullmatch(os.path.basename(path)) and os.path.isfile(path):
            key, problem = host_key(read_text(path, "surrogateescape"))
            if problem:
                bad.append(f"{path} {problem}")
            else:
                keys.append(key)
    return sorted(keys, key=str.lower), bad


def resolve(name: str) -> list[str]:
    try:
        return [str(info[4][0]) for info in socket.getaddrinfo(name, None, type=socket.SOCK_STREAM)]
    except (OSError, UnicodeError):
        return []


def sources(addresses: Iterable[str], lookup: Callable[[str], list[str]] = resolve) -> tuple[list[str], list[str]]:
    """The from= addresses of the nodes `addresses` (those written as IP addresses, then what the host
    names among them resolve to, never loopback, each once) and the host names that resolve to nothing."""
    addresses = list(dict.fromkeys(addresses))
    names = [address for address in addresses if not IP_RE.match(address)]
    found = {name: lookup(name) for name in names}
    candidates = addresses + [address for name in names for address in found[name]]
    keep = [a for a in candidates if IP_RE.match(a) and not LOOPBACK_RE.match(a)]
    return list(dict.fromkeys(keep)), [name for name in names if not found[name]]


def describe(host_key_dir: str, ssh_dir: str, key: str, addresses: list[str], run: Run) -> dict[str, Any]:
    keys, bad = host_keys(host_key_dir)
    from_addresses, unresolved = sources(addresses)
    return {
        "host_keys": keys,
        "bad_host_keys": bad,
        "pinned_lines": [line for line in content_lines(read_text(f"{ssh_dir}/known_hosts")) if pinnable(line)],
        "authorized_lines": content_lines(read_text(f"{ssh_dir}/authorized_keys")),
        "key": (private_key(key, run) if os.path.isfile(key) else None) or {},
        "sources": from_addresses,
        "unresolved": unresolved,
    }


def main() -> None:
    module = AnsibleModule(
        argument_spec={
            "host_key_dir": {"type": "path", "required": True},
            "ssh_dir": {"type": "path", "required": True},
            "key": {"type": "path", "required": True},
            "addresses": {"type": "list", "elements": "str", "default": []},
        },
        supports_check_mode=True,
    )
    params = module.params
    try:
        result = describe(
            params["host_key_dir"], params["ssh_dir"], params["key"], params["addresses"], module.run_command
        )
    except OSError as err:
        module.fail_json(msg=str(err))
    module.exit_json(changed=False, **result)


if __name__ == "__main__":
    main()
