# Copyright: multinode.horovod contributors
# SPDX-License-Identifier: GPL-3.0-or-later
"""plugins/modules/container_sshd_info.py: who holds the port, and the host keys as ssh-keygen loads them."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from checkout import NEEDS_ANSIBLE_CLI, load, run_module

m = load("plugins/modules/container_sshd_info.py", "container_sshd_info")

# What `ss -Hltnp` prints (Debian 12's iproute2), sshd's two processes on one socket among them.
SS = [
    'LISTEN 0      128          0.0.0.0:22        0.0.0.0:*    users:(("sshd",pid=700,fd=3))',
    'LISTEN 0      128       10.0.0.1:12345      0.0.0.0:*    users:(("sshd",pid=4188,fd=3),("sshd",pid=4190,fd=3))',
    'LISTEN 0      4096          [::]:8080          [::]:*    users:(("python3",pid=900,fd=5))',
    "LISTEN 0      128          0.0.0.0:2024      0.0.0.0:*",
    "garbage",
]
# The container's processes: the supervisor and sshd.
OURS = {4101, 4188, 4190}


def test_listeners_read_every_process_of_every_socket():
    assert m.listeners(SS) == [
        {"port": 22, "name": "sshd", "pid": 700},
        {"port": 12345, "name": "sshd", "pid": 4188},
        {"port": 12345, "name": "sshd", "pid": 4190},
        {"port": 8080, "name": "python3", "pid": 900},
        {"port": 2024, "name": None, "pid": None},
    ]


def test_the_containers_own_sshd_on_the_port_is_no_foreign_listener():
    assert m.port_users(m.listeners(SS), 12345, OURS) == {"port_users": [], "host_sshd_ports": [22]}


def test_another_program_on_the_port_is_named_with_its_pid_once():
    found = [
        *m.listeners(SS),
        {"port": 12345, "pid": 900, "name": "nginx"},
        {"port": 12345, "pid": 900, "name": "nginx"},
    ]
    assert m.port_users(found, 12345, OURS)["port_users"] == [{"name": "nginx", "pid": 900}]


def test_another_program_in_the_container_on_the_port_is_foreign_too():
    found = [{"port": 12345, "pid": 4101, "name": "python3"}]
    assert m.port_users(found, 12345, OURS)["port_users"] == [{"name": "python3", "pid": 4101}]


def test_an_sshd_outside_the_container_is_the_hosts_and_on_the_port_foreign():
    found = [*m.listeners(SS), {"port": 2222, "pid": 701, "name": "sshd"}, {"port": 12345, "pid": 702, "name": "sshd"}]
    users = m.port_users(found, 12345, OURS)
    assert users == {"port_users": [{"name": "sshd", "pid": 702}], "host_sshd_ports": [22, 2222, 12345]}


def test_a_listener_ss_shows_no_process_for_is_foreign():
    assert m.port_users(m.listeners(SS), 2024, OURS)["port_users"] == [{"name": "None", "pid": None}]


def test_processes_in_the_containers_cgroup_are_the_containers():
    """describe tells the container's processes by their cgroup: here this test's own process stands for
    the container and ss's listeners are fake."""
    me = os.getpid()
    ss = f'LISTEN 0 128 0.0.0.0:12345 0.0.0.0:* users:(("sshd",pid={me},fd=3))\n'

    def run(argv):
        return (0, ss, "") if argv[0] == "ss" else (1, "", "")

    assert m.describe(12345, me, "/nonexistent", run)["port_users"] == []
    # No container process given: the same sshd is foreign.
    assert m.describe(12345, 0, "/nonexistent", run)["port_users"] == [{"name": "sshd", "pid": me}]
    with pytest.raises(OSError, match="ss -Hltnp failed: no ss"):
        m.describe(12345, me, "/nonexistent", lambda argv: (2, "", "no ss"))


def keygen(path: Path, kind: str, passphrase: str = "") -> str:
    subprocess.run(["ssh-keygen", "-q", "-t", kind, "-N", passphrase, "-C", "root@x", "-f", str(path)], check=True)
    return " ".join(path.with_suffix(".pub").read_text().split()[:2])


def run_command(argv):
    done = subprocess.run(argv, capture_output=True, text=True, check=False)
    return done.returncode, done.stdout, done.stderr


@pytest.mark.skipif(not shutil.which("ssh-keygen"), reason="ssh-keygen is not on PATH")
def test_host_keys_derive_the_public_key_of_each_key_that_loads(tmp_path):
    good = keygen(tmp_path / "ssh_host_ed25519_key", "ed25519")
    keygen(tmp_path / "ssh_host_ecdsa_key", "ecdsa", passphrase="secret")  # a passphrase: does not load
    keygen(tmp_path / "ssh_host_rsa_key", "rsa")
    os.chmod(tmp_path / "ssh_host_rsa_key", 0o644)  # others may read it: ssh-keygen refuses it
    (tmp_path / "ssh_host_rsa_key.pub").write_text("ssh-rsa AAAAother edited by hand\n")
    (tmp_path / "ssh_host_dsa_key").mkdir()  # not a file
    keys = m.host_keys(str(tmp_path), run_command)
    assert sorted(keys) == [str(tmp_path / f"ssh_host_{kind}_key") for kind in ("ecdsa", "ed25519", "rsa")]
    assert keys[str(tmp_path / "ssh_host_ed25519_key")]["public_key"] == good
    assert keys[str(tmp_path / "ssh_host_ed25519_key")]["mode"] == "0600"
    assert keys[str(tmp_path / "ssh_host_ecdsa_key")]["public_key"] == ""
    assert keys[str(tmp_path / "ssh_host_rsa_key")] | {"owner": "-", "group": "-"} == {
        "mode": "0644",
        "owner": "-",
        "group": "-",
        "public_key": "",
    }
    # The private key's text is never returned.
    assert "PRIVATE" not in json.dumps(keys)
    assert m.host_keys(str(tmp_path / "none"), run_command) == {}


@NEEDS_ANSIBLE_CLI
def test_the_module_runs_through_ansible(tmp_path):
    keygen(tmp_path / "ssh_host_ed25519_key", "ed25519")
    args = json.dumps({"port": 1, "container_pid": 0, "key_dir": str(tmp_path)})
    result = run_module("container_sshd_info", json.loads(args), check=True)
    assert result["changed"] is False and result["port_users"] == []
    assert list(result["host_keys"]) == [str(tmp_path / "ssh_host_ed25519_key")]
