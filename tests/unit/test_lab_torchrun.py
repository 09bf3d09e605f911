# Copyright: multinode.horovod contributors
# SPDX-License-Identifier: GPL-3.0-or-later
"""tools/lab.py's judgement of the benchmark it runs under torchrun (make lab-torchrun), on a report the
benchmark's own code makes from a recorded link measurement and torchrun results."""

from __future__ import annotations

import json

import pytest
from ansible_collections.multinode.horovod.plugins.module_utils import horovod_bench as b
from checkout import REPO, load

lab = load("tools/lab.py", "lab_torchrun")
RECORDED = REPO / "tests" / "unit" / "fixtures" / "bench_slow" / "all-equal.json"
STEPS = ["link", "allreduce", "synthetic"]


def torchrun_report(**over):
    """A report of three torchrun processes, one per lab machine; ``over`` replaces a run's result keys."""
    recorded = json.loads(RECORDED.read_text())
    plan = b.plan({}, recorded["hosts"], share_dir="/data1/share", artifact_dir="/data1/artifacts", ssh_port=2222,
                  launcher="torchrun")  # fmt: skip
    about = {"np": 3, "device": "cpu", "backend": "gloo", "launcher": "torchrun", "torch": "1.13.0a0"}
    results = {
        "allreduce": {
            **about,
            "results": [{"bytes": 1024, "iters": 50, "time_s": 1e-4}, {"bytes": 1024**2, "iters": 20, "time_s": 2e-3}],
        },
        "synthetic_one": {**about, "np": 1, "model": "resnet18", "batch_size": 8, "image_size": 64, "img_per_s": 6.0},
        "synthetic_all": {**about, "model": "resnet18", "batch_size": 8, "image_size": 64, "img_per_s": 15.0},
    }
    for key, value in over.items():
        results[key] = {**results[key], **value}
    report = b.report(plan, {"hosts": recorded["hosts"], "network_interfaces": ["eth0"]}, recorded["link"], results)
    return json.loads(json.dumps(report))


def test_a_graded_torchrun_report_over_the_three_machines_passes():
    assert lab.torchrun_bench_problems(torchrun_report(), STEPS, "1.13") == []


@pytest.mark.parametrize(
    ("over", "torch_prefix", "wanted"),
    [
        ({}, "2.5.1", "the report's torch is '1.13.0a0'"),
        ({"allreduce": {"np": 2}}, "1.13", "no bus bandwidth over 3 processes"),
        ({"allreduce": {"backend": "nccl"}}, "1.13", "the allreduce went through 'nccl', not gloo"),
    ],
)
def test_each_wrong_torchrun_report_is_named(over, torch_prefix, wanted):
    problems = lab.torchrun_bench_problems(torchrun_report(**over), STEPS, torch_prefix)
    assert any(wanted in problem for problem in problems), problems


def test_a_report_of_horovodrun_runs_or_without_scaling_is_named():
    report = torchrun_report()
    report["launcher"] = "horovodrun"
    assert "the report's launcher is 'horovodrun'" in lab.torchrun_bench_problems(report, STEPS, "1.13")
    report = torchrun_report()
    report["synthetic"] = None
    assert any("no scaling efficiency" in p for p in lab.torchrun_bench_problems(report, STEPS, "1.13"))
    # Without the synthetic step (the torch-cpu image has no torchvision) none is asked for.
    assert lab.torchrun_bench_problems(report, ["link", "allreduce"], "1.13") == []
