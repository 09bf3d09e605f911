# Copyright: multinode.horovod contributors
# SPDX-License-Identifier: GPL-3.0-or-later
"""ssh_trust's controller-side input rules: what its variables may be, before any host is read.

``problems(inputs)`` takes the role's variables by their full names and returns ``(variable, message)``
for each problem (see plugins/filter/role_rules.py). The role checks them first in tasks/assert.yml; the
site's gate checks the same rules on what it will hand to the role. What depends on the play or the
host (every node is in the play, the port is not the one Ansible uses there, the container runs) stays
a task in tasks/assert.yml. A variable missing from ``inputs`` is not checked, except the node list,
which has no usable default.

Names and addresses go verbatim into ``Host`` lines of the containers' ssh client config and into
known_hosts patterns, so they must be one host name or address each: no spaces, commas or the
pattern characters ``* ? ! [ ]``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from ansible_collections.multinode.horovod.plugins.module_utils import defaults
from ansible_collections.multinode.horovod.plugins.module_utils.numbers import shown, whole
from ansible_collections.multinode.horovod.plugins.module_utils.values import container_name_problem, switch

Problems = list[tuple[str, str]]

P = "ssh_trust_"
# A host name or IPv4 address (as in a Horovod host list), or an IPv6 address.
HOST_RE = re.compile(r"[A-Za-z0-9_]([A-Za-z0-9._-]*[A-Za-z0-9_])?")
IPV6_RE = re.compile(r"[0-9A-Fa-f:.]*:[0-9A-Fa-f:.]*")
MAX_PORT = 65535
EXAMPLE = "{name: node-b, address: 192.0.2.11}"

_ABSENT = object()


def _node(index: int, node: Mapping[str, Any], seen: dict[str, dict[str, str]]) -> list[str]:
    """The problems of one entry of ssh_trust_nodes; records its name and address in `seen`."""
    out = []
    name = node.get("name")
    label, who = f"node {index}", f"node {index}"
    if not isinstance(name, str) or not name.strip():
        out.append(f"node {index} has no name; give each node its inventory hostname as name, e.g. {EXAMPLE}")
    elif not HOST_RE.fullmatch(name):
        out.append(
            f"node {index}: the name {name!r} is not a host name (letters, digits, '.', '-', '_'); give the "
            "node's inventory hostname"
        )
    elif name in seen["name"]:
        out.append(f"the name {name!r} is used twice; every node needs its own name (its inventory hostname)")
    else:
        seen["name"][name] = name
        label, who = name, f"the node {name}"
    address = node.get("address")
    if address is None or (isinstance(address, str) and not address.strip()):
        out.append(
            f"{who} has no address; give every node a name and the address the other nodes reach it at, e.g. {EXAMPLE}"
        )
    elif not isinstance(address, str) or not (HOST_RE.fullmatch(address) or IPV6_RE.fullmatch(address)):
        out.append(
            f"{who}: the address {address!r} is not one host name, IPv4 or IPv6 address (no spaces, commas, '*', "
            "'?', '!', '[' or ']'); give the address the other nodes reach it at"
        )
    elif address in seen["address"]:
        out.append(
            f"the nodes {seen['address'][address]} and {label} have the same address {address!r}; every node "
            "needs its own address"
        )
    else:
        seen["address"][address] = label
    return out


def _nodes(inputs: Mapping[str, Any]) -> tuple[Problems, list[str]]:
    """The node list's problems, and the names it gives."""
    nodes = inputs.get(f"{P}nodes", [])
    if not isinstance(nodes, list | tuple):
        fix = f"list every node of the cluster as {{name, address}}, e.g. [{EXAMPLE}]"
        return [(f"{P}nodes", f"{nodes!r} is not a list; {fix}")], []
    if not nodes:
        fix = "the master included (playbooks/site.yml builds it from the horovod_cluster group)"
        return [(f"{P}nodes", f"the list is empty; list every node of the cluster as {{name, address}}, {fix}")], []
    out: list[str] = []
    seen: dict[str, dict[str, str]] = {"name": {}, "address": {}}
    for index, node in enumerate(nodes):
        if isinstance(node, Mapping):
            out += _node(index, node, seen)
        else:
            out.append(f"node {index} ({node!r}) is not a {{name, address}} dictionary, e.g. {EXAMPLE}")
    return [(f"{P}nodes", message) for message in out], list(seen["name"])


def _master(inputs: Mapping[str, Any], names: list[str]) -> Problems:
    master = inputs.get(f"{P}master", "")
    if not names or master in names:  # without a sound node list, that list's problem is the one to fix
        return []
    fix = "set it to the node that launches horovodrun"
    return [(f"{P}master", f"{master!r} is not a name in {P}nodes ({', '.join(names) or 'none'}); {fix}")]


def _numbers(inputs: Mapping[str, Any]) -> Problems:
    out: Problems = []
    port = inputs.get(f"{P}port", _ABSENT)
    number = whole(port)
    if port is not _ABSENT and (number is None or not 1 <= number <= MAX_PORT):
        fix = (
            f"use the containers' sshd port, from 1 to 65535 (container_sshd_port, default {defaults.SSH_PORT}), "
            "not the port of the host's own sshd"
        )
        out.append((f"{P}port", f"{shown(port)} is not a TCP port; {fix}"))
    timeout = inputs.get(f"{P}connect_timeout", _ABSENT)
    seconds = whole(timeout)
    if timeout is not _ABSENT and (seconds is None or seconds < 1):
        fix = "set the seconds each ssh of the verification may take to connect"
        out.append((f"{P}connect_timeout", f"{shown(timeout)} is not a whole number of 1 or more; {fix}"))
    return out


def _others(inputs: Mapping[str, Any], names: list[str]) -> Problems:
    out: Problems = []
    replace = inputs.get(f"{P}replace_host_keys", _ABSENT)
    if replace is not _ABSENT and names:
        if not isinstance(replace, list | tuple):
            out.append(
                (f"{P}replace_host_keys", f"{replace!r} is not a list; list node names, e.g. [node-b], or give []")
            )
        else:
            fix = "list only nodes whose changed host key you have checked"
            known = f"{P}nodes ({', '.join(names) or 'none'})"
            out += [
                (f"{P}replace_host_keys", f"{n!r} is not a name in {known}; {fix}") for n in replace if n not in names
            ]
    container = inputs.get(f"{P}container_name", _ABSENT)
    problem = None if container is _ABSENT else container_name_problem(container)
    if problem:
        out.append((f"{P}container_name", problem))
    return out


def _mesh(inputs: Mapping[str, Any]) -> Problems:
    """The key mesh lets root on any worker log in as root to every container: only when the workers are
    trusted (SECURITY.md, "Trusting the workers")."""
    out: Problems = []
    flags = {}
    for name in (f"{P}mesh", f"{P}trust_workers"):
        flags[name] = switch(inputs.get(name, False))
        if flags[name] is None:
            out.append((name, f"{inputs[name]!r} is not true or false"))
    if flags[f"{P}mesh"] is True and flags[f"{P}trust_workers"] is False:
        out.append(
            (
                f"{P}mesh",
                "true trusts the workers: every node gets a key authorised on every node, so root on any worker "
                "can log in as root to every container, the master's included (it holds the cluster's key and "
                "starts horovodrun); site.yml turns it on for horovod_launch_controller: mpi. Set it to false "
                "(horovodrun --gloo needs no mesh) or, if root on every worker may be root in the master's "
                f"container, say so once: horovod_trust_workers: true (site.yml; the role's own variable is "
                f"{P}trust_workers)",
            )
        )
    return out


def problems(inputs: Mapping[str, Any]) -> Problems:
    """Every controller-side problem of ssh_trust's inputs, as (variable, message); empty when sound."""
    if not isinstance(inputs, Mapping):
        return [(f"{P}nodes", f"the role's inputs must be a mapping of variables, got {type(inputs).__name__}")]
    out, names = _nodes(inputs)
    out += _master(inputs, names)
    out += _numbers(inputs)
    out += _others(inputs, names)
    out += _mesh(inputs)
    return out
