"""Inventory contract filters of the site playbook (plugins/filter/cluster.py)."""

from __future__ import annotations

import pytest
from checkout import load

cluster = load("plugins/filter/cluster.py", "mnh_cluster")

GOOD_GROUPS = {"horovod_master": ["node-a"], "horovod_workers": ["node-b", "node-c"]}


def good_hostvars(**overrides):
    hostvars = {
        "node-a": {"ansible_host": "192.0.2.10", "horovod_slots": 4},
        "node-b": {"ansible_host": "192.0.2.11", "horovod_slots": "4"},
        "node-c": {"ansible_host": "192.0.2.12"},
    }
    for name, values in overrides.items():
        hostvars[name.replace("_", "-")].update(values)
    return hostvars


def test_sound_inventory_has_no_problems():
    assert cluster.cluster_problems(GOOD_GROUPS, good_hostvars()) == []


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
        ({"horovod_workers": ["node-b"]}, {}, "horovod_master: the group is missing or empty"),
        ({"horovod_master": [], "horovod_workers": ["node-b"]}, {}, "horovod_master: the group is missing"),
        ({"horovod_master": ["node-a", "node-b"], "horovod_workers": []}, {}, "there must be exactly one"),
        ({"horovod_master": ["node-a"], "horovod_workers": ["node-a", "node-b"]}, {}, "node-a: in both"),
        (GOOD_GROUPS, {"node_c": {"ansible_host": "192.0.2.10"}}, "address 192.0.2.10 is also node-a's"),
        (GOOD_GROUPS, {"node_b": {"horovod_slots": -1}}, "horovod_slots=-1 is not a positive integer"),
        (GOOD_GROUPS, {"node_b": {"horovod_slots": 0}}, "horovod_slots=0 is not a positive integer"),
        (GOOD_GROUPS, {"node_b": {"horovod_slots": "four"}}, "horovod_slots='four' is not a positive"),
        (GOOD_GROUPS, {"node_b": {"horovod_slots": 2.5}}, "horovod_slots=2.5 is not a positive"),
        (GOOD_GROUPS, {"node_b": {"horovod_slots": True}}, "horovod_slots=True is not a positive"),
        (GOOD_GROUPS, {"node_a": {"horovod_shared_storage": "lustre"}}, "horovod_shared_storage='lustre'"),
        (GOOD_GROUPS, {"node_a": {"horovod_share_dir": "/srv/share"}}, "must be an absolute path inside"),
        (GOOD_GROUPS, {"node_a": {"horovod_share_dir": "data1/share"}}, "must be an absolute path inside"),
        (GOOD_GROUPS, {"node_a": {"horovod_share_dir": "/data10/share"}}, "must be an absolute path inside"),
    ],
)
def test_each_broken_inventory_is_named(groups, overrides, expected):
    problems = cluster.cluster_problems(groups, good_hostvars(**overrides))
    assert any(expected in p for p in problems), problems


def test_duplicate_short_names_are_refused():
    groups = {"horovod_master": ["gpu1.site-a"], "horovod_workers": ["gpu1.site-b"]}
    hostvars = {"gpu1.site-a": {"ansible_host": "192.0.2.1"}, "gpu1.site-b": {"ansible_host": "192.0.2.2"}}
    (problem,) = cluster.cluster_problems(groups, hostvars)
    assert "short host name gpu1 is also gpu1.site-a's" in problem


def test_every_problem_is_reported_at_once():
    groups = {"horovod_master": ["node-a", "node-b"], "horovod_workers": ["node-b"]}
    hostvars = good_hostvars(node_b={"horovod_slots": -2})
    assert len(cluster.cluster_problems(groups, hostvars)) == 3
