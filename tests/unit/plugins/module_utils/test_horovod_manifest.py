# Copyright: multinode.horovod contributors
# SPDX-License-Identifier: GPL-3.0-or-later
"""A run's manifest (plugins/module_utils/horovod_manifest.py): what the preflight found on each host and
what defines the run, written beside it; its line in the list of runs; and the comparison of two runs."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from ansible_collections.multinode.horovod.plugins.module_utils import horovod_launch as launch
from ansible_collections.multinode.horovod.plugins.module_utils import horovod_manifest as m
from ansible_collections.multinode.horovod.plugins.module_utils.horovod_preflight import preflight
from ansible_collections.multinode.horovod.tests.unit.plugins.module_utils.test_horovod_preflight import (
    HOSTS,
    SETTINGS_OK,
    remote,
    report,
)

PLAN_INPUTS = {
    "hosts": HOSTS,
    "np": 0,
    "min_np": 0,
    "max_np": 0,
    "elastic": False,
    "elastic_cooldown": [10, 300],
    "workdir": "",
    "output_dir": "",
    "code_repo": "https://git.example/train.git",
    "code_dest": "/data1/artifacts/code/train",
    "share_dir": "/data1/share",
    "artifact_dir": "/data1/artifacts",
    "runs_dir": "/data1/artifacts/runs",
    "command": ["python3", "train.py", "--epochs", "3"],
    "example_args": [],
    "env": {"NCCL_DEBUG": "INFO", "WANDB_API_KEY": "s3cret-value"},
    "controller": "gloo",
    "extra_args": ["--fusion-threshold-mb", "32"],
    "image_ids": {"node-b": "sha256:aaa", "node-c": "sha256:aaa"},
    "master": "node-a",
    "launcher": "horovodrun",
    "rdzv_port": 29500,
    "min_nodes": 0,
    "max_restarts": 3,
}
GIVEN_RUN = {
    "name": "r1",
    "code_commit": "c" * 40,
    "code_version": "v1",
    "example_sha256": "e" * 64,
    "example_path": "/data1/artifacts/examples/horovod_train_example.py",
    "image": "sha256:aaa",
    "nics": [],
    "ssh_port": 12345,
    "identity_file": "/root/.ssh/id_ed25519",
    "start_timeout": 60,
    "verbose": False,
    "timeout": 0,
    "stall_timeout": 0,
    "poll_interval": 15,
    "tail_lines": 40,
    "horovod_version": "0.28.1",
    "torch_version": "",
}
PACKAGES = {"torch": "1.13.1", "tqdm": "4.66.1", "libnccl": "2.18.3"}


def survey(**changes: Any) -> dict[str, Any]:
    rep = report()
    rep["local"]["packages"] = PACKAGES
    for host in HOSTS[1:]:
        remote(rep, host["name"], packages=PACKAGES)
    for name, probe in changes.items():
        if name == "node-a":
            rep["local"].update(probe)
        else:
            remote(rep, name, **probe)
    return rep


def manifest(rep: dict[str, Any] | None = None, inputs: dict[str, Any] | None = None, **given: Any) -> dict:
    plan = launch.plan({**PLAN_INPUTS, **(inputs or {})})
    run = launch.run(plan, {**GIVEN_RUN, **given.pop("run", {})})
    rep = rep or survey()
    fact = preflight(rep, HOSTS, "node-a", {**SETTINGS_OK, "plan": {**SETTINGS_OK["plan"], **plan}})["fact"]
    extra = {
        "hosts": HOSTS,
        "master": "node-a",
        "image_ids": PLAN_INPUTS["image_ids"],
        "code_version": "v1",
        "written": "2026-12-06T03:00:00Z",
        **given,
    }
    return m.manifest(run, plan, rep, fact, extra)


def test_the_manifest_holds_what_made_the_run():
    got = manifest()
    assert got["manifest"] == 1 and got["run"] == "r1" and got["written"] == "2026-12-06T03:00:00Z"
    assert got["horovod_build"] == {
        "version": "0.28.1",
        "frameworks": ["pytorch"],
        "controllers": ["gloo"],
        "tensor_operations": ["gloo"],
    }
    assert [h["name"] for h in got["hosts"]] == ["node-a", "node-b", "node-c"]
    assert got["hosts"][1] == {
        "name": "node-b",
        "address": "10.0.0.2",
        "slots": 2,
        "hostname": "node-b",
        "interface": "eth0",
        "image": "sha256:aaa",
        "horovod_version": "0.28.1",
        "packages": {"libnccl": "2.18.3", "torch": "1.13.1", "tqdm": "4.66.1"},
        "gpus": [],
    }
    assert got["np"] == 4 and got["hostfile"] == "10.0.0.1:1,10.0.0.2:2,10.0.0.3:1"
    assert got["network_interfaces"] == ["eth0"]
    assert got["code"] == {"repo": "https://git.example/train.git", "version": "v1", "commit": "c" * 40}
    assert got["command"] == ["python3", "train.py", "--epochs", "3"]
    assert got["horovodrun"][:3] == ["horovodrun", "-np", "4"]
    assert got["settings"]["controller"] == "gloo"
    assert got["settings"]["extra_args"] == ["--fusion-threshold-mb", "32"]
    assert got["settings"]["workdir"] == "/data1/artifacts/code/train"


def test_the_environment_is_named_never_valued():
    got = manifest()
    assert got["env_names"] == ["NCCL_DEBUG", "WANDB_API_KEY"]
    assert "s3cret-value" not in json.dumps(got)


def test_each_host_has_its_own_image_and_gpus():
    gpus = {
        "devices": [{"index": 0, "name": "NVIDIA H100 80GB HBM3", "compute_cap": "9.0"}],
        "driver_cuda": "12.4",
        "frameworks": {"pytorch": {"version": "2.1.2", "cuda": "12.1", "arch_list": ["sm_90"], "nccl": "2.18.1"}},
        "error": "",
    }
    got = manifest(survey(**{"node-c": {"gpus": gpus}}), image_ids={"node-b": "sha256:aaa", "node-c": "sha256:ccc"})
    assert [h["image"] for h in got["hosts"]] == ["sha256:aaa", "sha256:aaa", "sha256:ccc"]
    node_c = got["hosts"][2]
    assert node_c["gpus"] == ["NVIDIA H100 80GB HBM3"] and node_c["driver_cuda"] == "12.4"
    assert node_c["gpu_frameworks"]["pytorch"]["nccl"] == "2.18.1"
    assert "driver_cuda" not in got["hosts"][0]


def test_the_bundled_example_is_described_by_its_working_directory():
    got = manifest(inputs={"code_repo": "", "command": [], "example_args": ["--epochs", "3"]}, run={"code_commit": ""})
    assert got["code"] == {"workdir": "/data1/artifacts"}
    assert got["settings"]["output_dir"] == "/data1/artifacts/runs/r1/output"


def test_the_line_names_what_the_run_ran_on():
    line = m.line(manifest())
    assert line == (
        "Horovod 0.28.1 (gloo), torch 1.13.1, NCCL 2.18.3, image sha256:aaa on every host, interfaces eth0, "
        "code https://git.example/train.git at v1 (cccccccccccc)"
    )
    other = manifest(
        survey(**{"node-b": {"packages": {"torch": "2.0.1"}}}),
        image_ids={"node-b": "sha256:bbb", "node-c": "sha256:aaa"},
    )
    assert "torch 1.13.1/2.0.1" in m.line(other) and "images sha256:aaa, sha256:bbb (they differ)" in m.line(other)
    # The role used alone reads only the master's image.
    alone = m.line(manifest(image_ids={}))
    assert "image sha256:aaa on 1 of 3 hosts (the others not read)" in alone
    assert m.line(None) == "" and m.line({}) == ""


def test_the_runs_table_shows_the_manifest_below_each_run():
    runs = [
        {"name": "r1", "state": "finished", "rc": 0, "duration_s": 5, "manifest": manifest()},
        {"name": "r0", "state": "finished", "rc": 0, "duration_s": 5, "manifest": None},
    ]
    got = m.runs_status(runs)
    assert got[0]["lines"][0] == got[0]["summary"] and got[0]["lines"][1].startswith("    Horovod 0.28.1 (gloo)")
    assert got[1]["lines"] == [got[1]["summary"]]


def test_two_runs_differ_where_they_differ_and_nowhere_else():
    a = manifest()
    b = manifest(
        survey(**{"node-b": {"packages": {**PACKAGES, "torch": "2.0.1"}}}),
        image_ids={"node-b": "sha256:aaa", "node-c": "sha256:ccc"},
        written="2026-12-07T00:00:00Z",
        run={"name": "r2"},
    )
    lines = m.diff(a, b)
    # The run's own name and time are not differences; its directory in horovodrun's command line is.
    assert [line.partition(":")[0] for line in lines] == [
        "horovodrun",
        "hosts.node-b.packages.torch",
        "hosts.node-c.image",
    ]
    assert lines[1:3] == [
        'hosts.node-b.packages.torch: "1.13.1" -> "2.0.1"',
        'hosts.node-c.image: "sha256:aaa" -> "sha256:ccc"',
    ]
    assert all(len(line) < 2 * m.SHOWN + 80 for line in lines)
    # The command lines differ only in the run's directory, far into them: both are shown from there.
    shown = lines[0].split(" -> ")
    assert shown[0].startswith("horovodrun: ...") and "/runs/r1" in shown[0] and "/runs/r2" in shown[1]
    assert m.diff(a, copy.deepcopy(a)) == []


def test_a_key_only_one_run_has_is_shown_as_missing_in_the_other():
    without, with_tf = manifest(), manifest(survey(**{"node-a": {"packages": {**PACKAGES, "tensorflow": "2.11.0"}}}))
    assert m.diff(without, with_tf) == ['hosts.node-a.packages.tensorflow: (none) -> "2.11.0"']
    assert m.diff(with_tf, without) == ['hosts.node-a.packages.tensorflow: "2.11.0" -> (none)']


def test_compare_finds_the_runs_by_name_and_says_when_nothing_differs():
    a = manifest()
    runs = [
        {"name": "r1", "manifest": a},
        {"name": "r2", "manifest": copy.deepcopy(a)},
        {"name": "old", "manifest": None},
    ]
    assert m.compare(runs, ["r1", "r2"]) == ["r1 -> r2: nothing differs"]
    assert m.compare(runs, "r1, r2") == ["r1 -> r2: nothing differs"]
    changed = copy.deepcopy(a)
    changed["network_interfaces"] = ["ib0"]
    runs[1]["manifest"] = changed
    assert m.compare(runs, "r1,r2") == ["r1 -> r2: 1 difference(s)", 'network_interfaces: ["eth0"] -> ["ib0"]']
    with pytest.raises(ValueError, match="no run named nope"):
        m.compare(runs, "r1,nope")
    with pytest.raises(ValueError, match="r1,old: the second run has no manifest"):
        m.compare(runs, "r1,old")


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("a,b", ["a", "b"]),
        (" a , b ", ["a", "b"]),
        (["a", "b"], ["a", "b"]),
        ("a", None),
        ("a,b,c", None),
        ("a,", None),
        ([], None),
        (["a", 1], None),
        (3, None),
    ],
)
def test_compare_names(value: Any, expected: list[str] | None):
    assert m.compare_names(value) == expected
