# Copyright: multinode.horovod contributors
# SPDX-License-Identifier: GPL-3.0-or-later
"""Measure the links between the cluster's containers with iperf3, from the master's container.

Run as ``python3 -c CODE PLAN`` (playbooks/benchmark.yml), PLAN being the plan's ``link`` as JSON
(plugins/module_utils/horovod_bench.py). The containers run with the host's network, so binding to a
node's cluster address measures the interface Horovod uses; the others are reached over the
containers' ssh with the pinned host keys, as horovodrun does. Every host must have iperf3, else
nothing is measured and ``reason`` names the hosts. Each iperf3 server serves one client and exits,
under ``timeout``; ``left`` names any server still running afterwards. ``nics`` tells, for every host,
the interface that holds its address (the one iperf3 binds) with its speed and transport, read from
sysfs in its container (``python3 - --nic ADDRESS`` with this code on stdin, as horovod_probe.py runs
itself on the other hosts). Prints one JSON object.
"""

import array
import fcntl
import json
import os
import shlex
import socket
import struct
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable, Dict, List, Optional  # Python 3.6: no PEP 585/604 forms

SYSFS_NET = "/sys/class/net"
SIOCGIFADDR = 0x8915
# /sys/class/net/IFACE/type of an IPoIB interface (ARPHRD_INFINIBAND, include/uapi/linux/if_arp.h).
ARPHRD_INFINIBAND = "32"


class Hosts:
    def __init__(self, plan: Dict[str, Any]) -> None:
        self.local, self.addresses, self.ssh = plan["local"], plan["hosts"], plan["ssh_argv"]

    def argv(self, host: str, command: List[str]) -> List[str]:
        return (
            command
            if host == self.local
            else [*self.ssh, self.addresses[host], " ".join(shlex.quote(word) for word in command)]
        )

    def run(
        self, host: str, command: List[str], timeout: float, stdin: Optional[str] = None
    ) -> subprocess.CompletedProcess:  # not [str]: subscripting it needs Python 3.9
        try:
            return subprocess.run(
                self.argv(host, command),
                input=stdin,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                universal_newlines=True,
                timeout=timeout,
                check=False,
            )
        except subprocess.TimeoutExpired as exc:
            return subprocess.CompletedProcess(exc.cmd, 124, str(exc.stdout or ""), f"timed out after {timeout:.0f} s")

    def each(self, look: Callable[[str], Any]) -> List[Any]:
        with ThreadPoolExecutor(max_workers=8) as pool:
            return list(pool.map(look, list(self.addresses)))


def interface_addresses() -> Dict[str, List[str]]:
    """IPv4 addresses per interface: psutil when present (Horovod needs it), else ioctl (the primary
    address only), as roles/horovod_launch/files/horovod_probe.py finds them."""
    try:
        import psutil  # noqa: PLC0415 - optional; Horovod images have it

        return {
            name: sorted(a.address for a in addrs if a.family == socket.AF_INET)
            for name, addrs in psutil.net_if_addrs().items()
        }
    except ImportError:
        pass
    result: Dict[str, List[str]] = {}
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        for _unused, name in socket.if_nameindex():
            request = array.array("B", struct.pack("256s", name.encode()[:15]))
            try:
                fcntl.ioctl(sock.fileno(), SIOCGIFADDR, request)
                result[name] = [socket.inet_ntoa(request.tobytes()[20:24])]
            except OSError:
                result[name] = []
    return result


def _sysfs(path: str) -> Optional[str]:
    try:
        with open(path) as handle:
            return handle.read().strip()
    except (OSError, UnicodeDecodeError):  # speed of an interface that is down: EINVAL
        return None


def read_nic(name: str, root: str = SYSFS_NET, depth: int = 0) -> Dict[str, Any]:
    """The speed (Mb/s, None when unknown, with the reason) and transport of interface `name`, from
    sysfs under `root`: "ib" for IPoIB (type 32), "roce" when its device is an RDMA one (it has an
    infiniband directory), else "tcp". A VLAN, macvlan or bridge on one interface (one lower_* link) has
    that interface's; a veth, a tunnel or a bridge of several ports reports a speed that is no wire's (a
    veth says 10000), so its speed is unknown. A bond's is the kernel's sum of its active links."""
    base = os.path.join(root, name)
    out: Dict[str, Any] = {"speed_mbps": None, "transport": None, "speed_of": name, "reason": None}
    if not os.path.isdir(base):
        out["reason"] = f"{base} does not exist"
        return out
    ib = _sysfs(os.path.join(base, "type")) == ARPHRD_INFINIBAND
    rdma = os.path.isdir(os.path.join(base, "device", "infiniband"))
    out["transport"] = "ib" if ib else ("roce" if rdma else "tcp")
    if not (os.path.exists(os.path.join(base, "device")) or os.path.isdir(os.path.join(base, "bonding"))):
        lowers = sorted(entry[len("lower_") :] for entry in os.listdir(base) if entry.startswith("lower_"))
        if len(lowers) == 1 and depth < 4:
            return read_nic(lowers[0], root, depth + 1)
        out["reason"] = f"{name} is a virtual interface, without a device: the speed it reports is no wire's"
        return out
    speed = _sysfs(os.path.join(base, "speed"))
    if speed is not None and speed.isdigit() and int(speed) > 0:
        out["speed_mbps"] = int(speed)
    else:
        out["reason"] = f"the kernel reports no speed for {name} ({speed or 'unreadable'}: link down, or none known)"
    return out


def nic(address: str, root: str = SYSFS_NET) -> Dict[str, Any]:
    """The interface here that holds `address` (a host name or an IPv4 address), with read_nic's answer."""
    none: Dict[str, Any] = {"interface": None, "speed_mbps": None, "transport": None, "speed_of": None}
    try:
        ip = socket.gethostbyname(address)
    except OSError as exc:
        return {**none, "reason": f"{address} does not resolve here ({exc})"}
    holders = {a: name for name, ips in sorted(interface_addresses().items(), reverse=True) for a in ips}
    if ip not in holders:
        return {**none, "reason": f"no interface here holds {ip}"}
    return {"interface": holders[ip], **read_nic(holders[ip], root)}


def own_source() -> str:
    """This program's code: run as ``python3 -c CODE``, CODE is the third item of its cmdline."""
    try:
        with open(f"/proc/{os.getpid()}/cmdline", "rb") as handle:
            argv = [a.decode() for a in handle.read().split(b"\0")]
    except OSError:
        argv = []
    if len(argv) > 2 and argv[1] == "-c":
        return argv[2]
    with open(__file__) as handle:
        return handle.read()


def nics(hosts: Hosts) -> Dict[str, Dict[str, Any]]:
    """The interface of each host's address, read in its container by this code."""
    source = own_source()

    def look(host: str) -> Dict[str, Any]:
        res = hosts.run(host, ["python3", "-", "--nic", hosts.addresses[host]], timeout=60, stdin=source)
        try:
            return dict(json.loads(res.stdout))
        except (ValueError, TypeError):
            error = (res.stderr.strip() or res.stdout.strip())[-300:] or f"rc {res.returncode}"
            return {"interface": None, "speed_mbps": None, "transport": None, "speed_of": None,
                    "reason": f"could not read the interface on {host}: {error}"}  # fmt: skip

    return dict(zip(hosts.addresses, hosts.each(look)))


def measure(hosts: Hosts, client: str, server: str, plan: Dict[str, Any]) -> Dict[str, Any]:
    port, seconds = str(plan["port"]), plan["seconds"]
    server_address, client_address = hosts.addresses[server], hosts.addresses[client]
    serving = subprocess.Popen(
        hosts.argv(server, ["timeout", str(seconds + 30), "iperf3", "-s", "-1", "-B", server_address, "-p", port]),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        universal_newlines=True,
    )
    command = ["iperf3", "-c", server_address, "-B", client_address, "-p", port,
               "-t", str(seconds), "-P", str(plan["streams"]), "-J"]  # fmt: skip
    result: Dict[str, Any] = {"bits_per_second": None, "error": None}
    deadline = time.monotonic() + 15
    while True:
        res = hosts.run(client, command, timeout=seconds + 30)
        try:
            answer = json.loads(res.stdout) if res.stdout.strip() else {}
        except json.JSONDecodeError:
            answer = {}
        error = answer.get("error") or (res.stderr.strip() if res.returncode else "")
        # The server may not listen yet: try again for a while.
        if not (error and "refused" in str(error) and serving.poll() is None and time.monotonic() < deadline):
            break
        time.sleep(0.3)
    if error or res.returncode:
        result["error"] = f"iperf3 client on {client}: {error or res.stdout.strip()[-300:]} (rc {res.returncode})"
    else:
        result["bits_per_second"] = answer["end"]["sum_received"]["bits_per_second"]
    try:
        out, _unused = serving.communicate(timeout=10)
    except subprocess.TimeoutExpired:
        serving.kill()
        out, _unused = serving.communicate()
    if result["error"] and out.strip():
        result["error"] = f"{result['error']}; server on {server}: {out.strip()[-300:]}"
    return result


def main(plan: Dict[str, Any]) -> Dict[str, Any]:
    hosts = Hosts(plan)
    out: Dict[str, Any] = {key: plan[key] for key in ("port", "seconds", "streams")}
    out.update({"tool": "iperf3", "reason": None, "missing": [], "pairs": [], "left": {}, "nics": {}})
    found = hosts.each(lambda host: (host, hosts.run(host, ["sh", "-c", "command -v iperf3"], timeout=60)))
    # command -v: 1 (bash) or 127 (dash) when there is no such command; ssh fails with 255.
    out["missing"] = [host for host, res in found if res.returncode in (1, 127)]
    unreachable = [f"{host} ({res.stderr.strip() or f'rc {res.returncode}'})" for host, res in found
                   if res.returncode not in (0, 1, 127)]  # fmt: skip
    # Read even without iperf3: the interfaces' speeds grade the allreduce without a measured link.
    out["nics"] = nics(hosts)
    if out["missing"] or unreachable:
        reasons = [f"the command iperf3 is missing in the container on {', '.join(out['missing'])} (add the "
                   "package iperf3 to the image)"] if out["missing"] else []  # fmt: skip
        out["reason"] = "; ".join(reasons + ([f"cannot ask {', '.join(unreachable)}"] if unreachable else []))
        return out
    for pair in plan["pairs"]:
        out["pairs"].append({**pair, **measure(hosts, pair["client"], pair["server"], plan)})
    pattern = f"iperf3 -s -1 -B [^ ]+ -p {plan['port']}$"
    running = hosts.each(lambda host: (host, hosts.run(host, ["pgrep", "-a", "-f", pattern], timeout=30)))
    out["left"] = {host: res.stdout.strip() for host, res in running if res.returncode == 0 and res.stdout.strip()}
    return out


if __name__ == "__main__":
    if sys.argv[1:2] == ["--nic"]:
        print(json.dumps(nic(sys.argv[2])))
    else:
        print(json.dumps(main(json.loads(sys.argv[1]))))
