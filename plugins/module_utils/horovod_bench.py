# Copyright: multinode.horovod contributors
# SPDX-License-Identifier: GPL-3.0-or-later
"""The decisions of playbooks/benchmark.yml (docs/benchmark.md): its settings and plan, the report.

The playbook runs the measurements; this module says what to measure and how (``plan``), turns what
the measuring scripts wrote into the report, its table and the play's last lines (``report``), grades
the allreduce against the link (``grade``) and judges a report's shape and numbers (``sanity``).
"""

from __future__ import annotations

import base64
import json
import math
import os
import re
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from ansible_collections.multinode.horovod.plugins.module_utils.defaults import SSH_KEY_FILE
from ansible_collections.multinode.horovod.plugins.module_utils.horovod_launch import LAUNCHERS
from ansible_collections.multinode.horovod.plugins.module_utils.numbers import whole
from ansible_collections.multinode.horovod.plugins.module_utils.paths import is_inside, strip_slash

SCHEMA = "multinode.horovod/benchmark/1"
STEPS = ("link", "allreduce", "synthetic")
DEVICES = ("auto", "cpu", "cuda")
# A ring allreduce cannot beat its links; 4 leaves room for ranks that share a node and for iperf3's
# TCP overhead (docs/benchmark.md).
MAX_BUSBW_TO_LINK = 4.0
# The playbook's switches (-e NAME=VALUE) and their defaults; the type is the default's. The gate
# knows these names (gate.PLAYBOOK_SWITCHES); docs/benchmark.md says what each one means.
SETTINGS: dict[str, Any] = {
    "horovod_bench_name": "",
    "horovod_bench_dir": "",
    "horovod_bench_fetch_dir": "",
    "horovod_bench_steps": list(STEPS),
    "horovod_bench_device": "auto",
    "horovod_bench_timeout": 3600,
    "horovod_bench_link_port": 5201,
    "horovod_bench_link_seconds": 5,
    "horovod_bench_link_streams": 4,
    "horovod_bench_allreduce_min_bytes": 1024,
    "horovod_bench_allreduce_max_bytes": 256 * 1024**2,
    "horovod_bench_allreduce_factor": 2,
    "horovod_bench_allreduce_iters": 50,
    "horovod_bench_allreduce_seconds": 2,
    "horovod_bench_synthetic_model": "resnet50",
    "horovod_bench_synthetic_batch_size": 32,
    "horovod_bench_synthetic_image_size": 224,
    "horovod_bench_synthetic_warmup_batches": 10,
    "horovod_bench_synthetic_batches": 50,
}
SETTING_NAMES: tuple[str, ...] = tuple(SETTINGS)
_SIZES = ("horovod_bench_allreduce_min_bytes", "horovod_bench_allreduce_max_bytes")
# Every other whole-number setting is 1 or more (the port: a TCP port).
_LEAST = {"horovod_bench_synthetic_warmup_batches": 0, "horovod_bench_allreduce_factor": 2}
_RUN_NAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,80}")
_SIZE_RE = re.compile(r"^\s*([0-9]+)\s*([KMG]?)i?B?\s*$", re.IGNORECASE)
_UNITS = {"": 1, "K": 1024, "M": 1024**2, "G": 1024**3}
# ssh as horovodrun uses it between the containers: the pinned host key, no prompt.
_SSH_OPTIONS = ("-o", "BatchMode=yes", "-o", "StrictHostKeyChecking=yes", "-o", "ConnectTimeout=10")
# What the report keeps of each host of the launch preflight (horovod_launch_preflight.hosts).
_HOST_KEYS = ("name", "address", "slots", "hostname", "interface")
_HOSTNAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9.-]{0,252}")
_REPORT_KEYS = ("schema", "name", "created", "np", "hosts", "versions", "link", "allreduce", "synthetic", "files")

# What the best allreduce bus bandwidth should reach, as a fraction of the link (docs/benchmark.md, "The
# grade"), by what carries it: NCCL over the weakest transport of the nodes' interfaces, or the CPU.
# Bus bandwidth is nccl-tests' (NVIDIA/nccl-tests, doc/PERFORMANCE.md, "Bus bandwidth"): algbw * 2(n-1)/n,
# defined so that it "should reflect the speed of the hardware bottleneck" and be compared with the
# hardware's peak, whatever the number of ranks. That page gives no fraction per transport: the NCCL
# fractions are the collection's marks (issue #33), not NVIDIA's. RDMA over InfiniBand comes closest to
# the wire, RoCE (the same verbs over Ethernet) a little less, NCCL's socket transport, which copies every
# byte through the kernel's TCP stack and a CPU core, much less.
# "against": "speed" is the interface's speed (sysfs), "rate" the link rate iperf3 measured in the same
# run. The CPU mark is that run's baseline, not a published number: Gloo (or MPI) on CPUs moves the
# allreduce over the same TCP sockets iperf3 just measured and adds the reduction on the CPU, so it is held
# to the TCP sockets fraction of what TCP reached between the same containers.
MARKS: dict[str, dict[str, Any]] = {
    "ib": {"mark": 0.9, "label": "NCCL over InfiniBand", "against": "speed"},
    "roce": {"mark": 0.75, "label": "NCCL over RoCE", "against": "speed"},
    "tcp": {"mark": 0.35, "label": "NCCL over TCP sockets", "against": "speed"},
    "cpu": {"mark": 0.35, "label": "Gloo or MPI on CPU", "against": "rate"},
}
# The slowest first: a ring allreduce goes at its weakest link.
TRANSPORTS = ("tcp", "roce", "ib")
VERDICTS = ("good", "below", "unknown")
# A node is "the slow node" when every link to and from it is below LINK_SLOW times the median of the links
# that do not touch it (docs/benchmark.md, "The slow node"). iperf3 between healthy nodes varies by some tens
# of percent from run to run (more on a shared or virtual host, as the lab), while the faults meant here cost
# far more: a port negotiated one speed down (10 -> 1 Gbit/s, 1 Gbit/s -> 100 Mbit/s) is a tenth, a duplex
# mismatch or a shaper (tc) left on an interface less still. A third is clear of the noise and well above those.
LINK_SLOW = 1 / 3
# A node computes slowly when its images/s per process, each rank timed alone, is below COMPUTE_SLOW times the
# median of the other nodes'. Identical nodes time within some percent of each other; a GPU held at its
# thermal or power limit, a CPU in a powersave governor or a node shared with another job is at half or less,
# and in synchronous training it holds every step of every rank back.
COMPUTE_SLOW = 1 / 2
SLOW_VERDICTS = ("node", "pair", "none", "unknown")
# What to check on the node (or pair) a judgement names.
CHECK = {
    "link": [
        "the negotiated speed and duplex of the interface: ethtool <interface> (Speed, Duplex) on the node",
        "the cable and the switch port (their error counters: ethtool -S <interface>, ip -s link)",
        "a shaper or policer on the interface: tc qdisc show dev <interface> (and tc filter show)",
        "the MTU: ip link show <interface>, the same on every node and the switch",
    ],
    "compute": [
        "the GPU clocks and throttle reasons: nvidia-smi -q -d CLOCK,PERFORMANCE (thermal or power slowdown)",
        "the CPU frequency governor: cat /sys/devices/system/cpu/cpu*/cpufreq/scaling_governor (performance)",
        "other jobs or containers on the node (top, nvidia-smi, docker stats) and CPU limits on its container "
        "(docker inspect: NanoCpus, CpuQuota)",
    ],
}
# What to look at when the bus bandwidth is below its mark.
_LOOK_AT = {
    "tcp": [
        "the interface NCCL uses: NCCL_DEBUG=INFO names it (NET/Socket : Using ...); horovodrun hands "
        "horovod_launch_network_interfaces to NCCL as NCCL_SOCKET_IFNAME",
        "the MTU: the same on every node and the switch (9000 for a fast link)",
        "NCCL_SOCKET_NTHREADS and NCCL_NSOCKS_PERTHREAD (horovod_launch_env): more sockets fill a link of "
        "25 Gbit/s and more",
        "the CPU: the socket transport copies every byte through it; a core at 100% during the run is the bound",
    ],
    "ib": [
        "whether NCCL fell back to sockets: with NCCL_DEBUG=INFO it says NET/IB, not NET/Socket",
        "GPUDirect RDMA: NCCL_DEBUG=INFO shows GDRDMA on the NET lines (the nvidia-peermem module loaded)",
        "the PCIe topology: each GPU and its NIC under the same PCIe switch (nvidia-smi topo -m)",
    ],
    "cpu": [
        "the CPU cores per rank: the ranks of a host share its cores (fewer slots, or more cores)",
        "Horovod's tensor fusion threshold (HOROVOD_FUSION_THRESHOLD in horovod_launch_env)",
    ],
}
_LOOK_AT["roce"] = [
    *_LOOK_AT["ib"],
    "the fabric's lossless setup for RoCE (PFC or ECN on the NICs and switches) and NCCL_IB_GID_INDEX",
]


def parse_bytes(value: Any) -> int | None:
    """A size in bytes from an int or a string like ``16M``, ``1KiB``, ``4096`` (binary units); None if not one."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    match = _SIZE_RE.match(str(value))
    return int(match.group(1)) * _UNITS[match.group(2).upper()] if match else None


def settings(given: Mapping[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """The settings with their defaults from every ``horovod_bench_*`` variable given (None: the default),
    and the problems, each naming the variable and the fix."""
    out: dict[str, Any] = {}
    problems = [
        f"{name}: the benchmark has no such setting (docs/benchmark.md lists them)."
        for name in sorted(set(given) - set(SETTINGS))
        if name.startswith("horovod_bench_")
    ]
    for name, default in SETTINGS.items():
        value = default if given.get(name) is None else given[name]
        if name in _SIZES:
            out[name] = parse_bytes(value)
            if out[name] is None or out[name] < 4 or out[name] % 4:
                problems.append(
                    f"{name}: {value!r} is not a size in bytes that holds whole float32 values "
                    "(a multiple of 4: 1024, 64K, 16M)."
                )
        elif isinstance(default, int):
            # numbers.whole, as the gate reads the site's settings: " +600 " is 600, as Ansible's int().
            out[name] = whole(value)
            if out[name] is None:
                problems.append(f"{name}: {value!r} is not a whole number.")
        elif isinstance(default, list):
            items = [value] if isinstance(value, str) else value
            if not isinstance(items, list | tuple) or not all(isinstance(i, str) for i in items):
                problems.append(f"{name}: {value!r} is not a list of names.")
                items = []
            out[name] = [str(i) for i in items]
        else:
            if not isinstance(value, str):
                problems.append(f"{name}: {value!r} is not a string.")
            out[name] = str(value)
    return out, problems + _rules(out)


def _rules(s: Mapping[str, Any]) -> list[str]:
    numbers = [name for name, default in SETTINGS.items() if isinstance(default, int) and name not in _SIZES]
    problems = [
        f"{name}: {s[name]} must be {_LEAST.get(name, 1)} or more."
        for name in numbers
        if name != "horovod_bench_link_port" and s[name] is not None and s[name] < _LEAST.get(name, 1)
    ]
    port = s["horovod_bench_link_port"]
    if port is not None and not 1 <= port <= 65535:
        problems.append(f"horovod_bench_link_port: {port} is not a TCP port (1-65535).")
    low, high = (s[name] for name in _SIZES)
    if low is not None and high is not None and low > high:
        problems.append(
            f"horovod_bench_allreduce_min_bytes ({low}) is more than horovod_bench_allreduce_max_bytes ({high})."
        )
    steps = s["horovod_bench_steps"]
    if not steps or any(step not in STEPS for step in steps):
        problems.append(f"horovod_bench_steps: {steps!r} must name one or more of {', '.join(STEPS)}.")
    if s["horovod_bench_device"] not in DEVICES:
        problems.append(f"horovod_bench_device: {s['horovod_bench_device']!r} is not one of {', '.join(DEVICES)}.")
    name = s["horovod_bench_name"]
    if name and not _RUN_NAME_RE.fullmatch(name):
        problems.append(
            f"horovod_bench_name: {name!r} may hold letters, digits, '.', '_' and '-' only (at most 81), "
            "starting with a letter or digit."
        )
    for key in ("horovod_bench_dir", "horovod_bench_fetch_dir"):
        if s[key] and not os.path.isabs(s[key]):
            problems.append(f"{key}: {s[key]!r} must be an absolute path (or empty for the default).")
    return problems


def sizes(low: int, high: int, factor: int) -> list[int]:
    """The message sizes of the sweep: low, low*factor, ... below high, then high itself."""
    out = []
    while low < high:
        out.append(low)
        low *= factor
    return [*out, high]


def link_pairs(names: Sequence[str]) -> list[dict[str, str]]:
    """The iperf3 measurements: every worker (client) to the master (the first host), then the ring
    host i -> host i+1, each ordered pair once."""
    wanted = [(name, names[0], "to-master") for name in names[1:]]
    if len(names) > 2:
        wanted += [(names[i], names[(i + 1) % len(names)], "ring") for i in range(len(names))]
    pairs: dict[tuple[str, str], dict[str, str]] = {}
    for client, server, kind in wanted:
        pairs.setdefault((client, server), {"client": client, "server": server, "kind": kind})
    return list(pairs.values())


def plan(
    given: Mapping[str, Any],
    hosts: Sequence[Mapping[str, Any]],
    *,
    share_dir: str,
    artifact_dir: str,
    ssh_port: int,
    identity_file: str = "",
    launcher: str = "horovodrun",
    now: datetime | None = None,
    cwd: str | None = None,
) -> dict[str, Any]:
    """``{problems}`` when a setting is wrong; else what the playbook measures and where it puts things:
    the iperf3 script's input (``link``, None without a pair to measure), the runs in order (``runs``:
    name, np, whether on the master alone, command, the file rank 0 writes), each through the launch's
    ``launcher`` (horovod_bench_run.py --launcher: its collectives), and a line per measurement for the
    play's output."""
    s, problems = settings(given)
    if launcher not in LAUNCHERS:
        problems.append(f"horovod_launch_launcher: {launcher!r} has no benchmark; choose {' or '.join(LAUNCHERS)}")
    if problems:
        return {"problems": problems}
    now = now or datetime.now(UTC)
    name = s["horovod_bench_name"] or f"bench-{now:%Y%m%d-%H%M%S}"
    names = [str(h["name"]) for h in hosts]
    np = sum(int(h["slots"]) for h in hosts)
    steps = [step for step in STEPS if step in s["horovod_bench_steps"]]
    # What the ranks execute goes where only the master writes (the site's artifact directory).
    script_root = str(strip_slash(artifact_dir or share_dir))
    script_dir = f"{script_root}/benchmark"
    # The master writes the reports walking down from the share's (or the artifact directory's) own
    # directory without following a link (module share_path): root on a worker may have made any name on
    # the share a link to a directory of the master's (SECURITY.md).
    report_base = str(strip_slash(s["horovod_bench_dir"] or f"{strip_slash(share_dir)}/benchmarks"))
    roots = sorted((r for r in (str(strip_slash(share_dir)), str(strip_slash(artifact_dir))) if r), key=len)
    report_root = next((r for r in reversed(roots) if is_inside(report_base, r)), None)
    if report_root is None:
        return {
            "problems": [
                f"horovod_bench_dir: {report_base!r} is neither on the share ({share_dir}) nor in the artifact "
                f"directory ({artifact_dir or 'none'}): give a directory below one of them, where the master "
                "writes the reports without following a link."
            ]
        }
    fetch_root = s["horovod_bench_fetch_dir"] or os.path.join(cwd or os.getcwd(), "benchmarks")
    p: dict[str, Any] = {
        "problems": [],
        "name": name,
        "created": f"{now:%Y-%m-%dT%H:%M:%SZ}",
        "steps": steps,
        "launcher": launcher,
        "np": np,
        "hosts": names,
        "timeout": s["horovod_bench_timeout"],
        "report_dir": f"{report_base}/{name}",
        "report_root": report_root,
        "report_path": os.path.relpath(f"{report_base}/{name}", report_root),
        "fetch_dir": f"{strip_slash(fetch_root)}/{name}",
        "script_dir": script_dir,
        "script_root": script_root,
        "sizes": [],
        "link": None,
        "runs": [],
    }
    pairs = link_pairs(names) if "link" in steps else []
    if pairs:
        p["link"] = {
            "local": names[0],
            "hosts": {str(h["name"]): str(h["address"]) for h in hosts},
            "pairs": pairs,
            "ssh_argv": ["ssh", "-p", str(ssh_port), "-i", identity_file or SSH_KEY_FILE, *_SSH_OPTIONS],
            "port": s["horovod_bench_link_port"],
            "seconds": s["horovod_bench_link_seconds"],
            "streams": s["horovod_bench_link_streams"],
        }
    script = f"{script_dir}/horovod_bench_run.py"
    device = ["--device", s["horovod_bench_device"], "--launcher", launcher]
    if "allreduce" in steps:
        p["sizes"] = sizes(*(s[key] for key in _SIZES), s["horovod_bench_allreduce_factor"])
        command = [script, "allreduce", "--sizes", ",".join(map(str, p["sizes"]))]
        command += ["--iters", str(s["horovod_bench_allreduce_iters"])]
        command += ["--seconds", str(s["horovod_bench_allreduce_seconds"]), *device]
        # np 0: every slot, as the site's launch.
        p["runs"].append(_run("allreduce", f"{name}-allreduce", 0, command, "allreduce.json"))
    if "synthetic" in steps:
        command = [script, "synthetic"]
        for option in ("model", "batch_size", "image_size", "warmup_batches", "batches"):
            command += [f"--{option.replace('_', '-')}", str(s[f"horovod_bench_synthetic_{option}"])]
        # Every slot also times each process alone first, a fifth of the timed batches, for the slow node.
        alone = ["--node-batches", str(node_batches(s["horovod_bench_synthetic_batches"]))]
        for key, count, extra in (("synthetic_one", 1, []), ("synthetic_all", np, alone)):
            run = _run(key, f"{name}-synthetic-np{count}", count, command + extra + device, "synthetic.json")
            p["runs"].append(run)
    p["lines"] = _plan_lines(s, p, pairs)
    return p


def node_batches(batches: int) -> int:
    """The batches each process of the all-slot synthetic run times alone: a fifth of the timed ones, one at least."""
    return max(1, batches // 5)


def _run(key: str, name: str, np: int, command: list[str], result: str) -> dict[str, Any]:
    # One process runs on the master alone: horovodrun then talks over loopback only.
    return {"key": key, "name": name, "np": np, "alone": np == 1, "command": ["python3", *command], "result": result}


def human_bytes(size: float) -> str:
    for unit, scale in (("GiB", 1024**3), ("MiB", 1024**2), ("KiB", 1024)):
        if size >= scale:
            value = size / scale
            return f"{value:.0f} {unit}" if value == int(value) else f"{value:.1f} {unit}"
    return f"{size:.0f} B"


def _plan_lines(s: Mapping[str, Any], p: Mapping[str, Any], pairs: list[dict[str, str]]) -> list[str]:
    runs = {run["key"]: run["name"] for run in p["runs"]}
    lines = []
    if pairs:
        lines.append(
            f"link: iperf3 in the containers, {s['horovod_bench_link_seconds']} s and "
            f"{s['horovod_bench_link_streams']} streams each, port {s['horovod_bench_link_port']}: "
            + ", ".join(f"{x['client']} -> {x['server']}" for x in pairs)
        )
    elif "link" in p["steps"]:
        lines.append("link: not measured (one host)")
    if p["sizes"]:
        lines.append(
            f"allreduce: float32 sum on {p['np']} processes, {len(p['sizes'])} sizes from "
            f"{human_bytes(p['sizes'][0])} to {human_bytes(p['sizes'][-1])}, device {s['horovod_bench_device']}"
            f" (run {runs['allreduce']})"
        )
    if "synthetic" in p["steps"]:
        lines.append(
            f"synthetic: {s['horovod_bench_synthetic_model']}, batch {s['horovod_bench_synthetic_batch_size']}, "
            f"{s['horovod_bench_synthetic_image_size']} px, {s['horovod_bench_synthetic_batches']} timed batches, "
            f"at 1 process and at {p['np']} (runs {runs['synthetic_one']}, {runs['synthetic_all']})"
        )
    lines.append(f"report: {p['report_dir']}/report.{{json,md,png}} on the master, copied to {p['fetch_dir']}")
    return lines


def _positive(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value) and value > 0


def allreduce_rows(results: Sequence[Mapping[str, Any]], np: int) -> list[dict[str, Any]]:
    """Each size's time with its algorithm bandwidth (size / time) and bus bandwidth (algbw * 2(n-1)/n,
    as NCCL's tests define it), in bytes per second; no bus bandwidth on one process."""
    rows = []
    for item in results:
        size, seconds = item.get("bytes"), item.get("time_s")
        if not _positive(size) or not _positive(seconds):
            raise ValueError(f"an allreduce result needs positive bytes and time_s, got {dict(item)!r}")
        algbw = size / seconds
        rows.append(
            {
                "bytes": int(size),
                "iters": int(item.get("iters", 0)),
                "time_s": float(seconds),
                "algbw_Bps": algbw,
                "busbw_Bps": algbw * 2.0 * (np - 1) / np if np > 1 else None,
            }
        )
    return rows


def nic_summary(raw: Mapping[str, Any]) -> dict[str, Any]:
    """A host's interface as the link script read it: its speed in bytes per second (sysfs says Mb/s;
    None when unknown, with the reason) and its transport (ib, roce, tcp; None when unread)."""
    mbps = raw.get("speed_mbps")
    transport = raw.get("transport")
    return {
        "interface": raw.get("interface"),
        "speed_of": raw.get("speed_of"),
        "transport": transport if transport in TRANSPORTS else None,
        "speed_Bps": mbps * 1e6 / 8 if _positive(mbps) else None,
        "reason": None if _positive(mbps) else raw.get("reason") or "no speed read",
    }


def _pair_speed(nics: Mapping[str, Mapping[str, Any]], *hosts: str) -> float | None:
    speeds = [(nics.get(host) or {}).get("speed_Bps") for host in hosts]
    return min(speeds) if speeds and all(_positive(x) for x in speeds) else None


def link_summary(raw: Mapping[str, Any] | None, wanted: bool) -> dict[str, Any]:
    """The link rate: the slowest pair's, which a ring allreduce goes at (None with the reason when unmeasured);
    each host's interface (``nics``), the slowest interface's speed (``speed_Bps``, None unless every host's is
    known) and each pair's rate as a fraction of the slower of its two interfaces (``speed_fraction``)."""
    if not wanted:
        return {"tool": "iperf3", "rate_Bps": None, "reason": "not asked for (horovod_bench_steps)", "pairs": [],
                "nics": {}, "speed_Bps": None}  # fmt: skip
    raw = raw or {}
    nics = {str(host): nic_summary(nic) for host, nic in (raw.get("nics") or {}).items()}
    pairs = []
    for pair in raw.get("pairs", []):
        rate = pair["bits_per_second"] / 8.0 if _positive(pair.get("bits_per_second")) else None
        speed = _pair_speed(nics, pair["client"], pair["server"])
        pairs.append(
            {
                "client": pair["client"],
                "server": pair["server"],
                "kind": pair.get("kind", ""),
                "rate_Bps": rate,
                "error": pair.get("error"),
                "speed_Bps": speed,
                "speed_fraction": rate / speed if rate and speed else None,
            }
        )
    # Every host's, those of the pairs included: one not read leaves the speed unknown.
    hosts = dict.fromkeys([*nics, *(p[end] for p in pairs for end in ("client", "server"))])
    rates = [p["rate_Bps"] for p in pairs if p["rate_Bps"] is not None]
    failed = [p for p in pairs if p["rate_Bps"] is None]
    reason = raw.get("reason")
    if reason is None and failed:
        reason = "; ".join(f"{p['client']} -> {p['server']}: {p['error'] or 'no rate'}" for p in failed)
    if reason is None and not rates:
        reason = "no pair of hosts to measure (one host)"
    return {
        "tool": "iperf3",
        "seconds": raw.get("seconds"),
        "streams": raw.get("streams"),
        "rate_Bps": min(rates) if rates and not failed else None,
        "reason": reason,
        "pairs": pairs,
        "nics": nics,
        "speed_Bps": _pair_speed(nics, *hosts),
    }


def weakest_transport(nics: Mapping[str, Mapping[str, Any]]) -> str | None:
    """The slowest transport of the hosts' interfaces (tcp, roce, ib); None when one is unknown or none was read."""
    found = [nic.get("transport") for nic in nics.values()]
    if not found or any(t not in TRANSPORTS for t in found):
        return None
    return min(found, key=TRANSPORTS.index)


def _against(link: Mapping[str, Any], kind: str) -> tuple[str, float] | None:
    """What the bus bandwidth is compared with: the mark's own choice when there is one, else the other."""
    speed, rate = link.get("speed_Bps"), link.get("rate_Bps")
    order = [("interface speed", speed), ("measured link rate", rate)]
    for name, value in order if kind == "speed" else order[::-1]:
        if _positive(value):
            return name, float(value)
    return None


def grade(link: Mapping[str, Any], allreduce: Mapping[str, Any] | None, device: str | None) -> dict[str, Any]:
    """The verdict on the best allreduce bus bandwidth (docs/benchmark.md, "The grade"): its fraction of the
    link, against the mark of what carried it (MARKS); "good", "below" (with what to look at) or "unknown"
    (no bus bandwidth, or neither an interface speed nor a measured link rate)."""
    transport = weakest_transport(link.get("nics") or {})
    key = None if device is None else (transport or "tcp") if device == "cuda" else "cpu"
    mark = MARKS.get(key or "", {})
    out: dict[str, Any] = {
        "verdict": "unknown",
        "mark_for": key,
        "mark_label": mark.get("label"),
        "mark": mark.get("mark"),
        "transport": transport,
        "busbw_Bps": None,
        "against": None,
        "against_Bps": None,
        "fraction": None,
        "line": "",
        "look_at": [],
    }
    busbw = (allreduce or {}).get("best_busbw_Bps")
    if not _positive(busbw) or key is None:
        why = "the allreduce was not measured" if not allreduce else "one process has no bus bandwidth"
        out["line"] = f"unknown: no bus bandwidth to grade ({why})"
        return out
    out["busbw_Bps"] = busbw
    against = _against(link, mark["against"])
    if against is None:
        out["line"] = f"unknown: neither an interface speed nor a measured link rate: {link.get('reason') or '-'}"
        return out
    out["against"], out["against_Bps"] = against
    out["fraction"] = fraction = busbw / against[1]
    assumed = " (transport unknown: the TCP sockets mark)" if device == "cuda" and transport is None else ""
    where = f"{fraction:.2f} of the {against[0]} ({_gbit(against[1])})"
    if fraction >= mark["mark"]:
        out["verdict"] = "good"
        out["line"] = f"good: the best bus bandwidth is {where}, at or above the mark {mark['mark']} for "
    else:
        out["verdict"], out["look_at"] = "below", list(_LOOK_AT[key])
        out["line"] = f"below: the best bus bandwidth is {where}, under the mark {mark['mark']} for "
    out["line"] += f"{mark['label']}{assumed}"
    return out


def node_rates(raw: Any, hosts: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Each node's images/s per process, every rank timed alone before the synchronized training (the
    all-slot run's ``nodes``: a rank's hostname and rate, in rank order), the node's ranks averaged; in the
    report's host order. A rank's hostname names its node (the preflight's ``hostname``); one no host has
    goes by its rank's place in the hosts' slots. [] when the run timed none."""
    if not raw:
        return []
    if not isinstance(raw, list):
        raise ValueError(f"a synthetic run's nodes must be a list, got {raw!r}")
    by_hostname = {str(h.get("hostname")): str(h["name"]) for h in hosts if h.get("hostname")}
    by_rank = [str(h["name"]) for h in hosts for _unused in range(int(h.get("slots") or 1))]
    rates: dict[str, list[float]] = {str(h["name"]): [] for h in hosts}
    hostnames: dict[str, str | None] = {str(h["name"]): h.get("hostname") for h in hosts}
    for rank, item in enumerate(raw):
        rate = item.get("img_per_s") if isinstance(item, Mapping) else None
        if not _positive(rate):
            raise ValueError(f"rank {rank}'s img_per_s alone must be positive, got {item!r}")
        # A worker's rank says its hostname: one that is no host name is not kept (SECURITY.md, one trust boundary).
        hostname = str(item.get("hostname")) if _HOSTNAME_RE.fullmatch(str(item.get("hostname"))) else None
        name = by_hostname.get(str(hostname)) or (by_rank[rank] if rank < len(by_rank) else f"rank {rank}")
        rates.setdefault(name, []).append(float(rate))
        hostnames.setdefault(name, hostname)
    return [
        {"name": name, "hostname": hostnames.get(name), "processes": len(found),
         "img_per_s_per_process": sum(found) / len(found)}
        for name, found in rates.items() if found
    ]  # fmt: skip


def _median(values: Sequence[float]) -> float:
    ordered = sorted(values)
    middle = len(ordered) // 2
    return ordered[middle] if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) / 2


def _ratio(value: float) -> str:
    return f"{value:.2f}"


def slow_link(link: Mapping[str, Any], names: Sequence[str]) -> dict[str, Any]:
    """Whether one node's link slows the cluster (docs/benchmark.md, "The slow node"): ``node`` when every
    measured link to and from a node is below LINK_SLOW of the median of the links that do not touch it;
    else ``pair`` when a pair is below LINK_SLOW of the median of the other pairs; ``none``; ``unknown``
    when the pairs cannot tell (not measured, a pair failed, or two nodes: one link, two ends)."""
    pairs = list(link.get("pairs") or [])
    out: dict[str, Any] = {"verdict": "unknown", "threshold": LINK_SLOW, "nodes": [], "pairs": [],
                           "rates": {}, "line": ""}  # fmt: skip
    measured = [x for x in pairs if _positive(x.get("rate_Bps"))]
    hosts = list(dict.fromkeys([*names, *(x[end] for x in pairs for end in ("client", "server"))]))
    if not pairs:
        out["line"] = f"unknown: no link measured ({link.get('reason') or 'one host'})"
        return out
    if len(measured) < len(pairs):
        out["line"] = f"unknown: a pair was not measured ({link.get('reason') or '-'})"
        return out
    # Each node's links: the median of the pairs that touch it, beside the median of those that do not.
    for host in hosts:
        touching = [x["rate_Bps"] for x in measured if host in (x["client"], x["server"])]
        others = [x["rate_Bps"] for x in measured if host not in (x["client"], x["server"])]
        if touching:
            out["rates"][host] = {"own_Bps": _median(touching), "others_Bps": _median(others) if others else None,
                                  "own_max_Bps": max(touching), "links": len(touching)}  # fmt: skip
    if len(hosts) < 3 or len(measured) < 2:
        x = measured[0]
        out["line"] = (
            f"unknown: {len(hosts)} nodes are one link ({x['client']} -> {x['server']}, {_gbit(x['rate_Bps'])}), "
            "and a slow link cannot be put on one of its two ends: compare it with the speed of the interfaces "
            "(speed_fraction), or run the benchmark with a third node"
        )
        return out
    for host, r in out["rates"].items():
        if r["others_Bps"] and r["own_max_Bps"] < LINK_SLOW * r["others_Bps"]:
            out["nodes"].append(host)
    if out["nodes"]:
        out["verdict"] = "node"
        each = "; ".join(
            f"{host}, {_gbit(out['rates'][host]['own_Bps'])} to and from it, "
            f"{_ratio(out['rates'][host]['own_Bps'] / out['rates'][host]['others_Bps'])} of the other links "
            f"({_gbit(out['rates'][host]['others_Bps'])})"
            for host in out["nodes"]
        )
        out["line"] = f"the slow node ({'its link' if len(out['nodes']) == 1 else 'their links'}): {each}"
        return out
    for x in measured:
        rest = [y["rate_Bps"] for y in measured if y is not x]
        if x["rate_Bps"] < LINK_SLOW * _median(rest):
            out["pairs"].append({"client": x["client"], "server": x["server"], "rate_Bps": x["rate_Bps"],
                                 "others_Bps": _median(rest)})  # fmt: skip
    if out["pairs"]:
        out["verdict"] = "pair"
        out["line"] = "a slow link pair, no one node: " + "; ".join(
            f"{x['client']} -> {x['server']} {_gbit(x['rate_Bps'])}, {_ratio(x['rate_Bps'] / x['others_Bps'])} "
            f"of the other pairs ({_gbit(x['others_Bps'])}); the other links of both nodes are not slow"
            for x in out["pairs"]
        )
        return out
    out["verdict"] = "none"
    out["line"] = f"no slow link: the links of every node are at or above {_ratio(LINK_SLOW)} of the other links"
    return out


def slow_compute(nodes: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Whether one node computes slowly: ``node`` when its images/s per process, each rank timed alone, is
    below COMPUTE_SLOW of the median of the other nodes'; ``none``; ``unknown`` under two nodes timed."""
    out: dict[str, Any] = {"verdict": "unknown", "threshold": COMPUTE_SLOW, "nodes": [], "rates": {}, "line": ""}
    rates = {str(n["name"]): float(n["img_per_s_per_process"]) for n in nodes}
    if len(rates) < 2:
        out["line"] = "unknown: " + ("one node timed" if rates else "no node timed alone (the all-slot synthetic run)")
        return out
    for name, rate in rates.items():
        others = _median([r for other, r in rates.items() if other != name])
        out["rates"][name] = {"own_img_per_s": rate, "others_img_per_s": others}
        if rate < COMPUTE_SLOW * others:
            out["nodes"].append(name)
    if out["nodes"]:
        out["verdict"] = "node"
        each = ((name, out["rates"][name]["others_img_per_s"]) for name in out["nodes"])
        out["line"] = "the slow node (compute): " + "; ".join(
            f"{name}, {rates[name]:.1f} images/s per process alone, {_ratio(rates[name] / others)} of the other nodes "
            f"({others:.1f})"
            for name, others in each
        )
        return out
    out["verdict"] = "none"
    out["line"] = f"no slow node (compute): every node at or above {_ratio(COMPUTE_SLOW)} of the other nodes"
    return out


def slow(link: Mapping[str, Any], nodes: Sequence[Mapping[str, Any]], names: Sequence[str]) -> dict[str, Any]:
    """The slow node or link pair (docs/benchmark.md, "The slow node"): the link's and the compute's
    judgement, the cause (their lines that name a node or a pair; [] for none) and what to check."""
    out = {"link": slow_link(link, names), "compute": slow_compute(nodes)}
    causes = [out[kind]["line"] for kind in ("link", "compute") if out[kind]["verdict"] in ("node", "pair")]
    check = [item for kind in ("link", "compute") if out[kind]["verdict"] in ("node", "pair") for item in CHECK[kind]]
    return {**out, "cause": causes, "check": check}


def _grade_cause(g: dict[str, Any], s: Mapping[str, Any]) -> None:
    """The grade names the slow node as the cause and says what to check (``cause``, ``check``)."""
    g["cause"], g["check"] = list(s["cause"]), list(s["check"])
    if s["cause"]:
        g["line"] += "; the cause: " + "; ".join(s["cause"]) + "; check: " + "; ".join(s["check"])


def results_of(slurped: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """{run key: what rank 0 wrote} from the playbook's slurp of each run's result file."""
    return {r["item"]["key"]: json.loads(base64.b64decode(r["content"])) for r in slurped}


def report(
    p: Mapping[str, Any],
    preflight: Mapping[str, Any],
    link: Mapping[str, Any] | None,
    results: Mapping[str, Any],
    plot: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The report (schema SCHEMA, docs/benchmark.md) from the plan, the launch preflight, the iperf3
    script's output and each run's result ({run key: result}); ``plot`` is what the plot script said
    (None: not drawn yet)."""
    link_out = link_summary(link, "link" in p["steps"])
    out: dict[str, Any] = {
        "schema": SCHEMA,
        "name": p["name"],
        "created": p["created"],
        "np": int(p["np"]),
        "launcher": p.get("launcher", "horovodrun"),
        "hosts": [{key: h.get(key) for key in _HOST_KEYS} for h in preflight.get("hosts", [])],
        "network_interfaces": list(preflight.get("network_interfaces", [])),
        "versions": dict(horovod=preflight.get("horovod_version"), image=preflight.get("image")),
        "device": None,
        "backend": None,
        "link": link_out,
        "allreduce": None,
        "synthetic": None,
        "files": {"json": f"{p['report_dir']}/report.json", "markdown": f"{p['report_dir']}/report.md"},
    }
    allreduce, one, every = (results.get(key) for key in ("allreduce", "synthetic_one", "synthetic_all"))
    first = next((r for r in (allreduce, every, one) if r), None)
    if first:
        out["device"], out["backend"] = first.get("device"), first.get("backend")
        for key in ("torch", "python", "cuda", "nccl"):
            out["versions"].setdefault(key, first.get(key))
    if allreduce:
        np = int(allreduce.get("np", out["np"]))
        rows = allreduce_rows(allreduce.get("results", []), np)
        best = max((r for r in rows if r["busbw_Bps"] is not None), key=lambda r: r["busbw_Bps"], default=None)
        out["allreduce"] = {
            "dtype": "float32",
            "op": "sum",
            "np": np,
            "results": rows,
            "best_busbw_Bps": best and best["busbw_Bps"],
            "best_busbw_bytes": best and best["bytes"],
            "busbw_to_link": best["busbw_Bps"] / link_out["rate_Bps"] if best and link_out["rate_Bps"] else None,
        }
    out["grade"] = grade(link_out, out["allreduce"], out["device"])
    if one or every:
        points = [_synthetic_point(r) for r in (one, every) if r]
        efficiency = None
        if one and every:
            efficiency = points[1]["img_per_s"] / (points[1]["np"] * points[0]["img_per_s"] / points[0]["np"])
        source = one or every
        out["synthetic"] = {
            "model": source.get("model"),
            "batch_size": source.get("batch_size"),
            "image_size": source.get("image_size"),
            "points": points,
            "scaling_efficiency": efficiency,
            "nodes": node_rates((every or {}).get("nodes"), out["hosts"]),
        }
    out["slow"] = slow(link_out, (out["synthetic"] or {}).get("nodes") or [], [h["name"] for h in out["hosts"]])
    _grade_cause(out["grade"], out["slow"])
    if plot is not None:
        drawn = bool(plot.get("drawn"))
        out["files"]["plot"] = f"{p['report_dir']}/report.png" if drawn else None
        out["files"]["plot_reason"] = None if drawn else plot.get("reason")
    return out


def _synthetic_point(raw: Mapping[str, Any]) -> dict[str, Any]:
    rate = raw.get("img_per_s")
    if not _positive(rate) or not _positive(raw.get("np")):
        raise ValueError(f"a synthetic result needs positive np and img_per_s, got {dict(raw)!r}")
    return {"np": int(raw["np"]), "img_per_s": float(rate), "img_per_s_per_process": float(rate) / int(raw["np"])}


def outputs(p: Mapping[str, Any], r: Mapping[str, Any]) -> dict[str, Any]:
    """The report, its files' texts ({name: text}), the files to copy onto the share and the play's last lines."""
    files = {"report.json": json.dumps(r, indent=4, sort_keys=True) + "\n", "report.md": markdown(r)}
    kinds = "json,md,png" if r["files"].get("plot") else "json,md"
    lines = [f"Benchmark {p['name']} on {', '.join(p['hosts'])}:", *summary(r)]
    lines.append(f"report: {p['report_dir']}/report.{{{kinds}}} on {p['hosts'][0]}, and in {p['fetch_dir']} here")
    if r["files"].get("plot_reason"):
        lines.append(
            f"No plot: {r['files']['plot_reason']}. The report has its numbers and table without it; install "
            f"matplotlib (requirements.txt) and run the playbook again with -e horovod_bench_name={p['name']} "
            "to draw it from the runs already made."
        )
    problems = sanity(r)
    return {
        "report": r,
        "files": files,
        "share_files": [*files, "report.png"] if r["files"].get("plot") else [*files],
        "summary": lines + ([f"sanity: {'; '.join(problems)}"] if problems else []),
    }


def _gbit(bps: float | None) -> str:
    return "-" if bps is None else f"{bps * 8 / 1e9:.2f} Gbit/s"


def _gbyte(bps: float | None) -> str:
    return "-" if bps is None else f"{bps / 1e9:.3g} GB/s"


def _num(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def _table(header: Sequence[str], align: str, rows: Sequence[Sequence[Any]]) -> list[str]:
    return (
        ["| " + " | ".join(header) + " |", "|" + f"{align}|" * len(header)]
        + ["| " + " | ".join(map(str, row)) + " |" for row in rows]
        + [""]
    )


def markdown(r: Mapping[str, Any]) -> str:
    """report.md: the summary table, then the link pairs and the allreduce sweep."""
    link, ar, syn, files = r["link"], r.get("allreduce"), r.get("synthetic"), r.get("files", {})
    rate = link["rate_Bps"]
    rows = [("link rate (iperf3, slowest pair)", f"{_gbit(rate)} ({_gbyte(rate) if rate else link.get('reason')})")]
    if ar:
        best_at = human_bytes(ar["best_busbw_bytes"]) if ar["best_busbw_bytes"] else "-"
        rows.append(("best allreduce bus bandwidth", f"{_gbyte(ar['best_busbw_Bps'])} at {best_at}"))
        rows.append(("best bus bandwidth / link rate", _num(ar["busbw_to_link"])))
    if r.get("grade"):
        rows.append(("grade", r["grade"]["verdict"]))
    if r.get("slow"):
        rows += [(f"slow node ({kind})", r["slow"][kind]["line"]) for kind in ("link", "compute")]
    if syn:
        for n in sorted(syn["points"], key=lambda n: n["np"]):
            processes = "1 process" if n["np"] == 1 else f"{n['np']} processes"
            rows.append((f"images/s, {processes} ({syn['model']})", f"{n['img_per_s']:.1f}"))
        rows.append(("scaling efficiency", _num(syn["scaling_efficiency"])))
    hosts = (f"{h.get('name')} ({h.get('address')}, {h.get('slots')} slot{'s' * (h.get('slots') != 1)})"
             for h in r.get("hosts", []))  # fmt: skip
    versions = (f"{k} {v}" for k, v in r.get("versions", {}).items() if v not in (None, ""))
    rows.append(("hosts", ", ".join(hosts)))
    rows.append(("network interfaces", ", ".join(r.get("network_interfaces") or []) or "-"))
    rows.append(("versions", ", ".join(versions) or "-"))
    lines = [f"# Benchmark {r['name']}", ""]
    lines.append(f"{r['np']} processes under {r.get('launcher', 'horovodrun')}, device {r.get('device') or '-'}, ")
    lines[-1] += f"allreduce through {r.get('backend') or '-'}; "
    lines[-1] += f"{r['created']}."
    lines += ["", *_table(("measure", "value"), "---", rows)]
    if link["pairs"]:
        pairs = [(x["client"], x["server"], x["kind"], _gbit(x["rate_Bps"]) if x["rate_Bps"] else x["error"])
                 for x in link["pairs"]]  # fmt: skip
        lines += ["## Link", "", *_table(("client", "server", "path", "rate"), "---", pairs)]
    if ar:
        sweep = [(human_bytes(x["bytes"]), x["iters"], f"{x['time_s'] * 1e3:.3f} ms", _gbyte(x["algbw_Bps"]),
                  _gbyte(x["busbw_Bps"])) for x in ar["results"]]  # fmt: skip
        lines += [f"## Allreduce (float32, sum, {ar['np']} processes)", ""]
        lines += _table(("size", "iterations", "time", "algbw", "busbw"), "---:", sweep)
    if r.get("grade"):
        lines += grade_markdown(r["grade"], link)
    if r.get("slow"):
        lines += slow_markdown(r["slow"])
    if files.get("plot"):
        lines += [f"![bus bandwidth and images/s]({os.path.basename(files['plot'])})", ""]
    elif files.get("plot_reason"):
        lines += [f"No plot: {files['plot_reason']}", ""]
    return "\n".join(lines)


def _speed(nic: Mapping[str, Any]) -> str:
    return _gbit(nic["speed_Bps"]) if nic.get("speed_Bps") else f"unknown ({nic.get('reason') or '-'})"


def grade_markdown(g: Mapping[str, Any], link: Mapping[str, Any]) -> list[str]:
    """report.md's "Grade": each host's interface, each link's rate as a fraction of its interfaces' speed,
    the best bus bandwidth as a fraction of the link against its mark, and the verdict."""
    lines = ["## Grade", ""]
    nics = link.get("nics") or {}
    if nics:
        rows = [(host, nic.get("interface") or "-", nic.get("transport") or "-", _speed(nic))
                for host, nic in nics.items()]  # fmt: skip
        lines += _table(("host", "interface", "transport", "speed"), "---", rows)
    if link.get("pairs"):
        rows = [(x["client"], x["server"], _gbit(x["rate_Bps"]), _gbit(x.get("speed_Bps")) if x.get("speed_Bps")
                 else "unknown speed", _num(x.get("speed_fraction"))) for x in link["pairs"]]  # fmt: skip
        lines += _table(("client", "server", "rate", "interface speed", "rate / speed"), "---", rows)
    rows = [("best bus bandwidth", _gbit(g.get("busbw_Bps")))]
    rows.append(("compared with", f"{g['against']}, {_gbit(g['against_Bps'])}" if g.get("against") else "-"))
    rows.append(("bus bandwidth / compared with", _num(g.get("fraction"))))
    rows.append(("mark", f"{g['mark']} for {g['mark_label']}" if g.get("mark") is not None else "-"))
    lines += _table(("measure", "value"), "---", rows)
    lines += [f"Verdict: {g['line']}", ""]
    if g.get("look_at"):
        lines += ["What to look at:", "", *(f"- {item}" for item in g["look_at"]), ""]
    return lines


def slow_markdown(s: Mapping[str, Any]) -> list[str]:
    """report.md's "Slow node": each node's links beside the others', each node's images/s alone beside the
    others', the cause and what to check."""
    lines = ["## Slow node", ""]
    link, compute = s["link"], s["compute"]
    if link["rates"]:
        rows = [(host, x["links"], _gbit(x["own_Bps"]), _gbit(x["others_Bps"]),
                 _num(x["own_Bps"] / x["others_Bps"]) if x["others_Bps"] else "-")
                for host, x in link["rates"].items()]  # fmt: skip
        header = ("node", "links measured", "its links (median)", "the other links (median)", "ratio")
        lines += _table(header, "---", rows)
    lines += [f"Link: {link['line']}", ""]
    if compute["rates"]:
        rows = [(name, f"{x['own_img_per_s']:.1f}", f"{x['others_img_per_s']:.1f}",
                 _num(x["own_img_per_s"] / x["others_img_per_s"])) for name, x in compute["rates"].items()]  # fmt: skip
        header = ("node", "images/s per process alone", "the other nodes' (median)", "ratio")
        lines += _table(header, "---", rows)
    lines += [f"Compute: {compute['line']}", ""]
    if s["check"]:
        lines += ["What to check on it:", "", *(f"- {item}" for item in s["check"]), ""]
    return lines


def grade_summary(g: Mapping[str, Any], link: Mapping[str, Any]) -> list[str]:
    """The play's lines of the grade: each link against its interfaces' speed, the verdict, what to look at."""
    lines = []
    if link.get("pairs") and link.get("nics"):
        each = (f"{x['client']} -> {x['server']} " + (_num(x["speed_fraction"]) if x.get("speed_fraction") is not None
                else "unknown speed") for x in link["pairs"])  # fmt: skip
        lines.append("link / interface speed: " + ", ".join(each))
    lines.append(f"grade: {g['line']}")
    if g.get("look_at"):
        lines.append("look at: " + "; ".join(g["look_at"]))
    return lines


def summary(r: Mapping[str, Any]) -> list[str]:
    """A line per measurement for the play's output."""
    link, ar, syn = r["link"], r.get("allreduce"), r.get("synthetic")
    rate = link["rate_Bps"]
    lines = [f"link rate: {_gbit(rate)} (slowest of {len(link['pairs'])} pairs)" if rate else
             f"link rate: none: {link['reason']}"]  # fmt: skip
    if ar:
        lines.append(
            f"allreduce: best bus bandwidth {_gbyte(ar['best_busbw_Bps'])}"
            + (f" at {human_bytes(ar['best_busbw_bytes'])}" if ar["best_busbw_bytes"] else "")
            + (f", {ar['busbw_to_link']:.2f} of the link rate" if ar["busbw_to_link"] is not None else "")
            + f" ({ar['np']} processes, {r.get('backend')}, {r.get('launcher', 'horovodrun')})"
        )
    if syn:
        points = ", ".join(f"{n['img_per_s']:.1f} images/s on {n['np']}" for n in syn["points"])
        lines.append(f"synthetic {syn['model']}: {points}; scaling efficiency {_num(syn['scaling_efficiency'])}")
    if r.get("slow"):
        lines += [f"slow node ({kind}): {r['slow'][kind]['line']}" for kind in ("link", "compute")]
    if r.get("grade"):
        lines += grade_summary(r["grade"], link)
    return lines


def sanity(r: Any, max_busbw_to_link: float = MAX_BUSBW_TO_LINK) -> list[str]:
    """What is wrong with a report's shape or numbers (not their values): [] for a sane report."""
    if not isinstance(r, Mapping):
        return [f"the report is not a mapping but {type(r).__name__}"]
    problems = [f"the report has no {key!r}" for key in _REPORT_KEYS if key not in r]
    if problems:
        return problems
    if r["schema"] != SCHEMA:
        problems.append(f"schema is {r['schema']!r}, not {SCHEMA!r}")
    if not isinstance(r["np"], int) or r["np"] < 1:
        problems.append(f"np is {r['np']!r}")
    if not r["hosts"]:
        problems.append("the report names no host")
    link = r["link"]
    rate = link.get("rate_Bps") if isinstance(link, Mapping) else None
    if not isinstance(link, Mapping) or "rate_Bps" not in link:
        problems.append("link has no rate_Bps")
    elif rate is None and not link.get("reason"):
        problems.append("the link rate is null without a reason")
    elif rate is not None and not _positive(rate):
        problems.append(f"the link rate {rate!r} is not positive")
    if r["allreduce"] is not None:
        problems += _allreduce_sanity(r["allreduce"], rate, max_busbw_to_link)
    if r["synthetic"] is not None:
        problems += _synthetic_sanity(r["synthetic"])
    # A report made before the grade has none; one that has it names a verdict.
    g = r.get("grade")
    if g is not None and (not isinstance(g, Mapping) or g.get("verdict") not in VERDICTS):
        verdict = g.get("verdict") if isinstance(g, Mapping) else g
        problems.append(f"the grade's verdict {verdict!r} is not one of {', '.join(VERDICTS)}")
    return problems + _slow_sanity(r.get("slow"))


def _slow_sanity(found: Any) -> list[str]:
    # A report made before the slow-node judgement has none; one that has it names a verdict for each.
    problems = []
    for kind in ("link", "compute") if found is not None else ():
        judged = found.get(kind) if isinstance(found, Mapping) else None
        verdict = judged.get("verdict") if isinstance(judged, Mapping) else judged
        if verdict not in SLOW_VERDICTS:
            problems.append(f"the slow node's {kind} verdict {verdict!r} is not one of {', '.join(SLOW_VERDICTS)}")
    return problems


def _allreduce_sanity(ar: Mapping[str, Any], rate: Any, max_busbw_to_link: float) -> list[str]:
    problems = [] if ar.get("results") else ["allreduce has no results"]
    for row in ar.get("results", []):
        where = f"allreduce of {row.get('bytes')!r} B"
        problems += [
            f"{where}: {key} {row.get(key)!r} is not positive"
            for key in ("bytes", "time_s", "algbw_Bps")
            if not _positive(row.get(key))
        ]
        busbw = row.get("busbw_Bps")
        if ar.get("np", 1) > 1 and not _positive(busbw):
            problems.append(f"{where}: busbw {busbw!r} is not positive")
        if _positive(busbw) and _positive(rate) and busbw > max_busbw_to_link * rate:
            problems.append(
                f"{where}: bus bandwidth {busbw:.3g} B/s is more than {max_busbw_to_link:g} times the link rate "
                f"{rate:.3g} B/s"
            )
    return problems


def _synthetic_sanity(syn: Mapping[str, Any]) -> list[str]:
    points = syn.get("points", [])
    problems = [] if points else ["synthetic has no points"]
    problems += [
        f"synthetic on {p.get('np')!r} processes: img_per_s {p.get('img_per_s')!r} is not positive"
        for p in points
        if not _positive(p.get("img_per_s"))
    ]
    if len(points) == 2 and not _positive(syn.get("scaling_efficiency")):
        problems.append(f"scaling efficiency {syn.get('scaling_efficiency')!r} is not positive")
    return problems
