# Copyright: multinode.horovod contributors
# SPDX-License-Identifier: GPL-3.0-or-later
"""Checks, from outside the roles, that the containers trust each other the way issues 4 and 12 ask.

Every test runs on each machine of the scenario (launch-a is the master, the only node with a key:
ssh_trust_mesh is false)."""

from __future__ import annotations

import functools
import os
import re
import time

import pytest
import testinfra

PORT = 12345
SSHD_DIR = "/etc/multinode-horovod/sshd"
SSH_DIR = "/etc/multinode-horovod/ssh"
MASTER = "launch-a"
NODES = ["launch-a", "launch-b", "launch-c"]
FOREIGN_KEY = "AAAAC3NzaC1lZDI1NTE5AAAAILRhUlCl2AN8II5UmpT81EseKUR7QfTu1EFSDPAHyshr"


@functools.cache
def machine(name: str) -> testinfra.host.Host:
    return testinfra.get_host(f"ansible://{name}?ansible_inventory={os.environ['MOLECULE_INVENTORY_FILE']}")


@functools.cache
def address(name: str) -> str:
    return machine(name).ansible("setup", "filter=ansible_default_ipv4")["ansible_facts"]["ansible_default_ipv4"][
        "address"
    ]


def in_container(host: testinfra.host.Host, *argv: str) -> testinfra.backend.base.CommandResult:
    return host.run_expect([0, 1, 255], "docker exec horovod " + " ".join(f"'{a}'" for a in argv))


def test_sshd_listens_on_the_cluster_address_only(host):
    assert host.socket(f"tcp://{address(host.backend.host)}:{PORT}").is_listening
    assert not host.socket(f"tcp://0.0.0.0:{PORT}").is_listening
    # Every other address of the node (loopback, the machine's docker0): the connection is refused.
    mine = address(host.backend.host)
    others = ["127.0.0.1"] + [a for a in host.check_output("hostname -I").split() if a != mine and ":" not in a]
    for other in others:
        # in_container quotes each argument in single quotes: the program uses double ones.
        out = in_container(host, "python3", "-c", f'import socket; socket.create_connection(("{other}", {PORT}), 5)')
        assert out.rc == 1 and "ConnectionRefusedError" in out.stderr, (other, out.stderr)


def test_effective_sshd_config_is_key_only(host):
    out = in_container(host, "/usr/sbin/sshd", "-T", "-f", f"{SSHD_DIR}/sshd_config")
    assert out.rc == 0, out.stderr
    settings = set(out.stdout.splitlines())
    for line in (
        f"port {PORT}",
        "permitrootlogin without-password",
        "pubkeyauthentication yes",
        "passwordauthentication no",
        "kbdinteractiveauthentication no",
        "permitemptypasswords no",
        "usepam no",
        "strictmodes yes",
        "authorizedkeysfile /root/.ssh/authorized_keys",
        f"listenaddress {address(host.backend.host)}:{PORT}",
        *(f"allowusers root@{address(n)}" for n in NODES),
        "disableforwarding yes",
        "allowtcpforwarding no",
        "allowagentforwarding no",
        "allowstreamlocalforwarding no",
        "x11forwarding no",
        "permittunnel no",
    ):
        assert line in settings, line


def test_root_has_no_password(host):
    field = in_container(host, "sh", "-c", "getent shadow root | cut -d: -f2").stdout.strip()
    assert not field.startswith("$"), field


@pytest.mark.parametrize("target", NODES)
def test_the_master_reaches_every_node_by_name_and_address(host, target):
    if host.backend.host != MASTER:
        pytest.skip("only the master holds a key")
    for name in (target, address(target)):
        out = in_container(host, "ssh", "-n", "-o", "BatchMode=yes", name, "hostname")
        assert out.rc == 0, out.stderr
        assert out.stdout.strip() == target


@pytest.mark.parametrize("target", NODES)
def test_a_worker_cannot_log_in_anywhere(host, target):
    if host.backend.host == MASTER:
        pytest.skip("the master holds the cluster key")
    out = in_container(host, "ssh", "-n", "-o", "BatchMode=yes", target, "true")
    assert out.rc == 255
    assert "Permission denied (publickey)." in out.stderr, out.stderr


def test_the_key_is_refused_from_outside_the_cluster(host):
    if host.backend.host != MASTER:
        pytest.skip("only the master holds a key")
    # The same key and node, from a source address that is not the cluster's.
    out = in_container(host, "ssh", "-n", "-b", "127.0.0.1", "-o", "BatchMode=yes", MASTER, "true")
    assert out.rc == 255
    assert "Permission denied (publickey)." in out.stderr, out.stderr


def test_forwarding_is_refused(host):
    if host.backend.host != MASTER:
        pytest.skip("only the master holds a key")
    target = "launch-b"
    tcp = in_container(host, "ssh", "-o", "BatchMode=yes", "-W", f"{address(target)}:{PORT}", target)
    assert tcp.rc == 255 and "administratively prohibited" in tcp.stderr, tcp.stderr
    remote = in_container(
        host,
        "ssh",
        "-n",
        "-o",
        "BatchMode=yes",
        "-o",
        "ExitOnForwardFailure=yes",
        "-R",
        "0:127.0.0.1:22",
        target,
        "true",
    )
    assert remote.rc == 255 and "remote port forwarding failed" in remote.stderr, remote.stderr
    agent = in_container(
        host, "ssh-agent", "ssh", "-n", "-A", "-o", "BatchMode=yes", target, "echo agent=${SSH_AUTH_SOCK:-none}"
    )
    assert agent.rc == 0, agent.stderr
    assert agent.stdout.strip() == "agent=none"


def test_ssh_in_the_container_is_the_pinning_wrapper(host):
    out = in_container(host, "sh", "-c", "command -v ssh; readlink /usr/local/bin/ssh")
    assert out.stdout.split() == ["/usr/local/bin/ssh", "/root/.ssh/bin/ssh"]


@pytest.mark.parametrize("target", NODES)
def test_name_entry_is_pinned_without_the_client_config(host, target):
    if host.backend.host != MASTER:
        pytest.skip("only the master holds a key")
    # No config file: only the key, the port and the [name]:port line of known_hosts are used.
    out = in_container(
        host, "ssh", "-n", "-F", "/dev/null", "-p", str(PORT), "-i", "/root/.ssh/id_ed25519",
        "-o", "BatchMode=yes", "-o", "StrictHostKeyChecking=yes", "-o", "UserKnownHostsFile=/root/.ssh/known_hosts",
        "-o", f"HostKeyAlias=[{target}]:{PORT}", f"root@{address(target)}", "hostname",
    )  # fmt: skip
    assert out.rc == 0, out.stderr
    assert out.stdout.strip() == target


def test_password_login_is_refused(host):
    target = address("launch-b")
    for method in ("password", "keyboard-interactive"):
        out = in_container(
            host, "ssh", "-n", "-F", "/dev/null", "-p", str(PORT), "-o", "BatchMode=yes",
            "-o", f"PreferredAuthentications={method}", "-o", "PubkeyAuthentication=no",
            "-o", "StrictHostKeyChecking=yes", "-o", "UserKnownHostsFile=/root/.ssh/known_hosts",
            f"root@{target}", "true",
        )  # fmt: skip
        assert out.rc == 255
        # The server offers public keys and nothing else.
        assert "Permission denied (publickey)." in out.stderr, out.stderr


def test_unrelated_key_survives(host):
    assert FOREIGN_KEY in host.file(f"{SSH_DIR}/authorized_keys").content_string


def test_only_the_master_key_is_authorised_once_from_the_cluster(host):
    lines = host.file(f"{SSH_DIR}/authorized_keys").content_string.splitlines()
    public = " ".join(machine(MASTER).file(f"{SSH_DIR}/id_ed25519.pub").content_string.split()[:2])
    source = ",".join(address(n) for n in NODES)
    ours = [line for line in lines if "multinode-horovod:" in line]
    assert ours == [f'from="{source}" {public} multinode-horovod:{MASTER}'], lines


def test_only_the_master_holds_a_private_key(host):
    key = host.file(f"{SSH_DIR}/id_ed25519")
    if host.backend.host != MASTER:
        assert not key.exists
        assert not host.file(f"{SSH_DIR}/id_ed25519.pub").exists
        return
    assert (key.user, key.group, key.mode) == ("root", "root", 0o600)


def test_directories_are_root_only(host):
    for path in (SSHD_DIR, SSH_DIR):
        d = host.file(path)
        assert (d.user, d.mode) == ("root", 0o700), path
    for path in (f"{SSHD_DIR}/sshd_config", f"{SSHD_DIR}/ssh_host_ed25519_key", f"{SSHD_DIR}/ssh_host_rsa_key"):
        assert host.file(path).mode == 0o600, path


def test_known_hosts_pins_every_node_by_name_and_address(host):
    known = host.file(f"{SSH_DIR}/known_hosts").content_string
    for name in NODES:
        for key_file in ("ssh_host_ed25519_key.pub", "ssh_host_rsa_key.pub"):
            key = " ".join(machine(name).file(f"{SSHD_DIR}/{key_file}").content_string.split()[:2])
            assert f"[{name}]:{PORT},[{address(name)}]:{PORT} {key}" in known, (name, key_file)


def test_host_key_checking_is_never_disabled(host):
    out = host.run(f"grep -rniE 'StrictHostKeyChecking[[:space:]=]+(no|off|accept-new)' {SSH_DIR} {SSHD_DIR}")
    assert out.rc == 1, out.stdout
    assert re.search(r"^\s*StrictHostKeyChecking yes$", host.file(f"{SSH_DIR}/config").content_string, re.M)


# horovodrun 0.28 runs `ssh -o StrictHostKeyChecking=no ...`. Under the alias "unpinned" the master's own
# address has no known_hosts entry, so a client that honours those options logs in (the control, with the
# real ssh) and the wrapper refuses.
HOROVODRUN_SSH = ["-o", "StrictHostKeyChecking=no", "-o", "UserKnownHostsFile=/dev/null", "-o", "BatchMode=yes"]


def test_horovodruns_ssh_options_cannot_switch_host_key_checking_off(host):
    if host.backend.host != MASTER:
        pytest.skip("one machine is enough")
    argv = [*HOROVODRUN_SSH, "-o", "HostKeyAlias=unpinned", "-n", "-p", str(PORT), f"root@{address(MASTER)}", "true"]
    real = in_container(host, "/usr/bin/ssh", *argv)
    assert real.rc == 0, f"the control must log in: {real.stderr}"
    wrapped = in_container(host, "ssh", *argv)
    assert wrapped.rc == 255, wrapped.stdout
    assert "Host key verification failed" in wrapped.stderr, wrapped.stderr


def test_sshd_comes_back_after_a_container_restart(host):
    if host.backend.host != "launch-c":
        pytest.skip("restarted on one machine")
    host.run_test("docker restart horovod")
    for _unused in range(30):
        if in_container(machine(MASTER), "ssh", "-n", "-o", "BatchMode=yes", "launch-c", "true").rc == 0:
            break
        time.sleep(1)
    else:
        pytest.fail("sshd in launch-c's container did not come back within 30 s")
