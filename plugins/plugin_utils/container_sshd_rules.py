# Copyright: multinode.horovod contributors
# SPDX-License-Identifier: GPL-3.0-or-later
"""The container_sshd role's input rules that need no host (the interface: plugins/filter/role_rules.py).

``problems(inputs)`` returns ``(variable, message)`` for every input the role would refuse. The role
checks them first in tasks/assert.yml; the site's gate checks the same rules on what the site hands
to the role. What only a host can tell (the container, its image, the ports already taken there and
the host's own sshd port) stays a task in tasks/assert.yml.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Callable, Mapping
from typing import Any

from ansible_collections.multinode.horovod.plugins.module_utils import defaults
from ansible_collections.multinode.horovod.plugins.module_utils.numbers import whole
from ansible_collections.multinode.horovod.plugins.module_utils.values import container_name_problem, plain, switch
from ansible_collections.multinode.horovod.plugins.plugin_utils import roles

Problems = list[tuple[str, str]]
Values = Mapping[str, Any]

# vars/main.yml, __container_sshd_all_key_types; the unit test checks they agree.
KEY_TYPES = ("ed25519", "ecdsa", "rsa")


def check_port(values: Values) -> Problems:
    value = values["container_sshd_port"]
    port = whole(value)
    if port is not None and 1 <= port <= 65535:
        return []
    fix = f"use a whole number from 1 to 65535 that is not the host's own sshd port (default {defaults.SSH_PORT})"
    return [("container_sshd_port", f"{plain(value)!r} is not a TCP port; {fix}")]


def check_host_key_types(values: Values) -> Problems:
    variable, value = "container_sshd_host_key_types", values["container_sshd_host_key_types"]
    allowed = ", ".join(KEY_TYPES)
    if not isinstance(value, list):
        return [(variable, f"{plain(value)!r} is not a list; list the key types, for example [ed25519, rsa]")]
    if not value:
        return [(variable, f"the list is empty and sshd needs a host key; list at least one of {allowed}")]
    found: Problems = [
        (variable, f"{plain(key_type)!r} is not a host key type this role makes; use {allowed}")
        for key_type in value
        if not isinstance(key_type, str) or key_type not in KEY_TYPES
    ]
    twice = sorted({key_type for key_type in value if isinstance(key_type, str) and value.count(key_type) > 1})
    if twice:
        found.append((variable, f"{', '.join(twice)} is listed more than once; list each key type once"))
    return found


def address_problem(value: object) -> str | None:
    """Why `value` is not an IPv4 or IPv6 address for ListenAddress (IPv6 may be in brackets), or None."""
    fix = "use an IPv4 or IPv6 address such as 192.0.2.10 or 2001:db8::10, or leave the list empty for every address"
    if not isinstance(value, str):
        return f"{plain(value)!r} is not a string; {fix}"
    bare = value[1:-1] if value.startswith("[") and value.endswith("]") else value
    try:
        address = ipaddress.ip_address(bare)
    except ValueError:
        return f"{value!r} is not an IP address (no names, ports, spaces or empty strings); {fix}"
    return f"{value!r} puts an IPv4 address in brackets; {fix}" if bare != value and address.version != 6 else None


def _check_list(values: Values, variable: str, problem_of: Callable[[object], str | None], example: str) -> Problems:
    """A list variable's problems: not a list, an item `problem_of` refuses, or an item listed twice."""
    value = values[variable]
    if not isinstance(value, list):
        return [(variable, f"{plain(value)!r} is not a list; use a list such as [{example}], or []")]
    found: Problems = [(variable, problem) for problem in map(problem_of, value) if problem]
    twice = sorted({item for item in value if isinstance(item, str) and value.count(item) > 1})
    if twice:
        found.append((variable, f"{', '.join(twice)} is listed more than once; list each once"))
    return found


def check_listen_addresses(values: Values) -> Problems:
    return _check_list(values, "container_sshd_listen_addresses", address_problem, "192.0.2.10")


def source_problem(value: object) -> str | None:
    """Why `value` is not an address or CIDR network for ``AllowUsers root@SOURCE``, or None."""
    fix = (
        "use an IPv4 or IPv6 address or network such as 192.0.2.10 or 192.0.2.0/24 (sshd matches sources by "
        "address, not by name), or leave the list empty for any source"
    )
    if not isinstance(value, str):
        return f"{plain(value)!r} is not a string; {fix}"
    try:
        ipaddress.ip_network(value, strict=False)
    except ValueError:
        return f"{value!r} is not an IP address or network (no names, brackets, ports or spaces); {fix}"
    return None


def admits_any(value: object) -> bool:
    """Whether a source admits every address: ``*``, a network of prefix length 0 or the unspecified
    address (``0.0.0.0``, ``::``), which is written to mean any."""
    if value == "*":
        return True
    try:
        network = ipaddress.ip_network(value, strict=False) if isinstance(value, str) else None
    except ValueError:
        return False
    return network is not None and (network.prefixlen == 0 or network.with_prefixlen in ("0.0.0.0/32", "::/128"))


def check_allow_from(values: Values) -> Problems:
    allow_any = switch(values["container_sshd_allow_any_source"]) is True

    def problem_of(source: object) -> str | None:
        if not admits_any(source):
            return source_problem(source)
        if allow_any:
            return None
        return (
            f"{source!r} admits every address, so root may log in from anywhere that reaches the port; list the "
            "cluster's addresses or networks (such as 192.0.2.0/24), or set container_sshd_allow_any_source: true "
            "if that is really meant"
        )

    return _check_list(values, "container_sshd_allow_from", problem_of, "192.0.2.0/24")


def check_allow_any_source(values: Values) -> Problems:
    variable = "container_sshd_allow_any_source"
    if switch(values[variable]) is None:
        return [(variable, f"{plain(values[variable])!r} is not a boolean; use true or false")]
    return []


def check_container_name(values: Values) -> Problems:
    problem = container_name_problem(values["container_sshd_container_name"])
    return [("container_sshd_container_name", problem)] if problem else []


def check_wait_timeout(values: Values) -> Problems:
    value = values["container_sshd_wait_timeout"]
    seconds = whole(value)
    if seconds is not None and seconds > 0:
        return []
    fix = "use a whole number such as the default 30"
    return [("container_sshd_wait_timeout", f"{plain(value)!r} is not a number of seconds above 0; {fix}")]


CHECKS: tuple[Callable[[Values], Problems], ...] = (
    check_container_name,
    check_port,
    check_listen_addresses,
    check_allow_from,
    check_allow_any_source,
    check_host_key_types,
    check_wait_timeout,
)


def problems(inputs: Mapping[str, Any]) -> Problems:
    """Every problem with container_sshd's inputs as (variable, message); empty when they are sound."""
    values = roles.inputs("container_sshd", inputs)
    found: Problems = []
    for check in CHECKS:
        found.extend(check(values))
    return found
