# Copyright: multinode.horovod contributors
# SPDX-License-Identifier: GPL-3.0-or-later
"""Effects of nfs_client on a container host (fstab only: this kernel cannot mount NFS)."""

# The scenario has both roles' hosts; these tests are about nfs-client-host only.
testinfra_hosts = ["ansible://nfs-client-host"]


def nfs_lines(host):
    return [line.split() for line in host.file("/etc/fstab").content_string.splitlines() if " nfs " in line]


def test_fstab_has_our_mounts_with_training_defaults(host):
    # The second mount is given as path /export/data/: its trailing slash is dropped.
    assert nfs_lines(host) == [
        ["10.213.7.10:/data1/share", "/data1/share", "nfs", "nfsvers=4.2,hard,_netdev,noatime,nosuid,nodev", "0", "0"],
        ["nfs-a:/export/data", "/mnt/data", "nfs", "nfsvers=4.1,soft,ro,nosuid,nodev", "0", "0"],
    ]


def test_foreign_fstab_line_survives(host):
    assert host.file("/etc/fstab").contains("^LABEL=scratch /scratch ext4 defaults,nofail 0 2$")


def test_client_package_installed(host):
    assert host.package("nfs-common").is_installed
    assert host.exists("showmount")
