"""Checks, from outside the roles, that the containers trust each other the way issue 4 asks.

Every test runs on each machine of the scenario (ssh-node-a is the master)."""

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
MASTER = "ssh-node-a"
NODES = ["ssh-node-a", "ssh-node-b", "ssh-node-c"]
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


def test_sshd_listens_on_the_port(host):
    assert host.socket(f"tcp://0.0.0.0:{PORT}").is_listening


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
    ):
        assert line in settings, line


def test_root_has_no_password(host):
    field = in_container(host, "sh", "-c", "getent shadow root | cut -d: -f2").stdout.strip()
    assert not field.startswith("$"), field


@pytest.mark.parametrize("target", NODES)
def test_ssh_by_name_reaches_that_node(host, target):
    out = in_container(host, "ssh", "-n", "-o", "BatchMode=yes", target, "hostname")
    assert out.rc == 0, out.stderr
    assert out.stdout.strip() == target


@pytest.mark.parametrize("target", NODES)
def test_ssh_by_address_reaches_that_node(host, target):
    out = in_container(host, "ssh", "-n", "-o", "BatchMode=yes", address(target), "hostname")
    assert out.rc == 0, out.stderr
    assert out.stdout.strip() == target


@pytest.mark.parametrize("target", NODES)
def test_name_entry_is_pinned_without_the_client_config(host, target):
    # No config file: only the key, the port and the [name]:port line of known_hosts are used.
    out = in_container(
        host, "ssh", "-n", "-F", "/dev/null", "-p", str(PORT), "-i", "/root/.ssh/id_ed25519",
        "-o", "BatchMode=yes", "-o", "StrictHostKeyChecking=yes", "-o", "UserKnownHostsFile=/root/.ssh/known_hosts",
        "-o", f"HostKeyAlias=[{target}]:{PORT}", f"root@{address(target)}", "hostname",
    )  # fmt: skip
    assert out.rc == 0, out.stderr
    assert out.stdout.strip() == target


def test_password_login_is_refused(host):
    target = address("ssh-node-b")
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


def test_every_key_is_authorised_once(host):
    lines = host.file(f"{SSH_DIR}/authorized_keys").content_string.splitlines()
    for name in NODES:
        public = machine(name).file(f"{SSH_DIR}/id_ed25519.pub").content_string.split()[:2]
        assert sum(1 for line in lines if line.split()[:2] == public) == 1, name


def test_private_keys_stay_where_they_were_made(host):
    key = host.file(f"{SSH_DIR}/id_ed25519")
    assert (key.user, key.group, key.mode) == ("root", "root", 0o600)
    others = [machine(n).file(f"{SSH_DIR}/id_ed25519").sha256sum for n in NODES if n != host.backend.host]
    assert key.sha256sum not in others


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


def test_ssh_in_the_container_is_the_pinning_wrapper(host):
    out = in_container(host, "sh", "-c", "command -v ssh; readlink /usr/local/bin/ssh")
    assert out.stdout.split() == ["/usr/local/bin/ssh", "/root/.ssh/bin/ssh"], out.stdout


# horovodrun 0.28 runs `ssh -o StrictHostKeyChecking=no ...`. 127.0.0.1 is not pinned under that name, so a
# client that honours those options logs in (the control, with the real ssh) and the wrapper refuses.
HOROVODRUN_SSH = ["-o", "StrictHostKeyChecking=no", "-o", "UserKnownHostsFile=/dev/null", "-o", "BatchMode=yes"]


def test_horovodruns_ssh_options_cannot_switch_host_key_checking_off(host):
    if host.backend.host != MASTER:
        pytest.skip("one machine is enough")
    argv = [*HOROVODRUN_SSH, "-n", "-p", str(PORT), "root@127.0.0.1", "true"]
    real = in_container(host, "/usr/bin/ssh", *argv)
    assert real.rc == 0, f"the control must log in: {real.stderr}"
    wrapped = in_container(host, "ssh", *argv)
    assert wrapped.rc == 255, wrapped.stdout
    assert "Host key verification failed" in wrapped.stderr, wrapped.stderr


def test_sshd_comes_back_after_a_container_restart(host):
    if host.backend.host != "ssh-node-c":
        pytest.skip("restarted on one machine")
    host.run_test("docker restart horovod")
    for _ in range(30):
        if in_container(machine(MASTER), "ssh", "-n", "-o", "BatchMode=yes", "ssh-node-c", "true").rc == 0:
            break
        time.sleep(1)
    else:
        pytest.fail("sshd in ssh-node-c's container did not come back within 30 s")
