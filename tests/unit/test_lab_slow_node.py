# Copyright: multinode.horovod contributors
# SPDX-License-Identifier: GPL-3.0-or-later
"""The parts of tools/lab.py's slow-node test that need no lab: the tc and docker update command lines, the
iperf3 rate it reads, and its judgement of a report (on the recorded ones of tests/unit/fixtures/bench_slow,
made into reports by the benchmark's own code)."""

from __future__ import annotations

import json
import subprocess

import pytest
from ansible_collections.multinode.horovod.plugins.module_utils import horovod_bench as b
from checkout import REPO, load

lab = load("tools/lab.py", "lab_slow_node")
CASES = REPO / "tests" / "unit" / "fixtures" / "bench_slow"
# The fixtures' hosts are m, w1, w2; the lab's are these.
LAB_NAMES = {"m": "lab-master", "w1": "lab-worker1", "w2": "lab-worker2"}


def lab_report(case):
    """A recorded case with the lab's host names, as the benchmark makes its report."""
    text = (CASES / f"{case}.json").read_text()
    for short, name in LAB_NAMES.items():
        text = text.replace(f'"{short}"', f'"{name}"')
    recorded = json.loads(text)
    plan = b.plan({}, recorded["hosts"], share_dir="/data1/share", artifact_dir="/data1/artifacts", ssh_port=2222)
    preflight = {"hosts": recorded["hosts"], "network_interfaces": ["eth0"]}
    results = {key: recorded[key] for key in ("synthetic_one", "synthetic_all")}
    return json.loads(json.dumps(b.report(plan, preflight, recorded["link"], results)))


def test_the_shaper_slows_both_ends_of_the_machines_link_to_the_bridge():
    machine = lab.Machine("lab-worker2", "10.213.9.13")
    argvs = lab.throttle_argvs(machine, "eth0", "veth1a2b", 2.5e9)
    bucket = ["root", "tbf", "rate", "2500000kbit", "burst", "1250000", "latency", "50ms"]
    # What it sends: a token bucket at the rate, a bucket of 4 ms at it, in the machine; what it receives:
    # the same on the host's end of its veth pair (no policer: these kernels lack tc's police action).
    assert argvs == [
        ["docker", "exec", "mnh-lab-worker2", "tc", "qdisc", "replace", "dev", "eth0", *bucket],
        ["tc", "qdisc", "replace", "dev", "veth1a2b", *bucket],
    ]
    assert not any("police" in argv for argv in argvs)
    # A small rate keeps a bucket that holds full-size frames.
    assert lab.throttle_argvs(machine, "eth0", "veth1a2b", 1e6)[0][13] == str(16 * 1024)
    assert lab.unthrottle_argvs(machine, "eth0", "veth1a2b") == [
        ["docker", "exec", "mnh-lab-worker2", "tc", "qdisc", "del", "dev", "eth0", "root"],
        ["tc", "qdisc", "del", "dev", "veth1a2b", "root"],
    ]


def test_the_host_end_of_a_machines_veth_is_found_by_its_index(tmp_path, monkeypatch):
    for name, index in (("lo", "1"), ("veth9", "133"), ("vethx", "134")):
        (tmp_path / name).mkdir()
        (tmp_path / name / "ifindex").write_text(f"{index}\n")
    monkeypatch.setattr(lab, "run", lambda argv, **kw: subprocess.CompletedProcess(argv, 0, "133\n", ""))
    assert lab.host_peer(lab.Machine("lab-worker2", "10.213.9.13"), "eth0", tmp_path) == "veth9"
    monkeypatch.setattr(lab, "run", lambda argv, **kw: subprocess.CompletedProcess(argv, 0, "7\n", ""))
    with pytest.raises(SystemExit, match="no interface of this host has the index '7'"):
        lab.host_peer(lab.Machine("lab-worker2", "10.213.9.13"), "eth0", tmp_path)


def test_the_cpu_limit_is_set_and_removed_by_the_machines_own_dockerd():
    machine = lab.Machine("lab-worker1", "10.213.9.12")
    assert lab.cpu_limit_argv(machine, lab.SLOW_CPU_QUOTA) == [
        "docker", "exec", "mnh-lab-worker1", "docker", "update", "--cpu-period", "100000", "--cpu-quota", "20000",
        "horovod"]  # fmt: skip
    assert lab.cpu_limit_argv(machine, -1)[-2:] == ["-1", "horovod"]
    # Under the judgement's threshold, with room for the other containers' share of this host's cores.
    assert lab.SLOW_CPU_QUOTA / lab.SLOW_CPU_PERIOD < b.COMPUTE_SLOW / 2
    assert lab.SLOW_LINK_SHARE < b.LINK_SLOW / 2
    assert lab.SLOW_LINK != lab.MACHINES[0] and lab.SLOW_COMPUTE != lab.MACHINES[0]


def test_the_baseline_is_what_iperf3_received():
    out = {"end": {"sum_received": {"bits_per_second": 2.5e10}, "sum_sent": {"bits_per_second": 2.6e10}}}
    assert lab.iperf3_bits(json.dumps(out)) == 2.5e10
    with pytest.raises(SystemExit, match="gave no rate"):
        lab.iperf3_bits('{"error": "unable to connect to server"}')
    with pytest.raises(SystemExit, match="gave no rate"):
        lab.iperf3_bits("")


def test_a_report_that_names_the_throttled_machine_passes():
    assert lab.slow_node_problems(lab_report("link-throttled"), "link", "lab-worker2") == []
    assert lab.slow_node_problems(lab_report("compute-slow"), "compute", "lab-worker1") == []


@pytest.mark.parametrize(
    ("case", "kind", "machine", "wanted"),
    [
        ("all-equal", "link", "lab-worker2", "slow.link names [] (verdict 'none'), not ['lab-worker2']"),
        ("slow-pair", "link", "lab-worker2", "verdict 'pair'"),
        ("link-throttled", "link", "lab-worker1", "not ['lab-worker1']"),
        ("all-equal", "compute", "lab-worker1", "the grade does not name lab-worker1 as the cause"),
        ("link-throttled", "compute", "lab-worker1", "the grade's check does not say nvidia-smi"),
    ],
)
def test_a_report_that_does_not_name_it_fails_saying_why(case, kind, machine, wanted):
    problems = lab.slow_node_problems(lab_report(case), kind, machine)
    assert [p for p in problems if wanted in p], problems


def test_a_report_made_before_the_judgement_fails():
    assert lab.slow_node_problems({"grade": {}}, "link", "lab-worker2") == [
        "the report has no slow-node judgement (slow)"
    ]
