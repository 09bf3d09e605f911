# Copyright: multinode.horovod contributors
# SPDX-License-Identifier: GPL-3.0-or-later
"""The bed's network: the bridge (mnhst0, 10.213.57.0/24, the host takes the first address), the
addresses instances may take, each instance's veth pair (its link names and MAC, derived from its
address) and the two iptables FORWARD rules (traffic within the bridge is accepted, traffic from the
bridge to anywhere else is dropped); making them (recorded in bed.json first) and removing them.
"""

from __future__ import annotations

import ipaddress
import shlex
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from .host import BedError, log, run
from .state import load_bed_state, save_bed_state

DEFAULT_BRIDGE = "mnhst0"
DEFAULT_SUBNET = "10.213.57.0/24"
RULE_COMMENT = "multinode-horovod umlbed"


@dataclass(frozen=True)
class Bed:
    bridge: str
    subnet: ipaddress.IPv4Network

    @property
    def host_address(self) -> ipaddress.IPv4Address:
        return next(self.subnet.hosts())

    def check_address(self, addr: str) -> ipaddress.IPv4Address:
        try:
            ip = ipaddress.IPv4Address(addr)
        except ValueError as exc:
            raise BedError(f"{addr!r} is not an IPv4 address") from exc
        if ip not in self.subnet or ip in (self.subnet.network_address, self.subnet.broadcast_address):
            raise BedError(f"{addr} is not a host address of the bed subnet {self.subnet}")
        if ip == self.host_address:
            raise BedError(f"{addr} is the host's address on {self.bridge}; pick another")
        return ip

    def link_name(self, ip: ipaddress.IPv4Address) -> str:
        """The host's end of an instance's veth pair, one per address; with its peer's suffix
        (peer_name) the name fits the kernel's 15 characters."""
        offset = int(ip) - int(self.subnet.network_address)
        name = f"{self.bridge}-{offset}"
        if len(peer_name(name)) > 15:
            raise BedError(f"bridge name {self.bridge!r} is too long for link names (max 8 characters)")
        return name

    def forward_rules(self) -> list[list[str]]:
        """iptables FORWARD rules (without -I/-D): bridge-internal traffic passes, nothing leaves."""
        tag = ["-m", "comment", "--comment", RULE_COMMENT]
        return [
            ["FORWARD", "-i", self.bridge, "-o", self.bridge, *tag, "-j", "ACCEPT"],
            ["FORWARD", "-i", self.bridge, "!", "-o", self.bridge, *tag, "-j", "DROP"],
        ]


def peer_name(link: str) -> str:
    """The instance's end of its veth pair (the kernel reads and writes it through a raw socket)."""
    return f"{link}p"


def mac_for(ip: ipaddress.IPv4Address) -> str:
    """A locally administered unicast MAC derived from the address (stable across reboots)."""
    octets = ip.packed
    return "02:6d:6e:" + ":".join(f"{b:02x}" for b in octets[1:])


def link_exists(name: str) -> bool:
    return Path("/sys/class/net", name).exists()


def rule_present(rule: Sequence[str]) -> bool:
    return run(["iptables", "-w", "-C", *rule], check=False, quiet=True).returncode == 0


def ensure_network(bed: Bed, state_dir: Path) -> None:
    state = load_bed_state(state_dir)
    if state.get("bridge") not in (None, bed.bridge):
        raise BedError(f"the state in {state_dir} is for bridge {state['bridge']}; run `down-all` first")
    if state.get("bridge") is None:
        if link_exists(bed.bridge):
            raise BedError(
                f"a network interface {bed.bridge} exists that this tool did not create; "
                "remove it or pick another --bridge"
            )
        state.update(bridge=bed.bridge, subnet=str(bed.subnet), rules=[])
        save_bed_state(state_dir, state)
    if not link_exists(bed.bridge):
        run(["ip", "link", "add", bed.bridge, "type", "bridge"])
        sysctl = Path(f"/proc/sys/net/ipv6/conf/{bed.bridge}/disable_ipv6")
        if sysctl.exists():
            sysctl.write_text("1\n")
        run(["ip", "addr", "add", f"{bed.host_address}/{bed.subnet.prefixlen}", "dev", bed.bridge])
        run(["ip", "link", "set", bed.bridge, "up"])
    rules: list[list[str]] = [list(r) for r in state.get("rules", [])]  # type: ignore[union-attr]
    for rule in reversed(bed.forward_rules()):
        if rule not in rules:
            rules.append(rule)
            state["rules"] = rules
            save_bed_state(state_dir, state)
        if not rule_present(rule):
            run(["iptables", "-w", "-I", rule[0], "1", *rule[1:]])


def remove_network(state_dir: Path) -> list[str]:
    state = load_bed_state(state_dir)
    errors = []
    for rule in state.get("rules", []):  # type: ignore[union-attr]
        while rule_present(rule):
            res = run(["iptables", "-w", "-D", *rule], check=False)
            if res.returncode != 0:
                errors.append(f"could not remove the iptables rule {shlex.join(rule)}: {res.stderr.strip()}")
                break
            log(f"removed the iptables rule {shlex.join(rule)}")
    bridge = state.get("bridge")
    if isinstance(bridge, str) and link_exists(bridge):
        res = run(["ip", "link", "del", bridge], check=False)
        if res.returncode != 0:
            errors.append(f"could not remove the bridge {bridge}: {res.stderr.strip()}")
        else:
            log(f"removed the bridge {bridge}")
    if not errors:
        (state_dir / "bed.json").unlink(missing_ok=True)
    return errors
