# Copyright: multinode.horovod contributors
# SPDX-License-Identifier: GPL-3.0-or-later
"""Effects of nfs_server on a container host (no kernel NFS: exportfs updates its table only)."""

# The scenario has both roles' hosts; these tests are about nfs-server-host only.
testinfra_hosts = ["ansible://nfs-server-host"]

EXPORTS = "/etc/exports.d/multinode-horovod.exports"


def test_exports_file_has_exactly_our_exports(host):
    f = host.file(EXPORTS)
    assert f.user == "root" and f.mode == 0o644
    lines = [line for line in f.content_string.splitlines() if line and not line.startswith("#")]
    assert lines == [
        "/data1/share 10.213.7.11(rw,sync,no_subtree_check,no_root_squash) "
        "10.213.7.12(rw,sync,no_subtree_check,no_root_squash)",
        "/data1/scratch 10.213.7.0/24(rw,sync,no_subtree_check)",
    ]
    assert "*(" not in f.content_string


def test_foreign_exports_survive(host):
    assert "/srv/foreign 198.51.100.7(ro,sync,no_subtree_check)" in host.file("/etc/exports").content_string
    assert host.file("/etc/exports.d/other-team.exports").contains("198.51.100.8")


def test_exportfs_accepts_and_applies_everything(host):
    host.check_output("exportfs -ra")
    table = host.check_output("exportfs -v")
    for client in ("10.213.7.11", "10.213.7.12", "10.213.7.0/24", "198.51.100.7", "198.51.100.8"):
        assert client in table
    etab = host.file("/var/lib/nfs/etab").content_string
    assert "/data1/share\t10.213.7.11(rw,sync," in etab
    assert "no_root_squash" in etab


def test_export_directories(host):
    share = host.file("/data1/share")
    assert share.is_directory and share.user == "root" and share.mode == 0o755
    scratch = host.file("/data1/scratch")
    assert scratch.is_directory and scratch.user == "nobody" and scratch.group == "nogroup"
    assert scratch.mode == 0o770


def test_server_package_installed(host):
    assert host.package("nfs-kernel-server").is_installed
