# Copyright: multinode.horovod contributors
# SPDX-License-Identifier: GPL-3.0-or-later
"""What counts as a running training job in a node's Horovod container: the one definition.

docker_horovod's job guard (roles/docker_horovod/tasks/job_guard.yml, from ``docker top`` on the host)
and horovod_launch's preflight (tasks/checks.yml, from the probe in every node's container) both call
a process a job unless it is one of the container's idle processes: docker's init, the supervisor and
its sleep, the sshd listener of container_sshd, docker_horovod's own ``pip list --format=json``, and the
TensorBoard that playbooks/tensorboard.yml starts (it serves the logs and trains nothing).
python, horovodrun, torchrun, ssh sessions, shells and ``pip install`` are jobs. Each role adds its own
extra idle patterns (``*_idle_process_patterns``).

Command lines are shown with the values of ``NAME=value`` words hidden: horovodrun passes the run's
environment (``horovod_launch_env``, which may hold secrets) to remote ranks on their command line.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

from ansible_collections.multinode.horovod.plugins.module_utils import defaults, horovod_tensorboard

# Searched (re.search) in a process's command line; a process none of them matches is a job.
IDLE_PATTERNS: tuple[str, ...] = (
    r"^/sbin/docker-init( |$)",
    rf"^/bin/sh {defaults.CONTAINER_OWN_DIR}/supervisor\.sh$",
    r"^sleep [0-9.]+$",
    rf"^(sshd: )?/usr/sbin/sshd -D -e -f {defaults.SSHD_DIR}/sshd_config( |$)",
    # docker_horovod's own read of the installed packages (tasks/pip.yml, argv from the pip_plan
    # filter: `PYTHON -m pip`, or the shell that picks python3 or python). It only lists, for a second
    # or two; another run of the role beside this one (a check-mode run) may have it going.
    r'^(\S+ -m pip|/bin/sh -c exec .* -m pip "\$@" pip) list --format=json$',
    # playbooks/tensorboard.yml's TensorBoard, by the marker on its command line: it serves the logs and
    # trains nothing, so it holds up no launch, container recreate or teardown (the recreate ends it).
    horovod_tensorboard.IDLE_PATTERN,
)

# The same pattern hides values in roles/horovod_launch/files/horovod_probe.py and horovod_run.py.
_ASSIGNMENT = re.compile(r"(?<![^\s'\"])([A-Za-z_][A-Za-z0-9_]*)=(?:'[^']*'|\"[^\"]*\"|\S*)")


class PatternError(ValueError):
    """An idle pattern that is not a regular expression."""


def invalid_patterns(patterns: Iterable[object]) -> list[object]:
    """The items of `patterns` that are not valid regular expressions (or not strings)."""
    bad = []
    for pattern in patterns or []:
        try:
            re.compile(pattern)  # type: ignore[call-overload]
        except (re.error, TypeError):
            bad.append(pattern)
    return bad


def compile_idle(extra: Iterable[str] = ()) -> list[re.Pattern[str]]:
    """The built-in idle patterns and `extra`, compiled; PatternError names a bad one."""
    compiled = []
    for pattern in (*IDLE_PATTERNS, *(extra or [])):
        try:
            compiled.append(re.compile(pattern))
        except (re.error, TypeError) as exc:
            raise PatternError(f"invalid regular expression {pattern!r}: {exc}") from exc
    return compiled


def redact(args: str) -> str:
    """`args` with the value of every ``NAME=value`` word replaced by ``...``."""
    return _ASSIGNMENT.sub(lambda match: f"{match.group(1)}=...", args)


def parse_top(top_output: str) -> list[tuple[str, str]]:
    """(pid, args) of each process in ``docker top NAME -o pid,args`` output, header line or not."""
    lines = (top_output or "").splitlines()
    out = []
    for line in lines[1:] if lines and lines[0].split()[:1] == ["PID"] else lines:
        parts = line.strip().split(None, 1)
        if parts:
            out.append((parts[0], parts[1] if len(parts) > 1 else ""))
    return out


def jobs(
    processes: Iterable[tuple[str, str]] | Iterable[Mapping[str, object]], extra_idle: Iterable[str] = ()
) -> list[str]:
    """``PID ARGS`` (values of assignments hidden) of every process that is a job.

    `processes` are (pid, args) pairs or mappings with ``pid`` and ``args`` (as the probe reports them).
    """
    idle = compile_idle(extra_idle)
    found = []
    for process in processes or []:
        if isinstance(process, Mapping):
            pid, args = str(process.get("pid", "")), str(process.get("args", ""))
        else:
            pid, args = str(process[0]), str(process[1])
        if not any(pattern.search(args) for pattern in idle):
            found.append(f"{pid} {redact(args)}".rstrip())
    return found
