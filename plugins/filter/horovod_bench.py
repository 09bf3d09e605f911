# Copyright: multinode.horovod contributors
# SPDX-License-Identifier: GPL-3.0-or-later
"""The benchmark playbook's filters; the decisions are plugins/module_utils/horovod_bench.py's."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ansible.errors import AnsibleFilterError
from ansible_collections.multinode.horovod.plugins.module_utils import horovod_bench as bench


def bench_plan(  # noqa: PLR0917 - a filter's arguments are positional in Jinja
    given: Mapping[str, Any],
    hosts: Sequence[Mapping[str, Any]],
    share_dir: str,
    artifact_dir: str,
    ssh_port: int,
    identity_file: str = "",
    launcher: str = "horovodrun",
) -> dict[str, Any]:
    if not isinstance(given, Mapping):
        raise AnsibleFilterError(f"horovod_bench_plan expects a mapping, got {type(given).__name__}")
    return bench.plan(given, hosts, share_dir=str(share_dir), artifact_dir=str(artifact_dir or ""),
                      ssh_port=int(ssh_port), identity_file=str(identity_file or ""),
                      launcher=str(launcher))  # fmt: skip


def bench_report(
    plan: Mapping[str, Any],
    preflight: Mapping[str, Any],
    link: Mapping[str, Any] | None,
    slurped: Sequence[Mapping[str, Any]],
    plot: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    try:
        return bench.outputs(plan, bench.report(plan, preflight, link, bench.results_of(slurped), plot))
    except (KeyError, ValueError, TypeError) as exc:
        raise AnsibleFilterError(
            f"horovod_bench_report: a step's result is not what the benchmark writes: {exc}"
        ) from exc


def bench_sanity(report: Any, max_busbw_to_link: float = bench.MAX_BUSBW_TO_LINK) -> list[str]:
    return bench.sanity(report, float(max_busbw_to_link))


class FilterModule:
    """multinode.horovod benchmark filters."""

    def filters(self) -> dict[str, Any]:
        return {
            "horovod_bench_plan": bench_plan,
            "horovod_bench_report": bench_report,
            "horovod_bench_sanity": bench_sanity,
        }
