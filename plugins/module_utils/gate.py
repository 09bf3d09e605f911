# Copyright: multinode.horovod contributors
# SPDX-License-Identifier: GPL-3.0-or-later
"""The site's gate: the whole inventory checked before any play touches a host.

The site playbook maps a few cluster settings (``horovod_*``, table ``SETTINGS``) and the inventory
groups onto the roles' variables. The gate checks, for every host of the cluster at once:

1. structure: one master, the child groups under ``horovod_cluster``, each host in exactly one of them,
   node addresses that are one host name or IPv4 address (in its plain dotted form), distinct addresses
   and short names (whatever their case);
2. names: a variable that starts with ``horovod_`` or a role's prefix and that the collection does not
   know (a typo), and inventory groups that look like ours but are not;
3. types: each setting has its type (a list is a list, a port a whole number);
4. agreement: cluster-wide settings are the same on every host;
5. the roles' own rules: what the site will hand each role, checked by that role's argument spec and its
   ``plugins/module_utils/<role>_rules.py``, with the problem named by the inventory variable the user
   set (``horovod_ssh_port``), not only the role variable it became (``container_sshd_port``).

Everything here reads only the inventory (and files on the controller), so the site can run it first,
whatever ``--limit``, ``--tags`` or ``--start-at-task`` say (docs/architecture.md, "The gate").
"""

from __future__ import annotations

import contextlib
import difflib
import importlib
import ipaddress
import re
import socket
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jinja2
import jinja2.meta
import jinja2.sandbox
import yaml
from ansible.module_utils.common.arg_spec import ArgumentSpecValidator
from ansible.module_utils.parsing.convert_bool import boolean
from ansible_collections.multinode.horovod.plugins.module_utils import defaults, horovod_bench
from ansible_collections.multinode.horovod.plugins.module_utils.numbers import positive, whole
from ansible_collections.multinode.horovod.plugins.module_utils.paths import is_inside, path_problem, strip_slash

COLLECTION = Path(__file__).resolve().parents[2]
RULES_PACKAGE = "ansible_collections.multinode.horovod.plugins.module_utils"
ROLES = ("nfs_server", "nfs_client", "docker_horovod", "container_sshd", "ssh_trust", "horovod_launch")
GROUP_CLUSTER, GROUP_MASTER, GROUP_WORKERS = "horovod_cluster", "horovod_master", "horovod_workers"
OUR_GROUPS = (GROUP_CLUSTER, GROUP_MASTER, GROUP_WORKERS)
STORAGE_KINDS = ("nfs", "existing")
# Facts the roles publish under their public prefix (set_fact); they are not typos.
ROLE_FACTS = (
    "docker_horovod_engine_existing",
    "docker_horovod_gpu_count",
    "horovod_launch_preflight",
    "horovod_launch_result",
    "horovod_launch_runs",
)
# The switch for unknown names: error (default) or warn.
UNKNOWN_SWITCH = "horovod_unknown_variables"
# Names of numbers only: the C library reads them as an IPv4 address in its own way (a leading zero is octal,
# 0x hexadecimal, fewer than four parts fill the last one), so only the plain dotted form is taken.
NUMERIC_RE = re.compile(r"(?:0[xX][0-9A-Fa-f]*|[0-9]+)(?:\.(?:0[xX][0-9A-Fa-f]*|[0-9]*))*")
NUMERIC_FIX = "write it as four decimal numbers from 0 to 255 without leading zeros"
# Matched whole (fullmatch; \Z in the look-ahead): `$` would also match before a final newline.
HOSTNAME_RE = re.compile(
    r"(?=.{1,253}\Z)[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*"
)


@dataclass(frozen=True)
class Setting:
    """One inventory setting of the site: its type, default, and the role variables it becomes."""

    name: str
    kind: str  # str, int, list, dict_list
    default: Any
    roles: tuple[str, ...] = ()
    cluster_wide: bool = True
    choices: tuple[str, ...] = field(default=())


SETTINGS: tuple[Setting, ...] = (
    Setting("horovod_shared_storage", "str", "nfs", (), choices=STORAGE_KINDS),
    Setting("horovod_share_root", "str", defaults.SHARE_ROOT, ("docker_horovod_share_root",)),
    Setting(
        "horovod_share_dir",
        "str",
        defaults.SHARE_DIR,
        ("nfs_server_exports", "nfs_client_mounts", "horovod_launch_share_dir"),
    ),
    # Default: horovod_share_root/artifacts (settings_of derives it, so it follows the share root).
    Setting(
        "horovod_artifact_dir",
        "str",
        None,
        (
            "nfs_server_exports",
            "nfs_client_mounts",
            "horovod_launch_artifact_dir",
            "horovod_launch_runs_dir",
            "horovod_launch_example_dir",
            "horovod_launch_code_dest",
        ),
    ),
    Setting(
        "horovod_nfs_export_options",
        "list",
        ["rw", "sync", "no_subtree_check", "no_root_squash"],
        ("nfs_server_exports",),
    ),
    # nosuid, nodev: a setuid program or a device node that root on one worker puts on the share (or the
    # master on the artifact directory) is no way to root on the other nodes.
    Setting(
        "horovod_nfs_mount_options",
        "list",
        ["nfsvers=4.2", "hard", "_netdev", "noatime", "nosuid", "nodev"],
        ("nfs_client_mounts",),
    ),
    Setting("horovod_image", "str", "horovod/horovod:0.28.1", ("docker_horovod_image",)),
    Setting("horovod_image_archive", "str", "", ("docker_horovod_image_archive",)),
    Setting("horovod_image_archive_checksum", "str", "", ("docker_horovod_image_archive_checksum",)),
    Setting(
        "horovod_container_name",
        "str",
        defaults.CONTAINER_NAME,
        (
            "docker_horovod_container_name",
            "container_sshd_container_name",
            "ssh_trust_container_name",
            "horovod_launch_container",
        ),
    ),
    Setting("horovod_shm_size", "str", "16g", ("docker_horovod_shm_size",)),
    Setting("horovod_extra_ca_bundle", "str", "", ("docker_horovod_extra_ca_bundle",)),
    Setting("horovod_pip_packages", "dict_list", [], ("docker_horovod_pip_packages",)),
    Setting(
        "horovod_ssh_port",
        "int",
        defaults.SSH_PORT,
        ("container_sshd_port", "ssh_trust_port", "horovod_launch_ssh_port"),
    ),
    Setting("horovod_network_interfaces", "list", [], ("horovod_launch_network_interfaces",)),
    Setting("horovod_train_command", "list", [], ("horovod_launch_command",)),
    Setting("horovod_run_name", "str", "", ("horovod_launch_run_name",)),
    Setting("horovod_slots", "int", None, ("horovod_launch_hosts",), cluster_wide=False),
    Setting("horovod_node_address", "str", None, (), cluster_wide=False),
    Setting(UNKNOWN_SWITCH, "str", "error", (), choices=("error", "warn")),
)
BY_NAME = {s.name: s for s in SETTINGS}
KIND_WORDS = {
    "str": "a string",
    "int": "a whole number",
    "list": "a list (YAML [a, b] or one '- item' per line)",
    "dict_list": "a list of mappings",
}


@dataclass
class Report:
    """What the gate found: errors stop the run, warnings are shown."""

    errors: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, list[str]]:
        return {"errors": self.errors, "warnings": self.warnings}


# --- the roles' own rules and specs ------------------------------------------------------------


def _load_yaml(path: Path) -> Any:
    return yaml.safe_load(path.read_text()) if path.is_file() else None


_CACHE: dict[str, Any] = {}


def role_spec(role: str) -> dict[str, Any]:
    """The options of a role's argument spec (meta/argument_specs.yml, entry point main)."""
    key = f"spec:{role}"
    if key not in _CACHE:
        spec = _load_yaml(COLLECTION / "roles" / role / "meta" / "argument_specs.yml") or {}
        _CACHE[key] = spec.get("argument_specs", {}).get("main", {}).get("options", {})
    return _CACHE[key]


def role_defaults(role: str) -> dict[str, Any]:
    key = f"defaults:{role}"
    if key not in _CACHE:
        _CACHE[key] = _load_yaml(COLLECTION / "roles" / role / "defaults" / "main.yml") or {}
    return _CACHE[key]


def role_rules(role: str) -> Callable[[Mapping[str, Any]], list[tuple[str, str]]] | None:
    try:
        return importlib.import_module(f"{RULES_PACKAGE}.{role}_rules").problems
    except ModuleNotFoundError:
        return None


# Switches of one playbook, given with -e (playbooks/teardown.yml and playbooks/benchmark.yml check
# their values themselves).
PLAYBOOK_SWITCHES = ("horovod_teardown_force", "horovod_teardown_remove_share_data", *horovod_bench.SETTING_NAMES)


def known_names() -> set[str]:
    names = {s.name for s in SETTINGS} | set(ROLE_FACTS) | set(PLAYBOOK_SWITCHES)
    for role in ROLES:
        names |= set(role_spec(role))
    return names


def _spec_problems(role: str, inputs: Mapping[str, Any]) -> list[tuple[str, str]]:
    """`inputs` validated against the role's argument spec, as include_role does."""
    spec = role_spec(role)
    problems = []
    for error in ArgumentSpecValidator(spec).validate(dict(inputs)).errors:
        text = str(error)
        # The longest option name the message mentions (docker_horovod_image_archive, not ..._image).
        variable = max((name for name in spec if name in text), key=len, default=role)
        problems.append((variable, text))
    return problems


# --- values --------------------------------------------------------------------------------------


def _yaml_kind(value: Any) -> str:
    for kind, word in ((bool, "a boolean"), (str, "a string"), (int, "a number"), (float, "a number")):
        if isinstance(value, kind):
            return word
    return "a mapping" if isinstance(value, Mapping) else "a list" if isinstance(value, list | tuple) else "empty"


def _list_problem(setting: Setting, value: Any) -> str | None:
    if not isinstance(value, list | tuple):
        hint = f"; for one item write [{value}]" if isinstance(value, str) else ""
        return f"{value!r} is {_yaml_kind(value)}, not a list{hint}"
    if setting.kind == "list":
        bad = [item for item in value if isinstance(item, bool | list | tuple | dict) or item is None]
        return f"item {bad[0]!r} is not a string or number" if bad else None
    bad = [item for item in value if not isinstance(item, Mapping)]
    return f"item {bad[0]!r} is not a mapping such as {{name: tqdm, version: 4.66.5}}" if bad else None


def _type_problem(setting: Setting, value: Any) -> str | None:
    """Why `value` is not of the setting's kind (strict: a string is not a list)."""
    if setting.kind in ("list", "dict_list"):
        return _list_problem(setting, value)
    if setting.kind == "int":
        return None if whole(value) is not None else f"{value!r} is not {KIND_WORDS['int']}"
    if isinstance(value, bool | list | tuple | dict) or value is None:
        return f"{value!r} is not {KIND_WORDS['str']}"
    if setting.choices and str(value) not in setting.choices:
        return f"{value!r} is not one of {', '.join(setting.choices)}"
    return None


def _normalise(setting: Setting, value: Any) -> Any:
    if setting.kind == "int" and isinstance(value, str):
        return int(value)
    if setting.kind == "str" and value is not None:
        text = str(value)
        if setting.name in ("horovod_share_dir", "horovod_share_root", "horovod_artifact_dir"):
            text = strip_slash(text)
        return text
    if setting.kind == "list" and isinstance(value, list | tuple):
        return [str(item) for item in value]
    return value


def settings_of(host_vars: Mapping[str, Any]) -> dict[str, Any]:
    """The site's settings for one host: the inventory's values (normalised) over the defaults.

    Values of the wrong type are passed through unchanged; the gate reports them."""
    out = {}
    for setting in SETTINGS:
        value = host_vars.get(setting.name, setting.default)
        out[setting.name] = value if _type_problem(setting, value) else _normalise(setting, value)
    if out["horovod_artifact_dir"] is None:
        out["horovod_artifact_dir"] = artifact_dir_below(out["horovod_share_root"])
    return out


def artifact_dir_below(share_root: Any) -> Any:
    """The default horovod_artifact_dir: ``artifacts`` below the share root (the root as it is when broken)."""
    return f"{share_root}/{defaults.ARTIFACT_DIR_NAME}" if isinstance(share_root, str) else share_root


def read_only_export_options(options: Sequence[str]) -> list[str]:
    """The share's export options for the artifact directory: ``ro`` instead of ``rw``."""
    kept = [option for option in options if option not in ("rw", "ro")]
    return ["ro", *kept]


def read_only_mount_options(options: Sequence[str]) -> list[str]:
    """The share's mount options for the artifact directory: ``ro`` instead of ``rw``."""
    kept = [option for option in options if option not in ("rw", "ro")]
    return [*kept, "ro"]


def address_of(name: str, host_vars: Mapping[str, Any]) -> str:
    return str(host_vars.get("horovod_node_address") or host_vars.get("ansible_host") or name)


def address_variable(host_vars: Mapping[str, Any]) -> str:
    """The inventory variable a node's address comes from (address_of), as a message names it."""
    if host_vars.get("horovod_node_address"):
        return "horovod_node_address"
    return "ansible_host" if host_vars.get("ansible_host") else "ansible_host (not set, so the host's name)"


def _is_ipv4(address: str) -> bool:
    try:
        return ipaddress.ip_address(address).version == 4
    except ValueError:
        return False


def _as_the_c_library_reads(address: str) -> str:
    try:
        return f" (the C library reads it as {socket.inet_ntoa(socket.inet_aton(address))})"
    except OSError:
        return ""


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
        return f"{address!r} is not an IPv4 address as written{_as_the_c_library_reads(address)}; {NUMERIC_FIX}"
    if not HOSTNAME_RE.fullmatch(address):
        return f"{address!r} is not a valid host name (letters, digits, '-', dots between labels) or IPv4 address"
    return None


# --- the checks ---------------------------------------------------------------------------------


def _hosts_phrase(hosts: Sequence[str], total: int) -> str:
    if total > 1 and len(hosts) == total:
        return "every host"
    if len(hosts) > 4:
        return f"{', '.join(hosts[:4])} and {len(hosts) - 4} more"
    return ", ".join(hosts)


def _structure(groups: Mapping[str, Sequence[str]], hostvars: Mapping[str, Any], report: Report) -> list[str]:
    errors = report.errors
    masters = list(groups.get(GROUP_MASTER, []))
    workers = list(groups.get(GROUP_WORKERS, []))
    cluster = list(groups.get(GROUP_CLUSTER, []))
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
    outside = [name for name in nodes if name not in cluster]
    if outside:
        errors.append(
            f"{', '.join(outside)}: in {GROUP_MASTER} or {GROUP_WORKERS} but not in {GROUP_CLUSTER}. Make both "
            f"groups children of {GROUP_CLUSTER} (see inventories/example/hosts.yml)."
        )
    loose = [name for name in cluster if name not in nodes]
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
        address = address_of(name, host)
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
    prefixes = ("horovod_", *(f"{role}_" for role in ROLES))
    unknown: dict[str, list[str]] = {}
    for name in nodes:
        for variable in [*hostvars[name], *hostvars[name].get(DEFERRED, [])]:
            if variable != DEFERRED and variable.startswith(prefixes) and variable not in known:
                unknown.setdefault(variable, []).append(name)
    for variable, hosts in sorted(unknown.items()):
        close = difflib.get_close_matches(variable, sorted(known), n=1, cutoff=0.75)
        hint = f"did you mean {close[0]}?" if close else "the collection has no such variable."
        text = (
            f"{variable} (on {_hosts_phrase(hosts, len(nodes))}): {hint} Unknown names are ignored, so fix the "
            f"name or remove it (or set {UNKNOWN_SWITCH}: warn to only warn)."
        )
        (report.warnings if warn_only else report.errors).append(text)


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


# Role variables site.yml takes from the inventory when set there (and derives otherwise).
HONOURED = frozenset(
    {
        "container_sshd_listen_addresses",
        "container_sshd_allow_from",
        "ssh_trust_mesh",
        "horovod_launch_runs_dir",
        "horovod_launch_example_dir",
        "horovod_launch_code_dest",
    }
)


def _role_inputs(
    name: str,
    nodes: Sequence[str],
    master: str,
    hostvars: Mapping[str, Any],
    settings: Mapping[str, Any],
) -> dict[str, dict[str, Any]]:
    """What the site hands each role on host `name` (playbooks/site.yml), by role."""
    addresses = {node: address_of(node, hostvars[node]) for node in nodes}
    storage_nfs = settings["horovod_shared_storage"] == "nfs"
    share_dir = settings["horovod_share_dir"]
    artifact_dir = settings["horovod_artifact_dir"]
    export_options = settings["horovod_nfs_export_options"]
    mount_options = settings["horovod_nfs_mount_options"]
    mapped: dict[str, dict[str, Any]] = {}
    if name == master and storage_nfs and len(nodes) > 1:
        clients = [addresses[n] for n in nodes if n != master]
        mapped["nfs_server"] = {
            "nfs_server_exports": [
                {"path": share_dir, "clients": clients, "options": export_options},
                {
                    "path": artifact_dir,
                    "clients": clients,
                    "options": read_only_export_options(export_options) if isinstance(export_options, list) else [],
                },
            ]
        }
    if name != master and storage_nfs:
        mapped["nfs_client"] = {
            "nfs_client_mounts": [
                {"server": addresses[master], "path": share_dir, "mountpoint": share_dir, "options": mount_options},
                {
                    "server": addresses[master],
                    "path": artifact_dir,
                    "mountpoint": artifact_dir,
                    "options": read_only_mount_options(mount_options) if isinstance(mount_options, list) else [],
                },
            ]
        }
    mapped["docker_horovod"] = {
        "docker_horovod_image": settings["horovod_image"],
        "docker_horovod_image_archive": settings["horovod_image_archive"],
        "docker_horovod_image_archive_checksum": settings["horovod_image_archive_checksum"],
        "docker_horovod_container_name": settings["horovod_container_name"],
        "docker_horovod_share_root": settings["horovod_share_root"],
        "docker_horovod_share_mounts": [share_dir, artifact_dir] if storage_nfs and name != master else [],
        "docker_horovod_shm_size": settings["horovod_shm_size"],
        "docker_horovod_extra_ca_bundle": settings["horovod_extra_ca_bundle"],
        "docker_horovod_pip_packages": settings["horovod_pip_packages"],
    }
    mapped["container_sshd"] = {
        "container_sshd_container_name": settings["horovod_container_name"],
        "container_sshd_port": settings["horovod_ssh_port"],
    }
    # site.yml narrows sshd to the node's cluster address and the cluster's sources, unless the
    # inventory gives the lists. A host name is resolved on the node, so only addresses are known here.
    ips = {node: address for node, address in addresses.items() if _is_ipv4(address)}
    own = hostvars[name]
    if "container_sshd_listen_addresses" in own:
        mapped["container_sshd"]["container_sshd_listen_addresses"] = own["container_sshd_listen_addresses"]
    elif name in ips:
        mapped["container_sshd"]["container_sshd_listen_addresses"] = [ips[name]]
    if "container_sshd_allow_from" in own:
        mapped["container_sshd"]["container_sshd_allow_from"] = own["container_sshd_allow_from"]
    elif len(ips) == len(addresses):
        mapped["container_sshd"]["container_sshd_allow_from"] = list(dict.fromkeys(ips.values()))
    mesh = hostvars[master].get("ssh_trust_mesh", False)
    mapped["ssh_trust"] = {
        "ssh_trust_master": master,
        "ssh_trust_nodes": [{"name": n, "address": addresses[n]} for n in nodes],
        "ssh_trust_port": settings["horovod_ssh_port"],
        "ssh_trust_container_name": settings["horovod_container_name"],
        # Only the master's key, unless the controller is mpi or the inventory asks for the mesh.
        "ssh_trust_mesh": hostvars[master].get("horovod_launch_controller", "gloo") == "mpi"
        or (mesh if isinstance(mesh, bool) else str(mesh).lower() in ("true", "yes", "1", "on")),
    }
    if name == master:
        mapped["horovod_launch"] = {
            "horovod_launch_hosts": [
                {"name": n, "address": addresses[n], "slots": positive(hostvars[n].get("horovod_slots")) or 1}
                for n in nodes
            ],
            "horovod_launch_container": settings["horovod_container_name"],
            "horovod_launch_ssh_port": settings["horovod_ssh_port"],
            "horovod_launch_share_dir": share_dir,
            "horovod_launch_artifact_dir": artifact_dir,
            # In the artifact directory, unless the inventory places them (HONOURED).
            "horovod_launch_runs_dir": own.get("horovod_launch_runs_dir", f"{artifact_dir}/runs"),
            "horovod_launch_example_dir": own.get("horovod_launch_example_dir", f"{artifact_dir}/examples"),
            "horovod_launch_code_dest": own.get("horovod_launch_code_dest", f"{artifact_dir}/workspace"),
            "horovod_launch_network_interfaces": settings["horovod_network_interfaces"],
            "horovod_launch_command": settings["horovod_train_command"],
            "horovod_launch_run_name": settings["horovod_run_name"],
        }
    return mapped


def _sources(role_variable: str) -> list[Setting]:
    return [s for s in SETTINGS if role_variable in s.roles]


# Role variables that carry the nodes' addresses (address_of), which come from no setting.
ADDRESS_CARRIERS = frozenset(
    {
        "nfs_server_exports",
        "nfs_client_mounts",
        "container_sshd_listen_addresses",
        "container_sshd_allow_from",
        "ssh_trust_nodes",
        "horovod_launch_hosts",
    }
)


def _blame(
    role_variable: str, message: str, settings: Mapping[str, Any], addresses: Mapping[str, tuple[str, str]]
) -> str:
    """The inventory variable(s) behind a role variable's problem: a node's address variable when the
    message quotes that address (`addresses`: node -> its address and the variable it comes from),
    else the settings whose value the message quotes."""
    if role_variable in ADDRESS_CARRIERS:
        for node, (address, variable) in addresses.items():
            if repr(address) in message:
                return f"{variable} of {node} (as {role_variable})"
    sources = _sources(role_variable)
    if not sources:
        return role_variable

    def quoted(value: Any) -> bool:
        items = value if isinstance(value, list | tuple) else [value]
        return any(str(item) and str(item) in message for item in items if not isinstance(item, Mapping))

    named = [s.name for s in sources if quoted(settings[s.name])] or [s.name for s in sources]
    return f"{' / '.join(named)} (as {role_variable})"


def _site_rules(settings: Mapping[str, Any], nodes: Sequence[str], hostvars: Mapping[str, Any]) -> list[str]:
    """Rules of the site itself, on its own settings (the roles check what they receive)."""
    problems = []
    for key in ("horovod_share_root", "horovod_share_dir", "horovod_artifact_dir"):
        problem = path_problem(settings[key])
        if problem:
            problems.append(f"{key}: {problem}.")
    root, share, artifacts = (
        settings["horovod_share_root"],
        settings["horovod_share_dir"],
        settings["horovod_artifact_dir"],
    )
    if not path_problem(root) and not path_problem(share) and (share == root or not is_inside(share, root)):
        problems.append(
            f"horovod_share_dir: {share!r} must be a directory below horovod_share_root {root!r} (the directory "
            f"mounted into the container), for example {defaults.SHARE_DIR} below {defaults.SHARE_ROOT}."
        )
    if not path_problem(root) and not path_problem(artifacts) and (artifacts == root or not is_inside(artifacts, root)):
        problems.append(
            f"horovod_artifact_dir: {artifacts!r} must be a directory below horovod_share_root {root!r} (the "
            f"directory mounted into the container), for example {defaults.ARTIFACT_DIR} below {defaults.SHARE_ROOT}."
        )
    elif (
        not path_problem(share)
        and not path_problem(artifacts)
        and (is_inside(artifacts, share) or is_inside(share, artifacts))
    ):
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


# Ports of the NFS server on the master, which the containers' sshd must not take: the containers share the
# host's network (--net=host).
NFS_PORTS = {2049: "NFS's (nfsd)", 111: "rpcbind's (the NFS portmapper)"}
CONNECTION_VARS = ("ansible_host", "ansible_port", "ansible_connection")
DEFERRED = "__deferred__"  # in a snapshot: the names whose values wait for the hosts


def snapshot(names: Iterable[str], hostvars: Mapping[str, Any], report: Report) -> dict[str, dict[str, Any]]:
    """The variables the gate reads, once per host, as plain dicts.

    Each ``hostvars[name]`` computes all of that host's variables anew, so it is read once per host and
    only the names the gate looks at are taken (ours, and how the host is reached). A value that cannot
    be known before the hosts are reached (a template over facts, such as an address taken from
    ``ansible_facts``) is left out, with a warning: the roles check it when they run."""
    prefixes = ("horovod_", *(f"{role}_" for role in ROLES))
    snap: dict[str, dict[str, Any]] = {}
    deferred: dict[str, list[str]] = {}
    for name in names:
        host = hostvars[name]
        snap[name] = {}
        for key in host:
            if not (isinstance(key, str) and (key.startswith(prefixes) or key in CONNECTION_VARS)):
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
    total = len(snap)
    report.warnings.extend(
        f"{key} (on {_hosts_phrase(hosts, total)}) depends on what only the hosts can tell (facts), so the "
        "gate cannot check it; the roles check it when they reach the hosts."
        for key, hosts in sorted(deferred.items())
    )
    return snap


SLOTS_FIX = "Set the number of processes for this node (usually its GPUs), or remove it to use the GPUs found."


def _types(
    nodes: Sequence[str],
    hostvars: Mapping[str, Mapping[str, Any]],
    per_host: dict[str, dict[str, Any]],
    report: Report,
) -> None:
    """Types, named by variable and host. A value of the wrong type is then taken as its default for the
    checks that follow, so they find the other problems without repeating this one in other words."""
    typed: dict[tuple[str, str], list[str]] = {}
    for name in nodes:
        host = hostvars[name]
        for setting in SETTINGS:
            if setting.name not in host:
                continue
            problem = _type_problem(setting, host[setting.name])
            if setting.name == "horovod_slots" and problem is None and positive(host[setting.name]) is None:
                problem = f"{host[setting.name]!r} is not a whole number of 1 or more"
            if problem:
                per_host[name][setting.name] = _normalise(setting, setting.default)
                fix = SLOTS_FIX if setting.name == "horovod_slots" else f"It must be {KIND_WORDS[setting.kind]}."
                typed.setdefault((setting.name, f"{problem}. {fix}"), []).append(name)
    for (variable, text), hosts in typed.items():
        report.errors.append(f"{variable} (on {_hosts_phrase(hosts, len(nodes))}): {text}")


def check(groups: Mapping[str, Sequence[str]], hostvars: Mapping[str, Any]) -> Report:
    """Everything wrong with the inventory, each with its fix."""
    report = Report()
    members = [name for group in (GROUP_CLUSTER, GROUP_MASTER, GROUP_WORKERS) for name in groups.get(group, [])]
    hostvars = snapshot(dict.fromkeys(members), hostvars, report)
    nodes = _structure(groups, hostvars, report)
    if not nodes:
        return report
    masters = list(groups.get(GROUP_MASTER, []))
    master = masters[0] if masters else nodes[0]
    per_host = {name: settings_of(hostvars[name]) for name in nodes}
    addresses = {name: (address_of(name, hostvars[name]), address_variable(hostvars[name])) for name in nodes}
    switch = per_host[master][UNKNOWN_SWITCH]
    _names(nodes, hostvars, report, warn_only=switch == "warn")

    _types(nodes, hostvars, per_host, report)
    _agreement(nodes, per_host, report)
    settings = per_host[master]
    report.errors.extend(_site_rules(settings, nodes, hostvars))

    seen: dict[str, list[str]] = {}
    memo: dict[str, list[str]] = {}  # most hosts hand a role the same inputs: check each set once
    for name in nodes:
        host = hostvars[name]
        for role, mapped in _role_inputs(name, nodes, master, hostvars, per_host[name]).items():
            own = {key: value for key, value in host.items() if key in role_spec(role)}
            key = repr((role, sorted(own.items()), sorted(mapped.items()), sorted(per_host[name].items())))
            if key not in memo:
                memo[key] = _role_problems(role, mapped, host, per_host[name], addresses)
            for line in memo[key]:
                seen.setdefault(line, []).append(name)
    for line, hosts in seen.items():
        report.errors.append(f"{line} (on {_hosts_phrase(hosts, len(nodes))})")
    _overridden(nodes, master, hostvars, per_host, report)
    report.warnings.extend(_writable_artifacts(nodes, hostvars, per_host))
    report.warnings.extend(_opt_ins(nodes, hostvars))
    return report


# The roles' switches that let a weaker setting through, and what each one then allows.
OPT_INS = {
    "horovod_launch_allow_share_code": (
        "what every rank executes may come from horovod_share_dir (the command's program or script, the working "
        "directory, the runs, example and code directories, PYTHONPATH, LD_LIBRARY_PATH, LD_PRELOAD or PATH of "
        "horovod_launch_env), so root on any worker can run code as root in the master's container, and from "
        "there in every container"
    ),
    "container_sshd_allow_any_source": (
        "container_sshd_allow_from may admit every address, so root may log in to the containers (the master's "
        "holds the cluster's key) from anywhere that reaches horovod_ssh_port"
    ),
    "nfs_server_allow_weak_options": (
        "the exports may use insecure (any user on a worker, not only root, can then talk NFS to the master in "
        "any user's name), anonuid=0 or anongid=0 (the squashed users become root)"
    ),
}


def _opt_ins(nodes: Sequence[str], hostvars: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """A warning for each switch of OPT_INS the inventory turns on: it weakens what the site guarantees."""
    out = []
    for variable, allows in OPT_INS.items():
        hosts = [name for name in nodes if _switched_on(hostvars[name].get(variable))]
        if hosts:
            out.append(
                f"{variable} (on {_hosts_phrase(hosts, len(nodes))}) is true: {allows}. Remove it unless that is "
                "really meant (SECURITY.md)."
            )
    return out


def _switched_on(value: Any) -> bool:
    try:
        return boolean(value, strict=True)
    except TypeError:
        return False  # not a boolean: the role's argument spec refuses it


def _writable_artifacts(
    nodes: Sequence[str], hostvars: Mapping[str, Mapping[str, Any]], per_host: Mapping[str, Mapping[str, Any]]
) -> list[str]:
    """What every node executes but that lies outside horovod_artifact_dir, where root on a worker may
    replace it: the image archive (unless its checksum is pinned) and the wheel directory."""
    out = []
    first = per_host[nodes[0]]
    artifacts, archive = first["horovod_artifact_dir"], first["horovod_image_archive"]
    if not isinstance(artifacts, str) or path_problem(artifacts):
        return out
    if (
        isinstance(archive, str)
        and archive
        and not is_inside(archive, artifacts)
        and not first["horovod_image_archive_checksum"]
    ):
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


def _overridden(
    nodes: Sequence[str],
    master: str,
    hostvars: Mapping[str, Mapping[str, Any]],
    per_host: Mapping[str, Mapping[str, Any]],
    report: Report,
) -> None:
    """Role variables the inventory sets although the site sets them itself: the site's value wins
    (include_role's vars), so the inventory's is ignored by site.yml. A warning, since a scenario or a
    playbook of the user's own may run the role directly with them."""
    found: dict[str, list[str]] = {}
    for name in nodes:
        for mapped in _role_inputs(name, nodes, master, hostvars, per_host[name]).values():
            for variable in sorted((set(mapped) & set(hostvars[name])) - HONOURED):
                found.setdefault(variable, []).append(name)
    for variable, hosts in sorted(found.items()):
        sources = ", ".join(s.name for s in _sources(variable)) or "the inventory groups"
        report.warnings.append(
            f"{variable} (on {_hosts_phrase(hosts, len(nodes))}): set in the inventory, but the site sets it from "
            f"{sources}, so site.yml ignores it; set {sources} instead."
        )


def _resolve(inputs: Mapping[str, Any], templated: Iterable[str]) -> dict[str, Any]:
    """`inputs` with the role defaults named in `templated` rendered as Ansible renders them
    ("{{ horovod_launch_share_dir }}/runs").

    Only those are rendered, each once, after the defaults it refers to: every other value is what the
    role gets, already templated by Ansible or raw text the inventory marked ``!unsafe``, and text that
    a default takes in from one of them is never rendered again."""
    # Only the collection's own defaults are rendered; the sandbox keeps even those from Python's internals.
    env = jinja2.sandbox.ImmutableSandboxedEnvironment(undefined=jinja2.StrictUndefined, autoescape=False)
    out = dict(inputs)
    pending: dict[str, set[str]] = {}
    for name in templated:
        value = out.get(name)
        if isinstance(value, str) and ("{{" in value or "{%" in value):
            try:
                pending[name] = set(jinja2.meta.find_undeclared_variables(env.parse(value)))
            except jinja2.TemplateError:
                continue
    while ready := [name for name, refs in pending.items() if not refs & set(pending)]:
        for name in ready:
            del pending[name]
            with contextlib.suppress(jinja2.TemplateError):  # left as it is: the role's check reports it
                out[name] = env.from_string(out[name]).render(out)
    return out


def _role_problems(
    role: str,
    mapped: Mapping[str, Any],
    host: Mapping[str, Any],
    settings: Mapping[str, Any],
    addresses: Mapping[str, tuple[str, str]],
) -> list[str]:
    """One role's view on one host: its defaults, the inventory's role variables, the site's mapping."""
    spec = role_spec(role)
    lines = []
    own = {name: host[name] for name in spec if name in host}
    kept_defaults = {name: value for name, value in role_defaults(role).items() if name not in {**own, **mapped}}
    inputs = {**kept_defaults, **own, **mapped}
    inputs = _resolve({name: value for name, value in inputs.items() if name in spec}, kept_defaults)
    spec_problems = _spec_problems(role, inputs)
    problems = list(spec_problems)
    rules = role_rules(role)
    if rules is not None and not spec_problems:
        # The role's rules see the values as the role does (its argument spec validates, it does not
        # convert: a string stays a string), so the gate hands them the same.
        problems.extend(rules(inputs))
    for variable, message in problems:
        # A role variable the site takes from the inventory when set there (HONOURED) is the user's own.
        from_site = variable in mapped and not (variable in HONOURED and variable in host)
        who = _blame(variable, message, settings, addresses) if from_site else variable
        lines.append(f"{who}: {message}")
    return lines
