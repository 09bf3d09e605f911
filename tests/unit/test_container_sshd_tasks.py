# Copyright: multinode.horovod contributors
# SPDX-License-Identifier: GPL-3.0-or-later
"""container_sshd's tasks: where the role knocks for sshd's banner, and its image check
(files/sshd_image_check.sh)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
import yaml
from ansible.parsing.dataloader import DataLoader
from ansible.template import Templar
from checkout import REPO, trust_as_template

CHECK = REPO / "roles" / "container_sshd" / "files" / "sshd_image_check.sh"


@pytest.mark.parametrize(
    ("addresses", "probe"),
    [
        ([], "127.0.0.1"),
        (None, "127.0.0.1"),
        (["0.0.0.0"], "127.0.0.1"),
        (["10.0.0.1", "0.0.0.0"], "127.0.0.1"),
        (["10.0.0.1", "10.0.1.1"], "10.0.0.1"),
        (["[fd00::1]"], "fd00::1"),
    ],
)
def test_the_probe_address(addresses, probe):
    tasks = yaml.safe_load((REPO / "roles" / "container_sshd" / "tasks" / "main.yml").read_text())
    wait = next(task for task in tasks if task["name"] == "Wait for sshd in the container to answer")
    variables = {"container_sshd_listen_addresses": addresses}
    templar = Templar(loader=DataLoader(), variables=variables)
    assert templar.template(trust_as_template(wait["vars"]["__container_sshd_probe_address"])) == probe


def image_check(tmp_path: Path, shadow_field: str, sshd: bool) -> list[str]:
    """The check as the role runs it (sh -c CODE NAME SSHD), with a fake getent for the image's shadow."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    (bin_dir / "getent").write_text(f"#!/bin/sh\necho 'root:{shadow_field}:19000:0:99999:7:::'\n")
    (bin_dir / "getent").chmod(0o755)
    binary = tmp_path / "sshd"
    binary.unlink(missing_ok=True)
    if sshd:
        binary.write_text("#!/bin/sh\n")
        binary.chmod(0o755)
    env = dict(os.environ, PATH=f"{bin_dir}:{os.environ['PATH']}")
    argv = ["/bin/sh", "-c", CHECK.read_text(), "check", str(binary)]
    return json.loads(subprocess.run(argv, capture_output=True, text=True, check=True, env=env).stdout)


@pytest.mark.parametrize("field", ["*", "", "$y$j9T$salt$hash"])
def test_an_image_with_sshd_and_a_root_that_is_not_locked_passes(tmp_path, field):
    assert image_check(tmp_path, field, sshd=True) == []


def test_an_image_without_sshd_or_with_a_locked_root_is_refused(tmp_path):
    locked = "root is locked (its password field starts with !)"
    assert image_check(tmp_path, "*", sshd=False) == [f"no {tmp_path / 'sshd'}"]
    assert image_check(tmp_path, "!", sshd=True) == [locked]
    assert image_check(tmp_path, "!$y$j9T$x", sshd=False) == [f"no {tmp_path / 'sshd'}", locked]
