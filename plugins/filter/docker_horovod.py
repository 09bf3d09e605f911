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
from ansible_collections.multinode.horovod.plugins.module_utils import defaults, jobs
from ansible_collections.multinode.horovod.plugins.module_utils.docker_horovod_values import (
    ca_places,
    canonical_name,
    image_reference,
    invalid_regexes,
    size_bytes,
)
from ansible_collections.multinode.horovod.plugins.module_utils.listing import section_lines

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


def container_spec(options: Mapping[str, Any]) -> dict[str, Any]:
    """The container's definition (community.docker.docker_container's volumes, devices, capabilities,
    ulimits, env, device_requests) from the role's options.

    `options` holds the role's docker_horovod_share_root, _volumes, _devices, _capabilities, _env, _rdma
    and _gpu_count (without the prefix). The fixed mounts are the directories the roles share
    (plugins/module_utils/defaults.py; RESERVED_TARGETS in docker_horovod_rules.py keeps extra volumes off
    them): the share root rslave, so that a file system mounted under it on the host later (an NFS share
    that comes up after Docker at boot) appears in the running container too; sshd's directory and the
    ssh directory read-only; the role's own directory (supervisor, extra CA) read-only.
    """
    share_root = str(options["share_root"])
    rdma = bool(options.get("rdma"))
    env = options.get("env") or {}
    return {
        "volumes": [
            f"{share_root}:{share_root}:rw,rslave",
            f"{defaults.SSHD_DIR}:{defaults.SSHD_DIR}:ro",
            f"{defaults.SSH_DIR}:{defaults.CONTAINER_SSH_DIR}:ro",
            f"{defaults.CONTAINER_OWN_DIR}:{defaults.CONTAINER_OWN_DIR}:ro",
            *bind_specs(options.get("volumes") or []),
        ],
        "devices": [
            *(["/dev/infiniband:/dev/infiniband:rwm"] if rdma else []),
            *device_specs(options.get("devices") or []),
        ],
        # RDMA pins memory; order kept, each capability once.
        "capabilities": list(dict.fromkeys([*(["IPC_LOCK"] if rdma else []), *(options.get("capabilities") or [])])),
        "ulimits": ["memlock:-1:-1"] if rdma else [],
        # Docker wants strings; YAML turns 1 and true into numbers and booleans.
        "env": {str(name): str(value) for name, value in env.items()},
        # docker run --gpus all
        "device_requests": (
            [{"driver": "nvidia", "count": -1, "capabilities": [["gpu"]]}]
            if int(options.get("gpu_count") or 0) > 0
            else []
        ),
    }


def pip_plan(options: Mapping[str, Any]) -> dict[str, Any]:
    """How the role runs pip in the container: {argv, source_args, cert_env}.

    `options`: the role's docker_horovod_python, _pip_index_url, _pip_wheel_dir, _extra_ca_bundle
    (without the prefix). pip of `python`, or of python3 (else python: horovod/horovod links python to its
    Python and installs pip there) when it is empty; --index-url and --find-links as given, --no-index
    with a wheel directory and no index; PIP_CERT (the bundle as the container sees it) with a bundle.
    """
    python = str(options.get("python") or "")
    index_url = str(options.get("pip_index_url") or "")
    wheel_dir = str(options.get("pip_wheel_dir") or "")
    if python:
        argv = [python, "-m", "pip"]
    else:
        argv = ["/bin/sh", "-c", 'exec "$(command -v python3 || command -v python)" -m pip "$@"', "pip"]
    source_args = [
        *(["--index-url", index_url] if index_url else []),
        *(["--find-links", wheel_dir] if wheel_dir else []),
        *(["--no-index"] if wheel_dir and not index_url else []),
    ]
    cert_env = {"PIP_CERT": defaults.CONTAINER_CA} if options.get("extra_ca_bundle") else {}
    return {"argv": argv, "source_args": source_args, "cert_env": cert_env}


def cli_packages(engine_packages: Iterable[str], distribution: str, major_version: Any) -> list[str]:
    """The docker command line's package to install beside the engine: docker-cli with Debian 13's
    docker.io (which only recommends it; Debian 12's docker.io holds it), nothing otherwise (docker-ce
    brings docker-ce-cli, which conflicts with docker-cli)."""
    try:
        major = int(str(major_version))
    except ValueError:
        major = 0
    if "docker.io" in list(engine_packages or []) and distribution == "Debian" and major >= 13:
        return ["docker-cli"]
    return []


def engine_unit(process_lines: Iterable[str] | None) -> str:
    """The systemd unit dockerd runs in, from the lines "PID", "EXECUTABLE", "UNIT" that engine.yml
    printed (ps -o unit=): "-" or a scope when dockerd runs outside a service (which the role cannot
    restart); docker.service when nothing was read."""
    lines = list(process_lines or [])
    unit = lines[2].strip() if len(lines) > 2 else ""
    return unit or "docker.service"


def nvidia_pending(dry_run: str | None, daemon_json: str) -> bool:
    """Whether nvidia-ctk would change Docker's configuration: what its --dry-run printed (None when
    it could not run: check mode before the toolkit is installed, which is taken as a change) against
    the current /etc/docker/daemon.json ("" when there is none)."""
    if dry_run is None:
        return True
    try:
        return json.loads(dry_run) != json.loads(daemon_json or "{}")
    except json.JSONDecodeError as exc:
        raise AnsibleFilterError(f"docker_horovod_nvidia_pending: not JSON: {exc}") from exc


def ca_pending(wanted: bool, stat: Mapping[str, Any], bundle_sha1: str) -> bool:
    """Whether the role's extra CA file in the host's trust store must be written (wanted, and absent or
    with another content than the bundle's sha1) or removed (not wanted, and there)."""
    exists = bool(stat.get("exists"))
    if wanted:
        return not exists or str(stat.get("checksum") or "") != bundle_sha1
    return exists


def other_engines(lines: Iterable[str], engine_packages: Iterable[str]) -> list[str]:
    """The Docker engines installed here that the role would not install: from lines "PATH PACKAGE" (a
    dockerd executable and the Debian package that owns it, empty when none does), those whose package
    is not one of docker_horovod_engine_packages, as "PATH (package P)" or "PATH (no Debian package)"."""
    ours = set(engine_packages or [])
    out = []
    for line in lines or []:
        path, _, package = str(line).partition(" ")
        package = package.strip()
        if package not in ours:
            out.append(f"{path} ({'package ' + package if package else 'no Debian package'})")
    return out


def host_read(text: str) -> dict[str, Any]:
    """What the role's one read of the host printed (vars/main.yml, __docker_horovod_read_script), as
    ``{paths: {path: "dir" | "file" | "other"}, host_ca: {exists, checksum}, registry_cas: [path],
    packages: {name: dpkg status}, engine: {status, version, message, process}}``: the kind of each path
    that exists (a missing path is absent), the sha1 of the role's file in the host's trust store (the
    shape of ansible.builtin.stat's result), the role's CA files in Docker's directories of registries, the
    dpkg status ("installed", ...) of each package asked about that dpkg knows, and what the Docker socket
    answered to GET /version (``status`` the HTTP status, 0 when nothing answered, None when the read did
    not ask) with the lines of section ``@@ engine-process`` (the daemon's PID, executable, unit and
    ``cli=PATH``; empty when the read did not look)."""
    paths: dict[str, str] = {}
    host_ca: dict[str, Any] = {"exists": False, "checksum": ""}
    registry_cas: list[str] = []
    packages: dict[str, str] = {}
    engine: dict[str, Any] = {
        "status": None,
        "version": "",
        "message": "",
        "process": section_lines(text, "engine-process") or [],
    }
    for line in (text or "").splitlines():
        kind, _, rest = line.partition(" ")
        if kind in ("dir", "file", "other") and rest:
            paths[rest] = kind
        elif kind == "host-ca" and rest:
            host_ca = {"exists": True, "checksum": rest.strip()}
        elif kind == "registry-ca" and rest:
            registry_cas.append(rest)
        elif kind == "package" and rest:
            name, _, status = rest.partition(" ")
            packages[name] = status.strip()
        elif kind == "engine-answer" and rest:
            status, _, version = rest.partition(" ")
            engine.update(status=int(status) if status.isdigit() else 0, version=version.strip(), message="")
        elif kind == "engine-silent":
            engine.update(status=0, version="", message=rest.strip())
    return {"paths": paths, "host_ca": host_ca, "registry_cas": registry_cas, "packages": packages, "engine": engine}


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
            "docker_horovod_container_spec": container_spec,
            "docker_horovod_pip_plan": pip_plan,
            "docker_horovod_cli_packages": cli_packages,
            "docker_horovod_engine_unit": engine_unit,
            "docker_horovod_nvidia_pending": nvidia_pending,
            "docker_horovod_ca_pending": ca_pending,
            "docker_horovod_other_engines": other_engines,
            "docker_horovod_host_read": host_read,
        }
