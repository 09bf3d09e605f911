# Copyright: multinode.horovod contributors
# SPDX-License-Identifier: GPL-3.0-or-later
"""No module of the collection returns a result key Ansible reserves for itself (checkout.RESERVED_RESULT_KEYS):
neither in its RETURN doc nor in what it returns. ansible-core 2.21 reads `finished` as an async job's
state and turned horovod_run_info's end time (epoch seconds) into True, with a warning on every site
run. Under the newest ansible-core of the matrix (make matrix runs tests/unit/plugins there) the set is
checked against ansible-core's own table, and a module's result goes through it."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

import pytest
import yaml
from ansible_collections.multinode.horovod.plugins.module_utils import horovod_run
from checkout import MODULE_MAY_SET, NEEDS_ANSIBLE_CLI, REPO, RESERVED_RESULT_KEYS, reserved_keys, run_module

MODULES = sorted((REPO / "plugins" / "modules").glob("*.py"))

try:  # ansible-core 2.21 and later: the table of the result keys it reads as its own
    from ansible._internal._task import UnifiedTaskResult
except ImportError:
    UnifiedTaskResult = None
NEEDS_RESULT_TABLE = pytest.mark.skipif(
    UnifiedTaskResult is None, reason="this ansible-core has no result key table (2.21 has; make matrix runs it)"
)


def documented_keys(module: Path) -> set[str]:
    """The top-level keys of a module's RETURN doc."""
    for node in ast.parse(module.read_text()).body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", "") == "RETURN" for t in node.targets):
            assert isinstance(node.value, ast.Constant)
            return set(yaml.safe_load(node.value.value) or {})
    raise AssertionError(f"{module.name} has no RETURN doc")


@pytest.mark.parametrize("module", MODULES, ids=[m.stem for m in MODULES])
def test_no_module_documents_a_reserved_key(module: Path) -> None:
    assert not reserved_keys(dict.fromkeys(documented_keys(module))), (
        f"{module.name} returns keys Ansible reserves: {sorted(reserved_keys(dict.fromkeys(documented_keys(module))))}"
    )


def test_a_reserved_key_is_found() -> None:
    # The check itself: the key that warned on 2.21, and any _ansible_ key, are caught; changed is not.
    assert reserved_keys({"finished": 4, "_ansible_anything": 1, "changed": False, "finished_at": 4}) == {
        "finished",
        "_ansible_anything",
    }


def ended_run(tmp_path: Path) -> Path:
    directory = tmp_path / "runs" / "r1"
    directory.mkdir(parents=True)
    (directory / horovod_run.SCRIPT).write_text("#!/bin/sh\n")
    for name, text in {"started": "100", "finished": "193", "rc": "0"}.items():
        (directory / name).write_text(text)
    return directory


@NEEDS_RESULT_TABLE
def test_the_reserved_keys_are_ansible_cores() -> None:
    assert UnifiedTaskResult is not None
    table = set(UnifiedTaskResult.get_result_key_to_resolved_field_mapping(source_is_module=True))
    assert table <= RESERVED_RESULT_KEYS, f"ansible-core reserves more: {sorted(table - RESERVED_RESULT_KEYS)}"
    assert MODULE_MAY_SET <= table


@NEEDS_RESULT_TABLE
def test_horovod_run_infos_result_keeps_its_times_through_ansible_core(tmp_path: Path) -> None:
    # The module's result as ansible-core reads it from a module: every key stays the module's own.
    found: dict[str, Any] = {"changed": False, "check_mode": False, **horovod_run.read(ended_run(tmp_path))}
    assert UnifiedTaskResult is not None
    read = UnifiedTaskResult._from_result_dict(found, source_is_module=True)
    assert read.result_data["finished_at"] == 193 and read.result_data["started"] == 100
    assert set(read.result_data) == set(found) - {"changed"}


@NEEDS_ANSIBLE_CLI
def test_horovod_run_info_returns_its_end_as_finished_at(tmp_path: Path) -> None:
    # run_module fails on any reserved key; the times are the run's, not a bool.
    answer = run_module("horovod_run_info", {"path": str(ended_run(tmp_path))})
    assert (answer["started"], answer["finished_at"], answer["duration_s"]) == (100, 193, 93)
