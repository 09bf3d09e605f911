# Copyright: multinode.horovod contributors
# SPDX-License-Identifier: GPL-3.0-or-later
"""Unit tests of plugins/modules/share_marker.py: what root on a worker may plant on the share (a link
to a file of the master's, a FIFO, a device, a directory) is never written through nor read."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from checkout import REPO, load

m = load("plugins/modules/share_marker.py", "share_marker")

TOKEN = "abc123XYZ"
NAME = f".multinode-horovod-check-{TOKEN}"


@pytest.fixture
def dirs(tmp_path: Path) -> tuple[Path, Path, Path]:
    share, artifacts, outside = tmp_path / "share", tmp_path / "artifacts", tmp_path / "etc"
    for directory in (share, artifacts, outside):
        directory.mkdir()
    (outside / "shadow").write_text("root:secret-hash\n")
    return share, artifacts, outside


def test_writes_reads_and_removes_the_markers(dirs: tuple[Path, Path, Path]) -> None:
    share, artifacts, _unused = dirs
    both = [str(share), str(artifacts)]
    assert m.run("present", [*both, str(share / "absent")], TOKEN) == {"changed": True, "written": both}
    assert (share / NAME).read_text() == f"{TOKEN}\n"
    assert m.run("read", both, TOKEN)["markers"] == {str(share): "ok", str(artifacts): "ok"}
    assert m.run("absent", both, TOKEN) == {"changed": True, "removed": both}
    assert not (share / NAME).exists()
    assert m.run("read", both, TOKEN)["markers"] == {str(share): "missing", str(artifacts): "missing"}


def test_a_planted_link_is_never_written_through(dirs: tuple[Path, Path, Path]) -> None:
    share, artifacts, outside = dirs
    (share / NAME).symlink_to(outside / "shadow")
    with pytest.raises(m.MarkerError, match="nothing was written through it"):
        m.run("present", [str(artifacts), str(share)], TOKEN)
    assert (outside / "shadow").read_text() == "root:secret-hash\n"
    # The marker written before the refusal is gone again.
    assert not (artifacts / NAME).exists()


def test_a_planted_dangling_link_creates_nothing_at_its_target(dirs: tuple[Path, Path, Path]) -> None:
    share, _unused, outside = dirs
    (share / NAME).symlink_to(outside / "new-unit.service")
    with pytest.raises(m.MarkerError):
        m.write(str(share), TOKEN)
    assert not (outside / "new-unit.service").exists()


def test_a_link_fifo_or_directory_is_not_read(dirs: tuple[Path, Path, Path]) -> None:
    share, artifacts, outside = dirs
    (share / NAME).symlink_to(outside / "shadow")
    os.mkfifo(artifacts / NAME)  # opened blocking, the read would hang
    assert m.run("read", [str(share), str(artifacts)], TOKEN)["markers"] == {
        str(share): "not a regular file",
        str(artifacts): "not a regular file",
    }
    (share / NAME).unlink()
    (share / NAME).mkdir()
    assert m.read(str(share), TOKEN) == "not a regular file"


def test_a_device_node_is_not_read(dirs: tuple[Path, Path, Path]) -> None:
    share, _unused, _unused = dirs
    if os.geteuid() != 0:
        pytest.skip("mknod of a character device needs root")
    os.mknod(share / NAME, 0o600 | 0o020000, os.makedev(1, 3))  # /dev/null's numbers
    assert m.read(str(share), TOKEN) == "not a regular file"


def test_another_content_is_different_and_not_shown(dirs: tuple[Path, Path, Path]) -> None:
    share, _unused, _unused = dirs
    (share / NAME).write_text("something else\n")
    assert m.read(str(share), TOKEN) == "different"


def test_remove_takes_a_planted_link_away_and_leaves_its_target(dirs: tuple[Path, Path, Path]) -> None:
    share, _unused, outside = dirs
    (share / NAME).symlink_to(outside / "shadow")
    assert m.remove(str(share), TOKEN) is True
    assert not os.path.lexists(share / NAME)
    assert (outside / "shadow").read_text() == "root:secret-hash\n"
    (share / NAME).mkdir()
    with pytest.raises(m.MarkerError, match="is a directory now"):
        m.remove(str(share), TOKEN)


def test_the_write_check_leaves_nothing_behind(dirs: tuple[Path, Path, Path]) -> None:
    share, artifacts, _unused = dirs
    assert m.run("read", [str(share)], TOKEN, write_check=str(artifacts))["writable"] is True
    assert list(artifacts.iterdir()) == []
    assert m.can_create(str(artifacts / "absent"), TOKEN) is False


def test_check_mode_changes_nothing(dirs: tuple[Path, Path, Path]) -> None:
    share, _unused, _unused = dirs
    assert m.run("present", [str(share)], TOKEN, check_mode=True) == {"changed": True, "written": [str(share)]}
    assert list(share.iterdir()) == []
    m.write(str(share), TOKEN)
    assert m.run("absent", [str(share)], TOKEN, check_mode=True) == {"changed": True, "removed": [str(share)]}
    assert (share / NAME).exists()


@pytest.mark.parametrize("token", ["", "../x", "a b", "t\n", "ünï"])
def test_a_token_that_is_not_letters_and_digits_is_refused(dirs: tuple[Path, Path, Path], token: str) -> None:
    with pytest.raises(m.MarkerError, match="letters and digits"):
        m.run("read", [str(dirs[0])], token)


def test_the_module_runs_as_ansible_runs_it(dirs: tuple[Path, Path, Path]) -> None:
    """Through AnsibleModule: JSON arguments in, JSON out, a refusal as failed with its message."""
    share, _unused, outside = dirs
    (share / NAME).symlink_to(outside / "shadow")

    def call(**args: object) -> dict:
        proc = subprocess.run(
            [sys.executable, str(REPO / "plugins/modules/share_marker.py")],
            input=json.dumps({"ANSIBLE_MODULE_ARGS": args}),
            capture_output=True,
            text=True,
            check=False,
        )
        return json.loads(proc.stdout)

    failed = call(path=[str(share)], token=TOKEN, state="present")
    assert failed["failed"] is True and "nothing was written through it" in failed["msg"]
    seen = call(path=[str(share)], token=TOKEN)
    assert seen["markers"] == {str(share): "not a regular file"} and seen["changed"] is False
    assert (outside / "shadow").read_text() == "root:secret-hash\n"


def test_its_documentation_is_what_ansible_doc_reads():
    doc = yaml.safe_load(m.DOCUMENTATION)
    assert doc["module"] == "share_marker" and set(doc["options"]) == {"path", "token", "state", "write_check"}
    assert set(yaml.safe_load(m.RETURN)) == {"written", "markers", "writable", "removed"}
    yaml.safe_load(m.EXAMPLES)
