# Copyright: multinode.horovod contributors
# SPDX-License-Identifier: GPL-3.0-or-later
"""The launch preflight's judgement (plugins/module_utils/horovod_preflight.py, the filter horovod_preflight):
a sound report of three nodes passes with its summary, each broken case is named with its host and fix,
and what `horovodrun --check-build` prints is read."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from typing import Any

import pytest
from ansible_collections.multinode.horovod.plugins.module_utils import worker_reports
from ansible_collections.multinode.horovod.plugins.module_utils.horovod_preflight import (
    SETTINGS,
    check_build,
    compute_capability,
    doctor,
    preflight,
    route_interface,
    runs_on,
    truncate,
)

CHECK_BUILD = """Horovod v0.28.1:

Available Frameworks:
    [ ] TensorFlow
    [X] PyTorch

Available Controllers:
    [ ] MPI
    [X] Gloo

Available Tensor Operations:
    [ ] NCCL
    [X] Gloo
"""
HOSTS = [
    {"name": "node-a", "address": "10.0.0.1", "slots": 1},
    {"name": "node-b", "address": "10.0.0.2", "slots": 2},
    {"name": "node-c", "address": "10.0.0.3", "slots": 1},
]
SETTINGS_OK: dict[str, Any] = {
    "container": "horovod",
    "ssh_port": 12345,
    "identity_file": "/root/.ssh/id_ed25519",
    "controller": "gloo",
    "required_frameworks": ["pytorch"],
    "network_interfaces": [],
    "never_auto_nics": ["lo", "docker0"],
    "min_shm_size": "1G",
    "min_shm_bytes": 1 << 30,
    "idle_patterns": [],
    "share_dir": "/data1/share",
    "master_image": "sha256:aaa",
    "plan": {
        "np": 4,
        "total_slots": 4,
        "h": "10.0.0.1:1,10.0.0.2:2,10.0.0.3:1",
        "other_image_ids": {"node-b": "sha256:aaa", "node-c": "sha256:aaa"},
        "elastic": False,
        "output_check": {
            "path": "/data1/artifacts/runs",
            "kind": "example",
            "hosts": ["node-a"],
            "elastic": False,
            "create": False,
        },
    },
    "ssh_wrapper": "/root/.ssh/bin/ssh",
    "nccl_net_check": True,
    "launcher": "horovodrun",
}


def node(name: str, address: str, **extra: Any) -> dict[str, Any]:
    return {
        "hostname": name,
        "horovod_version": "0.28.1",
        "interfaces": {"eth0": [address], "lo": ["127.0.0.1"]},
        "addresses": {
            h["address"]: {"ip": h["address"], "interface": "eth0" if h["address"] == address else None} for h in HOSTS
        },
        "shm_bytes": 2 << 30,
        "missing_paths": [],
        "launchers": [],
        "processes": [{"pid": 1, "args": "sleep 5"}],
        "markers": {"/data1/share/.multinode-horovod-marker": "ok"},
        "writable": {"/data1/artifacts/runs": "ok", "/data1/share/out": "ok"},
        **extra,
    }


def report() -> dict[str, Any]:
    return {
        "check_build": {"rc": 0, "stdout": CHECK_BUILD, "stderr": ""},
        "ssh": "/root/.ssh/bin/ssh",
        "local": node("node-a", "10.0.0.1"),
        "local_names": ["node-a"],
        "remotes": [
            {
                "name": h["name"],
                "address": h["address"],
                "rc": 0,
                "stdout": json.dumps(node(h["name"], h["address"])),
                "stderr": "",
            }
            for h in HOSTS[1:]
        ],
    }


def remote(rep: dict[str, Any], name: str, **changes: Any) -> dict[str, Any]:
    """Change what the probe of ``name`` reported."""
    for entry in rep["remotes"]:
        if entry["name"] == name:
            probe = json.loads(entry["stdout"])
            probe.update(changes)
            entry["stdout"] = json.dumps(probe)
    return rep


def judge(rep: dict[str, Any], **settings: Any) -> dict[str, Any]:
    return preflight(rep, HOSTS, "node-a", {**SETTINGS_OK, **settings})


def test_a_sound_cluster_passes_with_its_hosts_and_interface():
    result = judge(report())
    assert result["problems"] == [] and result["busy"] == [] and result["jobs"] == ""
    fact = result["fact"]
    assert {k: fact[k] for k in ("horovod_version", "controller", "np", "slots", "image", "images_compared")} == {
        "horovod_version": "0.28.1",
        "controller": "gloo",
        "np": 4,
        "slots": 4,
        "image": "sha256:aaa",
        "images_compared": 2,
    }
    assert fact["network_interfaces"] == ["eth0"]
    assert [(h["name"], h["slots"], h["hostname"], h["interface"], h["jobs"]) for h in fact["hosts"]] == [
        ("node-a", 1, "node-a", "eth0", []),
        ("node-b", 2, "node-b", "eth0", []),
        ("node-c", 1, "node-c", "eth0", []),
    ]
    assert result["lines"] == [
        "Horovod 0.28.1 (gloo), np 4 of 4 slots, -H 10.0.0.1:1,10.0.0.2:2,10.0.0.3:1",
        "image: sha256:aaa (the same in the 2 other containers compared)",
        "network interfaces: eth0",
        "hostnames: node-a = node-a, node-b = node-b, node-c = node-c",
        "running jobs: none",
    ]


def test_a_job_on_a_worker_is_listed_with_its_host():
    rep = remote(report(), "node-c", processes=[{"pid": 7, "args": "python3 train.py TOKEN=x"}])
    result = judge(rep)
    assert [h["jobs"] for h in result["fact"]["hosts"]] == [[], [], ["7 python3 train.py TOKEN=..."]]
    assert (result["busy"], result["jobs"]) == (["node-c"], "node-c: 7 python3 train.py TOKEN=...")
    assert result["lines"][-1] == "running jobs: node-c: 7 python3 train.py TOKEN=..."
    # An idle pattern of the role's makes it no job; a pattern that is no regular expression is an error.
    assert judge(rep, idle_patterns=["train[.]py"])["busy"] == []
    with pytest.raises(ValueError, match="invalid regular expression"):
        judge(rep, idle_patterns=["("])


def test_many_jobs_are_cut_short_at_a_word():
    assert truncate("word " * 200, 600).endswith("word...") and len(truncate("word " * 200, 600)) <= 600
    assert truncate("short", 600) == "short"


# Cases that break more than one rule: a host on another interface also makes the names differ; a
# hostname shared by two hosts is named from each; an interface no host has is named for each host.
EXPECTED_COUNT = {"address nowhere": 2, "address on docker0": 2, "same hostname": 2, "nic absent": 3}


def _remote_fails(index: int, rc: int, stderr: str) -> Callable[[dict[str, Any]], Any]:
    return lambda rep: rep["remotes"][index].update(rc=rc, stdout="", stderr=stderr)


# Each case: how it breaks the report, and the settings it changes.
BREAKS: dict[str, tuple[Callable[[dict[str, Any]], Any], dict[str, Any]]] = {
    "no horovodrun": (
        lambda rep: rep.update(check_build={"rc": 127, "stdout": "", "stderr": "horovodrun: command not found"}),
        {},
    ),
    "no mpi": (lambda rep: None, {"controller": "mpi"}),
    "no tensorflow": (lambda rep: None, {"required_frameworks": ["pytorch", "tensorflow"]}),
    "one host twice": (lambda rep: rep.update(local_names=["node-a", "node-b"]), {}),
    "host key": (_remote_fails(0, 255, "Host key verification failed."), {}),
    "key refused": (_remote_fails(0, 255, "root@10.0.0.2: Permission denied (publickey)."), {}),
    "no sshd": (_remote_fails(1, 255, "ssh: connect to host 10.0.0.3 port 12345: Connection refused"), {}),
    "no python": (_remote_fails(1, 127, "sh: 1: python3: not found"), {}),
    "share missing": (lambda rep: remote(rep, "node-b", missing_paths=["/data1/share"]), {}),
    "other share": (
        lambda rep: remote(rep, "node-c", markers={"/data1/artifacts/.multinode-horovod-marker": "missing"}),
        {},
    ),
    "same hostname": (lambda rep: remote(rep, "node-c", hostname="node-b"), {}),
    "other horovod": (lambda rep: remote(rep, "node-b", horovod_version="0.27.0"), {}),
    "other image": (
        lambda rep: None,
        {"plan": SETTINGS_OK["plan"] | {"other_image_ids": {"node-b": "sha256:aaa", "node-c": "sha256:bbb"}}},
    ),
    "nic absent": (lambda rep: None, {"network_interfaces": ["ib0"]}),
    "address nowhere": (
        lambda rep: remote(rep, "node-b", addresses={"10.0.0.2": {"ip": "10.9.9.9", "interface": None}}),
        {},
    ),
    "address on docker0": (
        lambda rep: remote(rep, "node-b", addresses={"10.0.0.2": {"ip": "10.0.0.2", "interface": "docker0"}}),
        {},
    ),
    "names differ": (
        lambda rep: remote(rep, "node-c", addresses={"10.0.0.3": {"ip": "10.0.0.3", "interface": "ens5"}}),
        {},
    ),
    "small shm": (lambda rep: remote(rep, "node-c", shm_bytes=64 << 20), {}),
    "elastic on 0.19": (
        lambda rep: rep["check_build"].update(stdout=CHECK_BUILD.replace("v0.28.1", "v0.19.5")),
        {"plan": SETTINGS_OK["plan"] | {"elastic": True}},
    ),
    "too old": (lambda rep: rep["check_build"].update(stdout=CHECK_BUILD.replace("v0.28.1", "v0.16.4")), {}),
}


def broken(case: str) -> tuple[dict[str, Any], dict[str, Any]]:
    rep = report()
    change, settings = BREAKS[case]
    change(rep)
    return rep, settings


@pytest.mark.parametrize(
    ("case", "expected"),
    [
        (
            "no horovodrun",
            "node-a: 'horovodrun --check-build' failed in the container 'horovod' (rc 127): "
            "horovodrun: command not found.",
        ),
        ("no mpi", "horovod_launch_controller is mpi"),
        ("no tensorflow", 'horovod_launch_required_frameworks is ["pytorch", "tensorflow"]'),
        ("one host twice", "node-a: the addresses of node-a, node-b all lead to this host"),
        ("host key", "node-b (10.0.0.2): ssh from the container 'horovod' on node-a to port 12345"),
        ("host key", "Its host key is not pinned (or differs) in the master container's known_hosts"),
        ("key refused", "The master's key is not authorised there: run multinode.horovod.ssh_trust"),
        ("no sshd", "Check that its container runs sshd on port 12345 (docker_horovod, container_sshd)"),
        ("no python", "node-c (10.0.0.3): the probe failed in its container (rc 127): sh: 1: python3: not found."),
        ("share missing", "node-b: the share /data1/share is missing in its container."),
        ("other share", "node-c: its container does not see the master's share at /data1/artifacts: the marker"),
        ("same hostname", "node-b and node-c all have the hostname 'node-b' in their containers"),
        ("other horovod", "node-b runs Horovod '0.27.0' but node-a runs '0.28.1'"),
        (
            "other image",
            "Not every container runs the image of node-a's container (sha256:aaa): node-c runs sha256:bbb.",
        ),
        (
            "nic absent",
            "node-b: ib0 from horovod_launch_network_interfaces does not exist in its container (it has eth0, lo)",
        ),
        (
            "address nowhere",
            "node-b: its address 10.0.0.2 resolves there to 10.9.9.9, which no interface of its container",
        ),
        ("address on docker0", "node-b: its address 10.0.0.2 is on docker0, which is never chosen automatically"),
        ("names differ", "different names (node-a: eth0, node-b: eth0, node-c: ens5)"),
        ("small shm", "node-c: /dev/shm in its container is 64.00 MB, less than horovod_launch_min_shm_size (1G)"),
        (
            "elastic on 0.19",
            "node-a (the container 'horovod'): horovod_launch_elastic needs Horovod 0.24.0 or newer",
        ),
        ("too old", "node-a (the container 'horovod'): the image runs Horovod 0.16.4; the oldest release"),
    ],
)
def test_each_broken_case_is_named_with_its_fix(case, expected):
    rep, settings = broken(case)
    problems = judge(rep, **settings)["problems"]
    assert any(expected in p for p in problems), problems
    # Only what the case broke is reported (some cases break two rules, or the same rule on each host).
    assert len(problems) == EXPECTED_COUNT.get(case, 1), problems


def test_the_first_stage_stops_before_the_reports_are_read():
    rep, _unused = broken("no python")
    remote(rep, "node-b", hostname="node-c")  # would be a second-stage problem
    rep["remotes"][1]["stdout"] = "not json"
    result = judge(rep)
    assert len(result["problems"]) == 1 and result["fact"]["hosts"] == []


def test_every_problem_of_the_second_stage_is_shown_at_once():
    rep = remote(report(), "node-b", horovod_version="0.27.0", shm_bytes=1)
    problems = judge(rep)["problems"]
    assert len(problems) == 2, problems


@pytest.mark.parametrize("found", ["/usr/bin/ssh", "/opt/evil/ssh", ""])
def test_a_master_whose_horovodrun_would_not_run_the_ssh_wrapper_is_refused(found):
    # A recreated container has lost the wrapper's link; without the mounted wrapper, the launch script's
    # PATH would find the real ssh, which horovodrun tells to skip host key checking.
    rep = report()
    rep["ssh"] = found
    [problem] = judge(rep)["problems"]
    assert problem.startswith(f"node-a: horovodrun in the container 'horovod' would run {found or 'no ssh'} instead")
    assert "/root/.ssh/bin/ssh" in problem and "ssh_trust" in problem


def test_the_version_the_command_line_is_built_for_is_horovodruns_own():
    # The package metadata may be absent (Horovod built from source); horovodrun --check-build names its
    # release as the parser the command line must fit.
    rep = report()
    rep["local"]["horovod_version"] = ""
    for entry in rep["remotes"]:
        entry["stdout"] = json.dumps(json.loads(entry["stdout"]) | {"horovod_version": ""})
    rep["check_build"]["stdout"] = CHECK_BUILD.replace("v0.28.1", "v0.19.5")
    result = judge(rep)
    assert result["problems"] == [] and result["fact"]["horovod_version"] == "0.19.5"


def test_named_interfaces_are_used_as_given():
    assert judge(report(), network_interfaces=["eth0"])["fact"]["network_interfaces"] == ["eth0"]


def test_one_host_needs_no_interface():
    rep = report()
    rep["remotes"] = []
    plan = SETTINGS_OK["plan"] | {"other_image_ids": {}}
    result = preflight(rep, HOSTS[:1], "node-a", SETTINGS_OK | {"plan": plan})
    assert result["problems"] == [] and result["fact"]["network_interfaces"] == []
    assert result["lines"][1:3] == [
        "image: sha256:aaa (no other container compared)",
        "network interfaces: (none needed, one host)",
    ]


@pytest.mark.parametrize("key", SETTINGS)
def test_a_missing_setting_is_an_error(key):
    settings = copy.deepcopy(SETTINGS_OK)
    del settings[key]
    with pytest.raises(ValueError, match=key):
        preflight(report(), HOSTS, "node-a", settings)


def test_something_else_than_a_probe_report_is_an_error():
    with pytest.raises(ValueError, match=r"horovod_probe\.py"):
        preflight({"rc": 1}, HOSTS, "node-a", SETTINGS_OK)


def test_check_build_parses_sections():
    assert check_build(CHECK_BUILD) == {
        "version": "0.28.1",
        "frameworks": ["pytorch"],
        "controllers": ["gloo"],
        "tensor_operations": ["gloo"],
    }


def test_check_build_of_a_gpu_image():
    build = check_build(CHECK_BUILD.replace("[ ] NCCL", "[X] NCCL").replace("[ ] MPI", "[X] MPI"))
    assert build["controllers"] == ["mpi", "gloo"]
    assert build["tensor_operations"] == ["nccl", "gloo"]


def test_check_build_rejects_other_text():
    with pytest.raises(ValueError, match="not the output of 'horovodrun --check-build'"):
        check_build("bash: horovodrun: command not found")


# GPUs. What tests/unit/test_horovod_launch_scripts.py's fakes make the probe report: nvidia-smi's GPUs and
# the driver's CUDA, and what torch in the image was built for (torch 1.12.1+cu113 is horovod/horovod:0.28.1's).
H100 = {"index": 0, "name": "NVIDIA H100 80GB HBM3", "compute_cap": "9.0"}
A100 = {"index": 0, "name": "NVIDIA A100-SXM4-80GB", "compute_cap": "8.0"}
CU113 = ["sm_37", "sm_50", "sm_60", "sm_70", "sm_75", "sm_80", "sm_86"]
CU118 = [*CU113, "sm_90"]


def gpus(devices: list[dict[str, Any]], cuda: str = "11.3", arch_list: tuple[str, ...] = (), **torch: Any) -> dict:
    arch = list(arch_list or CU113)
    built = {"version": "1.12.1+cu113", "cuda": cuda, "arch_list": arch, "device_count": len(devices), **torch}
    return {"devices": devices, "driver_cuda": "12.4", "frameworks": {"pytorch": built}, "error": ""}


def gpu_report(read: dict[str, Any], on: str = "node-b") -> dict[str, Any]:
    rep = remote(report(), on, gpus=read)
    return rep


def test_a_gpu_the_image_was_built_for_passes_and_is_summed_up():
    two = [A100, {**A100, "index": 1}]
    result = judge(gpu_report(gpus(two)))
    assert result["problems"] == []
    assert result["lines"][-2:] == [
        "GPUs: node-b: 2 x NVIDIA A100-SXM4-80GB (8.0), driver CUDA 12.4",
        "RDMA: no container has any",
    ]
    assert result["fact"]["nccl_net_check"] is False
    assert [h["gpus"] for h in result["fact"]["hosts"]] == [0, 2, 0]


def test_a_cpu_cluster_has_no_gpu_line():
    assert not any(line.startswith("GPUs") for line in judge(report())["lines"])


def test_a_hopper_gpu_under_an_image_without_sm_90_is_refused_naming_the_gpu_and_the_fix():
    problems = judge(gpu_report(gpus([H100, {**H100, "index": 1}])))["problems"]
    assert len(problems) == 2
    assert problems[0].startswith("node-b: GPU 0 (NVIDIA H100 80GB HBM3, compute capability 9.0) cannot run pytorch")
    assert "sha256:aaa" in problems[0] and "sm_86" in problems[0] and "no kernel image" in problems[0]
    assert "docker_horovod_image" in problems[0] and "docs/images.md" in problems[0]
    assert judge(gpu_report(gpus([H100, {**H100, "index": 1}], "11.8", tuple(CU118))))["problems"] == []


@pytest.mark.parametrize(
    ("capability", "arch_list", "runs"),
    [
        ("8.6", ["sm_80"], True),  # a cubin runs on later minors of its major
        ("8.0", ["sm_86"], False),
        ("9.0", ["sm_80", "sm_86"], False),
        ("9.0", ["sm_80", "compute_80"], True),  # PTX is compiled by the driver for newer GPUs
        ("7.5", ["compute_80"], False),
        ("9.0", ["sm_90"], True),
        ("10.0", ["sm_90"], False),
        ("12.0", ["sm_100", "sm_120"], True),
        ("9.0", ["9.0"], True),
    ],
)
def test_which_builds_run_on_which_gpu(capability, arch_list, runs):
    assert runs_on(compute_capability(capability), arch_list) is runs


@pytest.mark.parametrize(
    ("driver", "runtime", "runs"),
    [("12.4", "11.3", True), ("12.0", "12.4", True), ("11.4", "12.1", False), ("10.1", "10.2", False)],
)
def test_a_driver_runs_the_runtimes_it_supports(driver, runtime, runs):
    read = gpus([A100, {**A100, "index": 1}], runtime)
    read["driver_cuda"] = driver
    problems = judge(gpu_report(read))["problems"]
    assert (problems == []) is runs
    if not runs:
        assert problems == [
            f"node-b: pytorch 1.12.1+cu113 in the image sha256:aaa needs CUDA {runtime}, but the NVIDIA driver "
            f"there supports CUDA {driver} at most. Install a newer driver on node-b, or use an image built for "
            f"CUDA {driver} or older (docker_horovod_image)."
        ]


SITE_NAMES = {"horovod_launch_hosts.slots": "horovod_slots", "horovod_launch_hosts.address": "horovod_node_address"}


@pytest.mark.parametrize(("names", "slots"), [({}, "horovod_launch_hosts.slots"), (SITE_NAMES, "horovod_slots")])
def test_more_slots_than_gpus_is_refused_with_the_setting(names, slots):
    # node-b has 2 slots. With the site's names, the message names the setting the user set.
    problems = judge(gpu_report(gpus([A100])), names=names)["problems"]
    assert problems == [
        "node-b: its container sees 1 GPU(s) but the host has 2 slots; every rank needs a GPU of its own. Set "
        f"{slots} for node-b to 1 or fewer, or give its container the GPUs (docker_horovod recreates it "
        "with every GPU the driver lists)."
    ]


@pytest.mark.parametrize(
    ("torch", "expected"),
    [
        ({"cuda": ""}, "is built without CUDA"),
        ({"arch_list": [], "device_count": 0}, "cannot use any (no GPU available to it"),
        ({"error": "ModuleNotFoundError: No module named 'torch'"}, "reading which GPUs pytorch"),
    ],
)
def test_a_framework_that_cannot_use_the_gpus_is_refused(torch, expected):
    read = gpus([A100, {**A100, "index": 1}])
    read["frameworks"]["pytorch"] = {**read["frameworks"]["pytorch"], **torch}
    problems = judge(gpu_report(read))["problems"]
    assert len(problems) == 1 and problems[0].startswith("node-b: ") and expected in problems[0]


def test_a_framework_the_run_does_not_require_is_not_judged():
    read = gpus([A100, {**A100, "index": 1}], cuda="")
    read["frameworks"] = {"tensorflow": read["frameworks"].pop("pytorch")}
    assert judge(gpu_report(read))["problems"] == []


READ_ONLY = "/data1/artifacts is on a file system mounted read-only here"


def output_check(**changes: Any) -> dict[str, Any]:
    return {"plan": SETTINGS_OK["plan"] | {"output_check": SETTINGS_OK["plan"]["output_check"] | changes}}


def test_where_rank_0_writes_is_checked_on_the_host_that_holds_it():
    rep = remote(report(), "node-b", writable={"/data1/artifacts/runs": READ_ONLY})
    # node-a holds rank 0: what node-b cannot write does not matter.
    assert judge(rep)["problems"] == []
    [problem] = judge(rep, **output_check(hosts=["node-b"]))["problems"]
    assert problem == (
        "node-b (10.0.0.2): its container cannot write /data1/artifacts/runs, the bundled example writes its "
        f"output below it: {READ_ONLY}. Rank 0 runs there (the first host of horovod_launch_hosts). Put the "
        "master first in horovod_launch_hosts (the artifact directory is read-only on the workers), or set "
        "horovod_launch_output_dir to a directory on the share (/data1/share) and have the command write there "
        "(it reads HOROVOD_LAUNCH_OUTPUT_DIR)."
    )


def test_an_elastic_run_needs_its_output_directory_writable_on_every_host():
    rep = report()
    for name in ("node-b", "node-c"):
        remote(rep, name, writable={"/data1/artifacts/out": READ_ONLY})
    rep["local"]["writable"] = {"/data1/artifacts/out": "ok"}
    settings = output_check(
        path="/data1/artifacts/out", kind="output_dir", hosts=["node-a", "node-b", "node-c"], elastic=True
    )
    problems = judge(rep, **settings)["problems"]
    assert [p.split(":", 1)[0] for p in problems] == ["node-b (10.0.0.2)", "node-c (10.0.0.3)"], problems
    assert all("the run's output directory (horovod_launch_output_dir)" in p for p in problems)
    assert all("Rank 0 of an elastic run may run on any of its hosts" in p for p in problems)
    assert all("directory on the share (/data1/share), which every host mounts read-write" in p for p in problems)
    # On the share, every host writes it.
    for name in ("node-b", "node-c"):
        remote(rep, name, writable={"/data1/share/out": "ok"})
    rep["local"]["writable"] = {"/data1/share/out": "ok"}
    assert judge(rep, **output_check(path="/data1/share/out", hosts=["node-a", "node-b", "node-c"]))["problems"] == []


def test_a_working_directory_rank_0_cannot_write_is_named_as_such():
    rep = report()
    rep["local"]["writable"] = {"/data1/artifacts/code": "/data1/artifacts/code is not writable by root here"}
    [problem] = judge(rep, **output_check(path="/data1/artifacts/code", kind="workdir"))["problems"]
    assert "cannot write /data1/artifacts/code, the run's working directory, where the command writes" in problem


def test_a_probe_that_did_not_read_the_output_directory_is_refused():
    rep = report()
    del rep["local"]["writable"]
    [problem] = judge(rep)["problems"]
    assert "cannot write /data1/artifacts/runs, the bundled example writes its output below it: not read" in problem


# The kernel's routes of a host on 10.0.0.0/24 (eth0) with a second network on eth1.
ROUTES = [
    {"interface": "eth0", "destination": "0.0.0.0", "prefix": 0, "gateway": "10.0.0.254"},
    {"interface": "eth0", "destination": "10.0.0.0", "prefix": 24, "gateway": "0.0.0.0"},
    {"interface": "eth1", "destination": "192.168.5.0", "prefix": 24, "gateway": "0.0.0.0"},
]
TCP_OK = {
    "ports": {"node-a": 40001, "node-b": 40002, "node-c": 40003},
    "from": {
        "node-a": {"node-b": "ok", "node-c": "ok"},
        "node-b": {"node-a": "ok", "node-c": "ok"},
        "node-c": {"node-a": "ok", "node-b": "ok"},
    },
    "errors": {},
}


def with_tcp_and_routes(**tcp_changes: Any) -> dict[str, Any]:
    rep = report()
    rep["tcp"] = {**copy.deepcopy(TCP_OK), **tcp_changes}
    rep["local"].update(routes=ROUTES, port_range=[32768, 60999])
    for host in HOSTS[1:]:
        remote(rep, host["name"], routes=ROUTES, port_range=[32768, 60999])
    return rep


def test_route_interface_takes_the_most_specific_route():
    assert route_interface(ROUTES, "10.0.0.3") == "eth0"
    assert route_interface(ROUTES, "192.168.5.9") == "eth1"
    assert route_interface(ROUTES, "8.8.8.8") == "eth0"  # the default route
    assert route_interface(ROUTES[1:], "8.8.8.8") is None
    assert route_interface(ROUTES, "not an address") is None


def test_tcp_between_every_pair_and_routes_through_the_interface_pass():
    assert judge(with_tcp_and_routes())["problems"] == []


def test_a_host_that_takes_ssh_but_no_other_tcp_is_refused_with_the_fix():
    blocked = copy.deepcopy(TCP_OK["from"])
    blocked["node-a"]["node-c"] = "refused"
    blocked["node-b"]["node-c"] = "timed out"
    (problem,) = judge(with_tcp_and_routes(**{"from": blocked}))["problems"]
    assert problem.startswith("node-c: its container accepts no TCP connection on an ephemeral port (40003) from ")
    assert "node-a (refused), node-b (timed out), although ssh reaches it" in problem
    assert "(32768-60999 there)" in problem and "iptables -I INPUT -s ADDRESS -p tcp -j ACCEPT" in problem


def test_a_host_whose_tcp_check_could_not_run_is_named():
    (problem,) = judge(with_tcp_and_routes(errors={"node-b": "no listener: boom"}))["problems"]
    assert problem == "node-b: the TCP check could not run there (no listener: boom)."


def test_a_route_through_another_interface_or_none_is_named():
    rep = with_tcp_and_routes()
    remote(
        rep, "node-b", routes=[{"interface": "eth1", "destination": "0.0.0.0", "prefix": 0, "gateway": "192.168.5.1"}]
    )
    remote(rep, "node-c", routes=[{"interface": "eth0", "destination": "10.9.0.0", "prefix": 16, "gateway": "0.0.0.0"}])
    problems = judge(rep, names=SITE_NAMES)["problems"]
    assert judge(rep)["problems"][2].endswith("(horovod_launch_hosts.address) to ones on a network they share.")
    assert problems == [
        "node-b: its route to node-a (10.0.0.1) leaves through eth1, not eth0 (the interface Horovod uses there), "
        "so the ranks' connections would not go where Horovod expects. Name the interface that carries the route "
        "in horovod_launch_network_interfaces, or fix the routes.",
        problems[1],
        "node-c: its container has no route to node-a (10.0.0.1). Add one, or set the hosts' addresses "
        "(horovod_node_address) to ones on a network they share.",
        problems[3],
    ]
    assert "node-b: its route to node-c (10.0.0.3) leaves through eth1" in problems[1]
    assert "node-c: its container has no route to node-b (10.0.0.2)" in problems[3]
    # A host whose routes were not read (an older probe) is not judged by them.
    assert judge(report())["problems"] == []


def test_the_doctor_names_the_most_likely_cause_first():
    blocked = copy.deepcopy(TCP_OK["from"])
    blocked["node-a"]["node-c"] = "refused"
    rep = remote(with_tcp_and_routes(**{"from": blocked}), "node-b", hostname="node-a", shm_bytes=1 << 20)
    found = doctor(rep, HOSTS, "node-a", SETTINGS_OK)
    starts = ["node-c: its container accepts no TCP", "node-a and node-b all have", "node-b and node-a all have",
              "node-b: /dev/shm in its container is 1.00 MB"]  # fmt: skip
    assert len(found["causes"]) == len(starts)
    assert [c[: len(start)] for c, start in zip(found["causes"], starts, strict=True)] == starts
    assert found["lines"][0].startswith("Most likely cause: node-c: its container accepts no TCP connection")
    assert found["lines"][1].startswith("Also: node-a and node-b all have the hostname 'node-a'")
    assert found["lines"][-1].startswith("checked: ssh from the master's container to every host, TCP on")
    assert doctor(with_tcp_and_routes(), HOSTS, "node-a", SETTINGS_OK)["lines"][0] == "No cause found on the hosts."


def test_the_doctor_names_an_unreachable_host_before_anything_else():
    rep = with_tcp_and_routes()
    rep["remotes"][1].update(rc=255, stdout="", stderr="ssh: connect to host 10.0.0.3 port 12345: Connection timed out")
    found = doctor(rep, HOSTS, "node-a", SETTINGS_OK)
    assert len(found["causes"]) == 1
    assert found["causes"][0].startswith("node-c (10.0.0.3): ssh from the container 'horovod' on node-a to port 12345")


# RDMA: what the probe lists in /dev/infiniband of a container with the devices, and the GPU hosts' reports.
IB_DEVICES = ["issm0", "rdma_cm", "umad0", "uverbs0"]


def rdma_report(with_rdma: tuple[str, ...], with_gpus: tuple[str, ...] = ("node-a", "node-b", "node-c")) -> dict:
    rep = report()
    for h in HOSTS:
        changes = {"gpus": gpus([A100])} if h["name"] in with_gpus else {}
        changes["rdma"] = IB_DEVICES if h["name"] in with_rdma else []
        if h["name"] == "node-a":
            rep["local"].update(changes)
        else:
            remote(rep, h["name"], **changes)
    return rep


def one_gpu_each(rep: dict[str, Any]) -> dict[str, Any]:
    hosts = [{**h, "slots": 1} for h in HOSTS]
    return preflight(rep, hosts, "node-a", {**SETTINGS_OK})


def test_gpu_hosts_that_all_see_rdma_devices_get_the_nccl_check():
    result = one_gpu_each(rdma_report(("node-a", "node-b", "node-c")))
    assert result["problems"] == [] and result["fact"]["nccl_net_check"] is True
    assert result["lines"][-1] == (
        "RDMA devices in the containers of node-a, node-b, node-c; NCCL's network is checked before the run"
    )
    # Not when it is turned off, nor on one host (NCCL uses no network), nor without GPUs or PyTorch.
    off = preflight(rdma_report(("node-a", "node-b", "node-c")), [{**h, "slots": 1} for h in HOSTS], "node-a",
                    {**SETTINGS_OK, "nccl_net_check": False})  # fmt: skip
    assert off["problems"] == [] and off["fact"]["nccl_net_check"] is False
    # Nor beside a job (a re-run while the run trains): the check would share its GPUs.
    busy = rdma_report(("node-a", "node-b", "node-c"))
    remote(busy, "node-b", processes=[{"pid": 7, "args": "python3 train.py"}])
    beside = one_gpu_each(busy)
    assert beside["fact"]["nccl_net_check"] is False and beside["busy"] == ["node-b"]
    assert beside["lines"][-1].endswith("; NCCL's network is not checked while a job runs")
    alone = preflight(rdma_report(("node-a",)), [{**HOSTS[0]}], "node-a", {**SETTINGS_OK})
    assert alone["fact"]["nccl_net_check"] is False
    cpu = one_gpu_each(rdma_report(("node-a", "node-b", "node-c"), with_gpus=()))
    assert cpu["fact"]["nccl_net_check"] is False
    tf_only = rdma_report(("node-a", "node-b", "node-c"))
    tf_only["check_build"]["stdout"] = CHECK_BUILD.replace("[ ] TensorFlow", "[X] TensorFlow").replace(
        "[X] PyTorch", "[ ] PyTorch"
    )
    tf_settings = {**SETTINGS_OK, "required_frameworks": ["tensorflow"]}
    tf_result = preflight(tf_only, [{**h, "slots": 1} for h in HOSTS], "node-a", tf_settings)
    assert tf_result["fact"]["nccl_net_check"] is False


def test_a_gpu_host_without_the_rdma_devices_the_others_have_is_refused_with_the_fix():
    result = one_gpu_each(rdma_report(("node-a", "node-c")))
    assert result["problems"] == [
        "node-b: its container sees no RDMA device (/dev/infiniband) while those of node-a, node-c do: NCCL would "
        "use TCP sockets between all the hosts. Load the RDMA drivers on node-b and run docker_horovod again "
        "(docker_horovod_rdma: auto passes /dev/infiniband where the host has it), or set "
        "horovod_launch_nccl_net_check: false to run over sockets knowingly."
    ]
    assert result["fact"]["nccl_net_check"] is False
    assert one_gpu_each(rdma_report(()))["problems"] == []
    # rdma_cm alone is no device NCCL's IB transport opens.
    partial = rdma_report(("node-a", "node-b"))
    remote(partial, "node-c", rdma=["rdma_cm"])
    assert len(one_gpu_each(partial)["problems"]) == 1
    assert preflight(partial, [{**h, "slots": 1} for h in HOSTS], "node-a",
                     {**SETTINGS_OK, "nccl_net_check": False})["problems"] == []  # fmt: skip


def test_the_doctor_asks_nccl_between_gpu_hosts_only():
    hosts = [{**h, "slots": 1} for h in HOSTS]
    gpu = doctor(rdma_report(()), hosts, "node-a", SETTINGS_OK)
    assert gpu["nccl"] == {"horovod_version": "0.28.1", "network_interfaces": ["eth0"]}
    named = doctor(rdma_report(()), hosts, "node-a", {**SETTINGS_OK, "network_interfaces": ["ib0"]})
    assert named["nccl"]["network_interfaces"] == ["ib0"]
    assert doctor(rdma_report((), with_gpus=("node-a", "node-b")), hosts, "node-a", SETTINGS_OK)["nccl"] == {}
    assert doctor(report(), HOSTS, "node-a", SETTINGS_OK)["nccl"] == {}
    assert doctor(rdma_report(()), hosts[:1], "node-a", SETTINGS_OK)["nccl"] == {}
    # Not beside a job: a run that hangs holds its GPUs.
    busy = rdma_report(())
    remote(busy, "node-c", processes=[{"pid": 7, "args": "python3 train.py"}])
    beside = doctor(busy, hosts, "node-a", SETTINGS_OK)
    assert beside["nccl"] == {} and beside["lines"][-1].startswith(
        "NCCL between the GPU hosts: not asked while a job runs on node-c (the check would share its GPUs)"
    )


TORCH = {
    "version": "2.5.1+cu124",
    "distributed": True,
    "gloo": True,
    "nccl": True,
    "torchrun": "/usr/local/bin/torchrun",
}


def torchrun_report(**local_torch: Any) -> dict[str, Any]:
    """What the probe reports for a torchrun run (--torch, no check-build): torch on every node."""
    rep = report()
    del rep["check_build"]
    rep["local"]["torch"] = {**TORCH, **local_torch}
    for entry in rep["remotes"]:
        probe = json.loads(entry["stdout"])
        probe["torch"] = TORCH
        entry["stdout"] = json.dumps(probe)
    return rep


def test_a_torchrun_run_on_gpu_hosts_with_rdma_gets_the_nccl_check_and_the_doctor_asks_nccl():
    rep = rdma_report(("node-a", "node-b", "node-c"))
    del rep["check_build"]
    rep["local"]["torch"] = TORCH
    for entry in rep["remotes"]:
        probe = json.loads(entry["stdout"])
        probe["torch"] = TORCH
        entry["stdout"] = json.dumps(probe)
    hosts = [{**h, "slots": 1} for h in HOSTS]
    torchrun = {**SETTINGS_OK, "launcher": "torchrun"}
    result = preflight(rep, hosts, "node-a", torchrun)
    assert result["problems"] == [] and result["fact"]["nccl_net_check"] is True
    assert preflight(rep, hosts, "node-a", {**torchrun, "nccl_net_check": False})["fact"]["nccl_net_check"] is False
    # The doctor asks NCCL between GPU hosts under torchrun too, without Horovod in the image.
    assert doctor(rep, hosts, "node-a", torchrun)["nccl"] == {"horovod_version": "", "network_interfaces": ["eth0"]}


def test_a_torchrun_run_needs_no_horovod_and_says_which_torch():
    result = judge(torchrun_report(), launcher="torchrun")
    assert result["problems"] == []
    assert result["fact"]["launcher"] == "torchrun" and result["fact"]["torch_version"] == "2.5.1+cu124"
    assert result["fact"]["horovod_version"] == "" and result["fact"]["nccl_net_check"] is False
    assert (
        result["lines"][0] == "torchrun (torch 2.5.1+cu124), 4 processes of 4 slots: 10.0.0.1:1,10.0.0.2:2,10.0.0.3:1"
    )


@pytest.mark.parametrize(
    ("local_torch", "fragment"),
    [
        ({"version": "1.9.1"}, "torch 1.9.1 is older than 1.10.0, the oldest with torchrun"),
        ({"gloo": False}, "lacks the Gloo backend"),
        ({"torchrun": ""}, "lacks the torchrun command"),
        ({"distributed": False}, "lacks torch.distributed"),
        ({"error": "ModuleNotFoundError: No module named 'torch'"}, "torch cannot be imported: ModuleNotFoundError"),
    ],
)
def test_the_master_without_what_torchrun_needs_is_named(local_torch, fragment):
    torch = {"error": local_torch["error"]} if "error" in local_torch else local_torch
    rep = torchrun_report()
    rep["local"]["torch"] = torch if "error" in torch else {**TORCH, **torch}
    problems = judge(rep, launcher="torchrun")["problems"]
    assert len(problems) == 1 and problems[0].startswith("node-a (the container 'horovod'): ")
    assert fragment in problems[0] and "horovod_launch_launcher: horovodrun" in problems[0]


def test_a_worker_without_torch_or_with_another_torch_is_named():
    rep = remote(torchrun_report(), "node-b", torch={**TORCH, "torchrun": ""})
    problems = judge(rep, launcher="torchrun")["problems"]
    assert [p[:40] for p in problems] == ["node-b (the container 'horovod'): torch "]
    rep = remote(torchrun_report(), "node-c", torch={**TORCH, "version": "2.4.0"})
    problems = judge(rep, launcher="torchrun")["problems"]
    assert problems == [
        "node-c runs torch '2.4.0' but node-a runs '2.5.1+cu124'; every node must run the same image. Run "
        "multinode.horovod.docker_horovod on the cluster with one docker_horovod_image."
    ]


def test_a_torchrun_run_without_the_probes_torch_answer_is_refused():
    rep = torchrun_report()
    del rep["local"]["torch"]
    assert "the probe read nothing of torch" in judge(rep, launcher="torchrun")["problems"][0]


def test_a_workers_forged_torch_answer_stops_at_the_boundary():
    rep = remote(torchrun_report(), "node-b", torch={**TORCH, "gloo": "yes$(id)"})
    with pytest.raises(worker_reports.ReportError, match=r"node-b.*torch\.gloo"):
        judge(rep, launcher="torchrun")
