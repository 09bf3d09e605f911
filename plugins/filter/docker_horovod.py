# Copyright: multinode.horovod contributors
# SPDX-License-Identifier: GPL-3.0-or-later
"""Filters of the docker_horovod role: parse what the host and Docker report, validate inputs.

Kept in Python (not Jinja) so that the parsing of lspci, nvidia-smi, docker top and pip output is
unit-tested (tests/unit/test_docker_horovod_filters.py). How the role reads its own values (sizes, image
references, patterns) lives in plugins/module_utils/docker_horovod_values.py, which the role's input
rules share.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from ansible.errors import AnsibleFilterError
from ansible_collections.multinode.horovod.plugins.module_utils import jobs
from ansible_collections.multinode.horovod.plugins.module_utils.docker_horovod_values import (
    ca_places,
    canonical_name,
    image_reference,
    invalid_regexes,
    size_bytes,
)

# `lspci -n` line: "3b:00.0 0302: 10de:1db6 (rev a1)"; PCI class 03xx is a display controller
# (0300 VGA, 0302 3D). NVIDIA's audio functions (0403) and NVSwitch bridges (0680) are not GPUs.
_LSPCI_NVIDIA_GPU = re.compile(r"^\S+\s+(?:Class\s+)?03[0-9a-f]{2}:\s+10de:[0-9a-f]{4}", re.IGNORECASE)
# `nvidia-smi -L` line: "GPU 0: NVIDIA A100-SXM4-80GB (UUID: GPU-...)"; MIG devices are indented.
_NVIDIA_SMI_GPU = re.compile(r"^GPU\s+\d+:")


def gpu_count_pci(lspci_output: str) -> int:
    """Number of NVIDIA display controllers in `lspci -n` (or `lspci -n -d 10de:`) output."""
    return sum(1 for line in (lspci_output or "").splitlines() if _LSPCI_NVIDIA_GPU.match(line.strip()))


def gpu_count_smi(nvidia_smi_output: str) -> int:
    """Number of GPUs in `nvidia-smi -L` output (MIG instances listed under a GPU are not counted)."""
    return sum(1 for line in (nvidia_smi_output or "").splitlines() if _NVIDIA_SMI_GPU.match(line))


def job_processes(top_output: str, idle_patterns: Iterable[str] = ()) -> list[str]:
    """Processes of `docker top NAME -o pid,args` output that are a running job.

    The definition is shared with horovod_launch (plugins/module_utils/jobs.py): every process that
    neither the container's built-in idle patterns nor `idle_patterns` (searched in the command line)
    match. What is returned ("PID ARGS", values of NAME=value words hidden) is what the role calls a
    running job.
    """
    try:
        return jobs.jobs(jobs.parse_top(top_output), idle_patterns or [])
    except jobs.PatternError as exc:
        raise AnsibleFilterError(str(exc)) from exc


def pip_missing(pip_list: Any, packages: Iterable[Mapping[str, str]]) -> list[str]:
    """`name==version` for every wanted package that `pip list --format=json` does not show at that version."""
    installed_raw = json.loads(pip_list) if isinstance(pip_list, str) else pip_list
    if not isinstance(installed_raw, list):
        raise AnsibleFilterError("docker_horovod_pip_missing expects the JSON list of `pip list --format=json`")
    installed = {canonical_name(item["name"]): str(item["version"]) for item in installed_raw}
    missing = []
    for package in packages or []:
        name, version = str(package["name"]), str(package["version"])
        if installed.get(canonical_name(name)) != version:
            missing.append(f"{name}=={version}")
    return missing


def bind_specs(volumes: Iterable[Mapping[str, Any]]) -> list[str]:
    """`source:target:ro|rw` strings (docker_container's volumes) for docker_horovod_volumes entries."""
    specs = []
    for volume in volumes or []:
        mode = "ro" if volume.get("read_only") else "rw"
        specs.append(f"{volume['source']}:{volume['target']}:{mode}")
    return specs


def device_specs(devices: Iterable[Mapping[str, Any]]) -> list[str]:
    """`path:container_path:permissions` strings (docker_container's devices) for docker_horovod_devices entries."""
    specs = []
    for device in devices or []:
        path = device["path"]
        specs.append(f"{path}:{device.get('container_path') or path}:{device.get('permissions') or 'rwm'}")
    return specs


def _familiar(reference: str) -> str:
    """An image name as `docker save` records it: without Docker Hub's registry and library/."""
    for prefix in ("docker.io/", "index.docker.io/", "registry-1.docker.io/"):
        if reference.startswith(prefix):
            reference = reference[len(prefix) :]
            break
    else:
        return reference
    return reference[len("library/") :] if reference.startswith("library/") else reference


def archive_problem(archive: Mapping[str, Any], image: str, path: str, checksum: str = "") -> str:
    """Why the `docker save` archive at `path` (what multinode.horovod.image_archive_info read) may
    not be loaded for `image`, or "" when it may.

    It must hold exactly one image, tagged `image` and nothing else (`docker load` applies every tag
    in it, so another tag would silently move an image this role does not own), and, when `checksum`
    (``sha256:<hex>``) is given and the module computed the archive's sha256, match it.
    """
    images = list(archive.get("images") or [])
    reference = image_reference(image) or {"name": image, "tag": "", "digest": ""}
    wanted = _familiar(f"{reference['name']}:{reference['tag']}") if reference["tag"] else ""
    if len(images) != 1:
        held = "; ".join(f"{i['id'][:19]} ({', '.join(i['repo_tags']) or 'untagged'})" for i in images) or "none"
        return (
            f"{path} holds {len(images)} images ({held}), not one: docker load would tag them all. "
            f"Save docker_horovod_image alone (docker save -o ARCHIVE {image})."
        )
    tags = [_familiar(str(tag)) for tag in images[0]["repo_tags"]]
    if wanted and wanted not in tags:
        return (
            f"{path} holds an image tagged {', '.join(tags) or '(none)'}, not docker_horovod_image {image}. "
            f"Set docker_horovod_image to the image in the archive, or point docker_horovod_image_archive at an "
            f"archive of {image} alone (docker save -o ARCHIVE {image})."
        )
    if wanted and tags != [wanted]:
        others = ", ".join(tag for tag in tags if tag != wanted)
        return (
            f"{path} also tags {others} besides docker_horovod_image {image}: docker load would apply every tag "
            f"in it and move images this role does not own. Save the image under that one tag "
            f"(docker save -o ARCHIVE {image})."
        )
    computed = str(archive.get("sha256") or "")
    expected = checksum.lower().removeprefix("sha256:") if checksum else ""
    if expected and computed and computed != expected:
        return (
            f"{path} has the sha256 {computed}, but docker_horovod_image_archive_checksum is sha256:{expected}: "
            f"the archive is not the one that was published (changed or truncated). Nothing was loaded. Put "
            f"the published archive there, or set the checksum of the archive you trust (sha256sum ARCHIVE)."
        )
    return ""


def restart_victims(containers: Iterable[Mapping[str, Any]], own_name: str) -> list[str]:
    """Names of the running containers, other than the role's own, that a restart of dockerd stops.

    `containers` is community.docker.docker_host_info's `containers` (running ones; each with `Names`,
    Docker's "/name" spellings). Sorted, each container once under its first name.
    """
    victims = []
    for container in containers or []:
        names = [str(name).lstrip("/") for name in container.get("Names") or []]
        if not names:
            names = [str(container.get("Id", "?"))[:12]]
        if own_name not in names:
            victims.append(names[0])
    return sorted(victims)


class FilterModule:
    """multinode.horovod.docker_horovod_* filters."""

    def filters(self) -> dict[str, Callable[..., Any]]:
        return {
            "docker_horovod_gpu_count_pci": gpu_count_pci,
            "docker_horovod_gpu_count_smi": gpu_count_smi,
            "docker_horovod_size_bytes": size_bytes,
            "docker_horovod_image_reference": image_reference,
            "docker_horovod_invalid_regexes": invalid_regexes,
            "docker_horovod_job_processes": job_processes,
            "docker_horovod_pip_missing": pip_missing,
            "docker_horovod_bind_specs": bind_specs,
            "docker_horovod_device_specs": device_specs,
            "docker_horovod_archive_problem": archive_problem,
            "docker_horovod_restart_victims": restart_victims,
            "docker_horovod_ca_places": ca_places,
        }
