# Copyright: multinode.horovod contributors
# SPDX-License-Identifier: GPL-3.0-or-later
"""playbooks/tasks/check_share_in_containers.yml: each container must see the host's shared directories.

The task file runs on this machine through a local connection, with a fake `docker` on PATH that answers
`docker exec <container> stat -c %d:%i <dirs>` as a script says: docker exec on a busy host now and then
gives nothing back (moby/moby#27289), which is read again; a container that sees another directory, or
gives nothing three times, is named.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.skipif(not shutil.which("ansible-playbook"), reason="ansible-playbook is not on PATH")


def check(tmp_path: Path, answers: list[str]) -> tuple[int, str, int]:
    """Run the task file on a directory of tmp_path; the fake docker prints answers[n] on its n-th call
    (the right device:inode where an answer is "RIGHT"). Returns rc, the output and the calls made."""
    shared = tmp_path / "share"
    shared.mkdir()
    right = f"{shared.stat().st_dev}:{shared.stat().st_ino}"
    bindir = tmp_path / "bin"
    bindir.mkdir()
    (tmp_path / "answers").write_text("\n".join(a.replace("RIGHT", right) for a in answers) + "\n")
    docker = bindir / "docker"
    docker.write_text(
        "#!/bin/sh\n"
        f"n=$(($(cat {tmp_path}/calls 2>/dev/null || echo 0) + 1)); echo $n > {tmp_path}/calls\n"
        f'line=$(sed -n "${{n}}p" {tmp_path}/answers); [ -n "$line" ] && echo "$line"; exit 0\n'
    )
    docker.chmod(0o755)
    book = tmp_path / "play.yml"
    play = {
        "hosts": "localhost",
        "gather_facts": False,
        "vars": {
            "__horovod_checked_dirs": [str(shared)],
            "__horovod_container_name": "horovod",
            "__horovod_shared_storage": "nfs",
        },
        "tasks": [{"ansible.builtin.include_tasks": str(REPO / "playbooks/tasks/check_share_in_containers.yml")}],
    }
    book.write_text(yaml.safe_dump([play]))
    env = dict(os.environ, PATH=f"{bindir}:{os.environ['PATH']}", ANSIBLE_NOCOLOR="1")
    res = subprocess.run(
        [
            "ansible-playbook",
            "-c",
            "local",
            "-i",
            "localhost,",
            "-e",
            f"ansible_python_interpreter={sys.executable}",
            str(book),
        ],
        env=env,
        capture_output=True,
        text=True,
        check=False,
        stdin=subprocess.DEVNULL,
    )
    calls = int((tmp_path / "calls").read_text()) if (tmp_path / "calls").exists() else 0
    return res.returncode, " ".join((res.stdout + res.stderr).split()), calls


def test_the_container_that_sees_the_share_passes_at_the_first_read(tmp_path):
    rc, out, calls = check(tmp_path, ["RIGHT"])
    assert rc == 0, out
    assert calls == 1


def test_an_answer_docker_exec_lost_is_read_again(tmp_path):
    rc, out, calls = check(tmp_path, ["", "RIGHT"])
    assert rc == 0, out
    assert calls == 2


def test_a_container_that_never_answers_is_named_after_three_reads(tmp_path):
    rc, out, calls = check(tmp_path, ["", "", "", "RIGHT"])
    assert rc != 0
    assert calls == 3
    assert "localhost: the container horovod does not see the master's share at" in out, out
    assert "(no answer). Its share (NFS) is not mounted in the container" in out, out


def test_a_container_that_sees_another_directory_is_named_at_once(tmp_path):
    rc, out, calls = check(tmp_path, ["1:2"])
    assert rc != 0
    assert calls == 1
    assert "(in the container: 1:2, on the host: " in out, out
