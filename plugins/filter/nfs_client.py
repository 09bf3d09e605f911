# Copyright: multinode.horovod contributors
# SPDX-License-Identifier: GPL-3.0-or-later
"""nfs_client's decisions for its tasks: what a mount's source is and how the role waits for it
(plugins/module_utils/nfs_client_rules.py holds them, with the role's input rules)."""

from __future__ import annotations

from typing import Any

from ansible_collections.multinode.horovod.plugins.module_utils.nfs_client_rules import (
    mount_options,
    mount_source,
    wait_options,
)


class FilterModule:
    """nfs_client's mount source and wait options."""

    def filters(self) -> dict[str, Any]:
        return {
            "nfs_client_source": mount_source,
            "nfs_client_options": mount_options,
            "nfs_client_wait_options": wait_options,
        }
