# Copyright: multinode.horovod contributors
# SPDX-License-Identifier: GPL-3.0-or-later
"""A run's manifest: what made the run what it is, written beside it (``manifest.json`` in the run's
directory) so that two runs can be compared later - the image on every node, Horovod and what its build
has, the frameworks and NCCL, the hosts and slots, the interfaces, the code, the command, the names (never
the values) of the environment, and the settings that define the run. Behind the filters
horovod_launch_manifest, horovod_run_status and horovod_manifest_compare (plugins/filter/horovod_launch.py),
unit-tested in tests/unit/plugins/module_utils/test_horovod_manifest.py.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from ansible_collections.multinode.horovod.plugins.module_utils import worker_reports
from ansible_collections.multinode.horovod.plugins.module_utils.horovod_launch import plain, run_status
from ansible_collections.multinode.horovod.plugins.module_utils.horovod_preflight import check_build, host_probes

VERSION = 1
# Keys that differ between any two runs and say nothing of how they differ.
NOT_COMPARED = ("run", "written")
# A value longer than this is cut in a line of the diff.
SHOWN = 160


def _host(node: Mapping[str, Any], image: str) -> dict[str, Any]:
    probe = node["probe"]
    gpus = probe.get("gpus") or {}
    out: dict[str, Any] = {
        "name": node["name"],
        "address": node["address"],
        "slots": node["slots"],
        "hostname": probe.get("hostname"),
        "interface": node["interface"],
        "image": image,
        "horovod_version": probe.get("horovod_version") or "",
        "packages": dict(sorted((probe.get("packages") or {}).items())),
        "gpus": [d.get("name") for d in gpus.get("devices") or []],
    }
    if out["gpus"]:
        out["driver_cuda"] = gpus.get("driver_cuda") or ""
        out["gpu_frameworks"] = gpus.get("frameworks") or {}
    return out


def manifest(
    run: Mapping[str, Any],
    the_plan: Mapping[str, Any],
    survey: Mapping[str, Any],
    fact: Mapping[str, Any],
    given: Mapping[str, Any],
) -> dict[str, Any]:
    """The manifest of `run` (horovod_launch_run) from its plan, the preflight's probe report (`survey`) and
    result (`fact`, horovod_launch_preflight), and `given`: ``hosts`` (horovod_launch_hosts), ``master`` (its
    inventory name), ``image_ids`` (each other node's image, by name), ``code_version`` and ``written`` (the
    time, ISO 8601)."""
    images = {**(given.get("image_ids") or {}), str(given["master"]): fact["image"]}
    # Every node's part of the survey through the boundary first: its packages go into the manifest.
    survey = worker_reports.survey(survey, given["hosts"], str(given["master"]))
    nodes = host_probes(survey, given["hosts"], str(given["master"]))
    definition = dict(the_plan["definition"])
    if the_plan["code_repo"]:
        code = {"repo": the_plan["code_repo"], "version": str(given["code_version"]), "commit": run["code_commit"]}
    else:
        code = {"workdir": run["workdir"]}
    settings = {k: v for k, v in definition.items() if k not in ("command", "hosts", "np", "env_names")}
    if the_plan.get("launcher") == "torchrun":
        torch = dict((survey.get("local") or {}).get("torch") or {})
        gpus = any(n["probe"].get("gpus", {}).get("devices") for n in nodes)
        launched: dict[str, Any] = {
            "launcher": "torchrun",
            "torch": {k: torch.get(k) for k in ("version", "distributed", "gloo", "nccl")},
            # What the bundled example picks, and what a script that follows torch's docs does.
            "backend": "nccl" if gpus else "gloo",
            "world_size": run["np"],
            "torchrun": [*run["torchrun"]["torchrun"], "--nproc_per_node", "N", "--node_rank", "I"],
        }
    else:
        # The preflight refuses a run whose check-build it cannot read, so this one has it.
        build = check_build((survey.get("check_build") or {}).get("stdout"))
        launched = {
            "horovod_build": {"version": fact["horovod_version"], **{k: v for k, v in build.items() if k != "version"}}
        }
    return plain(
        {
            "manifest": VERSION,
            "run": run["name"],
            "written": str(given["written"]),
            **launched,
            "hosts": [_host(n, str(images.get(n["name"]) or "")) for n in nodes],
            "np": run["np"],
            "hostfile": run["h"] or "",
            "network_interfaces": list(fact.get("network_interfaces") or []),
            "code": code,
            "command": list(run["command"]),
            ("launch" if the_plan.get("launcher") == "torchrun" else "horovodrun"): list(run["argv"]),
            "env_names": sorted(definition.get("env_names") or []),
            "settings": {**settings, "output_dir": run["output_dir"], "timeout": run["timeout"]},
        }
    )


def _package_line(hosts: Sequence[Mapping[str, Any]], key: str, label: str) -> str:
    seen = sorted({str((h.get("packages") or {}).get(key) or "") for h in hosts} - {""})
    return f"{label} {'/'.join(seen)}" if seen else ""


def line(m: Mapping[str, Any] | None) -> str:
    """One line of the manifest `m` for a list of runs ("" without one): Horovod and its controllers, the
    frameworks, NCCL, the image(s), the interfaces and the code."""
    if not m:
        return ""
    hosts = list(m.get("hosts") or [])
    images = [str(h.get("image") or "") for h in hosts]
    known = sorted(set(images) - {""})
    if not known:
        image = "image not read"
    elif len(known) > 1:
        image = f"images {', '.join(i[:19] for i in known)} (they differ)"
    elif all(images):
        image = f"image {known[0][:19]} on every host"
    else:
        image = f"image {known[0][:19]} on {len([i for i in images if i])} of {len(images)} hosts (the others not read)"
    build = m.get("horovod_build") or {}
    if m.get("launcher") == "torchrun":
        torch = m.get("torch") or {}
        launched = (
            f"torchrun (torch {torch.get('version') or '?'}, {m.get('backend') or '?'}, "
            f"world size {m.get('world_size')})"
        )
    else:
        launched = f"Horovod {build.get('version') or '?'} ({', '.join(build.get('controllers') or []) or '?'})"
    parts = [
        launched,
        _package_line(hosts, "torch", "torch") if m.get("launcher") != "torchrun" else "",
        _package_line(hosts, "tensorflow", "TensorFlow"),
        _package_line(hosts, "libnccl", "NCCL"),
        image,
        f"interfaces {','.join(m.get('network_interfaces') or []) or '(one host)'}",
    ]
    code = m.get("code") or {}
    if code.get("repo"):
        parts.append(f"code {code['repo']} at {code.get('version')} ({str(code.get('commit') or '')[:12]})")
    return ", ".join(p for p in parts if p)


def runs_status(runs: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The runs of horovod_run.py's ``status`` as horovod_launch.run_status gives them, each with ``lines``:
    its summary and, when it has a manifest, the manifest's line below it."""
    # Read from the runs' directories on the share, where a worker's root can write: the boundary first.
    out = run_status(worker_reports.run_status(runs))
    for item in out:
        described = line(item.get("manifest"))
        item["lines"] = [item["summary"], *([f"    {described}"] if described else [])]
    return out


def flatten(m: Mapping[str, Any]) -> dict[str, Any]:
    """`m` as ``{dotted key: value}``: mappings are walked, hosts keyed by name (``hosts.NAME.image``),
    other lists kept whole; NOT_COMPARED left out."""
    out: dict[str, Any] = {}

    def walk(prefix: str, value: Any) -> None:
        if isinstance(value, Mapping):
            for key in sorted(value):
                walk(f"{prefix}.{key}" if prefix else str(key), value[key])
        elif prefix == "hosts" and isinstance(value, list) and all(isinstance(h, Mapping) for h in value):
            for host in value:
                walk(f"hosts.{host.get('name')}", {k: v for k, v in host.items() if k != "name"})
        else:
            out[prefix] = value

    walk("", {k: v for k, v in m.items() if k not in NOT_COMPARED})
    return out


MISSING = object()


def _shown(value: Any, start: int = 0) -> str:
    """`value` as JSON, from `start` (with "..." before it), cut at SHOWN characters."""
    text = "(none)" if value is MISSING else json.dumps(value, sort_keys=True)
    head, text = ("...", text[start:]) if start else ("", text)
    return head + (text if len(text) <= SHOWN else text[: SHOWN - 3] + "...")


def _pair(a: Any, b: Any) -> str:
    """``A -> B``; two long values are shown from a little before where they start to differ."""
    left, right = (json.dumps(v, sort_keys=True) if v is not MISSING else "" for v in (a, b))
    same = 0
    while same < min(len(left), len(right)) and left[same] == right[same]:
        same += 1
    start = max(0, same - 40) if min(len(left), len(right)) > SHOWN else 0
    return f"{_shown(a, start)} -> {_shown(b, start)}"


def diff(a: Mapping[str, Any], b: Mapping[str, Any]) -> list[str]:
    """What differs between the manifests `a` and `b`, one line per key (``key: A -> B``), in key order."""
    for name, m in (("first", a), ("second", b)):
        if not isinstance(m, Mapping) or m.get("manifest") != VERSION:
            raise ValueError(f"the {name} run has no manifest of version {VERSION} (a run started before manifests)")
    left, right = flatten(a), flatten(b)
    return [
        f"{key}: {_pair(left.get(key, MISSING), right.get(key, MISSING))}"
        for key in sorted(set(left) | set(right))
        if left.get(key, MISSING) != right.get(key, MISSING)
    ]


def compare_names(names: Any) -> list[str] | None:
    """The two run names of horovod_launch_compare (a list, or one string "A,B"), None when it is not two."""
    if isinstance(names, str):
        wanted = [n.strip() for n in names.split(",")]
    elif isinstance(names, Sequence):
        wanted = [n.strip() if isinstance(n, str) else "" for n in names]
    else:
        return None
    return wanted if len(wanted) == 2 and all(wanted) else None


def compare(runs: Sequence[Mapping[str, Any]], names: Any) -> list[str]:
    """The lines that compare the runs named in `names` (compare_names) among `runs` (horovod_launch_runs): a
    heading, then what differs, or that nothing does."""
    wanted = compare_names(names)
    if wanted is None:
        raise ValueError(f"horovod_launch_compare names two runs (A,B), not {names!r}")
    by_name = {str(r.get("name")): r for r in runs}
    missing = [n for n in wanted if n not in by_name]
    if missing:
        raise ValueError(f"horovod_launch_compare: no run named {', '.join(missing)} (the runs: {', '.join(by_name)})")
    first, second = (by_name[n] for n in wanted)
    try:
        lines = diff(first.get("manifest") or {}, second.get("manifest") or {})
    except ValueError as exc:
        raise ValueError(f"horovod_launch_compare {wanted[0]},{wanted[1]}: {exc}") from None
    heading = f"{wanted[0]} -> {wanted[1]}: " + (f"{len(lines)} difference(s)" if lines else "nothing differs")
    return [heading, *lines]
