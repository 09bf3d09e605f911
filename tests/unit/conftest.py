# Copyright: multinode.horovod contributors
# SPDX-License-Identifier: GPL-3.0-or-later
"""Make this checkout usable by the unit tests in a fresh clone, with nothing set up first.

Plugins import the collection's shared code (plugins/module_utils) by its collection name, as Ansible
loads it: ``checkout.COLLECTIONS`` (a link in a temporary directory that stands in for `make venv`'s
link) goes on sys.path, and on ANSIBLE_COLLECTIONS_PATH for every ansible-playbook, ansible-galaxy or
tool the tests start, so a fresh clone needs no `make venv`. The tests that run ansible-playbook or
ansible-galaxy find them on PATH: the directory of the interpreter that runs pytest goes first on PATH
when it holds them, so `.venv/bin/pytest tests/unit` runs those tests when the venv is not activated.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from checkout import COLLECTIONS  # importable once the line above has run

sys.path.insert(0, str(COLLECTIONS))
os.environ["ANSIBLE_COLLECTIONS_PATH"] = str(COLLECTIONS)
# tools/lab.py imports tools/machines.py as `machines`, as when run as `python3 tools/lab.py`.
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tools"))

_bin = Path(sys.executable).parent
if (_bin / "ansible-playbook").is_file() and str(_bin) not in os.environ.get("PATH", "").split(os.pathsep):
    os.environ["PATH"] = os.pathsep.join([str(_bin), *filter(None, [os.environ.get("PATH")])])


def pytest_configure(config: pytest.Config) -> None:
    # Registered here rather than in pyproject.toml: ansible-test units reads its own pytest
    # configuration, and this conftest.py is loaded by both runners.
    config.addinivalue_line(
        "markers",
        "needs_controller: a tests/unit/plugins test that skips under ansible-test units; make unit runs it",
    )
