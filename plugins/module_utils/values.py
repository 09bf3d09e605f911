# Copyright: multinode.horovod contributors
# SPDX-License-Identifier: GPL-3.0-or-later
"""One reading of each kind of value the inventory gives, shared by the gate and every role's rules.

Whole numbers are read in numbers.py, paths in paths.py; here: switches (booleans), host names,
container names, and values turned back into plain Python for messages.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from ansible.module_utils.parsing.convert_bool import boolean
from ansible_collections.multinode.horovod.plugins.module_utils import defaults

LABEL_RE = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?")
# The Docker engine's own rule for container names (daemon/names: validContainerNamePattern), without
# the leading "/" it tolerates: at least two characters.
CONTAINER_NAME_RE = re.compile(r"[a-zA-Z0-9][a-zA-Z0-9_.-]+")
CONTAINER_NAME_SHAPE = (
    "a Docker container name: at least two characters, letters, digits, '_', '.' and '-', "
    f"starting with a letter or digit (for example {defaults.CONTAINER_NAME})"
)


def switch(value: object) -> bool | None:
    """`value` as Ansible's ``bool`` type reads it (true/false, yes/no, on/off, 1/0...), or None."""
    try:
        return boolean(value, strict=True)
    except TypeError:
        return None


def is_host_name(value: object) -> bool:
    """Whether `value` is one host name by RFC 1123: dot-separated labels of letters, digits and '-' (at
    most 63 each, 253 in all), the last one not all digits (that is a mistyped IPv4 address)."""
    if not isinstance(value, str) or not 0 < len(value) <= 253:
        return False
    labels = value.split(".")
    return all(LABEL_RE.fullmatch(label) for label in labels) and not labels[-1].isdigit()


def container_name_problem(value: object) -> str | None:
    """Why `value` is not a name Docker accepts for a container, or None when it is."""
    if isinstance(value, str) and CONTAINER_NAME_RE.fullmatch(value):
        return None
    return f"{plain(value)!r} is not a valid container name; use {CONTAINER_NAME_SHAPE}"


def plain(value: Any) -> Any:
    """`value` with Ansible's tagged strings, lists and mappings turned back into plain ones, for messages."""
    if isinstance(value, Mapping):
        return {plain(key): plain(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [plain(item) for item in value]
    for kind in (bool, str, int, float):
        if isinstance(value, kind):
            return kind(value)
    return value


def named(names: Mapping[str, str] | None, variable: str) -> str:
    """How a message names role variable `variable` (or a field of it, ``horovod_launch_hosts.address``):
    the site setting it came from when the site handed the role its names (`names`: {role variable:
    setting}, cluster.setting_names), else the role's own name, so a role used alone names its own."""
    return str((names or {}).get(variable) or variable)
