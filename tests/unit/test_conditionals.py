# Copyright: multinode.horovod contributors
# SPDX-License-Identifier: GPL-3.0-or-later
"""Every conditional in the repository's YAML is a string (or a bool).

A list item such as ``- x is search('^a: b')`` is a mapping to YAML (``: `` inside a plain scalar), and
Ansible then fails with "Conditional expressions must be strings" only when the task runs - in a
Molecule scenario, twelve minutes in. This finds it at once."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
KEYS = ("that", "when", "failed_when", "changed_when", "until")
SKIP = (".venv", ".cache", ".git")


def broken(node: Any, where: str = "") -> list[str]:
    found = []
    if isinstance(node, dict):
        for key, value in node.items():
            if key in KEYS:
                items = value if isinstance(value, list) else [value]
                found += [f"{where}.{key}: {item!r}" for item in items if not isinstance(item, str | bool | None)]
            found += broken(value, f"{where}.{key}")
    elif isinstance(node, list):
        for index, item in enumerate(node):
            found += broken(item, f"{where}[{index}]")
    return found


def yaml_files() -> list[Path]:
    return sorted(p for p in ROOT.rglob("*.yml") if not any(part in SKIP for part in p.relative_to(ROOT).parts))


def test_there_are_playbooks_to_check():
    assert len(yaml_files()) > 50


@pytest.mark.parametrize("path", yaml_files(), ids=lambda p: str(p.relative_to(ROOT)))
def test_conditionals_are_strings(path):
    try:
        docs = list(yaml.safe_load_all(path.read_text()))
    except yaml.YAMLError:
        pytest.skip("not plain YAML (a template or a tagged document)")
    assert [problem for doc in docs for problem in broken(doc)] == []


def test_a_mapping_in_a_conditional_is_found():
    doc = yaml.safe_load("- assert:\n    that:\n      - x is search('^a: b')\n      - y == 1\n")
    assert broken(doc) == ['[0].assert.that: {"x is search(\'^a": "b\')"}']
