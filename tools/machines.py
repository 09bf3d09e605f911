# Copyright: multinode.horovod contributors
# SPDX-License-Identifier: GPL-3.0-or-later
"""The Docker-in-Docker machine, defined once (docs/architecture.md "Test beds").

A DinD machine stands in for a server: a container of the ``machine`` (or ``machine-engine``) image
with systemd as PID 1, its own dockerd and sshd, and no ``--privileged``. What makes it one is here:
tools/lab.py builds its ``docker run`` from :func:`docker_run_args`, and the Molecule scenarios, whose
YAML cannot import this, repeat it in their platforms; tests/unit/test_machines.py reads every
molecule.yml and fails, naming the scenario, the platform and the field, where a copy differs from
:func:`molecule_fields` other than as :data:`DIFFERENCES` lists.

What is a bed's own and not compared: the machines' names, groups and network, and the host
directories each bed mounts (share, artifact directory, image archives).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

IMAGES = ("machine", "machine-engine")
# Explicit capabilities and unconfined seccomp and AppArmor, instead of --privileged.
CAPABILITIES = ("SYS_ADMIN", "NET_ADMIN", "MKNOD", "SYS_PTRACE", "NET_RAW")
SECURITY_OPTS = ("seccomp=unconfined", "apparmor=unconfined")
# systemd and the inner dockerd see the host's cgroup tree (Docker's default on cgroup v1, not on v2).
CGROUPNS = "host"
CGROUP_VOLUME = "/sys/fs/cgroup:/sys/fs/cgroup:rw"
TMPFS = ("/run", "/run/lock")
ENV = {"container": "docker"}
COMMAND = "/sbin/init"
# What systemd takes as "halt": `docker stop` shuts the machine down cleanly (the image's STOPSIGNAL too).
STOP_SIGNAL = "SIGRTMIN+3"
# The inner dockerd's data: not on the container's overlayfs (overlay2 cannot stack on it).
DOCKER_DATA = "/var/lib/docker"

# The mounts that make the machine (the rest of a platform's volumes are the bed's own).
MACHINE_MOUNTS = ("/sys/fs/cgroup", DOCKER_DATA)

# Where a bed's copy may differ, field by field: (scenario or "lab", field) -> (its value, why).
DIFFERENCES: dict[tuple[str, str], tuple[Any, str]] = {
    ("horovod_launch", "tmpfs"): (
        [*TMPFS, f"{DOCKER_DATA}:rw,exec,suid,dev,size=8g"],
        "the inner dockerd's data (the CPU Horovod image, about 1.4 GB a machine) in memory: loading it "
        "writes nothing to disk and removing the machines deletes nothing file by file; Docker's tmpfs "
        "default is noexec, nosuid, nodev and 64 MB, hence the options",
    ),
    ("horovod_launch", "volumes"): ([CGROUP_VOLUME], f"{DOCKER_DATA} is a tmpfs there (tmpfs above)"),
    ("lab", "volumes"): (
        [CGROUP_VOLUME, f"<machine>-docker:{DOCKER_DATA}"],
        "a named volume that carries the lab's label, which `lab.py down` removes by that label "
        "(a scenario's anonymous volume goes with its machine)",
    ),
}
# The scenarios whose platforms are DinD machines (the test fails on one it does not know).
SCENARIOS = ("docker_horovod", "horovod_launch")


def image(name: str = "machine", debian: str | None = None) -> str:
    """The image of a machine, of the Debian release under test (MNH_DEBIAN, as tools/images.py builds it)."""
    if name not in IMAGES:
        raise ValueError(f"{name!r} is not a DinD machine image ({', '.join(IMAGES)})")
    return f"multinode-horovod/{name}:{debian or os.environ.get('MNH_DEBIAN') or 'bookworm'}"


def molecule_image(name: str) -> str:
    """How a molecule.yml names the image (the shell expands MNH_DEBIAN)."""
    return f"multinode-horovod/{name}:${{MNH_DEBIAN:-bookworm}}"


def docker_run_args() -> list[str]:
    """The `docker run` options that make a container a DinD machine, without its /var/lib/docker
    (DIFFERENCES: each bed says where that lives), name, network and the bed's own mounts."""
    args: list[str] = []
    for cap in CAPABILITIES:
        args += ["--cap-add", cap]
    for opt in SECURITY_OPTS:
        args += ["--security-opt", opt]
    args += ["--cgroupns", CGROUPNS, "-v", CGROUP_VOLUME]
    for path in TMPFS:
        args += ["--tmpfs", path]
    for key, value in ENV.items():
        args += ["-e", f"{key}={value}"]
    args += ["--stop-signal", STOP_SIGNAL]
    return args


def molecule_fields(scenario: str) -> dict[str, Any]:
    """The fields of a DinD platform in `scenario`'s molecule.yml, as the definition makes them
    (volumes: only the machine's own mounts, MACHINE_MOUNTS)."""
    fields: dict[str, Any] = {
        "pre_build_image": True,
        "command": COMMAND,
        "capabilities": list(CAPABILITIES),
        "security_opts": list(SECURITY_OPTS),
        "cgroupns_mode": CGROUPNS,
        "privileged": False,
        "tmpfs": list(TMPFS),
        "env": dict(ENV),
        "stop_signal": STOP_SIGNAL,
        "volumes": [CGROUP_VOLUME, DOCKER_DATA],
        "keep_volumes": False,
    }
    for (bed, field), (value, _) in DIFFERENCES.items():
        if bed == scenario:
            fields[field] = value
    return fields


def _target(volume: str) -> str:
    parts = volume.split(":")
    return parts[1] if len(parts) > 1 else parts[0]


def platform_fields(platform: Mapping[str, Any]) -> dict[str, Any]:
    """The fields of a Molecule platform that molecule_fields defines, as the platform has them."""
    fields = {name: platform.get(name) for name in molecule_fields("")}
    fields["privileged"] = platform.get("privileged", False)
    fields["volumes"] = [v for v in platform.get("volumes") or [] if _target(str(v)) in MACHINE_MOUNTS]
    return fields


def drift(scenario: str, platform: Mapping[str, Any]) -> list[str]:
    """How a DinD platform of `scenario` differs from the definition, one sentence a field; [] if it does not."""
    where = f"molecule/{scenario}/molecule.yml, platform {platform.get('name')!r}"
    problems = []
    if platform.get("image") not in {molecule_image(name) for name in IMAGES}:
        problems.append(
            f"{where}: image is {platform.get('image')!r}, not one of the DinD machine images "
            f"{', '.join(molecule_image(name) for name in IMAGES)}"
        )
    wanted = molecule_fields(scenario)
    for field, value in platform_fields(platform).items():
        if value != wanted[field]:
            problems.append(
                f"{where}: {field} is {value!r}, the DinD machine (tools/machines.py) has {wanted[field]!r}; "
                "align it, or list the difference and its reason in tools/machines.py DIFFERENCES"
            )
    return problems
