# Copyright: multinode.horovod contributors
# SPDX-License-Identifier: GPL-3.0-or-later
"""ssh_trust's input rules (plugins/plugin_utils/ssh_trust_rules.py): each rule fed its bad case."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from ansible_collections.multinode.horovod.plugins.filter.role_rules import role_problems
from ansible_collections.multinode.horovod.plugins.plugin_utils import ssh_trust_rules as rules

REPO = Path(__file__).resolve().parents[4]
A = {"name": "node-a", "address": "192.0.2.10"}
B = {"name": "node-b", "address": "192.0.2.11"}

GOOD: dict[str, Any] = {
    "ssh_trust_nodes": [A, B],
    "ssh_trust_master": "node-a",
    "ssh_trust_port": 12345,
    "ssh_trust_container_name": "horovod",
    "ssh_trust_replace_host_keys": [],
    "ssh_trust_connect_timeout": 10,
    "ssh_trust_mesh": False,
    "ssh_trust_trust_workers": False,
}


def problems(**changes: Any) -> list[tuple[str, str]]:
    return rules.problems({**GOOD, **{f"ssh_trust_{k}": v for k, v in changes.items()}})


def test_a_two_node_cluster_is_sound():
    assert problems() == []


def test_the_inputs_match_the_role_defaults():
    defaults = yaml.safe_load((REPO / "roles/ssh_trust/defaults/main.yml").read_text())
    for name in (
        "ssh_trust_port",
        "ssh_trust_container_name",
        "ssh_trust_replace_host_keys",
        "ssh_trust_connect_timeout",
        "ssh_trust_mesh",
        "ssh_trust_trust_workers",
    ):
        assert defaults[name] == GOOD[name], name


def test_the_assert_task_passes_every_input_the_rules_read():
    task = (REPO / "roles/ssh_trust/tasks/assert.yml").read_text()
    settings = yaml.safe_load((REPO / "roles/ssh_trust/vars/main.yml").read_text())["__ssh_trust_settings"]
    # The node list is read once per run (run_once) into __ssh_trust_node_list; the other inputs are the
    # role's settings (vars/main.yml), each the variable of its name.
    assert '__ssh_trust_node_list: "{{ ssh_trust_nodes }}"' in task
    assert task.count("{'ssh_trust_nodes': __ssh_trust_node_list} | combine(__ssh_trust_settings)") == 2  # once; again
    assert {"ssh_trust_nodes", *settings} == set(GOOD)
    for name, value in settings.items():
        assert value == f"{{{{ {name} }}}}", name


@pytest.mark.parametrize(
    "changes",
    [
        {"nodes": [A], "master": "node-a"},
        {"nodes": [A, {"name": "node_b", "address": "node-b.example.org"}]},
        {"nodes": [A, {"name": "node-b", "address": "2001:db8::11"}]},
        {"nodes": [A, {"name": "node-b", "address": "node-b"}]},
        {"port": 22},
        {"port": "2222"},
        {"port": 65535},
        {"replace_host_keys": ["node-b"]},
        {"connect_timeout": "3"},
    ],
)
def test_good_inputs_have_no_problems(changes):
    assert problems(**changes) == []


BAD = [
    # (changes, variable, fragment of the message)
    ({"nodes": []}, "nodes", "the list is empty; list every node of the cluster as {name, address}"),
    ({"nodes": "node-a"}, "nodes", "'node-a' is not a list"),
    ({"nodes": [A, "node-b"]}, "nodes", "node 1 ('node-b') is not a {name, address} dictionary"),
    ({"nodes": [A, {"name": "node-b"}]}, "nodes", "the node node-b has no address; give every node a name and"),
    ({"nodes": [A, {"name": "node-b", "address": " "}]}, "nodes", "the node node-b has no address"),
    ({"nodes": [A, {"name": "node-b", "address": None}]}, "nodes", "the node node-b has no address"),
    ({"nodes": [A, {"address": "192.0.2.11"}]}, "nodes", "node 1 has no name"),
    ({"nodes": [A, {"name": "", "address": "192.0.2.11"}]}, "nodes", "node 1 has no name"),
    ({"nodes": [A, {"name": "node b", "address": "192.0.2.11"}]}, "nodes", "the name 'node b' is not a host name"),
    ({"nodes": [A, {"name": "node-*", "address": "192.0.2.11"}]}, "nodes", "the name 'node-*' is not a host name"),
    ({"nodes": [A, {"name": "node-a", "address": "192.0.2.11"}]}, "nodes", "the name 'node-a' is used twice"),
    ({"nodes": [A, {"name": "node-b", "address": "192.0.2.10"}]}, "nodes", "node-a and node-b have the same address"),
    ({"nodes": [A, {"name": "node-b", "address": "10.0.0.0/8"}]}, "nodes", "'10.0.0.0/8' is not one host name"),
    ({"nodes": [A, {"name": "node-b", "address": "b c"}]}, "nodes", "'b c' is not one host name"),
    ({"nodes": [A, {"name": "node-b", "address": "b,c"}]}, "nodes", "'b,c' is not one host name"),
    ({"nodes": [A, {"name": "node-b", "address": "*"}]}, "nodes", "'*' is not one host name"),
    ({"nodes": [A, {"name": "node-b", "address": "[::1]"}]}, "nodes", "'[::1]' is not one host name"),
    # Names and addresses go verbatim into known_hosts lines: none may end one or hold a pattern.
    ({"nodes": [A, {"name": "node-b\n* ssh-ed25519", "address": "192.0.2.11"}]}, "nodes", "is not a host name"),
    ({"nodes": [A, {"name": "node-b\n", "address": "192.0.2.11"}]}, "nodes", "the name 'node-b\\n' is not a host"),
    ({"nodes": [A, {"name": "node-?", "address": "192.0.2.11"}]}, "nodes", "the name 'node-?' is not a host name"),
    ({"nodes": [A, {"name": "!node-b", "address": "192.0.2.11"}]}, "nodes", "the name '!node-b' is not a host name"),
    ({"nodes": [A, {"name": "b,c", "address": "192.0.2.11"}]}, "nodes", "the name 'b,c' is not a host name"),
    ({"nodes": [A, {"name": "node-b", "address": "192.0.2.11\n"}]}, "nodes", "'192.0.2.11\\n' is not one host name"),
    ({"nodes": [A, {"name": "node-b", "address": "::1\n* x"}]}, "nodes", "is not one host name"),
    ({"nodes": [A, {"name": "node-b", "address": "node-?"}]}, "nodes", "'node-?' is not one host name"),
    ({"nodes": [A, {"name": "node-b", "address": "!node-b"}]}, "nodes", "'!node-b' is not one host name"),
    ({"nodes": [A, {"name": "node-b", "address": 11}]}, "nodes", "11 is not one host name"),
    ({"master": "node-z"}, "master", "'node-z' is not a name in ssh_trust_nodes (node-a, node-b); set it to the node"),
    ({"master": ""}, "master", "'' is not a name in ssh_trust_nodes"),
    ({"master": ["node-a"]}, "master", "['node-a'] is not a name"),
    ({"port": 0}, "port", "0 is not a TCP port; use the containers' sshd port, from 1 to 65535"),
    ({"port": 70000}, "port", "70000 is not a TCP port"),
    ({"port": "ssh"}, "port", "'ssh' is not a TCP port"),
    ({"port": "70000"}, "port", "70000 is not a TCP port"),  # from -e: the number, not a quoted string
    ({"port": True}, "port", "True is not a TCP port"),
    ({"replace_host_keys": ["node-z"]}, "replace_host_keys", "'node-z' is not a name in ssh_trust_nodes"),
    ({"replace_host_keys": "node-b"}, "replace_host_keys", "'node-b' is not a list"),
    ({"container_name": "my horovod"}, "container_name", "'my horovod' is not a valid container name"),
    ({"container_name": ""}, "container_name", "'' is not a valid container name"),
    ({"connect_timeout": 0}, "connect_timeout", "0 is not a whole number of 1 or more"),
    ({"connect_timeout": "soon"}, "connect_timeout", "'soon' is not a whole number"),
]


@pytest.mark.parametrize(("changes", "variable", "fragment"), BAD, ids=[f"{b[1]}-{i}" for i, b in enumerate(BAD)])
def test_each_bad_input_is_named_with_its_fix(changes, variable, fragment):
    found = problems(**changes)
    assert [v for v, _unused in found] == [f"ssh_trust_{variable}"], found
    assert fragment in found[0][1], found
    assert not found[0][1].startswith("ssh_trust_"), "the caller prefixes the variable"


def test_a_node_without_a_name_or_address_names_both():
    found = problems(nodes=[A, {}])
    assert found == [
        ("ssh_trust_nodes", found[0][1]),
        ("ssh_trust_nodes", found[1][1]),
    ]
    assert "node 1 has no name" in found[0][1]
    assert "node 1 has no address" in found[1][1]


def test_the_master_is_not_judged_without_a_sound_node():
    assert [v for v, _unused in problems(nodes=[], master="node-z", replace_host_keys=["x"])] == ["ssh_trust_nodes"]


def test_only_the_node_list_is_required():
    assert rules.problems({"ssh_trust_nodes": [A], "ssh_trust_master": "node-a"}) == []
    assert [v for v, _unused in rules.problems({})] == ["ssh_trust_nodes"]


@pytest.mark.parametrize("inputs", [None, [], "x", 3])
def test_a_wrong_type_of_inputs_is_a_problem_not_an_exception(inputs):
    assert rules.problems(inputs)  # type: ignore[arg-type]


@pytest.mark.parametrize("value", [None, 3, True, "x", [None], [[1]], {"a": 1}, [{"name": [], "address": {}}]])
def test_any_value_of_any_input_gives_problems_not_exceptions(value):
    for name in GOOD:
        rules.problems({**GOOD, name: value})


def test_messages_match_the_ssh_tests_of_the_launch_scenario():
    """molecule/horovod_launch/ssh_bad_input.yml expects these words of the role (through role_problems)."""
    cases = yaml.safe_load((REPO / "molecule/horovod_launch/ssh_bad_input.yml").read_text())[0]["vars"][
        "ssh_test_cases"
    ]
    # The input rules' cases (a case naming a container is the role's host-side check, a task).
    expected = {case["expect"] for case in cases if case["role"] == "ssh_trust" and "container" not in case}
    nodes = [A, B]
    seen = {
        "\n".join(role_problems({**GOOD, "ssh_trust_nodes": []}, "ssh_trust")),
        "\n".join(role_problems({**GOOD, "ssh_trust_nodes": [A, {"name": "launch-b"}]}, "ssh_trust")),
        "\n".join(role_problems({**GOOD, "ssh_trust_port": 70000}, "ssh_trust")),
        "\n".join(role_problems({**GOOD, "ssh_trust_nodes": nodes, "ssh_trust_master": "node-z"}, "ssh_trust")),
        "\n".join(role_problems({**GOOD, "ssh_trust_mesh": True}, "ssh_trust")),
    }
    assert len(expected) == 5
    for words in expected:
        assert any(words in message for message in seen), words


@pytest.mark.parametrize("mesh", [True, "yes", "true"])
def test_the_key_mesh_is_refused_unless_the_workers_are_trusted(mesh):
    """Every worker's key logs in to the master's container as root: one switch says that is meant."""
    found = problems(mesh=mesh)
    assert [variable for variable, _message in found] == ["ssh_trust_mesh"], found
    assert found[0][1].startswith("true trusts the workers: every node gets a key authorised on every node")
    assert "horovod_trust_workers: true" in found[0][1] and "ssh_trust_trust_workers" in found[0][1]
    assert problems(mesh=mesh, trust_workers=True) == []
    assert problems(mesh=mesh, trust_workers="yes") == []
    assert problems(mesh=False, trust_workers=True) == []


@pytest.mark.parametrize("name", ["mesh", "trust_workers"])
def test_the_trust_switches_are_booleans(name):
    assert problems(**{name: "maybe"}) == [(f"ssh_trust_{name}", "'maybe' is not true or false")]


def test_the_role_warns_when_the_workers_are_trusted():
    task = (REPO / "roles/ssh_trust/tasks/assert.yml").read_text()
    assert "when: ssh_trust_mesh | bool and ssh_trust_trust_workers | bool" in task
    assert "root on any worker can log in as root to every container, the master's included" in " ".join(task.split())
