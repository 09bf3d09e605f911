# Copyright: multinode.horovod contributors
# SPDX-License-Identifier: GPL-3.0-or-later
"""The module code_checkout_info: what a checkout's directory holds (nothing, other files, a link, a
checkout and its origin and tag), read through `ansible localhost -m`, in check mode too; and the
decision it feeds (plugins/module_utils/horovod_launch.py, checkout_problem)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from ansible_collections.multinode.horovod.plugins.module_utils import horovod_launch as m
from ansible_collections.multinode.horovod.plugins.modules import code_checkout_info as info
from checkout import NEEDS_ANSIBLE_CLI, run_module

A, B = "a" * 40, "b" * 40


def test_what_a_directory_holds_without_following_a_link(tmp_path):
    assert info.describe(str(tmp_path / "none")) == {"exists": False, "is_dir": False, "entries": 0, "git": False}
    (tmp_path / "d").mkdir()
    assert info.describe(str(tmp_path / "d")) == {"exists": True, "is_dir": True, "entries": 0, "git": False}
    (tmp_path / "d" / ".git").mkdir()
    (tmp_path / "d" / "x").write_text("")
    assert info.describe(str(tmp_path / "d")) == {"exists": True, "is_dir": True, "entries": 2, "git": True}
    (tmp_path / "link").symlink_to(tmp_path / "d")
    assert info.describe(str(tmp_path / "link"))["is_dir"] is False


def given(**more: object) -> dict:
    return {
        "repo": "https://git.example/team/train.git",
        "version": "v1",
        "dest": "/data1/artifacts/workspace",
        "force": False,
        **more,
    }


def checkout(**more: object) -> dict:
    return {
        "exists": True,
        "is_dir": True,
        "entries": 3,
        "git": True,
        "origin": given()["repo"],
        "tag_commit": A,
        **more,
    }


LS_REMOTE = f"{A}\trefs/tags/v1\n{B}\trefs/tags/v2\n"


@pytest.mark.parametrize(
    ("found", "ls_remote", "problem"),
    [
        ({"exists": False, "is_dir": False, "entries": 0, "git": False}, LS_REMOTE, ""),
        (checkout(entries=0, git=False, origin="", tag_commit=""), LS_REMOTE, ""),
        (checkout(), LS_REMOTE, ""),
        (checkout(origin="file:///srv/train"), LS_REMOTE, "is a checkout of file:///srv/train, not of"),
        (checkout(git=False, origin="", tag_commit=""), LS_REMOTE, "holds 3 entries but no git checkout"),
        (checkout(is_dir=False, entries=0, git=False), LS_REMOTE, "is a file, not a directory"),
        (checkout(), f"{B}\trefs/tags/v1\n", f"The tag v1 of https://git.example/team/train.git points to {B}"),
        # An annotated tag: its peeled line names the commit.
        (checkout(), f"{'c' * 40}\trefs/tags/v1\n{A}\trefs/tags/v1^{{}}\n", ""),
        (checkout(tag_commit=""), f"{B}\trefs/tags/v1\n", ""),
    ],
)
def test_the_checkout_is_refused_only_where_git_would_clobber_or_mix(found, ls_remote, problem):
    result = m.checkout_problem(found, ls_remote, "tag", given())
    if not problem:
        assert result == ""
    else:
        assert problem in result and "horovod_launch_code" in result


def test_a_moved_tag_names_both_commits_and_is_taken_when_forced():
    problem = m.checkout_problem(checkout(), f"{B}\trefs/tags/v1\n", "tag", given())
    assert f"has it at {A}" in problem and "horovod_launch_code_force: true" in problem
    assert m.checkout_problem(checkout(), f"{B}\trefs/tags/v1\n", "tag", given(force=True)) == ""
    # A full commit id pins by itself: the checkout's tags do not matter.
    assert m.checkout_problem(checkout(), f"{B}\trefs/tags/v1\n", "commit", given(version=B)) == ""


def test_the_same_path_repository_as_git_clones_it_is_the_same():
    found = checkout(origin="file:///srv/train")
    assert m.checkout_problem(found, LS_REMOTE, "tag", given(repo="/srv/train")) == ""


def test_the_message_suggests_a_directory_named_for_the_repository():
    problem = m.checkout_problem(checkout(origin="https://git.example/other.git"), LS_REMOTE, "tag", given())
    assert "(e.g. /data1/artifacts/workspace-train)" in problem


@NEEDS_ANSIBLE_CLI
@pytest.mark.skipif(not shutil.which("git"), reason="needs git")
@pytest.mark.parametrize("check", [False, True])
def test_the_module_reads_a_checkout_through_ansible(tmp_path: Path, check: bool) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    run = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@example.invalid"]
    subprocess.run([*run, "init", "--quiet"], check=True)
    subprocess.run([*run, "commit", "--quiet", "--allow-empty", "-m", "one"], check=True)
    subprocess.run([*run, "tag", "-a", "-m", "v1", "v1"], check=True)
    subprocess.run([*run, "remote", "add", "origin", "https://git.example/team/train.git"], check=True)
    commit = subprocess.run([*run, "rev-parse", "HEAD"], check=True, capture_output=True, text=True).stdout.strip()
    answer = run_module("code_checkout_info", {"path": str(repo), "version": "v1"}, check)
    assert {k: answer[k] for k in ("exists", "is_dir", "git", "origin", "tag_commit", "changed")} == {
        "exists": True,
        "is_dir": True,
        "git": True,
        "origin": "https://git.example/team/train.git",
        "tag_commit": commit,
        "changed": False,
    }
