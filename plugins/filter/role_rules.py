# Copyright: multinode.horovod contributors
# SPDX-License-Identifier: GPL-3.0-or-later
"""The roles' input rules, as a filter for their own tasks/assert.yml.

Each role keeps its controller-side rules (what its inputs may be, before any host is read) in
``plugins/module_utils/<role>_rules.py`` as ``problems(inputs) -> [(variable, message)]``. The role
checks them first (``{{ inputs | multinode.horovod.role_problems('<role>') }}``), and the site's gate
(plugins/filter/cluster.py) checks the same rules on what the site will hand to each role, before
any play touches a host, naming the inventory variable the user set instead.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any

Problems = list[tuple[str, str]]
PACKAGE = "ansible_collections.multinode.horovod.plugins.module_utils"


def rules_of(role: str) -> Callable[[Mapping[str, Any]], Problems]:
    """The ``problems`` function of a role's rules module."""
    return importlib.import_module(f"{PACKAGE}.{role}_rules").problems


def role_problems(inputs: Mapping[str, Any], role: str) -> list[str]:
    """Every problem with a role's inputs as ``variable: message`` lines; empty when they are sound."""
    return [f"{variable}: {message}" for variable, message in rules_of(role)(inputs)]


class FilterModule:
    """Role input rules."""

    def filters(self) -> dict[str, Any]:
        return {"role_problems": role_problems}
