# Copyright: multinode.horovod contributors
# SPDX-License-Identifier: GPL-3.0-or-later
"""The docker_horovod role's input rules that need no host (the interface: plugins/filter/role_rules.py).

``problems(inputs)`` returns ``(variable, message)`` for every input the role would refuse. The role
checks them first in tasks/assert.yml; the site's gate checks the same rules on what the site hands
to the role, before any play touches a host. What only a host can tell (its OS, the archive and the
wheel directory on it, /dev/infiniband, its users) stays a task in tasks/assert.yml.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from ansible_collections.multinode.horovod.plugins.module_utils import defaults
from ansible_collections.multinode.horovod.plugins.module_utils.docker_horovod_values import (
    RDMA_AUTO,
    ULIMIT_NAMES,
    canonical_name,
    docker_size,
    image_reference,
    rdma_mode,
    size_bytes,
)
from ansible_collections.multinode.horovod.plugins.module_utils.numbers import shown, whole
from ansible_collections.multinode.horovod.plugins.module_utils.openpgp import normalise_fingerprint
from ansible_collections.multinode.horovod.plugins.module_utils.paths import is_inside, path_problem
from ansible_collections.multinode.horovod.plugins.module_utils.values import container_name_problem, plain
from ansible_collections.multinode.horovod.plugins.plugin_utils import roles

Problems = list[tuple[str, str]]
Values = Mapping[str, Any]

# Container paths the role mounts itself (the filter docker_horovod_container_spec); the tests check them.
RESERVED_TARGETS = (defaults.SSHD_DIR, defaults.CONTAINER_SSH_DIR, defaults.CONTAINER_OWN_DIR)
# Of Docker's restart policies (no, on-failure[:N], always, unless-stopped), those that bring the
# container, and with it sshd, back after a reboot or a restart of Docker.
RESTART_POLICIES = ("unless-stopped", "always")

IMAGE_FIX = (
    "use [registry/]name:tag with a pinned tag other than latest, so that every machine runs the same image "
    "(for example horovod/horovod:0.28.1)"
)
SHA256_RE = re.compile(r"sha256:[0-9a-fA-F]{64}")
PIP_NAME_RE = re.compile(r"[A-Za-z0-9]([A-Za-z0-9._-]*[A-Za-z0-9])?")
PIP_VERSION_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9.+!_-]*")
PIP_EXAMPLE = "{name: tqdm, version: 4.66.1}"
PIP_FIX = f"use one such as {PIP_EXAMPLE}, so every container gets the same package"
URL_RE = re.compile(r"https?://[^\s/?#]+(?:[/?#]\S*)?")
ENV_NAME_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
DEVICE_PERMISSIONS_RE = re.compile(r"[rwm]{1,3}")
PEM_MARKER = b"-----BEGIN CERTIFICATE-----"


def _text(variable: str, value: object, fix: str) -> Problems:
    """A problem when `value` is not a string (the spec's type str; YAML null or a number slipped through)."""
    if isinstance(value, str):
        return []
    return [(variable, f"{plain(value)!r} is not a string; {fix}")]


def _shaped(variable: str, value: object, pattern: re.Pattern[str], what: str, fix: str) -> Problems:
    """A problem when `value` is not a string, or is a non-empty one that `pattern` does not match
    whole ("" is allowed: the option is off)."""
    if not isinstance(value, str):
        return _text(variable, value, fix)
    if value and not pattern.fullmatch(value):
        return [(variable, f"{value!r} is not {what}; {fix}")]
    return []


def _normalised_file(value: str) -> bool:
    """Whether `value` has the shape of an absolute, normalised path of a file."""
    return (
        value.startswith("/")
        and value != "/"
        and not value.endswith("/")
        and posixpath.normpath(value) == value
        and not value.startswith("//")
        and not any(ord(char) < 32 or char == "\x7f" for char in value)
    )


def check_image(values: Values) -> Problems:
    variable, value = "docker_horovod_image", values["docker_horovod_image"]
    if not isinstance(value, str):
        return [(variable, f"{plain(value)!r} is not a string; {IMAGE_FIX}")]
    ref = image_reference(value)
    if ref is None:
        return [(variable, f"{value!r} is not a valid image reference (lower-case name, no spaces); {IMAGE_FIX}")]
    if not ref["tag"]:
        return [(variable, f"{value!r} has no tag; {IMAGE_FIX}")]
    if ref["tag"] == "latest":
        return [(variable, f"{value!r} has the tag latest, which moves; {IMAGE_FIX}")]
    return []


def check_shm_size(values: Values) -> Problems:
    value = values["docker_horovod_shm_size"]
    if size_bytes(value) is not None and isinstance(value, (str, int)):
        return []
    if docker_size(value) == 0:
        problem = "is zero bytes; give a size of at least one byte, a whole number with an optional unit"
    else:
        problem = "is not a size Docker can parse; use a whole number above 0 with an optional unit"
    return [("docker_horovod_shm_size", f"{plain(value)!r} {problem} b, k, m, g or t (for example 16g or 1536m)")]


def check_container_name(values: Values) -> Problems:
    problem = container_name_problem(values["docker_horovod_container_name"])
    return [("docker_horovod_container_name", problem)] if problem else []


def check_share_root(values: Values) -> Problems:
    problem = path_problem(values["docker_horovod_share_root"])
    return [("docker_horovod_share_root", problem)] if problem else []


def check_image_archive(values: Values) -> Problems:
    variable, value = "docker_horovod_image_archive", values["docker_horovod_image_archive"]
    fix = 'use the absolute path of a docker save archive on the machine, or "" to pull the image'
    if not isinstance(value, str):
        return _text(variable, value, fix)
    if value and not _normalised_file(value):
        return [(variable, f"{value!r} is not an absolute, normalised file path (no '..', '.', '//'); {fix}")]
    return []


def check_image_archive_checksum(values: Values) -> Problems:
    variable, value = "docker_horovod_image_archive_checksum", values["docker_horovod_image_archive_checksum"]
    fix = 'use "sha256:" and the 64 hex digits that sha256sum prints for the archive, or "" for no check'
    shape = _shaped(variable, value, SHA256_RE, "a sha256 checksum", fix)
    if shape:
        return shape
    if not value or values["docker_horovod_image_archive"]:
        return []
    problem = (
        "is set but docker_horovod_image_archive is empty: only an archive is checked (a pulled image is verified "
        "by its registry); set docker_horovod_image_archive, or leave the checksum empty"
    )
    return [(variable, f"{value!r} {problem}")]


def check_image_load_timeout(values: Values) -> Problems:
    variable, value = "docker_horovod_image_load_timeout", values["docker_horovod_image_load_timeout"]
    seconds = whole(value)
    if seconds is None or seconds < 1:
        return [(variable, f"{shown(value)} is not a number of seconds; use a whole number of 1 or more, e.g. 900")]
    return []


def check_share_mounts(values: Values) -> Problems:
    variable, value = "docker_horovod_share_mounts", values["docker_horovod_share_mounts"]
    fix = "list the mount points below the share root the container needs (the site: the NFS share), or []"
    if not isinstance(value, list):
        return [(variable, f"{plain(value)!r} is not a list; {fix}")]
    root = _share_root(values)
    found: Problems = []
    for number, item in enumerate(value, start=1):
        problem = path_problem(item)
        if problem:
            found.append((variable, f"item {number}: {problem}"))
        elif root is not None and not is_inside(item, root):
            problem = f"is not the share root {root!r} or below it, so the container does not see it; {fix}"
            found.append((variable, f"item {number} ({item!r}) {problem}"))
    return found


def _share_root(values: Values) -> str | None:
    """The share root when it is sound (cross-checks against a broken one would only add noise)."""
    root = values["docker_horovod_share_root"]
    return root if path_problem(root) is None else None


def _each_item(variable: str, value: object, example: str, item_problem: Callable[[Mapping], str | None]) -> Problems:
    """The problems of a list of mappings, its items numbered from 1 in the messages."""
    if not isinstance(value, list):
        return [(variable, f"{plain(value)!r} is not a list; use a list of mappings such as {example}")]
    found: Problems = []
    for number, item in enumerate(value, start=1):
        if not isinstance(item, Mapping):
            found.append((variable, f"item {number} ({plain(item)!r}) is not a mapping; use one such as {example}"))
        elif problem := item_problem(item):
            found.append((variable, f"item {number} ({plain(item)!r}): {problem}"))
    return found


def _volume_problem(item: Mapping, reserved: list[str]) -> str | None:
    for key in ("source", "target"):
        path = item.get(key)
        if not isinstance(path, str) or not path.startswith("/"):
            return f"{key} {plain(path)!r} is not an absolute path"
        if ":" in path:
            return f"{key} {path!r} contains ':', which Docker's bind syntax cannot hold"
    if posixpath.normpath(item["target"]) in reserved:
        return f"target {item['target']!r} is mounted by the role itself ({', '.join(reserved)}); choose another one"
    return None


def check_volumes(values: Values) -> Problems:
    root = values["docker_horovod_share_root"]
    reserved = [*RESERVED_TARGETS, *([root] if isinstance(root, str) else [])]
    return _each_item(
        "docker_horovod_volumes",
        values["docker_horovod_volumes"],
        "{source: /scratch, target: /scratch}",
        lambda item: _volume_problem(item, reserved),
    )


def _device_problem(item: Mapping) -> str | None:
    for key in ("path", "container_path"):
        path = item.get(key, "")
        if key == "container_path" and path == "":
            continue
        if not isinstance(path, str) or not path.startswith("/dev/") or posixpath.normpath(path) != path:
            return f"{key} {plain(path)!r} is not an absolute, normalised path under /dev"
        if ":" in path:
            return f"{key} {path!r} contains ':', which Docker's device syntax cannot hold"
    permissions = item.get("permissions", "rwm")
    if (
        not isinstance(permissions, str)
        or not DEVICE_PERMISSIONS_RE.fullmatch(permissions)
        or len(set(permissions)) != len(permissions)
    ):
        return f"permissions {plain(permissions)!r} is not a combination of r, w and m (for example rwm)"
    return None


def check_devices(values: Values) -> Problems:
    return _each_item(
        "docker_horovod_devices",
        values["docker_horovod_devices"],
        "{path: /dev/fuse, permissions: rwm}",
        _device_problem,
    )


def _ulimit_problem(item: Mapping) -> str | None:
    if item.get("name") not in ULIMIT_NAMES or set(item) != {"name", "soft", "hard"}:
        return f"give name (one of {', '.join(ULIMIT_NAMES)}), soft and hard, and nothing else"
    soft, hard = whole(item["soft"]), whole(item["hard"])
    if soft is None or hard is None or min(soft, hard) < -1:
        return "soft and hard must be whole numbers, -1 for unlimited"
    if hard != -1 and (soft == -1 or soft > hard):
        return f"soft {shown(item['soft'])} is above hard {shown(item['hard'])}; Docker refuses it"
    return None


def check_ulimits(values: Values) -> Problems:
    variable, value = "docker_horovod_ulimits", values["docker_horovod_ulimits"]
    found = _each_item(variable, value, "{name: nofile, soft: 65536, hard: 65536}", _ulimit_problem)
    names = [item.get("name") for item in value if isinstance(item, Mapping)] if isinstance(value, list) else []
    found += [(variable, f"{name} is given twice; give each limit once") for name in sorted(
        {name for name in names if names.count(name) > 1 and isinstance(name, str)})]  # fmt: skip
    return found


def check_gpu_ids(values: Values) -> Problems:
    variable, value = "docker_horovod_gpu_ids", values["docker_horovod_gpu_ids"]
    if not isinstance(value, list):
        return [(variable, f"{plain(value)!r} is not a list; give nvidia-smi -L indexes such as [0, 1]")]
    bad = [item for item in value if whole(item) is None or whole(item) < 0]
    if bad:
        return [(variable, f"{plain(bad[0])!r} is not a GPU index (a whole number from 0, as nvidia-smi -L lists)")]
    twice = sorted({whole(item) for item in value if [whole(i) for i in value].count(whole(item)) > 1})
    return [(variable, f"GPU {', '.join(map(str, twice))} is given twice; give each GPU once")] if twice else []


def check_idle_patterns(values: Values) -> Problems:
    variable, value = "docker_horovod_idle_process_patterns", values["docker_horovod_idle_process_patterns"]
    if not isinstance(value, list):
        return [
            (variable, f"{plain(value)!r} is not a list; use a list of regular expressions such as ['jupyter-lab']")
        ]
    found: Problems = []
    for pattern in value:
        if not isinstance(pattern, str):
            found.append((variable, f"{plain(pattern)!r} is not a string; quote each regular expression"))
            continue
        try:
            re.compile(pattern)
        except re.error as exc:
            found.append((variable, f"{pattern!r} is not a valid regular expression ({exc}); fix or remove it"))
    return found


def _package_problem(item: Mapping) -> str | None:
    name, version = item.get("name"), item.get("version")
    if not isinstance(name, str) or not PIP_NAME_RE.fullmatch(name):
        return f"name {plain(name)!r} is not a distribution name; {PIP_FIX}"
    if not isinstance(version, str):
        return f'version {plain(version)!r} is not a string; quote it (version: "2.10") so YAML keeps it as written'
    if not PIP_VERSION_RE.fullmatch(version):
        return f"version {version!r} is not an exact version (no operators such as >=, == or ~=); {PIP_FIX}"
    return None


def _duplicate_packages(value: object) -> Problems:
    if not isinstance(value, list):
        return []
    found: Problems = []
    seen: dict[str, str] = {}
    for item in value:
        name = item.get("name") if isinstance(item, Mapping) else None
        if not isinstance(name, str):
            continue
        key = canonical_name(name)
        if key in seen:
            found.append(
                (
                    "docker_horovod_pip_packages",
                    f"{name!r} is listed twice (also as {seen[key]!r}); list each package once",
                )
            )
        seen.setdefault(key, name)
    return found


def check_pip_packages(values: Values) -> Problems:
    value = values["docker_horovod_pip_packages"]
    return _each_item("docker_horovod_pip_packages", value, PIP_EXAMPLE, _package_problem) + _duplicate_packages(value)


def check_pip_index_url(values: Values) -> Problems:
    variable, value = "docker_horovod_pip_index_url", values["docker_horovod_pip_index_url"]
    fix = 'use an http(s) URL such as https://pypi.org/simple, or "" to keep the image\'s pip configuration'
    return _shaped(variable, value, URL_RE, "an http(s) URL", fix)


def check_pip_wheel_dir(values: Values) -> Problems:
    variable, value = "docker_horovod_pip_wheel_dir", values["docker_horovod_pip_wheel_dir"]
    fix = 'use a directory below the share root, which the container sees at the same path, or ""'
    if not isinstance(value, str):
        return _text(variable, value, fix)
    if not value:
        return []
    problem = path_problem(value)
    if problem:
        return [(variable, f"{problem}; {fix}")]
    root = _share_root(values)
    if root is not None and (value == root or not is_inside(value, root)):
        return [(variable, f"{value!r} is not below the share root {root!r}; {fix}")]
    return []


def _pem_problem(path: str) -> str | None:
    if not path.startswith("/"):
        return "is not an absolute path"
    if not Path(path).is_file():
        return "is not a file on the controller"
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        return f"cannot be read on the controller ({exc.strerror})"
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return "is not a text file"
    if PEM_MARKER not in data:
        return "holds no PEM certificate (no '-----BEGIN CERTIFICATE-----' line)"
    return None


def check_extra_ca_bundle(values: Values) -> Problems:
    variable, value = "docker_horovod_extra_ca_bundle", values["docker_horovod_extra_ca_bundle"]
    fix = 'use the absolute path of a PEM file of CA certificates on the controller, or "" for none'
    if not isinstance(value, str):
        return _text(variable, value, fix)
    problem = _pem_problem(value) if value else None
    return [(variable, f"{value!r} {problem}; {fix}")] if problem else []


FINGERPRINT_RE = re.compile(r"[0-9A-F]{40}|[0-9A-F]{64}")


def check_nvidia_repo_key_fingerprint(values: Values) -> Problems:
    variable = "docker_horovod_nvidia_repo_key_fingerprint"
    value = values[variable]
    fix = (
        "give the fingerprint of the key that signs the NVIDIA repository, 40 hexadecimal digits (spaces allowed), "
        "as NVIDIA's install guide or `gpg --show-keys` prints it"
    )
    if isinstance(value, str) and FINGERPRINT_RE.fullmatch(normalise_fingerprint(value)):
        return []
    return [(variable, f"{plain(value)!r} is not an OpenPGP fingerprint; {fix}")]


def check_restart_policy(values: Values) -> Problems:
    value = values["docker_horovod_restart_policy"]
    if isinstance(value, str) and value in RESTART_POLICIES:
        return []
    fix = "bring the container and its sshd back after a reboot (no and on-failure do not)"
    return [
        (
            "docker_horovod_restart_policy",
            f"{plain(value)!r} is not allowed; use unless-stopped or always, the Docker restart policies that {fix}",
        )
    ]


def _env_problem(name: object, value: object) -> str | None:
    if not isinstance(name, str) or not ENV_NAME_RE.fullmatch(name):
        return f"{plain(name)!r} is not a valid variable name; use letters, digits and '_', not starting with a digit"
    if value is None:
        return f'{name} has no value (null); give one, or "" for an empty value'
    if not isinstance(value, (str, int, float)):
        return f"{name}'s value {plain(value)!r} is not a string, number or boolean; give a plain value"
    return None


def check_env(values: Values) -> Problems:
    variable, value = "docker_horovod_env", values["docker_horovod_env"]
    if not isinstance(value, Mapping):
        return [(variable, f"{plain(value)!r} is not a mapping; use one such as {{NCCL_DEBUG: INFO}}")]
    found: Problems = []
    for name, item in value.items():
        problem = _env_problem(name, item)
        if problem:
            found.append((variable, problem))
    return found


def check_rdma(values: Values) -> Problems:
    value = values.get("docker_horovod_rdma", RDMA_AUTO)
    if rdma_mode(value) is not None:
        return []
    return [
        (
            "docker_horovod_rdma",
            f"{shown(value)} is not auto, true or false; leave it auto (the RDMA devices where a host has "
            "/dev/infiniband), or set true (required on every host) or false (never)",
        )
    ]


CHECKS: tuple[Callable[[Values], Problems], ...] = (
    check_image,
    check_image_archive,
    check_image_archive_checksum,
    check_image_load_timeout,
    check_container_name,
    check_share_root,
    check_share_mounts,
    check_shm_size,
    check_restart_policy,
    check_volumes,
    check_devices,
    check_rdma,
    check_env,
    check_ulimits,
    check_gpu_ids,
    check_idle_patterns,
    check_pip_packages,
    check_pip_index_url,
    check_pip_wheel_dir,
    check_extra_ca_bundle,
    check_nvidia_repo_key_fingerprint,
)


def problems(inputs: Mapping[str, Any]) -> Problems:
    """Every problem with docker_horovod's inputs as (variable, message); empty when they are sound."""
    values = roles.inputs("docker_horovod", inputs)
    found: Problems = []
    for check in CHECKS:
        found.extend(check(values))
    return found
