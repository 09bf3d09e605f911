# Copyright: multinode.horovod contributors
# SPDX-License-Identifier: GPL-3.0-or-later
"""horovod_launch's workspace tasks (the checkout of the training code), run on this machine itself.

A local connection and a git repository in a temporary directory: a tag and a full commit id are
checked out; a branch, a name that is both, a shortened id and an unknown name are refused with
the reason; a submodule is left alone unless asked for (where it cannot be fetched, asking fails).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml
from ansible_collections.multinode.horovod.plugins.module_utils import horovod_launch
from checkout import COLLECTIONS

REPO = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.skipif(
    not shutil.which("ansible-playbook") or not shutil.which("git"), reason="needs ansible-playbook and git"
)


def git(repo: Path, *argv: str) -> str:
    cmd = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@example.invalid", *argv]
    return subprocess.run(cmd, check=True, capture_output=True, text=True).stdout.strip()


@pytest.fixture(scope="module")
def origin(tmp_path_factory) -> Path:
    """main (a branch), v1 (a tag), both (a tag and a branch), a submodule on a closed port of loopback."""
    repo = tmp_path_factory.mktemp("origin")
    git(repo, "init", "--quiet", "--initial-branch=main")
    (repo / "train.py").write_text("print('v1')\n")
    (repo / ".gitmodules").write_text(
        '[submodule "third_party/gloo"]\n\tpath = third_party/gloo\n\turl = https://127.0.0.1:9/gloo.git\n'
    )
    git(repo, "add", "-A")
    git(repo, "update-index", "--add", "--cacheinfo", f"160000,{'1' * 40},third_party/gloo")
    git(repo, "commit", "--quiet", "-m", "v1")
    git(repo, "tag", "v1")
    git(repo, "tag", "both")
    git(repo, "branch", "both")
    return repo


def workspace(tmp_path: Path, origin: Path, version: str, dest: object = None, **extra: object) -> tuple[int, str]:
    """The workspace tasks with the checkout directory the plan (assert.yml) gives for `dest` (None: tmp/code;
    "": the default, a directory per repository in tmp/artifacts)."""
    dest = tmp_path / "code" if dest is None else dest
    book = tmp_path / "play.yml"
    inputs = {
        "code_repo": str(origin),
        "code_dest": str(dest),
        "artifact_dir": str(tmp_path / "artifacts"),
        "share_dir": str(tmp_path),
    }
    variables = {
        "horovod_launch_share_dir": str(tmp_path),
        "horovod_launch_command": ["python3", "train.py"],
        "horovod_launch_code_repo": str(origin),
        "horovod_launch_code_version": version,
        "horovod_launch_code_dest": str(dest),
        "__horovod_launch_plan": {"code_dest": horovod_launch.code_dest(inputs)},
        # git is there already (the skip above): no package step, as on a master without a package
        # mirror (the apt step, reading its cache, was most of each run's time).
        "horovod_launch_git_package": "",
        **extra,
    }
    tasks = [{"ansible.builtin.include_role": {"name": "multinode.horovod.horovod_launch", "tasks_from": "workspace"}}]
    book.write_text(yaml.safe_dump([{"hosts": "localhost", "gather_facts": False, "vars": variables, "tasks": tasks}]))
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=str(COLLECTIONS), ANSIBLE_NOCOLOR="1")
    res = subprocess.run(
        ["ansible-playbook", str(book)],
        env=env,
        capture_output=True,
        text=True,
        check=False,
        stdin=subprocess.DEVNULL,
    )
    return res.returncode, " ".join((res.stdout + res.stderr).split())


@pytest.mark.parametrize("version", ["v1", "refs/tags/both", "full"])
def test_a_tag_or_a_full_commit_is_checked_out_without_its_submodules(tmp_path, origin, version):
    if version == "full":
        version = git(origin, "rev-parse", "v1^{commit}")
    rc, out = workspace(tmp_path, origin, version)
    assert rc == 0, out
    assert (tmp_path / "code" / "train.py").read_text() == "print('v1')\n"
    assert list((tmp_path / "code" / "third_party" / "gloo").iterdir()) == []


@pytest.mark.parametrize(
    ("version", "reason"),
    [
        ("main", "which in ORIGIN is a branch: it moves with new commits"),
        ("both", "names both a tag and a branch; write refs/tags/both"),
        ("short", "is neither a tag nor a branch (a shortened commit id is not enough either)"),
        ("v9", "'v9', which in ORIGIN is neither a tag nor a branch"),
    ],
)
def test_a_ref_that_is_not_a_pin_is_refused_before_the_checkout(tmp_path, origin, version, reason):
    if version == "short":
        version = git(origin, "rev-parse", "--short", "v1^{commit}")
    rc, out = workspace(tmp_path, origin, version)
    assert rc != 0
    assert reason.replace("ORIGIN", str(origin)) in out, out
    assert "horovod_launch_code_version is" in out
    assert not (tmp_path / "code").exists()


def test_a_branch_is_followed_when_allowed(tmp_path, origin):
    rc, out = workspace(tmp_path, origin, "main", horovod_launch_code_allow_branch=True)
    assert rc == 0, out


def test_submodules_are_fetched_only_when_asked(tmp_path, origin):
    rc, out = workspace(tmp_path, origin, "v1", horovod_launch_code_recursive=True)
    assert rc != 0
    assert "127.0.0.1:9/gloo.git" in out, out


def small_repo(path: Path, text: str) -> Path:
    """A repository with train.py holding `text`, tagged v1."""
    path.mkdir()
    git(path, "init", "--quiet", "--initial-branch=main")
    (path / "train.py").write_text(text)
    git(path, "add", "-A")
    git(path, "commit", "--quiet", "-m", "v1")
    git(path, "tag", "v1")
    return path


def test_a_second_repository_in_the_same_directory_is_refused_before_git_runs(tmp_path, origin):
    assert workspace(tmp_path, origin, "v1")[0] == 0
    other = small_repo(tmp_path / "other", "print('other')\n")
    rc, out = workspace(tmp_path, other, "v1")
    assert rc != 0
    code = tmp_path / "code"
    assert f"horovod_launch_code_dest ({code}) is a checkout of file://{origin}, not of" in out
    assert f"not of horovod_launch_code_repo ({other})" in out
    assert f"set horovod_launch_code_dest to a new or empty one (e.g. {code}-other)" in out
    assert (code / "train.py").read_text() == "print('v1')\n"


def test_by_default_each_repository_has_a_directory_of_its_own(tmp_path, origin):
    other = small_repo(tmp_path / "other.git", "print('other')\n")
    assert workspace(tmp_path, origin, "v1", dest="")[0] == 0
    rc, out = workspace(tmp_path, other, "v1", dest="")
    assert rc == 0, out
    code = tmp_path / "artifacts" / "code"
    assert sorted(p.name for p in code.iterdir()) == sorted([origin.name, "other"])
    assert (code / origin.name / "train.py").read_text() == "print('v1')\n"
    assert (code / "other" / "train.py").read_text() == "print('other')\n"


def test_a_directory_with_other_files_is_refused_and_left_as_it_is(tmp_path, origin):
    code = tmp_path / "code"
    code.mkdir()
    (code / "notes.txt").write_text("mine\n")
    rc, out = workspace(tmp_path, origin, "v1")
    assert rc != 0
    assert f"horovod_launch_code_dest ({code}) holds 1 entries but no git checkout" in out, out
    assert [p.name for p in code.iterdir()] == ["notes.txt"]


def test_a_tag_that_moved_is_refused_naming_both_commits_unless_forced(tmp_path):
    repo = small_repo(tmp_path / "moving", "print('first')\n")
    assert workspace(tmp_path, repo, "v1")[0] == 0
    first = git(repo, "rev-parse", "v1^{commit}")
    assert workspace(tmp_path, repo, "v1")[0] == 0  # the same tag again: nothing to refuse
    (repo / "train.py").write_text("print('second')\n")
    git(repo, "commit", "--quiet", "-am", "second")
    git(repo, "tag", "--force", "v1")
    second = git(repo, "rev-parse", "v1^{commit}")
    rc, out = workspace(tmp_path, repo, "v1")
    assert rc != 0
    assert f"The tag v1 of {repo} points to {second}, but the checkout in {tmp_path / 'code'} has it at {first}" in out
    assert "horovod_launch_code_force: true" in out
    assert (tmp_path / "code" / "train.py").read_text() == "print('first')\n"
    rc, out = workspace(tmp_path, repo, "v1", horovod_launch_code_force=True)
    assert rc == 0, out
    assert (tmp_path / "code" / "train.py").read_text() == "print('second')\n"
