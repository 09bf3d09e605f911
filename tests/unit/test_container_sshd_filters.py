# Copyright: multinode.horovod contributors
# SPDX-License-Identifier: GPL-3.0-or-later
"""Unit tests of plugins/filter/container_sshd.py (who holds the port, where the role knocks)."""

from __future__ import annotations

import pytest
from checkout import load

f = load("plugins/filter/container_sshd.py", "container_sshd_filters")

# `docker top horovod -o pid`: the header, the supervisor, sshd.
TOP = ["PID", "4101", "4188"]
LISTEN = [
    {"port": 22, "pid": 700, "name": "sshd", "address": "0.0.0.0", "protocol": "tcp"},
    {"port": 12345, "pid": 4188, "name": "sshd", "address": "10.0.0.1", "protocol": "tcp"},
]


def test_the_containers_own_sshd_on_the_port_is_no_foreign_listener():
    users = f.port_users(LISTEN, TOP, 12345)
    assert users == {"foreign": [], "host_sshd_ports": [22]}


def test_another_program_on_the_port_is_named_with_its_pid():
    listen = [*LISTEN, {"port": 12345, "pid": 900, "name": "nginx"}, {"port": 12345, "pid": 900, "name": "nginx"}]
    assert f.port_users(listen, TOP, "12345")["foreign"] == [{"name": "nginx", "pid": 900}]


def test_another_program_in_the_container_on_the_port_is_foreign_too():
    listen = [{"port": 12345, "pid": 4101, "name": "python3"}]
    assert f.port_users(listen, TOP, 12345)["foreign"] == [{"name": "python3", "pid": 4101}]


def test_an_sshd_outside_the_container_is_the_hosts_and_on_the_port_foreign():
    listen = [*LISTEN, {"port": 2222, "pid": 701, "name": "sshd"}, {"port": 12345, "pid": 702, "name": "sshd"}]
    users = f.port_users(listen, TOP, 12345)
    assert users["foreign"] == [{"name": "sshd", "pid": 702}]
    assert users["host_sshd_ports"] == [22, 2222, 12345]


@pytest.mark.parametrize(
    ("ansible_port", "connection", "ports"),
    [
        (2200, "ssh", [22, 2200]),
        (2200, "ansible.builtin.ssh", [22, 2200]),
        (None, "ssh", [22]),
        (2200, "community.docker.docker", [22]),
        (2200, "local", [22]),
    ],
)
def test_the_port_ansible_connects_to_counts_only_over_ssh(ansible_port, connection, ports):
    assert f.port_users(LISTEN, TOP, 12345, ansible_port, connection)["host_sshd_ports"] == ports


def test_no_listeners_and_no_container_processes():
    assert f.port_users([], [], 12345, 22, "docker") == {"foreign": [], "host_sshd_ports": []}


@pytest.mark.parametrize(
    ("addresses", "probe"),
    [
        ([], "127.0.0.1"),
        (None, "127.0.0.1"),
        (["0.0.0.0"], "127.0.0.1"),
        (["10.0.0.1", "0.0.0.0"], "127.0.0.1"),
        (["10.0.0.1", "10.0.1.1"], "10.0.0.1"),
        (["[fd00::1]"], "fd00::1"),
    ],
)
def test_the_probe_address(addresses, probe):
    assert f.probe_address(addresses) == probe


def test_filter_names():
    assert set(f.FilterModule().filters()) == {"container_sshd_port_users", "container_sshd_probe_address"}
