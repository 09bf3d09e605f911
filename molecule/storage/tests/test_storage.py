# Copyright: multinode.horovod contributors
# SPDX-License-Identifier: GPL-3.0-or-later
"""NFS between real kernels (UML instances): what one worker writes the master and the other worker
read, only the workers may mount, and a worker's mount comes back after a reboot (fstab).

The tests reach each machine by name, so they run once (not once per host).
"""

import time
import uuid

import pytest
import testinfra

SHARE = "/data1/share"
EXPORT_OPTIONS = {"rw", "sync", "no_subtree_check", "no_root_squash"}


@pytest.fixture(scope="module")
def hosts(request):
    inventory = request.config.option.ansible_inventory
    return {
        name: testinfra.get_host(f"ansible://{name}", ansible_inventory=inventory)
        for name in ("master", "worker1", "worker2", "outsider")
    }


@pytest.fixture(scope="module")
def addr(hosts):
    return {name: host.ansible.get_variables()["ansible_host"] for name, host in hosts.items()}


def run_ok(host, command):
    result = host.run(command)
    assert result.rc == 0, f"{command!r} failed ({result.rc}): {result.stderr}"
    return result.stdout


def nfs_mount(host):
    """(source, fstype, options) of the mount at SHARE, or None."""
    result = host.run(f"findmnt --noheadings --output SOURCE,FSTYPE,OPTIONS --mountpoint {SHARE}")
    if result.rc != 0:
        return None
    source, fstype, options = result.stdout.split()
    return source, fstype, set(options.split(","))


def test_master_exports_the_share_to_the_workers_only(hosts, addr):
    export = run_ok(hosts["master"], "exportfs -s")
    clients = {}
    for line in export.splitlines():
        path, _, rest = line.partition(" ")
        if path == SHARE:
            for spec in rest.split():
                client, _, options = spec.partition("(")
                clients[client] = set(options.rstrip(")").split(","))
    assert set(clients) == {addr["worker1"], addr["worker2"]}
    for options in clients.values():
        assert options >= EXPORT_OPTIONS
    assert hosts["master"].service("nfs-server").is_enabled
    assert hosts["master"].file("/etc/exports.d/multinode-horovod.exports").contains(addr["worker1"])


@pytest.mark.parametrize("worker", ["worker1", "worker2"])
def test_worker_has_the_master_share_mounted(hosts, addr, worker):
    mount = nfs_mount(hosts[worker])
    assert mount is not None, f"nothing is mounted at {SHARE} on {worker}"
    source, fstype, options = mount
    assert source == f"{addr['master']}:{SHARE}"
    assert fstype == "nfs4"
    assert {"rw", "hard"} <= options
    fstab = [line.split() for line in hosts[worker].file("/etc/fstab").content_string.splitlines()]
    assert [f"{addr['master']}:{SHARE}", SHARE, "nfs"] in [fields[:3] for fields in fstab]
    # The image's own root line is foreign to the role and must survive.
    assert ["/dev/ubda", "/", "ext4"] in [fields[:3] for fields in fstab]


def test_file_written_on_worker1_is_read_on_master_and_worker2(hosts):
    token = uuid.uuid4().hex
    path = f"{SHARE}/probe-{token}"
    run_ok(hosts["worker1"], f"echo {token} > {path} && sync")
    try:
        # On the master this is its own disk: the bytes really went to the server.
        assert run_ok(hosts["master"], f"cat {path}").strip() == token
        assert run_ok(hosts["worker2"], f"cat {path}").strip() == token
        # no_root_squash: root on a worker stays root on the share.
        assert run_ok(hosts["master"], f"stat -c %u {path}").strip() == "0"
    finally:
        hosts["master"].run(f"rm -f {path}")
    assert not hosts["worker2"].file(path).exists


def test_outsider_is_refused(hosts, addr):
    outsider = hosts["outsider"]
    # The outsider reaches the server's mountd and sees who may mount: the refusal below is the
    # export list at work, not a network problem.
    listing = run_ok(outsider, f"showmount --exports --no-headers {addr['master']}")
    assert listing.split()[0] == SHARE
    assert set(listing.split()[1].split(",")) == {addr["worker1"], addr["worker2"]}
    run_ok(outsider, "mkdir -p /mnt/probe")
    for version in ("4.2", "3"):
        result = outsider.run(f"mount -t nfs -o nfsvers={version},retry=0 {addr['master']}:{SHARE} /mnt/probe")
        assert result.rc != 0, f"the outsider mounted the share with NFS {version}"
        assert "access denied" in result.stderr, result.stderr
        assert outsider.run("findmnt --mountpoint /mnt/probe").rc == 1


def boot_id(host):
    """The kernel's boot id, or None while the machine does not answer (testinfra raises then)."""
    try:
        result = host.run("cat /proc/sys/kernel/random/boot_id")
    except RuntimeError:
        return None
    return result.stdout.strip() if result.rc == 0 else None


def test_worker_mount_comes_back_after_reboot(hosts):
    worker = hosts["worker1"]
    token = uuid.uuid4().hex
    path = f"{SHARE}/reboot-{token}"
    run_ok(hosts["master"], f"echo {token} > {path}")
    before = boot_id(worker)
    assert before
    # Reboot a second after ssh returns, so the command itself succeeds.
    run_ok(worker, "systemd-run --on-active=1 --timer-property=AccuracySec=100ms systemctl reboot")
    deadline = time.monotonic() + 240
    after = before
    while after in (before, None):
        assert time.monotonic() < deadline, "worker1 did not come back within 240 s after reboot"
        time.sleep(3)
        after = boot_id(worker)
    # Boot may finish a little after sshd answers: wait for the remote-fs target, bounded.
    run_ok(worker, "timeout 120 sh -c 'until systemctl is-active --quiet remote-fs.target; do sleep 1; done'")
    try:
        mount = nfs_mount(worker)
        assert mount is not None, f"{SHARE} is not mounted after the reboot"
        assert mount[1] == "nfs4"
        assert run_ok(worker, f"cat {path}").strip() == token
    finally:
        hosts["master"].run(f"rm -f {path}")
