# Copyright: multinode.horovod contributors
# SPDX-License-Identifier: GPL-3.0-or-later
"""The instances: their names and the NAME ADDR pairs of `up`, the kernel's command line, booting
them (a veth pair on the bridge, a copy-on-write file on the base image, linux.uml in its own session
with its console in a log), waiting until each answers on ssh, hard-stopping them (mconsole halt,
then SIGKILL) and removing what each had; `up`, `down`, `down-all`, `list` and `ssh` as functions.
"""

from __future__ import annotations

import contextlib
import ipaddress
import os
import re
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Sequence
from pathlib import Path

from .host import BedError, locked, log, run, timed
from .kernel import Kernel, ensure_kernel
from .network import Bed, ensure_network, link_exists, mac_for, peer_name, remove_network
from .rootfs import ensure_base
from .state import Instance, instances_dir, load_instances, save_instance

NAME_RE = re.compile(r"^[a-z][a-z0-9-]{0,23}$")


def check_name(name: str) -> str:
    if not NAME_RE.match(name):
        raise BedError(f"instance name {name!r} must match {NAME_RE.pattern}")
    return name


def parse_pairs(words: Sequence[str]) -> list[tuple[str, str]]:
    """``NAME ADDR [NAME ADDR ...]`` -> pairs, with the names and addresses each used once."""
    if not words or len(words) % 2:
        raise BedError("up takes pairs: NAME ADDR [NAME ADDR ...]")
    pairs = [(check_name(words[i]), words[i + 1]) for i in range(0, len(words), 2)]
    for what, values in (("name", [p[0] for p in pairs]), ("address", [p[1] for p in pairs])):
        dupes = sorted({v for v in values if values.count(v) > 1})
        if dupes:
            raise BedError(f"{what} given twice: {', '.join(dupes)}")
    return pairs


def kernel_cmdline(
    *,
    umid: str,
    uml_dir: Path,
    mem: str,
    cow: Path,
    base: Path,
    link: str,
    mac: str,
    name: str,
    ip: ipaddress.IPv4Address,
    bed: Bed,
) -> list[str]:
    """Arguments of ``linux.uml`` for one instance."""
    return [
        f"umid={umid}",
        f"uml_dir={uml_dir}",
        f"mem={mem}",
        f"ubd0={cow},{base}",
        "root=/dev/ubda",
        "rw",
        # The vector network driver (the only one the kernel has), raw transport on the veth peer: vec0
        # inside. Not its tap transport: after an in-guest reboot the kernel cannot attach to its tap
        # again ("uml_tap: failed to create tun interface"), while a raw socket opens again and again.
        f"vec0:transport=raw,ifname={peer_name(link)},mac={mac}",
        "con=null",
        "con0=null,fd:1",
        "ssl=null",
        "net.ifnames=0",
        f"systemd.hostname={name}",
        f"ip={ip}::{bed.host_address}:{bed.subnet.netmask}::vec0:off",
    ]


def ssh_argv(key: Path, addr: str, command: Sequence[str] = (), connect_timeout: int = 5) -> list[str]:
    """ssh to a bed instance. The instances make their host keys at first boot and live minutes
    on a private bridge, so their host keys are not recorded (test bed only)."""
    return [
        "ssh",
        "-i",
        str(key),
        "-o",
        "BatchMode=yes",
        "-o",
        "IdentitiesOnly=yes",
        "-o",
        "StrictHostKeyChecking=no",
        "-o",
        "UserKnownHostsFile=/dev/null",
        "-o",
        "LogLevel=ERROR",
        "-o",
        f"ConnectTimeout={connect_timeout}",
        f"root@{addr}",
        *command,
    ]


def pid_alive(pid: int, umid: str) -> bool:
    """True when ``pid`` is still the UML kernel of ``umid`` (not a recycled pid)."""
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return False
    return f"umid={umid}".encode() in cmdline


def uml_processes(umid: str) -> list[int]:
    """Host processes of one UML instance: the kernel and its helpers carry ``umid=`` in argv."""
    found = []
    needle = f"umid={umid}".encode()
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        with contextlib.suppress(OSError):
            if needle in (proc / "cmdline").read_bytes().split(b"\0"):
                found.append(int(proc.name))
    return found


ANSI_RE = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


def tail_text(text: str, lines: int = 30) -> str:
    """The last non-empty lines of a console log, without colour codes."""
    kept = [line.rstrip() for line in ANSI_RE.sub("", text).splitlines() if line.strip()]
    return "\n".join(kept[-lines:]) or "(empty)"


def console_tail(inst: Instance, lines: int = 30) -> str:
    try:
        return tail_text(Path(inst.console).read_text(errors="replace"), lines)
    except OSError:
        return "(no console log)"


def start_instance(inst: Instance, bed: Bed, mem: str, kernel: Kernel) -> subprocess.Popen[bytes]:
    inst_dir = Path(inst.cow).parent
    uml_dir = inst_dir.parent.parent / "uml"
    uml_dir.mkdir(parents=True, exist_ok=True)
    shutil.rmtree(uml_dir / inst.umid, ignore_errors=True)
    Path(inst.cow).unlink(missing_ok=True)
    if not link_exists(inst.tap):
        run(["ip", "link", "add", inst.tap, "type", "veth", "peer", "name", peer_name(inst.tap)])
    run(["ip", "link", "set", inst.tap, "master", bed.bridge])
    run(["ip", "link", "set", inst.tap, "up"])
    run(["ip", "link", "set", peer_name(inst.tap), "up"])
    argv = [
        str(kernel.binary),
        *kernel_cmdline(
            umid=inst.umid,
            uml_dir=uml_dir,
            mem=mem,
            cow=Path(inst.cow),
            base=Path(inst.base),
            link=inst.tap,
            mac=inst.mac,
            name=inst.name,
            ip=ipaddress.IPv4Address(inst.address),
            bed=bed,
        ),
    ]
    env = dict(os.environ, TMPDIR="/dev/shm")
    with open(inst.console, "wb") as console:
        proc = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=console,
            stderr=subprocess.STDOUT,
            env=env,
            cwd=inst_dir,
            start_new_session=True,
        )
    inst.pid = proc.pid
    return proc


def wait_ssh(insts: Sequence[Instance], procs: dict[str, subprocess.Popen[bytes]], timeout: float) -> None:
    """Wait until every instance runs a command over ssh; fail with its console on timeout."""
    start = time.monotonic()
    pending = {inst.name: inst for inst in insts}
    while pending:
        for name, inst in list(pending.items()):
            if procs[name].poll() is not None:
                raise BedError(
                    f"instance {name} stopped while booting; console log {inst.console}:\n" + console_tail(inst)
                )
            try:
                with socket.create_connection((inst.address, 22), timeout=2):
                    pass
            except OSError:
                continue
            res = subprocess.run(
                ssh_argv(inst.key, inst.address, ["true"]), capture_output=True, check=False, timeout=30
            )
            if res.returncode == 0:
                log(f"{name} ({inst.address}) answers on ssh after {time.monotonic() - start:.1f}s")
                del pending[name]
        if not pending:
            break
        if time.monotonic() - start > timeout:
            tails = "\n".join(f"--- {inst.name}: {inst.console}\n{console_tail(inst)}" for inst in pending.values())
            raise BedError(f"no ssh answer from {', '.join(pending)} within {timeout:.0f}s:\n{tails}")
        time.sleep(1)


def stop_instances(insts: Sequence[Instance], state_dir: Path, wait: float = 15) -> list[str]:
    """Hard-stop (mconsole halt, then SIGKILL of the process group) and remove links and files."""
    uml_dir = state_dir / "uml"
    for inst in insts:
        if inst.pid and pid_alive(inst.pid, inst.umid):
            sock = uml_dir / inst.umid / "mconsole"
            if sock.exists():
                run(["uml_mconsole", str(sock), "halt"], check=False, quiet=True)
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline and any(uml_processes(i.umid) for i in insts):
        time.sleep(0.2)
    errors = []
    for inst in insts:
        left = uml_processes(inst.umid)
        if left:
            log(f"{inst.name}: {len(left)} process(es) left after halt; killing them")
            for pid in left:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            for _ in range(50):
                if not uml_processes(inst.umid):
                    break
                time.sleep(0.1)
            else:
                errors.append(f"{inst.name}: processes {uml_processes(inst.umid)} survived SIGKILL")
                continue
        if link_exists(inst.tap):
            res = run(["ip", "link", "del", inst.tap], check=False)
            if res.returncode != 0:
                errors.append(f"{inst.name}: could not remove the link {inst.tap}: {res.stderr.strip()}")
                continue
        shutil.rmtree(uml_dir / inst.umid, ignore_errors=True)
        shutil.rmtree(instances_dir(state_dir) / inst.name, ignore_errors=True)
        log(f"{inst.name} is down")
    return errors


def up(
    pairs: Sequence[tuple[str, str]], bed: Bed, *, state_dir: Path, cache: Path, mem: str, timeout: float
) -> list[Instance]:
    ips = [(name, bed.check_address(addr)) for name, addr in pairs]
    kernel = ensure_kernel(cache)
    base = ensure_base(cache, state_dir, kernel)
    with locked(state_dir / ".lock"):
        existing = {inst.name: inst for inst in load_instances(state_dir)}
        for name, ip in ips:
            if name in existing and pid_alive(existing[name].pid, existing[name].umid):
                raise BedError(f"instance {name} is already up; run `down {name}` first")
            clash = [i.name for i in existing.values() if i.address == str(ip) and i.name != name]
            if clash:
                raise BedError(f"{ip} is already used by instance {clash[0]}")
        stale = [existing[name] for name, _ in ips if name in existing]
        if stale:
            stop_instances(stale, state_dir)
        ensure_network(bed, state_dir)
        insts = []
        procs = {}
        for name, ip in ips:
            inst_dir = instances_dir(state_dir) / name
            inst = Instance(
                name=name,
                address=str(ip),
                tap=bed.link_name(ip),
                mac=mac_for(ip),
                umid=f"{bed.bridge}-{name}",
                base=str(base.image),
                cow=str(inst_dir / "disk.cow"),
                console=str(inst_dir / "console.log"),
            )
            save_instance(state_dir, inst)  # recorded before anything is made for it
            procs[name] = start_instance(inst, bed, mem, kernel)
            save_instance(state_dir, inst)
            insts.append(inst)
    with timed(f"boot of {', '.join(i.name for i in insts)} until ssh answers"):
        try:
            wait_ssh(insts, procs, timeout)
        except BedError as exc:
            raise BedError(f"{exc}\n(what was made stays for inspection; `down-all` removes it)") from exc
    return insts


def describe(inst: Instance) -> dict[str, object]:
    return {
        "name": inst.name,
        "address": inst.address,
        "user": "root",
        "port": 22,
        "identity_file": str(inst.key),
        "running": pid_alive(inst.pid, inst.umid),
        "console": inst.console,
    }


def down(names: Sequence[str], state_dir: Path) -> None:
    """Hard-stop the recorded instances of these names and remove what each had."""
    wanted = {check_name(n) for n in names}
    with locked(state_dir / ".lock"):
        insts = [i for i in load_instances(state_dir) if i.name in wanted]
        errors = stop_instances(insts, state_dir)
    if errors:
        raise BedError("\n".join(errors))


def down_all(state_dir: Path) -> None:
    """Remove everything recorded in ``state_dir``: instances, links, rules, bridge."""
    with locked(state_dir / ".lock"):
        errors = stop_instances(load_instances(state_dir), state_dir)
        errors += remove_network(state_dir)
    if errors:
        raise BedError("\n".join(errors))
    log("the bed is gone: no instances, links, rules or bridge left")


def ssh(state_dir: Path, name: str, command: Sequence[str]) -> int:
    """Run ``command`` on a recorded instance as root with the bed key; its exit status."""
    inst = next((i for i in load_instances(state_dir) if i.name == name), None)
    if inst is None:
        raise BedError(f"no instance {name} is recorded in {state_dir}")
    return subprocess.run(ssh_argv(inst.key, inst.address, command), check=False).returncode
