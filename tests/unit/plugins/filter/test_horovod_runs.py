# Copyright: multinode.horovod contributors
# SPDX-License-Identifier: GPL-3.0-or-later
"""The runs of horovod_launch: the default run name (run_id), the run table (the filter horovod_run_status),
and what counts as a running job in the preflight (plugins/module_utils/jobs.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from ansible_collections.multinode.horovod.plugins.filter import docker_horovod as docker_filters
from ansible_collections.multinode.horovod.plugins.module_utils import horovod_launch as f
from ansible_collections.multinode.horovod.plugins.module_utils import jobs

DEFINITION = {
    "command": ["python3", "train.py", "--epochs", "90"],
    "code": "0123456789abcdef0123456789abcdef01234567",
    "hosts": "10.0.0.1:2,10.0.0.2:2",
    "np": 4,
    "image": "sha256:aaaa",
    "env_names": ["NCCL_DEBUG", "WANDB_API_KEY"],
    "workdir": "/data1/share/workspace",
    "controller": "gloo",
    "extra_args": [],
}
# The name the role gave DEFINITION before elastic runs existed.
RUN_ID_BEFORE_ELASTIC = "run-13b98d697075"


def test_run_id_is_stable_and_plain():
    name = f.run_id(DEFINITION)
    assert name == f.run_id(dict(reversed(list(DEFINITION.items()))))
    assert name.startswith("run-") and len(name) == len("run-") + 12
    assert all(c in "0123456789abcdef" for c in name[4:])


def test_run_id_of_an_elastic_run_differs_and_other_runs_keep_their_names():
    # The name of a run that is not elastic is what it was before elastic runs existed (no re-training
    # after an upgrade): the definition above has always given this name.
    assert f.run_id(DEFINITION) == RUN_ID_BEFORE_ELASTIC
    elastic = {**DEFINITION, "elastic": {"min_np": 1, "max_np": 4, "cooldown": [10, 300]}}
    assert f.run_id(elastic) != f.run_id(DEFINITION)
    assert f.run_id(elastic) != f.run_id({**elastic, "elastic": {"min_np": 2, "max_np": 4, "cooldown": [10, 300]}})


def test_run_id_compares_env_names_as_a_set():
    assert f.run_id({**DEFINITION, "env_names": ["WANDB_API_KEY", "NCCL_DEBUG"]}) == f.run_id(DEFINITION)


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("command", ["python3", "train.py", "--epochs", "91"]),
        ("code", "1123456789abcdef0123456789abcdef01234567"),
        ("hosts", "10.0.0.1:2,10.0.0.3:2"),
        ("hosts", "10.0.0.1:3,10.0.0.2:1"),
        ("np", 3),
        ("image", "sha256:bbbb"),
        ("env_names", ["NCCL_DEBUG"]),
        ("workdir", "/data1/share"),
        ("controller", "mpi"),
        ("extra_args", ["--fusion-threshold-mb", "32"]),
    ],
)
def test_run_id_changes_with_each_part_of_the_definition(key, value):
    assert f.run_id({**DEFINITION, key: value}) != f.run_id(DEFINITION)


def test_run_id_takes_ansible_strings_and_numbers_as_json_does():
    class Text(str):
        pass

    assert f.run_id({**DEFINITION, "workdir": Text("/data1/share/workspace")}) == f.run_id(DEFINITION)


@pytest.mark.parametrize(
    ("definition", "fragment"),
    [
        ({k: v for k, v in DEFINITION.items() if k != "image"}, "missing image"),
        ({**DEFINITION, "env": {"A": "secret"}}, "unknown env"),
    ],
)
def test_run_id_refuses_a_wrong_definition(definition, fragment):
    with pytest.raises(ValueError, match=fragment):
        f.run_id(definition)


RUN = {
    "name": "r1",
    "run_dir": "/data1/share/runs/r1",
    "state": "failed",
    "started": 100,
    "finished": 225,
    "duration_s": 125,
    "rc": 1,
    "last_line": "Process 2 exit with status code 1.",
    "rank_hosts": ["10.0.0.1", "10.0.0.2", "10.0.0.3"],
    "log_tail": "...\nProcess 2 exit with status code 1.\n",
}


def test_run_status_names_the_failing_rank_and_its_host():
    (run,) = f.run_status([RUN])
    assert run["failed_rank"] == 2
    assert run["failed_host"] == "10.0.0.3"
    assert run["summary"] == (
        "r1: failed, 2m05s, rc 1, rank 2 failed first (on 10.0.0.3) | Process 2 exit with status code 1."
    )
    assert "log_tail" not in run


MANIFEST_HOSTS = {"hosts": [{"name": "node-a", "address": "10.0.0.1"}, {"name": "node-c", "address": "10.0.0.3"}]}


def test_run_status_names_hosts_as_the_inventory_does_when_the_run_has_a_manifest():
    (run,) = f.run_status([{**RUN, "manifest": MANIFEST_HOSTS}])
    assert run["failed_host"] == "10.0.0.3"  # the fact keeps the address
    assert run["summary"].startswith("r1: failed, 2m05s, rc 1, rank 2 failed first (on node-c (10.0.0.3)) | ")
    elastic = {**RUN, "state": "running", "rc": None, "elastic": True, "host_sets": 2, "last_line": "",
               "current_hosts": ["10.0.0.1:2", "10.0.0.9:1"], "manifest": MANIFEST_HOSTS}  # fmt: skip
    (run,) = f.run_status([elastic])
    assert run["summary"] == "r1: running, 2m05s, elastic, hosts now: node-a:2 (10.0.0.1), 10.0.0.9:1 (2 host sets)"
    assert run["current_hosts"] == ["10.0.0.1:2", "10.0.0.9:1"]


@pytest.mark.parametrize(
    ("changes", "summary"),
    [
        (
            {"state": "running", "rc": None, "duration_s": 90061, "last_line": "epoch 3"},
            "r1: running, 1d01h01m | epoch 3",
        ),
        ({"state": "finished", "rc": 0, "duration_s": 3725, "last_line": ""}, "r1: finished, 1h02m05s, rc 0"),
        ({"state": "stopped", "rc": 143, "duration_s": 7, "last_line": ""}, "r1: stopped, 7s, rc 143"),
        ({"state": "interrupted", "rc": None, "duration_s": None, "last_line": ""}, "r1: interrupted, -"),
        # A failed run whose log names no rank, or a rank beyond the hostfile.
        ({"log_tail": "error", "last_line": ""}, "r1: failed, 2m05s, rc 1"),
        (
            {"log_tail": "Process 7 exit with status code 1", "last_line": ""},
            "r1: failed, 2m05s, rc 1, rank 7 failed first",
        ),
        (
            {
                "state": "running",
                "rc": None,
                "duration_s": 61,
                "last_line": "",
                "elastic": True,
                "current_hosts": ["10.0.0.1:2", "10.0.0.3:1"],
                "host_sets": 3,
            },
            "r1: running, 1m01s, elastic, hosts now: 10.0.0.1:2, 10.0.0.3:1 (3 host sets)",
        ),
        (
            {
                "state": "finished",
                "rc": 0,
                "duration_s": 5,
                "last_line": "",
                "elastic": True,
                "current_hosts": [],
                "host_sets": 1,
            },
            "r1: finished, 5s, rc 0, elastic, hosts last: none (1 host sets)",
        ),
    ],
)
def test_run_status_summaries(changes, summary):
    (run,) = f.run_status([{**RUN, **changes}])
    assert run["summary"] == summary
    if changes.get("state", "failed") != "failed":
        assert run["failed_rank"] is None


def test_run_status_refuses_what_is_not_a_run():
    with pytest.raises(ValueError, match="is not a run"):
        f.run_status([{"name": "x"}])


IDLE_TOP = [
    {"pid": 1, "args": "/sbin/docker-init -- /bin/sh /etc/multinode-horovod/container/supervisor.sh"},
    {"pid": 7, "args": "/bin/sh /etc/multinode-horovod/container/supervisor.sh"},
    {"pid": 9, "args": "sleep 5"},
    {"pid": 11, "args": "sshd: /usr/sbin/sshd -D -e -f /etc/multinode-horovod/sshd/sshd_config [listener] 0 of 10"},
]


def test_an_idle_container_has_no_job():
    assert jobs.jobs(IDLE_TOP) == []


@pytest.mark.parametrize(
    "args",
    [
        "python3 train.py",
        "/usr/bin/python3 /usr/local/bin/torchrun --nproc-per-node 4 train.py",
        "horovodrun -np 2 -H a:1,b:1 python train.py",
        "sshd: root@notty",
        "bash",
        "sleep infinity",
    ],
)
def test_anything_else_is_a_job(args):
    assert jobs.jobs([*IDLE_TOP, {"pid": 42, "args": args}]) == [f"42 {args}"]


def test_extra_idle_patterns_and_docker_top_output():
    top = "PID  COMMAND\n1 /sbin/docker-init --\n50 /usr/bin/python3 /usr/local/bin/jupyter-lab --port 8888\n"
    assert jobs.jobs(jobs.parse_top(top)) == ["50 /usr/bin/python3 /usr/local/bin/jupyter-lab --port 8888"]
    assert jobs.jobs(jobs.parse_top(top), ["jupyter-lab"]) == []


def test_the_definition_is_the_same_for_docker_horovods_job_guard():
    # docker_horovod reads `docker top` output, the preflight the probe's list: one answer.
    top = "PID COMMAND\n" + "".join(f"{p['pid']} {p['args']}\n" for p in IDLE_TOP) + "42 python3 train.py\n"
    listed = [*IDLE_TOP, {"pid": 42, "args": "python3 train.py"}]
    assert jobs.jobs(jobs.parse_top(top)) == jobs.jobs(listed) == ["42 python3 train.py"]
    # docker_horovod's job guard reads `docker top` output through the job_processes filter.
    assert docker_filters.job_processes(top) == docker_filters.job_processes(listed) == ["42 python3 train.py"]
    guard = (Path(__file__).resolve().parents[4] / "roles/docker_horovod/tasks/job_guard.yml").read_text()
    assert "| multinode.horovod.job_processes(docker_horovod_idle_process_patterns)" in guard


def test_values_of_assignments_are_hidden():
    args = "bash -c cd /w > /dev/null 2>&1 ; HOROVOD_RANK=1 WANDB_API_KEY='s3 cret' TOKEN=abc python3 t.py --lr=0.1"
    (job,) = jobs.jobs([{"pid": 5, "args": args}])
    assert "s3 cret" not in job and "abc" not in job
    assert (
        job == "5 bash -c cd /w > /dev/null 2>&1 ; HOROVOD_RANK=... WANDB_API_KEY=... TOKEN=... python3 t.py --lr=0.1"
    )


def test_a_bad_pattern_is_an_error_naming_it():
    with pytest.raises(jobs.PatternError, match=r"invalid regular expression '\('"):
        jobs.jobs(IDLE_TOP, ["("])
    assert jobs.invalid_patterns(["ok", "(", 3]) == ["(", 3]
