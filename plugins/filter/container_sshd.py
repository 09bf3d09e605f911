# Copyright: multinode.horovod contributors
# SPDX-License-Identifier: GPL-3.0-or-later
"""container_sshd's filter: where the role checks that sshd answers (tests/unit/test_container_sshd_filters.py)."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from typing import Any


def probe_address(listen_addresses: Iterable[str]) -> str:
    """Loopback unless sshd listens on given addresses only; then the first, without an IPv6 literal's
    brackets."""
    addresses = [str(address) for address in listen_addresses or []]
    if not addresses or "0.0.0.0" in addresses:
        return "127.0.0.1"
    return re.sub(r"^\[(.*)\]$", r"\1", addresses[0])


class FilterModule:
    """multinode.horovod.container_sshd_probe_address."""

    def filters(self) -> dict[str, Callable[..., Any]]:
        return {"container_sshd_probe_address": probe_address}
