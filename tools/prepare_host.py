#!/usr/bin/env python3
# Copyright: multinode.horovod contributors
# SPDX-License-Identifier: GPL-3.0-or-later
"""Prepare a Debian machine to run this project's tests and lab.

Idempotent and quick when everything is there: installs the Debian packages the test beds need
(Docker engine, debootstrap, uml-utilities, patchelf, ...) only when one is missing, and starts a Docker
daemon only when none answers. Needs root for the installs; prints what it does and why.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from collections.abc import Mapping
from pathlib import Path

import progress  # tools/progress.py: how far a long command is

# command that proves the package is there -> Debian package that provides it
NEEDED: dict[str, str] = {
    "dockerd": "docker.io",
    "debootstrap": "debootstrap",
    "patchelf": "patchelf",
    "uml_mconsole": "uml-utilities",
    "mkfs.ext4": "e2fsprogs",
    "iptables": "iptables",
    "ip": "iproute2",
    "git": "git",
    "ssh": "openssh-client",
    "ssh-keygen": "openssh-client",
    "make": "make",
    # ansible-test sanity's shellcheck test (make ansible-test).
    "shellcheck": "shellcheck",
}
SBIN_DIRS = ("/usr/sbin", "/sbin", "/usr/bin", "/bin", "/usr/local/bin", "/usr/local/sbin")


def log(msg: str) -> None:
    print(f"[prepare-host] {msg}", flush=True)


def have(cmd: str) -> bool:
    return shutil.which(cmd) is not None or any(Path(d, cmd).exists() for d in SBIN_DIRS)


def install_missing(needed: Mapping[str, str] = NEEDED) -> None:
    """Install the Debian package of each command of `needed` that this machine lacks."""
    missing = sorted({pkg for cmd, pkg in needed.items() if not have(cmd)})
    if not missing:
        return
    if os.geteuid() != 0:
        raise SystemExit(f"prepare-host: missing packages {' '.join(missing)}; run as root or install them")
    log(f"installing {' '.join(missing)} from the Debian mirror")
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    for argv in (["apt-get", "update", "-q"], ["apt-get", "install", "-y", "-q", "--no-install-recommends", *missing]):
        # apt's own lines (Get:, Unpacking, Setting up), and a heartbeat while one step runs on.
        rc = progress.watch(argv, lambda text: log(f"apt: {text}"), env=env)
        if rc != 0:
            raise SystemExit(f"prepare-host: {' '.join(argv)} failed (rc {rc})")


def docker_answers() -> bool:
    if not shutil.which("docker"):
        return False
    res = subprocess.run(
        ["docker", "info", "--format", "{{.ServerVersion}}"], capture_output=True, text=True, check=False, timeout=30
    )
    return res.returncode == 0


def start_docker() -> None:
    if docker_answers():
        return
    log("no Docker daemon answers; starting dockerd")
    if Path("/run/systemd/system").is_dir():
        subprocess.run(["systemctl", "start", "docker"], check=False)
    if not docker_answers():
        dockerd = shutil.which("dockerd") or "/usr/sbin/dockerd"
        log_file = Path("/var/log/multinode-horovod-dockerd.log").open("ab")
        subprocess.Popen([dockerd], stdout=log_file, stderr=log_file, start_new_session=True)
    for _ in range(60):
        if docker_answers():
            log("dockerd answers")
            return
        time.sleep(1)
    raise SystemExit("prepare-host: dockerd did not answer within 60 s; see /var/log/multinode-horovod-dockerd.log")


def main() -> int:
    install_missing()
    start_docker()
    return 0


if __name__ == "__main__":
    sys.exit(main())
