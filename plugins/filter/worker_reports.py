# Copyright: multinode.horovod contributors
# SPDX-License-Identifier: GPL-3.0-or-later
"""The filter multinode.horovod.worker_report: the trust boundary (plugins/module_utils/worker_reports.py)
for a task that reads a node's report itself. Its documentation is worker_report.yml beside this file."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ansible.errors import AnsibleFilterError
from ansible_collections.multinode.horovod.plugins.module_utils import worker_reports

# kind: (validator, how its arguments are ordered after the report)
KINDS: dict[str, Callable[..., Any]] = {
    "probe_answer": lambda report, node: worker_reports.probe_answer(node, report),
    "nccl_answer": worker_reports.nccl_answer,
    "bench_link": lambda report, node, names: worker_reports.bench_link(report, list(names), node),
    "run_status": worker_reports.run_status,
    "ssh_trust_read": lambda report, node: worker_reports.ssh_trust_read(node, report),
    "public_key": lambda report, node: worker_reports.public_key(node, report),
    "gpu_count": lambda report, node: worker_reports.gpu_count(node, report),
}


def worker_report(report: Any, kind: str, node: str, *args: Any) -> Any:
    """`report` (what `node` reported, of `kind`) checked against its schema; fails naming the node and the
    field."""
    if kind not in KINDS:
        raise AnsibleFilterError(f"worker_report: {kind!r} is not one of {', '.join(KINDS)}")
    try:
        return KINDS[kind](report, str(node), *args)
    except worker_reports.ReportError as exc:
        raise AnsibleFilterError(f"worker_report: {exc}") from exc


class FilterModule:
    """multinode.horovod.worker_report."""

    def filters(self) -> dict[str, Callable[..., Any]]:
        return {"worker_report": worker_report}
