# Copyright: multinode.horovod contributors
# SPDX-License-Identifier: GPL-3.0-or-later
"""The benchmark playbook's decisions: its settings, what it measures, and the report it writes.

``playbooks/benchmark.yml`` measures a ready cluster (docs/benchmark.md): the link between the nodes
(iperf3 in the containers, every worker to the master and a ring), Horovod's allreduce over a sweep of
message sizes, and the images per second of a synthetic training benchmark at one process and at all
slots. The playbook runs the measurements; everything it decides or computes is here, unit-tested
(tests/unit/test_horovod_bench.py): the settings with their defaults (``SETTINGS``, also the names the
gate knows), the measurement plan, algorithm and bus bandwidth, the link ratio, the scaling
efficiency, the report (schema ``SCHEMA``) and its markdown table, and the sanity checks of a report.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ansible_collections.multinode.horovod.plugins.module_utils.defaults import SSH_KEY_FILE
from ansible_collections.multinode.horovod.plugins.module_utils.numbers import whole
from ansible_collections.multinode.horovod.plugins.module_utils.paths import strip_slash

SCHEMA = "multinode.horovod/benchmark/1"
RUN_NAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,80}")
SIZE_RE = re.compile(r"^\s*([0-9]+)\s*([KMG]?)i?B?\s*$", re.IGNORECASE)
UNITS = {"": 1, "K": 1024, "M": 1024**2, "G": 1024**3}
STEPS = ("link", "allreduce", "synthetic")
DEVICES = ("auto", "cpu", "cuda")
# A bus bandwidth above this many times the link rate is not a measurement of the link (docs/benchmark.md).
MAX_BUSBW_TO_LINK = 4.0
# What the report keeps of each host of the launch preflight (horovod_launch_preflight.hosts).
HOST_KEYS = ("name", "address", "slots", "hostname", "interface")
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


@dataclass(frozen=True)
class Setting:
    name: str
    kind: type
    default: Any
    doc: str


# The playbook's switches (-e NAME=VALUE), each with its type and default: the one table. The gate
# knows these names (gate.PLAYBOOK_SWITCHES), docs/benchmark.md shows them.
SETTINGS: tuple[Setting, ...] = (
    Setting("horovod_bench_name", str, "", "name of this benchmark; empty: bench-<UTC date and time>"),
    Setting("horovod_bench_dir", str, "", "directory of the reports on the share; empty: <share>/benchmarks"),
    Setting("horovod_bench_fetch_dir", str, "", "directory on the controller; empty: ./benchmarks"),
    Setting("horovod_bench_steps", list, list(STEPS), "what to measure, any of link, allreduce, synthetic"),
    Setting("horovod_bench_device", str, "auto", "auto (cuda when the ranks see a GPU), cpu or cuda"),
    Setting("horovod_bench_timeout", int, 3600, "seconds each Horovod run may take"),
    Setting("horovod_bench_link_port", int, 5201, "TCP port of the short-lived iperf3 server"),
    Setting("horovod_bench_link_seconds", int, 5, "seconds of each iperf3 measurement"),
    Setting("horovod_bench_link_streams", int, 4, "parallel TCP streams of each iperf3 measurement"),
    Setting("horovod_bench_allreduce_min_bytes", int, 1024, "smallest allreduce message (float32)"),
    Setting("horovod_bench_allreduce_max_bytes", int, 256 * 1024**2, "largest allreduce message"),
    Setting("horovod_bench_allreduce_factor", int, 2, "each message size is the previous one times this"),
    Setting("horovod_bench_allreduce_iters", int, 50, "most timed allreduces per size"),
    Setting("horovod_bench_allreduce_seconds", int, 2, "time per size the timed allreduces aim at"),
    Setting("horovod_bench_synthetic_model", str, "resnet50", "torchvision model of the synthetic benchmark"),
    Setting("horovod_bench_synthetic_batch_size", int, 32, "images per batch and process"),
    Setting("horovod_bench_synthetic_image_size", int, 224, "height and width of the synthetic images"),
    Setting("horovod_bench_synthetic_warmup_batches", int, 10, "batches before the timing starts"),
    Setting("horovod_bench_synthetic_batches", int, 50, "timed batches per process"),
)
SETTING_NAMES: tuple[str, ...] = tuple(s.name for s in SETTINGS)
SIZE_SETTINGS = ("horovod_bench_allreduce_min_bytes", "horovod_bench_allreduce_max_bytes")
POSITIVE_INTS = (
    "horovod_bench_timeout",
    "horovod_bench_link_seconds",
    "horovod_bench_link_streams",
    "horovod_bench_allreduce_iters",
    "horovod_bench_allreduce_seconds",
    "horovod_bench_synthetic_batch_size",
    "horovod_bench_synthetic_image_size",
    "horovod_bench_synthetic_batches",
)


def parse_bytes(value: Any) -> int | None:
    """A size in bytes from an int or a string like ``16M``, ``1KiB``, ``4096`` (binary units); None if not one."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    match = SIZE_RE.match(str(value))
    if not match:
        return None
    return int(match.group(1)) * UNITS[match.group(2).upper()]


def settings(given: Mapping[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """The settings with their defaults, from what the user gave (every ``horovod_bench_*`` variable),
    and the problems, each naming the variable and the fix. Values are only used when there is none."""
    out: dict[str, Any] = {}
    problems: list[str] = []
    for name in sorted(set(given) - set(SETTING_NAMES)):
        if name.startswith("horovod_bench_"):
            problems.append(f"{name}: the benchmark has no such setting (docs/benchmark.md lists them).")
    for setting in SETTINGS:
        value = given.get(setting.name, setting.default)
        if value is None:
            value = setting.default
        if setting.name in SIZE_SETTINGS:
            size = parse_bytes(value)
            if size is None or size < 4 or size % 4:
                problems.append(
                    f"{setting.name}: {value!r} is not a size in bytes that holds whole float32 values "
                    "(a multiple of 4: 1024, 64K, 16M)."
                )
            out[setting.name] = size
        elif setting.kind is int:
            # The collection's one parser (numbers.whole), as the site's gate reads its own settings: a
            # leading "+" is taken (-e horovod_bench_timeout=+600 is 600), as Ansible's int conversion does.
            number = whole(value)
            if number is None:
                problems.append(f"{setting.name}: {value!r} is not a whole number.")
            out[setting.name] = number
        elif setting.kind is list:
            items = [value] if isinstance(value, str) else value
            if not isinstance(items, list | tuple) or not all(isinstance(i, str) for i in items):
                problems.append(f"{setting.name}: {value!r} is not a list of names.")
                items = []
            out[setting.name] = [str(i) for i in items]
        else:
            if not isinstance(value, str):
                problems.append(f"{setting.name}: {value!r} is not a string.")
            out[setting.name] = str(value)
    problems += _rules(out)
    return out, problems


def _rules(s: Mapping[str, Any]) -> list[str]:
    problems = []
    for name in POSITIVE_INTS:
        if s[name] is not None and s[name] < 1:
            problems.append(f"{name}: {s[name]} must be 1 or more.")
    port = s["horovod_bench_link_port"]
    if port is not None and not 1 <= port <= 65535:
        problems.append(f"horovod_bench_link_port: {port} is not a TCP port (1-65535).")
    if s["horovod_bench_synthetic_warmup_batches"] is not None and s["horovod_bench_synthetic_warmup_batches"] < 0:
        problems.append("horovod_bench_synthetic_warmup_batches: must be 0 or more.")
    factor = s["horovod_bench_allreduce_factor"]
    if factor is not None and factor < 2:
        problems.append(f"horovod_bench_allreduce_factor: {factor} must be 2 or more (each size grows by it).")
    low, high = s["horovod_bench_allreduce_min_bytes"], s["horovod_bench_allreduce_max_bytes"]
    if low is not None and high is not None and low > high:
        problems.append(
            f"horovod_bench_allreduce_min_bytes ({low}) is more than horovod_bench_allreduce_max_bytes ({high})."
        )
    unknown = [step for step in s["horovod_bench_steps"] if step not in STEPS]
    if unknown or not s["horovod_bench_steps"]:
        problems.append(
            f"horovod_bench_steps: {s['horovod_bench_steps']!r} must name one or more of {', '.join(STEPS)}."
        )
    if s["horovod_bench_device"] not in DEVICES:
        problems.append(f"horovod_bench_device: {s['horovod_bench_device']!r} is not one of {', '.join(DEVICES)}.")
    name = s["horovod_bench_name"]
    if name and not RUN_NAME_RE.fullmatch(name):
        problems.append(
            f"horovod_bench_name: {name!r} may hold letters, digits, '.', '_' and '-' only (at most 81), "
            "starting with a letter or digit."
        )
    for key in ("horovod_bench_dir", "horovod_bench_fetch_dir"):
        if s[key] and not os.path.isabs(s[key]):
            problems.append(f"{key}: {s[key]!r} must be an absolute path (or empty for the default).")
    return problems


def sizes(low: int, high: int, factor: int) -> list[int]:
    """The message sizes of the sweep: low, low*factor, ... up to high, and high itself."""
    out = []
    size = low
    while size < high:
        out.append(size)
        size *= factor
    out.append(high)
    return out


def link_pairs(hosts: Sequence[Mapping[str, Any]]) -> list[dict[str, str]]:
    """The iperf3 measurements: every worker (client) to the master (server, the first host), then the
    ring host i -> host i+1, without measuring one ordered pair twice."""
    names = [str(h["name"]) for h in hosts]
    address = {str(h["name"]): str(h["address"]) for h in hosts}
    pairs: list[dict[str, str]] = []
    seen: set[tuple[str, str]] = set()
    wanted = [(name, names[0], "to-master") for name in names[1:]]
    if len(names) > 2:
        wanted += [(names[i], names[(i + 1) % len(names)], "ring") for i in range(len(names))]
    for client, server, kind in wanted:
        if (client, server) in seen:
            continue
        seen.add((client, server))
        pairs.append(
            {
                "client": client,
                "server": server,
                "kind": kind,
                "client_address": address[client],
                "server_address": address[server],
            }
        )
    return pairs


def plan(
    s: Mapping[str, Any],
    hosts: Sequence[Mapping[str, Any]],
    *,
    share_dir: str,
    artifact_dir: str,
    now: str,
    ssh_port: int,
    identity_file: str = "",
    cwd: str | None = None,
) -> dict[str, Any]:
    """What the playbook measures and where it puts things (``now``: the UTC time as YYYYmmdd-HHMMSS).

    ``ssh_argv`` is ssh as horovodrun uses it between the containers, with the pinned host key
    required and no prompt (horovod_launch's own), for the link measurement."""
    name = s["horovod_bench_name"] or f"bench-{now}"
    slots = sum(int(h["slots"]) for h in hosts)
    report_dir = f"{strip_slash(s['horovod_bench_dir'] or share_dir + '/benchmarks')}/{name}"
    fetch_dir = f"{strip_slash(s['horovod_bench_fetch_dir'] or os.path.join(cwd or os.getcwd(), 'benchmarks'))}/{name}"
    steps = [step for step in STEPS if step in s["horovod_bench_steps"]]
    out: dict[str, Any] = {
        "name": name,
        "steps": steps,
        "np": slots,
        "hosts": [str(h["name"]) for h in hosts],
        "report_dir": report_dir,
        "fetch_dir": fetch_dir,
        # What the ranks execute goes where only the master writes (site.yml's artifact directory).
        "script_dir": f"{strip_slash(artifact_dir or share_dir)}/benchmark",
        "link_pairs": link_pairs(hosts) if "link" in steps else [],
        "sizes": sizes(
            s["horovod_bench_allreduce_min_bytes"],
            s["horovod_bench_allreduce_max_bytes"],
            s["horovod_bench_allreduce_factor"],
        )
        if "allreduce" in steps
        else [],
        "runs": {},
        "ssh_argv": [
            "ssh",
            "-p",
            str(ssh_port),
            "-i",
            identity_file or SSH_KEY_FILE,
            "-o",
            "BatchMode=yes",
            "-o",
            "StrictHostKeyChecking=yes",
            "-o",
            "ConnectTimeout=10",
        ],
    }
    if "allreduce" in steps:
        out["runs"]["allreduce"] = f"{name}-allreduce"
    if "synthetic" in steps:
        out["runs"]["synthetic_one"] = f"{name}-synthetic-np1"
        out["runs"]["synthetic_all"] = f"{name}-synthetic-np{slots}"
    out["lines"] = plan_lines(s, out)
    return out


def human_bytes(size: float) -> str:
    for unit, scale in (("GiB", 1024**3), ("MiB", 1024**2), ("KiB", 1024)):
        if size >= scale:
            value = size / scale
            return f"{value:.0f} {unit}" if value == int(value) else f"{value:.1f} {unit}"
    return f"{size:.0f} B"


def plan_lines(s: Mapping[str, Any], p: Mapping[str, Any]) -> list[str]:
    lines = []
    if p["link_pairs"]:
        lines.append(
            f"link: iperf3 in the containers, {s['horovod_bench_link_seconds']} s and "
            f"{s['horovod_bench_link_streams']} streams each, port {s['horovod_bench_link_port']}: "
            + ", ".join(f"{x['client']} -> {x['server']}" for x in p["link_pairs"])
        )
    elif "link" in p["steps"]:
        lines.append("link: not measured (one host)")
    if p["sizes"]:
        lines.append(
            f"allreduce: float32 sum on {p['np']} processes, {len(p['sizes'])} sizes from "
            f"{human_bytes(p['sizes'][0])} to {human_bytes(p['sizes'][-1])}, device {s['horovod_bench_device']}"
            f" (run {p['runs']['allreduce']})"
        )
    if "synthetic" in p["steps"]:
        lines.append(
            f"synthetic: {s['horovod_bench_synthetic_model']}, batch {s['horovod_bench_synthetic_batch_size']}, "
            f"{s['horovod_bench_synthetic_image_size']} px, {s['horovod_bench_synthetic_batches']} timed batches, "
            f"at 1 process and at {p['np']} (runs {p['runs']['synthetic_one']}, {p['runs']['synthetic_all']})"
        )
    lines.append(f"report: {p['report_dir']}/report.{{json,md,png}} on the master, copied to {p['fetch_dir']}")
    return lines


def _positive(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value) and value > 0


def bus_factor(np: int) -> float:
    """Bus bandwidth over algorithm bandwidth for an allreduce on np processes: 2(n-1)/n (NCCL's tests)."""
    return 2.0 * (np - 1) / np if np > 0 else 0.0


def allreduce_rows(results: Sequence[Mapping[str, Any]], np: int) -> list[dict[str, Any]]:
    """Each size's time with its algorithm bandwidth (size / time) and bus bandwidth (algbw * 2(n-1)/n),
    in bytes per second; the bus bandwidth is None on one process (nothing crosses a link)."""
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
                "busbw_Bps": algbw * bus_factor(np) if np > 1 else None,
            }
        )
    return rows


def link_summary(raw: Mapping[str, Any] | None, wanted: bool) -> dict[str, Any]:
    """The link rate: the slowest pair's, the ring's bottleneck (None with the reason when unmeasured)."""
    if not wanted:
        return {"tool": "iperf3", "rate_Bps": None, "reason": "not asked for (horovod_bench_steps)", "pairs": []}
    raw = raw or {}
    pairs = []
    for pair in raw.get("pairs", []):
        bps = pair.get("bits_per_second")
        pairs.append(
            {
                "client": pair["client"],
                "server": pair["server"],
                "kind": pair.get("kind", ""),
                "rate_Bps": bps / 8.0 if _positive(bps) else None,
                "error": pair.get("error"),
            }
        )
    reason = raw.get("reason")
    rates = [p["rate_Bps"] for p in pairs if p["rate_Bps"] is not None]
    failed = [p for p in pairs if p["rate_Bps"] is None]
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
    }


def report(
    meta: Mapping[str, Any],
    link_raw: Mapping[str, Any] | None,
    allreduce_raw: Mapping[str, Any] | None,
    one_raw: Mapping[str, Any] | None,
    all_raw: Mapping[str, Any] | None,
) -> dict[str, Any]:
    """The report (schema SCHEMA, docs/benchmark.md) from what each step wrote; a step not run is None."""
    steps = list(meta.get("steps", STEPS))
    link = link_summary(link_raw, "link" in steps)
    np = int(meta["np"])
    out: dict[str, Any] = {
        "schema": SCHEMA,
        "name": meta["name"],
        "created": meta["created"],
        "np": np,
        "hosts": [{key: h.get(key) for key in HOST_KEYS} for h in meta.get("hosts", [])],
        "network_interfaces": list(meta.get("network_interfaces", [])),
        "versions": dict(meta.get("versions", {})),
        "device": None,
        "backend": None,
        "link": link,
        "allreduce": None,
        "synthetic": None,
        "files": dict(meta.get("files", {})),
    }
    first = next((r for r in (allreduce_raw, all_raw, one_raw) if r), None)
    if first:
        out["device"], out["backend"] = first.get("device"), first.get("backend")
        for key in ("torch", "python", "cuda", "nccl"):
            out["versions"].setdefault(key, first.get(key))
    if allreduce_raw:
        rows = allreduce_rows(allreduce_raw.get("results", []), int(allreduce_raw.get("np", np)))
        busbws = [r for r in rows if r["busbw_Bps"] is not None]
        best = max(busbws, key=lambda r: r["busbw_Bps"]) if busbws else None
        ratio = best["busbw_Bps"] / link["rate_Bps"] if best and link["rate_Bps"] else None
        out["allreduce"] = {
            "dtype": "float32",
            "op": "sum",
            "np": int(allreduce_raw.get("np", np)),
            "results": rows,
            "best_busbw_Bps": best["busbw_Bps"] if best else None,
            "best_busbw_bytes": best["bytes"] if best else None,
            "busbw_to_link": ratio,
        }
    if one_raw or all_raw:
        one = _synthetic_point(one_raw)
        every = _synthetic_point(all_raw)
        efficiency = None
        if one and every and _positive(one["img_per_s"]) and _positive(every["img_per_s"]):
            efficiency = every["img_per_s"] / (every["np"] * one["img_per_s"] / one["np"])
        source = one_raw or all_raw or {}
        out["synthetic"] = {
            "model": source.get("model"),
            "batch_size": source.get("batch_size"),
            "image_size": source.get("image_size"),
            "points": [p for p in (one, every) if p],
            "scaling_efficiency": efficiency,
        }
    return out


def _synthetic_point(raw: Mapping[str, Any] | None) -> dict[str, Any] | None:
    if not raw:
        return None
    rate = raw.get("img_per_s")
    if not _positive(rate) or not _positive(raw.get("np")):
        raise ValueError(f"a synthetic result needs positive np and img_per_s, got {dict(raw)!r}")
    return {"np": int(raw["np"]), "img_per_s": float(rate), "img_per_s_per_process": float(rate) / int(raw["np"])}


def _gbit(bps: float | None) -> str:
    return "-" if bps is None else f"{bps * 8 / 1e9:.2f} Gbit/s"


def _gbyte(bps: float | None) -> str:
    return "-" if bps is None else f"{bps / 1e9:.3g} GB/s"


def _num(value: float | None, digits: int = 2) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def markdown(r: Mapping[str, Any]) -> str:
    """report.md: the summary table, then the link pairs and the allreduce sweep."""
    link, ar, syn = r["link"], r.get("allreduce"), r.get("synthetic")
    points = {p["np"]: p for p in (syn or {}).get("points", [])}
    hosts = ", ".join(
        f"{h.get('name')} ({h.get('address')}, {h.get('slots')} slot{'s' if h.get('slots') != 1 else ''})"
        for h in r.get("hosts", [])
    )
    versions = ", ".join(f"{k} {v}" for k, v in r.get("versions", {}).items() if v not in (None, ""))
    lines = [
        f"# Benchmark {r['name']}",
        "",
        f"{r['np']} processes, device {r.get('device') or '-'}, allreduce through {r.get('backend') or '-'}; "
        f"{r['created']}.",
        "",
        "| measure | value |",
        "|---|---|",
        f"| link rate (iperf3, slowest pair) | {_gbit(link['rate_Bps'])}"
        + (f" ({_gbyte(link['rate_Bps'])})" if link["rate_Bps"] else f" ({link.get('reason')})")
        + " |",
    ]
    if ar:
        best_at = human_bytes(ar["best_busbw_bytes"]) if ar["best_busbw_bytes"] else "-"
        lines += [
            f"| best allreduce bus bandwidth | {_gbyte(ar['best_busbw_Bps'])} at {best_at} |",
            f"| best bus bandwidth / link rate | {_num(ar['busbw_to_link'])} |",
        ]
    if syn:
        for np_, point in sorted(points.items()):
            lines.append(
                f"| images/s, {np_} process{'es' if np_ != 1 else ''} ({syn['model']}) | {point['img_per_s']:.1f} |"
            )
        lines.append(f"| scaling efficiency | {_num(syn['scaling_efficiency'])} |")
    lines += [
        f"| hosts | {hosts} |",
        f"| network interfaces | {', '.join(r.get('network_interfaces') or []) or '-'} |",
        f"| versions | {versions or '-'} |",
        "",
    ]
    if link["pairs"]:
        lines += ["## Link", "", "| client | server | path | rate |", "|---|---|---|---|"]
        lines += [
            f"| {p['client']} | {p['server']} | {p['kind']} | {_gbit(p['rate_Bps']) if p['rate_Bps'] else p['error']} |"
            for p in link["pairs"]
        ]
        lines.append("")
    if ar:
        lines += [
            f"## Allreduce (float32, sum, {ar['np']} processes)",
            "",
            "| size | iterations | time | algbw | busbw |",
            "|---:|---:|---:|---:|---:|",
        ]
        lines += [
            f"| {human_bytes(row['bytes'])} | {row['iters']} | {row['time_s'] * 1e3:.3f} ms | "
            f"{_gbyte(row['algbw_Bps'])} | {_gbyte(row['busbw_Bps'])} |"
            for row in ar["results"]
        ]
        lines.append("")
    if r.get("files", {}).get("plot"):
        lines += [f"![bus bandwidth and images/s]({os.path.basename(r['files']['plot'])})", ""]
    elif r.get("files", {}).get("plot_reason"):
        lines += [f"No plot: {r['files']['plot_reason']}", ""]
    return "\n".join(lines)


def summary(r: Mapping[str, Any]) -> list[str]:
    """A few lines for the play's output."""
    link, ar, syn = r["link"], r.get("allreduce"), r.get("synthetic")
    lines = [
        "link rate: "
        + (
            f"{_gbit(link['rate_Bps'])} (slowest of {len(link['pairs'])} pairs)"
            if link["rate_Bps"]
            else f"none: {link['reason']}"
        )
    ]
    if ar:
        lines.append(
            f"allreduce: best bus bandwidth {_gbyte(ar['best_busbw_Bps'])}"
            + (f" at {human_bytes(ar['best_busbw_bytes'])}" if ar["best_busbw_bytes"] else "")
            + (f", {ar['busbw_to_link']:.2f} of the link rate" if ar["busbw_to_link"] is not None else "")
            + f" ({ar['np']} processes, {r.get('backend')})"
        )
    if syn:
        lines.append(
            f"synthetic {syn['model']}: "
            + ", ".join(f"{p['img_per_s']:.1f} images/s on {p['np']}" for p in syn["points"])
            + f"; scaling efficiency {_num(syn['scaling_efficiency'])}"
        )
    return lines


def sanity(r: Any, max_busbw_to_link: float = MAX_BUSBW_TO_LINK) -> list[str]:
    """What is wrong with a report's shape or numbers (not their values): [] for a sane report."""
    if not isinstance(r, Mapping):
        return [f"the report is not a mapping but {type(r).__name__}"]
    problems = [f"the report has no {key!r}" for key in REPORT_KEYS if key not in r]
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
    return problems


REPORT_KEYS = ("schema", "name", "created", "np", "hosts", "versions", "link", "allreduce", "synthetic", "files")


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


def is_png(data: bytes) -> bool:
    return data.startswith(PNG_SIGNATURE)
