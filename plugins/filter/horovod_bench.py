# Copyright: multinode.horovod contributors
# SPDX-License-Identifier: GPL-3.0-or-later
"""Filters of playbooks/benchmark.yml: its settings and plan, the report, its table and its sanity.

The decisions live in plugins/module_utils/horovod_bench.py (unit-tested in
tests/unit/test_horovod_bench.py); these filters hand them to the playbook.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ansible.errors import AnsibleFilterError
from ansible_collections.multinode.horovod.plugins.module_utils import horovod_bench as bench
from ansible_collections.multinode.horovod.plugins.module_utils.horovod_launch import plain as _plain


def bench_settings(given: Mapping[str, Any]) -> dict[str, Any]:
    """{settings: the benchmark's settings with their defaults, problems: [message]} from the
    ``horovod_bench_*`` variables given."""
    if not isinstance(given, Mapping):
        raise AnsibleFilterError(f"horovod_bench_settings expects a mapping, got {type(given).__name__}")
    values, problems = bench.settings(_plain(given))
    return {"settings": values, "problems": problems}


def bench_plan(  # noqa: PLR0917 - a filter's arguments are positional in Jinja
    settings: Mapping[str, Any],
    hosts: Sequence[Mapping[str, Any]],
    share_dir: str,
    artifact_dir: str,
    now: str,
    ssh_port: int,
    identity_file: str = "",
) -> dict[str, Any]:
    """What the benchmark measures and where its runs and report go."""
    return bench.plan(_plain(settings), _plain(hosts), share_dir=str(share_dir), artifact_dir=str(artifact_dir),
                      now=str(now), ssh_port=int(ssh_port), identity_file=str(identity_file or ""))  # fmt: skip


def bench_report(meta: Mapping[str, Any], link: Any, allreduce: Any, one: Any, every: Any) -> dict[str, Any]:
    """The report (docs/benchmark.md) from the steps' results; a step that did not run is None or {}."""
    try:
        return bench.report(_plain(meta), _plain(link) or None, _plain(allreduce) or None, _plain(one) or None,
                            _plain(every) or None)  # fmt: skip
    except (KeyError, ValueError, TypeError) as exc:
        raise AnsibleFilterError(
            f"horovod_bench_report: a step's result is not what the benchmark writes: {exc}"
        ) from exc


def bench_markdown(report: Mapping[str, Any]) -> str:
    return bench.markdown(_plain(report))


def bench_summary(report: Mapping[str, Any]) -> list[str]:
    return bench.summary(_plain(report))


def bench_sanity(report: Any, max_busbw_to_link: float = bench.MAX_BUSBW_TO_LINK) -> list[str]:
    return bench.sanity(_plain(report), float(max_busbw_to_link))


class FilterModule:
    """multinode.horovod benchmark filters."""

    def filters(self) -> dict[str, Any]:
        return {
            "horovod_bench_settings": bench_settings,
            "horovod_bench_plan": bench_plan,
            "horovod_bench_report": bench_report,
            "horovod_bench_markdown": bench_markdown,
            "horovod_bench_summary": bench_summary,
            "horovod_bench_sanity": bench_sanity,
        }
