# Copyright: multinode.horovod contributors
# SPDX-License-Identifier: GPL-3.0-or-later
"""The launch preflight's judgement: what the probe of every node found (roles/horovod_launch/files/
horovod_probe.py), turned into the problems that stop a run, each naming the host and the fix, and the
preflight's result. Two stages, as a reader would fix them: what must hold before the nodes' reports can be
read at all (Horovod in the image, the controller and frameworks, the ssh wrapper, one host per address,
every node reachable), then what the reports say (the share seen in every container, unique hostnames,
one Horovod, one image, the network interfaces, /dev/shm, GPUs the image's frameworks can use).
"""

from __future__ import annotations

import ipaddress
import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from ansible.module_utils.common.text.formatters import bytes_to_human
from ansible_collections.multinode.horovod.plugins.module_utils import jobs, worker_reports
from ansible_collections.multinode.horovod.plugins.module_utils.horovod_launch import (
    OLDEST_TORCH,
    release,
    release_problems,
)
from ansible_collections.multinode.horovod.plugins.module_utils.values import named

# What the role passes in (tasks/checks.yml); every key is required.
SETTINGS = (
    "container",  # horovod_launch_container
    "ssh_port",  # horovod_launch_ssh_port
    "identity_file",  # horovod_launch_ssh_identity_file
    "controller",  # horovod_launch_controller
    "required_frameworks",  # horovod_launch_required_frameworks
    "network_interfaces",  # horovod_launch_network_interfaces
    "never_auto_nics",  # interfaces automatic detection never picks (lo, docker0)
    "min_shm_size",  # horovod_launch_min_shm_size, as the user wrote it
    "min_shm_bytes",  # the same in bytes
    "idle_patterns",  # horovod_launch_idle_process_patterns
    "share_dir",  # horovod_launch_share_dir
    "master_image",  # the image ID of the master's container
    "plan",  # the run's plan (horovod_launch_plan): np, total_slots, h, other_image_ids
    "ssh_wrapper",  # the ssh wrapper that pins host keys, as the master's container sees it
    "nccl_net_check",  # horovod_launch_nccl_net_check
    "launcher",  # horovod_launch_launcher: horovodrun or torchrun
)
# Optional: "names", {role variable (or field): the site setting it came from} (values.named), so that a
# message names what the user set (horovod_node_address) where the site mapped it.
CHECK_SECTIONS = {
    "available frameworks": "frameworks",
    "available controllers": "controllers",
    "available tensor operations": "tensor_operations",
}
CHECK_LINE_RE = re.compile(r"^\s*\[(?P<mark>[ Xx])\]\s*(?P<name>\S.*?)\s*$")
VERSION_RE = re.compile(r"Horovod v?(?P<version>[0-9][0-9A-Za-z.+-]*)")
JOBS_SHOWN = 600


def _address(settings: Mapping[str, Any]) -> str:
    """How a message names where a host's address comes from."""
    return named(settings.get("names"), "horovod_launch_hosts.address")


def check_build(output: object) -> dict[str, Any]:
    """What ``horovodrun --check-build`` printed: the version and, per section, the lower-cased names
    marked ``[X]``."""
    text = "" if output is None else str(output)
    result: dict[str, Any] = {"version": "", "frameworks": [], "controllers": [], "tensor_operations": []}
    version = VERSION_RE.search(text)
    if version:
        result["version"] = version.group("version").rstrip(":")
    section: str | None = None
    for line in text.splitlines():
        heading = line.strip().rstrip(":").lower()
        if heading in CHECK_SECTIONS:
            section = CHECK_SECTIONS[heading]
            continue
        match = CHECK_LINE_RE.match(line)
        if section and match and match.group("mark") in "Xx":
            result[section].append(match.group("name").lower())
    if not result["version"] and not any(result[s] for s in CHECK_SECTIONS.values()):
        raise ValueError(
            "this is not the output of 'horovodrun --check-build' (no version, no [X] lines): " + text[:200]
        )
    return result


def truncate(text: str, limit: int) -> str:
    """`text` cut at a word to at most `limit` characters, with "..." (as Jinja's truncate does)."""
    if len(text) <= limit + 5:
        return text
    return text[: limit - 3].rsplit(" ", 1)[0] + "..."


def _text(value: Any, limit: int) -> str:
    text = " ".join(str(value or "").split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _torch_problems(node: str, container: str, torch: Mapping[str, Any] | None, gpus: bool) -> list[str]:
    """What a torchrun run cannot do with the torch in `node`'s container (the probe's ``--torch`` answer):
    no torch, one older than OLDEST_TORCH, no torch.distributed or Gloo, no torchrun, no NCCL beside GPUs."""
    where = f"{node} (the container '{container}')"
    fix = "Use an image with PyTorch for the launcher (docker_horovod_image), or horovod_launch_launcher: horovodrun."
    if not torch:
        return [f"{where}: the probe read nothing of torch. {fix}"]
    if torch.get("error"):
        return [f"{where}: torch cannot be imported: {_text(torch['error'], 300)}. {fix}"]
    found = release(torch.get("version"))
    oldest = ".".join(map(str, OLDEST_TORCH))
    if found is None or found < OLDEST_TORCH:
        return [f"{where}: torch {torch.get('version')!s} is older than {oldest}, the oldest with torchrun. {fix}"]
    missing = [
        what
        for what, ok in (
            ("torch.distributed", torch.get("distributed")),
            ("the Gloo backend", torch.get("gloo")),
            ("the NCCL backend (the container sees GPUs)", torch.get("nccl") or not gpus),
            ("the torchrun command", torch.get("torchrun")),
        )
        if not ok
    ]
    if missing:
        return [f"{where}: torch {torch.get('version')} lacks {', '.join(missing)}. {fix}"]
    return []


def _first_stage(report: Mapping[str, Any], me: str, s: Mapping[str, Any]) -> list[str]:
    """What must hold before the other nodes' reports can be read."""
    if s["launcher"] == "torchrun":
        local = report.get("local") or {}
        gpus = bool((local.get("gpus") or {}).get("devices"))
        problems = _torch_problems(me, s["container"], local.get("torch"), gpus)
        return problems + _ssh_and_addresses(report, me, s) + _unreachable(report, me, s)
    problems = []
    build_run = report.get("check_build") or {}
    if build_run.get("rc") != 0:
        output = f"{build_run.get('stderr') or ''} {build_run.get('stdout') or ''}"
        return [
            f"{me}: 'horovodrun --check-build' failed in the container '{s['container']}' "
            f"(rc {build_run.get('rc')}): {_text(output, 400)}. The container must run a Horovod image; set "
            "docker_horovod_image (or docker_horovod_image_archive) to one and run multinode.horovod.docker_horovod "
            "again."
        ]
    build = check_build(build_run.get("stdout"))
    missing = [f for f in s["required_frameworks"] if f not in build["frameworks"]]
    if s["controller"] not in build["controllers"] or missing:
        problems.append(
            f"{me}: Horovod {build['version']} in the container '{s['container']}' has the controllers "
            f"{json.dumps(build['controllers'])} and the frameworks {json.dumps(build['frameworks'])}, but "
            f"horovod_launch_controller is {s['controller']} and horovod_launch_required_frameworks is "
            f"{json.dumps(list(s['required_frameworks']))}. Choose from what the image has, or use an image built "
            "with them (docker_horovod_image)."
        )
    # horovodrun's command line is built for the release it reports (horovod_launch.horovodrun_argv).
    problems += release_problems(
        build["version"],
        s["plan"]["elastic"],
        s["network_interfaces"],
        f"{me} (the container '{s['container']}')",
        s["controller"],
    )
    return problems + _ssh_and_addresses(report, me, s) + _unreachable(report, me, s)


def _ssh_and_addresses(report: Mapping[str, Any], me: str, s: Mapping[str, Any]) -> list[str]:
    """The ssh the launcher runs pins host keys; each host of the run has an address of its own."""
    problems = []
    launcher = "horovodrun" if s["launcher"] == "horovodrun" else "the torchrun launcher"
    found = report.get("ssh", "")
    if found != s["ssh_wrapper"]:
        problems.append(
            f"{me}: {launcher} in the container '{s['container']}' would run {found or 'no ssh'} instead of the "
            f"ssh wrapper {s['ssh_wrapper']}, which forces host key checking against the pinned known_hosts "
            "(horovodrun turns it off on its command line). Run multinode.horovod.ssh_trust for the cluster "
            "(site.yml --tags ssh), which writes it into the host directory the container mounts."
        )
    local_names = report.get("local_names") or []
    if len(local_names) > 1:
        problems.append(
            f"{me}: the addresses of {', '.join(local_names)} all lead to this host, so {launcher} would start "
            f"all their processes here. Give each host in horovod_launch_hosts its own address ({_address(s)})."
        )
    return problems


def _unreachable(report: Mapping[str, Any], me: str, s: Mapping[str, Any]) -> list[str]:
    """The hosts whose probe over ssh failed, each with the likely fix."""
    problems = []
    for remote in report.get("remotes") or []:
        if remote.get("rc") == 0:
            continue
        stderr = remote.get("stderr") or ""
        where = f"{remote.get('name')} ({remote.get('address')}):"
        if remote.get("rc") == 255:
            if "Host key verification failed" in stderr:
                fix = (
                    "Its host key is not pinned (or differs) in the master container's known_hosts: run "
                    "multinode.horovod.ssh_trust for the cluster."
                )
            elif "Permission denied" in stderr:
                fix = "The master's key is not authorised there: run multinode.horovod.ssh_trust for the cluster."
            else:
                fix = (
                    f"Check that its container runs sshd on port {s['ssh_port']} (docker_horovod, container_sshd) "
                    f"and that {remote.get('address')} is reachable from {me}."
                )
            problems.append(
                f"{where} ssh from the container '{s['container']}' on {me} to port {s['ssh_port']} with "
                f"{s['identity_file']} failed: {_text(stderr, 300)}. {fix}"
            )
        else:
            problems.append(
                f"{where} the probe failed in its container (rc {remote.get('rc')}): {_text(stderr, 300)}. The "
                "container needs python3 (a Horovod image; run multinode.horovod.docker_horovod)."
            )
    return problems


def host_probes(report: Mapping[str, Any], hosts: Sequence[Mapping[str, Any]], me: str) -> list[dict[str, Any]]:
    """Each host with what its probe found: name, address, slots, probe, interface and ip of its address."""
    remotes = {r.get("name"): r for r in report.get("remotes") or []}
    nodes = []
    for host in hosts:
        remote = remotes.get(host["name"])
        try:
            probe = json.loads(remote["stdout"]) if remote is not None else report["local"]
        except (KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"no probe report for {host['name']}: {exc}") from exc
        own = (probe.get("addresses") or {}).get(host["address"]) or {}
        nodes.append(
            {
                "name": host["name"],
                "address": host["address"],
                "slots": int(host.get("slots") or 1),
                "probe": probe,
                "interface": own.get("interface"),
                "ip": own.get("ip"),
            }
        )
    return nodes


def _share_problem(node: Mapping[str, Any], share_dir: str) -> str | None:
    probe = node["probe"]
    if probe.get("missing_paths"):
        return (
            f"{node['name']}: the share {share_dir} is missing in its container. Mount the share on that host "
            "(nfs_client, or the existing shared filesystem) and recreate the container with it (docker_horovod)."
        )
    unread = [(path, state) for path, state in (probe.get("markers") or {}).items() if state != "ok"]
    if not unread:
        return None
    path, state = unread[0]
    where = path.rsplit("/", 1)[0] or "/"
    return (
        f"{node['name']}: its container does not see the master's share at {where}: the marker the master's "
        f"container wrote there is {state} in it, so the directory there is another one (an empty mount point). "
        f"Mount the share on that host (findmnt {where}) and, if the container still does not see it, recreate "
        "the container (docker_horovod)."
    )


def _hostnames(nodes: list[dict[str, Any]], _unused: str, s: Mapping[str, Any]) -> list[str]:
    problems = []
    for node in nodes:
        hostname = node["probe"].get("hostname")
        same = [n["name"] for n in nodes if n["name"] != node["name"] and n["probe"].get("hostname") == hostname]
        if same:
            problems.append(
                f"{node['name']} and {', '.join(same)} all have the hostname '{hostname}' in their containers; "
                "Horovod and MPI tell hosts apart by hostname. Give each host its own hostname (hostnamectl "
                "set-hostname) and recreate its container (docker_horovod)."
            )
    return problems


def _versions(nodes: list[dict[str, Any]], me: str, s: Mapping[str, Any]) -> list[str]:
    if s["launcher"] == "torchrun":
        return _torch_versions(nodes, me, s)
    mine = s["local_version"]
    return [
        f"{node['name']} runs Horovod '{node['probe'].get('horovod_version')}' but {me} runs '{mine}'; every "
        "node must run the same image. Run multinode.horovod.docker_horovod on the cluster with one "
        "docker_horovod_image."
        for node in nodes
        if node["probe"].get("horovod_version") != mine
    ]


def _torch_versions(nodes: list[dict[str, Any]], me: str, s: Mapping[str, Any]) -> list[str]:
    """A torchrun run: torch usable on every node, and the same release on every node."""
    problems = [
        problem
        for node in nodes
        for problem in _torch_problems(
            node["name"], s["container"], node["probe"].get("torch"), bool(_gpu_devices(node))
        )
    ]
    mine = s["local_torch"]
    return problems + [
        f"{node['name']} runs torch '{(node['probe'].get('torch') or {}).get('version')}' but {me} runs '{mine}'; "
        "every node must run the same image. Run multinode.horovod.docker_horovod on the cluster with one "
        "docker_horovod_image."
        for node in nodes
        if not problems and (node["probe"].get("torch") or {}).get("version") != mine
    ]


def _images(_unused: list[dict[str, Any]], me: str, s: Mapping[str, Any]) -> list[str]:
    differs = [
        f"{name} runs {image}"
        for name, image in sorted(s["plan"]["other_image_ids"].items())
        if image != s["master_image"]
    ]
    if not differs:
        return []
    return [
        f"Not every container runs the image of {me}'s container ({s['master_image']}): {'; '.join(differs)}. "
        "Every rank must run the same code: run the site's container play (site.yml --tags container) so that "
        "docker_horovod gives every node one image, or recreate the containers of those hosts from it."
    ]


def _named_interfaces(nodes: list[dict[str, Any]], _unused: str, s: Mapping[str, Any]) -> list[str]:
    problems = []
    for node in nodes:
        have = sorted((node["probe"].get("interfaces") or {}).keys())
        absent = [nic for nic in s["network_interfaces"] if nic not in have]
        if absent:
            problems.append(
                f"{node['name']}: {', '.join(absent)} from horovod_launch_network_interfaces does not exist in its "
                f"container (it has {', '.join(have)}). List interfaces every host has, or leave "
                "horovod_launch_network_interfaces empty to use the one that holds each host's address."
            )
    return problems


def _found_interfaces(nodes: list[dict[str, Any]], _unused: str, s: Mapping[str, Any]) -> list[str]:
    """With no interface named: each host's address on a usable interface, one name on every host."""
    if not s["auto_nics"]:
        return []
    problems = []
    for node in nodes:
        if node["interface"] is None:
            how = f"resolves there to {node['ip'] or 'nothing'}, which no interface of its container holds"
        elif node["interface"] in s["never_auto_nics"]:
            how = f"is on {node['interface']}, which is never chosen automatically"
        else:
            continue
        problems.append(
            f"{node['name']}: its address {node['address']} {how}. Set its address ({_address(s)}) to "
            "one the other hosts reach it by, or name the interfaces in horovod_launch_network_interfaces."
        )
    if len({n["interface"] for n in nodes}) > 1:
        named = ", ".join(f"{n['name']}: {n['interface']}" for n in nodes)
        problems.append(
            f"The hosts' addresses are on interfaces with different names ({named}); Horovod uses one "
            "interface name on every host. Name the interfaces in horovod_launch_network_interfaces (each "
            "must exist everywhere) or rename them."
        )
    return problems


def _shm(nodes: list[dict[str, Any]], _unused: str, s: Mapping[str, Any]) -> list[str]:
    return [
        f"{node['name']}: /dev/shm in its container is {bytes_to_human(int(node['probe'].get('shm_bytes') or 0))}, "
        f"less than horovod_launch_min_shm_size ({s['min_shm_size']}). Recreate the container with a larger "
        "shared memory (docker_horovod_shm_size) or lower horovod_launch_min_shm_size."
        for node in nodes
        if int(node["probe"].get("shm_bytes") or 0) < int(s["min_shm_bytes"])
    ]


def _tcp(nodes: list[dict[str, Any]], _unused: str, s: Mapping[str, Any]) -> list[str]:
    """Every host reaches every other's container on an ephemeral port (the probe's TCP matrix): Gloo's
    rendezvous and every pair of ranks, and NCCL's sockets, connect on such ports, which ssh working does
    not prove."""
    tcp = s.get("tcp") or {}
    problems = [
        f"{name}: the TCP check could not run there ({error})."
        for name, error in sorted((tcp.get("errors") or {}).items())
    ]
    failed: dict[str, list[str]] = {}
    for source, row in (tcp.get("from") or {}).items():
        for target, state in row.items():
            if state != "ok":
                failed.setdefault(target, []).append(f"{source} ({state})")
    by_name = {n["name"]: n for n in nodes}
    for target, sources in failed.items():
        node = by_name.get(target, {"probe": {}})
        ports = node["probe"].get("port_range") or []
        span = f"{ports[0]}-{ports[1]}" if len(ports) == 2 else "the kernel's ephemeral range"
        problems.append(
            f"{target}: its container accepts no TCP connection on an ephemeral port "
            f"({(tcp.get('ports') or {}).get(target)}) from {', '.join(sources)}, although ssh reaches it. Gloo's "
            f"rendezvous and NCCL's sockets connect between every pair of hosts on such ports ({span} there), "
            "so the run would hang until horovodrun's start timeout. A firewall on that host or between the "
            f"hosts lets only ssh through: allow TCP from the cluster's addresses on {target} (for example "
            "iptables -I INPUT -s ADDRESS -p tcp -j ACCEPT for each other host)."
        )
    return problems


def route_interface(routes: Sequence[Mapping[str, Any]], ip: str) -> str | None:
    """The interface of the most specific IPv4 route to `ip` in `routes` (the probe's), None without one."""
    try:
        target = int(ipaddress.IPv4Address(ip))
    except ValueError:
        return None
    best: tuple[int, str] | None = None
    for route in routes:
        try:
            network = ipaddress.IPv4Network(f"{route['destination']}/{route['prefix']}", strict=False)
        except (KeyError, ValueError):
            continue
        if int(network.network_address) == target & int(network.netmask) and (
            best is None or network.prefixlen > best[0]
        ):
            best = (network.prefixlen, str(route["interface"]))
    return best[1] if best else None


def _routes(nodes: list[dict[str, Any]], _unused: str, s: Mapping[str, Any]) -> list[str]:
    """From every host, the route to every other host's address leaves through the interface Horovod uses
    there; otherwise the ranks' connections leave from another interface (or nowhere) and hang."""
    problems = []
    for node in nodes:
        table = node["probe"].get("routes") or []
        used = list(s["network_interfaces"]) or ([node["interface"]] if node["interface"] else [])
        if not table or not used:
            continue
        for other in nodes:
            if other is node or not other["ip"]:
                continue
            leaves = route_interface(table, other["ip"])
            if leaves is None:
                problems.append(
                    f"{node['name']}: its container has no route to {other['name']} ({other['ip']}). Add one, or "
                    f"set the hosts' addresses ({_address(s)}) to ones on a network they share."
                )
            elif leaves not in used and leaves != "lo":
                problems.append(
                    f"{node['name']}: its route to {other['name']} ({other['ip']}) leaves through {leaves}, not "
                    f"{', '.join(used)} (the interface Horovod uses there), so the ranks' connections would not "
                    "go where Horovod expects. Name the interface that carries the route in "
                    "horovod_launch_network_interfaces, or fix the routes."
                )
    return problems


ARCH_RE = re.compile(r"^(?:(?P<kind>sm|compute)_)?(?P<major>[0-9]+?)\.?(?P<minor>[0-9])$")
DOCS_IMAGES = "docs/images.md of multinode.horovod"


def compute_capability(text: object) -> tuple[int, int] | None:
    """(major, minor) of a compute capability as nvidia-smi ("9.0") or a build ("sm_90") writes it."""
    match = ARCH_RE.match(str(text or "").strip())
    return (int(match.group("major")), int(match.group("minor"))) if match else None


def runs_on(capability: tuple[int, int], arch_list: Sequence[str]) -> bool:
    """Whether code built for `arch_list` runs on a GPU of `capability`: a cubin (sm_XY) runs on GPUs of
    its major version from its minor up; PTX (compute_XY) is compiled by the driver for any GPU from XY
    on."""
    for arch in arch_list:
        built = compute_capability(arch)
        if built is None:
            continue
        ptx = str(arch).startswith("compute_")
        if (ptx and built <= capability) or (built[0] == capability[0] and built[1] <= capability[1]):
            return True
    return False


def _cuda(text: object) -> tuple[int, int] | None:
    match = re.match(r"^([0-9]+)\.([0-9]+)", str(text or ""))
    return (int(match.group(1)), int(match.group(2))) if match else None


def driver_runs(driver: tuple[int, int], runtime: tuple[int, int]) -> bool:
    """Whether a driver supporting CUDA `driver` runs a CUDA `runtime`: from CUDA 11 on, any driver of the
    same major release does (minor version compatibility); before it, the driver must be as new."""
    if runtime[0] >= 11:
        return driver[0] >= runtime[0]
    return driver >= runtime


def _gpu_devices(node: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The GPUs a node's container sees, as its probe listed them (none from a CPU host)."""
    return (node["probe"].get("gpus") or {}).get("devices") or []


def _gpu_problems(node: Mapping[str, Any], s: Mapping[str, Any]) -> list[str]:
    read = node["probe"].get("gpus") or {}
    devices = _gpu_devices(node)
    if not devices:
        return []
    name, image = node["name"], s["master_image"]
    fix = (
        f"Use an image built for these GPUs (docker_horovod_image; {DOCS_IMAGES} says which run where, with a "
        "recipe for Hopper-class GPUs)"
    )
    problems = []
    if int(node["slots"]) > len(devices):
        problems.append(
            f"{name}: its container sees {len(devices)} GPU(s) but the host has {node['slots']} slots; every rank "
            f"needs a GPU of its own. Set {named(s.get('names'), 'horovod_launch_hosts.slots')} for {name} to "
            f"{len(devices)} or fewer, or give its "
            "container the GPUs (docker_horovod recreates it with every GPU the driver lists)."
        )
    driver = _cuda(read.get("driver_cuda"))
    for framework, built in sorted((read.get("frameworks") or {}).items()):
        if framework not in s["required_frameworks"]:
            continue
        what = f"{framework} {built.get('version', '')}".strip()
        if built.get("error"):
            problems.append(
                f"{name}: reading which GPUs {framework} in its container was built for failed: "
                f"{_text(built['error'], 300)}. Check that the image {image} runs {framework} (python3 -c "
                f"'import {'torch' if framework == 'pytorch' else framework}' in the container)."
            )
            continue
        runtime = _cuda(built.get("cuda"))
        if runtime is None:
            problems.append(
                f"{name}: its container sees {len(devices)} GPU(s) but {what} in the image {image} is built "
                f"without CUDA, so the run would not use them. {fix}."
            )
            continue
        if driver is not None and not driver_runs(driver, runtime):
            problems.append(
                f"{name}: {what} in the image {image} needs CUDA {built['cuda']}, but the NVIDIA driver there "
                f"supports CUDA {read.get('driver_cuda')} at most. Install a newer driver on {name}, or use an "
                f"image built for CUDA {read.get('driver_cuda')} or older (docker_horovod_image)."
            )
            continue
        arch_list = built.get("arch_list") or []
        if not arch_list or not int(built.get("device_count") or 0):
            problems.append(
                f"{name}: its container sees {len(devices)} GPU(s) but {what} (CUDA {built['cuda']}) in the image "
                f"{image} cannot use any (no GPU available to it; NVIDIA driver: CUDA "
                f"{read.get('driver_cuda') or 'unknown'}). Check the driver and the container's GPU runtime "
                "(docker_horovod), or use an image built for this driver."
            )
            continue
        for device in devices:
            capability = compute_capability(device.get("compute_cap"))
            if capability is not None and not runs_on(capability, arch_list):
                problems.append(
                    f"{name}: GPU {device.get('index')} ({device.get('name')}, compute capability "
                    f"{device.get('compute_cap')}) cannot run {what} (CUDA {built['cuda']}) in the image {image}, "
                    f"which is built for {', '.join(map(str, arch_list))}; the run would stop with 'no kernel "
                    f"image is available for execution on the device'. {fix}."
                )
    return problems


def _gpu_summary(node: Mapping[str, Any]) -> str:
    read = node["probe"]["gpus"]
    kinds: dict[str, int] = {}
    for device in _gpu_devices(node):
        kind = f"{device.get('name')} ({device.get('compute_cap') or '?'})"
        kinds[kind] = kinds.get(kind, 0) + 1
    return (
        f"{node['name']}: "
        + ", ".join(f"{count} x {kind}" for kind, count in kinds.items())
        + (f", driver CUDA {read['driver_cuda']}" if read.get("driver_cuda") else "")
    )


def _gpus(nodes: list[dict[str, Any]], _unused: str, s: Mapping[str, Any]) -> list[str]:
    """Where a container sees GPUs: a GPU per slot, and the image's frameworks built for the driver's CUDA
    and for every GPU's compute capability."""
    return [problem for node in nodes for problem in _gpu_problems(node, s)]


def _rdma(node: Mapping[str, Any]) -> bool:
    """Whether a node's container sees an RDMA device NCCL can open (a uverbs device in /dev/infiniband)."""
    return any(str(name).startswith("uverbs") for name in node["probe"].get("rdma") or [])


def nccl_net_check(nodes: Sequence[Mapping[str, Any]], s: Mapping[str, Any], frameworks: Sequence[str]) -> bool:
    """Whether the preflight runs the NCCL check: asked for, on two hosts or more whose containers all see
    GPUs and RDMA devices, with PyTorch (the check's allreduce: Horovod's, or torch.distributed's for a
    torchrun run) in the image."""
    return (
        bool(s["nccl_net_check"])
        and len(nodes) > 1
        and all(_gpu_devices(n) and _rdma(n) for n in nodes)
        and "pytorch" in frameworks
    )


def _rdma_mixed(nodes: list[dict[str, Any]], _unused: str, s: Mapping[str, Any]) -> list[str]:
    """GPU hosts of which some containers see RDMA devices and some do not: NCCL then uses sockets between
    all of them, at a fraction of the speed the others could reach."""
    gpu_nodes = [n for n in nodes if _gpu_devices(n)]
    with_rdma = [n["name"] for n in gpu_nodes if _rdma(n)]
    if not s["nccl_net_check"] or not with_rdma or len(with_rdma) == len(gpu_nodes):
        return []
    return [
        f"{n['name']}: its container sees no RDMA device (/dev/infiniband) while those of {', '.join(with_rdma)} do: "
        "NCCL would use TCP sockets between all the hosts. Load the RDMA drivers on "
        f"{n['name']} and run docker_horovod again (docker_horovod_rdma: auto passes /dev/infiniband where the host "
        "has it), or set horovod_launch_nccl_net_check: false to run over sockets knowingly."
        for n in gpu_nodes
        if not _rdma(n)
    ]


def _shares(nodes: list[dict[str, Any]], _unused: str, s: Mapping[str, Any]) -> list[str]:
    return [p for p in (_share_problem(node, s["share_dir"]) for node in nodes) if p]


OUTPUT_WHAT = {
    "output_dir": "the run's output directory (horovod_launch_output_dir)",
    "workdir": "the run's working directory, where the command writes its checkpoints and logs unless it is given "
    "horovod_launch_output_dir",
    "example": "the bundled example writes its output below it",
}


def _output(nodes: list[dict[str, Any]], _unused: str, s: Mapping[str, Any]) -> list[str]:
    """Where the run writes, writable in the container of every host that may hold rank 0 (its checkpoints
    and logs are written there), before the run starts rather than when rank 0 saves its first epoch."""
    check = s["plan"]["output_check"]
    path = check["path"]
    if check["elastic"]:
        who = "Rank 0 of an elastic run may run on any of its hosts"
        fix = (
            f"Set horovod_launch_output_dir to a directory on the share ({s['share_dir']}), which every host mounts "
            "read-write, and have the command write there (it reads HOROVOD_LAUNCH_OUTPUT_DIR)"
        )
    else:
        who = "Rank 0 runs there (the first host of horovod_launch_hosts)"
        fix = (
            "Put the master first in horovod_launch_hosts (the artifact directory is read-only on the workers), "
            f"or set horovod_launch_output_dir to a directory on the share ({s['share_dir']}) and have the "
            "command write there (it reads HOROVOD_LAUNCH_OUTPUT_DIR)"
        )
    problems = []
    for node in nodes:
        if node["name"] not in check["hosts"]:
            continue
        state = (node["probe"].get("writable") or {}).get(path, "not read by the probe")
        if state != "ok":
            problems.append(
                f"{node['name']} ({node['address']}): its container cannot write {path}, {OUTPUT_WHAT[check['kind']]}: "
                f"{state}. {who}. {fix}."
            )
    return problems


# What the nodes' reports say, in the order a reader would fix it.
SECOND_STAGE = (
    _shares,
    _hostnames,
    _versions,
    _images,
    _named_interfaces,
    _found_interfaces,
    _routes,
    _tcp,
    _shm,
    _gpus,
    _rdma_mixed,
    _output,
)
# The doctor's order: what most often makes a run hang or time out at its start comes first.
DOCTOR_ORDER = (_tcp, _found_interfaces, _named_interfaces, _routes, _hostnames, _shm, _versions, _images)


def _rule_settings(
    report: Mapping[str, Any], hosts: Sequence[Mapping[str, Any]], settings: Mapping[str, Any]
) -> dict[str, Any]:
    """What the second stage's rules read besides the nodes: the settings, and what the report says of all."""
    # With no other host, horovodrun opens no connection, so there is no interface to choose.
    auto_nics = not settings["network_interfaces"] and len(report.get("local_names") or []) < len(hosts)
    local_version = report["local"].get("horovod_version")
    local_torch = (report["local"].get("torch") or {}).get("version")
    return {
        **settings,
        "auto_nics": auto_nics,
        "local_version": local_version,
        "local_torch": local_torch,
        "tcp": report.get("tcp"),
    }


def _jobs(node: Mapping[str, Any], settings: Mapping[str, Any]) -> list[str]:
    """The jobs running in a node's container (plugins/module_utils/jobs.py), as the preflight lists them."""
    try:
        return jobs.jobs(node["probe"].get("processes") or [], settings["idle_patterns"])
    except jobs.PatternError as exc:
        raise ValueError(str(exc)) from exc


def _run_nics(nodes: Sequence[Mapping[str, Any]], rules: Mapping[str, Any]) -> list[str]:
    """The interfaces horovodrun gets: the named ones, else those the hosts' addresses are on (none for one
    host)."""
    if rules["network_interfaces"]:
        return [str(nic) for nic in rules["network_interfaces"]]
    return list(dict.fromkeys(str(n["interface"]) for n in nodes)) if rules["auto_nics"] else []


def preflight(
    report: Mapping[str, Any], hosts: Sequence[Mapping[str, Any]], me: str, settings: Mapping[str, Any]
) -> dict[str, Any]:
    """``{problems, fact, lines, busy, jobs}``: ``problems`` is empty when the run can start; ``fact`` is
    horovod_launch_preflight (``hosts``: each host's name, address, slots, hostname, interface, GPUs and running
    jobs), ``lines`` its summary, ``busy`` the hosts where a job runs and ``jobs`` those jobs in one line."""
    missing = [key for key in SETTINGS if key not in settings]
    if missing:
        raise ValueError(f"settings lack {', '.join(missing)}")
    if not isinstance(report, Mapping) or "local" not in report:
        raise ValueError("expects the report of files/horovod_probe.py")
    # Every node's answer through the boundary first: nothing a worker reported is judged unchecked.
    report = worker_reports.survey(report, hosts, me)
    plan = settings["plan"]
    fact: dict[str, Any] = {
        "launcher": settings["launcher"],
        "horovod_version": "",
        "torch_version": "",
        "controller": settings["controller"],
        "np": int(plan["np"]),
        "slots": int(plan["total_slots"]),
        "h": plan["h"],
        "network_interfaces": [],
        "hosts": [],
        "launchers": [],
        "image": settings["master_image"],
        "images_compared": len(plan["other_image_ids"]),
        "nccl_net_check": False,
    }
    result: dict[str, Any] = {
        "problems": _first_stage(report, me, settings),
        "fact": fact,
        "lines": [],
        "busy": [],
        "jobs": "",
    }
    if result["problems"]:
        return result
    nodes = host_probes(report, hosts, me)
    rules = _rule_settings(report, hosts, settings)
    local = report["local"]
    result["problems"] = [problem for rule in SECOND_STAGE for problem in rule(nodes, me, rules)]
    # horovodrun's own report: the release its command line is built for.
    torchrun = settings["launcher"] == "torchrun"
    if torchrun:
        fact["torch_version"] = str((local.get("torch") or {}).get("version") or "")
        # The NCCL check of a torchrun run is torch.distributed's allreduce (torch is checked above).
        wanted = nccl_net_check(nodes, settings, ["pytorch"])
    else:
        built = check_build((report.get("check_build") or {}).get("stdout"))
        fact["horovod_version"] = built["version"]
        wanted = nccl_net_check(nodes, settings, built["frameworks"])
    fact["launchers"] = local.get("launchers") or []
    fact["network_interfaces"] = _run_nics(nodes, rules)
    fact["hosts"] = [
        {
            "name": n["name"],
            "address": n["address"],
            "slots": n["slots"],
            "hostname": n["probe"].get("hostname"),
            "interface": n["interface"],
            "gpus": len(_gpu_devices(n)),
            "jobs": _jobs(n, settings),
        }
        for n in nodes
    ]
    busy = [h for h in fact["hosts"] if h["jobs"]]
    result["busy"] = [h["name"] for h in busy]
    # Not beside a job on the GPUs (a re-run while the run trains): the check could take their memory.
    fact["nccl_net_check"] = wanted and not busy
    result["jobs"] = truncate(" | ".join(f"{h['name']}: {'; '.join(h['jobs'])}" for h in busy), JOBS_SHOWN)
    compared = fact["images_compared"]
    result["lines"] = [
        (
            f"torchrun (torch {fact['torch_version']}), {fact['np']} processes of {fact['slots']} slots: {fact['h']}"
            if torchrun
            else f"Horovod {fact['horovod_version']} ({fact['controller']}), np {fact['np']} of {fact['slots']} "
            f"slots, -H {fact['h']}"
        ),
        f"image: {fact['image']} ("
        + (f"the same in the {compared} other containers compared" if compared else "no other container compared")
        + ")",
        f"network interfaces: {','.join(map(str, fact['network_interfaces'])) or '(none needed, one host)'}",
        "hostnames: " + ", ".join(f"{h['name']} = {h['hostname']}" for h in fact["hosts"]),
        f"running jobs: {result['jobs'] or 'none'}",
    ]
    gpu_hosts = [n for n in nodes if _gpu_devices(n)]
    if gpu_hosts:
        result["lines"].append("GPUs: " + "; ".join(_gpu_summary(n) for n in gpu_hosts))
        rdma = [n["name"] for n in gpu_hosts if _rdma(n)]
        result["lines"].append(
            (f"RDMA devices in the containers of {', '.join(rdma)}" if rdma else "RDMA: no container has any")
            + ("; NCCL's network is checked before the run" if fact["nccl_net_check"] else "")
            + ("; NCCL's network is not checked while a job runs" if wanted and busy else "")
        )
    return result


def doctor(
    report: Mapping[str, Any], hosts: Sequence[Mapping[str, Any]], me: str, settings: Mapping[str, Any]
) -> dict[str, Any]:
    """What makes a run hang or fail to start, from the probe's report with its TCP matrix: ``causes``, the
    most likely first (the preflight's own rules, in DOCTOR_ORDER; an unreachable host before all), and
    ``lines`` to show."""
    report = worker_reports.survey(report, hosts, me)
    first = _unreachable(report, me, settings)
    nodes = host_probes(report, hosts, me) if not first else []
    rules = _rule_settings(report, hosts, settings)
    causes = first + [problem for rule in DOCTOR_ORDER for problem in rule(nodes, me, rules)] if nodes else first
    checked = (
        "checked: ssh from the master's container to every host, TCP on an ephemeral port between every pair of "
        "hosts, the interfaces and the routes between the hosts, unique hostnames, /dev/shm, Horovod and the image"
    )
    if causes:
        lines = [f"Most likely cause: {causes[0]}", *(f"Also: {c}" for c in causes[1:]), checked]
    else:
        lines = ["No cause found on the hosts.", checked]
    # On GPU hosts NCCL's own log tells what the hosts cannot: the doctor runs the NCCL check between them,
    # but not beside a job (a run that hangs holds the GPUs' memory, which the check would need).
    nccl: dict[str, Any] = {}
    if nodes and len(nodes) > 1 and all(_gpu_devices(n) for n in nodes):
        try:
            built = check_build((report.get("check_build") or {}).get("stdout"))
        except ValueError:  # no Horovod to run it with: the preflight names that
            built = {"version": "", "frameworks": []}
        busy = [n["name"] for n in nodes if _jobs(n, settings)]
        if busy:
            lines.append(
                f"NCCL between the GPU hosts: not asked while a job runs on {', '.join(busy)} (the check would "
                "share its GPUs); its ranks' NCCL lines need NCCL_DEBUG: INFO in horovod_launch_env."
            )
        elif settings["launcher"] == "torchrun" or "pytorch" in built["frameworks"]:
            nccl = {"horovod_version": built["version"], "network_interfaces": _run_nics(nodes, rules)}
    return {"causes": causes, "lines": lines, "nccl": nccl}
