"""Make this checkout importable as ``ansible_collections.multinode.horovod`` in a fresh clone.

Plugins import the collection's shared code (plugins/module_utils) by its collection name, as Ansible
loads it. A link in a temporary directory stands in for `make venv`'s link, so `pytest tests/unit`
needs nothing set up first.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(Path(__file__).resolve().parent))

_root = Path(tempfile.mkdtemp(prefix="mnh-collections-"))
(_root / "ansible_collections" / "multinode").mkdir(parents=True)
(_root / "ansible_collections" / "multinode" / "horovod").symlink_to(REPO)
sys.path.insert(0, str(_root))
