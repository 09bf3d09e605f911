# Copyright: multinode.horovod contributors
# SPDX-License-Identifier: GPL-3.0-or-later
"""Unit tests of plugins/filter/container_sshd.py (who holds the port, where the role knocks)."""

from __future__ import annotations

import socket
import subprocess
import threading

import pytest
import yaml
from checkout import REPO, load

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
    assert set(f.FilterModule().filters()) == {
        "container_sshd_port_users",
        "container_sshd_probe_address",
        "container_sshd_host_read",
    }


# What `ss -Hltnp` prints (Debian 12's iproute2), sshd's two processes on one socket among them.
SS = [
    'LISTEN 0      128          0.0.0.0:22        0.0.0.0:*    users:(("sshd",pid=700,fd=3))',
    'LISTEN 0      128       10.0.0.1:12345      0.0.0.0:*    users:(("sshd",pid=4188,fd=3),("sshd",pid=4190,fd=3))',
    'LISTEN 0      4096          [::]:8080          [::]:*    users:(("python3",pid=900,fd=5))',
    "LISTEN 0      128          0.0.0.0:2024      0.0.0.0:*",
]


def test_listeners_read_every_process_of_every_socket():
    assert f.listeners(SS) == [
        {"port": 22, "address": "0.0.0.0", "name": "sshd", "pid": 700},
        {"port": 12345, "address": "10.0.0.1", "name": "sshd", "pid": 4188},
        {"port": 12345, "address": "10.0.0.1", "name": "sshd", "pid": 4190},
        {"port": 8080, "address": "[::]", "name": "python3", "pid": 900},
        {"port": 2024, "address": "0.0.0.0", "name": None, "pid": None},
    ]
    # As port_users reads them: the host's sshd on 22, a program inside the container's list is ours.
    users = f.port_users(f.listeners(SS), ["PID", "4188", "4190"], 8080)
    assert users == {"foreign": [{"name": "python3", "pid": 900}], "host_sshd_ports": [22]}


def test_host_read_splits_the_read_commands_sections():
    text = "\n".join(
        [
            "@@ inspect",
            '[{"State": {"Running": true}, "HostConfig": {"NetworkMode": "host"}, "Mounts": []}]',
            "@@ image",
            "1",
            "no /usr/sbin/sshd",
            "@@ ss",
            *SS[:1],
            "@@ top",
            "PID",
            "4188",
            "@@ banner",
            "SSH-2.0-OpenSSH_9.2p1 Debian-2+deb12u3\r",
            "@@ files",
            "## 700 root:root /etc/multinode-horovod/sshd",
        ]
    )
    read = f.host_read(text)
    assert read["container"]["HostConfig"]["NetworkMode"] == "host"
    assert (read["image_rc"], read["image_output"]) == (1, "no /usr/sbin/sshd")
    assert read["listeners"] == [{"port": 22, "address": "0.0.0.0", "name": "sshd", "pid": 700}]
    assert read["top"] == ["PID", "4188"]
    assert read["banner"] == "SSH-2.0-OpenSSH_9.2p1 Debian-2+deb12u3"


def test_host_read_without_a_container():
    read = f.host_read("@@ inspect\n[]\n@@ image\n1\nError: No such container: horovod\n@@ ss\n@@ top\n")
    assert read["container"] is None
    assert read["image_rc"] == 1
    assert read["listeners"] == [] and read["top"] == []
    assert f.host_read("")["container"] is None and f.host_read("")["image_rc"] == -1
    assert read["banner"] == "" and f.host_read("@@ banner\n@@ files\n")["banner"] == ""


def test_the_read_script_reads_the_banner_on_the_port(tmp_path):
    """vars/main.yml's read on this machine (no container: docker finds none, or is not there) against a
    port where a fake sshd sends its banner: section banner has it; a closed port gives none."""
    script = yaml.safe_load((REPO / "roles/container_sshd/vars/main.yml").read_text())["__container_sshd_read_script"]
    script = script.replace("{{ __container_sshd_dir }}", str(tmp_path / "sshd"))
    script = script.replace("{{ __container_sshd_config }}", str(tmp_path / "sshd" / "sshd_config"))
    assert "{{" not in script
    server = socket.create_server(("127.0.0.1", 0))
    port = server.getsockname()[1]

    def banner() -> None:
        conn, _ = server.accept()
        conn.sendall(b"SSH-2.0-OpenSSH_9.2p1 fake\r\n")
        conn.recv(64)
        conn.close()

    thread = threading.Thread(target=banner, daemon=True)
    thread.start()
    argv = ["sh", "-c", script, "read", "mnh-no-such-container", "true", str(tmp_path), "127.0.0.1", str(port)]
    out = subprocess.run(argv, capture_output=True, text=True, check=False, timeout=30).stdout
    thread.join(timeout=10)
    server.close()
    assert f.host_read(out)["banner"] == "SSH-2.0-OpenSSH_9.2p1 fake"
    out = subprocess.run(argv, capture_output=True, text=True, check=False, timeout=30).stdout
    assert f.host_read(out)["banner"] == ""
