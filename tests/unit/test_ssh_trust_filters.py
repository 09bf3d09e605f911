# Copyright: multinode.horovod contributors
# SPDX-License-Identifier: GPL-3.0-or-later
"""ssh_trust's decisions (plugins/filter/ssh_trust.py): the same results as the role's former Jinja, and
each decision's edge cases.

fixtures/ssh_trust_jinja.json holds what that Jinja returned (rendered with Ansible's Templar before it
was removed) for three sample clusters: the horovod_launch scenario's shape (gloo, port 12345, IPv4, a
changed key, a node that lost its known_hosts, foreign and stale lines in authorized_keys), a mesh on
port 22 with an IPv6 address and host names that resolve to several addresses (loopback among them),
and a node whose name is its address and does not resolve.
"""

from __future__ import annotations

import base64
import grp
import json
import os
import pwd
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from ansible.parsing.dataloader import DataLoader
from ansible.template import Templar, trust_as_template
from checkout import REPO, load

f = load("plugins/filter/ssh_trust.py", "ssh_trust_filters")

FIXTURE = json.loads((Path(__file__).parent / "fixtures" / "ssh_trust_jinja.json").read_text())
CASES = FIXTURE["cases"]
MARK = "multinode-horovod"
SSH_DIR = "/etc/multinode-horovod/ssh"
PER_HOST = [(case, host) for case in CASES for host in case["inputs"]["hosts"]]
IDS = [f"{case['name']}:{host}" for case, host in PER_HOST]


def decisions(case: dict[str, Any], host: str) -> dict[str, Any]:
    """Every decision the filters take on `host`, under the name the fixture gives the Jinja's result."""
    inp = case["inputs"]
    hostvars, nodes = inp["hostvars"], inp["ssh_trust_nodes"]
    names = [node["name"] for node in nodes]
    owners = f.key_nodes(nodes, inp["ssh_trust_master"], inp["ssh_trust_mesh"])
    wanted = f.wanted_keys(hostvars, owners, MARK)
    rows = f.rows(hostvars, owners)
    return {
        "__ssh_trust_host_names": f.host_names(nodes),
        "__ssh_trust_from": f.from_addresses(nodes, inp["resolved"]),
        "__ssh_trust_key_nodes": owners,
        "__ssh_trust_has_key": host in owners,
        "__ssh_trust_wanted_keys": wanted,
        "__ssh_trust_stale_keys": f.stale_keys(hostvars[host]["__ssh_trust_authorized_lines"], wanted, MARK),
        "__ssh_trust_all_pinned": f.all_pinned(hostvars, names),
        "__ssh_trust_rows": rows,
        "__ssh_trust_failures": f.failures(rows, owners, names),
        "__ssh_trust_matrix": f.matrix(rows, names, owners, inp["ssh_trust_port"]),
        "known_hosts_hosts": [f.known_host([n["name"], n["address"]], inp["ssh_trust_port"]) for n in nodes],
        "keyless": f.keyless(hostvars, nodes, inp["ssh_trust_master"]),
        "unresolved": f.unresolved(inp["resolved"]),
        "changed": f.changed(hostvars, nodes),
        "own_failures": f.failures(rows, owners, names, host),
        "verify_print": f.matrix(rows, names, owners, inp["ssh_trust_port"]) + f.failures(rows, owners, names),
    }


@pytest.mark.parametrize(("case", "host"), PER_HOST, ids=IDS)
def test_every_decision_is_what_the_jinja_returned(case, host):
    expected = {k: v for k, v in case["expected"][host].items() if k not in ("__ssh_trust_names", "verify_fail_msg")}
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


def verify_task(name: str) -> dict[str, Any]:
    tasks = yaml.safe_load((REPO / "roles/ssh_trust/tasks/verify.yml").read_text())
    return next(task for task in tasks if task["name"] == name)


@pytest.mark.parametrize(("case", "host"), PER_HOST, ids=IDS)
def test_the_verification_message_is_unchanged(case, host):
    task = verify_task("Check that this container reaches every node with the pinned host key")
    found = decisions(case, host)
    variables = {
        "inventory_hostname": host,
        "__ssh_trust_changed": found["changed"],
        "__ssh_trust_changed_text": task["vars"]["__ssh_trust_changed_text"],
        # The task computes it with the filter; here the filter's result is given.
        "__ssh_trust_own_failures": found["own_failures"],
    }
    assert render(task["ansible.builtin.assert"]["fail_msg"], variables) == case["expected"][host]["verify_fail_msg"]


def test_a_changed_key_is_named_in_the_verification_message():
    case = CASES[0]
    assert "The host key of launch-b differs" in case["expected"]["launch-a"]["verify_fail_msg"]


# --- read.yml ------------------------------------------------------------------------------------


@pytest.mark.parametrize("index", range(len(CASES[0]["reads"])))
def test_read_files_is_what_the_jinja_kept(index):
    sample = CASES[0]["reads"][index]
    out = f.read_files(sample["results"], SSH_DIR)
    expected = sample["out"]
    # The Jinja refused nothing; the samples' host key files each hold one key.
    assert out.pop("bad_host_keys") == []
    assert {f"__ssh_trust_{k}": v for k, v in out.items()} == expected


def slurp(files: dict[str, str]) -> list[dict[str, str]]:
    return [{"source": p, "content": base64.b64encode(t.encode()).decode()} for p, t in files.items()]


def key(kind: str, seed: str = "k", embedded: str | None = None) -> str:
    """``"type blob"`` of a public key of type `kind` as ssh-keygen writes one: the blob is base64 of an
    SSH string (4-byte big-endian length, then the text) of the type (`embedded`, default `kind`), then
    one of `seed` standing for the key itself."""

    def string(text: str) -> bytes:
        return len(text.encode()).to_bytes(4, "big") + text.encode()

    return f"{kind} {base64.b64encode(string(embedded or kind) + string(seed)).decode()}"


ED_A, ED_K, RSA_B = key("ssh-ed25519", "A"), key("ssh-ed25519", "K"), key("ssh-rsa", "B")


def test_read_files_keeps_type_and_blob_and_drops_comments():
    out = f.read_files(
        slurp(
            {
                "/etc/multinode-horovod/sshd/ssh_host_rsa_key.pub": f"{RSA_B} root@x\n",
                "/etc/multinode-horovod/sshd/ssh_host_ed25519_key.pub": f"{ED_A} root@x\n",
                f"{SSH_DIR}/known_hosts": f"# managed\n\n [a]:1 {ED_A} \n",
                f"{SSH_DIR}/authorized_keys": f"{ED_K} c\n#x\n",
            }
        ),
        SSH_DIR,
    )
    assert out == {
        "host_keys": [ED_A, RSA_B],
        "bad_host_keys": [],
        "pinned_lines": [f"[a]:1 {ED_A}"],
        "authorized_lines": [f"{ED_K} c"],
    }
    none: dict[str, list[str]] = {"host_keys": [], "bad_host_keys": [], "pinned_lines": [], "authorized_lines": []}
    assert f.read_files([], SSH_DIR) == none


# --- host key files and pinned lines: one key each, nothing else reaches known_hosts -------------

HOST_KEY_DIR = "/etc/multinode-horovod/sshd"
PLANTED = f"{HOST_KEY_DIR}/ssh_host_foo_key.pub"


def read_node(files: dict[str, str]) -> dict[str, Any]:
    """The facts tasks/read.yml sets on a node from these files (read_files)."""
    read = f.read_files(slurp(files), SSH_DIR)
    return {
        "__ssh_trust_host_keys": read["host_keys"],
        "__ssh_trust_pinned_lines": read["pinned_lines"],
        "__ssh_trust_bad_host_keys": read.get("bad_host_keys", []),
    }


PAIR = [{"name": "node-a", "address": "192.0.2.10"}, {"name": "node-b", "address": "192.0.2.11"}]


def test_a_host_key_file_with_a_second_line_pins_no_wildcard_and_is_refused():
    """Root on node-b writes a file of its own host key directory whose second line, copied as it was,
    would be a known_hosts line of its own on every node: that key for any host."""
    planted = f"ssh-foo AAAA\n* {ED_K}"
    hostvars = {
        "node-a": read_node({f"{HOST_KEY_DIR}/ssh_host_ed25519_key.pub": f"{ED_A} root@a\n"}),
        "node-b": read_node({f"{HOST_KEY_DIR}/ssh_host_rsa_key.pub": f"{RSA_B} root@b\n", PLANTED: planted}),
    }
    found = f.pins(hostvars, PAIR, 12345, "node-a")
    lines = "\n".join(found["known_hosts"]).split("\n")
    assert lines == [f"[node-a]:12345,[192.0.2.10]:12345 {ED_A}", f"[node-b]:12345,[192.0.2.11]:12345 {RSA_B}"]
    assert found["bad_host_keys"] == [f"node-b: {PLANTED} holds 2 lines, not one key on one line"]


@pytest.mark.parametrize(
    ("text", "why"),
    [
        (f"{ED_A}\n{ED_K}\n", "holds 2 lines, not one key on one line"),
        (f"{ED_A} root@b\n\n", "holds 2 lines"),
        (f"{ED_A}\r\n", "is not one key as TYPE BLOB [COMMENT]"),
        ("ssh-foo AAAAB3NzaC1yc2E=\n", "holds a key of type 'ssh-foo', not one of ssh-ed25519, ssh-rsa,"),
        ("ssh-dss AAAAB3NzaC1kc3M=\n", "holds a key of type 'ssh-dss'"),
        ("ssh-ed25519 AAAA*C3Nz\n", "holds a key of type ssh-ed25519 whose blob is not base64"),
        ("ssh-ed25519 AAAAC3NzaC1lZDI1NTE\n", "holds a key of type ssh-ed25519 whose blob is not base64"),
        (key("ssh-ed25519", "A", embedded="ssh-rsa"), "key of type ssh-ed25519 whose blob is of type 'ssh-rsa'"),
        (key("ssh-rsa", "B", embedded="ssh-rsa-cert"), "key of type ssh-rsa whose blob is of type 'ssh-rsa-cert'"),
        # The length says more than the blob holds: the type is cut off.
        ("ssh-rsa " + base64.b64encode(b"\0\0\0\x20ssh-rsa").decode() + "\n", "whose blob is cut short"),
        ("ssh-rsa AAAA\n", "holds a key of type ssh-rsa whose blob is cut short"),
        ("ssh-rsa " + base64.b64encode(b"\0\0\0\x05\x1b[2Kx").decode(), "whose blob is of type '\\x1b[2Kx'"),
        ("ssh-rsa " + base64.b64encode(b"\0\0\0\x07ssh-dss").decode(), "whose blob is of type 'ssh-dss'"),
        (f"{ED_A} root@b\x1b[2K\n", "holds a comment with the control character U+001B"),
        (f"{ED_A} root@b\x85x\n", "holds a comment with the control character U+0085"),
        (f"{ED_A} root\u202eb\n", "holds a comment with the control character U+202E"),
        (f"{ED_A} root@b\u2028* {ED_K}\n", "holds a comment with the control character U+2028"),
        ("", "holds no key"),
        (" \n", "holds no key"),
        ("ssh-ed25519\n", "is not one key as TYPE BLOB [COMMENT]"),
    ],
)
def test_a_host_key_file_that_is_not_one_known_key_is_refused_and_not_read(text, why):
    found = f.read_files(slurp({f"{HOST_KEY_DIR}/ssh_host_ed25519_key.pub": text}), SSH_DIR)
    assert found["host_keys"] == []
    assert len(found["bad_host_keys"]) == 1
    assert found["bad_host_keys"][0].startswith(f"{HOST_KEY_DIR}/ssh_host_ed25519_key.pub "), found
    assert why in found["bad_host_keys"][0], found


def test_a_host_key_file_that_is_not_utf_8_is_refused():
    content = base64.b64encode(f"{ED_A} root@\xff\n".encode("latin-1")).decode()
    found = f.read_files([{"source": f"{HOST_KEY_DIR}/ssh_host_ed25519_key.pub", "content": content}], SSH_DIR)
    assert found["host_keys"] == []
    assert found["bad_host_keys"] == [
        f"{HOST_KEY_DIR}/ssh_host_ed25519_key.pub holds a comment with the control character U+DCFF"
    ]


# The host key types sshd offers, certificates aside.
KNOWN_TYPES = (
    "ssh-ed25519",
    "ssh-rsa",
    "ecdsa-sha2-nistp256",
    "ecdsa-sha2-nistp384",
    "ecdsa-sha2-nistp521",
    "sk-ssh-ed25519@openssh.com",
    "sk-ecdsa-sha2-nistp256@openssh.com",
)


@pytest.mark.parametrize("kind", KNOWN_TYPES)
@pytest.mark.parametrize("ending", ["\n", "", " root@node-b\n", "\troot@node-b (made by sshd-keygen) \n"])
def test_one_key_of_each_known_type_is_read_with_or_without_its_newline_and_comment(kind, ending):
    found = f.read_files(slurp({f"{HOST_KEY_DIR}/ssh_host_x_key.pub": key(kind, "X") + ending}), SSH_DIR)
    assert found == {"host_keys": [key(kind, "X")], "bad_host_keys": [], "pinned_lines": [], "authorized_lines": []}


def test_real_host_keys_of_ssh_keygen_are_read(tmp_path):
    if not shutil.which("ssh-keygen"):
        pytest.skip("ssh-keygen is not on PATH")
    files = {}
    for kind in ("ed25519", "rsa", "ecdsa"):
        path = tmp_path / f"ssh_host_{kind}_key"
        subprocess.run(["ssh-keygen", "-q", "-t", kind, "-N", "", "-C", "root@node", "-f", str(path)], check=True)
        files[f"{HOST_KEY_DIR}/{path.name}.pub"] = path.with_suffix(".pub").read_text()
    found = f.read_files(slurp(files), SSH_DIR)
    assert found["bad_host_keys"] == []
    assert sorted(found["host_keys"]) == sorted(" ".join(text.split()[:2]) for text in files.values())


def test_bad_host_keys_name_every_node_and_file_and_skip_nodes_not_read():
    nodes = [*PAIR, {"name": "node-c", "address": "192.0.2.12"}]
    hostvars = {
        "node-a": read_node({f"{HOST_KEY_DIR}/ssh_host_ed25519_key.pub": "ssh-foo AAAA\n"}),
        "node-b": read_node({PLANTED: f"{ED_A}\n{ED_K}\n", f"{HOST_KEY_DIR}/ssh_host_rsa_key.pub": f"{RSA_B}\n"}),
        "node-c": {},  # left out of the run (--limit)
    }
    assert f.bad_host_keys(hostvars, nodes) == [
        f"node-a: {HOST_KEY_DIR}/ssh_host_ed25519_key.pub holds a key of type 'ssh-foo', not one of "
        + ", ".join(KNOWN_TYPES),
        f"node-b: {PLANTED} holds 2 lines, not one key on one line",
    ]


@pytest.mark.parametrize(
    "line",
    [
        "[node-b]:12345 ssh-ed25519",  # no blob: the line as a whole would have been the key
        "[node-b]:12345,* ssh-foo AAAA",
        "[node-b]:12345 ssh-ed25519 AAAA*C3Nz",
        "[node-b]:12345 " + key("ssh-ed25519", "B", embedded="ssh-rsa"),
        "[node-b]:12345 *",
    ],
)
def test_a_pinned_line_without_one_known_key_is_not_read_and_never_written_again(line):
    """A known_hosts line the role did not write (it writes only "HOSTS TYPE BLOB"): a node this run
    left out keeps only keys pinned for it, so such a line must not become its key."""
    hostvars = {
        "node-a": read_node(
            {
                f"{HOST_KEY_DIR}/ssh_host_ed25519_key.pub": f"{ED_A}\n",
                f"{SSH_DIR}/known_hosts": f"[node-b]:12345,[192.0.2.11]:12345 {RSA_B}\n{line}\n",
            }
        ),
        "node-b": {},  # left out of the run (--limit)
    }
    assert hostvars["node-a"]["__ssh_trust_pinned_lines"] == [f"[node-b]:12345,[192.0.2.11]:12345 {RSA_B}"]
    assert f.pins(hostvars, PAIR, 12345, "node-a")["known_hosts"] == [
        f"[node-a]:12345,[192.0.2.10]:12345 {ED_A}",
        f"[node-b]:12345,[192.0.2.11]:12345 {RSA_B}",
    ]


def test_host_names_are_the_addresses_that_are_not_ip_addresses():
    nodes = [
        {"name": "a", "address": "192.0.2.1"},
        {"name": "b", "address": "fe80::1"},
        {"name": "c", "address": "c.lan"},
    ]
    assert f.host_names(nodes) == ["c.lan"]


def test_unresolved_names_the_keys_getent_found_nothing_for():
    results = [
        {"item": "ok.lan", "ansible_facts": {"getent_ahosts": {"192.0.2.5": ["STREAM"]}}},
        {"item": "gone.lan", "ansible_facts": {"getent_ahosts": {"gone.lan": None}}},
        {"item": "skipped.lan", "skipped": True},
    ]
    assert f.unresolved(results) == ["gone.lan", "skipped.lan"]


# --- keys ----------------------------------------------------------------------------------------

NODES = [{"name": "node-a", "address": "192.0.2.10"}, {"name": "node-b", "address": "192.0.2.11"}]


@pytest.mark.parametrize(
    ("mesh", "owners"),
    [
        (False, ["node-b"]),
        (True, ["node-a", "node-b"]),
        ("", ["node-b"]),
        # -e ssh_trust_mesh=false gives a string: false by Ansible's rules (Jinja's truth would say true).
        ("false", ["node-b"]),
        ("no", ["node-b"]),
        ("true", ["node-a", "node-b"]),
    ],
)
def test_key_nodes_are_the_master_or_every_node_with_the_mesh(mesh, owners):
    assert f.key_nodes(NODES, "node-b", mesh) == owners


def resolved(*found: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"item": f"name{i}", "ansible_facts": {"getent_ahosts": hosts}} for i, hosts in enumerate(found)]


def test_from_is_every_ip_address_then_the_resolved_ones_once_and_never_loopback():
    nodes = [*NODES, {"name": "node-c", "address": "node-c.lan"}, {"name": "node-d", "address": "2001:db8::4"}]
    found = resolved(
        {"192.0.2.12": [], "2001:db8::12": [], "127.0.1.1": [], "::1": []},
        {"192.0.2.10": [], "127.0.0.1": [], "::ffff:192.0.2.13": []},
    )
    assert f.from_addresses(nodes, found) == [
        "192.0.2.10",
        "192.0.2.11",
        "2001:db8::4",
        "192.0.2.12",
        "2001:db8::12",
        "::ffff:192.0.2.13",
    ]
    assert f.from_addresses(nodes, []) == ["192.0.2.10", "192.0.2.11", "2001:db8::4"]


def test_a_loopback_node_address_is_dropped_too():
    assert f.from_addresses([{"name": "x", "address": "127.0.0.1"}, *NODES], []) == ["192.0.2.10", "192.0.2.11"]


def keypairs(**public: str) -> dict[str, Any]:
    return {name.replace("_", "-"): {"__ssh_trust_keypair": {"public_key": key}} for name, key in public.items()}


def test_wanted_keys_carry_the_marker_and_skip_keys_not_made_yet():
    hostvars = keypairs(node_a="ssh-ed25519 AAA", node_b="")
    hostvars["node-c"] = {"__ssh_trust_keypair": {"changed": True}}  # check mode: no key yet
    assert f.wanted_keys(hostvars, ["node-a", "node-b", "node-c"], MARK) == [f"ssh-ed25519 AAA {MARK}:node-a"]


def test_own_keys_are_the_lines_whose_last_word_is_the_marker():
    lines = [
        f'from="192.0.2.10" ssh-ed25519 AAAAone {MARK}:node-a',
        "ssh-ed25519 AAAAtwo operator@elsewhere",
        f"ssh-ed25519 AAAAthree {MARK}:node-b trailing",
        f"# {MARK}:node-a",
        f"ssh-ed25519 AAAAfour {MARK}:node-c  ",
    ]
    assert f.own_keys(lines, MARK) == [lines[0], lines[3], lines[4]]


def test_stale_keys_are_the_roles_lines_for_keys_no_longer_wanted():
    wanted = [f"ssh-ed25519 AAA {MARK}:node-a"]
    lines = [
        f'from="192.0.2.10" ssh-ed25519 AAA {MARK}:node-a',  # wanted
        f'from="192.0.2.10" ssh-ed25519 DDD {MARK}:node-d',  # a node that left
        f"ssh-ed25519 OLD {MARK}:node-a  ",  # node-a's key before it was made anew
        "ssh-ed25519 USER someone@laptop",  # foreign
        f"ssh-ed25519 EEE x-{MARK}:node-e",  # foreign: the marker is not a word of its own
        f"ssh-ed25519 FFF {MARK}:node-f more",  # foreign: the marker is not the last word
    ]
    assert f.stale_keys(lines, wanted, MARK) == [lines[1], lines[2]]


def test_no_foreign_line_is_ever_stale():
    foreign = ["ssh-ed25519 USER someone@laptop", "ssh-rsa X", 'from="10.0.0.1" ssh-ed25519 Y deploy']
    assert f.stale_keys(foreign, [], MARK) == []


def test_keyless_names_the_nodes_without_host_keys():
    hostvars = {
        "a": {"__ssh_trust_host_keys": ["ssh-ed25519 A"], "__ssh_trust_pinned_lines": []},
        "b": {"__ssh_trust_host_keys": [], "__ssh_trust_pinned_lines": []},
    }
    nodes = [{"name": "a", "address": "10.0.0.1"}, {"name": "b", "address": "10.0.0.2"}]
    assert f.keyless(hostvars, nodes, "a") == ["b"]


# A run on the master and a new worker (--limit) while the other workers train: those were not read.
LIMITED_NODES = [
    {"name": "master", "address": "10.0.0.1"},
    {"name": "worker1", "address": "10.0.0.2"},
    {"name": "new", "address": "10.0.0.9"},
]
LIMITED = {
    "master": {
        "__ssh_trust_host_keys": ["ssh-ed25519 M"],
        "__ssh_trust_pinned_lines": [
            "[master]:12345,[10.0.0.1]:12345 ssh-ed25519 M",
            "[10.0.0.2]:12345 ssh-ed25519 W1",
        ],
    },
    "worker1": {},
    "new": {"__ssh_trust_host_keys": ["ssh-ed25519 N"], "__ssh_trust_pinned_lines": []},
}


def test_a_node_left_out_of_the_run_keeps_the_key_pinned_for_it():
    assert f.known_keys(LIMITED, LIMITED_NODES, "master") == {
        "master": ["ssh-ed25519 M"],
        "worker1": ["ssh-ed25519 W1"],
        "new": ["ssh-ed25519 N"],
    }
    assert f.keyless(LIMITED, LIMITED_NODES, "master") == []
    # Not read, so not compared: its pin is kept, not reported as changed.
    assert f.changed(LIMITED, LIMITED_NODES) == []


def test_a_node_left_out_that_nobody_pins_is_keyless():
    hostvars = {**LIMITED, "master": {**LIMITED["master"], "__ssh_trust_pinned_lines": []}}
    assert f.keyless(hostvars, LIMITED_NODES, "master") == ["worker1"]


EVIL, EVIL_RSA = key("ssh-ed25519", "evil"), key("ssh-rsa", "evil")


def test_a_workers_pin_for_a_node_left_out_is_pinned_nowhere():
    """Root on the worker `new` writes its own known_hosts: a key for worker2, which the master does not
    pin, and a second key for worker1, which it does. Neither reaches the lines every node writes."""
    nodes = [*LIMITED_NODES, {"name": "worker2", "address": "10.0.0.3"}]
    hostvars = {
        **LIMITED,
        "new": {**LIMITED["new"], "__ssh_trust_pinned_lines": [f"worker2 {EVIL}", f"[10.0.0.2]:12345 {EVIL_RSA}"]},
        "worker2": {},  # left out of the run (--limit)
    }
    assert f.known_keys(hostvars, nodes, "master") == {
        "master": ["ssh-ed25519 M"],
        "worker1": ["ssh-ed25519 W1"],
        "new": ["ssh-ed25519 N"],
        "worker2": [],
    }
    found = f.pins(hostvars, nodes, 12345, "master")
    assert found["keyless"] == f.keyless(hostvars, nodes, "master") == ["worker2"]
    assert found["known_hosts"] == [
        "[master]:12345,[10.0.0.1]:12345 ssh-ed25519 M",
        "[worker1]:12345,[10.0.0.2]:12345 ssh-ed25519 W1",
        "[new]:12345,[10.0.0.9]:12345 ssh-ed25519 N",
    ]


def test_the_masters_pin_for_a_node_left_out_is_kept_whatever_the_workers_pin():
    """A worker of the run that lost its known_hosts, or pins another key: the master's pin is kept, in
    the one set of lines every node of the run writes."""
    for pinned in ([], [f"worker1 {EVIL}"]):
        hostvars = {**LIMITED, "new": {**LIMITED["new"], "__ssh_trust_pinned_lines": pinned}}
        found = f.pins(hostvars, LIMITED_NODES, 12345, "master")
        assert "[worker1]:12345,[10.0.0.2]:12345 ssh-ed25519 W1" in found["known_hosts"]
        assert f.known_keys(hostvars, LIMITED_NODES, "master")["worker1"] == ["ssh-ed25519 W1"]
        assert found["keyless"] == []


def test_a_run_that_did_not_read_the_master_keeps_no_pins_for_nodes_left_out():
    """The master unreachable in a play without any_errors_fatal: a worker still pins worker1, but
    nothing is kept, and the master and worker1 are named (the role stops) instead."""
    hostvars = {
        **LIMITED,
        "master": {},
        "new": {**LIMITED["new"], "__ssh_trust_pinned_lines": ["[10.0.0.2]:12345 ssh-ed25519 W1"]},
    }
    assert f.master_pinned(hostvars, "master") == []
    assert f.keyless(hostvars, LIMITED_NODES, "master") == ["master", "worker1"]


def test_a_node_of_the_run_with_a_new_key_is_still_changed():
    hostvars = {**LIMITED, "master": {**LIMITED["master"], "__ssh_trust_host_keys": ["ssh-ed25519 M2"]}}
    assert f.changed(hostvars, LIMITED_NODES) == ["master"]


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
    assert f.known_host(hosts, port) == field


@pytest.mark.parametrize("case", CASES, ids=[case["name"] for case in CASES])
def test_pins_is_the_three_decisions_in_one_pass(case):
    inp = case["inputs"]
    hostvars, nodes, port = inp["hostvars"], inp["ssh_trust_nodes"], inp["ssh_trust_port"]
    master = inp["ssh_trust_master"]
    found = f.pins(hostvars, nodes, port, master)
    assert found == {
        "changed": f.changed(hostvars, nodes),
        "keyless": f.keyless(hostvars, nodes, master),
        "known_hosts": f.known_hosts(nodes, f.known_keys(hostvars, nodes, master), port),
        "bad_host_keys": f.bad_host_keys(hostvars, nodes),
    }
    assert found["bad_host_keys"] == []
    host = inp["hosts"][0]
    assert found["changed"] == case["expected"][host]["changed"]
    assert found["keyless"] == case["expected"][host]["keyless"]


def test_known_hosts_lines_are_what_the_template_wrote_per_node():
    """known_hosts.j2 used to loop over the nodes and their keys itself; the lines are the same."""
    nodes = [{"name": "a", "address": "10.0.0.1"}, {"name": "b", "address": "b"}, {"name": "c", "address": "h"}]
    known = {"a": ["ssh-ed25519 AAA1", "ecdsa-sha2-nistp256 AAA2"], "b": [], "c": ["ssh-ed25519 CCC"]}
    assert f.known_hosts(nodes, known, 2222) == [
        "[a]:2222,[10.0.0.1]:2222 ssh-ed25519 AAA1",
        "[a]:2222,[10.0.0.1]:2222 ecdsa-sha2-nistp256 AAA2",
        "[c]:2222,[h]:2222 ssh-ed25519 CCC",
    ]
    assert f.known_hosts(nodes[1:2], {"b": ["ssh-ed25519 B"]}, 22) == ["b ssh-ed25519 B"]


def test_all_pinned_is_the_union_of_every_nodes_lines():
    hostvars = {
        "a": {"__ssh_trust_host_keys": [], "__ssh_trust_pinned_lines": ["L1", "L2"]},
        "b": {"__ssh_trust_host_keys": [], "__ssh_trust_pinned_lines": []},  # lost its file
        "c": {"__ssh_trust_host_keys": [], "__ssh_trust_pinned_lines": ["L2", "L3"]},
        "d": {},  # left out of the run (--limit)
    }
    assert f.all_pinned(hostvars, ["a", "b", "c", "d"]) == ["L1", "L2", "L3"]


ED, ED2, RSA, EC = "ssh-ed25519 E1", "ssh-ed25519 E2", "ssh-rsa R1", "ecdsa-sha2-nistp256 C1"


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
    assert f.key_changed(pinned, current) is is_changed


def host(keys: list[str], pinned: list[str] | None = None) -> dict[str, Any]:
    return {"__ssh_trust_host_keys": keys, "__ssh_trust_pinned_lines": pinned or []}


def test_changed_finds_pins_by_name_or_address_on_any_port_in_any_nodes_file():
    nodes = [{"name": "a", "address": "192.0.2.1"}, {"name": "b", "address": "2001:db8::2"}]
    # b lost its known_hosts; a pinned b's key by address on another port.
    hostvars = {"a": host([ED], ["[a]:22,[192.0.2.1]:22 " + ED, "[2001:db8::2]:2222 " + ED]), "b": host([ED2])}
    assert f.changed(hostvars, nodes) == ["b"]
    hostvars["a"]["__ssh_trust_pinned_lines"] = ["192.0.2.1 " + ED, "b,2001:db8::2 " + ED2]  # port 22, bare
    assert f.changed(hostvars, nodes) == []


def test_changed_ignores_other_hosts_hashed_and_marked_lines():
    nodes = [{"name": "a", "address": "10.0.0.1"}]
    lines = ["ab,10.0.0.11 " + ED2, "[10.0.0.1x]:22 " + ED2, "|1|salt|hash " + ED2, "@revoked a " + ED2]
    assert f.changed({"a": host([ED], lines)}, nodes) == []
    assert f.changed({"a": host([ED], [*lines, "x,[a]:1,y " + ED2])}, nodes) == ["a"]


# --- verify.yml ----------------------------------------------------------------------------------


def row(*lines: str) -> dict[str, Any]:
    return {"__ssh_trust_row": {"stdout_lines": list(lines)}}


def test_rows_parse_ok_failed_and_an_empty_error():
    hostvars = {
        "a": row("a\tok", "b\tfailed\tHost key verification failed. ", "c\tfailed\t", "d\tfailed\tx\ty"),
        "b": {"__ssh_trust_row": {"skipped": True}},
    }
    assert f.rows(hostvars, ["a", "b", "c"]) == {
        "a": {"a": "ok", "b": "Host key verification failed.", "c": "ssh failed", "d": "x y"},
        "b": {},
        "c": {},
    }


def test_failures_name_each_pair_and_the_pairs_that_did_not_run():
    rows = {"a": {"a": "ok", "b": "Permission denied (publickey)."}, "b": {}}
    assert f.failures(rows, ["a", "b"], ["a", "b"]) == [
        "a -> b: Permission denied (publickey).",
        "b -> a: no result (the ssh loop did not run)",
        "b -> b: no result (the ssh loop did not run)",
    ]
    assert f.failures(rows, ["a", "b"], ["a", "b"], "a") == ["a -> b: Permission denied (publickey)."]


def test_matrix_text_mesh_off():
    rows = {"node-a": {"node-a": "ok", "node-b": "Host key verification failed."}}
    assert f.matrix(rows, ["node-a", "node-b"], ["node-a"], 12345) == [
        "ssh from the container of (row) to (column), port 12345:",
        "        node-a  node-b  ",
        "node-a  ok      FAILED  ",
        "node-b  -       -       (no key: ssh_trust_mesh is false)",
    ]


def test_matrix_text_mesh_on_with_a_missing_row():
    rows = {"a": {"a": "ok", "bb": "ok"}, "bb": {}}
    assert f.matrix(rows, ["a", "bb"], ["a", "bb"], 22) == [
        "ssh from the container of (row) to (column), port 22:",
        "    a   bb  ",
        "a   ok  ok  ",
        "bb  -   -   ",
    ]


def test_the_filters_are_registered():
    assert set(f.FilterModule().filters()) == {
        f"ssh_trust_{name}"
        for name in (
            "read_files",
            "listed_files",
            "authorized",
            "host_names",
            "unresolved",
            "key_nodes",
            "from",
            "wanted_keys",
            "own_keys",
            "stale_keys",
            "keyless",
            "known_keys",
            "known_host",
            "known_hosts",
            "pins",
            "changed",
            "rows",
            "failures",
            "matrix",
        )
    }
    for name in f.FilterModule().filters():
        assert (REPO / "plugins" / "filter" / f"{name}.yml").is_file(), name


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
        "Collect the key nodes' public keys and the nodes' addresses",
        "Decide which keys to remove, and from where",
    ],
    "verify.yml": ["Read every node's row of the ssh matrix", "Print the ssh matrix"],
}
FACTS = (
    "__ssh_trust_host_keys",
    "__ssh_trust_pinned_lines",
    "__ssh_trust_authorized_lines",
    "__ssh_trust_keypair",
    "__ssh_trust_row",
)


def role_task(path: str, name: str) -> dict[str, Any]:
    tasks = yaml.safe_load((REPO / "roles/ssh_trust/tasks" / path).read_text())
    return next(task for task in tasks if task["name"] == name)


def role_playbook(case: dict[str, Any], out: Path) -> list[dict[str, Any]]:
    inp = case["inputs"]
    tasks: list[dict[str, Any]] = [
        {
            "name": "Take the sample's facts",
            "ansible.builtin.set_fact": {
                **{fact: f"{{{{ sample.hostvars[inventory_hostname]['{fact}'] | default(omit) }}}}" for fact in FACTS},
                "__ssh_trust_resolved": {"results": "{{ sample.resolved }}"},
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
                    "from": "{{ __ssh_trust_from }}",
                    "rows": "{{ __ssh_trust_rows }}",
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
                "sample": inp,
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
        assert got["from"] == want["__ssh_trust_from"]
        assert got["rows"] == want["__ssh_trust_rows"]
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
    """tasks/read.yml's keeping of what it read and tasks/pins.yml on local hosts h1-h3, each with the
    host key files `files` gives it, as the role's one read command lists them; `left_out` more nodes
    (h4, ...) in the inventory and the node list that --limit leaves out; `after`: tasks run after."""
    tasks = [
        role_task("assert.yml", "Read the node list once for the whole play"),
        role_task("read.yml", "Keep what was read for the other nodes"),
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
        listing = "".join(f"@@ {path}\n{b64(text)}\n" for path, text in files[name].items())
        host_vars["__ssh_trust_listing"] = {"stdout": listing}
    inventory["all"]["hosts"].update({node["name"]: {"ansible_connection": "local"} for node in extra})
    (tmp_path / "play.yml").write_text(yaml.safe_dump([play], sort_keys=False))
    (tmp_path / "hosts.yml").write_text(yaml.safe_dump(inventory))
    env = dict(os.environ, ANSIBLE_NOCOLOR="1")  # the collections path: conftest.py
    return subprocess.run(
        ["ansible-playbook", "-i", str(tmp_path / "hosts.yml"), str(tmp_path / "play.yml"), "--limit", "h1,h2,h3"],
        cwd=REPO, env=env, capture_output=True, text=True, check=False, stdin=subprocess.DEVNULL,
    )  # fmt: skip


def b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def own_host_keys() -> dict[str, dict[str, str]]:
    return {f"h{i}": {f"{HOST_KEY_DIR}/ssh_host_ed25519_key.pub": f"{key('ssh-ed25519', f'h{i}')} root@h{i}\n"}
            for i in (1, 2, 3)}  # fmt: skip


@pytest.mark.skipif(not shutil.which("ansible-playbook"), reason="ansible-playbook is not on PATH")
def test_a_bad_host_key_file_on_one_node_stops_every_host_naming_the_node_and_file(tmp_path):
    files = own_host_keys()
    files["h2"][PLANTED] = f"ssh-foo AAAA\n* {ED_K}"
    run = run_pins(tmp_path, files)
    assert run.returncode != 0
    lines = task_lines(run.stdout, REFUSAL)
    assert [line[:12] for line in lines] == ["fatal: [h1]:", "fatal: [h2]:", "fatal: [h3]:"], run.stdout[-4000:]
    said = " ".join(run.stdout.split())
    assert f"h2: {PLANTED} holds 2 lines, not one key on one line. Each ssh_host_*_key.pub in {HOST_KEY_DIR}" in said


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
    files["h1"][f"{SSH_DIR}/known_hosts"] = f"{port_field.format('h5', 5)} {h5}\n"
    files["h2"][f"{SSH_DIR}/known_hosts"] = "".join(
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


def read_command_tree(tmp_path: Path) -> tuple[list[str], Path, Path]:
    """The argv of tasks/read.yml's command and the host key and ssh directories of a tree of its own."""
    task = next(t for t in yaml.safe_load((REPO / "roles/ssh_trust/tasks/read.yml").read_text())
                if t["name"] == "Read the host public keys and this role's files")  # fmt: skip
    host_dir, ssh_dir = tmp_path / "sshd", tmp_path / "ssh"
    host_dir.mkdir()
    ssh_dir.mkdir()
    return task["ansible.builtin.command"]["argv"], host_dir, ssh_dir


def test_the_roles_read_command_lists_what_read_files_keeps(tmp_path):
    # The command of tasks/read.yml, run here on a tree of its own, through the same two filters.
    argv, host_dir, ssh_dir = read_command_tree(tmp_path)
    (host_dir / "ssh_host_ed25519_key.pub").write_text(f"{ED_A} root@node (comment)\n")
    (host_dir / "ssh_host_rsa_key.pub").write_text(f"{RSA_B} root@node\n")
    (host_dir / "ssh_host_rsa_key").write_text("PRIVATE, never read\n")
    (ssh_dir / "known_hosts").write_text(f"# pinned\n[a]:12345 {ED_A}\n\n")
    (ssh_dir / "authorized_keys").write_text("")
    out = subprocess.run([*argv[:4], str(host_dir), str(ssh_dir)], capture_output=True, text=True, check=True).stdout
    listed = f.listed_files(out)
    assert sorted(item["source"] for item in listed) == sorted(
        [str(host_dir / "ssh_host_ed25519_key.pub"), str(host_dir / "ssh_host_rsa_key.pub"),
         str(ssh_dir / "known_hosts"), str(ssh_dir / "authorized_keys")]
    )  # fmt: skip
    kept = f.read_files(listed, str(ssh_dir))
    assert kept == {
        "host_keys": [ED_A, RSA_B],
        "bad_host_keys": [],
        "pinned_lines": [f"[a]:12345 {ED_A}"],
        "authorized_lines": [],
    }
    # Nothing there yet (a new node): nothing listed.
    empty = tmp_path / "none"
    out = subprocess.run([*argv[:4], str(empty), str(empty)], capture_output=True, text=True, check=True).stdout
    assert f.listed_files(out) == []


def test_authorized_is_every_wanted_key_with_its_from_option_verbatim():
    key_a, key_b = "ssh-ed25519 AAAA multinode-horovod:a", "ssh-ed25519 BBBB multinode-horovod:b"
    lines = ['from="10.0.0.1,10.0.0.2" ' + key_a, "ssh-rsa CCCC someone"]
    assert f.authorized(lines, [key_a], ["10.0.0.1", "10.0.0.2"])
    assert not f.authorized(lines, [key_a, key_b], ["10.0.0.1", "10.0.0.2"])  # a key missing
    assert not f.authorized(lines, [key_a], ["10.0.0.1", "10.0.0.3"])  # another from= list
    assert not f.authorized(["ssh-ed25519 AAAA multinode-horovod:a"], [key_a], ["10.0.0.1"])  # no from=


def test_listed_files_reads_empty_files_and_ignores_other_lines():
    text = "@@ /a\nYWJj\n@@ /empty\n\n@@ /last\n"
    assert f.listed_files(text) == [
        {"source": "/a", "content": "YWJj"},
        {"source": "/empty", "content": ""},
        {"source": "/last", "content": ""},
    ]
    assert base64.b64decode(f.listed_files(text)[0]["content"]) == b"abc"


def test_wanted_keys_of_a_skipped_key_task_come_from_the_read():
    # The key task skipped (the read found the pair in place): the key ssh-keygen -y derived in the read.
    path = "/etc/multinode-horovod/ssh/id_ed25519"
    listing = f"## 600 root:root {path}\n@@ derived {path}\nssh-ed25519 AAAderived root@x\n"
    hostvars = {
        "node-a": {
            "__ssh_trust_keypair": {"skipped": True, "changed": False},
            "__ssh_trust_listing": {"stdout": listing},
        },
        # Skipped, but the read has no key that loads: none.
        "node-b": {
            "__ssh_trust_keypair": {"skipped": True},
            "__ssh_trust_listing": {"stdout": f"## 600 root:root {path}\n"},
        },
        # The module ran: its result counts, not the read.
        "node-c": {
            "__ssh_trust_keypair": {"public_key": "ssh-ed25519 AAAmodule"},
            "__ssh_trust_listing": {"stdout": listing},
        },
    }
    assert f.wanted_keys(hostvars, ["node-a", "node-b", "node-c"], MARK, path) == [
        f"ssh-ed25519 AAAderived {MARK}:node-a",
        f"ssh-ed25519 AAAmodule {MARK}:node-c",
    ]
    # Another path, or none given: nothing from the read.
    assert f.wanted_keys(hostvars, ["node-a"], MARK, path + "x") == []
    assert f.wanted_keys(hostvars, ["node-a"], MARK) == []


def test_the_read_command_lists_the_client_key_pair(tmp_path):
    """tasks/read.yml's command on a tree of its own: the client key pair as listed_key_pair_in_place and
    wanted_keys read it."""
    listing_filters = load("plugins/filter/listing.py", "listing_filters_for_ssh_trust")
    argv, host_dir, ssh_dir = read_command_tree(tmp_path)
    key = ssh_dir / "id_ed25519"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", f"{MARK}:node-a", "-f", str(key)], check=True)
    os.chmod(key.with_suffix(".pub"), 0o600)
    out = subprocess.run(
        [*argv[:4], str(host_dir), str(ssh_dir), "mnh-no-such-container", str(key)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    who = {"owner": pwd.getpwuid(os.getuid()).pw_name, "group": grp.getgrgid(os.getgid()).gr_name}
    assert listing_filters.listed_key_pair_in_place(out, str(key), f"{MARK}:node-a", **who)
    assert not listing_filters.listed_key_pair_in_place(out, str(key), f"{MARK}:node-b", **who)
    hostvars = {"node-a": {"__ssh_trust_keypair": {"skipped": True}, "__ssh_trust_listing": {"stdout": out}}}
    public = " ".join(key.with_suffix(".pub").read_text().split()[:2])
    assert f.wanted_keys(hostvars, ["node-a"], MARK, str(key)) == [f"{public} {MARK}:node-a"]
    # The client public key is no host key, and the private key's text is never printed.
    assert f.read_files(f.listed_files(out), str(ssh_dir))["host_keys"] == []
    assert key.read_text().splitlines()[1] not in out


def test_the_read_command_reads_which_ssh_the_container_finds(tmp_path):
    """tasks/read.yml's command asks the container (docker exec, the link script) which ssh its PATH finds:
    section "@@ ssh-link", which tasks/wrapper.yml and tasks/verify.yml compare with the wanted pair. A
    fake docker here prints what the container would."""
    listing_filters = load("plugins/filter/listing.py", "listing_filters_for_ssh_link")
    argv, host_dir, ssh_dir = read_command_tree(tmp_path)
    constants = yaml.safe_load((REPO / "roles/ssh_trust/vars/main.yml").read_text())
    assert argv[-1] == "{{ __ssh_trust_link_script }}"
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "docker").write_text(
        '#!/bin/sh\ncase "$1" in exec) [ "$2" = box ] && [ "$7" = read ] || exit 1;'
        ' echo "link /root/.ssh/bin/ssh"; echo "first /usr/local/bin/ssh";; *) exit 1;; esac\n'
    )
    (bin_dir / "docker").chmod(0o755)
    env = dict(os.environ, PATH=f"{bin_dir}:{os.environ['PATH']}")
    run = [*argv[:4], str(host_dir), str(ssh_dir), "box", str(ssh_dir / "id_ed25519"), "the link script"]
    out = subprocess.run(run, capture_output=True, text=True, check=True, env=env).stdout
    wanted = ["link /root/.ssh/bin/ssh", "first /usr/local/bin/ssh"]
    assert listing_filters.listed_lines(out, "ssh-link") == wanted
    assert constants["__ssh_trust_wrapper"] == "{{ __ssh_trust_container_dir }}/bin/ssh"
    names = {"{{ __ssh_trust_wrapper }}": "/root/.ssh/bin/ssh", "{{ __ssh_trust_wrapper_link }}": "/usr/local/bin/ssh"}
    assert constants["__ssh_trust_wrapper_link"] == names["{{ __ssh_trust_wrapper_link }}"]
    rendered = constants["__ssh_trust_link_wanted"]
    for template, value in names.items():
        rendered = [item.replace(template, value) for item in rendered]
    assert rendered == wanted
    # A container that does not answer (stopped, another name): an empty section, and the command succeeds.
    run[6] = "other"
    out = subprocess.run(run, capture_output=True, text=True, check=True, env=env).stdout
    assert listing_filters.listed_lines(out, "ssh-link") == []


def test_the_matrix_script_logs_in_side_by_side_and_prints_in_node_order(tmp_path):
    """vars/main.yml's matrix script with a fake ssh: node-a's login waits until node-c's has started (a
    script that logged in one node after the other would never get there: node-a then times out and
    fails), node-b fails with a two-line error; the lines come in the order of the nodes given."""
    script = yaml.safe_load((REPO / "roles/ssh_trust/vars/main.yml").read_text())["__ssh_trust_matrix_script"]
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "ssh").write_text(
        "#!/bin/sh\n"
        'for last; do :; done; node=""; for a; do [ "$a" = true ] && break; node=$a; done\n'
        f'touch "{tmp_path}/started.$node"\n'
        'case "$node" in\n'
        f'  node-a) i=0; while [ ! -e "{tmp_path}/started.node-c" ]; do i=$((i + 1));'
        ' [ $i -gt 100 ] && { echo "timed out" >&2; exit 255; }; sleep 0.1; done; exit 0;;\n'
        '  node-b) printf "first\\tline\\nPermission denied (publickey).\\n" >&2; exit 255;;\n'
        "  *) exit 0;;\n"
        "esac\n"
    )
    (bin_dir / "ssh").chmod(0o755)
    env = dict(os.environ, PATH=f"{bin_dir}:{os.environ['PATH']}")
    out = subprocess.run(
        ["sh", "-c", script, "ssh-matrix", "5", "node-a", "node-b", "node-c"],
        capture_output=True, text=True, check=True, env=env,
    ).stdout  # fmt: skip
    assert out.splitlines() == [
        "node-a\tok",
        "node-b\tfailed\tfirst line Permission denied (publickey). ",
        "node-c\tok",
    ]
    assert {"node-a", "node-b", "node-c"} == {p.name.split(".", 1)[1] for p in tmp_path.glob("started.*")}
