# Copyright: multinode.horovod contributors
# SPDX-License-Identifier: GPL-3.0-or-later
"""What kind of git ref horovod_launch_code_version names, from ``git ls-remote --tags --heads``.

Kept in Python so that it is unit-tested (tests/unit/test_horovod_code_filter.py).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from ansible.errors import AnsibleFilterError

# A full commit id: SHA-1 (40 hex digits) or SHA-256 (64). A shorter prefix is not a pin: it can
# become ambiguous as the repository grows, and git ls-remote cannot confirm it.
FULL_COMMIT = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")
KINDS = ("commit", "tag", "branch", "ambiguous", "missing")


def code_ref_kind(ls_remote: str, version: str) -> str:
    """``commit``, ``tag``, ``branch``, ``ambiguous`` (a tag and a branch of that name) or ``missing``.

    `ls_remote` is the output of ``git ls-remote --tags --heads REPO`` ("<id>\\t<ref>" lines); a full
    commit id is recognised by its shape alone. ``refs/tags/X`` and ``refs/heads/X`` may be given whole.
    """
    if not isinstance(ls_remote, str) or not isinstance(version, str):
        raise AnsibleFilterError("horovod_code_ref_kind: expects the text of git ls-remote and a ref name")
    ref = version.strip()
    if FULL_COMMIT.fullmatch(ref):
        return "commit"
    refs = set()
    for line in ls_remote.splitlines():
        parts = line.split("\t")
        if len(parts) == 2:
            refs.add(parts[1].strip().removesuffix("^{}"))
    if ref.startswith("refs/tags/"):
        return "tag" if ref in refs else "missing"
    if ref.startswith("refs/heads/"):
        return "branch" if ref in refs else "missing"
    tag, branch = f"refs/tags/{ref}" in refs, f"refs/heads/{ref}" in refs
    if tag and branch:
        return "ambiguous"
    if tag:
        return "tag"
    return "branch" if branch else "missing"


class FilterModule:
    def filters(self) -> dict[str, Callable[..., Any]]:
        return {"horovod_code_ref_kind": code_ref_kind}
