#!/usr/bin/env python3
# Copyright: multinode.horovod developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Describe this Horovod container for the preflight of multinode.horovod.horovod_launch.

Runs inside a node's Horovod container (``python3 -`` with this file on stdin, locally through
``docker exec`` on the master, over the containers' ssh on the other nodes) and prints one JSON
object: hostname, Horovod version, IPv4 addresses per interface, for each given address the
interface here that holds it (so, whether it is this node), the size of /dev/shm, missing
directories, the horovodrun launchers running here and every process of the container but the
probe itself and its ancestors (the docker exec or ssh session that runs it), which the role sorts
into idle ones and jobs (plugins/module_utils/jobs.py). It only reads; Python's standard library suffices.
"""

from __future__ import annotations

import argparse
import array
import fcntl
import json
import os
import re
import socket
import struct
import sys
from importlib import metadata

SIOCGIFADDR = 0x8915

# The values of NAME=value words are hidden in every command line this prints: horovodrun puts the run's
# environment (which may hold secrets) on its ranks' command lines. The same pattern as
# plugins/module_utils/jobs.py (tests/unit/test_horovod_run_helper.py checks that they agree).
ASSIGNMENT = re.compile(r"(?<![^\s'\"])([A-Za-z_][A-Za-z0-9_]*)=(?:'[^']*'|\"[^\"]*\"|\S*)")


def redact(args: str) -> str:
    return ASSIGNMENT.sub(lambda match: f"{match.group(1)}=...", args)


def interface_addresses() -> dict[str, list[str]]:
    """IPv4 addresses per interface: psutil when present (Horovod needs it), else ioctl."""
    try:
        import psutil  # noqa: PLC0415 - optional; Horovod images have it

        return {
            name: sorted(a.address for a in addrs if a.family == socket.AF_INET)
            for name, addrs in psutil.net_if_addrs().items()
        }
    except ImportError:
        pass
    result: dict[str, list[str]] = {}
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        for _, name in socket.if_nameindex():
            request = array.array("B", struct.pack("256s", name.encode()[:15]))
            try:
                fcntl.ioctl(sock.fileno(), SIOCGIFADDR, request)
                result[name] = [socket.inet_ntoa(request.tobytes()[20:24])]
            except OSError:
                result[name] = []
    return result


def resolve(address: str) -> str | None:
    try:
        return socket.gethostbyname(address)
    except OSError:
        return None


def shm_bytes(path: str = "/dev/shm") -> int:
    try:
        stats = os.statvfs(path)
    except OSError:
        return 0
    return stats.f_blocks * stats.f_frsize


def launcher_processes() -> list[str]:
    """Command lines of the horovodrun launchers running in this container (not their ranks), and
    of the wrapper scripts horovod_launch starts them with (``<run dir>/horovod-launch.sh``)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as handle:
                argv = [a.decode(errors="replace") for a in handle.read().split(b"\0") if a]
        except OSError:
            continue
        if any(os.path.basename(a) == "horovodrun" for a in argv[:2]) or any(
            a.endswith("/horovod-launch.sh") for a in argv[:3]
        ):
            found.append(redact(" ".join(argv)))
    return sorted(found)


def _parent(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            # pid (comm) state ppid ...; comm may hold spaces and parentheses.
            return int(handle.read().rsplit(b")", 1)[1].split()[1])
    except (OSError, ValueError, IndexError):
        return 0


def processes() -> list[dict[str, object]]:
    """pid and command line of every process here except this probe and its ancestors."""
    mine, pid = set(), os.getpid()
    while pid > 1 and pid not in mine:
        mine.add(pid)
        pid = _parent(pid)
    found: list[dict[str, object]] = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) in mine:
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as handle:
                args = " ".join(a.decode(errors="replace") for a in handle.read().split(b"\0") if a)
        except OSError:
            continue
        if args:  # kernel threads and zombies have none
            found.append({"pid": int(entry), "args": redact(args)})
    return sorted(found, key=lambda p: int(p["pid"]))  # type: ignore[call-overload]


def horovod_version() -> str:
    try:
        return metadata.version("horovod")
    except metadata.PackageNotFoundError:
        return ""


def probe(addresses: list[str], paths: list[str]) -> dict[str, object]:
    interfaces = interface_addresses()
    holders = {ip: name for name, ips in sorted(interfaces.items(), reverse=True) for ip in ips}
    resolved = {address: resolve(address) for address in addresses}
    return {
        "hostname": socket.gethostname(),
        "horovod_version": horovod_version(),
        "interfaces": interfaces,
        # For each address: what it resolves to here and which interface here holds it (None:
        # the address is another host's).
        "addresses": {a: {"ip": ip, "interface": holders.get(ip or "")} for a, ip in resolved.items()},
        "shm_bytes": shm_bytes(),
        "missing_paths": [p for p in paths if not os.path.isdir(p)],
        "launchers": launcher_processes(),
        "processes": processes(),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--address", action="append", default=[], help="an address to resolve and locate here")
    parser.add_argument("--path", action="append", default=[], help="a directory that must exist here")
    args = parser.parse_args(argv)
    print(json.dumps(probe(args.address, args.path), sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
