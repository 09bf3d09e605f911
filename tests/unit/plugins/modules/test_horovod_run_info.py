# Copyright: multinode.horovod contributors
# SPDX-License-Identifier: GPL-3.0-or-later
"""The module horovod_run_info and what it reads (plugins/module_utils/horovod_run.py): a run's state from
its directory, an elastic run's host sets, and for a failed run the rank horovodrun names, its exit code
and output; once through `ansible localhost -m`, in check mode too."""

from __future__ import annotations

from pathlib import Path

import pytest
from ansible_collections.multinode.horovod.plugins.module_utils import horovod_run as r
from checkout import NEEDS_ANSIBLE_CLI, run_module

GLOO_FAILURE = """\
[1]<stdout>:rank 1 ok
Process 2 exit with status code 1.
Terminating remaining workers after failure of Process 2.
Process 0 exit with status code 143.
Traceback (most recent call last):
RuntimeError: Horovod detected that one or more processes exited with non-zero status, thus causing the job \
to be terminated. The first process to do so was:
Process name: 2
Exit code: 1
"""


def run_dir(tmp_path: Path, files: dict[str, str] | None = None) -> Path:
    """A run's directory with its launch script and `files` (relative path: text)."""
    directory = tmp_path / "runs" / "r1"
    directory.mkdir(parents=True)
    (directory / r.SCRIPT).write_text("#!/bin/sh\n")
    for name, text in (files or {}).items():
        (directory / name).parent.mkdir(parents=True, exist_ok=True)
        (directory / name).write_text(text)
    return directory


def test_failed_rank_from_gloo_output():
    assert r.failed_rank(GLOO_FAILURE) == 2


def test_failed_rank_of_an_elastic_run_is_not_read_from_its_slot_name():
    # An elastic run names the slot (host[local rank]); the rank is in "Process N exit" (its "10" is no rank).
    text = (
        "Process 0 exit with status code 1.\nTraceback (most recent call last):\n"
        "RuntimeError: Horovod detected that one or more processes exited with non-zero status, thus causing "
        "the job to be terminated. The first process to do so was:\nProcess name: 10.213.9.12[0]\nExit code: 1\n"
    )
    assert r.failed_rank(text) == 0


def test_failed_rank_from_exit_line_only_and_from_mpirun():
    assert r.failed_rank("[0]<stdout>:x\nProcess 1 exit with status code 3.\n") == 1
    mpirun = (
        "Primary job  terminated normally, but 1 process returned\n...\n  Process name: [[52120,1],2]\n  Exit code: 1\n"
    )
    assert r.failed_rank(mpirun) == 2
    assert r.failed_rank("rank 3 with PID 77 on node n2 exited on signal 9 (Killed).") == 3


def test_failed_rank_none_when_nothing_failed():
    assert r.failed_rank("[0]<stdout>:all good\n") is None
    assert r.failed_rank(None) is None
    assert r.failed_rank("") is None


def test_host_sets_of_an_elastic_run():
    text = "100 10.0.0.1:1,10.0.0.2:1\n\n160 10.0.0.1:1\nbroken line\n170 \n"
    assert r.host_sets(text) == [
        {"since": 100, "hosts": ["10.0.0.1:1", "10.0.0.2:1"]},
        {"since": 160, "hosts": ["10.0.0.1:1"]},
        {"since": 170, "hosts": []},
    ]


def test_the_state_of_a_run(tmp_path: Path) -> None:
    assert r.state(tmp_path / "none") == "new"
    directory = run_dir(tmp_path)
    assert r.state(directory) == "interrupted"
    launcher = f"sh {directory}/horovod-launch.sh"
    assert r.state(directory, ["/usr/bin/horovodrun -np 2", launcher]) == "running"
    (directory / "rc").write_text("0\n")
    assert r.state(directory) == "finished"
    (directory / "rc").write_text("1\n")
    assert r.state(directory) == "failed"
    (directory / "stopped").write_text("stopped\n")
    assert r.state(directory) == "stopped"
    # Another run whose name begins with this one's is not this one.
    assert r.state(directory, [f"sh {directory}x/horovod-launch.sh"]) == "stopped"


def test_a_run_that_succeeded_is_read_without_its_logs(tmp_path: Path) -> None:
    directory = run_dir(tmp_path, {"started": "100\n", "finished": "193\n", "rc": "0\n", "launcher.log": "done\n"})
    assert r.read(directory) == {
        "state": "finished",
        "started": 100,
        "finished_at": 193,
        "exit_status": 0,
        "duration_s": 93,
        "elastic": False,
        "host_sets": [],
        "failed_rank": None,
        "failed_exit_code": None,
        "launcher_tail": "",
        "rank_output": "",
    }


def test_a_failed_run_names_its_rank_with_the_end_of_its_output(tmp_path: Path) -> None:
    lines = "".join(f"line {i}\n" for i in range(100))
    files = {
        "started": "1",
        "finished": "2",
        "rc": "1",
        "launcher.log": GLOO_FAILURE,
        "rank.12/stdout": "not this one\n",
        "rank.02/stdout": "rank 2 on node-c\n",
        "rank.02/stderr": lines,
    }
    directory = run_dir(tmp_path, files)
    found = r.read(directory, tail_lines=3)
    assert (found["state"], found["failed_rank"], found["failed_exit_code"]) == ("failed", 2, 1)
    assert found["launcher_tail"].split("\n")[1:] == ["Process name: 2", "Exit code: 1"]
    assert found["rank_output"] == (
        f"==> {directory}/rank.02/stdout <==\nrank 2 on node-c\n\n"
        f"==> {directory}/rank.02/stderr <==\nline 97\nline 98\nline 99"
    )


def test_a_failed_run_without_a_named_rank_has_only_the_launchers_output(tmp_path: Path) -> None:
    directory = run_dir(tmp_path, {"rc": "2", "launcher.log": "cannot enter the working directory /w\n"})
    found = r.read(directory)
    assert found["failed_rank"] is None and found["rank_output"] == ""
    assert found["launcher_tail"] == "cannot enter the working directory /w"


def test_an_elastic_runs_host_sets(tmp_path: Path) -> None:
    directory = run_dir(tmp_path, {"hosts.log": "100 10.0.0.1:1,10.0.0.2:1\n160 10.0.0.1:1\n"})
    found = r.read(directory)
    assert found["elastic"] and [s["hosts"] for s in found["host_sets"]] == [
        ["10.0.0.1:1", "10.0.0.2:1"],
        ["10.0.0.1:1"],
    ]


@NEEDS_ANSIBLE_CLI
@pytest.mark.parametrize(("check", "rc"), [(False, "0"), (True, "1")])
def test_the_module_reads_a_run_through_ansible(tmp_path: Path, check: bool, rc: str) -> None:
    # A failed run is read without failing the task (Ansible fails one whose result has an rc but 0).
    directory = run_dir(tmp_path, {"started": "1", "finished": "4", "rc": rc})
    answer = run_module("horovod_run_info", {"path": str(directory), "launchers": []}, check)
    assert (answer["state"], answer["exit_status"], answer["duration_s"]) == (
        "finished" if rc == "0" else "failed",
        int(rc),
        3,
    )
    assert (answer["changed"], answer["check_mode"]) == (False, check)
