# Copyright: multinode.horovod contributors
# SPDX-License-Identifier: GPL-3.0-or-later
"""Filters that read what horovodrun prints and writes: the rank that failed first, the directory of a
rank's output, and what ``horovodrun --check-build`` says the image has.

What horovodrun is given (``-H``, the host file) comes from the host-list filters of horovod_hosts.py.
This file holds several filters, so, as in ansible-core, each one's DOCUMENTATION, EXAMPLES and RETURN
live next to it in ``<filter name>.yml``, which ``ansible-doc -t filter`` reads.
"""

from __future__ import annotations

import re
from typing import Any

from ansible.errors import AnsibleFilterError
from ansible_collections.multinode.horovod.plugins.module_utils.numbers import whole

__all__ = ["FilterModule", "check_build", "failed_rank", "rank_dir"]

# horovodrun (Gloo) ends a failed run with
#   "The first process to do so was:\n\nProcess name: 2\nExit code: 1"
# and logs "Process 2 exit with status code 1." for each failure; mpirun names the rank in
# "Process name: [[1234,1],2]" or "rank 2 with PID ... exited on signal".
FIRST_FAILURE_RES = (
    # Gloo names a rank (``2``), mpirun ``[[1234,1],2]``; an elastic run names a slot (``10.0.0.2[0]``, the
    # host and its local rank), which is no rank: the next pattern finds it in "Process N exit ...".
    re.compile(
        r"first process to do so was:\s*Process name:\s*(?:\[\[\d+,\d+\],)?(\d+)\]?[ \t]*(?:\r?\n|$)", re.IGNORECASE
    ),
    re.compile(r"Process (\d+) exit with status code [1-9]"),
    re.compile(r"^\s*Process name:\s*\[\[\d+,\d+\],(\d+)\]", re.MULTILINE),
    re.compile(r"rank (\d+) with PID \d+ on node \S+ exited on signal"),
)


def failed_rank(output: object) -> int | None:
    """The rank horovodrun (or mpirun) reports as the first to fail, or None when none is named."""
    text = "" if output is None else str(output)
    for pattern in FIRST_FAILURE_RES:
        match = pattern.search(text)
        if match:
            return int(match.group(1))
    return None


def rank_dir(rank: object, np: object) -> str:
    """The directory horovodrun's Gloo launcher writes rank ``rank``'s output to under
    ``--output-filename``: ``rank.N`` with N zero-padded to the width of ``np - 1``."""
    number, size = whole(rank), whole(np)
    if number is None or size is None:
        raise AnsibleFilterError(f"rank and np must be whole numbers, got {rank!r} and {np!r}")
    if size < 1 or not 0 <= number < size:
        raise AnsibleFilterError(f"rank must be in 0..np-1 with np >= 1, got rank {number} and np {size}")
    width = len(str(size - 1))
    return f"rank.{number:0{width}d}"


CHECK_SECTIONS = {
    "available frameworks": "frameworks",
    "available controllers": "controllers",
    "available tensor operations": "tensor_operations",
}
CHECK_LINE_RE = re.compile(r"^\s*\[(?P<mark>[ Xx])\]\s*(?P<name>\S.*?)\s*$")
VERSION_RE = re.compile(r"Horovod v?(?P<version>[0-9][0-9A-Za-z.+-]*)")


def check_build(output: object) -> dict[str, Any]:
    """Parse ``horovodrun --check-build``: the version and, per section, the lower-cased names
    marked ``[X]``."""
    text = "" if output is None else str(output)
    result: dict[str, Any] = {"version": "", "frameworks": [], "controllers": [], "tensor_operations": []}
    version = VERSION_RE.search(text)
    if version:
        result["version"] = version.group("version").rstrip(":")
    section: str | None = None
    for line in text.splitlines():
        heading = line.strip().rstrip(":").lower()
        if heading in CHECK_SECTIONS:
            section = CHECK_SECTIONS[heading]
            continue
        match = CHECK_LINE_RE.match(line)
        if section and match and match.group("mark") in "Xx":
            result[section].append(match.group("name").lower())
    if not result["version"] and not any(result[s] for s in CHECK_SECTIONS.values()):
        raise AnsibleFilterError(
            "this is not the output of 'horovodrun --check-build' (no version, no [X] lines): " + text[:200]
        )
    return result


class FilterModule:
    """multinode.horovod filters of horovodrun's output."""

    def filters(self) -> dict[str, Any]:
        return {
            "horovod_failed_rank": failed_rank,
            "horovod_rank_dir": rank_dir,
            "horovod_check_build": check_build,
        }
