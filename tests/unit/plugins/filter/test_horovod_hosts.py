# Copyright: multinode.horovod contributors
# SPDX-License-Identifier: GPL-3.0-or-later
"""A Horovod host list (plugins/module_utils/horovod_hosts.py): every way one can be wrong, -H, the host
file (the filter horovod_hostfile) and the host of each rank."""

from __future__ import annotations

import pytest
from ansible.errors import AnsibleFilterError
from ansible_collections.multinode.horovod.plugins.filter.horovod_launch import FilterModule
from ansible_collections.multinode.horovod.plugins.module_utils import horovod_hosts as hh

TWO = [
    {"name": "node-a", "address": "192.0.2.10", "slots": 4},
    {"name": "node-b", "address": "192.0.2.11", "slots": 2},
]


def test_the_hostfile_filter_turns_a_bad_list_into_a_filter_error():
    hostfile = FilterModule().filters()["horovod_hostfile"]
    assert hostfile(TWO, np=5) == "192.0.2.10 slots=4\n192.0.2.11 slots=1\n"
    with pytest.raises(AnsibleFilterError, match="hostfile: invalid Horovod host list: host 0"):
        hostfile([{"name": "a"}])


def test_hosts_arg_uses_addresses_by_default():
    assert hh.hosts_arg(TWO) == "192.0.2.10:4,192.0.2.11:2"


def test_hosts_arg_keeps_order():
    assert hh.hosts_arg([TWO[1], TWO[0]]) == "192.0.2.11:2,192.0.2.10:4"


def test_single_host():
    assert hh.hosts_arg([{"name": "localhost", "address": "127.0.0.1", "slots": 1}]) == "127.0.0.1:1"


def test_hostfile_text():
    assert hh.hostfile(TWO) == "192.0.2.10 slots=4\n192.0.2.11 slots=2\n"
    assert hh.hostfile(TWO, key="name") == "node-a slots=4\nnode-b slots=2\n"


THREE = [
    {"name": "a", "address": "10.0.0.1", "slots": 2},
    {"name": "b", "address": "10.0.0.2", "slots": 2},
    {"name": "c", "address": "10.0.0.3", "slots": 2},
]


@pytest.mark.parametrize(
    ("np", "expected"),
    [
        (None, "10.0.0.1:2,10.0.0.2:2,10.0.0.3:2"),
        (6, "10.0.0.1:2,10.0.0.2:2,10.0.0.3:2"),
        (5, "10.0.0.1:2,10.0.0.2:2,10.0.0.3:1"),
        (3, "10.0.0.1:2,10.0.0.2:1"),
        (1, "10.0.0.1:1"),
        ("4", "10.0.0.1:2,10.0.0.2:2"),
    ],
)
def test_hosts_arg_trims_to_np(np, expected):
    # horovodrun's Gloo launcher starts one process per listed slot whatever -np says.
    assert hh.hosts_arg(THREE, np=np) == expected


def test_hostfile_trims_to_np():
    assert hh.hostfile(THREE, "name", 3) == "a slots=2\nb slots=1\n"


@pytest.mark.parametrize("np", [0, 7, -1, "x", True])
def test_np_outside_the_slots_is_rejected(np):
    with pytest.raises(ValueError, match="np must be a whole number from 1 to the 6 slots"):
        hh.hosts_arg(THREE, np=np)


def test_rank_hosts_follow_horovod_assignment():
    assert hh.rank_hosts(THREE) == ["a", "a", "b", "b", "c", "c"]
    assert hh.rank_hosts(THREE, 3) == ["a", "a", "b"]
    one_each = [{"name": n, "address": f"10.0.1.{i}", "slots": 1} for i, n in enumerate("xyz")]
    assert hh.rank_hosts(one_each, 3)[2] == "z"


def test_slots_as_digit_string_is_accepted():
    hosts = [{"name": "a", "address": "a.example", "slots": "3"}]
    assert hh.hosts_arg(hosts) == "a.example:3"


@pytest.mark.parametrize("slots", [0, -1, "0", "two", "", None, 1.5, True, False, [2], "1.0"])
def test_bad_slots_are_rejected(slots):
    hosts = [{"name": "node-a", "address": "192.0.2.10", "slots": slots}]
    errors = hh.host_errors(hosts)
    assert len(errors) == 1
    assert "host 0 (node-a): slots must be a whole number of 1 or more" in errors[0]
    with pytest.raises(ValueError, match=r"host 0 \(node-a\): slots must be a whole number"):
        hh.hosts_arg(hosts)
    with pytest.raises(ValueError):
        hh.hostfile(hosts)


def test_missing_slots():
    errors = hh.host_errors([{"name": "node-a", "address": "192.0.2.10"}])
    assert errors == ["host 0 (node-a): slots is missing; set it to the number of processes to run there (1 or more)"]


def test_duplicate_name_is_rejected():
    hosts = [*TWO, {"name": "node-a", "address": "192.0.2.12", "slots": 1}]
    errors = hh.host_errors(hosts)
    assert errors == ["host 2 (node-a): name 'node-a' is also used by host 0; each host needs its own name"]
    with pytest.raises(ValueError, match="also used by host 0"):
        hh.hosts_arg(hosts)


def test_duplicate_address_is_rejected():
    hosts = [*TWO, {"name": "node-c", "address": "192.0.2.11", "slots": 1}]
    assert hh.host_errors(hosts) == [
        "host 2 (node-c): address '192.0.2.11' is also used by host 1; each host needs its own address"
    ]


@pytest.mark.parametrize("address", ["fe80::1", "node a", "a,b", "", "-bad", "node-a:2", "node-a\n"])
def test_bad_address_is_rejected(address):
    errors = hh.host_errors([{"name": "node-a", "address": address, "slots": 1}])
    assert len(errors) == 1
    assert "host 0 (node-a): address" in errors[0]


def test_missing_name_is_named_by_index():
    errors = hh.host_errors([{"address": "192.0.2.10", "slots": 1}])
    assert errors == ["host 0: name is missing or empty; set it to a host name or IPv4 address"]


def test_unknown_key_is_rejected():
    errors = hh.host_errors([{"name": "a", "address": "192.0.2.10", "slot": 1}])
    assert "host 0 (a): unknown key(s) slot; only name, address and slots are allowed" in errors
    assert any("slots is missing" in e for e in errors)


@pytest.mark.parametrize(
    ("value", "fragment"),
    [
        ([], "the host list is empty"),
        (None, "must be a list"),
        ("node-a:2", "must be a list"),
        ({"name": "a"}, "must be a list"),
        (["node-a"], "host 0: must be a dictionary"),
    ],
)
def test_bad_list_shapes(value, fragment):
    errors = hh.host_errors(value)
    assert len(errors) == 1
    assert fragment in errors[0]


def test_every_problem_is_reported_at_once():
    hosts = [
        {"name": "a", "address": "192.0.2.10", "slots": 0},
        {"name": "a", "address": "192.0.2.10", "slots": 1},
    ]
    assert len(hh.host_errors(hosts)) == 3


def test_valid_list_has_no_errors():
    assert hh.host_errors(TWO) == []
    assert hh.host_errors(tuple(TWO)) == []


def test_bad_key_is_rejected():
    with pytest.raises(ValueError, match="key must be address or name"):
        hh.hostfile(TWO, key="ip")
