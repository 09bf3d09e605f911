# Copyright: multinode.horovod contributors
# SPDX-License-Identifier: GPL-3.0-or-later
"""The site's gate: the whole inventory checked before any play touches a host.

For every host of the cluster at once (docs/architecture.md, "The gate"):

1. structure: one master, the child groups under ``horovod_cluster``, each host in exactly one of them,
   node addresses that are one host name or IPv4 address (in its plain dotted form), distinct addresses
   and short names (whatever their case);
2. names: a variable that starts with ``horovod_`` or a role's prefix and that the collection does not
   know (a typo), and inventory groups that look like ours but are not;
3. settings: each (cluster.SETTINGS) of its type, a cluster-wide one the same on every host, the
   paths and the port by the site's own rules;
4. the roles' own rules: what the site hands each role (cluster.role_inputs, the mapping site.yml uses),
   checked by the role's argument spec and its ``<role>_rules.py``, each problem named by the
   inventory variable the user set (``horovod_ssh_port``), not only the role variable it became.

Everything here reads only the inventory (and files on the controller), so the site runs it first,
whatever ``--limit``, ``--tags`` or ``--start-at-task`` say.
"""

from __future__ import annotations

import difflib
import ipaddress
import re
import socket
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import jinja2
from ansible.module_utils.common.arg_spec import ArgumentSpecValidator
from ansible_collections.multinode.horovod.plugins.module_utils import defaults, horovod_bench, horovod_tensorboard
from ansible_collections.multinode.horovod.plugins.module_utils.numbers import positive, whole
from ansible_collections.multinode.horovod.plugins.module_utils.paths import is_inside, path_problem
from ansible_collections.multinode.horovod.plugins.module_utils.values import is_host_name, switch
from ansible_collections.multinode.horovod.plugins.plugin_utils import cluster, roles
from ansible_collections.multinode.horovod.plugins.plugin_utils.cluster import (
    GROUP_CLUSTER,
    GROUP_MASTER,
    GROUP_WORKERS,
    SETTINGS,
    UNKNOWN_SWITCH,
)

OUR_GROUPS = (GROUP_CLUSTER, GROUP_MASTER, GROUP_WORKERS)
# Facts the roles publish under their public prefix (set_fact); they are not typos.
ROLE_FACTS = (
    "docker_horovod_engine_existing",
    "docker_horovod_gpu_count",
    "horovod_launch_diagnosis",
    "horovod_launch_preflight",
    "horovod_launch_result",
    "horovod_launch_runs",
)
# Switches of one playbook, given with -e (teardown.yml, benchmark.yml and tensorboard.yml check their
# values themselves).
PLAYBOOK_SWITCHES = (
    "horovod_teardown_force",
    "horovod_teardown_remove_share_data",
    *horovod_bench.SETTING_NAMES,
    *horovod_tensorboard.SETTING_NAMES,
)
PREFIXES = ("horovod_", *(f"{role}_" for role in roles.ROLES))
CONNECTION_VARS = ("ansible_host", "ansible_port", "ansible_connection")
DEFERRED = "__deferred__"  # in a snapshot: the names whose values wait for the hosts
# Names of numbers only: the C library reads them as an IPv4 address in its own way (a leading zero is octal,
# 0x hexadecimal, fewer than four parts fill the last one), so only the plain dotted form is taken.
NUMERIC_RE = re.compile(r"(?:0[xX][0-9A-Fa-f]*|[0-9]+)(?:\.(?:0[xX][0-9A-Fa-f]*|[0-9]*))*")
KIND_WORDS = {
    "str": "a string",
    "int": "a whole number",
    "bool": "true or false",
    "list": "a list (YAML [a, b] or one '- item' per line)",
    "dict_list": "a list of mappings",
}
SLOTS_FIX = "Set the number of processes for this node (usually its GPUs), or remove it to use the GPUs found."
# Ports of the NFS server on the master, which the containers' sshd must not take (--net=host).
NFS_PORTS = {2049: "NFS's (nfsd)", 111: "rpcbind's (the NFS portmapper)"}
HONOURED = frozenset(name for name, given in cluster.BY_VARIABLE.items() if given.honoured)
# The roles' switches that let a weaker setting through, and what each one then allows.
OPT_INS = {
    cluster.TRUST_SWITCH: (
        "root on every worker is trusted with root in the master's container: with horovod_launch_controller: mpi "
        "or ssh_trust_mesh: true every node holds a key that logs in to every container as root, the master's "
        "included; in an elastic run (horovod_launch_elastic) horovodrun's rendezvous on the master unpickles, "
        "and so runs, what any host that reaches it sends"
    ),
    "horovod_launch_allow_share_code": (
        "what every rank executes may come from horovod_share_dir (the command's program or script, the working "
        "directory, the runs, example and code directories, and the variables of horovod_launch_env that load "
        "code: HOME, PYTHONPATH, LD_LIBRARY_PATH, NCCL_NET_PLUGIN, TORCHINDUCTOR_CACHE_DIR and the others of "
        "code_paths.CODE_PATH_VARIABLES), so root on any worker can run code as root in the master's container, "
        "and from there in every container"
    ),
    "container_sshd_allow_any_source": (
        "container_sshd_allow_from may admit every address, so root may log in to the containers (the master's "
        "holds the cluster's key) from anywhere that reaches horovod_ssh_port"
    ),
    "nfs_server_allow_weak_options": (
        "the exports may use insecure (any user on a worker, not only root, can then talk NFS to the master in "
        "any user's name), anonuid=0 or anongid=0 (the squashed users become root), crossmnt or nohide (file "
        "systems mounted below an export reach the workers with its options)"
    ),
    "nfs_client_allow_weak_options": (
        "horovod_nfs_mount_options may lack nosuid or nodev (or set suid, dev), so a set-user-ID program or a "
        "device node that root on one worker puts on the share gives any user of another worker root, or its "
        "disks and memory"
    ),
}


@dataclass
class Report:
    """What the gate found: errors stop the run, warnings are shown; `inputs`: what the site hands each
    role on each node ({node: {role: {variable: value}}}), as the gate judged it."""

    errors: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    inputs: dict[str, dict[str, dict[str, Any]]] = field(default_factory=dict)
    # {node: {address, slots}}: the per-host values judged, which every later play reads (cluster.GATE_FACT).
    nodes: dict[str, dict[str, Any]] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return {"errors": self.errors, "warnings": self.warnings, "nodes": self.nodes}


def known_names() -> set[str]:
    names = {s.name for s in SETTINGS} | set(ROLE_FACTS) | set(PLAYBOOK_SWITCHES)
    for role in roles.ROLES:
        names |= set(roles.spec(role))
    return names


# --- addresses -----------------------------------------------------------------------------------


def address_variable(host_vars: Mapping[str, Any]) -> str:
    """The inventory variable a node's address comes from (cluster.address_of), as a message names it."""
    if host_vars.get("horovod_node_address"):
        return "horovod_node_address"
    return "ansible_host" if host_vars.get("ansible_host") else "ansible_host (not set, so the host's name)"


def address_problem(address: str) -> str | None:
    """Why a node address is not one host name or IPv4 address (None when it is)."""
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return _name_problem(address)
    if ip.version != 4:
        return f"{address!r} is an IPv6 address; horovodrun's -H list takes host names or IPv4 addresses"
    unusable = ip.is_loopback or ip.is_unspecified or ip.is_multicast
    return f"{address!r} is not an address other nodes can reach" if unusable else None


def _name_problem(address: str) -> str | None:
    """Why an address that is no IP address is not one host name (None when it is)."""
    if "/" in address:
        return f"{address!r} is a network, not one node's address"
    if address.lower() in ("localhost", "localhost.localdomain"):
        return f"{address!r} is this machine's own name, which other nodes cannot use"
    if NUMERIC_RE.fullmatch(address):
        try:
            read = f" (the C library reads it as {socket.inet_ntoa(socket.inet_aton(address))})"
        except OSError:
            read = ""
        return (
            f"{address!r} is not an IPv4 address as written{read}; write it as four decimal numbers from 0 to 255 "
            "without leading zeros"
        )
    if not is_host_name(address):
        return f"{address!r} is not a valid host name (letters, digits, '-', dots between labels) or IPv4 address"
    return None


# --- the checks ----------------------------------------------------------------------------------


def _hosts_phrase(hosts: Sequence[str], total: int) -> str:
    if total > 1 and len(hosts) == total:
        return "every host"
    if len(hosts) > 4:
        return f"{', '.join(hosts[:4])} and {len(hosts) - 4} more"
    return ", ".join(hosts)


def snapshot(names: Iterable[str], hostvars: Mapping[str, Any], report: Report) -> dict[str, dict[str, Any]]:
    """The variables the gate reads, once per host, as plain dicts.

    Each ``hostvars[name]`` computes all of that host's variables anew, so it is read once per host and
    only the names the gate looks at are taken (ours, and how the host is reached). A value that cannot
    be known before the hosts are reached (a template over facts) is left out, with a warning: the
    roles check it when they run."""
    snap: dict[str, dict[str, Any]] = {}
    deferred: dict[str, list[str]] = {}
    for name in names:
        host = hostvars[name]
        snap[name] = {}
        for key in host:
            if not (isinstance(key, str) and (key.startswith(PREFIXES) or key in CONNECTION_VARS)):
                continue
            try:
                value = host[key]
            except Exception:  # Ansible raises several kinds for a template it cannot render yet
                value = jinja2.Undefined()
            if isinstance(value, jinja2.Undefined):  # Ansible 2.19 hands back a marker instead of raising
                deferred.setdefault(key, []).append(name)
                snap[name].setdefault(DEFERRED, []).append(key)
            else:
                snap[name][key] = value
    report.warnings.extend(
        f"{key} (on {_hosts_phrase(hosts, len(snap))}) depends on what only the hosts can tell (facts), so the "
        "gate cannot check it; the roles check it when they reach the hosts."
        for key, hosts in sorted(deferred.items())
    )
    return snap


def _structure(groups: Mapping[str, Sequence[str]], hostvars: Mapping[str, Any], report: Report) -> list[str]:
    errors = report.errors
    masters = list(groups.get(GROUP_MASTER, []))
    workers = list(groups.get(GROUP_WORKERS, []))
    members = list(groups.get(GROUP_CLUSTER, []))
    if not masters:
        errors.append(
            f"{GROUP_MASTER}: the group is missing or empty. Put exactly one host in it: the node that "
            "exports the share and launches horovodrun."
        )
    elif len(masters) > 1:
        errors.append(
            f"{GROUP_MASTER}: {len(masters)} hosts ({', '.join(masters)}); there must be exactly one. "
            f"Move the others to {GROUP_WORKERS}."
        )
    errors.extend(
        f"{name}: in both {GROUP_MASTER} and {GROUP_WORKERS}; keep it in one of them."
        for name in sorted(set(masters) & set(workers))
    )
    nodes = list(dict.fromkeys(masters + workers))
    outside = [name for name in nodes if name not in members]
    if outside:
        errors.append(
            f"{', '.join(outside)}: in {GROUP_MASTER} or {GROUP_WORKERS} but not in {GROUP_CLUSTER}. Make both "
            f"groups children of {GROUP_CLUSTER} (see inventories/example/hosts.yml)."
        )
    loose = [name for name in members if name not in nodes]
    if loose:
        errors.append(
            f"{', '.join(loose)}: in {GROUP_CLUSTER} but in neither {GROUP_MASTER} nor {GROUP_WORKERS}. Put each "
            "host in exactly one of the two child groups."
        )
    for group in groups:
        if group.startswith("horovod_") and group not in OUR_GROUPS:
            close = difflib.get_close_matches(group, OUR_GROUPS, n=1)
            hint = f" Did you mean {close[0]}?" if close else ""
            errors.append(
                f"group {group}: not a group the collection knows ({', '.join(OUR_GROUPS)}).{hint} "
                "Its hosts would be left out of the cluster."
            )
    # Host names are the same whatever their case (DNS, /etc/hosts).
    seen_address: dict[str, tuple[str, str]] = {}
    seen_short: dict[str, str] = {}
    for name in nodes:
        host = hostvars[name]
        address = cluster.address_of(name, host)
        problem = address_problem(address)
        if problem:
            errors.append(
                f"{name}: {address_variable(host)}: {problem}. Give the one address the other nodes reach it at."
            )
        if address.lower() in seen_address:
            other, written = seen_address[address.lower()]
            case = f" (written {written} there; host names ignore case)" if written != address else ""
            errors.append(
                f"{name}: address {address} is also {other}'s{case}. Every node needs its own "
                "address (set horovod_node_address or ansible_host)."
            )
        seen_address.setdefault(address.lower(), (name, address))
        short = name.split(".")[0]
        if short.lower() in seen_short:
            errors.append(
                f"{name}: short host name {short} is also {seen_short[short.lower()]}'s; horovodrun and ssh would "
                "mix them up. Rename one of them in the inventory."
            )
        seen_short.setdefault(short.lower(), name)
    return nodes


def _names(nodes: Sequence[str], hostvars: Mapping[str, Any], report: Report, warn_only: bool) -> None:
    known = known_names()
    unknown: dict[str, list[str]] = {}
    for name in nodes:
        for variable in [*hostvars[name], *hostvars[name].get(DEFERRED, [])]:
            if variable != DEFERRED and variable.startswith(PREFIXES) and variable not in known:
                unknown.setdefault(variable, []).append(name)
    for variable, hosts in sorted(unknown.items()):
        close = difflib.get_close_matches(variable, sorted(known), n=1, cutoff=0.75)
        hint = f"did you mean {close[0]}?" if close else "the collection has no such variable."
        text = (
            f"{variable} (on {_hosts_phrase(hosts, len(nodes))}): {hint} Unknown names are ignored, so fix the "
            f"name or remove it (or set {UNKNOWN_SWITCH}: warn to only warn)."
        )
        (report.warnings if warn_only else report.errors).append(text)


def _types(
    nodes: Sequence[str], hostvars: Mapping[str, Any], per_host: dict[str, dict[str, Any]], report: Report
) -> None:
    """Types, named by variable and host. A value of the wrong type is then taken as its default for the
    checks that follow, so they find the other problems without repeating this one in other words."""
    typed: dict[tuple[str, str], list[str]] = {}
    for name in nodes:
        host = hostvars[name]
        for setting in SETTINGS:
            if setting.name not in host:
                continue
            problem = cluster.type_problem(setting, host[setting.name])
            if setting.name == "horovod_slots" and problem is None and positive(host[setting.name]) is None:
                problem = f"{host[setting.name]!r} is not a whole number of 1 or more"
            if problem:
                rest = {key: value for key, value in host.items() if key != setting.name}
                per_host[name][setting.name] = cluster.settings_of(rest)[setting.name]
                fix = SLOTS_FIX if setting.name == "horovod_slots" else f"It must be {KIND_WORDS[setting.kind]}."
                typed.setdefault((setting.name, f"{problem}. {fix}"), []).append(name)
    for (variable, text), hosts in typed.items():
        report.errors.append(f"{variable} (on {_hosts_phrase(hosts, len(nodes))}): {text}")


def _agreement(nodes: Sequence[str], per_host: Mapping[str, Mapping[str, Any]], report: Report) -> None:
    for setting in SETTINGS:
        if not setting.cluster_wide:
            continue
        values: dict[str, list[str]] = {}
        for name in nodes:
            values.setdefault(repr(per_host[name][setting.name]), []).append(name)
        if len(values) > 1:
            listing = "; ".join(f"{value} on {', '.join(hosts)}" for value, hosts in values.items())
            report.errors.append(
                f"{setting.name} differs between hosts ({listing}). It is one value for the whole cluster: set it "
                f"once, in group_vars/{GROUP_CLUSTER}.yml."
            )


def _site_rules(settings: Mapping[str, Any], nodes: Sequence[str], hostvars: Mapping[str, Any]) -> list[str]:
    """Rules of the site itself, on its own settings (the roles check what they receive)."""
    problems = [
        f"{key}: {path_problem(settings[key])}." for key in cluster.PATH_SETTINGS if path_problem(settings[key])
    ]
    root, share, artifacts = (settings[key] for key in cluster.PATH_SETTINGS)
    outside = {}
    for key, path, example in (
        ("horovod_share_dir", share, defaults.SHARE_DIR),
        ("horovod_artifact_dir", artifacts, defaults.ARTIFACT_DIR),
    ):
        outside[key] = not path_problem(root) and not path_problem(path) and (path == root or not is_inside(path, root))
        if outside[key]:
            problems.append(
                f"{key}: {path!r} must be a directory below horovod_share_root {root!r} (the directory mounted "
                f"into the container), for example {example} below {defaults.SHARE_ROOT}."
            )
    apart = (
        path_problem(share)
        or path_problem(artifacts)
        or not (is_inside(artifacts, share) or is_inside(share, artifacts))
    )
    if not outside["horovod_artifact_dir"] and not apart:
        problems.append(
            f"horovod_artifact_dir: {artifacts!r} and horovod_share_dir {share!r} must be apart, neither inside "
            "the other: the workers write the share and only read the artifact directory (a separate export), "
            f"for example {defaults.SHARE_DIR} and {defaults.ARTIFACT_DIR}."
        )
    port = settings["horovod_ssh_port"]
    clash = [
        name
        for name in nodes
        if "ssh" in str(hostvars[name].get("ansible_connection", "ssh"))
        and str(hostvars[name].get("ansible_port", 22)) == str(port)
    ]
    if clash:
        problems.append(
            f"horovod_ssh_port: {port} is the port Ansible reaches {', '.join(clash)} on (the host's own sshd); "
            f"the containers' sshd needs a port of its own, such as the default {defaults.SSH_PORT}."
        )
    if whole(port) in NFS_PORTS:
        problems.append(
            f"horovod_ssh_port: {port} is {NFS_PORTS[whole(port)]} port; the containers use the host's network "
            "(--net=host), so the master's sshd would collide with the NFS server. Choose a port of its own, "
            f"such as the default {defaults.SSH_PORT}."
        )
    return problems


def check(groups: Mapping[str, Sequence[str]], hostvars: Mapping[str, Any]) -> Report:
    """Everything wrong with the inventory, each with its fix."""
    report = Report()
    members = [name for group in OUR_GROUPS for name in groups.get(group, [])]
    report.errors.extend(_facts(dict.fromkeys(members), hostvars))
    hostvars = snapshot(dict.fromkeys(members), hostvars, report)
    nodes = _structure(groups, hostvars, report)
    if not nodes:
        return report
    master = (list(groups.get(GROUP_MASTER, [])) or nodes)[0]
    per_host = {name: cluster.settings_of(hostvars[name]) for name in nodes}
    _names(nodes, hostvars, report, warn_only=per_host[master][UNKNOWN_SWITCH] == "warn")
    _types(nodes, hostvars, per_host, report)
    _agreement(nodes, per_host, report)
    report.errors.extend(_site_rules(per_host[master], nodes, hostvars))

    layout = {GROUP_MASTER: [master], GROUP_WORKERS: [name for name in nodes if name != master]}
    site = cluster.Site(layout, hostvars, settings=per_host)
    if not any(error.startswith(FACTS_ERROR) for error in report.errors):
        report.nodes = cluster.judged_nodes(nodes, hostvars)
    mapped = report.inputs = {name: cluster.role_inputs(site, name) for name in nodes}
    addresses = {name: (cluster.address_of(name, hostvars[name]), address_variable(hostvars[name])) for name in nodes}
    seen: dict[str, list[str]] = {}
    memo: dict[str, list[str]] = {}  # most hosts hand a role the same inputs: check each set once
    for name in nodes:
        host = hostvars[name]
        for role, inputs in mapped[name].items():
            own = {key: value for key, value in host.items() if key in roles.spec(role)}
            key = repr((role, sorted(own.items()), sorted(inputs.items()), sorted(per_host[name].items())))
            if key not in memo:
                memo[key] = _role_problems(role, inputs, host, per_host[name], addresses)
            for line in memo[key]:
                seen.setdefault(line, []).append(name)
    report.errors.extend(f"{line} (on {_hosts_phrase(hosts, len(nodes))})" for line, hosts in seen.items())
    report.warnings.extend(_overridden(nodes, hostvars, mapped))
    report.warnings.extend(_writable_artifacts(nodes, hostvars, per_host))
    report.warnings.extend(_opt_ins(nodes, hostvars))
    return report


FACTS_ERROR = "A fact a node returned sets "


def _facts(names: Iterable[str], hostvars: Mapping[str, Any]) -> list[str]:
    """Nodes whose own facts (a module result's ansible_facts, kept in a fact cache) set the address or
    slots: Ansible puts them above the inventory's values, so the gate would judge what the node chose."""
    out = []
    for name in names:
        try:
            forged = cluster.from_facts(hostvars[name])
        except Exception:  # a host whose variables cannot be read yet: snapshot() and the rules judge it
            continue
        if forged:
            out.append(
                f"{FACTS_ERROR}{', '.join(forged)} on {name} (its ansible_facts), above the inventory's value. A node "
                "never chooses its own address or slots: check that node and clear the fact cache "
                "(ansible-playbook --flush-cache)."
            )
    return out


def _role_problems(
    role: str,
    mapped: Mapping[str, Any],
    host: Mapping[str, Any],
    settings: Mapping[str, Any],
    addresses: Mapping[str, tuple[str, str]],
) -> list[str]:
    """One role's view on one host: its defaults, the inventory's role variables, the site's mapping,
    through the role's argument spec and then (when that passes) its rules."""
    spec = roles.spec(role)
    inputs = roles.inputs(role, {**{name: host[name] for name in spec if name in host}, **mapped})
    problems = []
    for error in ArgumentSpecValidator(spec).validate(dict(inputs)).errors:
        # The longest option name the message mentions (docker_horovod_image_archive, not ..._image).
        text = str(error)
        problems.append((max((name for name in spec if name in text), key=len, default=role), text))
    rules = roles.rules(role)
    if rules is not None and not problems:
        # The rules see the values as the role does (its argument spec validates, it does not convert).
        problems.extend(rules(inputs))
    lines = []
    for variable, message in problems:
        # A role variable the site takes from the inventory when set there (HONOURED) is the user's own.
        from_site = variable in mapped and not (variable in HONOURED and variable in host)
        who = _blame(variable, message, settings, addresses) if from_site else variable
        lines.append(f"{who}: {message}")
    return lines


def _blame(
    role_variable: str, message: str, settings: Mapping[str, Any], addresses: Mapping[str, tuple[str, str]]
) -> str:
    """The inventory variable(s) behind a role variable's problem: a node's address variable when the
    message quotes that address (`addresses`: node -> its address and the variable it comes from),
    else the settings whose value the message quotes."""
    given = cluster.BY_VARIABLE[role_variable]
    if given.addresses:
        for node, (address, variable) in addresses.items():
            if repr(address) in message:
                return f"{variable} of {node} (as {role_variable})"
    if not given.settings:
        return role_variable

    def quoted(value: Any) -> bool:
        items = value if isinstance(value, list | tuple) else [value]
        return any(str(item) and str(item) in message for item in items if not isinstance(item, Mapping))

    named = [name for name in given.settings if quoted(settings[name])] or list(given.settings)
    return f"{' / '.join(named)} (as {role_variable})"


def _overridden(
    nodes: Sequence[str], hostvars: Mapping[str, Any], mapped: Mapping[str, Mapping[str, Mapping[str, Any]]]
) -> list[str]:
    """Role variables the inventory sets although the site sets them itself: the site's value wins
    (include_role's vars). A warning, since a playbook of the user's own may run the role with them."""
    found: dict[str, list[str]] = {}
    for name in nodes:
        for inputs in mapped[name].values():
            for variable in sorted((set(inputs) & set(hostvars[name])) - HONOURED):
                found.setdefault(variable, []).append(name)
    out = []
    for variable, hosts in sorted(found.items()):
        sources = ", ".join(cluster.sources(variable)) or "the inventory groups"
        out.append(
            f"{variable} (on {_hosts_phrase(hosts, len(nodes))}): set in the inventory, but the site sets it from "
            f"{sources}, so site.yml ignores it; set {sources} instead."
        )
    return out


def _writable_artifacts(
    nodes: Sequence[str], hostvars: Mapping[str, Any], per_host: Mapping[str, Mapping[str, Any]]
) -> list[str]:
    """What every node executes but that lies outside horovod_artifact_dir, where root on a worker may
    replace it: the image archive (unless its checksum is pinned) and the wheel directory."""
    first = per_host[nodes[0]]
    artifacts, archive = first["horovod_artifact_dir"], first["horovod_image_archive"]
    if not isinstance(artifacts, str) or path_problem(artifacts):
        return []
    out = []
    if archive and not is_inside(archive, artifacts) and not first["horovod_image_archive_checksum"]:
        out.append(
            f"horovod_image_archive: {archive!r} is outside horovod_artifact_dir {artifacts!r}, so root on a worker "
            "may replace the image every node loads, and no horovod_image_archive_checksum pins it; put the archive "
            f"below {artifacts} (read-only on the workers) or set its checksum (SECURITY.md)."
        )
    wheels = {hostvars[name].get("docker_horovod_pip_wheel_dir") for name in nodes} - {None, ""}
    out.extend(
        f"docker_horovod_pip_wheel_dir: {wheel_dir!r} is outside horovod_artifact_dir {artifacts!r}, so root on a "
        f"worker may replace the wheels every container installs; put them below {artifacts} (SECURITY.md)."
        for wheel_dir in sorted(w for w in wheels if isinstance(w, str) and not is_inside(w, artifacts))
    )
    return out


def _opt_ins(nodes: Sequence[str], hostvars: Mapping[str, Any]) -> list[str]:
    """A warning for each switch of OPT_INS the inventory turns on: it weakens what the site guarantees."""
    out = []
    for variable, allows in OPT_INS.items():
        hosts = [name for name in nodes if switch(hostvars[name].get(variable)) is True]
        if hosts:
            out.append(
                f"{variable} (on {_hosts_phrase(hosts, len(nodes))}) is true: {allows}. Remove it unless that is "
                "really meant (SECURITY.md)."
            )
    return out
