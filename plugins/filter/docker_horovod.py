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
        }
