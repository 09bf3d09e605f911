# Copyright: multinode.horovod contributors
# SPDX-License-Identifier: GPL-3.0-or-later
"""The trust boundary for what the nodes report (plugins/module_utils/worker_reports.py; docs/architecture.md,
"One trust boundary"; SECURITY.md, "Guaranteed").

Root on a worker controls its reports. Each validator is fed its bad cases (shell characters, names too
long, wildcard and @cert-authority host keys, keys whose blob is of another type, non-addresses, GPU counts
out of range) and good ones, through the filters that consume the reports; a forged probe answer
(``eth0$(touch /tmp/p)``) never reaches horovodrun's command line; facts a node returns never override the
address and slots the gate judged. The static test at the end fails when a task reads a node's raw report
anywhere but through the boundary.
"""

from __future__ import annotations

import base64
import copy
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from ansible.errors import AnsibleFilterError
from ansible_collections.multinode.horovod.plugins.filter import ssh_trust as ssh_filters
from ansible_collections.multinode.horovod.plugins.filter.horovod_launch import FilterModule as LaunchFilters
from ansible_collections.multinode.horovod.plugins.filter.worker_reports import worker_report
from ansible_collections.multinode.horovod.plugins.lookup.cluster_input import cluster_input
from ansible_collections.multinode.horovod.plugins.module_utils import horovod_launch, worker_reports
from ansible_collections.multinode.horovod.plugins.module_utils.horovod_preflight import doctor, preflight
from ansible_collections.multinode.horovod.plugins.module_utils.worker_reports import ReportError
from ansible_collections.multinode.horovod.plugins.plugin_utils import cluster, gate
from checkout import COLLECTIONS, REPO
from checkout import load as load_path

FORGED_NIC = "eth0$(touch /tmp/p)"
HOSTS = [
    {"name": "node-a", "address": "10.0.0.1", "slots": 1},
    {"name": "node-b", "address": "10.0.0.2", "slots": 1},
]
CHECK_BUILD = "Horovod v0.28.1:\n\nAvailable Frameworks:\n    [X] PyTorch\n\nAvailable Controllers:\n    [X] Gloo\n"
SETTINGS: dict[str, Any] = {
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
        "np": 2,
        "total_slots": 2,
        "h": "10.0.0.1:1,10.0.0.2:1",
        "other_image_ids": {"node-b": "sha256:aaa"},
        "elastic": False,
        "output_check": {"path": "/data1/artifacts/runs", "kind": "example", "hosts": ["node-a"], "elastic": False},
    },
    "ssh_wrapper": "/root/.ssh/bin/ssh",
    "nccl_net_check": True,
    "launcher": "horovodrun",
}


def answer(name: str, address: str, nic: str = "eth0") -> dict[str, Any]:
    """A node's probe answer as files/horovod_probe.py gives it, its address on `nic`."""
    return {
        "hostname": name,
        "horovod_version": "0.28.1",
        "packages": {"torch": "2.1.0+cu121", "libnccl": "2.18.3"},
        "interfaces": {nic: [address], "lo": ["127.0.0.1"]},
        "addresses": {
            h["address"]: {"ip": h["address"], "interface": nic if h["address"] == address else None} for h in HOSTS
        },
        "shm_bytes": 2 << 30,
        "routes": [{"interface": nic, "destination": "10.0.0.0", "prefix": 24, "gateway": "0.0.0.0"}],
        "port_range": [32768, 60999],
        "missing_paths": [],
        "launchers": [],
        "processes": [{"pid": 1, "args": "sleep infinity"}],
        "markers": {"/data1/share/.multinode-horovod-preflight-abc": "ok"},
        "gpus": {
            "devices": [{"index": 0, "name": "NVIDIA H100 80GB HBM3", "compute_cap": "9.0"}],
            "driver_cuda": "12.4",
            "frameworks": {
                "pytorch": {
                    "version": "2.1.0",
                    "cuda": "12.1",
                    "arch_list": ["sm_80", "sm_90"],
                    "device_count": 1,
                    "nccl": "2.18.3",
                }
            },
            "error": "",
        },
        "rdma": ["rdma_cm", "uverbs0"],
        "writable": {"/data1/artifacts/runs": "ok"},
    }


def survey(**changes: Any) -> dict[str, Any]:
    """The master's survey with node-b's answer changed by `changes`."""
    remote = {**answer("node-b", "10.0.0.2"), **changes}
    return {
        "check_build": {"rc": 0, "stdout": CHECK_BUILD, "stderr": ""},
        "ssh": "/root/.ssh/bin/ssh",
        "local": answer("node-a", "10.0.0.1"),
        "local_names": ["node-a"],
        "remotes": [{"name": "node-b", "address": "10.0.0.2", "rc": 0, "stdout": json.dumps(remote), "stderr": ""}],
        "tcp": {
            "ports": {"node-a": 40000, "node-b": 40001},
            "from": {"node-a": {"node-b": "ok"}, "node-b": {"node-a": "ok"}},
            "errors": {},
        },
    }


def forged_nic_survey() -> dict[str, Any]:
    """node-b says that its address is on the interface eth0$(touch /tmp/p), everywhere it names one."""
    forged = answer("node-b", "10.0.0.2", FORGED_NIC)
    return survey(**forged)


# --- finding 1: a forged interface never reaches horovodrun -------------------------------------------


def test_a_forged_interface_in_a_probe_answer_is_refused_naming_the_node_and_the_field():
    with pytest.raises(ReportError) as caught:
        preflight(forged_nic_survey(), HOSTS, "node-a", SETTINGS)
    assert caught.value.node == "node-b"
    assert caught.value.field == "the probe's answer: interfaces"
    assert FORGED_NIC in str(caught.value)


def test_the_preflight_and_doctor_filters_refuse_it_too():
    filters = LaunchFilters().filters()
    for name in ("horovod_preflight", "horovod_doctor"):
        with pytest.raises(AnsibleFilterError, match=r"node-b: the probe's answer: interfaces .*eth0\$\(touch"):
            filters[name](forged_nic_survey(), HOSTS, "node-a", SETTINGS)


def test_a_forged_interface_only_in_the_address_map_is_refused_as_well():
    forged = answer("node-b", "10.0.0.2")
    forged["addresses"]["10.0.0.2"]["interface"] = FORGED_NIC
    with pytest.raises(ReportError) as caught:
        doctor(survey(**forged), HOSTS, "node-a", SETTINGS)
    assert (caught.value.node, caught.value.field) == ("node-b", "the probe's answer: addresses.10.0.0.2.interface")


def test_a_sound_survey_passes_and_its_interface_reaches_horovodrun():
    judged = preflight(survey(), HOSTS, "node-a", SETTINGS)
    assert judged["problems"] == []
    assert judged["fact"]["network_interfaces"] == ["eth0"]


RUN = {
    "horovod_version": "0.28.1",
    "ssh_port": 12345,
    "identity_file": "/root/.ssh/id_ed25519",
    "start_timeout": 30,
    "dir": "",
    "verbose": False,
    "rank_env": "",
    "command": ["python3", "train.py"],
}
PLAN = {"np": 2, "elastic": False, "h": "10.0.0.1:1,10.0.0.2:1", "definition": {"controller": "gloo", "extra_args": []}}


@pytest.mark.parametrize("version", ["0.28.1", "0.18.2"])  # an option, and before 0.19 the environment
@pytest.mark.parametrize("nic", [FORGED_NIC, "eth0,ib0", "eth0;id", "-eth0", "e" * 16, "eth0 x", ".."])
def test_horovodrun_is_never_built_with_what_is_no_interface_name(nic, version):
    with pytest.raises(ValueError, match="is not an interface name"):
        horovod_launch.horovodrun_argv(PLAN, {**RUN, "nics": [nic], "horovod_version": version})


def test_horovodrun_gets_real_interface_names():
    argv = horovod_launch.horovodrun_argv(PLAN, {**RUN, "nics": ["eth0", "ib0"]})
    assert argv[argv.index("--network-interfaces") + 1] == "eth0,ib0"


def test_the_nccl_check_script_runs_nothing_with_a_forged_interface():
    nccl_check = load_path("roles/horovod_launch/files/horovod_nccl_check.py", "horovod_nccl_check")
    answer = nccl_check.check([["horovodrun", "--network-interfaces", FORGED_NIC, "true"]], {}, 5, "/nowhere")
    assert answer["rc"] == 2 and FORGED_NIC in answer["tail"][0]
    assert nccl_check.bad_interfaces(["horovodrun", "--network-interfaces", "eth0,ib0"]) == []


def test_the_gate_and_the_boundary_share_one_interface_rule():
    rules = (REPO / "plugins" / "plugin_utils" / "horovod_launch_rules.py").read_text()
    assert "is_interface_name(nic)" in rules
    for name in ("eth0", "ens3f0", "ib0", "eth0.100", "veth@if3", "br-1a2b3c4d5e6f"):
        assert worker_reports.is_interface_name(name), name
    for name in (
        "",
        ".",
        "..",
        "eth0:1",
        "eth0/1",
        "-x",
        "a" * 16,
        "eth0,ib0",
        "^eth0",
        "=eth0",
        "e$x",
        "e`x`",
        None,
        3,
    ):
        assert not worker_reports.is_interface_name(name), name


# --- each validator: its bad cases and good ones --------------------------------------------------------

PROBE_BAD = [
    ("hostname", "node b; reboot", "hostname"),
    ("hostname", "x" * 300, "hostname"),
    ("horovod_version", "0.28.1$(id)", "horovod_version"),
    ("packages", {"torch": "2.1 && id"}, "packages.torch"),
    ("interfaces", {"e" * 16: ["10.0.0.2"]}, "interfaces"),
    ("interfaces", {"eth0": ["10.0.0.300"]}, "interfaces.eth0"),
    ("interfaces", {"eth0": "10.0.0.2"}, "interfaces.eth0"),
    ("addresses", {"10.0.0.2": {"ip": "not-an-ip", "interface": "eth0"}}, "addresses.10.0.0.2.ip"),
    ("addresses", {"10.0.0.2": {"ip": "10.0.0.2", "interface": "eth0", "x": 1}}, "addresses.10.0.0.2"),
    ("shm_bytes", -1, "shm_bytes"),
    ("shm_bytes", "2G", "shm_bytes"),
    (
        "routes",
        [{"interface": "eth0;id", "destination": "10.0.0.0", "prefix": 24, "gateway": "0.0.0.0"}],
        "routes[0].interface",
    ),
    (
        "routes",
        [{"interface": "eth0", "destination": "10.0.0.0", "prefix": 33, "gateway": "0.0.0.0"}],
        "routes[0].prefix",
    ),
    ("port_range", [1, 2, 3], "port_range"),
    ("port_range", [32768, 70000], "port_range"),
    ("processes", [{"pid": -5, "args": "x"}], "processes[0].pid"),
    ("processes", [{"pid": True, "args": "x"}], "processes[0].pid"),
    ("missing_paths", ["/data\n1"], "missing_paths"),
    ("rdma", ["uverbs0 $(id)"], "rdma"),
    ("gpus", {"devices": [{"index": -1, "name": "GPU", "compute_cap": "9.0"}]}, "gpus.devices[0].index"),
    ("gpus", {"devices": [{"index": 0, "name": "GPU", "compute_cap": "9.0; id"}]}, "gpus.devices[0].compute_cap"),
    ("gpus", {"devices": [{"index": i, "name": "GPU", "compute_cap": "9.0"} for i in range(1025)]}, "gpus.devices"),
    ("gpus", {"driver_cuda": "12.4`id`"}, "gpus.driver_cuda"),
    ("gpus", {"frameworks": {"pytorch": {"device_count": 10**9}}}, "gpus.frameworks.pytorch.device_count"),
    ("gpus", {"frameworks": {"jax": {}}}, "gpus.frameworks"),
    ("unknown", 1, ""),
]


@pytest.mark.parametrize(
    ("key", "value", "field"), PROBE_BAD, ids=[f"{k}-{i}" for i, (k, _v, _f) in enumerate(PROBE_BAD)]
)
def test_a_probe_answer_out_of_its_schema_is_refused_naming_the_field(key, value, field):
    bad = answer("node-b", "10.0.0.2")
    bad[key] = value
    with pytest.raises(ReportError) as caught:
        worker_reports.probe_answer("node-b", bad)
    assert caught.value.node == "node-b"
    assert caught.value.field == f"the probe's answer: {field}".rstrip(": ")


def test_a_probe_answer_that_is_no_json_is_refused():
    report = survey()
    report["remotes"][0]["stdout"] = "{'not': json"
    with pytest.raises(ReportError, match="node-b: the probe's answer in its report is not JSON"):
        preflight(report, HOSTS, "node-a", SETTINGS)


def test_a_tcp_row_naming_a_host_outside_the_run_is_refused():
    report = survey()
    report["tcp"]["from"]["node-b"] = {"evil": "ok"}
    with pytest.raises(ReportError) as caught:
        preflight(report, HOSTS, "node-a", SETTINGS)
    assert caught.value.node == "node-b"


def test_an_address_label_may_be_listed_but_never_holds_the_nodes_address():
    listed = answer("node-b", "10.0.0.2")
    listed["interfaces"]["eth0:1"] = ["10.0.1.2"]
    assert worker_reports.probe_answer("node-b", listed)["interfaces"]["eth0:1"] == ["10.0.1.2"]
    for bad in ("eth0:1;id", "eth0:", ":1", "eth0:1:2", "eth0:12345678901"):
        with pytest.raises(ReportError):
            worker_reports.probe_answer("node-b", {**listed, "interfaces": {bad: []}})
    held = answer("node-b", "10.0.0.2", "eth0:1")
    with pytest.raises(ReportError) as caught:
        worker_reports.probe_answer("node-b", held)
    assert caught.value.field == "the probe's answer: addresses.10.0.0.2.interface"


def test_texts_only_shown_lose_their_control_characters():
    checked = worker_reports.probe_answer(
        "node-b", {**answer("node-b", "10.0.0.2"), "launchers": ["horovodrun \x1b[2J"]}
    )
    assert checked["launchers"] == ["horovodrun ?[2J"]


def test_the_probe_of_this_machine_passes():
    probe = load_path("roles/horovod_launch/files/horovod_probe.py", "horovod_probe")
    real = probe.probe(["127.0.0.1"], ["/nonexistent"])
    assert worker_reports.probe_answer("here", json.loads(json.dumps(real)))["hostname"] == real["hostname"]


NCCL_BAD = [
    ({"rc": "0", "lines": [], "tail": [], "seconds": 1.0}, "rc"),
    ({"rc": 0, "lines": "NCCL INFO Using network IB", "tail": [], "seconds": 1.0}, "lines"),
    ({"rc": 0, "lines": [], "tail": [], "seconds": -1}, "seconds"),
    ({"rc": 0, "lines": [], "tail": [], "seconds": 1.0, "argv": []}, ""),
]


@pytest.mark.parametrize(("given", "field"), NCCL_BAD)
def test_a_nccl_answer_out_of_its_schema_is_refused(given, field):
    with pytest.raises(ReportError) as caught:
        worker_reports.nccl_answer(given, "node-a")
    assert caught.value.field == f"the NCCL check's answer: {field}".rstrip(": ")
    with pytest.raises(AnsibleFilterError, match="node-a"):
        worker_report(given, "nccl_answer", "node-a")


def test_a_sound_nccl_answer_passes_and_is_judged_as_before():
    given = {"rc": 0, "lines": ["node-b:1:1 [0] NCCL INFO Using network IB"], "tail": [], "seconds": 3.2}
    assert horovod_launch.nccl_network(given, ["node-a", "node-b"])["network"] == "IB"


def key(kind: str, seed: str = "k", embedded: str | None = None) -> str:
    """``"type blob"`` of a public key of type `kind` (its blob says `embedded`, else `kind`)."""

    def string(text: str) -> bytes:
        return len(text.encode()).to_bytes(4, "big") + text.encode()

    return f"{kind} {base64.b64encode(string(embedded or kind) + string(seed)).decode()}"


GOOD_KEY, WORKER_KEY = key("ssh-ed25519", "master"), key("ssh-ed25519", "attacker")
NODES = [{"name": "master", "address": "192.0.2.10"}, {"name": "worker", "address": "192.0.2.11"}]


def ssh_read(host_keys: list[str], **more: Any) -> dict[str, Any]:
    return {"__ssh_trust_read": {"host_keys": host_keys, "pinned_lines": [], "bad_host_keys": [], **more}}


FORGED_HOST_KEYS = [
    f"* {WORKER_KEY}",
    f"@cert-authority * {WORKER_KEY}",
    f"@revoked * {WORKER_KEY}",
    f"{WORKER_KEY} comment",
    f"{WORKER_KEY}\n* {WORKER_KEY}",
    key("ssh-ed25519", "x", embedded="ssh-rsa"),  # a blob of another type
    "ssh-dss " + base64.b64encode(b"\0\0\0\x07ssh-dssxx").decode(),  # not a known type
    "ssh-ed25519 AAAA*",
    "",
]


@pytest.mark.parametrize("forged", FORGED_HOST_KEYS)
def test_a_forged_ssh_trust_info_result_pins_nothing_and_names_the_node(forged):
    hostvars = {"master": ssh_read([GOOD_KEY]), "worker": ssh_read([forged])}
    with pytest.raises(ReportError) as caught:
        ssh_filters.pins(hostvars, NODES, 22, "master")
    assert caught.value.node == "worker" and caught.value.field.endswith("host_keys[0]")


def test_sound_host_keys_are_pinned_as_before():
    hostvars = {"master": ssh_read([GOOD_KEY]), "worker": ssh_read([WORKER_KEY])}
    assert ssh_filters.pins(hostvars, NODES, 22, "master")["known_hosts"] == [
        f"master,192.0.2.10 {GOOD_KEY}",
        f"worker,192.0.2.11 {WORKER_KEY}",
    ]


def test_a_forged_pin_of_the_master_for_a_node_left_out_is_refused():
    pinned = [f"worker,192.0.2.11 {key('ssh-ed25519', 'x', embedded='ssh-rsa')}"]
    hostvars = {"master": ssh_read([GOOD_KEY], pinned_lines=pinned)}
    with pytest.raises(ReportError, match="master: its ssh_trust_info result: pinned_lines"):
        ssh_filters.pins(hostvars, NODES, 22, "master")


@pytest.mark.parametrize(
    ("field", "value"),
    [("sources", ['192.0.2.10",command="id']), ("pinned_lines", ["a\nb"]), ("authorized_lines", [3])],
)
def test_the_rest_of_an_ssh_trust_info_result_is_checked(field, value):
    with pytest.raises(ReportError, match=f"worker: its ssh_trust_info result: {field}"):
        worker_reports.ssh_trust_read("worker", {"host_keys": [WORKER_KEY], field: value})


@pytest.mark.parametrize("forged", [f"{WORKER_KEY}\nssh-ed25519 AAAA", 'command="id" ' + WORKER_KEY, "ssh-ed25519 AAA"])
def test_a_forged_public_key_is_authorised_nowhere(forged):
    hostvars = {"worker": {"__ssh_trust_keypair": {"public_key": forged}}}
    with pytest.raises(ReportError, match="worker: its openssh_keypair result: public_key"):
        ssh_filters.wanted_keys(hostvars, ["worker"], "multinode-horovod")


def test_an_ssh_matrix_row_naming_other_hosts_is_refused():
    hostvars = {"worker": {"__ssh_trust_row": {"stdout": json.dumps({"master": "ok", "elsewhere": "ok"})}}}
    with pytest.raises(ReportError, match="worker: its row of the ssh matrix"):
        ssh_filters.matrix(hostvars, ["master", "worker"], ["worker"], 22)


LINK = {
    "port": 5201,
    "seconds": 5,
    "streams": 4,
    "tool": "iperf3",
    "reason": None,
    "missing": [],
    "pairs": [{"client": "node-a", "server": "node-b", "kind": "ring", "bits_per_second": 9.4e9, "error": None}],
    "left": {},
    "nics": {
        "node-b": {"interface": "eth0", "speed_mbps": 10000, "transport": "tcp", "speed_of": "eth0", "reason": None}
    },
}


@pytest.mark.parametrize(
    ("path", "value"),
    [
        (("nics", "node-b", "interface"), FORGED_NIC),
        (("nics", "node-b", "speed_mbps"), "10G"),
        (("nics", "node-b", "transport"), "ib; id"),
        (("pairs", 0, "server"), "elsewhere"),
        (("pairs", 0, "bits_per_second"), -1),
        (("left",), {"elsewhere": "iperf3 -s"}),
    ],
)
def test_a_link_measurement_out_of_its_schema_is_refused(path, value):
    bad = copy.deepcopy(LINK)
    target: Any = bad
    for step in path[:-1]:
        target = target[step]
    target[path[-1]] = value
    with pytest.raises(AnsibleFilterError, match=r"node-a: the link measurement|node-b: its interface"):
        worker_report(bad, "bench_link", "node-a", ["node-a", "node-b"])
    assert worker_report(LINK, "bench_link", "node-a", ["node-a", "node-b"])["nics"] == LINK["nics"]


@pytest.mark.parametrize(
    "run",
    [
        {"name": "../../etc", "state": "failed"},
        {"name": "run-1", "state": "failed; rm"},
        {"name": "run-1", "state": "failed", "rc": 1000},
        {"name": "run-1", "state": "running", "rank_hosts": ["10.0.0.2\n"]},
    ],
)
def test_a_run_status_out_of_its_schema_is_refused(run):
    with pytest.raises(AnsibleFilterError, match="runs_status: the master: the runs read on the share"):
        LaunchFilters().filters()["horovod_run_status"]([run])


@pytest.mark.parametrize(("value", "expected"), [(0, 0), ("4", 4), (8, 8)])
def test_a_gpu_count_in_range_passes(value, expected):
    assert worker_reports.gpu_count("node-b", value) == expected


@pytest.mark.parametrize("value", [-1, 1025, "lots", 2.5, True])
def test_a_gpu_count_out_of_range_never_becomes_slots(value):
    with pytest.raises(ReportError, match="node-b: its GPU count"):
        cluster.nodes(["node-b"], {"node-b": {"docker_horovod_gpu_count": value}})


# --- finding 7b: facts a node returns never override what the gate judged --------------------------------

INVENTORY_ADDRESS, FORGED_ADDRESS = "192.0.2.11", "203.0.113.9"


def forged_facts_hostvars() -> dict[str, dict[str, Any]]:
    """hostvars as Ansible builds them after node-b's module returned ansible_facts: the facts are injected
    above the inventory's values, and kept under ansible_facts."""
    facts = {"horovod_node_address": FORGED_ADDRESS, "horovod_slots": 64}
    return {
        "node-a": {"horovod_node_address": "192.0.2.10", "ansible_facts": {}},
        "node-b": {**facts, "ansible_facts": facts},
    }


def test_facts_a_node_returned_never_override_the_judged_address_and_slots():
    judged = {"node-a": {"address": "192.0.2.10", "slots": None}, "node-b": {"address": INVENTORY_ADDRESS, "slots": 2}}
    hostvars = forged_facts_hostvars()
    nodes = cluster.nodes(["node-a", "node-b"], hostvars, judged)
    assert nodes[1] == {"name": "node-b", "address": INVENTORY_ADDRESS, "slots": 2}
    site = cluster.Site({"horovod_master": ["node-a"], "horovod_workers": ["node-b"]}, hostvars, judged=judged)
    assert site.address("node-b") == INVENTORY_ADDRESS
    assert site.ips("node-b") == [INVENTORY_ADDRESS]
    exports = cluster.value_of(site, "node-a", "nfs_server_exports")
    assert exports[0]["clients"] == [INVENTORY_ADDRESS]


def test_without_the_gates_judgement_a_value_from_facts_is_refused():
    with pytest.raises(ValueError, match="node-b: horovod_node_address is set by a fact the node returned"):
        cluster.nodes(["node-a", "node-b"], forged_facts_hostvars())


def test_the_gate_refuses_facts_that_set_the_address_and_publishes_what_it_judged():
    groups = {"horovod_cluster": ["node-a", "node-b"], "horovod_master": ["node-a"], "horovod_workers": ["node-b"]}
    report = gate.check(groups, forged_facts_hostvars())
    assert any(e.startswith(gate.FACTS_ERROR) and "node-b" in e for e in report.errors)
    clean = {"node-a": {"horovod_node_address": "192.0.2.10"}, "node-b": {"horovod_node_address": INVENTORY_ADDRESS}}
    assert gate.check(groups, clean).as_dict()["nodes"]["node-b"] == {
        "address": INVENTORY_ADDRESS,
        "slots": None,
        "gpu_ids": None,
    }


def test_the_lookup_reads_the_gates_judgement_from_the_hosts_own_copy():
    judged = {
        "node-a": {"address": "192.0.2.10", "slots": None},
        "node-b": {"address": INVENTORY_ADDRESS, "slots": None},
    }
    variables = {
        "groups": {"horovod_master": ["node-a"], "horovod_workers": ["node-b"]},
        "hostvars": forged_facts_hostvars(),
        "inventory_hostname": "node-a",
        cluster.GATE_FACT: {"errors": [], "warnings": [], "nodes": judged},
    }
    hosts = cluster_input(variables, "horovod_launch_hosts")
    assert [h["address"] for h in hosts] == ["192.0.2.10", INVENTORY_ADDRESS]


# --- the static test: no raw report read anywhere but through the boundary -------------------------------

# Filters that take a node's report and call the boundary first (or are the boundary).
BOUNDARY_FILTERS = (
    "worker_report",
    "horovod_preflight",
    "horovod_doctor",
    "horovod_launch_manifest",
    "horovod_run_status",
    "horovod_nccl_network",
    "ssh_trust_pins",
    "ssh_trust_wanted_keys",
    "ssh_trust_matrix",
)
# Filters that read hostvars for the inventory's values, which the gate judged (cluster.GATE_FACT), or
# the gate itself.
INVENTORY_FILTERS = ("cluster_report", "cluster_gate", "cluster_nodes", "cluster_roles", "cluster_slots")
# (file, registered variable): a `from_json` of a report not read through the boundary, each with why.
NOT_A_WORKERS_REPORT = {
    (
        "roles/container_sshd/tasks/assert.yml",
        "__container_sshd_image",
    ): "the node's own image read, used in its own assert",
    ("roles/horovod_launch/tasks/launch.yml", "__horovod_launch_up"): "the master's run helper on its own run's state",
    (
        "roles/horovod_launch/tasks/report.yml",
        "__horovod_launch_poll",
    ): "the master's run helper; its report filter reads the end",
    (
        "roles/horovod_launch/tasks/stop.yml",
        "__horovod_launch_stopping",
    ): "the master's stop helper: the processes it ended",
    (
        "roles/horovod_launch/tasks/wait.yml",
        "__horovod_launch_poll",
    ): "the master's run helper's progress line, only shown",
    ("roles/ssh_trust/tasks/main.yml", "__ssh_trust_link"): "the node's own ssh directory link, used on that node",
    ("roles/ssh_trust/tasks/verify.yml", "__ssh_trust_link"): "the node's own ssh directory link, used on that node",
    ("playbooks/benchmark.yml", "__bench_plot"): "the master's plot script: whether it drew",
    ("playbooks/tensorboard.yml", "__horovod_tensorboard_read"): "the master's TensorBoard helper",
    ("playbooks/tensorboard.yml", "__horovod_tensorboard_stopping"): "the master's TensorBoard helper",
    ("playbooks/tensorboard.yml", "__horovod_tensorboard_reread"): "the master's TensorBoard helper",
}
TASK_FILES = ("roles/*/tasks/*.yml", "playbooks/*.yml", "playbooks/tasks/*.yml", "playbooks/vars/*.yml")
JINJA_RE = re.compile(r"\{\{.*?\}\}", re.S)


def expressions(text: str) -> list[str]:
    """Every Jinja expression of a task file, folded scalars joined."""
    return [" ".join(e.split()) for e in JINJA_RE.findall(text)]


def raw_reads(root: Path) -> list[str]:
    """Where a task reads a report raw: a `from_json` whose expression calls no boundary filter and that is
    not allow-listed, and `hostvars` handed to anything but the boundary's or the inventory's filters."""
    found = []
    for pattern in TASK_FILES:
        for path in sorted(root.glob(pattern)):
            relative = str(path.relative_to(root))
            for expression in expressions(path.read_text()):
                if "from_json" in expression and not any(
                    f"multinode.horovod.{f}" in expression for f in BOUNDARY_FILTERS
                ):
                    registers = re.findall(r"(__[A-Za-z0-9_]+)(?:\.results \| last\)|\))?\.stdout", expression) or ["?"]
                    found += [
                        f"{relative}: {expression}"
                        for register in registers
                        if (relative, register) not in NOT_A_WORKERS_REPORT
                    ]
                if re.search(r"\bhostvars\b", expression):
                    allowed = BOUNDARY_FILTERS + INVENTORY_FILTERS
                    if re.search(r"hostvars\s*\[", expression) or not any(
                        f"multinode.horovod.{f}" in expression for f in allowed
                    ):
                        found.append(f"{relative}: {expression}")
    return sorted(set(found))


def test_no_task_reads_a_nodes_raw_report_but_through_the_boundary():
    assert raw_reads(REPO) == []


def test_every_allow_listed_read_still_exists():
    for (relative, register), _why in NOT_A_WORKERS_REPORT.items():
        assert register in (REPO / relative).read_text(), f"{relative}: {register} is gone; drop it from the list"


@pytest.mark.parametrize(
    "planted",
    [
        '    __x: "{{ __horovod_launch_nccl_run.stdout | from_json }}"\n',
        "    __x: \"{{ hostvars['node-b'].__ssh_trust_read.host_keys }}\"\n",
        "    __x: \"{{ hostvars | dict2items | map(attribute='value.__ssh_trust_read') | list }}\"\n",
    ],
)
def test_the_static_test_fails_on_a_raw_read(tmp_path, planted):
    tasks = tmp_path / "roles" / "horovod_launch" / "tasks"
    tasks.mkdir(parents=True)
    (tasks / "nccl_check.yml").write_text("---\n- name: Read raw\n  ansible.builtin.set_fact:\n" + planted)
    assert len(raw_reads(tmp_path)) == 1


FORGE_MODULE = """#!/usr/bin/python
from ansible.module_utils.basic import AnsibleModule

# What root on a worker can make any module return: facts of its choosing.
module = AnsibleModule(argument_spec={})
module.exit_json(changed=False, ansible_facts={"horovod_node_address": "203.0.113.9", "horovod_slots": 64})
"""
FORGE_PLAY = """---
- name: The gate, as every playbook starts
  hosts: all
  gather_facts: false
  tasks:
    - name: Check the inventory
      ansible.builtin.import_tasks: {repo}/playbooks/tasks/validate_inventory.yml

- name: A worker's module returns facts of its root's choosing
  hosts: horovod_workers
  gather_facts: false
  tasks:
    - name: Return forged facts
      forge_facts:

- name: The master reads the nodes
  hosts: horovod_master
  gather_facts: false
  vars_files: [{repo}/playbooks/vars/cluster.yml]
  tasks:
    - name: Read the nodes as the plays do
      ansible.builtin.set_fact:
        read:
          injected: "{{{{ hostvars['node-b'].horovod_node_address }}}}"
          nodes: "{{{{ __horovod_nodes }}}}"
          exports: "{{{{ lookup('multinode.horovod.cluster_input', 'nfs_server_exports') }}}}"
          allow_from: "{{{{ lookup('multinode.horovod.cluster_input', 'container_sshd_allow_from', node_ips=none) }}}}"
          cluster_nodes: >-
            {{{{ groups['horovod_cluster'] | multinode.horovod.cluster_nodes(hostvars, __horovod_gate.nodes) }}}}
"""


@pytest.mark.skipif(not shutil.which("ansible-playbook"), reason="ansible-playbook is not on PATH")
def test_a_workers_forged_facts_reach_no_play_through_ansible_playbook(tmp_path):
    """The real thing on the controller: a worker's module returns ansible_facts setting its address and slots
    after the gate; Ansible injects them (the first value read shows it), and every read of the site still
    gives the inventory's."""
    local = {"ansible_connection": "local", "ansible_python_interpreter": sys.executable}
    inventory = {
        "all": {
            "children": {
                "horovod_cluster": {
                    "vars": local,
                    "children": {
                        "horovod_master": {"hosts": {"node-a": {"horovod_node_address": "192.0.2.10"}}},
                        "horovod_workers": {"hosts": {"node-b": {"horovod_node_address": INVENTORY_ADDRESS}}},
                    },
                }
            }
        }
    }
    (tmp_path / "hosts.yml").write_text(json.dumps(inventory))
    (tmp_path / "library").mkdir()
    (tmp_path / "library" / "forge_facts.py").write_text(FORGE_MODULE)
    (tmp_path / "play.yml").write_text(FORGE_PLAY.format(repo=REPO))
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=str(COLLECTIONS), ANSIBLE_STDOUT_CALLBACK="ansible.builtin.json")
    env.pop("ANSIBLE_CALLBACKS_ENABLED", None)
    res = subprocess.run(
        ["ansible-playbook", "play.yml", "-i", "hosts.yml"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        check=False,
        stdin=subprocess.DEVNULL,
    )
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    plays = json.loads(res.stdout)["plays"]
    read = plays[-1]["tasks"][-1]["hosts"]["node-a"]["ansible_facts"]["read"]
    assert read["injected"] == FORGED_ADDRESS  # Ansible did put the worker's fact above the inventory
    assert [n["address"] for n in read["nodes"]] == ["192.0.2.10", INVENTORY_ADDRESS]
    assert [n["slots"] for n in read["nodes"]] == [1, 1]
    assert read["exports"][0]["clients"] == [INVENTORY_ADDRESS]
    assert FORGED_ADDRESS not in json.dumps(read["allow_from"])
    assert [n["address"] for n in read["cluster_nodes"]] == ["192.0.2.10", INVENTORY_ADDRESS]
