# Copyright: multinode.horovod contributors
# SPDX-License-Identifier: GPL-3.0-or-later
"""How nfs_client mounts a share (plugins/plugin_utils/nfs_client_rules.py, with the role's input rules)."""

from __future__ import annotations

from typing import Any

from ansible_collections.multinode.horovod.plugins.plugin_utils.nfs_client_rules import mount_of


class FilterModule:
    """nfs_client's mounts."""

    def filters(self) -> dict[str, Any]:
        return {"nfs_client_mount": mount_of}
