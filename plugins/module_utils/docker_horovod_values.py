# Copyright: multinode.horovod contributors
# SPDX-License-Identifier: GPL-3.0-or-later
"""How the docker_horovod role reads its values: Docker sizes, image references, registries.

Pure functions shared by the role's filters (plugins/filter/docker_horovod.py) and its input rules
(plugins/module_utils/docker_horovod_rules.py), so that both read a value the same way.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

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
    """Bytes of a Docker size such as "16g", "1536m", "1073741824" or "0g"; None when it does not parse."""
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
    """Where the extra CA bundle must go on the host, beside the container (pip): the host's trust store
    only for a pull from Docker Hub (dockerd reads nothing else for it) or apt over https to NVIDIA's
    repository on a GPU host; Docker's own directory of the registry (/etc/docker/certs.d/<registry>) for
    a pull from another registry; nowhere on the host for an image loaded from an archive (no pull).
    Returns {host_store: bool, registry: "<host[:port]>" or "", why: what needs the host store}, and for
    the extra CA bundle `bundle` ("" when none is given): host_file (whether the role's file belongs in the
    host's trust store) and registry_file (the role's file in Docker's directory of the registry, or "")."""
    ref = image_reference(image)
    pulls = not archive and ref is not None
    registry = registry_of(ref["name"]) if pulls and ref is not None else ""
    why = []
    if registry in DOCKER_HUB:
        why.append(f"Docker pulls {image} from Docker Hub, for which dockerd reads only the host's trust store")
    gpus = int(gpu_count or 0)
    if gpus > 0 and str(nvidia_repo_url or "").startswith("https://"):
        why.append(f"apt fetches NVIDIA's repository over https ({nvidia_repo_url}) on this GPU host")
    other_registry = "" if registry in DOCKER_HUB else registry
    return {
        "host_store": bool(why),
        "registry": other_registry,
        "why": "; ".join(why),
        "host_file": bool(bundle) and bool(why),
        "registry_file": f"/etc/docker/certs.d/{other_registry}/{REGISTRY_CA_NAME}"
        if bundle and other_registry
        else "",
    }


def invalid_regexes(patterns: Iterable[Any]) -> list[str]:
    """The patterns that are not valid Python regular expressions (for assert messages)."""
    bad = []
    for pattern in patterns or []:
        try:
            re.compile(pattern)
        except (re.error, TypeError):
            bad.append(str(pattern))
    return bad


def canonical_name(name: str) -> str:
    """A Python distribution name as pip compares them (PEP 503: runs of -, _ and . are one -)."""
    return re.sub(r"[-_.]+", "-", name).lower()
