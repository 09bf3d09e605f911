# Copyright: multinode.horovod contributors
# SPDX-License-Identifier: GPL-3.0-or-later
"""nfs_server's exports file (plugins/plugin_utils/nfs_server_rules.py, with the role's input rules)."""

from __future__ import annotations

from typing import Any

from ansible_collections.multinode.horovod.plugins.plugin_utils.nfs_server_rules import export_lines


class FilterModule:
    """nfs_server's exports."""

    def filters(self) -> dict[str, Any]:
        return {"nfs_server_export_lines": export_lines}
