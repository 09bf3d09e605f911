# Copyright: multinode.horovod contributors
# SPDX-License-Identifier: GPL-3.0-or-later
"""Unit tests for plugins/module_utils/horovod_tensorboard.py: the TensorBoard playbook's settings, its
command line, which processes are its own, what it stops and starts, and the tunnel it prints."""

from __future__ import annotations

import re

import pytest
from ansible_collections.multinode.horovod.plugins.filter.horovod_tensorboard import FilterModule
from ansible_collections.multinode.horovod.plugins.module_utils import horovod_tensorboard as tb
from ansible_collections.multinode.horovod.plugins.module_utils import jobs

SITE = {
    "share_dir": "/data1/share",
    "artifact_dir": "/data1/artifacts",
    "runs_dir": "/data1/artifacts/runs",
    "run_name": "",
    "ssh_port": 12345,
}
MASTER = {"name": "node-a", "host": "10.0.0.1", "user": "root", "port": 22}


def settings(given=None, **site):
    return tb.settings(given or {}, **{**SITE, **site})


def ours(logdir="/data1/artifacts/runs", port=6006, pid=40):
    return {"pid": pid, "args": tb.argv(logdir, port, "2.19.0")}


def read(processes=(), version="2.19.0", logdir="directory", port_free=True):
    board = {"version": version, "error": None} if version else {"version": None, "error": "ModuleNotFoundError: x"}
    return {"tensorboard": board, "processes": list(processes), "logdir": logdir, "port_free": port_free, "log": []}


def plan(given=None, found=None, master=None):
    return tb.plan(settings(given), found or read(), master or MASTER, "horovod")


# --- settings ------------------------------------------------------------------------------------


def test_the_default_log_directory_is_every_run_or_the_named_run():
    every = settings()
    assert (every["logdir"], every["logdir_from"], every["port"], every["state"]) == (
        "/data1/artifacts/runs", "horovod_launch_runs_dir", 6006, "started",
    )  # fmt: skip
    assert every["problems"] == []
    one = settings(run_name="resnet50")
    assert (one["logdir"], one["logdir_from"]) == ("/data1/artifacts/runs/resnet50", "horovod_run_name")


def test_a_given_log_directory_wins_over_the_run_and_loses_its_trailing_slash():
    given = settings({"horovod_tensorboard_logdir": "/data1/share/tb/"}, run_name="resnet50")
    assert (given["logdir"], given["logdir_from"], given["problems"]) == (
        "/data1/share/tb", "horovod_tensorboard_logdir", [],
    )  # fmt: skip
    assert settings({"horovod_tensorboard_logdir": "/data1/artifacts"})["problems"] == []


def test_ports_and_states_as_extra_vars_give_them():
    found = settings({"horovod_tensorboard_port": "6007", "horovod_tensorboard_state": "stopped"})
    assert (found["port"], found["state"], found["problems"]) == (6007, "stopped", [])


@pytest.mark.parametrize(
    ("given", "problem"),
    [
        ({"horovod_tensorboard_port": "http"}, "horovod_tensorboard_port: 'http' is not a TCP port (1-65535)"),
        ({"horovod_tensorboard_port": 0}, "horovod_tensorboard_port: 0 is not a TCP port"),
        ({"horovod_tensorboard_port": "70000"}, "horovod_tensorboard_port: 70000 is not a TCP port"),
        ({"horovod_tensorboard_port": True}, "horovod_tensorboard_port: True is not a TCP port"),
        ({"horovod_tensorboard_port": 12345}, "horovod_tensorboard_port: 12345 is horovod_ssh_port"),
        ({"horovod_tensorboard_state": "running"}, "horovod_tensorboard_state: 'running' is not one of started"),
        ({"horovod_tensorboard_logdir": "runs/x"}, "horovod_tensorboard_logdir: 'runs/x' is not absolute"),
        ({"horovod_tensorboard_logdir": "/data1/share/../etc"}, "horovod_tensorboard_logdir: '/data1/share/../etc'"),
        ({"horovod_tensorboard_logdir": "/srv/logs"}, "horovod_tensorboard_logdir: '/srv/logs' is not on the share"),
        ({"horovod_tensorboard_logdir": "/data1/sharex"}, "'/data1/sharex' is not on the share"),
        ({"horovod_tensorboard_logdir": "/etc"}, "is inside the system directory /etc"),
        ({"horovod_tensorboard_prot": 6007}, "horovod_tensorboard_prot: the TensorBoard playbook has no such setting"),
    ],
)
def test_a_bad_setting_is_named_with_the_fix(given, problem):
    problems = settings(given)["problems"]
    assert any(problem in line for line in problems), problems


# --- the command line and which processes are the playbook's --------------------------------------


def test_the_command_line_listens_on_loopback_only_and_reads_the_events_itself():
    assert tb.argv("/data1/share/tb", 6006, "2.19.0") == [
        "python3", "-X", "multinode_horovod_tensorboard", "-m", "tensorboard.main",
        "--logdir", "/data1/share/tb", "--host", "127.0.0.1", "--port", "6006", "--load_fast=false",
    ]  # fmt: skip
    assert "--bind_all" not in tb.argv("/x", 6006, "2.19.0")


@pytest.mark.parametrize(
    ("version", "flag"),
    [("2.0.2", False), ("2.4.1", False), ("2.5.0", True), ("2.9.1", True), ("2.16.0a20231206", True), ("", True)],
)
def test_load_fast_is_switched_off_only_where_tensorboard_has_the_flag(version, flag):
    assert ("--load_fast=false" in tb.argv("/x", 6006, version)) is flag


def test_docker_exec_starts_a_shell_that_becomes_tensorboard_with_its_output_in_the_log():
    words = tb.argv("/x", 6006, "2.19.0")
    start = tb.start_argv(words)
    assert start[:4] == ["sh", "-c", f'exec "$@" > {tb.LOG_FILE} 2>&1', "sh"]
    assert start[4:] == words


@pytest.mark.parametrize(
    ("args", "mine"),
    [
        (tb.argv("/x", 6006, "2.19.0"), True),
        (tb.argv("/x", 6006, "2.0.2"), True),
        (["python3", "-m", "tensorboard.main", "--logdir", "/x"], False),
        (["/usr/bin/python3", "/usr/local/bin/tensorboard", "--logdir", "/x"], False),
        # The playbook's own helper carries the marker as an argument: not a TensorBoard.
        (["python3", "-c", "CODE", "read", "multinode_horovod_tensorboard", "/x", "6006", "/var/log/x"], False),
        (["python3", "-X", "multinode_horovod_tensorboard", "-c", "import time"], False),
        ([], False),
    ],
)
def test_only_processes_started_with_the_marker_are_the_playbooks(args, mine):
    assert tb.is_ours(args) is mine


def test_the_playbooks_tensorboard_is_no_training_job_and_another_tensorboard_is():
    assert re.search(tb.IDLE_PATTERN, " ".join(tb.argv("/data1/share/tb", 6006, "2.19.0")))
    processes = [
        {"pid": 7, "args": " ".join(tb.argv("/data1/share/tb", 6006, "2.19.0"))},
        {"pid": 8, "args": "python3 -m tensorboard.main --logdir /data1/share/tb"},
        {"pid": 9, "args": "python3 -X multinode_horovod_tensorboard -m tensorboard.mainx"},
    ]
    assert jobs.jobs(processes) == [
        "8 python3 -m tensorboard.main --logdir /data1/share/tb",
        "9 python3 -X multinode_horovod_tensorboard -m tensorboard.mainx",
    ]


# --- the plan ------------------------------------------------------------------------------------


def test_nothing_running_starts_tensorboard_and_says_how_to_reach_it():
    found = plan()
    assert (found["start"], found["stop"], found["changed"], found["problems"]) == (True, [], True, [])
    assert found["argv"] == tb.argv("/data1/artifacts/runs", 6006, "2.19.0")
    assert found["start_argv"][4:] == found["argv"]
    assert found["tunnel"] == "ssh -N -L 6006:127.0.0.1:6006 root@10.0.0.1"
    assert found["url"] == "http://127.0.0.1:6006/"
    assert "From the controller: ssh -N -L 6006:127.0.0.1:6006 root@10.0.0.1" in found["lines"]
    assert "then open http://127.0.0.1:6006/" in found["lines"]
    assert found["check_lines"] == [
        "Check mode: TensorBoard would be started in the container horovod on node-a: " + " ".join(found["argv"])
    ]


def test_the_tunnel_uses_the_inventorys_port_and_user():
    found = plan(
        {"horovod_tensorboard_port": 6010}, master={"name": "a", "host": "gpu-a.example", "user": "", "port": 2222}
    )
    assert found["tunnel"] == "ssh -N -L 6010:127.0.0.1:6010 -p 2222 gpu-a.example"


def test_the_same_tensorboard_running_is_kept_and_nothing_changes():
    found = plan(found=read([ours()], port_free=False))
    assert (found["start"], found["stop"], found["changed"], found["problems"]) == (False, [], False, [])
    assert found["lines"][0].startswith("TensorBoard 2.19.0 runs in the container horovod on node-a")


def test_another_log_directory_or_port_replaces_the_earlier_one():
    earlier = ours(logdir="/data1/artifacts/runs/old")
    found = plan(found=read([earlier], port_free=False))
    assert (found["start"], found["stop"], found["changed"], found["problems"]) == (True, [earlier], True, [])
    assert (
        found["lines"][0]
        == "The earlier TensorBoard (pid 40, --logdir /data1/artifacts/runs/old, port 6006) is stopped."
    )
    other_port = ours(port=6007)
    found = plan(found=read([other_port], port_free=True))
    assert (found["start"], found["stop"]) == (True, [other_port])


def test_a_process_that_only_carries_the_marker_is_never_stopped():
    helper = {"pid": 50, "args": ["python3", "-c", "CODE", "read", tb.MARKER, "/x", "6006", tb.LOG_FILE]}
    found = plan(found=read([helper, ours()], port_free=False))
    assert (found["start"], found["stop"]) == (False, [])
    found = tb.plan(settings({"horovod_tensorboard_state": "stopped"}), read([helper]), MASTER, "horovod")
    assert (found["stop"], found["changed"]) == ([], False)


def test_stopped_stops_every_tensorboard_of_the_playbook_and_only_then_changes():
    stopped = settings({"horovod_tensorboard_state": "stopped"})
    two = [ours(pid=40), ours(logdir="/data1/share", port=6007, pid=41)]
    found = tb.plan(stopped, read(two), MASTER, "horovod")
    assert (found["stop"], found["start"], found["changed"]) == (two, False, True)
    assert found["check_lines"][0] == (
        "Check mode: TensorBoard would be stopped in the container horovod on node-a "
        "(pid 40, --logdir /data1/artifacts/runs, port 6006)."
    )
    found = tb.plan(stopped, read([], version=None, logdir="missing"), MASTER, "horovod")
    assert (found["stop"], found["changed"], found["problems"]) == ([], False, [])
    assert found["lines"] == [
        "No TensorBoard of this playbook runs in the container horovod on node-a: nothing to stop."
    ]


def test_tensorboard_missing_in_the_container_says_how_to_get_it():
    (problem,) = plan(found=read(version=None))["problems"]
    assert problem.startswith("TensorBoard is not installed in the master's container horovod")
    assert "ModuleNotFoundError: x" in problem and "horovod_pip_packages" in problem


@pytest.mark.parametrize(
    ("given", "kind", "problem"),
    [
        ({}, "missing", "horovod_launch_runs_dir: /data1/artifacts/runs is missing in the master's container"),
        (
            {"horovod_tensorboard_logdir": "/data1/share/tb"},
            "other",
            "horovod_tensorboard_logdir: /data1/share/tb is other",
        ),
        (
            {"horovod_tensorboard_logdir": "/data1/share/tb"},
            "link",
            "a link on the share may be one that root on a worker",
        ),
    ],
)
def test_a_log_directory_that_is_not_one_stops_the_play(given, kind, problem):
    problems = plan(given, found=read(logdir=kind))["problems"]
    assert len(problems) == 1 and problem.lower() in problems[0].lower(), problems


@pytest.mark.parametrize(
    ("given", "site", "root"),
    [
        ({}, {}, "/data1/artifacts"),
        ({"horovod_tensorboard_logdir": "/data1/share/tb/x"}, {}, "/data1/share"),
        ({"horovod_tensorboard_logdir": "/s/art/tb"}, {"share_dir": "/s", "artifact_dir": "/s/art/"}, "/s/art"),
        ({}, {"runs_dir": "/srv/runs"}, "/srv/runs"),
        ({}, {"runs_dir": "/data1/share/runs", "artifact_dir": ""}, "/data1/share"),
    ],
)
def test_the_log_directory_is_walked_to_from_the_share_the_artifact_or_the_runs_directory(given, site, root):
    assert settings(given, **site)["logdir_root"] == root


def test_a_link_above_the_log_directory_is_named():
    found = dict(read(logdir="link"), logdir_at="/data1/share/tb")
    problems = plan({"horovod_tensorboard_logdir": "/data1/share/tb/runs/one"}, found=found)["problems"]
    assert problems == [
        "horovod_tensorboard_logdir: /data1/share/tb/runs/one is link in the master's container. "
        "(/data1/share/tb is link.) A link on the share may be one that root on a worker planted: no component "
        "of the log directory may be a link; give the directory itself."
    ]


def test_a_missing_run_is_named_with_where_the_runs_are():
    found = tb.plan(settings(run_name="resnet50"), read(logdir="missing"), MASTER, "horovod")
    assert found["problems"] == [
        "horovod_run_name: there is no run resnet50 in /data1/artifacts/runs (/data1/artifacts/runs/resnet50 is "
        "missing). playbooks/status.yml lists the runs; give another with -e horovod_run_name=NAME."
    ]


def test_a_port_another_program_holds_stops_the_play_and_one_the_playbook_holds_does_not():
    (problem,) = plan(found=read(port_free=False))["problems"]
    assert problem.startswith("horovod_tensorboard_port: 6006 is taken on node-a's loopback by another program")
    assert "-e horovod_tensorboard_port=6007" in problem
    assert plan(found=read([ours(logdir="/data1/share")], port_free=False))["problems"] == []


def test_the_filters_are_the_module_utils_functions():
    filters = FilterModule().filters()
    found = filters["horovod_tensorboard_settings"]({}, *SITE.values())
    assert found == settings()
    assert filters["horovod_tensorboard_plan"](found, read(), MASTER, "horovod") == plan()
