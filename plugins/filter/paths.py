# Copyright: multinode.horovod contributors
# SPDX-License-Identifier: GPL-3.0-or-later
"""Path helpers for the roles' tasks and templates (the rules themselves: plugins/module_utils/paths.py)."""

from __future__ import annotations

from typing import Any

from ansible_collections.multinode.horovod.plugins.module_utils.paths import strip_slash


class FilterModule:
    """Path helpers."""

    def filters(self) -> dict[str, Any]:
        return {"strip_slash": strip_slash}
