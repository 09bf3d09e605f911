# Copyright: multinode.horovod contributors
# SPDX-License-Identifier: GPL-3.0-or-later
"""Input rules of the nfs_server role: what may go into a line of its exports file.

Each value ends up in ``<path> <client>(<option>,<option>) ...``, so each is accepted only in a shape
that cannot end the option list, add a client or start a line. The host-name, address and
security-flavour rules serve nfs_client_rules too.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

from ansible_collections.multinode.horovod.plugins.module_utils import defaults, values
from ansible_collections.multinode.horovod.plugins.module_utils.paths import COMPONENT_RE, path_problem, strip_slash

Problems = list[tuple[str, str]]
Address = ipaddress.IPv4Address | ipaddress.IPv6Address
Network = ipaddress.IPv4Network | ipaddress.IPv6Network

ADDRESS_RE = re.compile(r"[0-9A-Fa-f.:]+")
NETWORK_RE = re.compile(r"([0-9A-Fa-f.:]+)/(0|[1-9][0-9]{0,2})")
NUMBER_RE = re.compile(r"0|[1-9][0-9]{0,9}")
UUID_RE = re.compile(r"[0-9A-Fa-f]{8}(-?)[0-9A-Fa-f]{4}\1[0-9A-Fa-f]{4}\1[0-9A-Fa-f]{4}\1[0-9A-Fa-f]{12}")
ACCOUNT_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_.-]{0,31}|0|[1-9][0-9]{0,9}")
MODE_RE = re.compile(r"[0-7]{3,4}")
# Characters that end an option list, add a client, quote, comment or start a new line in exports(5).
BREAKING_RE = re.compile(r"[\s(),*\"'#\\]")
SEC_FLAVOURS = ("sys", "krb5", "krb5i", "krb5p")
SEC_SHAPE = "security flavours from " + ", ".join(SEC_FLAVOURS) + " joined by ':' (sec=krb5p:krb5i)"
MAX_ID = 2**32 - 1
CLIENT_SHAPE = (
    "one host name (dot-separated labels of letters, digits and '-'), IPv4 or IPv6 address, or network "
    "in CIDR form such as 192.0.2.0/24, one per list item (no wildcards, netgroups, spaces, commas or "
    "parentheses; options go in `options`)"
)
EXPORT_FIELDS = ("path", "clients", "options", "owner", "group", "mode")


# Names and addresses (shared with nfs_client_rules).


def ip_address(value: str) -> Address | None:
    """`value` as an IPv4 or IPv6 address (no zone index, no leading zeros), or None."""
    if not ADDRESS_RE.fullmatch(value):
        return None
    try:
        return ipaddress.ip_address(value)
    except ValueError:
        return None


def host_problem(value: object, *, ipv6: bool = True) -> str | None:
    """Why `value` is not one host name or IP address (IPv6 only when `ipv6`), or None."""
    if not isinstance(value, str):
        return f"{value!r} is not a string"
    address = ip_address(value)
    if address is not None:
        if address.is_unspecified:
            return f"{value!r} is the unspecified address, which names no host"
        if address.version == 6 and not ipv6:
            return f"{value!r} is an IPv6 address, which cannot be written here"
        return None
    if values.is_host_name(value):
        return None
    return f"{value!r} is not a host name or an IP address"


def sec_ok(value: str) -> bool:
    """Whether `value` is a ':'-joined list of distinct security flavours."""
    flavours = value.split(":")
    return all(flavour in SEC_FLAVOURS for flavour in flavours) and len(set(flavours)) == len(flavours)


def number_ok(value: str, low: int = 0, high: int = MAX_ID) -> bool:
    """Whether `value` is a plain decimal number from `low` to `high`."""
    return bool(NUMBER_RE.fullmatch(value)) and low <= int(value) <= high


def safe_path_ok(value: str) -> bool:
    """Whether `value` is an absolute, normalised path of safe characters (anywhere, '/' included)."""
    if value == "/":
        return True
    parts = value.split("/")
    return value.startswith("/") and all(part not in (".", "..") and COMPONENT_RE.fullmatch(part) for part in parts[1:])


def data_path_problem(value: object) -> str | None:
    """paths.path_problem, also refusing whitespace anywhere (a line break must never pass)."""
    if isinstance(value, str) and re.search(r"\s", value):
        return f"{value!r} contains whitespace or a line break; use a path without them"
    return path_problem(value)


def list_problem(value: object, example: str, field: str = "") -> str | None:
    """Why `value` (of `field`, when it is an item's) is not a list of strings, or None."""
    given = f"{field} {value!r}" if field else repr(value)
    if isinstance(value, str) or not isinstance(value, list):
        return f"{given} is not a list; give a YAML list such as {example}"
    bad = [item for item in value if not isinstance(item, str)]
    if bad:
        return f"{bad[0]!r} in {given} is not a string; quote it"
    return None


# Options, with a table per role.


class Option(NamedTuple):
    """How an option is written: ``value`` is 'none', 'required' or 'optional'; `check` tests the value."""

    value: str = "none"
    check: Callable[[str], bool] | None = None
    shape: str = ""


FLAG = Option()


def option_problems(
    options: list[str],
    table: Mapping[str, Option],
    synonyms: Mapping[str, str],
    conflicts: list[tuple[str, ...]],
    *,
    kind: str,
    breaking: re.Pattern[str],
    example: str,
) -> list[str]:
    """Every problem of a list of options: each known with a value of its shape, none repeated or contradicted."""
    found: list[str] = []
    seen: dict[str, str] = {}
    for option in options:
        bad = breaking.search(option)
        if bad:
            found.append(
                f"option {option!r} contains {bad.group()!r}, which could end the option list or add another entry; "
                f"give exactly one {kind} option per list item, such as {example}"
            )
            continue
        name, equals, value = option.partition("=")
        spec = table.get(name)
        if spec is None:
            found.append(f"option {option!r} is not a known {kind} option; use one of {', '.join(sorted(table))}")
            continue
        if equals and spec.value == "none":
            found.append(f"option {option!r}: {name} takes no value; write it as {name}")
            continue
        if not equals and spec.value == "required":
            found.append(f"option {option!r} needs a value: {name}= followed by {spec.shape}")
            continue
        if equals and spec.check is not None and not spec.check(value):
            found.append(f"option {option!r}: the value of {name} must be {spec.shape}")
            continue
        canonical = synonyms.get(name, name)
        if canonical in seen:
            found.append(f"options {seen[canonical]!r} and {option!r} set {canonical} twice; keep one")
            continue
        seen[canonical] = option
    for group in conflicts:
        given = [seen[name] for name in group if name in seen]
        if len(given) > 1:
            found.append(f"options {' and '.join(repr(option) for option in given)} contradict each other; keep one")
    return found


def locations_ok(value: str) -> bool:
    """refer=/replicas= value: path@host[+host] locations joined by ':' (hosts: names or IPv4)."""
    for location in value.split(":"):
        path, at, hosts = location.partition("@")
        if not at or not safe_path_ok(path):
            return False
        if any(host_problem(host, ipv6=False) for host in hosts.split("+")):
            return False
    return True


EXPORT_FLAGS = """
    secure insecure rw ro async sync wdelay no_wdelay hide nohide crossmnt nocrossmnt subtree_check no_subtree_check
    secure_locks insecure_locks auth_nlm no_auth_nlm nordirplus pnfs no_pnfs security_label
    root_squash no_root_squash all_squash no_all_squash acl no_acl
""".split()
EXPORT_OPTIONS: dict[str, Option] = {
    **dict.fromkeys(EXPORT_FLAGS, FLAG),
    "mountpoint": Option("optional", safe_path_ok, f"an absolute path (mountpoint={defaults.SHARE_ROOT})"),
    "mp": Option("optional", safe_path_ok, f"an absolute path (mp={defaults.SHARE_ROOT})"),
    "fsid": Option(
        "required",
        lambda value: value == "root" or number_ok(value) or bool(UUID_RE.fullmatch(value)),
        "root, a number from 0 to 4294967295 or a UUID (fsid=0)",
    ),
    "anonuid": Option("required", number_ok, "a user id from 0 to 4294967295 (anonuid=65534)"),
    "anongid": Option("required", number_ok, "a group id from 0 to 4294967295 (anongid=65534)"),
    "sec": Option("required", sec_ok, SEC_SHAPE),
    "refer": Option(
        "required", locations_ok, f"path@host[+host] locations joined by ':' (refer={defaults.SHARE_ROOT}@node-b)"
    ),
    "replicas": Option(
        "required", locations_ok, f"path@host[+host] locations joined by ':' (replicas={defaults.SHARE_ROOT}@node-b)"
    ),
}
EXPORT_SYNONYMS = {"mp": "mountpoint", "auth_nlm": "secure_locks", "no_auth_nlm": "insecure_locks"}
# Options that contradict each other (all_squash maps root too: no_root_squash would mean nothing).
EXPORT_CONFLICTS = [
    tuple(group.split("/"))
    for group in (
        "rw/ro sync/async secure/insecure wdelay/no_wdelay hide/nohide crossmnt/nocrossmnt "
        "subtree_check/no_subtree_check secure_locks/insecure_locks pnfs/no_pnfs acl/no_acl "
        "root_squash/no_root_squash all_squash/no_all_squash all_squash/no_root_squash"
    ).split()
]
EXPORT_EXAMPLE = "[rw, sync, no_subtree_check]"
# Options that open the share wider than the client list says, and what each one opens.
WEAK_OPTIONS = {
    "insecure": (
        "accepts requests from any port of a client, so any user there (not only root, who alone may use "
        "ports below 1024) can talk NFS to the server in any user's name"
    ),
    "anonuid=0": "maps the squashed users (with all_squash: every user of every client) to root",
    "anongid=0": "maps the squashed users (with all_squash: every user of every client) to root's group",
    "crossmnt": (
        "exports every file system mounted below the export too, with its options (read-write, and as root with "
        "no_root_squash), although no export names it"
    ),
    "nohide": (
        "shows this export's file system to the clients of an export above it, through that export's mount, "
        "with this one's options"
    ),
}
WEAK_FIX = "remove it, or set nfs_server_allow_weak_options: true if that is really meant"


def export_option_problems(options: object, field: str = "") -> list[str]:
    """Every problem of one export's option list (`field`: its name, when it is an item's)."""
    problem = list_problem(options, EXPORT_EXAMPLE, field)
    if problem:
        return [problem]
    return option_problems(
        options,  # type: ignore[arg-type]  # list_problem proved it a list of strings
        EXPORT_OPTIONS,
        EXPORT_SYNONYMS,
        EXPORT_CONFLICTS,
        kind="exports(5)",
        breaking=BREAKING_RE,
        example="fsid=0",
    )


def weak_option_problems(options: object) -> list[str]:
    """The refusal of each option of WEAK_OPTIONS in an option list (none when it is not a list)."""
    if not isinstance(options, list):
        return []
    return [
        f"option {option!r} {WEAK_OPTIONS[option]}; {WEAK_FIX}"
        for option in options
        if isinstance(option, str) and option in WEAK_OPTIONS
    ]


# Clients.


def any_host_problem(client: str) -> str:
    """The refusal of a client that means any host."""
    return (
        f"client {client!r} allows any host; list the cluster's own addresses instead, "
        "or set nfs_server_allow_any_client: true if that is really meant"
    )


def client_problem(client: object, allow_any: bool) -> str | None:
    """Why `client` may not be a client of an export, or None."""
    if not isinstance(client, str):
        return f"client {client!r} is not a string; use {CLIENT_SHAPE}"
    if "/" not in client:
        if client == "*":
            return None if allow_any else any_host_problem(client)
        problem = host_problem(client)
        return None if problem is None else f"client {problem}; use {CLIENT_SHAPE}"
    loose = network(client, strict=False)
    if loose is None:
        return f"client {client!r} is not a network in CIDR form; use {CLIENT_SHAPE}"
    if network(client) is None:
        return f"client {client!r} has host bits set; write the network as {loose}"
    return any_host_problem(client) if loose.prefixlen == 0 and not allow_any else None


def network(value: str, *, strict: bool = True) -> Network | None:
    """`value` as an IP network in CIDR form, or None."""
    match = NETWORK_RE.fullmatch(value)
    if not match or ip_address(match.group(1)) is None:
        return None
    try:
        return ipaddress.ip_network(value, strict=strict)
    except ValueError:
        return None


# The role's inputs.


def account_problem(field: str, value: object) -> str | None:
    """Why an owner or group is neither a user/group name nor a numeric id, or None."""
    if value is None or (isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= MAX_ID):
        return None
    if isinstance(value, str) and ACCOUNT_RE.fullmatch(value):
        return None
    return f"{field} {value!r} is not a user or group name (letters, digits, '_', '.', '-') or a numeric id"


def mode_problem(value: object) -> str | None:
    """Why a mode is not an octal string such as '0755', or None."""
    if value is None or (isinstance(value, str) and MODE_RE.fullmatch(value)):
        return None
    if isinstance(value, int) and not isinstance(value, bool):
        return f"mode {value!r} is a number (YAML reads 0755 as 493); quote it as an octal string such as '0755'"
    return f"mode {value!r} is not an octal string of 3 or 4 digits; use one such as '0755' or '2775'"


def export_problems(index: int, export: object, allow_any: bool, allow_weak: bool = False) -> list[str]:
    """Every problem of one export, each message naming the export."""
    if not isinstance(export, Mapping):
        return [f"item {index} ({export!r}) is not a mapping; give {{path, clients, options, owner, group, mode}}"]
    path = strip_slash(export.get("path"))
    where = f"the export of {path!r}" if isinstance(path, str) else f"item {index}"
    found = [f"field {key!r} is unknown; use {', '.join(EXPORT_FIELDS)}" for key in export if key not in EXPORT_FIELDS]
    if "path" not in export:
        found.append(f"path is missing; give the directory to export, such as {defaults.SHARE_DIR}")
    else:
        problem = data_path_problem(path)
        if problem:
            found.append(f"path {problem}")
    clients = export.get("clients")
    if clients is None or clients == []:
        found.append("clients is missing or empty; list the hosts, addresses or networks that may mount it")
    elif isinstance(clients, str) or not isinstance(clients, list):
        found.append(f"clients {clients!r} is not a list; give a YAML list such as [192.0.2.11, 192.0.2.12]")
    else:
        found += [problem for problem in (client_problem(client, allow_any) for client in clients) if problem]
        repeated = sorted({client for client in clients if isinstance(client, str) and clients.count(client) > 1})
        found += [f"client {client!r} is listed twice; list it once" for client in repeated]
    if export.get("options") is not None:
        found += export_option_problems(export["options"], "options")
        found += [] if allow_weak else weak_option_problems(export["options"])
    found += [problem for problem in (account_problem(key, export.get(key)) for key in ("owner", "group")) if problem]
    mode = mode_problem(export.get("mode"))
    if mode:
        found.append(mode)
    return [f"{where}: {problem}" for problem in found]


def problems(inputs: Mapping[str, Any]) -> Problems:
    """Every problem of nfs_server's inputs as (variable, message); empty when they are sound."""
    found: Problems = []
    switches = {}
    for switch in ("nfs_server_allow_any_client", "nfs_server_allow_weak_options"):
        switches[switch] = values.switch(inputs.get(switch, False))
        if switches[switch] is None:
            found.append((switch, f"{inputs[switch]!r} is not a boolean; use true or false"))
    allow_any, allow_weak = (bool(value) for value in switches.values())
    if "nfs_server_default_options" in inputs:
        default_options = inputs["nfs_server_default_options"]
        found += [
            ("nfs_server_default_options", problem)
            for problem in [
                *export_option_problems(default_options),
                *([] if allow_weak else weak_option_problems(default_options)),
            ]
        ]
    exports = inputs.get("nfs_server_exports", [])
    if isinstance(exports, str) or not isinstance(exports, list):
        return [*found, ("nfs_server_exports", f"{exports!r} is not a list; give a list of {{path, clients, options}}")]
    for index, export in enumerate(exports, start=1):
        found += [("nfs_server_exports", problem) for problem in export_problems(index, export, allow_any, allow_weak)]
    paths = [strip_slash(export.get("path")) for export in exports if isinstance(export, Mapping)]
    repeated = sorted({path for path in paths if isinstance(path, str) and paths.count(path) > 1})
    found += [
        ("nfs_server_exports", f"path {path!r} is exported more than once; merge the entries into one")
        for path in repeated
    ]
    return found


def export_lines(exports: list[Mapping[str, Any]], default_options: list[str]) -> list[str]:
    """The role's exports file, one line per export: ``<path> <client>(<options>) ...``, the path
    without its trailing ``/``, the export's own options or else the role's defaults."""
    lines = []
    for export in exports:
        options = ",".join(export["options"] if export.get("options") is not None else default_options)
        clients = " ".join(f"{client}({options})" for client in export["clients"])
        lines.append(f"{strip_slash(export['path'])} {clients}")
    return lines
