# Copyright: multinode.horovod contributors
# SPDX-License-Identifier: GPL-3.0-or-later
"""The filters of multinode.horovod.horovod_launch: one per decision its tasks apply.

The decisions live in plugins/module_utils (horovod_launch.py, horovod_hosts.py, horovod_preflight.py,
horovod_manifest.py),
unit-tested there; each filter's documentation is ``<filter name>.yml`` beside this file.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import Any

from ansible.errors import AnsibleFilterError
from ansible_collections.multinode.horovod.plugins.module_utils import (
    horovod_hosts,
    horovod_launch,
    horovod_manifest,
    horovod_preflight,
)


def _filter(function: Callable[..., Any]) -> Callable[..., Any]:
    """`function` with its ValueError (a bad input the role's rules let through) as a filter error."""

    @wraps(function)
    def wrapped(*args: Any, **kwargs: Any) -> Any:
        try:
            return function(*args, **kwargs)
        except (ValueError, KeyError, TypeError) as exc:
            raise AnsibleFilterError(f"{function.__name__}: {exc}") from exc

    return wrapped


class FilterModule:
    """multinode.horovod.horovod_launch's filters."""

    def filters(self) -> dict[str, Callable[..., Any]]:
        return {
            "horovod_launch_plan": _filter(horovod_launch.plan),
            "horovod_launch_run": _filter(horovod_launch.run),
            "horovod_launch_report": _filter(horovod_launch.report),
            "horovod_run_status": _filter(horovod_manifest.runs_status),
            "horovod_code_ref": _filter(horovod_launch.code_ref),
            "horovod_preflight": _filter(horovod_preflight.preflight),
            "horovod_doctor": _filter(horovod_preflight.doctor),
            "horovod_hostfile": _filter(horovod_hosts.hostfile),
            "horovod_launch_manifest": _filter(horovod_manifest.manifest),
            "horovod_manifest_compare": _filter(horovod_manifest.compare),
            "horovod_nccl_check": _filter(horovod_launch.nccl_check),
            "horovod_nccl_network": _filter(horovod_launch.nccl_network),
        }
