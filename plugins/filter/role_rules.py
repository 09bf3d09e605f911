# Copyright: multinode.horovod contributors
# SPDX-License-Identifier: GPL-3.0-or-later
"""The roles' input rules, as a filter for their own tasks/assert.yml (plugins/plugin_utils/roles.py)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ansible_collections.multinode.horovod.plugins.module_utils.values import named
from ansible_collections.multinode.horovod.plugins.plugin_utils import roles


def role_problems(inputs: Mapping[str, Any], role: str, names: Mapping[str, str] | None = None) -> list[str]:
    """Every problem with the role's inputs as ``variable: message`` lines; empty when they are sound.

    `inputs`: the task's ``vars``, from which every option of the role's argument spec is read (and
    nothing else), or a mapping of some of the options. `names`: {role variable: the site setting the
    user set}, as the site hands them (cluster.setting_names); a line then names the setting as the
    gate does, ``horovod_ssh_port (as container_sshd_port): ...``."""
    rules = roles.rules(role)
    if rules is None:
        return []
    given = {name: inputs[name] for name in roles.spec(role) if name in inputs}
    lines = []
    for variable, message in rules(given):
        user = named(names, variable)
        lines.append(f"{user if user == variable else f'{user} (as {variable})'}: {message}")
    return lines


class FilterModule:
    """Role input rules."""

    def filters(self) -> dict[str, Any]:
        return {"role_problems": role_problems}
