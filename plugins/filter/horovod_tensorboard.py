# Copyright: multinode.horovod contributors
# SPDX-License-Identifier: GPL-3.0-or-later
"""The TensorBoard playbook's filters; the decisions are plugins/module_utils/horovod_tensorboard.py's."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ansible.errors import AnsibleFilterError
from ansible_collections.multinode.horovod.plugins.module_utils import horovod_tensorboard as board


def tensorboard_settings(  # noqa: PLR0917 - a filter's arguments are positional in Jinja
    given: Mapping[str, Any], share_dir: str, artifact_dir: str, runs_dir: str, run_name: str, ssh_port: Any
) -> dict[str, Any]:
    if not isinstance(given, Mapping):
        raise AnsibleFilterError(f"horovod_tensorboard_settings expects a mapping, got {type(given).__name__}")
    return board.settings(given, share_dir=str(share_dir), artifact_dir=str(artifact_dir or ""),
                          runs_dir=str(runs_dir), run_name=str(run_name or ""), ssh_port=ssh_port)  # fmt: skip


def tensorboard_plan(
    given: Mapping[str, Any], read: Mapping[str, Any], master: Mapping[str, Any], container: str
) -> dict[str, Any]:
    try:
        return board.plan(given, read, master, str(container))
    except (KeyError, ValueError, TypeError) as exc:
        raise AnsibleFilterError(f"horovod_tensorboard_plan: {exc!r}") from exc


class FilterModule:
    """multinode.horovod TensorBoard filters."""

    def filters(self) -> dict[str, Any]:
        return {
            "horovod_tensorboard_settings": tensorboard_settings,
            "horovod_tensorboard_plan": tensorboard_plan,
        }
