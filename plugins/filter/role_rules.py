# Copyright: multinode.horovod contributors
# SPDX-License-Identifier: GPL-3.0-or-later
"""The roles' input rules, as a filter for their own tasks/assert.yml (plugins/plugin_utils/roles.py)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ansible_collections.multinode.horovod.plugins.plugin_utils import roles


def role_problems(inputs: Mapping[str, Any], role: str) -> list[str]:
    """Every problem with the role's inputs as ``variable: message`` lines; empty when they are sound.

    `inputs`: the task's ``vars``, from which every option of the role's argument spec is read (and
    nothing else), or a mapping of some of the options."""
    rules = roles.rules(role)
    if rules is None:
        return []
    given = {name: inputs[name] for name in roles.spec(role) if name in inputs}
    return [f"{variable}: {message}" for variable, message in rules(given)]


class FilterModule:
    """Role input rules."""

    def filters(self) -> dict[str, Any]:
        return {"role_problems": role_problems}
