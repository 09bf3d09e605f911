# Copyright: multinode.horovod contributors
# SPDX-License-Identifier: GPL-3.0-or-later
"""The site's contract with the inventory: its settings, its nodes, and what it hands each role.

Users set the site's settings (``horovod_*``) in the inventory. SETTINGS is their table, one row each:
name, kind, one-line doc, the role variables it becomes, default, cluster-wide or per host. INPUTS,
built from the rows and from BUILT (the role variables made from several settings or the inventory
groups), maps them onto the roles' variables: it is the only definition of that mapping. Each role
variable in playbooks/site.yml and vars/launch.yml takes its value from it (the lookup
multinode.horovod.cluster_input), and the gate (gate.py) checks the same values with the roles' rules
before any play runs; tests/unit/test_site_mapping.py runs site.yml with stand-in roles and compares
what they receive with ``role_inputs``, and tests/unit/test_settings_table.py checks the lookups, the
example inventory and the README against the table.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from ansible_collections.multinode.horovod.plugins.module_utils import defaults
from ansible_collections.multinode.horovod.plugins.module_utils.numbers import positive, whole
from ansible_collections.multinode.horovod.plugins.module_utils.paths import strip_slash
from ansible_collections.multinode.horovod.plugins.module_utils.values import switch
from ansible_collections.multinode.horovod.plugins.module_utils.worker_reports import gpu_count
from ansible_collections.multinode.horovod.plugins.plugin_utils import roles

GROUP_CLUSTER, GROUP_MASTER, GROUP_WORKERS = "horovod_cluster", "horovod_master", "horovod_workers"
UNKNOWN_SWITCH = "horovod_unknown_variables"  # unknown names: error (default) or warn
TRUST_SWITCH = "horovod_trust_workers"  # the workers may act as root on the master (mpi, mesh, elastic)


def _role_default(variable: str) -> Any:
    """The default of a role variable, for the setting that becomes it and nothing else."""
    return roles.defaults(next(role for role in roles.ROLES if variable.startswith(f"{role}_")))[variable]


_FROM_ROLE: Any = object()  # a setting's default: the default of the role variable it becomes


@dataclass(frozen=True)
class Setting:
    """One inventory setting of the site, one row of SETTINGS: its name, its kind (str, int, bool,
    list, dict_list), its one-line doc, the role variables that take its value as it is (`becomes`), its
    default, whether it is one value for the whole cluster or per host, and the values it may take."""

    name: str
    kind: str
    doc: str
    becomes: tuple[str, ...] = ()
    default: Any = None
    cluster_wide: bool = True
    choices: tuple[str, ...] = ()
    node_field: str = ""  # a per-host setting: the field of a node ({name, address, slots}) it decides


def _row(
    name: str,
    kind: str,
    doc: str,
    becomes: tuple[str, ...] = (),
    default: Any = _FROM_ROLE,
    *,
    default_of: str = "",
    per_host: str = "",
    choices: tuple[str, ...] = (),
) -> Setting:
    """A row of SETTINGS. Unless given, the default is the role's default of `default_of`, else of the
    first variable the setting becomes (none for a setting that becomes none), so no default is written twice.
    `per_host`: the setting is one per host, and decides that field of the host's node."""
    if default is _FROM_ROLE:
        source = default_of or (becomes[0] if becomes else "")
        default = _role_default(source) if source else None
    return Setting(name, kind, doc, becomes, default, not per_host, choices, per_host)


# The site's settings, one row each: everything else that lists them (INPUTS below, the cluster_input
# lookups of playbooks/site.yml and vars/launch.yml, inventories/example and the README's table) is
# built from this table or checked against it (tests/unit/test_settings_table.py). A setting the site
# hands a role as it is names that role variable in `becomes`; one that only goes into a larger value
# is used by an entry of BUILT below.
SETTINGS: tuple[Setting, ...] = (
    _row("horovod_shared_storage", "str", "nfs (the master exports) or existing (a shared file system already mounted "
         "on every node)", default="nfs", choices=("nfs", "existing")),
    _row("horovod_share_root", "str", "mounted into every container at the same path",
         ("docker_horovod_share_root",)),
    _row("horovod_share_dir", "str", "the shared directory, read-write everywhere: data, checkpoints",
         ("horovod_launch_share_dir",)),
    # None: horovod_share_root/artifacts (settings_of derives it, so it follows the share root).
    _row("horovod_artifact_dir", "str", "what every node executes; only the master writes it",
         ("horovod_launch_artifact_dir",), None),
    # no_root_squash: the containers run as root and write the share (exported to the cluster only).
    _row("horovod_nfs_export_options", "list", "the share's export options (exported to the workers only)",
         default=["rw", "sync", "no_subtree_check", "no_root_squash"]),
    _row("horovod_nfs_mount_options", "list", "the workers' mount options of the share",
         default_of="nfs_client_default_options"),
    _row("horovod_image", "str", "a pinned tag, never latest", ("docker_horovod_image",)),
    _row("horovod_image_archive", "str", "air-gapped: load the image from this archive",
         ("docker_horovod_image_archive",)),
    _row("horovod_image_archive_checksum", "str", "sha256:<hex> of that archive, checked before a load",
         ("docker_horovod_image_archive_checksum",)),
    _row("horovod_container_name", "str", "the Horovod container on every node",
         ("docker_horovod_container_name", "container_sshd_container_name", "ssh_trust_container_name",
          "horovod_launch_container")),
    _row("horovod_shm_size", "str", "the container's /dev/shm", ("docker_horovod_shm_size",)),
    _row("horovod_container_ulimits", "dict_list", "the container's [{name, soft, hard}] of memlock, stack, nofile",
         ("docker_horovod_ulimits",)),
    _row("horovod_extra_ca_bundle", "str", "PEM file for a TLS-inspecting proxy (pip, registries)",
         ("docker_horovod_extra_ca_bundle",)),
    _row("horovod_pip_packages", "dict_list", "[{name, version}] installed in every container",
         ("docker_horovod_pip_packages",)),
    _row("horovod_ssh_port", "int", "sshd inside the containers",
         ("container_sshd_port", "ssh_trust_port", "horovod_launch_ssh_port")),
    _row("horovod_network_interfaces", "list", "the fast NIC, e.g. [ens1f0]; empty: horovodrun chooses",
         ("horovod_launch_network_interfaces",)),
    _row("horovod_train_command", "list", "what every rank runs; empty: the bundled example",
         ("horovod_launch_command",)),
    _row("horovod_run_name", "str", "empty: a name made from what defines the run", ("horovod_launch_run_name",)),
    _row("horovod_launcher", "str", "horovodrun (Horovod) or torchrun (PyTorch's own: DDP, FSDP, DeepSpeed)",
         ("horovod_launch_launcher",), choices=("horovodrun", "torchrun")),
    _row("horovod_rdzv_port", "int", "torchrun's rendezvous port on the first host", ("horovod_launch_rdzv_port",)),
    _row("horovod_slots", "int", "processes on this host; default: its GPUs, 1 where there are none",
         per_host="slots"),
    _row("horovod_node_address", "str", "the address the other nodes use; default: ansible_host, else the name",
         per_host="address"),
    _row("horovod_gpu_ids", "list", "the GPUs (nvidia-smi -L indexes) this host's container gets; empty: every GPU",
         ("docker_horovod_gpu_ids",), per_host="gpu_ids"),
    # Modes in which root on a worker can act as root on the master (SECURITY.md, "Trusting the workers"):
    # the mpi controller, the key mesh, elastic runs. They need this one decision, by name.
    _row(TRUST_SWITCH, "bool", "true: root on every worker may act as root in the master's container (mpi, "
         "ssh_trust_mesh and elastic runs need it)", ("ssh_trust_trust_workers", "horovod_launch_trust_workers"),
         default=False),
    _row(UNKNOWN_SWITCH, "str", "warn: an unknown horovod_* or role variable only warns", default="error",
         choices=("error", "warn")),
)  # fmt: skip
BY_NAME = {setting.name: setting for setting in SETTINGS}
# {field of a node: the per-host setting that decides it}: address -> horovod_node_address, slots -> horovod_slots.
NODE_FIELDS = {setting.node_field: setting.name for setting in SETTINGS if setting.node_field}
PATH_SETTINGS = ("horovod_share_root", "horovod_share_dir", "horovod_artifact_dir")


def _yaml_kind(value: Any) -> str:
    for kind, word in ((bool, "a boolean"), (str, "a string"), (int, "a number"), (float, "a number")):
        if isinstance(value, kind):
            return word
    return "a mapping" if isinstance(value, Mapping) else "a list" if isinstance(value, list | tuple) else "empty"


def type_problem(setting: Setting, value: Any) -> str | None:
    """Why `value` is not of the setting's kind (strictly: a string is not a list), or None."""
    if setting.kind == "int":
        return None if whole(value) is not None else f"{value!r} is not a whole number"
    if setting.kind == "bool":
        return None if switch(value) is not None else f"{value!r} is not true or false"
    if setting.kind == "str":
        if isinstance(value, bool | list | tuple | dict) or value is None:
            return f"{value!r} is not a string"
        if setting.choices and str(value) not in setting.choices:
            return f"{value!r} is not one of {', '.join(setting.choices)}"
        return None
    return _list_problem(setting, value)


def _list_problem(setting: Setting, value: Any) -> str | None:
    if not isinstance(value, list | tuple):
        # A string of several parts ("hard,nosuid", "eth0 eth1") is several items: one item of them all
        # would be refused later (an NFS option may not hold a comma).
        hint = ""
        if isinstance(value, str):
            parts = [part for part in re.split(r"[,\s]+", value) if part]
            hint = (
                f"; write one item each: [{', '.join(parts)}]" if len(parts) > 1 else f"; for one item write [{value}]"
            )
        return f"{value!r} is {_yaml_kind(value)}, not a list{hint}"
    if setting.kind == "list":
        bad = [item for item in value if isinstance(item, bool | list | tuple | dict) or item is None]
        return f"item {bad[0]!r} is not a string or number" if bad else None
    bad = [item for item in value if not isinstance(item, Mapping)]
    return f"item {bad[0]!r} is not a mapping such as {{name: tqdm, version: 4.66.5}}" if bad else None


def _normalise(setting: Setting, value: Any) -> Any:
    if setting.kind == "int":
        return whole(value)
    if setting.kind == "bool":
        return switch(value)
    if setting.kind == "list":
        return [str(item) for item in value]
    if setting.name in PATH_SETTINGS:
        return strip_slash(str(value))
    return str(value) if setting.kind == "str" else value


def settings_of(host_vars: Mapping[str, Any]) -> dict[str, Any]:
    """The site's settings for one host: the inventory's values (normalised) over the defaults.
    A value of the wrong type is passed through unchanged: the gate reports it."""
    out = {}
    for setting in SETTINGS:
        value = host_vars.get(setting.name, setting.default)
        out[setting.name] = value if value is None or type_problem(setting, value) else _normalise(setting, value)
    if out["horovod_artifact_dir"] is None:
        root = out["horovod_share_root"]
        out["horovod_artifact_dir"] = f"{root}/{defaults.ARTIFACT_DIR_NAME}" if isinstance(root, str) else root
    return out


# The gate's report, which validate_inventory.yml sets on every host with set_fact before any module ran
# on a node: its ``nodes`` are the per-host values the gate judged ({name: {address, slots}}).
GATE_FACT = "__horovod_gate"
# A node's module result may carry ansible_facts, which its root chooses; Ansible injects them as variables
# above the inventory's (host facts outrank inventory host_vars). These decide what every other node
# trusts (the NFS clients, sshd's from=, horovodrun's -H): read from the gate's judgement, never from there.
JUDGED = ("horovod_node_address", "horovod_slots", "horovod_gpu_ids", "ansible_host")
Judged = Mapping[str, Mapping[str, Any]]


def from_facts(host_vars: Mapping[str, Any]) -> list[str]:
    """The JUDGED variables of a host that a fact it returned sets (its ``ansible_facts`` holds them)."""
    facts = host_vars.get("ansible_facts")
    return [name for name in JUDGED if isinstance(facts, Mapping) and name in facts]


def _inventory_only(name: str, host_vars: Mapping[str, Any]) -> None:
    forged = from_facts(host_vars)
    if forged:
        raise ValueError(
            f"{name}: {forged[0]} is set by a fact the node returned (ansible_facts of a module result on it), "
            "which Ansible puts above the inventory's value. A node never chooses its own address or slots: "
            "check that node, clear the fact cache (ansible-playbook --flush-cache), and run the playbook "
            "through its gate (playbooks/gate.yml), which records the inventory's values first"
        )


def judged_nodes(names: Sequence[str], hostvars: Mapping[str, Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    """{name: {address, slots, gpu_ids}}: each node's address, horovod_slots and horovod_gpu_ids (None: not
    set) as the inventory gives them, what the gate judges and publishes for every later play."""
    out = {}
    for name in names:
        host = hostvars[name]
        _inventory_only(name, host)
        out[name] = {
            "address": address_of(name, host),
            "slots": positive(host.get("horovod_slots")),
            "gpu_ids": host.get("horovod_gpu_ids"),
        }
    return out


def address_of(name: str, host_vars: Mapping[str, Any], judged: Judged | None = None) -> str:
    """The address the other nodes reach a node at: the gate's judgement when there is one."""
    if judged and name in judged:
        return str(judged[name]["address"])
    _inventory_only(name, host_vars)
    return str(host_vars.get("horovod_node_address") or host_vars.get("ansible_host") or name)


def _is_ipv4(address: str) -> bool:
    try:
        return ipaddress.ip_address(address).version == 4
    except ValueError:
        return False


def _read_only(options: Any, first: bool) -> list[str]:
    """Share options for the artifact directory: ``ro`` instead of ``rw``."""
    if not isinstance(options, list):
        return []
    kept = [option for option in options if option not in ("rw", "ro")]
    return ["ro", *kept] if first else [*kept, "ro"]


class Site:
    """What the mapping reads: the inventory groups and each host's variables (Ansible's hostvars, or
    the gate's plain copy), read only as far as a value needs them.

    `settings`: the gate's settings per host (checked, a bad value replaced by its default); else
    each host's are read from its variables. `node_ips`: {node: IPv4 addresses} as the nodes resolve
    them (site.yml's sshd play); without it only a node given by an IPv4 address has a known one."""

    def __init__(
        self,
        groups: Mapping[str, Sequence[str]],
        hostvars: Mapping[str, Mapping[str, Any]],
        settings: Mapping[str, Mapping[str, Any]] | None = None,
        node_ips: Mapping[str, Sequence[str]] | None = None,
        judged: Judged | None = None,
    ) -> None:
        self.groups, self.hostvars, self.node_ips, self.judged = groups, hostvars, node_ips, judged
        self._settings: dict[str, Mapping[str, Any]] = dict(settings or {})

    @cached_property
    def master(self) -> str:
        masters = list(self.groups.get(GROUP_MASTER) or [])
        return masters[0] if masters else ""

    @cached_property
    def names(self) -> list[str]:
        """The nodes, the master first."""
        return [name for name in dict.fromkeys([self.master, *(self.groups.get(GROUP_WORKERS) or [])]) if name]

    @cached_property
    def nodes(self) -> list[dict[str, Any]]:
        """[{name, address, slots}]: slots from horovod_slots, else the GPUs the probe found, else 1."""
        return nodes(self.names, self.hostvars, self.judged)

    def settings(self, host: str) -> Mapping[str, Any]:
        if host not in self._settings:
            self._settings[host] = settings_of(self.hostvars[host])
        return self._settings[host]

    def address(self, node: str) -> str:
        return address_of(node, self.hostvars[node], self.judged)

    def ips(self, node: str) -> list[str] | None:
        """The node's IPv4 addresses, None when they are not known here."""
        if self.node_ips is not None:
            return list(self.node_ips.get(node, []))
        address = address_of(node, self.hostvars[node], self.judged)
        return [address] if _is_ipv4(address) else None


GPUS_FOUND = "docker_horovod_gpu_count"  # what the probe (docker_horovod's detection) found on a host


def slots_of(
    name: str, host_vars: Mapping[str, Any], judged: Judged | None = None, listed: Sequence[Any] | None = None
) -> dict[str, Any]:
    """How many processes a host offers and the GPUs it gives its container, the one decision the gate's
    mapping and the probe play share: {slots, source (what decided it, for the probe's report), problem
    ("" or why the run must stop)}.

    horovod_slots when set, else the GPUs of horovod_gpu_ids when set, else the GPUs the probe found
    (through the boundary), else 1. With `judged` (the gate's), horovod_slots and horovod_gpu_ids are the
    gate's; without it, a value a node's own facts set is refused. A problem: an index of horovod_gpu_ids
    that the driver does not list (`listed`: the indexes ``nvidia-smi -L`` gave, docker_horovod_info's
    gpus.indexes; None before the probe), and horovod_slots above the GPUs given or found (the probe has
    found them by then; before, GPUS_FOUND is not set)."""
    if judged and name in judged:
        own, given = positive(judged[name]["slots"]), judged[name].get("gpu_ids")
    else:
        _inventory_only(name, host_vars)
        own, given = positive(host_vars.get("horovod_slots")), host_vars.get("horovod_gpu_ids")
    reported = host_vars.get(GPUS_FOUND)
    found = positive(gpu_count(name, reported)) if reported not in (None, "") else None
    ids = [str(index) for index in given or [] if not isinstance(index, bool | dict | list)]
    gpus = len(ids) or found
    source = "horovod_slots" if own else f"{len(ids)} GPU(s) of horovod_gpu_ids" if ids else f"{gpus or 0} GPU(s) found"
    problem = ""
    unlisted = [index for index in ids if listed is not None and index not in {str(i) for i in listed}]
    if unlisted:
        problem = (
            f"horovod_gpu_ids on {name}: GPU {', '.join(unlisted)} is not one the NVIDIA driver lists there "
            f"(nvidia-smi -L: {', '.join(str(i) for i in listed or []) or 'none'}). Give indexes that nvidia-smi -L "
            "lists, or remove horovod_gpu_ids to give the container every GPU."
        )
    elif own and gpus and own > gpus:
        has = f"horovod_gpu_ids gives it {gpus} GPU(s)" if ids else f"the node has {gpus} GPU(s) (nvidia-smi -L)"
        problem = (
            f"horovod_slots is {own} on {name}, but {has}. Lower horovod_slots to at most {gpus}, or remove it to "
            "run one process per GPU."
        )
    return {"slots": own or gpus or 1, "source": source, "problem": problem}


def nodes(
    names: Sequence[str], hostvars: Mapping[str, Mapping[str, Any]], judged: Judged | None = None
) -> list[dict[str, Any]]:
    """The hosts as the roles take them: name, the address the other nodes use, and slots (slots_of). With
    `judged` (the gate's), address and horovod_slots are the gate's; without it, a value a node's own facts
    set is refused."""
    out = []
    for name in names:
        host = hostvars[name]
        out.append(
            {"name": name, "address": address_of(name, host, judged), "slots": slots_of(name, host, judged)["slots"]}
        )
    return out


OMIT = object()  # a value the site leaves to the role (not known before the nodes are reached)
IMAGE_READ = "__horovod_container_image"  # what container_images.yml registers on every node
IMAGE_ID_RE = re.compile(r"sha256:[0-9a-f]+")  # as `docker container inspect --format {{.Image}}` prints it
Value = Callable[[Site, str], Any]


@dataclass(frozen=True)
class Input:
    """How the site sets one role variable on a host: `value`, made from `settings` (which a message
    about it names) or, with `addresses`, from the nodes' addresses. With `honoured`, the inventory's
    own value of the role variable is taken when it sets one."""

    value: Value
    settings: tuple[str, ...] = ()
    addresses: bool = False
    honoured: bool = False


def _setting(name: str) -> Input:
    return Input(lambda site, host: site.settings(host)[name], (name,))


def _exports(site: Site, host: str) -> list[dict[str, Any]]:
    settings = site.settings(host)
    clients = [node["address"] for node in site.nodes if node["name"] != site.master]
    options = settings["horovod_nfs_export_options"]
    return [
        {"path": settings["horovod_share_dir"], "clients": clients, "options": options},
        {"path": settings["horovod_artifact_dir"], "clients": clients, "options": _read_only(options, True)},
    ]


def _mounts(site: Site, host: str) -> list[dict[str, Any]]:
    settings = site.settings(host)
    server, options = site.address(site.master), settings["horovod_nfs_mount_options"]
    share, artifacts = settings["horovod_share_dir"], settings["horovod_artifact_dir"]
    return [
        {"server": server, "path": share, "mountpoint": share, "options": options},
        {"server": server, "path": artifacts, "mountpoint": artifacts, "options": _read_only(options, False)},
    ]


def _nfs(site: Site, host: str) -> bool:
    return site.settings(host)["horovod_shared_storage"] == "nfs"


def _share_mounts(site: Site, host: str) -> list[str]:
    """On a worker the NFS mounts must be in the container before anything runs there."""
    settings = site.settings(host)
    nfs_worker = _nfs(site, host) and host != site.master
    return [settings["horovod_share_dir"], settings["horovod_artifact_dir"]] if nfs_worker else []


def _own(variable: str, otherwise: Value) -> Value:
    """The inventory's value of `variable` on the host when it sets one, else `otherwise`."""

    def value(site: Site, host: str) -> Any:
        own = site.hostvars[host]
        return own[variable] if variable in own else otherwise(site, host)

    return value


def _listen(site: Site, host: str) -> Any:
    """sshd listens on the node's cluster address only."""
    ips = site.ips(host)
    return OMIT if ips is None else ips


def _allow(site: Site, host: str) -> Any:
    """Root may log in from the cluster's addresses only."""
    del host
    known = [site.ips(node) for node in (site.node_ips or site.names)]
    if any(ips is None for ips in known):
        return OMIT
    return list(dict.fromkeys(ip for ips in known for ip in ips or []))


def _mesh(site: Site, host: str) -> bool:
    """Only the master holds a key (horovodrun --gloo), unless the controller is mpi (OpenMPI starts its
    daemons from the workers too) or the inventory sets ssh_trust_mesh: true on the master."""
    del host
    master = site.hostvars[site.master]
    return master.get("horovod_launch_controller", "gloo") == "mpi" or switch(master.get("ssh_trust_mesh")) is True


def _image_ids(site: Site, host: str) -> dict[str, str]:
    """{node: image ID of its container}, as playbooks/container_images.yml read them in this run (a node
    it did not reach, without the container, or with an answer that is not an image ID is left out:
    the launch preflight names the nodes it lacks)."""
    del host
    out = {}
    for name in site.names:
        read = site.hostvars[name].get(IMAGE_READ) or {}
        image = str(read.get("stdout") or "").strip() if read.get("rc", 1) == 0 else ""
        if IMAGE_ID_RE.fullmatch(image):
            out[name] = image
    return out


def _below_artifacts(name: str) -> Value:
    return lambda site, host: f"{site.settings(host)['horovod_artifact_dir']}/{name}"


def _artifacts(name: str) -> Input:
    """A launch directory in the artifact directory, unless the inventory places it."""
    variable = f"horovod_launch_{name}"
    below = {"runs_dir": "runs", "example_dir": "examples"}[name]
    return Input(_own(variable, _below_artifacts(below)), ("horovod_artifact_dir",), honoured=True)


# The role variables the site builds from several settings, the groups or the nodes (not one setting as it is).
BUILT: dict[str, Input] = {
    # The share read-write; the artifact directory (what every node executes) read-only.
    "nfs_server_exports": Input(
        _exports, ("horovod_share_dir", "horovod_artifact_dir", "horovod_nfs_export_options"), addresses=True
    ),
    "nfs_client_mounts": Input(
        _mounts, ("horovod_share_dir", "horovod_artifact_dir", "horovod_nfs_mount_options"), addresses=True
    ),
    "docker_horovod_share_mounts": Input(_share_mounts, ("horovod_share_dir", "horovod_artifact_dir")),
    "container_sshd_listen_addresses": Input(
        _own("container_sshd_listen_addresses", _listen), addresses=True, honoured=True
    ),
    "container_sshd_allow_from": Input(_own("container_sshd_allow_from", _allow), addresses=True, honoured=True),
    "ssh_trust_master": Input(lambda site, host: site.master),
    "ssh_trust_nodes": Input(
        lambda site, host: [{"name": n["name"], "address": n["address"]} for n in site.nodes], addresses=True
    ),
    "ssh_trust_mesh": Input(_mesh, honoured=True),
    "horovod_launch_hosts": Input(lambda site, host: site.nodes, ("horovod_slots",), addresses=True),
    # What the ranks execute, and the runs' scripts and logs: in the artifact directory, which only the
    # master writes (the role's rules refuse the share unless horovod_launch_allow_share_code). The
    # code's checkout goes there too, a directory per repository (the role's plan names it).
    "horovod_launch_runs_dir": _artifacts("runs_dir"),
    "horovod_launch_example_dir": _artifacts("example_dir"),
    "horovod_launch_image_ids": Input(_image_ids),
}


def role_of(variable: str) -> str:
    """The role whose variable `variable` is (by its prefix)."""
    return next(role for role in roles.ROLES if variable.startswith(f"{role}_"))


def _inputs() -> dict[str, dict[str, Input]]:
    """INPUTS: every row's role variables, then BUILT, by role in the order of roles.ROLES."""
    given = {variable: _setting(s.name) for s in SETTINGS for variable in s.becomes}
    clash = set(given) & set(BUILT)
    if clash:
        raise ValueError(f"cluster.py: {', '.join(sorted(clash))} both in a row of SETTINGS and in BUILT")
    out: dict[str, dict[str, Input]] = {role: {} for role in roles.ROLES}
    for variable, value in {**given, **BUILT}.items():
        out[role_of(variable)][variable] = value
    return out


# {role: {role variable: how the site sets it}}: the one mapping site.yml, vars/launch.yml and the gate use.
INPUTS: dict[str, dict[str, Input]] = _inputs()
BY_VARIABLE = {variable: given for inputs in INPUTS.values() for variable, given in inputs.items()}
# Where the site runs a role other than on every node.
RUNS_ON: dict[str, Callable[[Site, str], bool]] = {
    "nfs_server": lambda site, host: host == site.master and _nfs(site, host) and len(site.names) > 1,
    "nfs_client": lambda site, host: host != site.master and _nfs(site, host),
    "horovod_launch": lambda site, host: host == site.master,
}


def roles_on(site: Site, host: str) -> list[str]:
    """The roles the site runs on `host`."""
    return [role for role in INPUTS if RUNS_ON.get(role, lambda site, host: True)(site, host)]


def value_of(site: Site, host: str, variable: str) -> Any:
    """What the site hands the role variable on `host` (OMIT: left to the role)."""
    return BY_VARIABLE[variable].value(site, host)


def role_inputs(site: Site, host: str) -> dict[str, dict[str, Any]]:
    """{role: {variable: value}}: what the site hands each role it runs on `host`."""
    out = {}
    for role in roles_on(site, host):
        given = {variable: value_of(site, host, variable) for variable in INPUTS[role]}
        out[role] = {variable: value for variable, value in given.items() if value is not OMIT}
    return out


def setting_names(site: Site, host: str, role: str) -> dict[str, str]:
    """{role variable: the setting(s) it comes from} for what the site hands `role` on `host`, and for a
    list of nodes the fields' settings ({"horovod_launch_hosts.slots": "horovod_slots"}): handed to the
    role (``__<role>_setting_names``) so that its own checks name what the user set. A variable the site
    takes from the inventory's own value (honoured, and set on `host`) keeps its own name."""
    own = site.hostvars[host]
    out = {}
    for variable, given in INPUTS[role].items():
        if given.honoured and variable in own:
            continue
        if given.settings:
            out[variable] = " / ".join(given.settings)
        if given.addresses:
            out.update({f"{variable}.{field}": name for field, name in NODE_FIELDS.items()})
    return out


def sources(variable: str) -> tuple[str, ...]:
    """The settings a role variable is made from (none for one the site does not set)."""
    given = BY_VARIABLE.get(variable)
    return given.settings if given else ()
