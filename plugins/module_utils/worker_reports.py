# Copyright: multinode.horovod contributors
# SPDX-License-Identifier: GPL-3.0-or-later
"""The one trust boundary for what the nodes report (docs/architecture.md, "One trust boundary").

Root on a worker controls everything that worker reports: its module results (Ansible runs the module
with the worker's python), the probe's answer over ssh (it can replace python3 in its container), its
rows of the ssh and TCP matrices, what its processes print. A value of such a report that a task, a
template, a file or a command line of the master or the controller uses (an interface name that ends up
in horovodrun's shell command, a host key that goes into every node's known_hosts) is checked here, once
per kind of report, against a strict schema, before anything uses it. A report that fails raises
ReportError, naming the node and the field; the filters that consume reports call these validators first,
so the play stops before anything on another node changes. This is OpenSSH's privilege separation in
small: the monitor validates every message of the unprivileged child, in one place.

Validators (each returns the report as it may be used, or raises ReportError):

- ``probe_answer``: one node's answer of roles/horovod_launch/files/horovod_probe.py;
- ``survey``: the master's survey (its own answer, every other node's, the TCP matrix), which the
  preflight and the doctor judge (horovod_preflight.preflight, horovod_preflight.doctor);
- ``nccl_answer``: files/horovod_nccl_check.py's answer, whose lines the ranks on every node printed;
- ``ssh_trust_read``, ``pinned_keys``: a node's ssh_trust_info result (host keys, pinned lines, sources);
- ``public_key``: a node's openssh_keypair public key, authorised on every node;
- ``ssh_row``: a node's row of ssh_trust's ssh matrix (files/ssh_matrix.py);
- ``bench_link``: the benchmark's link measurement (playbooks/files/benchmark/horovod_bench_link.py);
- ``run_status``: the runs the run helper read on the share (horovod_run.py status);
- ``gpu_count``: the GPUs a node's docker_horovod_info found, which become its slots.

Texts that are only shown (errors, log lines, command lines of processes) are checked for type and
length and lose their control characters; everything that names or addresses something is checked by
pattern and range.
"""

from __future__ import annotations

import ipaddress
import json
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any, NoReturn

from ansible_collections.multinode.horovod.plugins.module_utils.ssh_keys import key_problem

# Linux's rule for an interface name (net/core/dev.c dev_valid_name): 1 to IFNAMSIZ - 1 = 15 bytes, not
# "." or "..", no '/', ':' or whitespace. Narrowed to the characters real names use, without the ones
# a shell or a list gives a meaning to (',' separates NCCL_SOCKET_IFNAME's list, '^' and '=' prefix it),
# and not starting with '-' (it would read as an option).
IFNAMSIZ = 16
INTERFACE_RE = re.compile(r"[A-Za-z0-9_.@][A-Za-z0-9_.@-]{0,14}")
INTERFACE_SHAPE = (
    f"an interface name as Linux allows it: 1 to {IFNAMSIZ - 1} characters, letters, digits, '_', '.', '@' and "
    "'-', not starting with '-' (such as eth0, ens3f0 or ib0)"
)
HOSTNAME_RE = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,252}")
VERSION_RE = re.compile(r"[0-9][0-9A-Za-z.+_-]{0,63}")
PACKAGE_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,99}")
CUDA_RE = re.compile(r"[0-9]{1,3}\.[0-9]{1,3}(?:\.[0-9]{1,3})?")
COMPUTE_CAP_RE = re.compile(r"[0-9]{1,3}\.[0-9]{1,3}|\[?N/A\]?")
ARCH_RE = re.compile(r"[A-Za-z0-9_.]{1,32}")
DEVICE_RE = re.compile(r"[A-Za-z0-9_.:-]{1,64}")
RUN_NAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,127}")
FRAMEWORKS = ("pytorch", "tensorflow")
# Ranges: what a real node can report, with room; a count beyond them is a forged report.
MAX_GPUS = 1024
MAX_PID = 4194304  # PID_MAX_LIMIT on 64-bit Linux
MAX_ITEMS = 100000
TEXT_LIMIT = 65536
NAME_LIMIT = 253
PATH_LIMIT = 4096
# Control characters (a terminal escape in a message) are replaced in texts only shown.
CONTROL_RE = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


class ReportError(ValueError):
    """A node's report that fails its schema: `node`, the `field` (a dotted path in the report) and why."""

    def __init__(self, node: str, field: str, why: str) -> None:
        self.node, self.field, self.why = node, field, why
        super().__init__(
            f"{node}: {field} in its report {why}. Root on a node controls what it reports, so nothing of this "
            "report is used and nothing was changed on any other node: check that node (its python3, its "
            "container), then run again"
        )


def is_interface_name(value: object) -> bool:
    """Whether `value` is one network interface name (INTERFACE_SHAPE): the one test for the gate's rules of
    horovod_launch_network_interfaces, the boundary and horovodrun's command line."""
    return isinstance(value, str) and value not in (".", "..") and bool(INTERFACE_RE.fullmatch(value))


def interface_problem(value: object) -> str:
    """Why `value` is not an interface name, "" when it is."""
    return "" if is_interface_name(value) else f"{_shown(value)} is not {INTERFACE_SHAPE}"


def is_address(value: object, version: int | None = None) -> bool:
    """Whether `value` is an IPv4 or IPv6 address (of `version` when given), as ipaddress reads it."""
    if not isinstance(value, str):
        return False
    try:
        found = ipaddress.ip_address(value)
    except ValueError:
        return False
    return version is None or found.version == version


def _shown(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


class _Check:
    """The checks of one node's report; each failure raises ReportError naming the node and the field."""

    def __init__(self, node: str, what: str) -> None:
        self.node, self.what = node, what

    def fail(self, field: str, why: str) -> NoReturn:
        raise ReportError(self.node, f"{self.what}: {field}" if field else self.what, why)

    def mapping(self, value: Any, field: str, keys: Sequence[str] | None = None) -> Mapping[str, Any]:
        if not isinstance(value, Mapping):
            self.fail(field, f"is {type(value).__name__}, not a mapping")
        if len(value) > MAX_ITEMS:
            self.fail(field, f"has {len(value)} entries")
        if keys is not None:
            unknown = sorted(str(k) for k in value if k not in keys)
            if unknown:
                self.fail(field, f"has the unknown key {_shown(unknown[0])}")
        return value

    def items(self, value: Any, field: str, limit: int = MAX_ITEMS) -> list[Any]:
        if not isinstance(value, list | tuple):
            self.fail(field, f"is {type(value).__name__}, not a list")
        if len(value) > limit:
            self.fail(field, f"has {len(value)} items, more than {limit}")
        return list(value)

    def integer(self, value: Any, field: str, low: int, high: int) -> int:
        if isinstance(value, bool) or not isinstance(value, int):
            self.fail(field, f"is {_shown(value)}, not a whole number")
        if not low <= value <= high:
            self.fail(field, f"is {value}, outside {low}..{high}")
        return int(value)

    def number(self, value: Any, field: str, low: float, high: float) -> float | None:
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, int | float) or not low <= value <= high:
            self.fail(field, f"is {_shown(value)}, not a number in {low:g}..{high:g}")
        return value

    def matches(self, value: Any, field: str, pattern: re.Pattern[str], shape: str, empty: bool = False) -> str:
        if empty and value == "":
            return ""
        if not (isinstance(value, str) and pattern.fullmatch(value)):
            self.fail(field, f"is {_shown(value)}, not {shape}")
        return str(value)

    def interface(self, value: Any, field: str, none: bool = False) -> str | None:
        if none and value is None:
            return None
        if not is_interface_name(value):
            self.fail(field, f"is {_shown(value)}, not {INTERFACE_SHAPE}")
        return str(value)

    def address(self, value: Any, field: str, version: int | None = None, none: bool = False) -> str | None:
        if none and value is None:
            return None
        if not is_address(value, version):
            self.fail(field, f"is {_shown(value)}, not an IPv{version or '4 or IPv6'} address")
        return str(value)

    def text(self, value: Any, field: str, limit: int = TEXT_LIMIT, none: bool = False) -> str | None:
        """A text that is only shown: a string of at most `limit` characters, its control characters
        replaced."""
        if none and value is None:
            return None
        if not isinstance(value, str):
            self.fail(field, f"is {type(value).__name__}, not a string")
        if len(value) > limit:
            self.fail(field, f"is {len(value)} characters long, more than {limit}")
        return CONTROL_RE.sub("?", value)

    def line(self, value: Any, field: str, limit: int = PATH_LIMIT) -> str:
        """A name or path that is shown or compared: one line, no control character at all."""
        if not isinstance(value, str) or len(value) > limit or CONTROL_RE.search(value) or "\n" in value:
            self.fail(
                field, f"is {_shown(value)}, not one line of at most {limit} characters without control characters"
            )
        return str(value)


# --- the probe's answer (roles/horovod_launch/files/horovod_probe.py) ------------------------------------


def _gpus(c: _Check, read: Any) -> dict[str, Any]:
    read = c.mapping(read, "gpus", ("devices", "driver_cuda", "frameworks", "error"))
    devices = []
    for i, given in enumerate(c.items(read.get("devices") or [], "gpus.devices", MAX_GPUS)):
        f = f"gpus.devices[{i}]"
        device = c.mapping(given, f, ("index", "name", "compute_cap"))
        devices.append(
            {
                "index": c.integer(device.get("index"), f"{f}.index", 0, MAX_GPUS - 1),
                "name": c.line(device.get("name", ""), f"{f}.name", 200),
                "compute_cap": c.matches(
                    device.get("compute_cap", ""), f"{f}.compute_cap", COMPUTE_CAP_RE, "a compute capability", True
                ),
            }
        )
    frameworks = {}
    for name, given in c.mapping(read.get("frameworks") or {}, "gpus.frameworks", FRAMEWORKS).items():
        f = f"gpus.frameworks.{name}"
        built = c.mapping(given, f, ("version", "cuda", "arch_list", "device_count", "nccl", "error"))
        out: dict[str, Any] = {}
        if "error" in built:
            out["error"] = c.text(built["error"], f"{f}.error", 1000)
        if "version" in built:
            out["version"] = c.matches(built["version"], f"{f}.version", VERSION_RE, "a version", True)
        if "cuda" in built:
            out["cuda"] = c.matches(built["cuda"], f"{f}.cuda", CUDA_RE, "a CUDA version", True)
        if "arch_list" in built:
            out["arch_list"] = [
                c.matches(a, f"{f}.arch_list", ARCH_RE, "a GPU architecture")
                for a in c.items(built["arch_list"], f"{f}.arch_list", 256)
            ]
        if "device_count" in built:
            out["device_count"] = c.integer(built["device_count"], f"{f}.device_count", 0, MAX_GPUS)
        if "nccl" in built:
            out["nccl"] = c.matches(built["nccl"], f"{f}.nccl", VERSION_RE, "a version", True)
        frameworks[str(name)] = out
    return {
        "devices": devices,
        "driver_cuda": c.matches(read.get("driver_cuda", ""), "gpus.driver_cuda", CUDA_RE, "a CUDA version", True),
        "frameworks": frameworks,
        "error": c.text(read.get("error", ""), "gpus.error", 1000),
    }


def _flag(c: _Check, value: Any, field: str) -> bool:
    if not isinstance(value, bool):
        c.fail(field, f"is {_shown(value)}, not true or false")
    return value


def _torch(c: _Check, read: Any) -> dict[str, Any]:
    """What a torchrun run needs of a container's torch (the probe's ``--torch``): its version, whether it
    has torch.distributed, Gloo and NCCL, and the path of torchrun ("" when there is none); or the error."""
    read = c.mapping(read, "torch", ("version", "distributed", "gloo", "nccl", "torchrun", "error"))
    if "error" in read:
        return {"error": c.text(read["error"], "torch.error", 1000)}
    return {
        "version": c.matches(read.get("version", ""), "torch.version", VERSION_RE, "a version", True),
        **{key: _flag(c, read.get(key, False), f"torch.{key}") for key in ("distributed", "gloo", "nccl")},
        "torchrun": c.line(read.get("torchrun", ""), "torch.torchrun"),
    }


def _routes(c: _Check, routes: Any) -> list[dict[str, Any]]:
    out = []
    for i, given in enumerate(c.items(routes, "routes", 65536)):
        f = f"routes[{i}]"
        route = c.mapping(given, f, ("interface", "destination", "prefix", "gateway"))
        out.append(
            {
                "interface": c.interface(route.get("interface"), f"{f}.interface"),
                "destination": c.address(route.get("destination"), f"{f}.destination", 4),
                "prefix": c.integer(route.get("prefix"), f"{f}.prefix", 0, 32),
                "gateway": c.address(route.get("gateway"), f"{f}.gateway", 4),
            }
        )
    return out


def _packages(c: _Check, value: Any) -> dict[str, str]:
    return {
        c.matches(name, "packages", PACKAGE_RE, "a package name"): c.matches(
            version, f"packages.{name}", VERSION_RE, "a version"
        )
        for name, version in c.mapping(value, "packages").items()
    }


def is_alias_label(value: object) -> bool:
    """Whether `value` is an IPv4 address label such as ``eth0:1`` (getifaddrs, so psutil, lists an address
    by its label): an interface name, ':', a label, 15 characters in all. Never an interface to use."""
    if not isinstance(value, str) or len(value) >= IFNAMSIZ:
        return False
    name, colon, label = value.partition(":")
    return bool(colon) and is_interface_name(name) and bool(re.fullmatch(r"[A-Za-z0-9_.@-]+", label))


def _interfaces(c: _Check, value: Any) -> dict[str, list[str]]:
    """``{interface: [IPv4]}``; an address label (eth0:1) may be listed, as the node's other interfaces are,
    but never becomes the interface of an address (_addresses) or a command's."""
    out = {}
    for name, ips in c.mapping(value, "interfaces").items():
        if not is_alias_label(name):
            c.interface(name, "interfaces")
        out[str(name)] = [
            str(c.address(ip, f"interfaces.{name}", 4)) for ip in c.items(ips, f"interfaces.{name}", 4096)
        ]
    return out


def _addresses(c: _Check, value: Any) -> dict[str, dict[str, str | None]]:
    """For each address asked: what it resolves to there and which interface holds it (None: another's)."""
    addresses = {}
    for address, given in c.mapping(value, "addresses").items():
        f = f"addresses.{c.line(address, 'addresses', NAME_LIMIT)}"
        found = c.mapping(given, f, ("ip", "interface"))
        addresses[str(address)] = {
            "ip": c.address(found.get("ip"), f"{f}.ip", 4, none=True),
            "interface": c.interface(found.get("interface"), f"{f}.interface", none=True),
        }
    return addresses


def _processes(c: _Check, value: Any) -> list[dict[str, Any]]:
    processes = []
    for i, given in enumerate(c.items(value, "processes")):
        process = c.mapping(given, f"processes[{i}]", ("pid", "args"))
        processes.append(
            {
                "pid": c.integer(process.get("pid"), f"processes[{i}].pid", 1, MAX_PID),
                "args": c.text(process.get("args", ""), f"processes[{i}].args"),
            }
        )
    return processes


def _states(key: str) -> Callable[[_Check, Any], dict[str, str | None]]:
    """``{path: state}`` (the markers read back, the directories' writability): paths, and states only shown."""
    return lambda c, value: {
        c.line(path, key): c.text(state, f"{key}.{path}", 1000) for path, state in c.mapping(value, key).items()
    }


# What each key of a probe answer is checked by (every key may be missing, as in an older probe's answer).
PROBE_FIELDS: dict[str, Callable[[_Check, Any], Any]] = {
    "hostname": lambda c, v: c.matches(v, "hostname", HOSTNAME_RE, "a host name"),
    "horovod_version": lambda c, v: c.matches(v, "horovod_version", VERSION_RE, "a version", True),
    "packages": _packages,
    "interfaces": _interfaces,
    "addresses": _addresses,
    "shm_bytes": lambda c, v: c.integer(v, "shm_bytes", 0, 2**63 - 1),
    "routes": _routes,
    "port_range": lambda c, v: [c.integer(p, "port_range", 0, 65535) for p in c.items(v, "port_range", 2)],
    "missing_paths": lambda c, v: [c.line(p, "missing_paths") for p in c.items(v, "missing_paths")],
    "launchers": lambda c, v: [c.text(a, "launchers") for a in c.items(v, "launchers")],
    "processes": _processes,
    "markers": _states("markers"),
    "writable": _states("writable"),
    "gpus": _gpus,
    "torch": _torch,
    "rdma": lambda c, v: [c.matches(d, "rdma", DEVICE_RE, "a device name") for d in c.items(v, "rdma", 4096)],
    # A worker's is never read (the master's horovodrun builds the run); the master's own is its own.
    "check_build": lambda c, v: v,
}


def probe_answer(node: str, probe: Any) -> dict[str, Any]:
    """One node's probe answer, checked field by field (PROBE_FIELDS): interfaces, addresses and routes by
    Linux's and ipaddress's rules, GPUs and versions by pattern and range, texts only shown cleaned. Raises
    ReportError naming `node` and the field."""
    c = _Check(str(node), "the probe's answer")
    given = c.mapping(probe, "", tuple(PROBE_FIELDS))
    return {key: PROBE_FIELDS[key](c, value) for key, value in given.items()}


def _tcp(tcp: Any, names: Sequence[str], me: str) -> dict[str, Any]:
    """The TCP matrix: each row is what a node's connections found (the node's own answer)."""
    master = _Check(me, "the TCP matrix")
    tcp = master.mapping(tcp, "", ("ports", "from", "errors"))
    rows = {}
    for source, row in master.mapping(tcp.get("from") or {}, "from", names).items():
        c = _Check(str(source), "its row of the TCP matrix")
        rows[str(source)] = {
            str(target): c.text(state, str(target), 300) for target, state in c.mapping(row, "", names).items()
        }
    return {
        "ports": {
            str(name): master.integer(port, f"ports.{name}", 1, 65535)
            for name, port in master.mapping(tcp.get("ports") or {}, "ports", names).items()
        },
        "from": rows,
        "errors": {
            str(name): master.text(error, f"errors.{name}", 1000)
            for name, error in master.mapping(tcp.get("errors") or {}, "errors", names).items()
        },
    }


def survey(report: Any, hosts: Sequence[Mapping[str, Any]], me: str) -> dict[str, Any]:
    """The probe's survey (run in the master's container) with every node's answer checked: the master's
    own (``local``), each other node's (``remotes[].stdout``, JSON that node's root fully controls) and the
    TCP matrix. ``remotes[].stdout`` comes back as the checked answer, serialised again. `hosts`: the run's
    (``name``, ``address``)."""
    c = _Check(str(me), "the probe's survey")
    report = c.mapping(report, "", ("local", "local_names", "remotes", "check_build", "ssh", "tcp"))
    names = [str(h["name"]) for h in hosts]
    out = dict(report)
    if "local" in report:
        out["local"] = probe_answer(me, report["local"])
    if "local_names" in report:
        out["local_names"] = [
            c.matches(n, "local_names", _names_re(names), "a host of the run")
            for n in c.items(report["local_names"], "local_names")
        ]
    remotes = []
    for i, given in enumerate(c.items(report.get("remotes") or [], "remotes")):
        remote = dict(c.mapping(given, f"remotes[{i}]", ("name", "address", "rc", "stdout", "stderr")))
        name = str(remote.get("name"))
        if name not in names:  # the master asked for hosts of the run only; another is never read
            continue
        node = _Check(name, "the probe's answer")
        remote["rc"] = node.integer(remote.get("rc"), "rc", -255, 255)
        remote["stderr"] = node.text(remote.get("stderr", ""), "stderr")
        stdout = node.text(remote.get("stdout", ""), "stdout", 64 * 1024 * 1024) or ""
        if remote["rc"] == 0:
            try:
                answer = json.loads(stdout)
            except ValueError:
                node.fail("", "is not JSON")
            remote["stdout"] = json.dumps(probe_answer(name, answer), sort_keys=True)
        remotes.append(remote)
    out["remotes"] = remotes
    if "tcp" in report:
        out["tcp"] = _tcp(report["tcp"], names, me)
    return out


# --- the NCCL check's answer (roles/horovod_launch/files/horovod_nccl_check.py) -----------------------


def nccl_answer(answer: Any, me: str = "the master") -> dict[str, Any]:
    """The NCCL check's answer: rc, the lines of NCCL's log (every rank's, on every node) and the tail of
    horovodrun's output, only shown; seconds."""
    c = _Check(str(me), "the NCCL check's answer")
    answer = c.mapping(answer, "", ("rc", "lines", "tail", "seconds"))
    return {
        "rc": c.integer(answer.get("rc"), "rc", -255, 255),
        "lines": [c.text(line, "lines", 4096) for line in c.items(answer.get("lines") or [], "lines", 1000)],
        "tail": [c.text(line, "tail", 4096) for line in c.items(answer.get("tail") or [], "tail", 1000)],
        "seconds": c.number(answer.get("seconds", 0.0), "seconds", 0, 10**7),
    }


# --- ssh_trust: ssh_trust_info's result, openssh_keypair's public key, the ssh matrix's rows -----------


def host_key_line(c: _Check, value: Any, field: str) -> str:
    """``TYPE BLOB``: exactly one key of a known type whose blob encodes that type, nothing else (no host
    pattern, no @cert-authority or @revoked marker, no comment): the controller writes the host field."""
    fields = value.split(" ") if isinstance(value, str) else []
    if len(fields) != 2:
        c.fail(field, f"is {_shown(value)}, not one host key as TYPE BASE64")
    problem = key_problem(fields[0], fields[1])
    if problem:
        c.fail(field, problem)
    return str(value)


SSH_TRUST_READ_KEYS = (
    "host_keys", "bad_host_keys", "pinned_lines", "authorized_lines", "key", "sources", "unresolved",
    "changed", "failed", "invocation", "warnings", "deprecations", "msg", "skipped", "skip_reason",
)  # fmt: skip


def ssh_trust_read(node: str, read: Any) -> dict[str, Any]:
    """A node's ssh_trust_info result as the other nodes use it: ``host_keys`` (each goes into every node's
    known_hosts) one key each (host_key_line); ``sources`` addresses; the rest (``pinned_lines`` too, whose
    keys pinned_keys checks where they are taken) lists of single lines."""
    c = _Check(str(node), "its ssh_trust_info result")
    read = c.mapping(read, "", SSH_TRUST_READ_KEYS)
    out = dict(read)
    out["host_keys"] = [
        host_key_line(c, key, f"host_keys[{i}]")
        for i, key in enumerate(c.items(read.get("host_keys") or [], "host_keys", 64))
    ]
    # Lines of its known_hosts, other hosts' and marked ones included: only the keys pinned_lines_keys
    # takes from them for the cluster's nodes are used, and those are checked there.
    out["pinned_lines"] = [
        c.line(line, f"pinned_lines[{i}]", TEXT_LIMIT)
        for i, line in enumerate(c.items(read.get("pinned_lines") or [], "pinned_lines"))
    ]
    for key in ("bad_host_keys", "authorized_lines", "unresolved"):
        if key in read:
            out[key] = [c.line(x, f"{key}[{i}]", TEXT_LIMIT) for i, x in enumerate(c.items(read[key], key))]
    if "sources" in read:
        out["sources"] = [c.address(x, f"sources[{i}]") for i, x in enumerate(c.items(read["sources"], "sources"))]
    return out


def pinned_keys(node: str, keys: Sequence[str]) -> list[str]:
    """The ``TYPE BLOB`` keys taken from a node's pinned lines (ssh_keys.pinned_for) that go into every
    node's known_hosts: each one key of a known type."""
    c = _Check(str(node), "its ssh_trust_info result")
    return [host_key_line(c, key, "pinned_lines") for key in keys]


def public_key(node: str, value: Any) -> str:
    """A node's openssh_keypair public key, authorised on every node: ``TYPE BLOB`` of a known type, with at
    most a comment; "" for a node without a key (check mode)."""
    c = _Check(str(node), "its openssh_keypair result")
    if value in (None, ""):
        return ""
    text = c.line(value, "public_key", TEXT_LIMIT)
    fields = text.split()
    if len(fields) < 2 or len(fields) > 3:
        c.fail("public_key", f"is {_shown(text)}, not TYPE BASE64 [COMMENT]")
    host_key_line(c, f"{fields[0]} {fields[1]}", "public_key")
    return " ".join(fields)


def ssh_row(node: str, stdout: Any, names: Sequence[str]) -> dict[str, str]:
    """A node's row of the ssh matrix (files/ssh_matrix.py): ``{target node: "ok" or ssh's error}``, only
    shown; {} when it did not run."""
    c = _Check(str(node), "its row of the ssh matrix")
    text = c.text(stdout if stdout is not None else "", "stdout") or "{}"
    try:
        row = json.loads(text)
    except ValueError:
        return {}  # no row: every target of the node counts as failed
    return {str(t): str(c.text(v, str(t), 1000)) for t, v in c.mapping(row, "", names).items()}


# --- the benchmark's link measurement (playbooks/files/benchmark/horovod_bench_link.py) ----------------


def bench_link(raw: Any, names: Sequence[str], me: str = "the master") -> dict[str, Any] | None:
    """The link script's answer: the host names of its pairs, nics and left servers among the run's hosts;
    interfaces by Linux's rule; rates and speeds numbers in range; reasons and errors only shown."""
    if raw is None:
        return None
    c = _Check(str(me), "the link measurement")
    raw = c.mapping(raw, "", ("port", "seconds", "streams", "tool", "reason", "missing", "pairs", "left", "nics"))
    out = dict(raw)
    out["reason"] = c.text(raw.get("reason"), "reason", 4000, none=True)
    out["missing"] = [
        c.matches(h, "missing", _names_re(names), "a host of the run")
        for h in c.items(raw.get("missing") or [], "missing")
    ]
    out["left"] = {
        c.matches(h, "left", _names_re(names), "a host of the run"): c.text(v, f"left.{h}", 4000)
        for h, v in c.mapping(raw.get("left") or {}, "left").items()
    }
    nics = {}
    for host, given in c.mapping(raw.get("nics") or {}, "nics", names).items():
        n = _Check(str(host), "its interface in the link measurement")
        nic = n.mapping(given, "", ("interface", "speed_mbps", "transport", "speed_of", "reason"))
        nics[str(host)] = {
            "interface": n.interface(nic.get("interface"), "interface", none=True),
            "speed_mbps": n.number(nic.get("speed_mbps"), "speed_mbps", -1, 10**9),
            "transport": n.matches(nic.get("transport"), "transport", re.compile("ib|roce|tcp"), "ib, roce or tcp")
            if nic.get("transport") is not None
            else None,
            "speed_of": n.interface(nic.get("speed_of"), "speed_of", none=True),
            "reason": n.text(nic.get("reason"), "reason", 1000, none=True),
        }
    out["nics"] = nics
    pairs = []
    for i, given in enumerate(c.items(raw.get("pairs") or [], "pairs")):
        f = f"pairs[{i}]"
        pair = dict(c.mapping(given, f))
        pair["client"] = c.matches(pair.get("client"), f"{f}.client", _names_re(names), "a host of the run")
        pair["server"] = c.matches(pair.get("server"), f"{f}.server", _names_re(names), "a host of the run")
        pair["bits_per_second"] = c.number(pair.get("bits_per_second"), f"{f}.bits_per_second", 0, 1e15)
        pair["error"] = c.text(pair.get("error"), f"{f}.error", 4000, none=True)
        if "kind" in pair:
            pair["kind"] = c.text(pair["kind"], f"{f}.kind", 100)
        pairs.append(pair)
    out["pairs"] = pairs
    return out


def _names_re(names: Sequence[str]) -> re.Pattern[str]:
    return re.compile("|".join(re.escape(str(n)) for n in names) or "(?!)")


# --- the runs read back from the share (roles/horovod_launch/files/horovod_run.py status) --------------


def run_status(runs: Any, me: str = "the master") -> list[dict[str, Any]]:
    """The runs the helper read in their directories on the share (where a worker's root can write): each
    run's name by pattern, its exit status and counts in range, its texts only shown."""
    c = _Check(str(me), "the runs read on the share")
    out = []
    for i, given in enumerate(c.items(runs if runs is not None else [], "")):
        f = f"runs[{i}]"
        run = dict(c.mapping(given, f))
        run["name"] = c.matches(run.get("name"), f"{f}.name", RUN_NAME_RE, "a run name")
        run["state"] = c.matches(run.get("state"), f"{f}.state", re.compile("[a-z_]{1,32}"), "a state")
        if run.get("rc") is not None:
            run["rc"] = c.integer(run["rc"], f"{f}.rc", -255, 255)
        for key in ("log_tail", "last_line"):
            if key in run and run[key] is not None:
                run[key] = c.text(run[key], f"{f}.{key}")
        for key in ("rank_hosts", "current_hosts"):
            if key in run and run[key] is not None:
                run[key] = [c.line(h, f"{f}.{key}", NAME_LIMIT + 8) for h in c.items(run[key], f"{f}.{key}")]
        if run.get("duration_s") is not None:
            run["duration_s"] = c.number(run["duration_s"], f"{f}.duration_s", 0, 10**10)
        out.append(run)
    return out


# --- docker_horovod_info's GPUs, which become a node's slots ----------------------------------------


def gpu_count(node: str, value: Any) -> int:
    """The number of GPUs a node reported (docker_horovod_info, counted by docker_horovod's detect), which
    its slots default to: a whole number in 0..MAX_GPUS."""
    c = _Check(str(node), "its GPU count (docker_horovod_gpu_count)")
    if isinstance(value, str) and value.strip().isdigit():
        value = int(value.strip())
    return c.integer(value, "", 0, MAX_GPUS)
