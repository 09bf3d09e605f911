# Copyright: multinode.horovod contributors
# SPDX-License-Identifier: GPL-3.0-or-later
"""The gate's rules and the site's mapping (plugins/plugin_utils/gate.py, cluster.py), and the site's filters
(plugins/filter/cluster.py)."""

from __future__ import annotations

import os

import pytest
import yaml
from ansible_collections.multinode.horovod.plugins.lookup import cluster_input as lookup
from ansible_collections.multinode.horovod.plugins.module_utils import paths
from ansible_collections.multinode.horovod.plugins.plugin_utils import cluster as mapping
from ansible_collections.multinode.horovod.plugins.plugin_utils import gate, roles
from checkout import REPO, load

cluster = load("plugins/filter/cluster.py", "mnh_cluster")

GOOD_GROUPS = {
    "horovod_cluster": ["node-a", "node-b", "node-c"],
    "horovod_master": ["node-a"],
    "horovod_workers": ["node-b", "node-c"],
}


def good_hostvars(**overrides):
    hostvars = {
        "node-a": {"ansible_host": "192.0.2.10", "horovod_slots": 4},
        "node-b": {"ansible_host": "192.0.2.11", "horovod_slots": "4"},
        "node-c": {"ansible_host": "192.0.2.12"},
    }
    for name, values in overrides.items():
        hostvars[name.replace("_", "-")].update(values)
    return hostvars


def everywhere(**values):
    return {name: values for name in ("node_a", "node_b", "node_c")}


def problems_of(groups, hostvars):
    return gate.check(groups, hostvars).errors


def test_sound_inventory_has_no_problems():
    assert problems_of(GOOD_GROUPS, good_hostvars()) == []
    assert cluster.cluster_gate(GOOD_GROUPS, good_hostvars()) == []


def test_the_gate_filter_raises_with_every_fix():
    with pytest.raises(Exception, match="Fix the inventory first") as err:
        cluster.cluster_gate(GOOD_GROUPS, good_hostvars(node_b={"horovod_slots": 0, "horovod_ssh_prot": 1}))
    assert "horovod_slots (on node-b)" in str(err.value)
    assert "did you mean horovod_ssh_port?" in str(err.value)


def test_nodes_get_addresses_and_slots():
    hostvars = good_hostvars(node_c={"docker_horovod_gpu_count": 8, "horovod_node_address": "10.0.0.12"})
    assert cluster.cluster_nodes(["node-a", "node-b", "node-c"], hostvars) == [
        {"name": "node-a", "address": "192.0.2.10", "slots": 4},
        {"name": "node-b", "address": "192.0.2.11", "slots": 4},
        {"name": "node-c", "address": "10.0.0.12", "slots": 8},
    ]


def test_slots_default_to_one_without_gpus_and_address_to_the_name():
    assert cluster.cluster_nodes(["solo"], {"solo": {"docker_horovod_gpu_count": 0}}) == [
        {"name": "solo", "address": "solo", "slots": 1}
    ]


@pytest.mark.parametrize(
    ("groups", "overrides", "expected"),
    [
        ({"horovod_workers": ["node-b"], "horovod_cluster": ["node-b"]}, {}, "horovod_master: the group is missing"),
        ({"horovod_master": [], "horovod_workers": ["node-b"]}, {}, "horovod_master: the group is missing"),
        (
            {"horovod_cluster": ["node-a", "node-b"], "horovod_master": ["node-a", "node-b"]},
            {},
            "there must be exactly one",
        ),
        ({**GOOD_GROUPS, "horovod_workers": ["node-a", "node-b"]}, {}, "node-a: in both"),
        (GOOD_GROUPS, {"node_c": {"ansible_host": "192.0.2.10"}}, "address 192.0.2.10 is also node-a's"),
        (GOOD_GROUPS, {"node_b": {"horovod_slots": -1}}, "horovod_slots (on node-b): -1 is not a whole number"),
        (GOOD_GROUPS, {"node_b": {"horovod_slots": 0}}, "horovod_slots (on node-b): 0 is not a whole number"),
        (GOOD_GROUPS, {"node_b": {"horovod_slots": "four"}}, "horovod_slots (on node-b): 'four' is not"),
        (GOOD_GROUPS, {"node_b": {"horovod_slots": 2.5}}, "horovod_slots (on node-b): 2.5 is not"),
        (GOOD_GROUPS, {"node_b": {"horovod_slots": True}}, "horovod_slots (on node-b): True is not"),
        (GOOD_GROUPS, everywhere(horovod_shared_storage="lustre"), "'lustre' is not one of nfs, existing"),
        (GOOD_GROUPS, everywhere(horovod_share_dir="/srv/share"), "must be a directory below horovod_share_root"),
        (GOOD_GROUPS, everywhere(horovod_share_dir="data1/share"), "is not absolute"),
        (GOOD_GROUPS, everywhere(horovod_share_dir="/data10/share"), "must be a directory below"),
        (GOOD_GROUPS, everywhere(horovod_share_dir="/data1/../etc"), "is not normalised"),
        (GOOD_GROUPS, {"node_b": {"ansible_host": "10.0.0.0/8"}}, "node-b: ansible_host: '10.0.0.0/8' is a network"),
        (GOOD_GROUPS, {"node_b": {"horovod_node_address": "::1"}}, "node-b: horovod_node_address: '::1' is an IPv6"),
        (GOOD_GROUPS, {"node_c": {"ansible_host": "bad_name"}}, "not a valid host name"),
        (GOOD_GROUPS, {"node_c": {"ansible_host": "192.0.2.012"}}, "node-c: ansible_host: '192.0.2.012' is not an"),
        (
            GOOD_GROUPS,
            {"node_b": {"ansible_host": "gpu-b.example"}, "node_c": {"horovod_node_address": "GPU-B.example"}},
            "node-c: address GPU-B.example is also node-b's (written gpu-b.example there; host names ignore case)",
        ),
        (
            {
                "horovod_cluster": ["gpu-a", "GPU-A.site-b"],
                "horovod_master": ["gpu-a"],
                "horovod_workers": ["GPU-A.site-b"],
            },
            {"gpu_a": {"ansible_host": "192.0.2.1"}, "GPU-A.site-b": {"ansible_host": "192.0.2.2"}},
            "GPU-A.site-b: short host name GPU-A is also gpu-a's",
        ),
        (GOOD_GROUPS, {"node_c": {"horovod_ssh_port": 2222}}, "horovod_ssh_port differs between hosts"),
        (GOOD_GROUPS, everywhere(horovod_ssh_port=22), "horovod_ssh_port: 22 is the port Ansible reaches"),
        (GOOD_GROUPS, everywhere(horovod_ssh_port=2049), "horovod_ssh_port: 2049 is NFS's (nfsd) port; the"),
        (GOOD_GROUPS, everywhere(horovod_ssh_port="111"), "horovod_ssh_port: 111 is rpcbind's (the NFS portmapper)"),
        (GOOD_GROUPS, everywhere(horovod_network_interfaces="eth0"), "'eth0' is a string, not a list"),
        (GOOD_GROUPS, everywhere(horovod_pip_packages={"name": "x"}), "is a mapping, not a list"),
        (GOOD_GROUPS, everywhere(horovod_ssh_port="12o45"), "'12o45' is not a whole number"),
        (GOOD_GROUPS, everywhere(horovod_train_comand=["x"]), "did you mean horovod_train_command?"),
        ({**GOOD_GROUPS, "horovod_worker": ["node-c"]}, {}, "Did you mean horovod_workers?"),
        ({**GOOD_GROUPS, "horovod_cluster": ["node-a", "node-b"]}, {}, "node-c: in horovod_master or horovod_workers"),
        ({**GOOD_GROUPS, "horovod_cluster": ["node-a", "node-b", "node-c", "x"]}, {"x": {}}, "x: in horovod_cluster"),
    ],
)
def test_each_broken_inventory_is_named(groups, overrides, expected):
    hostvars = good_hostvars()
    for name, values in overrides.items():
        hostvars.setdefault(name.replace("_", "-"), {}).update(values)
    problems = problems_of(groups, hostvars)
    assert any(expected in p for p in problems), problems


def test_duplicate_short_names_are_refused():
    groups = {
        "horovod_cluster": ["gpu1.site-a", "gpu1.site-b"],
        "horovod_master": ["gpu1.site-a"],
        "horovod_workers": ["gpu1.site-b"],
    }
    hostvars = {"gpu1.site-a": {"ansible_host": "192.0.2.1"}, "gpu1.site-b": {"ansible_host": "192.0.2.2"}}
    (problem,) = problems_of(groups, hostvars)
    assert "short host name gpu1 is also gpu1.site-a's" in problem


def test_every_problem_is_reported_at_once():
    groups = {**GOOD_GROUPS, "horovod_master": ["node-a", "node-b"]}
    hostvars = good_hostvars(node_b={"horovod_slots": -2})
    problems = problems_of(groups, hostvars)
    assert any("exactly one" in p for p in problems)
    assert any("node-b: in both" in p for p in problems)
    assert any("horovod_slots (on node-b)" in p for p in problems)


def test_unknown_names_can_be_warnings():
    report = cluster.cluster_report(
        GOOD_GROUPS, good_hostvars(**everywhere(horovod_unknown_variables="warn", horovod_x=1))
    )
    assert report["errors"] == []
    assert any("horovod_x" in w for w in report["warnings"])


def test_a_cluster_wide_problem_is_named_once():
    problems = problems_of(GOOD_GROUPS, good_hostvars(**everywhere(horovod_network_interfaces="eth0")))
    assert problems == [p for p in problems if "horovod_network_interfaces (on every host)" in p]
    assert len(problems) == 1


def test_settings_drop_a_trailing_slash_in_one_place():
    settings = mapping.settings_of({"horovod_share_dir": "/data1/share/", "horovod_ssh_port": "2222"})
    assert settings["horovod_share_dir"] == "/data1/share"
    assert settings["horovod_ssh_port"] == 2222
    assert settings["horovod_image"] == "horovod/horovod:0.28.1"


def test_every_setting_default_passes_its_own_type():
    for setting in mapping.SETTINGS:
        if setting.default is not None:
            assert mapping.type_problem(setting, setting.default) is None, setting.name


def test_every_mapped_role_variable_exists_in_its_role_and_comes_from_settings():
    for role, inputs in mapping.INPUTS.items():
        for variable, given in inputs.items():
            assert variable in roles.spec(role), f"the site sets {variable}, which {role} does not have"
            assert set(given.settings) <= set(mapping.BY_NAME), variable


@pytest.mark.parametrize(
    ("address", "fragment"),
    [
        ("192.0.2.1", None),
        ("gpu-01.example.com", None),
        ("gpu01", None),
        ("10.0.0.0/8", "is a network"),
        ("*", "not a valid host name"),
        ("@netgroup", "not a valid host name"),
        ("localhost", "own name"),
        ("127.0.0.1", "not an address other nodes can reach"),
        ("0.0.0.0", "not an address other nodes can reach"),
        ("fe80::1", "IPv6"),
        ("-bad.example", "not a valid host name"),
        ("a" * 64, "not a valid host name"),
        ("host name", "not a valid host name"),
        ("gpu01\n", "not a valid host name"),
        ("192.0.2.011", "'192.0.2.011' is not an IPv4 address as written (the C library reads it as 192.0.2.9)"),
        ("0x7f.1", "(the C library reads it as 127.0.0.1)"),
        ("10.1", "(the C library reads it as 10.0.0.1); write it as four decimal numbers"),
        ("3232235777", "is not an IPv4 address as written"),
        ("192.0.2.1.", "is not an IPv4 address as written"),
        ("192.0.2.256", "is not an IPv4 address as written"),
        ("1gpu.example", None),
        ("gpu-01.example.com\n", "not a valid host name"),
    ],
)
def test_addresses(address, fragment):
    problem = gate.address_problem(address)
    if fragment is None:
        assert problem is None
    else:
        assert problem is not None
        assert fragment in problem, problem


def test_the_gate_filter_has_nothing_to_check_without_hostvars():
    # Only --syntax-check evaluates the backstop play without host variables; it runs nothing.
    assert cluster.cluster_gate(GOOD_GROUPS, None) == []


def test_a_role_variable_the_site_sets_is_a_warning():
    report = cluster.cluster_report(GOOD_GROUPS, good_hostvars(**everywhere(container_sshd_port=2222)))
    assert report["errors"] == []
    assert any("container_sshd_port (on every host): set in the inventory" in w for w in report["warnings"])


def test_a_newline_cannot_hide_in_a_path():
    assert paths.path_problem("/data1/a\n/b") is not None
    assert paths.path_problem("/data1/share\n") is not None


def inputs(name, hostvars, **settings):
    """What the site hands each role on `name`, with the default settings over which `settings`."""
    each = {node: mapping.settings_of(settings) for node in hostvars}
    return mapping.role_inputs(mapping.Site(GOOD_GROUPS, hostvars, settings=each), name)


def test_sshd_is_narrowed_to_the_cluster_as_the_site_does():
    mapped = inputs("node-b", good_hostvars())
    assert mapped["container_sshd"]["container_sshd_listen_addresses"] == ["192.0.2.11"]
    assert mapped["container_sshd"]["container_sshd_allow_from"] == ["192.0.2.10", "192.0.2.11", "192.0.2.12"]
    assert mapped["ssh_trust"]["ssh_trust_mesh"] is False


def test_with_nfs_a_workers_container_waits_for_the_share_as_the_site_says():
    mounts = inputs("node-b", good_hostvars())["docker_horovod"]["docker_horovod_share_mounts"]
    assert mounts == ["/data1/share", "/data1/artifacts"]
    # The master serves the share from its own disk; nothing is mounted there.
    assert inputs("node-a", good_hostvars())["docker_horovod"]["docker_horovod_share_mounts"] == []
    mapped = inputs("node-b", good_hostvars(), horovod_shared_storage="existing")
    assert mapped["docker_horovod"]["docker_horovod_share_mounts"] == []
    assert "nfs_client" not in mapped


def test_a_node_given_by_name_leaves_its_addresses_to_the_nodes():
    hostvars = good_hostvars(node_b={"ansible_host": "node-b.cluster"})
    mapped = inputs("node-b", hostvars)
    assert "container_sshd_listen_addresses" not in mapped["container_sshd"]
    assert "container_sshd_allow_from" not in mapped["container_sshd"]


@pytest.mark.parametrize(
    ("master_vars", "mesh"),
    [({}, False), ({"horovod_launch_controller": "mpi"}, True), ({"ssh_trust_mesh": True}, True),
     ({"ssh_trust_mesh": "yes"}, True), ({"ssh_trust_mesh": False}, False)],
)  # fmt: skip
def test_the_mesh_is_on_for_mpi_or_when_asked(master_vars, mesh):
    hostvars = good_hostvars(node_a=master_vars)
    mapped = inputs("node-c", hostvars)
    assert mapped["ssh_trust"]["ssh_trust_mesh"] is mesh


def test_a_bad_sshd_source_in_the_inventory_stops_in_the_gate():
    report = cluster.cluster_report(GOOD_GROUPS, good_hostvars(node_b={"container_sshd_allow_from": ["node-a"]}))
    assert any("container_sshd_allow_from" in e and "'node-a' is not an IP address" in e for e in report["errors"])
    # The site honours the inventory's lists: no "ignored" warning for them.
    assert not any("container_sshd_allow_from" in w for w in report["warnings"])


def test_an_sshd_source_that_admits_every_address_stops_in_the_gate_unless_allowed_with_a_warning():
    hostvars = good_hostvars(node_b={"container_sshd_allow_from": ["0.0.0.0/0"]})
    report = cluster.cluster_report(GOOD_GROUPS, hostvars)
    assert [e for e in report["errors"] if e.startswith("container_sshd_allow_from: '0.0.0.0/0' admits every")], report
    hostvars["node-b"]["container_sshd_allow_any_source"] = True
    report = cluster.cluster_report(GOOD_GROUPS, hostvars)
    assert report["errors"] == []
    assert [w for w in report["warnings"] if w.startswith("container_sshd_allow_any_source (on node-b) is true")]


def test_every_fact_a_role_publishes_is_known_to_the_gate():
    """A later play's gate (preflight.yml after a launch) sees the roles' facts among the host's variables."""
    published = set()
    for path in roles.COLLECTION.glob("roles/*/tasks/*.yml"):
        for task in yaml.safe_load(path.read_text()) or []:
            for block in [task, *task.get("block", []), *task.get("rescue", []), *task.get("always", [])]:
                facts = block.get("ansible.builtin.set_fact") or {}
                published |= {name for name in facts if not name.startswith("_") and name != "cacheable"}
    assert published, "no set_fact found: the test reads the wrong files"
    assert published <= set(gate.ROLE_FACTS), published - set(gate.ROLE_FACTS)


def test_the_artifact_directory_is_exported_and_mounted_read_only():
    master = inputs("node-a", good_hostvars())
    share, artifacts = master["nfs_server"]["nfs_server_exports"]
    assert share == {
        "path": "/data1/share",
        "clients": ["192.0.2.11", "192.0.2.12"],
        "options": ["rw", "sync", "no_subtree_check", "no_root_squash"],
    }
    assert artifacts == {
        "path": "/data1/artifacts",
        "clients": ["192.0.2.11", "192.0.2.12"],
        "options": ["ro", "sync", "no_subtree_check", "no_root_squash"],
    }
    mounts = inputs("node-b", good_hostvars())["nfs_client"]["nfs_client_mounts"]
    assert [(m["path"], m["mountpoint"], m["options"][-1]) for m in mounts] == [
        ("/data1/share", "/data1/share", "nodev"),
        ("/data1/artifacts", "/data1/artifacts", "ro"),
    ]
    launch = master["horovod_launch"]
    assert launch["horovod_launch_artifact_dir"] == "/data1/artifacts"
    assert launch["horovod_launch_runs_dir"] == "/data1/artifacts/runs"
    assert launch["horovod_launch_example_dir"] == "/data1/artifacts/examples"
    # The checkout's directory, one per repository in the artifact directory, is the role's plan's.
    assert "horovod_launch_code_dest" not in launch


@pytest.mark.parametrize(
    ("options", "expected"),
    [(["rw", "sync"], ["ro", "sync"]), (["sync", "ro"], ["ro", "sync"]), (["sync"], ["ro", "sync"])],
)
def test_read_only_export_options(options, expected):
    exports = inputs("node-a", good_hostvars(), horovod_nfs_export_options=options)["nfs_server"]["nfs_server_exports"]
    assert [export["options"] for export in exports] == [options, expected]


def test_the_share_and_the_artifact_directory_are_mounted_without_setuid_files_or_devices():
    """Root on one worker may write the share: a setuid program or a device node it puts there must
    be no way to root on another node (nor one the master puts in the artifact directory)."""
    mounts = inputs("node-b", good_hostvars())["nfs_client"]["nfs_client_mounts"]
    assert [m["path"] for m in mounts] == ["/data1/share", "/data1/artifacts"]
    for mount in mounts:
        assert {"nosuid", "nodev"} <= set(mount["options"]), mount
    role_default = yaml.safe_load((REPO / "roles/nfs_client/defaults/main.yml").read_text())
    assert {"nosuid", "nodev"} <= set(role_default["nfs_client_default_options"])


@pytest.mark.parametrize("option", ["crossmnt", "nohide"])
def test_exports_that_reach_below_stop_in_the_gate_unless_allowed(option):
    weak = everywhere(horovod_nfs_export_options=["rw", "sync", "no_subtree_check", "no_root_squash", option])
    report = cluster.cluster_report(GOOD_GROUPS, good_hostvars(**weak))
    refused = [e for e in report["errors"] if f"option {option!r}" in e]
    assert len(refused) == 2 and all("nfs_server_allow_weak_options: true" in e for e in refused), report
    weak["node_a"] = {**weak["node_a"], "nfs_server_allow_weak_options": True}
    report = cluster.cluster_report(GOOD_GROUPS, good_hostvars(**weak))
    assert report["errors"] == []
    warned = [w for w in report["warnings"] if w.startswith("nfs_server_allow_weak_options (on node-a) is true")]
    assert warned and "crossmnt or nohide" in warned[0], report


@pytest.mark.parametrize(
    ("options", "fault"),
    [
        (["nfsvers=4.2", "hard", "_netdev", "noatime"], "lack nosuid"),
        (["nfsvers=4.2", "hard", "nosuid"], "lack nodev"),
        (["nfsvers=4.2", "hard", "suid", "nodev"], "option 'suid' undoes nosuid"),
        (["nfsvers=4.2", "hard", "nosuid", "dev"], "option 'dev' undoes nodev"),
    ],
)
def test_weak_mount_options_stop_in_the_gate_unless_allowed_with_a_warning(options, fault):
    """Mounts without nosuid or nodev let root on one worker reach root on another (issue 42, finding 6)."""
    weak = everywhere(horovod_nfs_mount_options=options)
    report = cluster.cluster_report(GOOD_GROUPS, good_hostvars(**weak))
    refused = [e for e in report["errors"] if fault in e]
    assert len(refused) == 2, report  # the share's mount and the artifact directory's
    assert all("horovod_nfs_mount_options" in e and "nfs_client_allow_weak_options: true" in e for e in refused)
    assert not any("nfs_client_allow_weak_options" in w for w in report["warnings"])
    for name in ("node_b", "node_c"):
        weak[name] = {**weak[name], "nfs_client_allow_weak_options": True}
    report = cluster.cluster_report(GOOD_GROUPS, good_hostvars(**weak))
    assert report["errors"] == []
    warned = [w for w in report["warnings"] if w.startswith("nfs_client_allow_weak_options (on node-b, node-c) is")]
    assert warned and "a set-user-ID program or a device node that root on one worker" in warned[0], report


def test_a_string_of_mount_options_is_told_to_become_one_item_per_option():
    """Issue 43: the advice for a string must be a list the NFS rules then take."""
    report = cluster.cluster_report(GOOD_GROUPS, good_hostvars(**everywhere(horovod_nfs_mount_options="hard,nosuid")))
    advice = [e for e in report["errors"] if e.startswith("horovod_nfs_mount_options (on every host)")]
    assert advice and "'hard,nosuid' is a string, not a list; write one item each: [hard, nosuid]" in advice[0], report
    assert "for one item" not in advice[0]
    report = cluster.cluster_report(GOOD_GROUPS, good_hostvars(**everywhere(horovod_network_interfaces="eth0")))
    assert any("'eth0' is a string, not a list; for one item write [eth0]" in e for e in report["errors"]), report


def test_weak_export_options_stop_in_the_gate_unless_allowed_with_a_warning():
    weak = everywhere(horovod_nfs_export_options=["rw", "sync", "no_subtree_check", "no_root_squash", "insecure"])
    report = cluster.cluster_report(GOOD_GROUPS, good_hostvars(**weak))
    refused = [e for e in report["errors"] if "option 'insecure'" in e]
    assert len(refused) == 2, report  # the share's export and the artifact directory's
    assert all("horovod_nfs_export_options" in e and "nfs_server_allow_weak_options: true" in e for e in refused)
    assert not any("nfs_server_allow_weak_options" in w for w in report["warnings"])
    weak["node_a"] = {**weak["node_a"], "nfs_server_allow_weak_options": True}
    report = cluster.cluster_report(GOOD_GROUPS, good_hostvars(**weak))
    assert report["errors"] == []
    assert [w for w in report["warnings"] if w.startswith("nfs_server_allow_weak_options (on node-a) is true")], report


def test_read_only_mount_options():
    mounts = inputs("node-b", good_hostvars(), horovod_nfs_mount_options=["nfsvers=4.2", "rw", "hard"])["nfs_client"]
    assert [m["options"] for m in mounts["nfs_client_mounts"]] == [
        ["nfsvers=4.2", "rw", "hard"],
        ["nfsvers=4.2", "hard", "ro"],
    ]


def test_the_artifact_directory_follows_the_share_root():
    assert mapping.settings_of({})["horovod_artifact_dir"] == "/data1/artifacts"
    assert mapping.settings_of({"horovod_share_root": "/srv/"})["horovod_artifact_dir"] == "/srv/artifacts"
    assert mapping.settings_of({"horovod_artifact_dir": "/srv/x/"})["horovod_artifact_dir"] == "/srv/x"


@pytest.mark.parametrize(
    ("values", "fragment"),
    [
        ({"horovod_artifact_dir": "/srv/artifacts"}, "must be a directory below horovod_share_root '/data1'"),
        ({"horovod_artifact_dir": "/data1"}, "must be a directory below horovod_share_root '/data1'"),
        ({"horovod_artifact_dir": "/data1/share/artifacts"}, "must be apart, neither inside the other"),
        ({"horovod_artifact_dir": "/data1/x", "horovod_share_dir": "/data1/x/share"}, "must be apart"),
        ({"horovod_artifact_dir": "artifacts"}, "horovod_artifact_dir: 'artifacts' is not absolute"),
    ],
)
def test_a_misplaced_artifact_directory_stops_in_the_gate(values, fragment):
    report = cluster.cluster_report(GOOD_GROUPS, good_hostvars(**everywhere(**values)))
    assert any(fragment in error for error in report["errors"]), report["errors"]


def test_what_nodes_execute_outside_the_artifact_directory_is_a_warning():
    outside = everywhere(horovod_image_archive="/data1/share/images/h.tar", docker_horovod_pip_wheel_dir="/data1/w")
    report = cluster.cluster_report(GOOD_GROUPS, good_hostvars(**outside))
    assert not report["errors"], report["errors"]
    assert any(
        w.startswith("horovod_image_archive: '/data1/share/images/h.tar' is outside") for w in report["warnings"]
    )
    assert any(w.startswith("docker_horovod_pip_wheel_dir: '/data1/w' is outside") for w in report["warnings"])
    inside = everywhere(
        horovod_image_archive="/data1/artifacts/images/h.tar", docker_horovod_pip_wheel_dir="/data1/artifacts/w"
    )
    assert not cluster.cluster_report(GOOD_GROUPS, good_hostvars(**inside))["warnings"]
    # A pinned checksum verifies the archive wherever it lies.
    pinned = everywhere(
        horovod_image_archive="/data1/share/images/h.tar", horovod_image_archive_checksum="sha256:" + "a" * 64
    )
    assert not cluster.cluster_report(GOOD_GROUPS, good_hostvars(**pinned))["warnings"]


def test_the_inventory_may_place_the_launch_directories_itself():
    hostvars = good_hostvars(
        node_a={
            "horovod_launch_code_dest": "/data1/artifacts/code/train",
            "horovod_launch_runs_dir": "/data1/artifacts/r",
        }
    )
    mapped = inputs("node-a", hostvars)["horovod_launch"]
    assert mapped["horovod_launch_runs_dir"] == "/data1/artifacts/r"
    report = cluster.cluster_report(GOOD_GROUPS, hostvars)
    assert not report["errors"] and not any("horovod_launch_code_dest" in w for w in report["warnings"]), report
    # Still checked by the role's rules: in the artifact directory (the share only when asked for).
    outside = cluster.cluster_report(GOOD_GROUPS, good_hostvars(node_a={"horovod_launch_code_dest": "/srv/code"}))
    assert any("horovod_launch_code_dest" in e and "is not on the share" in e for e in outside["errors"]), outside


@pytest.mark.parametrize(
    ("values", "named"),
    [
        (everywhere(horovod_train_command=["python", "/data1/share/code/train.py"]), "horovod_train_command (as "),
        (
            everywhere(horovod_train_command=["/data1/share/run.sh"]),
            "horovod_train_command (as horovod_launch_command)",
        ),
        (
            {"node_a": {"horovod_launch_code_dest": "/data1/share/code"}},
            "horovod_launch_code_dest: '/data1/share/code'",
        ),
        ({"node_a": {"horovod_launch_runs_dir": "/data1/share/runs"}}, "horovod_launch_runs_dir: '/data1/share/runs'"),
        ({"node_a": {"horovod_launch_workdir": "/data1/share/w"}}, "horovod_launch_workdir: '/data1/share/w' is on"),
        ({"node_a": {"horovod_launch_env": {"PYTHONPATH": "/data1/share/lib"}}}, "horovod_launch_env: PYTHONPATH"),
        # Issue 42: any variable a rank loads code from (code_paths.CODE_PATH_VARIABLES), and a relative
        # script, resolved as the rank sees them (the working directory is the artifact directory).
        ({"node_a": {"horovod_launch_env": {"HOME": "/data1/share/home"}}}, "horovod_launch_env: HOME is on"),
        (
            {"node_a": {"horovod_launch_env": {"TORCHINDUCTOR_CACHE_DIR": "../share/inductor"}}},
            "horovod_launch_env: TORCHINDUCTOR_CACHE_DIR is on",
        ),
        (
            everywhere(horovod_train_command=["python3", "../../data1/share/train.py"]),
            "horovod_train_command (as horovod_launch_command): runs '../../data1/share/train.py' "
            "(/data1/share/train.py from the working directory /data1/artifacts)",
        ),
    ],
)
def test_what_the_ranks_execute_on_the_share_stops_in_the_gate_unless_allowed_with_a_warning(values, named):
    hostvars = good_hostvars(**values)
    report = cluster.cluster_report(GOOD_GROUPS, hostvars)
    refused = [e for e in report["errors"] if "on the share '/data1/share'" in e]
    assert len(refused) == 1 and refused[0].startswith(named), report
    assert "horovod_launch_allow_share_code: true, which lets root on any worker run code as root" in refused[0]
    assert not any("horovod_launch_allow_share_code" in w for w in report["warnings"])
    hostvars["node-a"]["horovod_launch_allow_share_code"] = True
    report = cluster.cluster_report(GOOD_GROUPS, hostvars)
    assert report["errors"] == []
    warned = [w for w in report["warnings"] if w.startswith("horovod_launch_allow_share_code (on node-a) is true")]
    assert warned and "root on any worker can run code as root in the master's container" in warned[0], report


def test_data_on_the_share_is_no_code():
    command = ["python3", "/data1/artifacts/train.py", "--train-dir", "/data1/share/imagenet"]
    report = cluster.cluster_report(GOOD_GROUPS, good_hostvars(**everywhere(horovod_train_command=command)))
    assert report["errors"] == [] and report["warnings"] == []


def test_image_ids_of_the_nodes_that_answered_with_one():
    reg = "__horovod_container_image"
    hostvars = {
        "m": {reg: {"rc": 0, "stdout": "sha256:abc123\n"}},
        "w1": {reg: {"rc": 0, "stdout": "sha256:abc123"}},
        "w2": {reg: {"rc": 1, "stdout": "", "stderr": "No such container: horovod"}},
        "w3": {},
        "w4": {reg: {"rc": 0, "stdout": "Template parsing error"}},
    }
    context = {"groups": {"horovod_master": ["m"], "horovod_workers": ["w1", "w2", "w3", "w4"]}}
    context |= {"hostvars": hostvars, "inventory_hostname": "m"}
    assert lookup.cluster_input(context, "horovod_launch_image_ids") == {"m": "sha256:abc123", "w1": "sha256:abc123"}


def test_node_ips_by_address_or_resolved_name_without_loopback():
    nodes = [
        {"name": "a", "address": "10.0.0.1"},
        {"name": "b", "address": "node-b"},
        {"name": "c", "address": "node-c"},
        {"name": "d", "address": "node-d"},
    ]
    resolved = [
        {"item": "node-b", "ansible_facts": {"getent_ahostsv4": {"10.0.0.2": ["STREAM", "node-b"], "127.0.1.1": []}}},
        {"item": "node-c", "ansible_facts": {"getent_ahostsv4": {"127.0.1.1": ["STREAM", "node-c"]}}},
        {"item": "node-d", "failed": True, "msg": "One or more supplied key could not be found in the database."},
    ]
    assert cluster.cluster_node_ips(nodes, resolved) == {"a": ["10.0.0.1"], "b": ["10.0.0.2"], "c": [], "d": []}
    assert cluster.cluster_node_ips(nodes[:1], []) == {"a": ["10.0.0.1"]}


# What an inventory value marked !unsafe reaches the gate as: raw text, which the role gets as it is.
RUNS_CODE = "{{ cycler.__init__.__globals__.os.getcwd() }}"


@pytest.mark.parametrize("variable", ["horovod_launch_runs_dir", "horovod_launch_workdir"])
@pytest.mark.parametrize("raw", [RUNS_CODE, "{{ '/data1/artifacts/runs' }}"])
def test_the_gate_judges_an_inventory_value_as_the_role_gets_it_never_rendered(variable, raw):
    errors = problems_of(GOOD_GROUPS, good_hostvars(node_a={variable: raw}))
    assert any(variable in e and f"{raw!r} is not absolute" in e for e in errors), errors
    assert not any(os.getcwd() in e for e in errors), errors


def test_a_default_is_rendered_once_after_the_defaults_it_refers_to():
    inputs = {"a": "{{ c }}/x", "b": "{{ a }}/y", "c": "{{ 6 * 7 }}", "d": "{{ 6 * 7 }}"}
    # c and d are the inventory's (not defaults): never rendered, and what a and b take in from c stays text.
    assert roles._resolve(inputs, ["b", "a"]) == {
        "a": "{{ 6 * 7 }}/x",
        "b": "{{ 6 * 7 }}/x/y",
        "c": "{{ 6 * 7 }}",
        "d": "{{ 6 * 7 }}",
    }
    # Defaults that refer to each other in a circle are left as they are (the role's checks refuse them).
    assert roles._resolve({"a": "{{ b }}", "b": "{{ a }}"}, ["a", "b"]) == {"a": "{{ b }}", "b": "{{ a }}"}


@pytest.mark.parametrize("variable", ["ansible_host", "horovod_node_address"])
@pytest.mark.parametrize("address", ["192.0.2.011", "node-c\n", "node-c."])
def test_a_bad_address_is_named_by_the_nodes_variable_wherever_it_is_refused(variable, address):
    """The roles' rules refuse it too (the exports' clients, the host lists): each names the node's own
    variable, not a setting such as horovod_share_dir whose value the same message quotes."""
    errors = problems_of(GOOD_GROUPS, good_hostvars(node_c={variable: address}))
    quoting = [e for e in errors if repr(address) in e]
    assert quoting and quoting[0].startswith(f"node-c: {variable}: {address!r} is not"), errors
    roles = quoting[1:]
    assert roles and all(e.startswith(f"{variable} of node-c (as ") for e in roles), errors


def test_a_role_variable_the_inventory_places_is_named_as_the_users_own():
    errors = problems_of(GOOD_GROUPS, good_hostvars(node_a={"horovod_launch_code_dest": "/srv/code"}))
    assert [e.split(":", 1)[0] for e in errors] == ["horovod_launch_code_dest"], errors


def context(host, hostvars, groups=None):
    return {"groups": groups or GOOD_GROUPS, "hostvars": hostvars, "inventory_hostname": host}


def test_the_input_lookup_gives_a_role_variable_or_a_setting_and_refuses_anything_else():
    hostvars = good_hostvars(**everywhere(horovod_share_dir="/data1/data/"))
    assert lookup.cluster_input(context("node-b", hostvars), "horovod_share_dir") == "/data1/data"
    assert lookup.cluster_input(context("node-b", hostvars), "nfs_client_mounts")[0]["server"] == "192.0.2.10"
    assert lookup.cluster_input(context("node-a", hostvars), "ssh_trust_master") == "node-a"
    with pytest.raises(Exception, match="neither a setting of the site nor a role variable it sets"):
        lookup.cluster_input(context("node-a", hostvars), "docker_horovod_rdma")
    named = good_hostvars(node_b={"ansible_host": "node-b.cluster"})
    with pytest.raises(Exception, match="needs the nodes' IPv4 addresses"):
        lookup.cluster_input(context("node-b", named), "container_sshd_listen_addresses")
    ips = {"node-a": ["192.0.2.10"], "node-b": ["10.1.0.2"], "node-c": ["192.0.2.12"]}
    assert lookup.cluster_input(context("node-b", named), "container_sshd_listen_addresses", ips) == ["10.1.0.2"]


def test_the_roles_filter_says_where_the_site_runs_each_role():
    hostvars = good_hostvars()
    assert cluster.cluster_roles(GOOD_GROUPS, hostvars, "node-a") == [
        "nfs_server", "docker_horovod", "container_sshd", "ssh_trust", "horovod_launch"
    ]  # fmt: skip
    assert cluster.cluster_roles(GOOD_GROUPS, hostvars, "node-b") == [
        "nfs_client", "docker_horovod", "container_sshd", "ssh_trust"
    ]  # fmt: skip
    existing = good_hostvars(**everywhere(horovod_shared_storage="existing"))
    assert "nfs_client" not in cluster.cluster_roles(GOOD_GROUPS, existing, "node-b")
    alone = {"horovod_cluster": ["node-a"], "horovod_master": ["node-a"], "horovod_workers": []}
    assert "nfs_server" not in cluster.cluster_roles(alone, hostvars, "node-a")


@pytest.mark.parametrize(
    ("values", "named"),
    [
        ({"node_a": {"horovod_launch_controller": "mpi"}}, ["horovod_launch_controller: 'mpi'", "ssh_trust_mesh"]),
        ({"node_a": {"ssh_trust_mesh": True}}, ["ssh_trust_mesh: true trusts the workers"]),
        ({"node_a": {"horovod_launch_elastic": "true"}}, ["horovod_launch_elastic: true trusts the workers"]),
    ],
)
def test_modes_that_trust_the_workers_stop_in_the_gate_unless_trusted_with_a_warning(values, named):
    """The mpi controller, the key mesh and elastic runs let root on a worker act as root in the master's
    container: one setting says the workers are trusted (issue 42, finding 4)."""
    hostvars = good_hostvars(**values)
    report = cluster.cluster_report(GOOD_GROUPS, hostvars)
    refused = [e for e in report["errors"] if "trusts the workers" in e]
    assert [any(e.startswith(name) for e in refused) for name in named] == [True] * len(named), report
    assert all("horovod_trust_workers: true" in e for e in refused), refused
    assert not any("horovod_trust_workers" in w for w in report["warnings"])
    for host in hostvars.values():
        host["horovod_trust_workers"] = True
    report = cluster.cluster_report(GOOD_GROUPS, hostvars)
    assert report["errors"] == []
    warned = [w for w in report["warnings"] if w.startswith("horovod_trust_workers (on every host) is true")]
    assert warned and "root on every worker is trusted with root in the master's container" in warned[0], report
    assert all(mode in warned[0] for mode in ("horovod_launch_controller: mpi", "ssh_trust_mesh", "elastic"))


def test_trusting_the_workers_is_one_cluster_wide_switch():
    report = cluster.cluster_report(GOOD_GROUPS, good_hostvars(node_a={"horovod_trust_workers": "maybe"}))
    assert any(
        e.startswith("horovod_trust_workers (on node-a): 'maybe' is not true or false") for e in report["errors"]
    )
    report = cluster.cluster_report(GOOD_GROUPS, good_hostvars(node_a={"horovod_trust_workers": True}))
    assert any(e.startswith("horovod_trust_workers differs between hosts") for e in report["errors"]), report
    mapped = inputs("node-a", good_hostvars(), horovod_trust_workers="yes")
    assert mapped["horovod_launch"]["horovod_launch_trust_workers"] is True
    assert mapped["ssh_trust"]["ssh_trust_trust_workers"] is True
    assert inputs("node-b", good_hostvars())["ssh_trust"]["ssh_trust_trust_workers"] is False
