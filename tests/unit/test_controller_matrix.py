# Copyright: multinode.horovod contributors
# SPDX-License-Identifier: GPL-3.0-or-later
"""The ansible-core range meta/runtime.yml declares is the one make matrix tests, end to end.

tools/controller_matrix.py runs the lowest and the newest controller; make test runs the pinned one
(requirements.txt). The declared range starts at the lowest and ends just after the newest, and each
controller's requirements file pins the ansible-core it is named for.
"""

from __future__ import annotations

import re

import yaml
from checkout import REPO, load

load("tools/progress.py", "progress")  # the matrix imports its siblings by name
load("tools/machines.py", "machines")
load("tools/lab.py", "lab")
matrix = load("tools/controller_matrix.py", "controller_matrix")


def minor(version: str) -> tuple[int, int]:
    major, minor_ = (int(p) for p in version.split(".")[:2])
    return major, minor_


def declared() -> tuple[tuple[int, int], tuple[int, int]]:
    spec = yaml.safe_load((REPO / "meta" / "runtime.yml").read_text())["requires_ansible"]
    match = re.fullmatch(r">=(\d+\.\d+)\.0,<(\d+\.\d+)\.0", spec)
    assert match, f"meta/runtime.yml: requires_ansible {spec!r} is not '>=X.Y.0,<X.Z.0'"
    return minor(match.group(1)), minor(match.group(2))


def pinned(text: str, package: str) -> str:
    match = re.search(rf"^{re.escape(package)}==([0-9.]+)$", text, re.MULTILINE)
    assert match, f"{package} is not pinned with =="
    return match.group(1)


def test_the_declared_range_is_the_matrix() -> None:
    lowest, above = declared()
    cores = sorted(minor(c.core) for c in matrix.CONTROLLERS)
    assert cores[0] == lowest, "the matrix's lowest controller is not meta/runtime.yml's minimum"
    assert (cores[-1][0], cores[-1][1] + 1) == above, "the matrix's newest controller is not the last declared"


def test_the_pinned_toolchain_lies_in_the_range() -> None:
    lowest, above = declared()
    assert lowest <= minor(pinned((REPO / "requirements.txt").read_text(), "ansible-core")) < above


def test_each_controller_pins_the_ansible_core_it_is_named_for() -> None:
    for controller in matrix.CONTROLLERS:
        text = controller.requirements.read_text()
        assert minor(pinned(text, "ansible-core")) == minor(controller.core), controller.requirements
        pinned(text, "ansible")  # and the ansible package of its time, which carries our dependencies


def test_a_warning_about_a_modules_result_key_is_found() -> None:
    # As ansible-core 2.21.5 printed it for horovod_run_info's `finished`, and one it drops.
    output = (
        "TASK [multinode.horovod.horovod_launch : Read the run] ***\n"
        "[WARNING]: Value for result key 'finished' of type int was converted to bool.\n"
        "ok: [master]\n"
        "[WARNING]: Removed reserved key '_ansible_no_log' from module result.\n"
        "[WARNING]: Collection community.docker does not support Ansible version 2.21.5\n"
    )
    assert matrix.result_key_warnings(output) == [
        "[WARNING]: Value for result key 'finished' of type int was converted to bool.",
        "[WARNING]: Removed reserved key '_ansible_no_log' from module result.",
    ]
    assert matrix.result_key_warnings("ok: [master]\n") == []
