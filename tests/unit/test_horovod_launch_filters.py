# Copyright: multinode.horovod contributors
# SPDX-License-Identifier: GPL-3.0-or-later
"""plugins/filter/horovod_launch.py: the processes of a run and horovodrun's command line."""

from __future__ import annotations

from pathlib import Path

import pytest
from ansible.errors import AnsibleFilterError
from ansible_collections.multinode.horovod.plugins.filter import horovod_launch as f
from ansible_collections.multinode.horovod.plugins.filter import horovod_run

PLUGIN = Path(f.__file__)
HOSTS = [
    {"name": "master", "address": "10.0.0.1", "slots": 4},
    {"name": "w1", "address": "10.0.0.2", "slots": "2"},
]
RUN = {
    "np": 6,
    "hosts": "10.0.0.1:4,10.0.0.2:2",
    "elastic": False,
    "min_np": 4,
    "max_np": 6,
    "cooldown": [10, 300],
    "discovery_script": "/data1/artifacts/runs/r1/discover-hosts.py",
    "ssh_port": 12345,
    "identity_file": "/root/.ssh/id_ed25519",
    "start_timeout": 60,
    "controller": "gloo",
    "nics": [],
    "run_dir": "/data1/artifacts/runs/r1",
    "rank_env": "",
    "verbose": False,
    "extra_args": [],
    "command": ["python3", "train.py", "--epochs", 3],
}
COMMON = ["-p", "12345", "-i", "/root/.ssh/id_ed25519", "--start-timeout", "60", "--gloo"]


@pytest.mark.parametrize(
    ("np", "min_np", "max_np", "expected"),
    [
        (0, 0, 0, {"total_slots": 6, "np": 6, "min_np": 4, "max_np": 6}),
        ("0", "0", "0", {"total_slots": 6, "np": 6, "min_np": 4, "max_np": 6}),  # from -e
        (3, 0, 0, {"total_slots": 6, "np": 3, "min_np": 3, "max_np": 6}),  # min_np at most np
        (2, 1, 5, {"total_slots": 6, "np": 2, "min_np": 1, "max_np": 5}),
    ],
)
def test_counts(np, min_np, max_np, expected):
    assert f.counts(HOSTS, np, min_np, max_np) == expected


@pytest.mark.parametrize(
    ("hosts", "np"),
    [([], 0), ([{"name": "a", "address": "a", "slots": 0}], 0), (HOSTS, -1), (HOSTS, "all"), (["a"], 0)],
)
def test_counts_refuse_what_the_rules_refuse(hosts, np):
    with pytest.raises(AnsibleFilterError, match="horovod_launch_counts"):
        f.counts(hosts, np)


def test_a_run_on_a_host_list():
    assert f.horovodrun_argv(RUN) == [
        "horovodrun",
        "-np",
        "6",
        "-H",
        "10.0.0.1:4,10.0.0.2:2",
        *COMMON,
        "--output-filename",
        "/data1/artifacts/runs/r1",
        "python3",
        "train.py",
        "--epochs",
        "3",
    ]


def test_an_elastic_run_has_its_discovery_script_and_bounds_instead_of_h():
    argv = f.horovodrun_argv({**RUN, "elastic": True, "min_np": 2, "cooldown": [1, 5]})
    assert "-H" not in argv
    assert argv[:13] == [
        "horovodrun",
        "-np",
        "6",
        "--min-np",
        "2",
        "--max-np",
        "6",
        "--host-discovery-script",
        RUN["discovery_script"],
        "--blacklist-cooldown-range",
        "1",
        "5",
        "-p",
    ]


def test_one_process_has_no_rank_logs():
    argv = f.horovodrun_argv({**RUN, "np": 1})
    assert "--output-filename" not in argv
    assert argv[:5] == ["horovodrun", "-np", "1", "-H", RUN["hosts"]]


def test_interfaces_verbose_extra_args_then_the_command():
    argv = f.horovodrun_argv(
        {
            **RUN,
            "nics": ["eth0", "ib0"],
            "verbose": True,
            "controller": "mpi",
            "extra_args": ["--timeline-filename", "/t"],
        }
    )
    tail = argv[argv.index("--mpi") :]
    assert tail == [
        "--mpi",
        "--network-interfaces",
        "eth0,ib0",
        "--output-filename",
        RUN["run_dir"],
        "--verbose",
        "--timeline-filename",
        "/t",
        "python3",
        "train.py",
        "--epochs",
        "3",
    ]


def test_a_run_with_an_environment_starts_every_rank_through_its_loader():
    # horovodrun puts its own environment on each rank's command line: the run's environment is not in
    # it, each rank loads it from a root-only file through the run's rank-env.sh.
    argv = f.horovodrun_argv({**RUN, "rank_env": "/data1/artifacts/runs/r1/rank-env.sh"})
    assert argv[-6:] == ["sh", "/data1/artifacts/runs/r1/rank-env.sh", "python3", "train.py", "--epochs", "3"]
    assert f.horovodrun_argv(RUN)[-4:] == ["python3", "train.py", "--epochs", "3"]


def test_every_key_is_required():
    for key in f.ARGV_KEYS:
        run = {k: v for k, v in RUN.items() if k != key}
        with pytest.raises(AnsibleFilterError, match=f"missing {key}"):
            f.horovodrun_argv(run)
    with pytest.raises(AnsibleFilterError, match="expects a mapping"):
        f.horovodrun_argv(["horovodrun"])


PLAN_INPUTS = {
    "hosts": HOSTS,
    "np": 0,
    "min_np": 0,
    "max_np": 0,
    "elastic": False,
    "elastic_cooldown": [10, 300],
    "workdir": "",
    "code_repo": "",
    "code_dest": "/data1/artifacts/code",
    "share_dir": "/data1/share",
    "artifact_dir": "/data1/artifacts",
    "command": [],
    "example_args": ["--epochs", "3"],
    "env": {"NCCL_DEBUG": "INFO", "WANDB_API_KEY": "secret"},
    "controller": "gloo",
    "extra_args": [],
    "image_ids": {"master": "sha256:aa", "w1": "sha256:aa"},
    "master": "master",
}


def test_the_plan_of_a_run_from_the_inputs():
    plan = f.plan(PLAN_INPUTS)
    assert {key: plan[key] for key in ("total_slots", "np", "min_np", "max_np")} == {
        "total_slots": 6,
        "np": 6,
        "min_np": 4,
        "max_np": 6,
    }
    assert plan["h"] == "10.0.0.1:4,10.0.0.2:2"
    assert plan["rank_hosts"] == ["master"] * 4 + ["w1"] * 2
    assert plan["workdir"] == "/data1/artifacts"
    assert plan["other_image_ids"] == {"w1": "sha256:aa"}
    # The environment's names only: its values may be secrets.
    assert plan["definition"] == {
        "command": ["(bundled example)", "--epochs", "3"],
        "hosts": "10.0.0.1:4,10.0.0.2:2",
        "np": 6,
        "env_names": ["NCCL_DEBUG", "WANDB_API_KEY"],
        "workdir": "/data1/artifacts",
        "controller": "gloo",
        "extra_args": [],
    }


def test_the_working_directory_is_the_given_one_else_the_checkout_else_the_artifact_directory():
    assert f.plan({**PLAN_INPUTS, "code_repo": "/data1/src/train.git"})["workdir"] == "/data1/artifacts/code"
    assert f.plan({**PLAN_INPUTS, "code_repo": "/r.git", "workdir": "/data1/share/w"})["workdir"] == "/data1/share/w"
    # A command of one's own starts where only the master writes, not on the share root on a worker may change.
    assert f.plan({**PLAN_INPUTS, "command": ["python3", "train.py"]})["workdir"] == "/data1/artifacts"
    # Without an artifact directory only the share is left (the role's rules refuse it unless asked for).
    assert f.plan({**PLAN_INPUTS, "artifact_dir": ""})["workdir"] == "/data1/share"


def test_a_given_command_and_np_in_the_plan():
    plan = f.plan({**PLAN_INPUTS, "command": ["python3", "train.py"], "np": "3"})
    assert plan["np"] == 3 and plan["rank_hosts"] == ["master"] * 3
    assert plan["h"] == "10.0.0.1:3"
    assert plan["definition"]["command"] == ["python3", "train.py"]


def test_only_an_elastic_runs_definition_holds_its_bounds():
    assert "elastic" not in f.plan({**PLAN_INPUTS, "elastic": "no"})["definition"]
    plan = f.plan({**PLAN_INPUTS, "elastic": "true", "min_np": 2, "elastic_cooldown": ["5", 60]})
    assert plan["definition"]["elastic"] == {"min_np": 2, "max_np": 6, "cooldown": [5, 60]}


def test_the_run_name_is_the_one_the_role_made_before_the_plan():
    # What vars/main.yml's __horovod_launch_definition gave for these inputs before it became this filter,
    # completed as tasks/run.yml completes it: an upgrade must find its runs again, not train twice.
    run_id = horovod_run.run_id
    before = {
        "command": ["(bundled example)", "--epochs", "3"],
        "code": "c0de",
        "hosts": "10.0.0.1:4,10.0.0.2:2",
        "np": 6,
        "image": "sha256:aa",
        "env_names": ["WANDB_API_KEY", "NCCL_DEBUG"],
        "workdir": "/data1/share",
        "controller": "gloo",
        "extra_args": [],
    }
    # The same working directory as then (the share: the default working directory is the artifact
    # directory now, which is a new run, once).
    inputs = {**PLAN_INPUTS, "artifact_dir": ""}
    now = {**f.plan(inputs)["definition"], "code": "c0de", "image": "sha256:aa"}
    assert run_id(now) == run_id(before)
    elastic = {**f.plan({**inputs, "elastic": True})["definition"], "code": "c0de", "image": "sha256:aa"}
    assert run_id(elastic) == run_id({**before, "elastic": {"min_np": 4, "max_np": 6, "cooldown": [10, 300]}})
    assert run_id(elastic) != run_id(now)


def test_the_plan_needs_every_input():
    for key in f.PLAN_KEYS:
        with pytest.raises(AnsibleFilterError, match=f"missing {key}"):
            f.plan({k: v for k, v in PLAN_INPUTS.items() if k != key})
    with pytest.raises(AnsibleFilterError, match="expects a mapping"):
        f.plan([])
