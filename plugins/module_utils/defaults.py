# Copyright: multinode.horovod contributors
# SPDX-License-Identifier: GPL-3.0-or-later
"""Values that several roles, the site and the tools share: each one written here, once.

Python code imports them (the site's ``SETTINGS`` in gate.py, the roles' rules, jobs.py). YAML cannot
import: a role keeps its own default in ``defaults/main.yml`` and its argument spec (users include roles
on their own), and its constants in ``vars/main.yml``; tests/unit/test_shared_values.py checks every
such copy against this module, and fails when a literal copy turns up anywhere else.
"""

from __future__ import annotations

# Cluster settings the site hands to several roles (plugin_utils/cluster.py SETTINGS: horovod_ssh_port...).
SSH_PORT = 12345
CONTAINER_NAME = "horovod"
SHARE_ROOT = "/data1"
SHARE_DIR = f"{SHARE_ROOT}/share"
# What every node executes from the shared storage (launch scripts, the example, checked-out code, and
# where image archives and wheels belong): only the master writes it; the workers mount it read-only.
ARTIFACT_DIR_NAME = "artifacts"
ARTIFACT_DIR = f"{SHARE_ROOT}/{ARTIFACT_DIR_NAME}"

# Host directories the roles agree on (docs/architecture.md "Principles that cut across roles"):
# container_sshd fills SSHD_DIR (sshd_config, host keys), docker_horovod mounts it read-only at the same
# path and ssh_trust reads the host keys there; ssh_trust fills SSH_DIR, which docker_horovod mounts
# read-only at CONTAINER_SSH_DIR; CONTAINER_OWN_DIR is docker_horovod's own (supervisor, extra CA).
CONFIG_ROOT = "/etc/multinode-horovod"
SSHD_DIR = f"{CONFIG_ROOT}/sshd"
SSH_DIR = f"{CONFIG_ROOT}/ssh"
CONTAINER_OWN_DIR = f"{CONFIG_ROOT}/container"
CONTAINER_SSH_DIR = "/root/.ssh"
# docker_horovod's copy of the extra CA bundle in its directory, which pip in the container reads (PIP_CERT).
CONTAINER_CA = f"{CONTAINER_OWN_DIR}/extra-ca.crt"
# The master's key in its container (ssh_trust makes it, horovod_launch passes it to horovodrun -i).
SSH_KEY_FILE = f"{CONTAINER_SSH_DIR}/id_ed25519"
# The ssh wrapper that forces host key checking (ssh_trust writes it, horovod_launch puts it first on PATH).
SSH_WRAPPER = f"{CONTAINER_SSH_DIR}/bin/ssh"
