# Copyright: multinode.horovod contributors
# SPDX-License-Identifier: GPL-3.0-or-later
"""A test bed of real Linux kernels: User-mode Linux instances on a private host bridge.

Used by the ``storage`` Molecule scenario, which needs kernels that can export and mount NFS (the
developer machine's kernel cannot). Everything is made from Debian packages (``user-mode-linux``
for the kernel and its modules, ``debootstrap`` for the root filesystem); see umlbed/kernel.py for
which ``user-mode-linux`` and why.

Subcommands (``python3 tools/umlbed SUBCOMMAND``, or ``python3 -m umlbed`` with tools/ on the path)::

    kernel            fetch (or reuse) the UML kernel; prints its binary and version
    base              build (or reuse) the base image: an ext4 file with systemd, sshd, python3,
                      nfs-kernel-server, nfs-common and docker.io, cached by a hash of its recipe
    up NAME ADDR ...  boot instances (one copy-on-write file each, one veth pair on the bed bridge),
                      in parallel, and wait until each answers on ssh
    down NAME ...     hard-stop instances and remove their link and copy-on-write file
    down-all          remove everything this tool created: instances, links, rules, bridge
    list              print the instances that are up, as JSON
    ssh NAME [CMD]    run a command on an instance (root, the bed key)

The bed is a bridge (``mnhst0``, ``10.213.57.0/24``, the host is ``.1``) with two iptables rules:
traffic within the bridge is accepted (the host's FORWARD policy may drop bridged traffic) and
traffic from the bridge to anywhere else is dropped, so instances reach only each other and the
host. Every created resource is recorded in the state directory before it is made, so
``down-all`` removes exactly what was created, also after a failed or interrupted run.
"""

# The modules, each importing only those listed above it:
#   debian.py    which Debian: the tested releases, the root filesystem's release, mirrors, keyring
#   host.py      BedError, log lines, running commands, locks, cache and state paths, preflight
#   kernel.py    the UML kernel: fetched through apt, verified, patched onto its glibc, reused
#   state.py     the state files: instances/<name>/instance.json and bed.json
#   rootfs.py    the root filesystem: its recipe, the recipe's hash, building and caching the base image
#   network.py   the bridge, addresses, veth link names, MACs and the iptables rules
#   instance.py  booting, waiting for ssh, stopping; up, down, down-all and ssh
#   __main__.py  the command line: argument parsing and dispatch only
