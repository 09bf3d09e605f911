# Copyright: multinode.horovod contributors
# SPDX-License-Identifier: GPL-3.0-or-later
"""Unit tests of plugins/modules/share_path.py: a link that root on a worker planted anywhere below the
share (a directory on the way, the last name, inside the tree) is never followed by the master's root."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from checkout import REPO, load

m = load("plugins/modules/share_path.py", "share_path")


@pytest.fixture
def share(tmp_path: Path) -> Path:
    (tmp_path / "share").mkdir()
    (tmp_path / "master" / "runs" / "run-1").mkdir(parents=True)
    (tmp_path / "master" / "runs" / "run-1" / "keep").write_text("the master's\n")
    return tmp_path / "share"


def master_untouched(share: Path) -> bool:
    return (share.parent / "master" / "runs" / "run-1" / "keep").read_text() == "the master's\n"


def test_creates_the_missing_directories_and_then_changes_nothing(share: Path) -> None:
    first = m.run(str(share), "outputs/run-1", "directory", 0o750)
    assert first == {
        "changed": True,
        "path": str(share / "outputs/run-1"),
        "created": [str(share / "outputs"), str(share / "outputs/run-1")],
    }
    assert (share / "outputs" / "run-1").is_dir()
    assert oct((share / "outputs" / "run-1").stat().st_mode & 0o777) == oct(0o750)
    assert m.run(str(share), "outputs/run-1")["changed"] is False


def test_check_mode_reports_and_changes_nothing(share: Path) -> None:
    assert m.run(str(share), "outputs/run-1", check_mode=True)["created"] == [
        str(share / "outputs"),
        str(share / "outputs/run-1"),
    ]
    assert not (share / "outputs").exists()
    (share / "outputs" / "run-1").mkdir(parents=True)
    assert m.run(str(share), "outputs/run-1", "absent", check_mode=True) == {
        "changed": True,
        "path": str(share / "outputs/run-1"),
        "removed": True,
    }
    assert (share / "outputs" / "run-1").is_dir()


def test_removes_a_tree_and_then_changes_nothing(share: Path) -> None:
    (share / "outputs" / "run-1" / "logs").mkdir(parents=True)
    (share / "outputs" / "run-1" / "logs" / "events").write_text("x")
    (share / "outputs" / "run-1" / "result.json").write_text("{}")
    assert m.run(str(share), "outputs/run-1", "absent")["removed"] is True
    assert not (share / "outputs" / "run-1").exists()
    assert (share / "outputs").is_dir()
    assert m.run(str(share), "outputs/run-1", "absent") == {
        "changed": False,
        "path": str(share / "outputs/run-1"),
        "removed": False,
    }
    assert m.run(str(share), "gone/run-1", "absent")["changed"] is False


def test_a_link_on_the_way_is_never_followed(share: Path) -> None:
    # Root on a worker replaced outputs with a link to a directory of the master's that holds the same name.
    (share / "outputs").symlink_to(share.parent / "master" / "runs")
    with pytest.raises(m.PathError, match=r"outputs is a symbolic link: nothing was done through it"):
        m.run(str(share), "outputs/run-1", "absent")
    with pytest.raises(m.PathError, match="symbolic link"):
        m.run(str(share), "outputs/run-2", "directory")
    assert master_untouched(share)
    assert not (share.parent / "master" / "runs" / "run-2").exists()


def test_the_old_form_followed_that_link(share: Path) -> None:
    # ansible.builtin.file's state=absent removes a directory with shutil.rmtree on the path, which
    # follows the link on the way: the master's directory is gone. That was the hole; the link is real.
    (share / "outputs").symlink_to(share.parent / "master" / "runs")
    shutil.rmtree(os.path.join(str(share), "outputs", "run-1"))
    assert not (share.parent / "master" / "runs" / "run-1").exists()


def test_a_link_at_the_last_name_is_removed_itself(share: Path) -> None:
    (share / "outputs").mkdir()
    (share / "outputs" / "run-1").symlink_to(share.parent / "master" / "runs" / "run-1")
    assert m.run(str(share), "outputs/run-1", "absent")["removed"] is True
    assert not os.path.lexists(share / "outputs" / "run-1")
    assert master_untouched(share)


def test_links_inside_the_tree_are_removed_not_followed(share: Path) -> None:
    inside = share / "outputs" / "run-1" / "deep"
    inside.mkdir(parents=True)
    (inside / "to-master").symlink_to(share.parent / "master" / "runs" / "run-1")
    (inside / "to-file").symlink_to(share.parent / "master" / "runs" / "run-1" / "keep")
    assert m.run(str(share), "outputs/run-1", "absent")["removed"] is True
    assert not (share / "outputs" / "run-1").exists()
    assert master_untouched(share)


def test_a_file_on_the_way_stops_the_walk(share: Path) -> None:
    (share / "outputs").write_text("not a directory")
    with pytest.raises(m.PathError, match="outputs is not a directory"):
        m.run(str(share), "outputs/run-1", "directory")


@pytest.mark.parametrize("path", ["", "/etc", "outputs/../../etc", "./outputs", "outputs/."])
def test_paths_that_leave_the_root_are_refused(share: Path, path: str) -> None:
    with pytest.raises(m.PathError, match="relative path below root"):
        m.run(str(share), path, "absent")


def test_a_relative_root_is_refused() -> None:
    with pytest.raises(m.PathError, match="root must be an absolute path"):
        m.run("share", "outputs", "absent")


def test_the_module_fails_with_the_message_and_a_bad_mode(share: Path, tmp_path: Path) -> None:
    (share / "outputs").symlink_to(share.parent / "master" / "runs")

    def module(args: dict) -> dict:
        done = subprocess.run(
            [sys.executable, str(REPO / "plugins/modules/share_path.py")],
            input=json.dumps({"ANSIBLE_MODULE_ARGS": args}),
            capture_output=True,
            text=True,
            check=False,
        )
        return json.loads(done.stdout)

    out = module({"root": str(share), "path": "outputs/run-1", "state": "absent"})
    assert out["failed"] is True and "symbolic link" in out["msg"]
    out = module({"root": str(share), "path": "new", "mode": "rwx"})
    assert out["failed"] is True and "octal string" in out["msg"]
    assert master_untouched(share)


# state=file: the benchmark's reports (playbooks/benchmark.yml) are written this way.


def test_writes_a_file_and_then_changes_nothing(share: Path) -> None:
    (share / "benchmarks" / "b-1").mkdir(parents=True)
    first = m.run(str(share), "benchmarks/b-1/report.md", "file", 0o640, content=b"# one\n")
    assert first == {"changed": True, "path": str(share / "benchmarks/b-1/report.md"), "written": True}
    assert (share / "benchmarks" / "b-1" / "report.md").read_bytes() == b"# one\n"
    assert oct((share / "benchmarks" / "b-1" / "report.md").stat().st_mode & 0o777) == oct(0o640)
    again = m.run(str(share), "benchmarks/b-1/report.md", "file", 0o640, content=b"# one\n")
    assert again["changed"] is False and again["written"] is False
    # Another content, or another mode, is written again; no temporary name is left behind.
    assert m.run(str(share), "benchmarks/b-1/report.md", "file", 0o640, content=b"# two\n")["changed"] is True
    assert m.run(str(share), "benchmarks/b-1/report.md", "file", 0o644, content=b"# two\n")["changed"] is True
    assert oct((share / "benchmarks" / "b-1" / "report.md").stat().st_mode & 0o777) == oct(0o644)
    assert sorted(p.name for p in (share / "benchmarks" / "b-1").iterdir()) == ["report.md"]


def test_check_mode_writes_no_file(share: Path) -> None:
    (share / "benchmarks").mkdir()
    out = m.run(str(share), "benchmarks/report.md", "file", check_mode=True, content=b"x")
    assert out["changed"] is True and out["written"] is True
    assert list((share / "benchmarks").iterdir()) == []


@pytest.mark.parametrize("where", ["benchmarks", "benchmarks/b-1"])
def test_a_link_on_the_way_to_a_file_is_never_written_through(share: Path, where: str) -> None:
    # Root on a worker made a component a link to a root-only directory of the master (/root/.ssh, say).
    master = share.parent / "master" / "runs" / "run-1"
    (share / "benchmarks" / "b-1").mkdir(parents=True)
    shutil.rmtree(share / where)
    (share / where).symlink_to(master)
    for state, extra in (("directory", {}), ("file", {"content": b"x"})):
        path = "benchmarks/b-1" if state == "directory" else "benchmarks/b-1/keep"
        with pytest.raises(m.PathError, match=rf"{share / where} is a symbolic link: nothing was"):
            m.run(str(share), path, state, **extra)
    assert master_untouched(share)
    assert sorted(p.name for p in master.iterdir()) == ["keep"]


def test_a_link_or_fifo_at_the_file_itself_is_refused_and_left(share: Path) -> None:
    (share / "benchmarks").mkdir()
    target = share.parent / "master" / "runs" / "run-1" / "keep"
    (share / "benchmarks" / "report.md").symlink_to(target)
    with pytest.raises(m.PathError, match=r"report\.md is a symbolic link: nothing was written through it"):
        m.run(str(share), "benchmarks/report.md", "file", content=b"x")
    assert os.path.islink(share / "benchmarks" / "report.md")
    assert master_untouched(share)
    os.mkfifo(share / "benchmarks" / "report.json")
    with pytest.raises(m.PathError, match=r"report\.json is not a regular file"):
        m.run(str(share), "benchmarks/report.json", "file", content=b"x")


def test_a_file_needs_its_directory(share: Path) -> None:
    with pytest.raises(m.PathError, match="benchmarks does not exist: create the directory first"):
        m.run(str(share), "benchmarks/b-1/report.md", "file", content=b"x")
    assert not (share / "benchmarks").exists()


def test_the_module_writes_content_or_src(share: Path, tmp_path: Path) -> None:
    (share / "benchmarks").mkdir()
    (tmp_path / "plot.png").write_bytes(b"\x89PNG\x00\xff")

    def module(args: dict) -> dict:
        done = subprocess.run(
            [sys.executable, str(REPO / "plugins/modules/share_path.py")],
            input=json.dumps({"ANSIBLE_MODULE_ARGS": args}),
            capture_output=True,
            text=True,
            check=False,
        )
        return json.loads(done.stdout)

    base = {"root": str(share), "state": "file"}
    assert module({**base, "path": "benchmarks/report.png", "src": str(tmp_path / "plot.png")})["changed"] is True
    assert (share / "benchmarks" / "report.png").read_bytes() == b"\x89PNG\x00\xff"
    assert oct((share / "benchmarks" / "report.png").stat().st_mode & 0o777) == oct(0o644)
    out = module({**base, "path": "benchmarks/report.md", "content": "# r\n", "mode": "0600"})
    assert out["written"] is True and (share / "benchmarks" / "report.md").read_text() == "# r\n"
    assert module({**base, "path": "benchmarks/report.md", "content": "# r\n", "mode": "0600"})["changed"] is False
    assert module({**base, "path": "benchmarks/x"})["failed"] is True
    out = module({**base, "path": "benchmarks/x", "content": "a", "src": str(tmp_path / "plot.png")})
    assert out["failed"] is True and "mutually exclusive" in out["msg"]
