# Copyright: multinode.horovod contributors
# SPDX-License-Identifier: GPL-3.0-or-later
"""ssh_trust's decisions (plugins/filter/ssh_trust.py, plugins/module_utils/ssh_keys.py): the same results
as the role's former Jinja, and each decision's edge cases.

fixtures/ssh_trust_jinja.json holds what that Jinja returned (rendered with Ansible's Templar before it
was removed) for three sample clusters: the horovod_launch scenario's shape (gloo, port 12345, IPv4, a
changed key, a node that lost its known_hosts, foreign and stale lines in authorized_keys), a mesh on
port 22 with an IPv6 address and host names that resolve to several addresses (loopback among them),
and a node whose name is its address and does not resolve. Its per-node facts are in the shape the role
had then; ``node_vars`` puts them into the shape the role registers now (ssh_trust_info's result, the
JSON row of files/ssh_matrix.py).
"""

from __future__ import annotations

import base64
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from ansible.parsing.dataloader import DataLoader
from ansible.template import Templar
from checkout import REPO, load, trust_as_template

f = load("plugins/filter/ssh_trust.py", "ssh_trust_filters")
keys = load("plugins/module_utils/ssh_keys.py", "ssh_keys_for_filters")
info = load("plugins/modules/ssh_trust_info.py", "ssh_trust_info_for_filters")

FIXTURE = json.loads((Path(__file__).parent / "fixtures" / "ssh_trust_jinja.json").read_text())
CASES = FIXTURE["cases"]
MARK = "multinode-horovod"
PER_HOST = [(case, host) for case in CASES for host in case["inputs"]["hosts"]]
IDS = [f"{case['name']}:{host}" for case, host in PER_HOST]


def lookup(getent_results: list[dict[str, Any]]) -> Any:
    """A resolver that finds what the fixture's getent loop found."""
    found = {
        result["item"]: [
            a for a, v in result.get("ansible_facts", {}).get("getent_ahosts", {}).items() if v is not None
        ]
        for result in getent_results
    }
    return found.__getitem__


def row_json(lines: list[str]) -> str:
    """The row the fixture holds as the former script's lines (``node<TAB>ok|failed<TAB>error``), as JSON."""
    row = {}
    for line in lines:
        fields = line.split("\t")
        row[fields[0]] = "ok" if fields[1:2] == ["ok"] else " ".join(fields[2:]).strip() or "ssh failed"
    return json.dumps(row)


def node_vars(facts: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if "__ssh_trust_host_keys" in facts:
        out["__ssh_trust_read"] = {
            "host_keys": facts["__ssh_trust_host_keys"],
            "pinned_lines": facts["__ssh_trust_pinned_lines"],
            "authorized_lines": facts.get("__ssh_trust_authorized_lines", []),
            "bad_host_keys": [],
        }
    if "__ssh_trust_keypair" in facts:
        out["__ssh_trust_keypair"] = facts["__ssh_trust_keypair"]
    if "stdout_lines" in facts.get("__ssh_trust_row", {}):
        out["__ssh_trust_row"] = {"stdout": row_json(facts["__ssh_trust_row"]["stdout_lines"])}
    return out


def hostvars_of(case: dict[str, Any]) -> dict[str, Any]:
    return {name: node_vars(facts) for name, facts in case["inputs"]["hostvars"].items()}


def decisions(case: dict[str, Any], host: str) -> dict[str, Any]:
    """Every decision the role takes on `host`, under the name the fixture gives the Jinja's result."""
    inp = case["inputs"]
    hostvars, nodes = hostvars_of(case), inp["ssh_trust_nodes"]
    names = [node["name"] for node in nodes]
    owners = names if inp["ssh_trust_mesh"] in (True, "true", "yes") else [inp["ssh_trust_master"]]
    wanted = f.wanted_keys(hostvars, owners, MARK)
    sources, unresolved = info.sources([n["address"] for n in nodes], lookup(inp["resolved"]))
    pins = f.pins(hostvars, nodes, inp["ssh_trust_port"], inp["ssh_trust_master"])
    matrix = f.matrix(hostvars, names, owners, inp["ssh_trust_port"])
    return {
        "__ssh_trust_host_names": [n["address"] for n in nodes if not keys.IP_RE.match(n["address"])],
        "__ssh_trust_from": sources,
        "__ssh_trust_key_nodes": owners,
        "__ssh_trust_has_key": host in owners,
        "__ssh_trust_wanted_keys": wanted,
        "__ssh_trust_stale_keys": f.stale_keys(hostvars[host]["__ssh_trust_read"]["authorized_lines"], wanted, MARK),
        "__ssh_trust_failures": [line for source in owners for line in matrix["failures"][source]],
        "__ssh_trust_matrix": matrix["lines"][: len(names) + 2],
        "known_hosts_hosts": [keys.known_host([n["name"], n["address"]], inp["ssh_trust_port"]) for n in nodes],
        "keyless": pins["keyless"],
        "unresolved": unresolved,
        "changed": pins["changed"],
        "own_failures": matrix["failures"].get(host, []),
        "verify_print": matrix["lines"],
    }


# The fixture's results of helpers that are no decision of their own any more: the rows are the input
# here, and every node's pinned lines are what the changed nodes are found against.
INTERNAL = ("__ssh_trust_names", "verify_fail_msg", "__ssh_trust_rows", "__ssh_trust_all_pinned")


@pytest.mark.parametrize(("case", "host"), PER_HOST, ids=IDS)
def test_every_decision_is_what_the_jinja_returned(case, host):
    expected = {k: v for k, v in case["expected"][host].items() if k not in INTERNAL}
    # The getent loop's results held a skipped item that was no node's address ("x"); the module resolves
    # the nodes' addresses only.
    addresses = [node["address"] for node in case["inputs"]["ssh_trust_nodes"]]
    expected["unresolved"] = [name for name in expected["unresolved"] if name in addresses]
    assert decisions(case, host) == expected


def test_the_fixture_covers_the_edge_cases():
    """The samples hold what the edge cases need, so the comparison above means something."""
    by_name = {case["name"]: case["expected"] for case in CASES}
    gloo, mesh, odd = (
        by_name[n] for n in ("gloo-ipv4-port-12345", "mesh-port-22-ipv6-host-names", "name-equals-address-unresolved")
    )
    assert gloo["launch-a"]["changed"] == ["launch-b"] and gloo["launch-a"]["__ssh_trust_stale_keys"]
    assert mesh["node-a"]["changed"] == ["node-c"] and mesh["node-a"]["keyless"] == ["node-d"]
    assert mesh["node-a"]["known_hosts_hosts"][1] == "node-b,2001:db8::11"
    assert odd["h1"]["unresolved"] == ["h1", "x"] and odd["h1"]["known_hosts_hosts"][0] == "[h1]:2200"


# --- the messages, rendered from the role's own task text ------------------------------------------


def render(text: str, variables: dict[str, Any]) -> Any:
    trusted = {k: trust_as_template(v) if isinstance(v, str) else v for k, v in variables.items()}
    return Templar(loader=DataLoader(), variables=trusted).template(trust_as_template(text))


def role_task(path: str, name: str) -> dict[str, Any]:
    tasks = yaml.safe_load((REPO / "roles/ssh_trust/tasks" / path).read_text())
    return next(task for task in tasks if task["name"] == name)


@pytest.mark.parametrize(("case", "host"), PER_HOST, ids=IDS)
def test_the_verification_message_is_unchanged(case, host):
    task = role_task("verify.yml", "Check that this container reaches every node with the pinned host key")
    found = decisions(case, host)
    variables = {
        "inventory_hostname": host,
        "__ssh_trust_changed": found["changed"],
        "__ssh_trust_changed_text": task["vars"]["__ssh_trust_changed_text"],
        "__ssh_trust_own_failures": found["own_failures"],
    }
    assert render(task["ansible.builtin.assert"]["fail_msg"], variables) == case["expected"][host]["verify_fail_msg"]


def test_a_changed_key_is_named_in_the_verification_message():
    assert "The host key of launch-b differs" in CASES[0]["expected"]["launch-a"]["verify_fail_msg"]


# --- host key files and pinned lines: one key each, nothing else reaches known_hosts -------------


def key(kind: str, seed: str = "k", embedded: str | None = None) -> str:
    """``"type blob"`` of a public key of type `kind` as ssh-keygen writes one."""

    def string(text: str) -> bytes:
        return len(text.encode()).to_bytes(4, "big") + text.encode()

    return f"{kind} {base64.b64encode(string(embedded or kind) + string(seed)).decode()}"


ED_A, ED_K, RSA_B = key("ssh-ed25519", "A"), key("ssh-ed25519", "K"), key("ssh-rsa", "B")


def read_node(tmp_path: Path, name: str, files: dict[str, str]) -> dict[str, Any]:
    """What the role registers on a node whose host key directory (sshd/) and ssh directory (ssh/) hold
    `files`: ssh_trust_info's result on a tree of the node's own."""
    root = tmp_path / name
    for path, text in files.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text)
    read = info.describe(str(root / "sshd"), str(root / "ssh"), str(root / "ssh" / "id_ed25519"), [], None)
    return {"__ssh_trust_read": read}


PAIR = [{"name": "node-a", "address": "192.0.2.10"}, {"name": "node-b", "address": "192.0.2.11"}]


def test_a_host_key_file_with_a_second_line_pins_no_wildcard_and_is_refused(tmp_path):
    """Root on node-b writes a file of its own host key directory whose second line, copied as it was,
    would be a known_hosts line of its own on every node: that key for any host."""
    hostvars = {
        "node-a": read_node(tmp_path, "node-a", {"sshd/ssh_host_ed25519_key.pub": f"{ED_A} root@a\n"}),
        "node-b": read_node(
            tmp_path,
            "node-b",
            {"sshd/ssh_host_rsa_key.pub": f"{RSA_B} root@b\n", "sshd/ssh_host_foo_key.pub": f"ssh-foo AAAA\n* {ED_K}"},
        ),
    }
    found = f.pins(hostvars, PAIR, 12345, "node-a")
    lines = "\n".join(found["known_hosts"]).split("\n")
    assert lines == [f"[node-a]:12345,[192.0.2.10]:12345 {ED_A}", f"[node-b]:12345,[192.0.2.11]:12345 {RSA_B}"]
    planted = tmp_path / "node-b" / "sshd" / "ssh_host_foo_key.pub"
    assert found["bad_host_keys"] == [f"node-b: {planted} holds 2 lines, not one key on one line"]


def test_bad_host_keys_name_every_node_and_file_and_skip_nodes_not_read(tmp_path):
    nodes = [*PAIR, {"name": "node-c", "address": "192.0.2.12"}]
    hostvars = {
        "node-a": read_node(tmp_path, "node-a", {"sshd/ssh_host_ed25519_key.pub": "ssh-foo AAAA\n"}),
        "node-b": read_node(tmp_path, "node-b", {"sshd/ssh_host_x_key.pub": f"{ED_A}\n{ED_K}\n"}),
        "node-c": {},  # left out of the run (--limit)
    }
    assert f.pins(hostvars, nodes, 12345, "node-a")["bad_host_keys"] == [
        f"node-a: {tmp_path}/node-a/sshd/ssh_host_ed25519_key.pub holds a key of type 'ssh-foo', not one of "
        + ", ".join(keys.KEY_TYPES),
        f"node-b: {tmp_path}/node-b/sshd/ssh_host_x_key.pub holds 2 lines, not one key on one line",
    ]


@pytest.mark.parametrize(
    "line",
    [
        "[node-b]:12345 ssh-ed25519",  # no blob: the line as a whole would have been the key
        "[node-b]:12345,* ssh-foo AAAA",
        "[node-b]:12345 ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAABEFBQUE=*C3Nz",
        "[node-b]:12345 " + key("ssh-ed25519", "B", embedded="ssh-rsa"),
        "[node-b]:12345 *",
    ],
)
def test_a_pinned_line_without_one_known_key_is_not_read_and_never_written_again(tmp_path, line):
    """A known_hosts line the role did not write (it writes only "HOSTS TYPE BLOB"): a node this run
    left out keeps only keys pinned for it, so such a line must not become its key."""
    files = {
        "sshd/ssh_host_ed25519_key.pub": f"{ED_A}\n",
        "ssh/known_hosts": f"[node-b]:12345,[192.0.2.11]:12345 {RSA_B}\n{line}\n",
    }
    hostvars = {"node-a": read_node(tmp_path, "node-a", files), "node-b": {}}  # node-b: left out (--limit)
    assert hostvars["node-a"]["__ssh_trust_read"]["pinned_lines"] == [f"[node-b]:12345,[192.0.2.11]:12345 {RSA_B}"]
    assert f.pins(hostvars, PAIR, 12345, "node-a")["known_hosts"] == [
        f"[node-a]:12345,[192.0.2.10]:12345 {ED_A}",
        f"[node-b]:12345,[192.0.2.11]:12345 {RSA_B}",
    ]


# --- keys ----------------------------------------------------------------------------------------


def test_wanted_keys_carry_the_marker_and_skip_keys_not_made_yet():
    hostvars = {
        "node-a": {"__ssh_trust_keypair": {"public_key": "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAA0FBQQ=="}},
        "node-b": {"__ssh_trust_keypair": {"public_key": ""}},
        "node-c": {"__ssh_trust_keypair": {"changed": True}},  # check mode: no key yet
    }
    assert f.wanted_keys(hostvars, ["node-a", "node-b", "node-c", "node-d"], MARK) == [
        f"ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAA0FBQQ== {MARK}:node-a"
    ]


def test_own_keys_are_the_lines_whose_last_word_is_the_marker():
    lines = [
        f'from="192.0.2.10" ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAB0FBQUFvbmU= {MARK}:node-a',
        "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAB0FBQUF0d28= operator@elsewhere",
        f"ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAACUFBQUF0aHJlZQ== {MARK}:node-b trailing",
        f"# {MARK}:node-a",
        f"ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAACEFBQUFmb3Vy {MARK}:node-c  ",
    ]
    assert keys.own_keys(lines, MARK) == [lines[0], lines[3], lines[4]]
    # Teardown: nothing is wanted any more, every line of the role's goes.
    assert f.stale_keys(lines, [], MARK) == [lines[0], lines[3], lines[4]]
    assert f.stale_keys([f"ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAABG5vbmU= {MARK}:x"], [], MARK) == [
        f"ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAABG5vbmU= {MARK}:x"
    ]


def test_stale_keys_are_the_roles_lines_for_keys_no_longer_wanted():
    wanted = [f"ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAA0FBQQ== {MARK}:node-a"]
    lines = [
        f'from="192.0.2.10" ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAA0FBQQ== {MARK}:node-a',  # wanted
        f'from="192.0.2.10" ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAA0RERA== {MARK}:node-d',  # a node that left
        f"ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAA09MRA== {MARK}:node-a  ",  # node-a's key before it was made anew
        "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAABFVTRVI= someone@laptop",  # foreign
        f"ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAA0VFRQ== x-{MARK}:node-e",  # foreign: the marker is not a word of its own
        f"ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAA0ZGRg== {MARK}:node-f more",  # foreign: the marker is not the last word
    ]
    assert f.stale_keys(lines, wanted, MARK) == [lines[1], lines[2]]


def test_no_foreign_line_is_ever_stale():
    foreign = [
        "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAABFVTRVI= someone@laptop",
        "ssh-rsa AAAAB3NzaC1yc2EAAAABWA==",
        'from="10.0.0.1" ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAAVk= deploy',
    ]
    assert f.stale_keys(foreign, [], MARK) == []
    assert f.stale_keys(foreign, [f"ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAA0FBQQ== {MARK}:a"], MARK) == []


# --- pins: a run on some nodes (--limit) ---------------------------------------------------------


def node(host_keys: list[str], pinned: list[str] | None = None) -> dict[str, Any]:
    return {"__ssh_trust_read": {"host_keys": host_keys, "pinned_lines": pinned or [], "bad_host_keys": []}}


def test_keyless_names_the_nodes_without_host_keys():
    hostvars = {"a": node(["ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAAUE="]), "b": node([])}
    nodes = [{"name": "a", "address": "10.0.0.1"}, {"name": "b", "address": "10.0.0.2"}]
    assert f.pins(hostvars, nodes, 22, "a")["keyless"] == ["b"]


# A run on the master and a new worker (--limit) while the other workers train: those were not read.
LIMITED_NODES = [
    {"name": "master", "address": "10.0.0.1"},
    {"name": "worker1", "address": "10.0.0.2"},
    {"name": "new", "address": "10.0.0.9"},
]
LIMITED = {
    "master": node(
        ["ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAAU0="],
        [
            "[master]:12345,[10.0.0.1]:12345 ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAAU0=",
            "[10.0.0.2]:12345 ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAAlcx",
        ],
    ),
    "worker1": {},
    "new": node(["ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAAU4="]),
}


def with_pins(name: str, pinned: list[str], hostvars: dict[str, Any] | None = None) -> dict[str, Any]:
    hostvars = LIMITED if hostvars is None else hostvars
    read = {**hostvars[name]["__ssh_trust_read"], "pinned_lines": pinned}
    return {**hostvars, name: {"__ssh_trust_read": read}}


def test_a_node_left_out_of_the_run_keeps_the_key_pinned_for_it():
    found = f.pins(LIMITED, LIMITED_NODES, 12345, "master")
    assert found["known_hosts"] == [
        "[master]:12345,[10.0.0.1]:12345 ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAAU0=",
        "[worker1]:12345,[10.0.0.2]:12345 ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAAlcx",
        "[new]:12345,[10.0.0.9]:12345 ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAAU4=",
    ]
    # Not read, so not compared: its pin is kept, not reported as changed.
    assert (found["keyless"], found["changed"]) == ([], [])


def test_a_node_left_out_that_nobody_pins_is_keyless():
    assert f.pins(with_pins("master", []), LIMITED_NODES, 12345, "master")["keyless"] == ["worker1"]


EVIL, EVIL_RSA = key("ssh-ed25519", "evil"), key("ssh-rsa", "evil")


def test_a_workers_pin_for_a_node_left_out_is_pinned_nowhere():
    """Root on the worker `new` writes its own known_hosts: a key for worker2, which the master does not
    pin, and a second key for worker1, which it does. Neither reaches the lines every node writes."""
    nodes = [*LIMITED_NODES, {"name": "worker2", "address": "10.0.0.3"}]
    hostvars = {**with_pins("new", [f"worker2 {EVIL}", f"[10.0.0.2]:12345 {EVIL_RSA}"]), "worker2": {}}
    found = f.pins(hostvars, nodes, 12345, "master")
    assert found["keyless"] == ["worker2"]
    assert found["known_hosts"] == [
        "[master]:12345,[10.0.0.1]:12345 ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAAU0=",
        "[worker1]:12345,[10.0.0.2]:12345 ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAAlcx",
        "[new]:12345,[10.0.0.9]:12345 ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAAU4=",
    ]


def test_the_masters_pin_for_a_node_left_out_is_kept_whatever_the_workers_pin():
    """A worker of the run that lost its known_hosts, or pins another key: the master's pin is kept, in
    the one set of lines every node of the run writes."""
    for pinned in ([], [f"worker1 {EVIL}"]):
        found = f.pins(with_pins("new", pinned), LIMITED_NODES, 12345, "master")
        assert "[worker1]:12345,[10.0.0.2]:12345 ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAAlcx" in found["known_hosts"]
        assert found["keyless"] == []


def test_a_run_that_did_not_read_the_master_keeps_no_pins_for_nodes_left_out():
    """The master unreachable in a play without any_errors_fatal: a worker still pins worker1, but
    nothing is kept, and the master and worker1 are named (the role stops) instead."""
    hostvars = {**with_pins("new", ["[10.0.0.2]:12345 ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAAlcx"]), "master": {}}
    assert f.pins(hostvars, LIMITED_NODES, 12345, "master")["keyless"] == ["master", "worker1"]


def test_a_node_of_the_run_with_a_new_key_is_still_changed():
    hostvars = {
        **LIMITED,
        "master": node(
            ["ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAAk0y"], LIMITED["master"]["__ssh_trust_read"]["pinned_lines"]
        ),
    }
    assert f.pins(hostvars, LIMITED_NODES, 12345, "master")["changed"] == ["master"]


# --- known_hosts ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("hosts", "port", "field"),
    [
        (["node-a", "192.0.2.10"], 12345, "[node-a]:12345,[192.0.2.10]:12345"),
        (["node-a", "192.0.2.10"], "12345", "[node-a]:12345,[192.0.2.10]:12345"),
        (["node-a", "192.0.2.10"], 22, "node-a,192.0.2.10"),
        (["node-a", "192.0.2.10"], "22", "node-a,192.0.2.10"),
        (["node-b", "2001:db8::11"], 22, "node-b,2001:db8::11"),
        (["node-b", "2001:db8::11"], 2222, "[node-b]:2222,[2001:db8::11]:2222"),
        (["h1", "h1"], 2200, "[h1]:2200"),
    ],
)
def test_known_host_pattern_for_the_port(hosts, port, field):
    assert keys.known_host(hosts, port) == field


def test_known_hosts_lines_are_one_per_node_and_key():
    nodes = [{"name": "a", "address": "10.0.0.1"}, {"name": "b", "address": "b"}, {"name": "c", "address": "h"}]
    hostvars = {
        "a": node(
            [
                "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAABEFBQTE=",
                "ecdsa-sha2-nistp256 AAAAE2VjZHNhLXNoYTItbmlzdHAyNTYAAAAEQUFBMg==",
            ]
        ),
        "b": node([]),
        "c": node(["ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAA0NDQw=="]),
    }
    assert f.pins(hostvars, nodes, 2222, "a")["known_hosts"] == [
        "[a]:2222,[10.0.0.1]:2222 ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAABEFBQTE=",
        "[a]:2222,[10.0.0.1]:2222 ecdsa-sha2-nistp256 AAAAE2VjZHNhLXNoYTItbmlzdHAyNTYAAAAEQUFBMg==",
        "[c]:2222,[h]:2222 ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAA0NDQw==",
    ]
    assert f.pins({"b": node(["ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAAUI="])}, nodes[1:2], 22, "b")["known_hosts"] == [
        "b ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAAUI="
    ]


ED, ED2, RSA, EC = (
    "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAAkUx",
    "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAAkUy",
    "ssh-rsa AAAAB3NzaC1yc2EAAAACUjE=",
    "ecdsa-sha2-nistp256 AAAAE2VjZHNhLXNoYTItbmlzdHAyNTYAAAACQzE=",
)


@pytest.mark.parametrize(
    ("pinned", "current", "is_changed"),
    [
        ([ED, RSA], [ED, RSA], False),
        ([ED], [ED, EC], False),  # a key type added is not a change
        ([ED, RSA], [ED], False),  # a type no longer offered, the others the same
        ([ED, RSA], [ED2, RSA], True),  # a key of a type still offered changed
        ([RSA], [ED], True),  # none of the pinned keys is offered any more
        ([ED], [], True),
        ([], [ED], False),  # nothing pinned: a new node
    ],
)
def test_key_changed_is_type_aware(pinned, current, is_changed):
    assert keys.key_changed(pinned, current) is is_changed


def test_changed_finds_pins_by_name_or_address_on_any_port_in_any_nodes_file():
    nodes = [{"name": "a", "address": "192.0.2.1"}, {"name": "b", "address": "2001:db8::2"}]
    # b lost its known_hosts; a pinned b's key by address on another port.
    hostvars = {"a": node([ED], ["[a]:22,[192.0.2.1]:22 " + ED, "[2001:db8::2]:2222 " + ED]), "b": node([ED2])}
    assert f.pins(hostvars, nodes, 22, "a")["changed"] == ["b"]
    hostvars["a"] = node([ED], ["192.0.2.1 " + ED, "b,2001:db8::2 " + ED2])  # port 22, bare
    assert f.pins(hostvars, nodes, 22, "a")["changed"] == []


def test_changed_ignores_other_hosts_hashed_and_marked_lines():
    nodes = [{"name": "a", "address": "10.0.0.1"}]
    lines = ["ab,10.0.0.11 " + ED2, "[10.0.0.1x]:22 " + ED2, "|1|salt|hash " + ED2, "@revoked a " + ED2]
    assert f.pins({"a": node([ED], lines)}, nodes, 22, "a")["changed"] == []
    assert f.pins({"a": node([ED], [*lines, "x,[a]:1,y " + ED2])}, nodes, 22, "a")["changed"] == ["a"]


# --- verify.yml ----------------------------------------------------------------------------------


def row(result: dict[str, str] | None = None, **extra: Any) -> dict[str, Any]:
    return {"__ssh_trust_row": {"stdout": json.dumps(result), **extra} if result is not None else extra}


def test_failures_name_each_pair_and_the_pairs_that_did_not_run():
    hostvars = {
        "a": row({"a": "ok", "b": "Permission denied (publickey)."}),
        "b": row(skipped=True),
        "c": row(stdout="not JSON"),
    }
    assert f.matrix(hostvars, ["a", "b"], ["a", "b"], 22)["failures"] == {
        "a": ["a -> b: Permission denied (publickey)."],
        "b": ["b -> a: no result (the ssh loop did not run)", "b -> b: no result (the ssh loop did not run)"],
    }
    assert f.matrix(hostvars, ["a"], ["c"], 22)["failures"] == {"c": ["c -> a: no result (the ssh loop did not run)"]}


def test_matrix_text_mesh_off():
    hostvars = {"node-a": row({"node-a": "ok", "node-b": "Host key verification failed."})}
    assert f.matrix(hostvars, ["node-a", "node-b"], ["node-a"], 12345)["lines"] == [
        "ssh from the container of (row) to (column), port 12345:",
        "        node-a  node-b  ",
        "node-a  ok      FAILED  ",
        "node-b  -       -       (no key: ssh_trust_mesh is false)",
        "node-a -> node-b: Host key verification failed.",
    ]


def test_matrix_text_mesh_on_with_a_missing_row():
    hostvars = {"a": row({"a": "ok", "bb": "ok"}), "bb": row(skipped=True)}
    assert f.matrix(hostvars, ["a", "bb"], ["a", "bb"], 22)["lines"][:4] == [
        "ssh from the container of (row) to (column), port 22:",
        "    a   bb  ",
        "a   ok  ok  ",
        "bb  -   -   ",
    ]


def test_the_filters_are_registered():
    names = {"pins", "wanted_keys", "stale_keys", "matrix"}
    assert set(f.FilterModule().filters()) == {f"ssh_trust_{name}" for name in names}


def test_vars_main_holds_constants_only():
    """Every template in vars/main.yml names only other variables of that file, or (the settings the input
    check reads) the role's own inputs: nothing a play or a host sets."""
    constants = yaml.safe_load((REPO / "roles/ssh_trust/vars/main.yml").read_text())
    inputs = set(yaml.safe_load((REPO / "roles/ssh_trust/defaults/main.yml").read_text()))
    for name, value in constants.items():
        assert "{%" not in str(value), name
        used = {expression.strip() for expression in re.findall(r"{{(.*?)}}", str(value))}
        allowed = set(constants) | (inputs if name == "__ssh_trust_settings" else set())
        assert used <= allowed, (name, used - allowed)


# --- the role's own tasks, through ansible-playbook ----------------------------------------------
# The decisions above, called as the role's tasks call them: their text taken from the role, hostvars
# Ansible's own, the facts those of the samples. Only the tasks that read no host run here.

ROLE_TASKS = {
    "assert.yml": ["Read the node list once for the whole play", "Name the nodes and those that hold a key"],
    "pins.yml": ["Find nodes whose host key differs from the pinned one"],
    "main.yml": [
        "Collect the key nodes' public keys",
        "Decide which keys to remove",
    ],
    "verify.yml": ["Work out the ssh matrix", "Print the ssh matrix"],
}
FACTS = ("__ssh_trust_read", "__ssh_trust_keypair", "__ssh_trust_row")


def role_playbook(case: dict[str, Any], out: Path) -> list[dict[str, Any]]:
    inp = case["inputs"]
    sample = hostvars_of(case)
    tasks: list[dict[str, Any]] = [
        {
            "name": "Take the sample's facts",
            "ansible.builtin.set_fact": {
                fact: f"{{{{ sample[inventory_hostname]['{fact}'] | default(omit) }}}}" for fact in FACTS
            },
        }
    ]
    for path, names in ROLE_TASKS.items():
        tasks += [role_task(path, name) for name in names]
    tasks[-1] = {**tasks[-1], "register": "__printed"}
    tasks.append(role_task("verify.yml", "Check that this container reaches every node with the pinned host key"))
    tasks[-1] = {**tasks[-1], "register": "__checked", "ignore_errors": True}
    tasks.append(
        {
            "name": "Write what was decided",
            "ansible.builtin.copy": {
                "dest": f"{out}/{{{{ inventory_hostname }}}}.json",
                "mode": "0600",
                "content": "{{ __decided | to_json }}",
            },
            "vars": {
                "__decided": {
                    "names": "{{ __ssh_trust_names }}",
                    "key_nodes": "{{ __ssh_trust_key_nodes }}",
                    "has_key": "{{ inventory_hostname in __ssh_trust_key_nodes }}",
                    "changed": "{{ __ssh_trust_changed }}",
                    "wanted": "{{ __ssh_trust_wanted_keys }}",
                    "stale": "{{ __ssh_trust_stale_keys }}",
                    # run_once: the first host printed it.
                    "printed": "{{ hostvars[ansible_play_hosts[0]]['__printed'].msg }}",
                    "checked": "{{ __checked.msg }}",
                    "known_hosts": "{{ lookup('ansible.builtin.template', known_hosts) }}",
                },
            },
        }
    )
    return [
        {
            "name": "ssh_trust's decisions",
            "hosts": "all",
            "gather_facts": False,
            "vars": {
                # The role's defaults, then the sample's inputs.
                **yaml.safe_load((REPO / "roles/ssh_trust/defaults/main.yml").read_text()),
                "sample": sample,
                "ssh_trust_nodes": inp["ssh_trust_nodes"],
                "ssh_trust_master": inp["ssh_trust_master"],
                "ssh_trust_mesh": inp["ssh_trust_mesh"],
                "ssh_trust_port": inp["ssh_trust_port"],
                "ssh_trust_replace_host_keys": [],
                "known_hosts": str(REPO / "roles/ssh_trust/templates/known_hosts.j2"),
            },
            # The role's constants, as the role has them.
            "vars_files": [str(REPO / "roles/ssh_trust/vars/main.yml")],
            "tasks": tasks,
        }
    ]


@pytest.mark.skipif(not shutil.which("ansible-playbook"), reason="ansible-playbook is not on PATH")
@pytest.mark.parametrize("case", CASES[:2], ids=[case["name"] for case in CASES[:2]])
def test_the_roles_tasks_decide_as_the_jinja_did(case, tmp_path):
    inp = case["inputs"]
    (tmp_path / "play.yml").write_text(yaml.safe_dump(role_playbook(case, tmp_path), sort_keys=False))
    hosts = {
        host: {"ansible_connection": "local", "ansible_python_interpreter": sys.executable} for host in inp["hosts"]
    }
    (tmp_path / "hosts.yml").write_text(yaml.safe_dump({"all": {"hosts": hosts}}))
    env = dict(os.environ, ANSIBLE_NOCOLOR="1")  # the collections path: conftest.py
    run = subprocess.run(
        ["ansible-playbook", "-i", str(tmp_path / "hosts.yml"), str(tmp_path / "play.yml")],
        cwd=REPO, env=env, capture_output=True, text=True, check=False, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-2000:]
    for host in inp["hosts"]:
        got = json.loads((tmp_path / f"{host}.json").read_text())
        want = case["expected"][host]
        assert got["names"] == want["__ssh_trust_names"]
        assert got["key_nodes"] == want["__ssh_trust_key_nodes"]
        assert got["has_key"] is want["__ssh_trust_has_key"]
        assert got["changed"] == want["changed"]
        assert got["wanted"] == want["__ssh_trust_wanted_keys"]
        assert got["stale"] == want["__ssh_trust_stale_keys"]
        assert got["printed"] == want["verify_print"]
        passed = f"{host} reaches every node on port {inp['ssh_trust_port']} with the pinned host key."
        assert got["checked"] == (want["verify_fail_msg"] if want["own_failures"] or want["changed"] else passed)
        pinned = [
            f"{field} {key}"
            for node, field in zip(inp["ssh_trust_nodes"], want["known_hosts_hosts"], strict=True)
            for key in inp["hostvars"][node["name"]]["__ssh_trust_host_keys"]
        ]
        assert [line for line in got["known_hosts"].splitlines() if line and not line.startswith("#")] == pinned


INPUT_CHECK = [
    "Read the node list once for the whole play",
    "Check the node list once, with the first host's settings",
    "Check the role's inputs",
]


def run_input_check(
    tmp_path: Path, inventory: dict[str, Any], between: list[dict[str, Any]] | None = None
) -> subprocess.CompletedProcess[str]:
    """tasks/assert.yml's input checks on local hosts: the role's defaults and the cluster's node list as
    group variables, a host's own settings as its host variables (which beat them, as in an inventory);
    `between`: tasks run before the per-host check."""
    tasks = [role_task("assert.yml", name) for name in INPUT_CHECK]
    play = {
        "name": "ssh_trust's input check",
        "hosts": "all",
        "gather_facts": False,
        "vars_files": [str(REPO / "roles/ssh_trust/vars/main.yml")],
        "tasks": [*tasks[:-1], *(between or []), tasks[-1]],
    }
    (tmp_path / "play.yml").write_text(yaml.safe_dump([play], sort_keys=False))
    (tmp_path / "hosts.yml").write_text(yaml.safe_dump(inventory))
    env = dict(os.environ, ANSIBLE_NOCOLOR="1")  # the collections path: conftest.py
    return subprocess.run(
        ["ansible-playbook", "-i", str(tmp_path / "hosts.yml"), str(tmp_path / "play.yml")],
        cwd=REPO, env=env, capture_output=True, text=True, check=False, stdin=subprocess.DEVNULL,
    )  # fmt: skip


def input_check_inventory(nodes: list[dict[str, Any]], **host_vars: dict[str, Any]) -> dict[str, Any]:
    defaults = yaml.safe_load((REPO / "roles/ssh_trust/defaults/main.yml").read_text())
    local = {"ansible_connection": "local", "ansible_python_interpreter": sys.executable}
    return {
        "all": {
            "vars": {**defaults, "ssh_trust_nodes": nodes, "ssh_trust_master": "h1"},
            "hosts": {f"h{i}": {**local, **host_vars.get(f"h{i}", {})} for i in (1, 2, 3)},
        }
    }


CHECKED_NODES = [{"name": f"h{i}", "address": f"192.0.2.{i}"} for i in (1, 2, 3)]


def task_lines(output: str, task: str) -> list[str]:
    """The result lines ("ok: [h1]", "skipping: [h2]", "fatal: [h3]: ..."), sorted, printed under a task."""
    section = output.split(f"TASK [{task}]", 1)[1].split("\nTASK [", 1)[0].split("\nPLAY RECAP", 1)[0]
    return sorted(line for line in section.splitlines() if re.match(r"(ok|skipping|fatal|changed): \[", line))


@pytest.mark.skipif(not shutil.which("ansible-playbook"), reason="ansible-playbook is not on PATH")
def test_the_node_list_is_checked_once_and_every_host_checks_its_inputs(tmp_path):
    run = run_input_check(tmp_path, input_check_inventory(CHECKED_NODES))
    assert run.returncode == 0, run.stdout[-4000:]
    assert task_lines(run.stdout, INPUT_CHECK[1]) == ["ok: [h1]"]
    # Nothing to add on hosts that share the first host's settings.
    assert task_lines(run.stdout, INPUT_CHECK[2]) == ["skipping: [h1]", "skipping: [h2]", "skipping: [h3]"]


@pytest.mark.skipif(not shutil.which("ansible-playbook"), reason="ansible-playbook is not on PATH")
def test_a_host_whose_own_sound_setting_differs_checks_again_and_passes(tmp_path):
    run = run_input_check(tmp_path, input_check_inventory(CHECKED_NODES, h3={"ssh_trust_connect_timeout": 30}))
    assert run.returncode == 0, run.stdout[-4000:]
    assert task_lines(run.stdout, INPUT_CHECK[2]) == ["ok: [h3]", "skipping: [h1]", "skipping: [h2]"]


@pytest.mark.skipif(not shutil.which("ansible-playbook"), reason="ansible-playbook is not on PATH")
def test_a_host_with_the_first_hosts_settings_takes_the_result_of_the_check_made_once(tmp_path):
    """A problem put into the once-made result fails every host with those settings, and not the host
    whose own setting differs (it checks the node list itself): the others did not check it again."""
    injected = {
        "name": "Put a problem into the result of the check made once",
        "ansible.builtin.set_fact": {"__ssh_trust_checked_problems": ["ssh_trust_nodes: injected"]},
        "run_once": True,
    }
    inventory = input_check_inventory(CHECKED_NODES, h3={"ssh_trust_connect_timeout": 30})
    run = run_input_check(tmp_path, inventory, between=[injected])
    lines = task_lines(run.stdout, INPUT_CHECK[2])
    assert [line[:12] for line in lines] == ["fatal: [h1]:", "fatal: [h2]:", "ok: [h3]"], lines
    assert "ssh_trust_nodes: injected" in run.stdout


@pytest.mark.skipif(not shutil.which("ansible-playbook"), reason="ansible-playbook is not on PATH")
def test_a_bad_node_list_stops_every_host_with_the_message(tmp_path):
    run = run_input_check(tmp_path, input_check_inventory([*CHECKED_NODES, {"name": "h1", "address": "192.0.2.9"}]))
    assert run.returncode != 0
    lines = task_lines(run.stdout, INPUT_CHECK[2])
    assert [line[:12] for line in lines] == ["fatal: [h1]:", "fatal: [h2]:", "fatal: [h3]:"], lines
    assert "ssh_trust_nodes: the name 'h1' is used twice" in run.stdout


@pytest.mark.skipif(not shutil.which("ansible-playbook"), reason="ansible-playbook is not on PATH")
def test_a_host_whose_own_setting_is_bad_is_stopped(tmp_path):
    run = run_input_check(tmp_path, input_check_inventory(CHECKED_NODES, h2={"ssh_trust_port": 0}))
    assert run.returncode != 0
    lines = task_lines(run.stdout, INPUT_CHECK[2])
    assert [line[:12] for line in lines] == ["fatal: [h2]:", "skipping: [h", "skipping: [h"], lines
    assert "ssh_trust_port: 0 is not a TCP port" in run.stdout


REFUSAL = "Refuse host key files that are not one public key each"


def run_pins(
    tmp_path: Path, files: dict[str, dict[str, str]], left_out: int = 0, after: list[dict[str, Any]] | None = None
) -> subprocess.CompletedProcess[str]:
    """tasks/pins.yml on local hosts h1-h3, each having read (ssh_trust_info) the files `files` gives it;
    `left_out` more nodes (h4, ...) in the inventory and the node list that --limit leaves out; `after`:
    tasks run after."""
    tasks = [
        role_task("assert.yml", "Read the node list once for the whole play"),
        *yaml.safe_load((REPO / "roles/ssh_trust/tasks/pins.yml").read_text()),
        *(after or []),
    ]
    play = {
        "name": "ssh_trust's pins",
        "hosts": "all",
        "gather_facts": False,
        "vars_files": [str(REPO / "roles/ssh_trust/vars/main.yml")],
        "tasks": tasks,
    }
    extra = [{"name": f"h{i}", "address": f"192.0.2.{i}"} for i in range(4, 4 + left_out)]
    inventory = input_check_inventory([*CHECKED_NODES, *extra])
    for name, host_vars in inventory["all"]["hosts"].items():
        host_vars.update(read_node(tmp_path / "trees", name, files[name]))
    inventory["all"]["hosts"].update({node["name"]: {"ansible_connection": "local"} for node in extra})
    (tmp_path / "play.yml").write_text(yaml.safe_dump([play], sort_keys=False))
    (tmp_path / "hosts.yml").write_text(yaml.safe_dump(inventory))
    env = dict(os.environ, ANSIBLE_NOCOLOR="1")  # the collections path: conftest.py
    return subprocess.run(
        ["ansible-playbook", "-i", str(tmp_path / "hosts.yml"), str(tmp_path / "play.yml"), "--limit", "h1,h2,h3"],
        cwd=REPO, env=env, capture_output=True, text=True, check=False, stdin=subprocess.DEVNULL,
    )  # fmt: skip


def own_host_keys() -> dict[str, dict[str, str]]:
    return {f"h{i}": {"sshd/ssh_host_ed25519_key.pub": f"{key('ssh-ed25519', f'h{i}')} root@h{i}\n"} for i in (1, 2, 3)}


@pytest.mark.skipif(not shutil.which("ansible-playbook"), reason="ansible-playbook is not on PATH")
def test_a_bad_host_key_file_on_one_node_stops_every_host_naming_the_node_and_file(tmp_path):
    files = own_host_keys()
    files["h2"]["sshd/ssh_host_foo_key.pub"] = f"ssh-foo AAAA\n* {ED_K}"
    run = run_pins(tmp_path, files)
    assert run.returncode != 0
    lines = task_lines(run.stdout, REFUSAL)
    assert [line[:12] for line in lines] == ["fatal: [h1]:", "fatal: [h2]:", "fatal: [h3]:"], run.stdout[-4000:]
    said = " ".join(run.stdout.split())
    planted = tmp_path / "trees" / "h2" / "sshd" / "ssh_host_foo_key.pub"
    host_key_dir = "/etc/multinode-horovod/sshd"
    assert f"h2: {planted} holds 2 lines, not one key on one line. Each ssh_host_*_key.pub in {host_key_dir}" in said


@pytest.mark.skipif(not shutil.which("ansible-playbook"), reason="ansible-playbook is not on PATH")
def test_sound_host_key_files_pass_on_every_host(tmp_path):
    run = run_pins(tmp_path, own_host_keys())
    assert run.returncode == 0, run.stdout[-4000:]
    assert task_lines(run.stdout, REFUSAL) == ["ok: [h1]", "ok: [h2]", "ok: [h3]"]


@pytest.mark.skipif(not shutil.which("ansible-playbook"), reason="ansible-playbook is not on PATH")
def test_a_workers_known_hosts_pins_nothing_for_the_nodes_left_out_through_the_roles_tasks(tmp_path):
    """--limit h1,h2,h3 leaves h4 and h5 out; the master h1 pins h5. Root on the worker h2 writes keys
    for both into h2's known_hosts: every host of the run keeps the master's key for h5 and none for h4,
    and the role stops on every host, naming h4 and the master."""
    port_field = "[{0}]:12345,[192.0.2.{1}]:12345"
    h5 = key("ssh-ed25519", "h5")
    files = own_host_keys()
    files["h1"]["ssh/known_hosts"] = f"{port_field.format('h5', 5)} {h5}\n"
    files["h2"]["ssh/known_hosts"] = "".join(
        f"{port_field.format(name, i)} {evil}\n" for name, i in (("h4", 4), ("h5", 5)) for evil in (EVIL, EVIL_RSA)
    )
    write = {
        "name": "Write what was decided",
        "ansible.builtin.copy": {
            "dest": f"{tmp_path}/{{{{ inventory_hostname }}}}.json",
            "mode": "0600",
            "content": "{{ {'known_hosts': __ssh_trust_known_hosts, 'keyless': __ssh_trust_keyless} | to_json }}",
        },
    }
    check = role_task("main.yml", "Check that every node has container host keys")
    run = run_pins(tmp_path, files, left_out=2, after=[write, check])
    own = [f"{port_field.format(f'h{i}', i)} {key('ssh-ed25519', f'h{i}')}" for i in (1, 2, 3)]
    for name in ("h1", "h2", "h3"):
        decided = json.loads((tmp_path / f"{name}.json").read_text())
        assert decided == {"known_hosts": [*own, f"{port_field.format('h5', 5)} {h5}"], "keyless": ["h4"]}, name
    assert not (tmp_path / "h4.json").exists()
    lines = task_lines(run.stdout, check["name"])
    assert [line[:12] for line in lines] == ["fatal: [h1]:", "fatal: [h2]:", "fatal: [h3]:"], run.stdout[-4000:]
    assert "h4 has no host key" in run.stdout and "the master h1 does not" in " ".join(run.stdout.split())
