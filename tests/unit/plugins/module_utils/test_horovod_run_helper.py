# Copyright: multinode.horovod contributors
# SPDX-License-Identifier: GPL-3.0-or-later
"""Unit tests for roles/horovod_launch/files/horovod_run.py (status, ranks up, stop) and the probe's processes.

The helper reads /proc, so these tests start real processes with and without the run's environment.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from checkout import REPO
from checkout import load as load_path

FILES = REPO / "roles" / "horovod_launch" / "files"
helper = load_path("roles/horovod_launch/files/horovod_run.py", "horovod_run")
probe = load_path("roles/horovod_launch/files/horovod_probe.py", "horovod_probe")
SOURCE = (FILES / "horovod_run.py").read_text()
PYTHON_SLEEP = "import time; time.sleep(60)"
IGNORE_TERM = "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(60)"


@pytest.fixture
def procs():
    started: list[subprocess.Popen[bytes]] = []

    def start(code: str, **env: str) -> subprocess.Popen[bytes]:
        proc = subprocess.Popen([sys.executable, "-c", code], env={**os.environ, **env})
        started.append(proc)
        return proc

    yield start
    for proc in started:
        if proc.poll() is None:
            proc.kill()
        proc.wait()


def wait_seen(run_dir: str, count: int) -> None:
    deadline = time.monotonic() + 10
    while len(helper.run_processes(run_dir)) < count and time.monotonic() < deadline:
        time.sleep(0.05)


def make_run(root: Path, name: str, **files: str) -> Path:
    run = root / name
    run.mkdir(parents=True)
    (run / "horovod-launch.sh").write_text("#!/bin/sh\n")
    (run / "hostfile").write_text("10.0.0.1 slots=2\n10.0.0.2 slots=1\n")
    for file, content in files.items():
        (run / file.replace("_", ".")).write_text(content)
    return run


def test_status_tells_each_state(tmp_path):
    make_run(tmp_path, "a-ok", started="100", finished="160", rc="0", launcher_log="epoch 1\nepoch 2 done\n\n")
    make_run(
        tmp_path, "b-failed", started="100", finished="101", rc="1", launcher_log="Process 2 exit with status code 1.\n"
    )
    make_run(tmp_path, "c-stopped", started="100", finished="130", rc="143", stopped="x")
    make_run(tmp_path, "d-interrupted", started="100")
    (tmp_path / "not-a-run").mkdir()
    runs = {run["name"]: run for run in helper.status(str(tmp_path))}
    assert sorted(runs) == ["a-ok", "b-failed", "c-stopped", "d-interrupted"]
    assert [runs[n]["state"] for n in sorted(runs)] == ["finished", "failed", "stopped", "interrupted"]
    assert runs["a-ok"]["duration_s"] == 60
    assert runs["a-ok"]["last_line"] == "epoch 2 done"
    assert runs["a-ok"]["log_tail"] == ""
    assert runs["b-failed"]["rc"] == 1
    assert "Process 2 exit" in runs["b-failed"]["log_tail"]
    assert runs["b-failed"]["rank_hosts"] == ["10.0.0.1", "10.0.0.1", "10.0.0.2"]
    assert runs["d-interrupted"]["rc"] is None
    assert helper.status(str(tmp_path / "missing")) == []


def test_status_tells_an_elastic_runs_host_set(tmp_path):
    make_run(
        tmp_path,
        "elastic",
        started="100",
        discovery_json="{}",
        hosts_current='{"hosts": ["10.0.0.1:2", "10.0.0.2:1"], "since": 150}',
        hosts_log="110 10.0.0.1:2,10.0.0.2:1\n130 10.0.0.1:2\n150 10.0.0.1:2,10.0.0.2:1\n",
    )
    make_run(tmp_path, "plain", started="100", finished="160", rc="0")
    make_run(tmp_path, "starting", started="100", discovery_json="{}")  # discovery has not run yet
    runs = {run["name"]: run for run in helper.status(str(tmp_path))}
    assert runs["elastic"]["elastic"] is True
    assert runs["elastic"]["current_hosts"] == ["10.0.0.1:2", "10.0.0.2:1"]
    assert (runs["elastic"]["hosts_since"], runs["elastic"]["host_sets"]) == (150, 3)
    assert "elastic" not in runs["plain"] and "current_hosts" not in runs["plain"]
    assert (runs["starting"]["current_hosts"], runs["starting"]["host_sets"]) == ([], 0)


def test_status_sees_a_running_launcher(tmp_path):
    run = make_run(tmp_path, "live", started=str(int(time.time()) - 5))
    (run / "horovod-launch.sh").write_text("sleep 30\n")
    # Its own session: the kill below reaches sh and the child it forks (which carries sh's command
    # line until it has exec'd sleep, a window a busy machine can stretch).
    launcher = subprocess.Popen(["sh", str(run / "horovod-launch.sh")], start_new_session=True)
    try:
        deadline = time.monotonic() + 10
        while not helper.launcher_running(str(run)) and time.monotonic() < deadline:
            time.sleep(0.05)
        (status,) = helper.status(str(tmp_path))
        assert status["state"] == "running"
        assert status["rc"] is None
        assert status["duration_s"] >= 5
    finally:
        os.killpg(launcher.pid, signal.SIGKILL)
        launcher.wait()
    deadline = time.monotonic() + 10
    while helper.launcher_running(str(run)) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert helper.status(str(tmp_path))[0]["state"] == "interrupted"


def test_ranks_are_found_by_the_runs_environment(tmp_path, procs):
    run = str(tmp_path / "r")
    procs(PYTHON_SLEEP, HOROVOD_LAUNCH_RUN_DIR=run, HOROVOD_RANK="3")
    procs(PYTHON_SLEEP, HOROVOD_LAUNCH_RUN_DIR=run)  # horovodrun itself: of the run, no rank
    procs(PYTHON_SLEEP, HOROVOD_LAUNCH_RUN_DIR=run + "-other", HOROVOD_RANK="1")
    procs(PYTHON_SLEEP, HOROVOD_RANK="0")
    wait_seen(run, 2)
    assert len(helper.run_processes(run)) == 2
    assert helper.local_ranks(run)["ranks"] == [3]


def test_up_waits_for_every_rank_or_the_end(tmp_path, procs):
    run = tmp_path / "r"
    run.mkdir()
    procs(PYTHON_SLEEP, HOROVOD_LAUNCH_RUN_DIR=str(run), HOROVOD_RANK="0")
    procs(PYTHON_SLEEP, HOROVOD_LAUNCH_RUN_DIR=str(run), HOROVOD_RANK="1")
    wait_seen(str(run), 2)
    # 127.0.0.1 is this host: never reached over ssh (the ssh command would fail).
    assert helper.up(str(run), 2, 5, ["false"], ["127.0.0.1"])["state"] == "up"
    started = time.monotonic()
    assert helper.up(str(run), 3, 0.5, ["false"], [])["state"] == "timeout"
    assert time.monotonic() - started < 3
    (run / "rc").write_text("0\n")
    assert helper.up(str(run), 3, 5, ["false"], [])["state"] == "ended"


def test_up_reports_an_unreachable_node(tmp_path):
    answer = helper.up(str(tmp_path), 1, 0.2, ["false"], ["192.0.2.254"])
    assert answer["state"] == "timeout"
    assert "192.0.2.254" in answer["errors"]


def test_local_stop_ends_the_run_and_nothing_else(tmp_path, procs):
    run = str(tmp_path / "r")
    polite = procs(PYTHON_SLEEP, HOROVOD_LAUNCH_RUN_DIR=run, HOROVOD_RANK="0")
    stubborn = procs(IGNORE_TERM, HOROVOD_LAUNCH_RUN_DIR=run, HOROVOD_RANK="1")
    bystander = procs(PYTHON_SLEEP, HOROVOD_LAUNCH_RUN_DIR=run + "x")
    wait_seen(run, 2)
    time.sleep(0.3)  # let the stubborn one install its handler
    answer = helper.local_stop(run, 1)
    assert len(answer["terminated"]) == 2
    assert len(answer["killed"]) == 1
    assert answer["left"] == []
    assert polite.wait(5) == -15
    assert stubborn.wait(5) == -9
    assert bystander.poll() is None


def test_stop_waits_for_the_launcher_to_record_the_rc(tmp_path):
    run = tmp_path / "r"
    run.mkdir()
    (run / "horovod-launch.sh").write_text(
        f'export HOROVOD_LAUNCH_RUN_DIR="{run}"\n{sys.executable} -c "{PYTHON_SLEEP}"\necho $? > "{run}/rc"\n'
    )
    launcher = subprocess.Popen(["sh", str(run / "horovod-launch.sh")])
    try:
        wait_seen(str(run), 1)
        answer = helper.stop(str(run), 2, ["false"], [])
        assert answer["rc"] == 143
        assert answer["launcher_running"] is False
        assert answer["hosts"][0]["left"] == []
        assert answer["clean"] is True
        host = answer["hosts"][0]["host"]
        assert answer["summary"] == f"{host}: 1 processes ended"
        assert answer["problem"] == f"{host}: ended; exit status 143 (launcher still running: False)"
        assert launcher.wait(5) == 0
    finally:
        if launcher.poll() is None:
            launcher.kill()


def test_stop_says_what_it_could_not_end_on_which_node(tmp_path):
    # The pinned ssh to the other node fails ("false" as ssh): nothing is clean, and the node is named.
    run = tmp_path / "r"
    run.mkdir()
    (run / "horovod-launch.sh").write_text(
        f'export HOROVOD_LAUNCH_RUN_DIR="{run}"\n{sys.executable} -c "{PYTHON_SLEEP}"\necho $? > "{run}/rc"\n'
    )
    launcher = subprocess.Popen(["sh", str(run / "horovod-launch.sh")])
    try:
        wait_seen(str(run), 1)
        answer = helper.stop(str(run), 1, ["false"], ["192.0.2.254"])
        assert answer["clean"] is False
        assert "192.0.2.254: rc 1" in answer["problem"] and answer["problem"].endswith(
            "exit status 143 (launcher still running: False)"
        )
        json.dumps(answer)  # what the role reads with from_json
    finally:
        if launcher.poll() is None:
            launcher.kill()


def test_runs_as_python_c_and_refuses_a_bad_command(tmp_path):
    out = subprocess.run(
        [sys.executable, "-c", SOURCE, "local-ranks", str(tmp_path)], capture_output=True, text=True, check=True
    )
    assert json.loads(out.stdout)["ranks"] == []
    bad = subprocess.run([sys.executable, "-c", SOURCE, "status"], capture_output=True, text=True, check=False)
    assert bad.returncode == 2
    assert "usage" in bad.stderr


def test_own_source_is_the_code_given_to_python_c():
    # What the helper sends over ssh to run itself on another node: its own -c code.
    code = SOURCE.replace("sys.exit(main(sys.argv[1:]))", "print(len(own_source()))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert int(out.stdout) == len(code)


def test_probe_lists_processes_but_not_itself_nor_its_parents(procs):
    other = procs(PYTHON_SLEEP)
    deadline = time.monotonic() + 10
    while not Path(f"/proc/{other.pid}/cmdline").read_bytes() and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(0.2)
    pids = {p["pid"] for p in probe.processes()}
    assert other.pid in pids
    assert os.getpid() not in pids
    assert os.getppid() not in pids or os.getppid() == 1


def test_command_lines_shown_hide_values_as_the_job_definition_does(tmp_path, procs):
    from ansible_collections.multinode.horovod.plugins.module_utils import jobs  # noqa: PLC0415

    assert helper.ASSIGNMENT.pattern == probe.ASSIGNMENT.pattern == jobs._ASSIGNMENT.pattern
    run = str(tmp_path / "r")
    procs(PYTHON_SLEEP + "  # TOKEN=s3cret", HOROVOD_LAUNCH_RUN_DIR=run)
    wait_seen(run, 1)
    assert all("s3cret" not in p["args"] for p in probe.processes())
    answer = helper.local_stop(run, 1)
    assert answer["terminated"] and "s3cret" not in json.dumps(answer)
    assert "TOKEN=..." in answer["terminated"][0]


def test_stop_reports_what_was_killed_and_what_is_left(tmp_path, monkeypatch):
    (tmp_path / "rc").write_text("137\n")
    here = {"host": "node-a", "terminated": ["1 a", "2 b"], "killed": ["2 b"], "left": ["3 c"]}
    monkeypatch.setattr(helper, "local_stop", lambda run_dir, grace: here)
    monkeypatch.setattr(helper, "launcher_running", lambda run_dir: False)
    answer = helper.stop(str(tmp_path), 10, ["false"], [])
    assert answer["summary"] == "node-a: 2 processes ended, 1 killed after 10 s"
    assert (answer["clean"], answer["problem"]) == (
        False,
        "node-a: still running: 3 c; exit status 137 (launcher still running: False)",
    )
