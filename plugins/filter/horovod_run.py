# Copyright: multinode.horovod contributors
# SPDX-License-Identifier: GPL-3.0-or-later
"""Filters of horovod_launch's run handling: the default run identity, the run table, running jobs.

Kept in Python so that they are unit-tested (tests/unit/test_horovod_run_filters.py).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from ansible.errors import AnsibleFilterError
from ansible_collections.multinode.horovod.plugins.filter.horovod_output import failed_rank
from ansible_collections.multinode.horovod.plugins.module_utils import jobs

# What defines a run; a change to any of them is another run (another default name).
IDENTITY_KEYS = ("command", "code", "hosts", "np", "image", "env_names", "workdir", "controller", "extra_args")
# Keys only some runs have (an elastic run's bounds); absent, they leave the names of other runs as they were.
OPTIONAL_KEYS = ("elastic",)
ID_PREFIX = "run-"
ID_HEX = 12


def _plain(value: Any) -> Any:
    """`value` with Ansible's string and container types turned into JSON's."""
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if isinstance(value, bool) or value is None or isinstance(value, int | float):
        return value
    return str(value)


def run_id(definition: Mapping[str, Any]) -> str:
    """``run-`` and 12 hex digits of the SHA-256 of what defines a run (IDENTITY_KEYS, all required; OPTIONAL_KEYS).

    Equal definitions give equal names, whatever the order of their keys; ``env_names`` is compared as
    a set (the values of the environment never take part: they may be secrets).
    """
    if not isinstance(definition, Mapping):
        raise AnsibleFilterError(f"horovod_run_id expects a mapping, got {type(definition).__name__}")
    missing = [key for key in IDENTITY_KEYS if key not in definition]
    unknown = sorted(str(key) for key in definition if key not in IDENTITY_KEYS + OPTIONAL_KEYS)
    if missing or unknown:
        raise AnsibleFilterError(
            f"horovod_run_id: give exactly the keys {', '.join(IDENTITY_KEYS)}"
            + (f"; missing {', '.join(missing)}" if missing else "")
            + (f"; unknown {', '.join(unknown)}" if unknown else "")
        )
    plain = _plain(definition)
    plain["env_names"] = sorted(set(plain["env_names"] or []))
    digest = hashlib.sha256(json.dumps(plain, sort_keys=True, separators=(",", ":")).encode()).hexdigest()
    return ID_PREFIX + digest[:ID_HEX]


def _duration(seconds: Any) -> str:
    if not isinstance(seconds, int) or isinstance(seconds, bool):
        return "-"
    days, rest = divmod(seconds, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    if days:
        return f"{days}d{hours:02d}h{minutes:02d}m"
    if hours:
        return f"{hours}h{minutes:02d}m{secs:02d}s"
    return f"{minutes}m{secs:02d}s" if minutes else f"{secs}s"


def run_status(runs: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The runs the status helper reported, each with failed_rank, failed_host and a one-line summary."""
    out = []
    for run in runs or []:
        if not isinstance(run, Mapping) or "name" not in run or "state" not in run:
            raise AnsibleFilterError(f"horovod_run_status: {run!r} is not a run of the status helper")
        item = dict(run)
        rank = failed_rank(run.get("log_tail", "")) if run["state"] == "failed" else None
        hosts = list(run.get("rank_hosts") or [])
        item["failed_rank"] = rank
        item["failed_host"] = hosts[rank] if rank is not None and rank < len(hosts) else None
        parts = [f"{run['name']}: {run['state']}", _duration(run.get("duration_s"))]
        if run.get("rc") is not None:
            parts.append(f"rc {run['rc']}")
        if rank is not None:
            parts.append(f"rank {rank} failed first" + (f" (on {item['failed_host']})" if item["failed_host"] else ""))
        if run.get("elastic"):
            now = ", ".join(run.get("current_hosts") or []) or "none"
            parts.append(
                f"elastic, hosts {'now' if run['state'] == 'running' else 'last'}: {now} "
                f"({run.get('host_sets', 0)} host sets)"
            )
        last = run.get("last_line") or ""
        item["summary"] = ", ".join(parts) + (f" | {last}" if last else "")
        item.pop("log_tail", None)
        out.append(item)
    return out


def host_sets(text: Any) -> list[dict[str, Any]]:
    """An elastic run's host sets over time, from its hosts.log (``EPOCH ADDRESS:SLOTS,...`` per change).

    ``[{"since": EPOCH, "hosts": ["ADDRESS:SLOTS", ...]}]`` in order; a line that is not of that form is
    skipped (the file is written by the run's discovery script while the run goes on).
    """
    out: list[dict[str, Any]] = []
    for line in str(text or "").splitlines():
        since, _, hosts = line.strip().partition(" ")
        if since.isdigit():
            out.append({"since": int(since), "hosts": [h for h in hosts.split(",") if h]})
    return out


def job_processes(processes: Any, idle_patterns: Iterable[str] = ()) -> list[str]:
    """``PID ARGS`` of the processes (probe's ``[{pid, args}]`` or docker top output) that are a running job.

    The collection's one definition (plugins/module_utils/jobs.py): every process that neither the
    container's idle processes nor `idle_patterns` match.
    """
    try:
        if isinstance(processes, str):
            return jobs.jobs(jobs.parse_top(processes), idle_patterns or [])
        return jobs.jobs(processes or [], idle_patterns or [])
    except jobs.PatternError as exc:
        raise AnsibleFilterError(str(exc)) from exc
    except (TypeError, KeyError, IndexError) as exc:
        raise AnsibleFilterError(f"job_processes: expects [{{pid, args}}] or docker top output: {exc}") from exc


class FilterModule:
    """multinode.horovod run filters."""

    def filters(self) -> dict[str, Callable[..., Any]]:
        return {
            "horovod_run_id": run_id,
            "horovod_run_status": run_status,
            "horovod_host_sets": host_sets,
            "job_processes": job_processes,
        }
