# Copyright: multinode.horovod contributors
# SPDX-License-Identifier: GPL-3.0-or-later
"""Input rules of the nfs_client role: what may go into its fstab lines, and how it mounts.

Each mount becomes ``<server>:<path> <mountpoint> nfs <option>,<option> 0 0``, so each part is
accepted only in a shape that cannot add a field, an option or a line.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from ansible_collections.multinode.horovod.plugins.module_utils import defaults, values
from ansible_collections.multinode.horovod.plugins.plugin_utils.nfs_server_rules import (
    FLAG,
    SEC_SHAPE,
    Option,
    Problems,
    data_path_problem,
    host_problem,
    ip_address,
    list_problem,
    number_ok,
    option_problems,
    safe_path_ok,
    sec_ok,
    strip_slash,
)

# Characters that split an option list, a field of fstab or start a comment there.
BREAKING_RE = re.compile(r"[\s,\"'#\\]")
UNIT_RE = re.compile(r"[A-Za-z0-9:_.@-]+\.(service|socket|target|mount|automount|device|swap|path|timer)")
MOUNT_FIELDS = ("server", "path", "mountpoint", "options", "state")
STATES = ("mounted", "present", "unmounted", "absent")
SERVER_SHAPE = (
    "the server's host name (dot-separated labels of letters, digits and '-'), IPv4 or IPv6 address alone, "
    "without path, port or brackets (the path goes in `path`)"
)


def one_of(*values: str) -> Option:
    """A valued option whose value is one of `values`."""
    return Option("required", lambda value: value in values, "one of " + ", ".join(values))


def number(low: int = 0, high: int = 2**31 - 1, example: str = "") -> Option:
    """A valued option whose value is a decimal number from `low` to `high`."""
    shape = f"a number from {low} to {high}" + (f" ({example})" if example else "")
    return Option("required", lambda value: number_ok(value, low, high), shape)


UNIT = Option("required", lambda value: bool(UNIT_RE.fullmatch(value)), "a systemd unit name (network-online.target)")
SECONDS = number(0, 2**31 - 1, "x-systemd.mount-timeout=30")

MOUNT_FLAGS = (
    # mount(8), for every filesystem
    """
    defaults ro rw suid nosuid dev nodev exec noexec auto noauto user nouser users atime noatime diratime nodiratime
    relatime norelatime strictatime nostrictatime lazytime nolazytime sync async dirsync nofail _netdev
    """
    # nfs(5)
    """
    soft softerr hard intr nointr cto nocto ac noac fsc nofsc sharecache nosharecache resvport noresvport
    rdirplus nordirplus acl noacl lock nolock tcp rdma fg bg migration nomigration trunkdiscovery notrunkdiscovery
    softreval nosoftreval
    """
    # systemd.mount(5)
    """
    x-systemd.automount
    """
).split()
MOUNT_OPTIONS: dict[str, Option] = {
    **dict.fromkeys(MOUNT_FLAGS, FLAG),
    "nfsvers": one_of("3", "4", "4.0", "4.1", "4.2"),
    "vers": one_of("3", "4", "4.0", "4.1", "4.2"),
    "minorversion": one_of("0", "1", "2"),
    "proto": one_of("tcp", "tcp6", "rdma", "rdma6"),
    "mountproto": one_of("tcp", "tcp6", "udp", "udp6"),
    "mountvers": one_of("1", "2", "3"),
    "port": number(0, 65535, "port=2049"),
    "mountport": number(0, 65535, "mountport=20048"),
    "mounthost": Option("required", lambda value: host_problem(value) is None, "a host name or IP address"),
    "clientaddr": Option("required", lambda value: ip_address(value) is not None, "an IPv4 or IPv6 address"),
    "timeo": number(1, example="timeo=600"),
    "retrans": number(0, example="retrans=2"),
    "retry": number(0, example="retry=2"),
    "rsize": number(1024, example="rsize=1048576"),
    "wsize": number(1024, example="wsize=1048576"),
    "nconnect": number(1, 16, "nconnect=4"),
    "max_connect": number(1, 16, "max_connect=4"),
    "actimeo": number(0, example="actimeo=30"),
    "acregmin": number(0, example="acregmin=3"),
    "acregmax": number(0, example="acregmax=60"),
    "acdirmin": number(0, example="acdirmin=30"),
    "acdirmax": number(0, example="acdirmax=60"),
    "namlen": number(1, 255, "namlen=255"),
    "sec": Option("required", sec_ok, SEC_SHAPE),
    "lookupcache": one_of("all", "none", "pos", "positive"),
    "local_lock": one_of("none", "all", "flock", "posix"),
    "xprtsec": one_of("none", "tls", "mtls"),
    "x-systemd.mount-timeout": SECONDS,
    "x-systemd.idle-timeout": SECONDS,
    "x-systemd.device-timeout": SECONDS,
    "x-systemd.requires": UNIT,
    "x-systemd.after": UNIT,
    "x-systemd.before": UNIT,
    "x-systemd.wanted-by": UNIT,
    "x-systemd.required-by": UNIT,
    "x-systemd.requires-mounts-for": Option("required", safe_path_ok, "an absolute path"),
}
MOUNT_SYNONYMS = {"vers": "nfsvers"}
# Options that contradict each other, by groups (x/y: at most one of them).
MOUNT_CONFLICTS = [
    tuple(group.split("/"))
    for group in (
        "ro/rw hard/soft/softerr sync/async suid/nosuid dev/nodev exec/noexec auto/noauto user/nouser "
        "users/nouser atime/noatime noatime/relatime/strictatime relatime/norelatime "
        "strictatime/nostrictatime diratime/nodiratime lazytime/nolazytime intr/nointr cto/nocto ac/noac "
        "fsc/nofsc sharecache/nosharecache resvport/noresvport rdirplus/nordirplus acl/noacl lock/nolock "
        "fg/bg migration/nomigration trunkdiscovery/notrunkdiscovery softreval/nosoftreval proto/tcp/rdma"
    ).split()
]


def mount_option_problems(options: object, field: str = "") -> list[str]:
    """Every problem of one mount's option list (`field`: its name, when it is an item's)."""
    problem = list_problem(options, "[nfsvers=4.2, hard, _netdev]", field)
    if problem:
        return [problem]
    return option_problems(
        options,  # type: ignore[arg-type]  # list_problem proved it a list of strings
        MOUNT_OPTIONS,
        MOUNT_SYNONYMS,
        MOUNT_CONFLICTS,
        kind="nfs(5) or mount(8)",
        breaking=BREAKING_RE,
        example="nfsvers=4.2",
    )


# What a mount without nosuid or nodev gives: the share is written by root on every worker
# (no_root_squash), so a file one worker's root makes there is opened by every other worker.
WEAK_MOUNT = {
    "nosuid": (
        "suid",
        "a set-user-ID program that root on another client puts on the share runs as root here for any user "
        "who starts it",
    ),
    "nodev": (
        "dev",
        "a device node that root on another client makes on the share opens this host's devices (its disks, "
        "its memory) to any user who may open the node",
    ),
}
WEAK_MOUNT_SWITCH = "nfs_client_allow_weak_options"


def weak_mount_problems(options: object) -> list[str]:
    """The refusal of each of nosuid, nodev that a mount's options drop (or undo with suid, dev); none
    when they are not a list (mount_option_problems names that)."""
    if not isinstance(options, list):
        return []
    found = []
    for keep, (undo, why) in WEAK_MOUNT.items():
        if undo in options:
            fault, fix = f"option {undo!r} undoes {keep}", f"replace it with {keep}"
        elif keep not in options:
            fault, fix = f"the options {options!r} lack {keep}", f"add {keep}"
        else:
            continue
        found.append(f"{fault}: {why}; {fix}, or set {WEAK_MOUNT_SWITCH}: true if that is really meant")
    return found


def mount_problems(index: int, mount: object, allow_weak: bool = False) -> list[str]:
    """Every problem of one mount, each message naming the mount."""
    if not isinstance(mount, Mapping):
        return [f"item {index} ({mount!r}) is not a mapping; give {{server, path, mountpoint, options, state}}"]
    mountpoint = strip_slash(mount.get("mountpoint"))
    where = f"the mount on {mountpoint!r}" if isinstance(mountpoint, str) else f"item {index}"
    found = [f"field {key!r} is unknown; use {', '.join(MOUNT_FIELDS)}" for key in mount if key not in MOUNT_FIELDS]
    if mount.get("server") is None:
        found.append(f"server is missing; give {SERVER_SHAPE}")
    else:
        problem = host_problem(mount["server"])
        if problem:
            found.append(f"server {problem}; give {SERVER_SHAPE}")
    for field in ("path", "mountpoint"):
        if mount.get(field) is None:
            found.append(f"{field} is missing; give an absolute path such as {defaults.SHARE_DIR}")
            continue
        problem = data_path_problem(strip_slash(mount[field]))
        if problem:
            found.append(f"{field} {problem}")
    if mount.get("options") is not None:
        found += mount_option_problems(mount["options"], "options")
        found += [] if allow_weak else weak_mount_problems(mount["options"])
    state = mount.get("state")
    if state is not None and state not in STATES:
        found.append(f"state {state!r} is not one of {', '.join(STATES)}")
    return [f"{where}: {problem}" for problem in found]


def timeout_problem(value: object) -> str | None:
    """Why the wait timeout is not a positive whole number of seconds, or None."""
    if isinstance(value, bool) or not (
        isinstance(value, int) or (isinstance(value, str) and re.fullmatch("[0-9]+", value))
    ):
        return f"{value!r} is not a whole number of seconds; use a positive one such as 120"
    if int(value) <= 0:
        return f"{value!r} is not positive: the role would give up before the server could answer; use one such as 120"
    return None


def problems(inputs: Mapping[str, Any]) -> Problems:
    """Every problem of nfs_client's inputs as (variable, message); empty when they are sound."""
    found: Problems = []
    allow_weak = values.switch(inputs.get(WEAK_MOUNT_SWITCH, False))
    if allow_weak is None:
        found.append((WEAK_MOUNT_SWITCH, f"{inputs[WEAK_MOUNT_SWITCH]!r} is not a boolean; use true or false"))
    if "nfs_client_default_options" in inputs:
        default_options = inputs["nfs_client_default_options"]
        found += [
            ("nfs_client_default_options", problem)
            for problem in [
                *mount_option_problems(default_options),
                *([] if allow_weak else weak_mount_problems(default_options)),
            ]
        ]
    if "nfs_client_wait_timeout" in inputs:
        problem = timeout_problem(inputs["nfs_client_wait_timeout"])
        if problem:
            found.append(("nfs_client_wait_timeout", problem))
    mounts = inputs.get("nfs_client_mounts", [])
    if isinstance(mounts, str) or not isinstance(mounts, list):
        return [
            *found,
            ("nfs_client_mounts", f"{mounts!r} is not a list; give a list of {{server, path, mountpoint, options}}"),
        ]
    for index, mount in enumerate(mounts, start=1):
        found += [("nfs_client_mounts", problem) for problem in mount_problems(index, mount, bool(allow_weak))]
    points = [strip_slash(mount.get("mountpoint")) for mount in mounts if isinstance(mount, Mapping)]
    repeated = sorted({point for point in points if isinstance(point, str) and points.count(point) > 1})
    found += [
        ("nfs_client_mounts", f"mount point {point!r} is used by more than one mount; mount points must be unique")
        for point in repeated
    ]
    return found


# Options that say when or how a mount is made or kept (boot order, fstab, who may mount), not how
# the server is reached: the client's wait drops them for its scratch mount (tasks/wait.yml), as
# well as the read/write mode and retry count, which the wait sets itself (ro, retry=0).
WAIT_DROPPED_OPTIONS = frozenset(
    {"bg", "fg", "nofail", "noauto", "auto", "_netdev", "user", "users", "nouser", "owner", "group", "defaults"}
)


def mount_source(mount: Mapping[str, Any]) -> str:
    """``server:/path`` of a mount as mount.nfs and /proc/mounts write it: an IPv6 server in brackets,
    the path without its trailing ``/``."""
    server = str(mount["server"])
    return f"{'[' + server + ']' if ':' in server else server}:{strip_slash(str(mount['path']))}"


def mount_options(mount: Mapping[str, Any], default_options: list[str]) -> list[str]:
    """The options a mount is made with: its own, else the role's defaults."""
    options = mount.get("options")
    return [str(option) for option in (default_options if options is None else options)]


def wait_options(mount: Mapping[str, Any], default_options: list[str]) -> str:
    """The options of the client's scratch mount while it waits: the mount's own minus those that
    only matter for fstab or boot (WAIT_DROPPED_OPTIONS, ``x-*``, ``comment=``), ``rw``/``ro`` and
    ``retry=``; the wait adds ``ro,retry=0`` itself."""
    kept = []
    for option in mount_options(mount, default_options):
        name = option.split("=", 1)[0]
        if name in WAIT_DROPPED_OPTIONS or name in ("rw", "ro", "retry", "comment") or name.startswith("x-"):
            continue
        kept.append(option)
    return ",".join(kept) or "defaults"


def mount_of(mount: Mapping[str, Any], default_options: list[str]) -> dict[str, str]:
    """How the role mounts one item of nfs_client_mounts: ``src`` and ``path`` (the mount point) as
    fstab and /proc/mounts write them, ``opts`` for fstab and ``wait_options`` for the wait's
    scratch mount."""
    return {
        "src": mount_source(mount),
        "path": str(strip_slash(str(mount["mountpoint"]))),
        "opts": ",".join(mount_options(mount, default_options)),
        "wait_options": wait_options(mount, default_options),
    }
