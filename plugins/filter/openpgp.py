# Copyright: multinode.horovod contributors
# SPDX-License-Identifier: GPL-3.0-or-later
"""OpenPGP helpers for the roles' tasks (the key reader itself: plugins/module_utils/openpgp.py)."""

from __future__ import annotations

from typing import Any

from ansible_collections.multinode.horovod.plugins.module_utils.openpgp import normalise_fingerprint


class FilterModule:
    """OpenPGP helpers."""

    def filters(self) -> dict[str, Any]:
        return {"openpgp_fingerprint": normalise_fingerprint}
