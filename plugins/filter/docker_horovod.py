# Copyright: multinode.horovod contributors
# SPDX-License-Identifier: GPL-3.0-or-later
"""The docker_horovod role's decisions, one filter each (plugins/module_utils/docker_horovod_values.py)."""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import Any

from ansible.errors import AnsibleFilterError
from ansible_collections.multinode.horovod.plugins.module_utils import docker_horovod_values as values
from ansible_collections.multinode.horovod.plugins.module_utils import jobs


def _filter(function: Callable[..., Any]) -> Callable[..., Any]:
    """`function` with its ValueError shown as a filter error."""

    @wraps(function)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return function(*args, **kwargs)
        except ValueError as exc:
            raise AnsibleFilterError(f"{function.__name__}: {exc}") from exc

    return wrapper


def job_processes(processes: Any, idle_patterns: Any = ()) -> list[str]:
    """``PID ARGS`` of the running jobs among `processes` (``docker top -o pid,args`` output or the
    probe's ``[{pid, args}]``): the collection's one definition, plugins/module_utils/jobs.py."""
    listed = jobs.parse_top(processes) if isinstance(processes, str) else processes or []
    return jobs.jobs(listed, idle_patterns or [])


class FilterModule:
    """multinode.horovod.docker_horovod_* filters."""

    def filters(self) -> dict[str, Callable[..., Any]]:
        return {
            "docker_horovod_archive_problem": values.archive_problem,
            "docker_horovod_cli_packages": values.cli_packages,
            "docker_horovod_container_spec": values.container_spec,
            "docker_horovod_daemon_plan": _filter(values.daemon_plan),
            "docker_horovod_pip_missing": _filter(values.pip_missing),
            "docker_horovod_pip_plan": values.pip_plan,
            "job_processes": _filter(job_processes),
        }
