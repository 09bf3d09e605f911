# Copyright: multinode.horovod contributors
# SPDX-License-Identifier: GPL-3.0-or-later
"""The docker_horovod role's decisions and how it reads its values (sizes, image references, names).

Pure functions behind the role's filters (plugins/filter/docker_horovod.py) and its input rules
(plugins/plugin_utils/docker_horovod_rules.py), so that both read a value the same way.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from typing import Any

from ansible_collections.multinode.horovod.plugins.module_utils import defaults
from ansible_collections.multinode.horovod.plugins.module_utils.values import switch

# Docker's size syntax as the engine parses it (units case-insensitive, "b" suffix optional).
_SIZE = re.compile(r"^([0-9]+)\s*(?:([kmgt])b?|b)?$", re.IGNORECASE)
_SIZE_FACTORS = {"": 1, "k": 1024, "m": 1024**2, "g": 1024**3, "t": 1024**4}
# Docker image reference: [registry[:port]/]path[:tag][@digest]
_COMPONENT = r"[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*"
_DOMAIN = r"(?:(?:localhost|[a-zA-Z0-9-]+(?:\.[a-zA-Z0-9-]+)+)(?::[0-9]+)?|[a-zA-Z0-9-]+:[0-9]+)"
_REFERENCE = re.compile(
    rf"(?P<name>(?:{_DOMAIN}/)?{_COMPONENT}(?:/{_COMPONENT})*)"
    r"(?::(?P<tag>[\w][\w.-]{0,127}))?"
    r"(?:@(?P<digest>sha256:[0-9a-f]{64}))?"
)


def docker_size(value: Any) -> int | None:
    """Bytes of a Docker size ("16g", "1536m", "1073741824", "0g"); None when it does not parse."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value if value >= 0 else None
    match = _SIZE.match(str(value).strip())
    if not match:
        return None
    return int(match.group(1)) * _SIZE_FACTORS[(match.group(2) or "").lower()]


def size_bytes(value: Any) -> int | None:
    """Bytes of a Docker size of at least one byte; None when it does not parse or is zero."""
    size = docker_size(value)
    return size if size else None


def image_reference(value: Any) -> dict[str, str] | None:
    """Split an image reference into name, tag and digest; None when it is not a valid reference."""
    match = _REFERENCE.fullmatch(str(value or ""))
    if not match:
        return None
    return {key: match.group(key) or "" for key in ("name", "tag", "digest")}


# Docker Hub under its names: dockerd trusts only the host's trust store for it (moby ignores
# /etc/docker/certs.d for Docker Hub's index).
DOCKER_HUB = frozenset({"docker.io", "index.docker.io", "registry-1.docker.io"})
# The role's file in Docker's directory of a registry (/etc/docker/certs.d/<registry>/); tasks/daemon.yml
# finds stale ones by this name.
REGISTRY_CA_NAME = "multinode-horovod-extra-ca.crt"


def registry_of(name: str) -> str:
    """The registry host (and port) an image name is pulled from, as Docker reads it: the first path
    component when it has a dot or a colon or is localhost, else Docker Hub (docker.io)."""
    first, sep, _rest = name.partition("/")
    if sep and ("." in first or ":" in first or first == "localhost"):
        return first
    return "docker.io"


def ca_places(image: Any, archive: Any, gpu_count: Any, nvidia_repo_url: Any, bundle: Any = "") -> dict[str, Any]:
    """Where the extra CA bundle goes on the host (README.md, "Where the extra CA bundle goes"):
    {host_store: something on the host needs the host's trust store, registry: the registry other than
    Docker Hub the image is pulled from or "", host_file: the role's file belongs in the trust store,
    registry_file: the role's file in Docker's directory of that registry or ""}."""
    ref = image_reference(image)
    registry = registry_of(ref["name"]) if ref is not None and not archive else ""
    nvidia_https = int(gpu_count or 0) > 0 and str(nvidia_repo_url or "").startswith("https://")
    host_store = registry in DOCKER_HUB or nvidia_https
    other = "" if registry in DOCKER_HUB else registry
    return {
        "host_store": host_store,
        "registry": other,
        "host_file": bool(bundle) and host_store,
        "registry_file": f"/etc/docker/certs.d/{other}/{REGISTRY_CA_NAME}" if bundle and other else "",
    }


def canonical_name(name: str) -> str:
    """A Python distribution name as pip compares them (PEP 503: runs of -, _ and . are one -)."""
    return re.sub(r"[-_.]+", "-", name).lower()


def _binds(volumes: Iterable[Mapping[str, Any]]) -> list[str]:
    return [f"{v['source']}:{v['target']}:{'ro' if v.get('read_only') else 'rw'}" for v in volumes or []]


def _devices(devices: Iterable[Mapping[str, Any]]) -> list[str]:
    return [
        f"{d['path']}:{d.get('container_path') or d['path']}:{d.get('permissions') or 'rwm'}" for d in devices or []
    ]


RDMA_AUTO = "auto"


def rdma_mode(value: object) -> str | bool | None:
    """docker_horovod_rdma as the role reads it: ``auto``, True or False (any boolean Ansible's ``bool``
    type reads, such as ``yes`` or ``"true"`` from -e), or None for anything else."""
    if isinstance(value, str) and value.strip().lower() == RDMA_AUTO:
        return RDMA_AUTO
    return switch(value)


def rdma_enabled(value: object, infiniband: object) -> bool:
    """Whether the container gets the RDMA devices: asked for (true), or ``auto`` on a host whose
    /dev/infiniband exists (`infiniband`: what the role read there). A bad value is never on."""
    mode = rdma_mode(value)
    return mode is True or (mode == RDMA_AUTO and bool(infiniband))


PREFIX = "docker_horovod_"


ULIMIT_NAMES = ("memlock", "stack", "nofile")


def ulimits(given: Any, rdma: bool) -> list[str]:
    """The container's ulimits as community.docker.docker_container takes them (``name:soft:hard``): the
    unlimited memlock RDMA pins memory with, then docker_horovod_ulimits (``[{name, soft, hard}]``), whose
    memlock replaces RDMA's."""
    out = {"memlock": "memlock:-1:-1"} if rdma else {}
    for item in given or []:
        out[str(item["name"])] = f"{item['name']}:{int(item['soft'])}:{int(item['hard'])}"
    return list(out.values())


def gpu_requests(gpu_ids: Any, gpu_count: int) -> list[dict[str, Any]]:
    """The container's device requests: the GPUs of `gpu_ids` (nvidia-smi -L indexes) only, else every GPU
    where the host has any."""
    if gpu_ids:
        return [{"driver": "nvidia", "device_ids": [str(i) for i in gpu_ids], "capabilities": [["gpu"]]}]
    return [{"driver": "nvidia", "count": -1, "capabilities": [["gpu"]]}] if gpu_count else []


def container_spec(options: Mapping[str, Any]) -> dict[str, Any]:
    """What community.docker.docker_container gets from the role's options (share_root, volumes, devices,
    capabilities, env, rdma, gpu_count, shm_size; with or without the prefix: the role hands it all its
    variables, so an option the spec reads needs no change in the tasks) and ``infiniband``, whether the
    host has /dev/infiniband (docker_horovod_rdma: auto passes it exactly then).

    The fixed mounts are the directories the roles share (RESERVED_TARGETS in docker_horovod_rules.py keeps
    extra volumes off them): the share root rslave, so that a file system mounted under it later (an NFS
    share that comes up after Docker at boot) appears in the running container too; sshd's and the ssh
    directory read-only; the role's own directory (supervisor, extra CA) read-only.
    """
    options = {str(name).removeprefix(PREFIX): value for name, value in options.items()}
    share_root = str(options["share_root"])
    rdma = rdma_enabled(options.get("rdma", RDMA_AUTO), options.get("infiniband"))
    return {
        "volumes": [
            f"{share_root}:{share_root}:rw,rslave",
            f"{defaults.SSHD_DIR}:{defaults.SSHD_DIR}:ro",
            f"{defaults.SSH_DIR}:{defaults.CONTAINER_SSH_DIR}:ro",
            f"{defaults.CONTAINER_OWN_DIR}:{defaults.CONTAINER_OWN_DIR}:ro",
            *_binds(options.get("volumes") or []),
        ],
        "devices": [*(["/dev/infiniband:/dev/infiniband:rwm"] if rdma else []), *_devices(options.get("devices"))],
        # RDMA pins memory; order kept, each capability once.
        "capabilities": list(dict.fromkeys([*(["IPC_LOCK"] if rdma else []), *(options.get("capabilities") or [])])),
        "ulimits": ulimits(options.get("ulimits"), rdma),
        # Docker wants strings; YAML turns 1 and true into numbers and booleans.
        "env": {str(name): str(value) for name, value in (options.get("env") or {}).items()},
        # docker run --gpus all, or --gpus '"device=0,1"' with gpu_ids
        "device_requests": gpu_requests(options.get("gpu_ids"), int(options.get("gpu_count") or 0)),
        "shm_size": str(size_bytes(options["shm_size"])),
    }


def pip_plan(options: Mapping[str, Any]) -> dict[str, Any]:
    """How the role runs pip in the container, {argv, source_args, cert_env}, from its options python,
    pip_index_url, pip_wheel_dir and extra_ca_bundle (without the prefix).

    pip of `python`, or of python3 (else python: horovod/horovod links python to its Python and installs
    pip there) when it is empty; --no-index with a wheel directory and no index; PIP_CERT with a bundle.
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


def pip_missing(pip_list: Any, packages: Iterable[Mapping[str, str]]) -> list[str]:
    """`name==version` for every wanted package that `pip list --format=json` does not show at that version."""
    installed_raw = json.loads(pip_list) if isinstance(pip_list, str) else pip_list
    if not isinstance(installed_raw, list):
        raise ValueError("expects the JSON list of `pip list --format=json`")
    installed = {canonical_name(item["name"]): str(item["version"]) for item in installed_raw}
    return [
        f"{p['name']}=={p['version']}"
        for p in packages or []
        if installed.get(canonical_name(str(p["name"]))) != str(p["version"])
    ]


def _familiar(reference: str) -> str:
    """An image name as `docker save` records it: without Docker Hub's registry and library/."""
    for prefix in ("docker.io/", "index.docker.io/", "registry-1.docker.io/"):
        if reference.startswith(prefix):
            reference = reference[len(prefix) :]
            return reference.removeprefix("library/")
    return reference


def archive_problem(archive: Mapping[str, Any], image: str, path: str, checksum: str = "") -> str:
    """Why the `docker save` archive at `path` (what multinode.horovod.image_archive_info read) may not be
    loaded for `image`, or "" when it may: it must hold exactly one image, tagged `image` and nothing else
    (`docker load` applies every tag in it, so another tag would silently move an image this role does not
    own), and match `checksum` (``sha256:<hex>``) when one is given and the module computed the sha256."""
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


def nvidia_pending(dry_run: str | None, daemon_json: str) -> bool:
    """Whether nvidia-ctk would change Docker's configuration: its --dry-run output (None when it could
    not run: check mode before the toolkit is installed, taken as a change) against daemon.json ("" when
    there is none)."""
    if dry_run is None:
        return True
    try:
        return json.loads(dry_run) != json.loads(daemon_json or "{}")
    except json.JSONDecodeError as exc:
        raise ValueError(f"nvidia-ctk's dry run or daemon.json is not JSON: {exc}") from exc


def daemon_plan(inputs: Mapping[str, Any]) -> dict[str, Any]:
    """What the role changes that makes dockerd restart, and where the extra CA bundle goes.

    `inputs`: image, image_archive, gpu_count, nvidia_repo_url, extra_ca_bundle (the role's options),
    extra_ca_sha1 (the bundle's), host_ca (docker_horovod_info's {exists, checksum} of the role's file in
    the host's trust store), nvidia_dry_run (nvidia-ctk's --dry-run output, None when it did not run) and
    daemon_json (/etc/docker/daemon.json, "" when there is none). Returns host_file and registry_file (as
    ca_places), ca_pending (the host's file must be written or removed: dockerd reads the trust store only
    when it starts), nvidia_pending, and restart_reason ("" when dockerd need not restart).
    """
    places = ca_places(
        inputs["image"],
        inputs["image_archive"],
        inputs["gpu_count"],
        inputs["nvidia_repo_url"],
        inputs["extra_ca_bundle"],
    )
    host_ca = inputs.get("host_ca") or {}
    if places["host_file"]:
        ca_pending = not host_ca.get("exists") or host_ca.get("checksum") != inputs.get("extra_ca_sha1")
    else:
        ca_pending = bool(host_ca.get("exists"))
    gpus = int(inputs.get("gpu_count") or 0) > 0
    nvidia = gpus and nvidia_pending(inputs.get("nvidia_dry_run"), inputs.get("daemon_json") or "")
    reason = "the extra CA bundle changed" if ca_pending else "the NVIDIA runtime must be registered" if nvidia else ""
    return {
        "host_file": places["host_file"],
        "registry_file": places["registry_file"],
        "ca_pending": ca_pending,
        "nvidia_pending": nvidia,
        "restart_reason": reason,
    }
