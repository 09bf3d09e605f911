# Copyright: multinode.horovod contributors
# SPDX-License-Identifier: GPL-3.0-or-later
"""ssh_trust's decisions across the nodes, from what each node read (tests/unit/test_ssh_trust_filters.py).

The filters read, through ``hostvars``, what the role registered on each node:

- ``__ssh_trust_read``: the node's multinode.horovod.ssh_trust_info result (tasks/read.yml);
- ``__ssh_trust_keypair``: the node's openssh_keypair result (tasks/main.yml);
- ``__ssh_trust_row``: its run of files/ssh_matrix.py, JSON on stdout (tasks/verify.yml).

The OpenSSH text formats (key and known_hosts lines) are plugins/module_utils/ssh_keys.py.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ansible_collections.multinode.horovod.plugins.module_utils.ssh_keys import (
    key_changed,
    known_host,
    own_keys,
    pinned_for,
)
from ansible_collections.multinode.horovod.plugins.module_utils.worker_reports import (
    pinned_keys,
    public_key,
    ssh_row,
    ssh_trust_read,
)

READ = "__ssh_trust_read"
KEYPAIR = "__ssh_trust_keypair"
ROW = "__ssh_trust_row"
NOT_RUN = "no result (the ssh loop did not run)"
NO_KEY_NOTE = "(no key: ssh_trust_mesh is false)"

Nodes = Sequence[Mapping[str, Any]]


def _read(hostvars: Mapping[str, Any], name: str) -> Mapping[str, Any] | None:
    """What the node `name` read in this run, through the boundary (worker_reports.ssh_trust_read: its
    root controls the module's result); None when --limit left it out."""
    read = (hostvars.get(name) or {}).get(READ)
    return ssh_trust_read(name, read) if isinstance(read, Mapping) and "host_keys" in read else None


def pins(hostvars: Mapping[str, Any], nodes: Nodes, port: Any, master: str) -> dict[str, list[str]]:
    """What tasks/pins.yml decides, the same for every node (worked out once per run):

    - ``changed``: the nodes read in this run whose host keys differ from those pinned for them in any
      node's known_hosts (key_changed): a node that lost its file cannot re-trust alone;
    - ``known_hosts``: the lines every node writes, ``host-field type blob`` per node and key: the keys
      read on the node, or, for a node this run left out (--limit), those the master's known_hosts pins
      for it. Never a worker's pins: root on a worker writes that worker's own file, and would otherwise
      choose what every node trusts for the node left out;
    - ``keyless``: the nodes without a key there (none read, or left out and not pinned by the master);
    - ``bad_host_keys``: ``"node: PATH why"`` for every host key file of a node read that is not one key.
    """
    reads = {str(node["name"]): _read(hostvars, str(node["name"])) for node in nodes}
    every_pin = list(dict.fromkeys(line for read in reads.values() if read for line in read["pinned_lines"]))
    master_pins = reads.get(master)["pinned_lines"] if reads.get(master) else []
    known, changed = {}, []
    for node in nodes:
        name, address, read = str(node["name"]), str(node["address"]), reads[str(node["name"])]
        known[name] = list(read["host_keys"]) if read else pinned_keys(master, pinned_for(master_pins, name, address))
        if read and key_changed(pinned_for(every_pin, name, address), read["host_keys"]):
            changed.append(name)
    return {
        "changed": changed,
        "keyless": [name for name, keys in known.items() if not keys],
        "known_hosts": [
            f"{known_host([node['name'], node['address']], port)} {key}"
            for node in nodes
            for key in known[str(node["name"])]
        ],
        "bad_host_keys": [
            f"{name}: {problem}" for name, read in reads.items() if read for problem in read.get("bad_host_keys", [])
        ],
    }


def wanted_keys(hostvars: Mapping[str, Any], owners: Sequence[str], marker: str) -> list[str]:
    """``"type blob MARKER:node"`` for each key node's public key (its openssh_keypair result), to
    authorise on every node. A node whose key does not exist (yet, in check mode) gives none."""
    out = []
    for name in owners:
        key = public_key(name, ((hostvars.get(name) or {}).get(KEYPAIR) or {}).get("public_key", ""))
        if key.startswith("ssh-"):
            out.append(f"{key} {marker}:{name}")
    return out


def stale_keys(authorized_lines: Sequence[str], wanted: Sequence[str], marker: str) -> list[str]:
    """The role's lines of authorized_keys (last word ``MARKER:node``) whose key is none of `wanted`: a
    node that left, a key made anew. With nothing wanted (teardown), every line of the role's. Lines
    without the marker, or with it anywhere but as the last word, are never stale."""
    ours = own_keys(authorized_lines, marker)
    if not wanted:
        return ours
    kept = re.compile(r"\s(" + "|".join(re.escape(line.split()[1]) for line in wanted) + r")\s")
    return [line for line in ours if not kept.search(line)]


def _row(hostvars: Mapping[str, Any], source: str, names: Sequence[str]) -> dict[str, str]:
    """``{target: "ok" or ssh's error}`` of the node's run of the matrix, through the boundary
    (worker_reports.ssh_row); {} when it did not run."""
    return ssh_row(source, ((hostvars.get(source) or {}).get(ROW) or {}).get("stdout"), names)


def matrix(hostvars: Mapping[str, Any], names: Sequence[str], sources: Sequence[str], port: Any) -> dict[str, Any]:
    """The ssh matrix of tasks/verify.yml from the key nodes' (`sources`) rows: ``failures``, ``{source:
    ["source -> target: error", ...]}`` for every pair that did not log in; ``lines``, the printed matrix
    (a title, the node names, then per node ``ok``, ``FAILED`` or ``-`` for no result per target and a
    note on nodes without a key), then every failure."""
    rows = {source: _row(hostvars, source, names) for source in sources}
    failures = {
        source: [f"{source} -> {t}: {rows[source].get(t, NOT_RUN)}" for t in names if rows[source].get(t) != "ok"]
        for source in sources
    }
    width = max((len(name) for name in names), default=0) + 2

    def cells(texts: Sequence[str]) -> str:
        return "".join(f"{text:<{width}}" for text in texts)

    lines = [f"ssh from the container of (row) to (column), port {port}:", cells(["", *names])]
    for source in names:
        results = [rows[source].get(t, "-") if source in rows else "-" for t in names]
        shown = [result if result in ("ok", "-") else "FAILED" for result in results]
        lines.append(cells([source, *shown]) + ("" if source in rows else NO_KEY_NOTE))
    return {"lines": lines + [line for source in sources for line in failures[source]], "failures": failures}


class FilterModule:
    """multinode.horovod.ssh_trust_* filters."""

    def filters(self) -> dict[str, Callable[..., Any]]:
        return {
            "ssh_trust_pins": pins,
            "ssh_trust_wanted_keys": wanted_keys,
            "ssh_trust_stale_keys": stale_keys,
            "ssh_trust_matrix": matrix,
        }
