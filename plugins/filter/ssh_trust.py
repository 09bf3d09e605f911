# Copyright: multinode.horovod contributors
# SPDX-License-Identifier: GPL-3.0-or-later
"""Filters of the ssh_trust role: every decision the role takes from what it read on the nodes.

The tasks gather facts (files read on each node, getent results, the keys made, each container's row
of the ssh matrix) and hand them, or ``hostvars``, to these filters; the role's ``vars/main.yml`` holds
constants only. Each decision is one function here, unit-tested in tests/unit/test_ssh_trust_filters.py
(which also holds what the role's former Jinja returned for sample clusters). The role's input rules
are plugins/module_utils/ssh_trust_rules.py.

Facts the role sets on each node and these filters read through ``hostvars``:

- ``__ssh_trust_host_keys``: the node's container host keys, ``"type blob"`` (tasks/read.yml);
- ``__ssh_trust_bad_host_keys``: its host key files that are not one key each, and why (tasks/read.yml);
- ``__ssh_trust_pinned_lines``: the lines of the node's known_hosts that pin one key (tasks/read.yml);
- ``__ssh_trust_keypair``: the result of the node's openssh_keypair task (tasks/main.yml);
- ``__ssh_trust_listing``: the node's one read (tasks/read.yml), for its client key when that task skipped;
- ``__ssh_trust_row``: the result of the node's ssh loop (tasks/verify.yml).
"""

from __future__ import annotations

import base64
import re
import unicodedata
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from ansible.errors import AnsibleFilterError
from ansible.module_utils.parsing.convert_bool import boolean
from ansible_collections.multinode.horovod.plugins.filter.listing import listed_derived_keys

HOST_KEYS = "__ssh_trust_host_keys"
BAD_HOST_KEYS = "__ssh_trust_bad_host_keys"
PINNED_LINES = "__ssh_trust_pinned_lines"
KEYPAIR = "__ssh_trust_keypair"
LISTING = "__ssh_trust_listing"
ROW = "__ssh_trust_row"

# An address written as an IPv4 or IPv6 address (anything else is a host name, resolved on the node).
IP_RE = re.compile(r"^([0-9.]+|[0-9A-Fa-f:.]*:[0-9A-Fa-f:.]*)$")
LOOPBACK_RE = re.compile(r"^(127[.]|::1$)")
# A container host public key file, as the find of tasks/read.yml lists it.
HOST_KEY_FILE_RE = re.compile(r".*/ssh_host_\w+_key\.pub$")
# The public key types sshd offers as host keys (certificates aside). A host key file or a pinned line
# holding anything else is refused or dropped: what reaches known_hosts is one key, never a host pattern.
KEY_TYPES = (
    "ssh-ed25519",
    "ssh-rsa",
    "ecdsa-sha2-nistp256",
    "ecdsa-sha2-nistp384",
    "ecdsa-sha2-nistp521",
    "sk-ssh-ed25519@openssh.com",
    "sk-ecdsa-sha2-nistp256@openssh.com",
)
# A public key line as ssh-keygen writes it: type, blob and an optional comment, apart by blanks.
KEY_LINE_RE = re.compile(r"(\S+)[ \t]+(\S+)(?:[ \t]+(.*))?")
# Control, format (bidirectional overrides), surrogate (bytes that are no UTF-8) and line or paragraph
# separator characters: none of them belongs in a key's comment.
CONTROL_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Zl", "Zp"})
# A line of a file that holds nothing: a comment or an empty line.
BLANK_RE = re.compile(r"^(#|$)")
WHOLE_RE = re.compile(r"^(.*)$")

NOT_RUN = "no result (the ssh loop did not run)"
NO_KEY_NOTE = "(no key: ssh_trust_mesh is false)"

Nodes = Sequence[Mapping[str, Any]]
Rows = dict[str, dict[str, str]]


def _read(hostvars: Mapping[str, Any], name: str) -> bool:
    """Whether tasks/read.yml ran on the node `name` in this run (not when --limit left it out)."""
    return HOST_KEYS in (hostvars.get(name) or {})


def _fact(hostvars: Mapping[str, Any], name: str, fact: str) -> Any:
    """A fact the role set on the node `name`, which every node has once the task setting it ran."""
    try:
        return hostvars[name][fact]
    except KeyError as exc:
        raise AnsibleFilterError(f"ssh_trust: {name} has no {fact}; the role runs on every node at once") from exc


def _lines(text: str) -> list[str]:
    """The lines of a file that hold something, stripped; comments and empty lines dropped."""
    return [line for line in (line.strip() for line in text.splitlines()) if not BLANK_RE.match(line)]


def key_problem(kind: str, blob: str) -> str:
    """Why ``kind blob`` is not one public key of a known type, "" when it is: `kind` one of KEY_TYPES,
    `blob` base64 that decodes, and the type at the blob's start (an SSH string: a 4-byte big-endian
    length, then the name) is `kind`, as sshd and ssh read a key."""
    if kind not in KEY_TYPES:
        return f"holds a key of type {kind[:60]!a}, not one of {', '.join(KEY_TYPES)}"
    try:
        data = base64.b64decode(blob, validate=True)
    except ValueError:
        return f"holds a key of type {kind} whose blob is not base64"
    size = int.from_bytes(data[:4], "big")
    if len(data) < 4 + size:
        return f"holds a key of type {kind} whose blob is cut short"
    if data[4 : 4 + size] != kind.encode():
        return f"holds a key of type {kind} whose blob is of type {data[4 : 4 + size][:60].decode('latin-1')!a}"
    return ""


def host_key(text: str) -> tuple[str, str]:
    """``("type blob", "")`` of a host public key file's text, or ``("", why not)``.

    The file must hold one key of a known type (key_problem) on one line, which may end in a newline, and
    at most a comment (dropped) without control characters. A second line would become a known_hosts line
    of its own on every node: ``* ssh-ed25519 KEY`` there is that key for any host.
    """
    lines = text.removesuffix("\n").split("\n")
    if len(lines) > 1:
        return "", f"holds {len(lines)} lines, not one key on one line"
    match = KEY_LINE_RE.fullmatch(lines[0])
    if not match:
        return "", "holds no key" if not lines[0].strip() else "is not one key as TYPE BLOB [COMMENT]"
    kind, blob, comment = match.group(1), match.group(2), match.group(3) or ""
    problem = key_problem(kind, blob)
    if not problem:
        control = [char for char in comment if unicodedata.category(char) in CONTROL_CATEGORIES]
        problem = f"holds a comment with the control character U+{ord(control[0]):04X}" if control else ""
    return ("", problem) if problem else (f"{kind} {blob}", "")


def _pinnable(line: str) -> bool:
    """Whether a known_hosts line's second and third fields (all that _pinned_for keeps of it) are one key
    of a known type (key_problem): nothing else of a pinned line can reach known_hosts again."""
    fields = line.split()
    return len(fields) >= 3 and not key_problem(fields[1], fields[2])


# --- tasks/read.yml ------------------------------------------------------------------------------


def listed_files(listing: str) -> list[dict[str, str]]:
    """The files tasks/read.yml's one command printed, as its slurp loop would have returned them
    (``[{source, content}]``, content in base64): each file is a line ``@@ PATH`` and a line of its
    content in base64 (empty for an empty file)."""
    files = []
    lines = (listing or "").splitlines()
    for i, line in enumerate(lines):
        if line.startswith("@@ /"):  # "@@ NAME" without a slash: another section of the command
            content = lines[i + 1] if i + 1 < len(lines) and not lines[i + 1].startswith("@@ ") else ""
            files.append({"source": line[3:], "content": content.strip()})
    return files


def authorized(authorized_lines: Iterable[str], wanted: Sequence[str], sources: Sequence[str]) -> bool:
    """Whether authorized_keys (its lines, as read_files keeps them) already holds every wanted key with
    the ``from=`` option as the role's authorized_key task writes it: ``from="a,b" type blob comment``.
    Then that task would change nothing and is skipped."""
    lines = set(authorized_lines)
    option = 'from="{}"'.format(",".join(str(source) for source in sources))
    return all(f"{option} {key}" in lines for key in wanted)


def read_files(slurped: Iterable[Mapping[str, Any]], ssh_dir: str) -> dict[str, list[str]]:
    """What tasks/read.yml keeps of the files it slurped (the ``results`` of its slurp loop).

    ``host_keys``: ``"type blob"`` of every ``ssh_host_*_key.pub`` that holds one key (host_key), sorted
    as Jinja sorts (ignoring case); ``bad_host_keys``: ``"PATH why"`` for each of the others, which the
    role refuses before it writes anything (tasks/pins.yml); ``pinned_lines``: the lines of
    ``ssh_dir``/known_hosts whose key is one of a known type (_pinnable; the role writes no others);
    ``authorized_lines``: those of ``ssh_dir``/authorized_keys; both without comments and empty lines,
    stripped. A missing file has none.
    """
    files: dict[str, str] = {}
    for result in slurped or []:
        files[str(result["source"])] = base64.b64decode(result["content"]).decode("utf-8", errors="surrogateescape")
    host_keys, bad = [], []
    for path, text in files.items():
        if HOST_KEY_FILE_RE.match(path):
            key, problem = host_key(text)
            if problem:
                bad.append(f"{path} {problem}")
            else:
                host_keys.append(key)
    return {
        "host_keys": sorted(host_keys, key=str.lower),
        "bad_host_keys": bad,
        "pinned_lines": [line for line in _lines(files.get(f"{ssh_dir}/known_hosts", "")) if _pinnable(line)],
        "authorized_lines": _lines(files.get(f"{ssh_dir}/authorized_keys", "")),
    }


def host_names(nodes: Nodes) -> list[str]:
    """The nodes' addresses that are host names (not written as an IPv4 or IPv6 address)."""
    return [str(node["address"]) for node in nodes if not IP_RE.match(str(node["address"]))]


def _getent(result: Mapping[str, Any]) -> Mapping[str, Any]:
    """``getent_ahosts`` of one result of the getent loop ({} when it has none)."""
    found = (result.get("ansible_facts") or {}).get("getent_ahosts")
    return found if isinstance(found, Mapping) else {}


def unresolved(resolved: Iterable[Mapping[str, Any]]) -> list[str]:
    """The host names of the getent loop's results (``fail_key: false``) that found no address."""
    return [
        result.get("item")
        for result in resolved or []
        if not [value for value in _getent(result).values() if value is not None]
    ]


# --- keys ----------------------------------------------------------------------------------------


def key_nodes(nodes: Nodes, master: str, mesh: Any) -> list[str]:
    """Nodes that own a private key: every node when `mesh` is true by Ansible's boolean rules (so the
    string "false" that ``-e ssh_trust_mesh=false`` gives is false), else the master."""
    return [str(node["name"]) for node in nodes] if boolean(mesh, strict=False) else [master]


def from_addresses(nodes: Nodes, resolved: Iterable[Mapping[str, Any]]) -> list[str]:
    """The ``from=`` addresses of the role's authorised keys.

    Every node's address written as an IP address, then the addresses this node's getent found for
    the others (sshd matches sources by address only); never loopback, each once, in that order.
    """
    candidates = [str(node["address"]) for node in nodes]
    for result in resolved or []:
        candidates += [str(address) for address in _getent(result)]
    out: list[str] = []
    for address in candidates:
        if IP_RE.match(address) and not LOOPBACK_RE.match(address) and address not in out:
            out.append(address)
    return out


def wanted_keys(hostvars: Mapping[str, Any], owners: Sequence[str], marker: str, key_path: str = "") -> list[str]:
    """``"type blob MARKER:node"`` for each key node's public key, to authorise on every node.

    The key is the openssh_keypair result's ``public_key``; when that task was skipped (its read found the
    pair in place), the key ``ssh-keygen -y`` derived from the private key `key_path` in the node's read
    (``__ssh_trust_listing``, ``@@ derived PATH``). A node whose key does not exist (yet, in check mode)
    gives none: only what starts with ``ssh-``.
    """
    out = []
    for name in owners:
        node = hostvars.get(name) or {}
        keypair = node.get(KEYPAIR) or {}
        public = keypair.get("public_key", "")
        if not public and key_path and keypair.get("skipped"):
            public = listed_derived_keys((node.get(LISTING) or {}).get("stdout", "")).get(key_path, "")
        line = f"{public} {marker}:{name}"
        if line.startswith("ssh-"):
            out.append(line)
    return out


def own_keys(authorized_lines: Iterable[str], marker: str) -> list[str]:
    """Lines of authorized_keys this role made: their last word is ``MARKER:node``. Lines without the
    marker, or with it anywhere but as the last word, are someone else's."""
    ours = re.compile(r"\s" + re.escape(marker) + r":\S+\s*$")
    return [line for line in authorized_lines if ours.search(line)]


def stale_keys(authorized_lines: Iterable[str], wanted: Sequence[str], marker: str) -> list[str]:
    """The role's lines of authorized_keys (own_keys) for keys no longer wanted.

    A node that left, a key made anew: its line holds none of the wanted keys' blobs. Lines without
    the marker, or with it anywhere but as the last word, are never stale.
    """
    blobs = "|".join(re.escape(line.split()[1]) for line in wanted) or "none"
    kept = re.compile(r"\s(" + blobs + r")\s")
    return [line for line in own_keys(authorized_lines, marker) if not kept.search(line)]


def keyless(hostvars: Mapping[str, Any], nodes: Nodes, master: str) -> list[str]:
    """The nodes without a container host key to pin: those on which tasks/read.yml found none, and
    those this run left out (--limit) that the master's known_hosts does not pin (see known_keys)."""
    return _keyless(known_keys(hostvars, nodes, master))


def _keyless(known: Mapping[str, Sequence[str]]) -> list[str]:
    return [name for name, keys in known.items() if not keys]


# --- known_hosts ---------------------------------------------------------------------------------


def known_host(hosts: Sequence[str], port: Any) -> str:
    """The host field of a known_hosts line for `hosts` (a node's name and address): each once,
    ``[host]:port``, or the bare host on port 22, joined by commas."""
    pattern = r"\1" if int(port) == 22 else rf"[\1]:{port}"
    unique = list(dict.fromkeys(str(host) for host in hosts))
    return ",".join(WHOLE_RE.sub(pattern, host) for host in unique)


def all_pinned(hostvars: Mapping[str, Any], names: Sequence[str]) -> list[str]:
    """Every line pinned in any node's known_hosts, each once: a node that lost its file cannot re-trust
    alone (changed compares with them; what is kept for a node left out is master_pinned, never these).
    Nodes this run left out (--limit) were not read and give none."""
    return list(
        dict.fromkeys(line for name in names if _read(hostvars, name) for line in _fact(hostvars, name, PINNED_LINES))
    )


def master_pinned(hostvars: Mapping[str, Any], master: str) -> list[str]:
    """The lines pinned in the master's known_hosts as this run read it; none when it did not read the
    master. Root on a worker can write that worker's own known_hosts: pins pooled from every node would
    let it choose the key every node, the master included, trusts for a node the run leaves out."""
    return list(_fact(hostvars, master, PINNED_LINES)) if _read(hostvars, master) else []


def known_keys(hostvars: Mapping[str, Any], nodes: Nodes, master: str) -> dict[str, list[str]]:
    """``{node: ["type blob", ...]}``, the host keys known_hosts pins for every node: those read on the
    node in this run, or, for a node this run left out (``--limit``, adding a worker while the others
    train), the keys the master's known_hosts pins for it already (master_pinned), so that a run on
    some nodes keeps the others' pins as they are. A node left out that the master does not pin, and
    every node left out when the run did not read the master, has none (keyless names it)."""
    return _known_keys(hostvars, nodes, master_pinned(hostvars, master))


def _known_keys(hostvars: Mapping[str, Any], nodes: Nodes, pinned: Sequence[str]) -> dict[str, list[str]]:
    return {
        str(node["name"]): list(_fact(hostvars, str(node["name"]), HOST_KEYS))
        if _read(hostvars, str(node["name"]))
        else _pinned_for(pinned, str(node["name"]), str(node["address"]))
        for node in nodes
    }


def _pinned_for(pinned_lines: Iterable[str], name: str, address: str) -> list[str]:
    """``"type blob"`` of the lines pinned for a node: by its name or address, on any port."""
    alternatives = "|".join(re.escape(host) for host in (name, address))
    hosts = re.compile(r"^([^\s,]*,)*(\[(" + alternatives + r")\]:\d+|(" + alternatives + r"))(,\S*)?\s")
    keys = [re.sub(r"^\S+\s+(\S+)\s+(\S+).*$", r"\1 \2", line) for line in pinned_lines if hosts.search(line)]
    return list(dict.fromkeys(keys))


def key_changed(pinned: Sequence[str], current: Sequence[str]) -> bool:
    """Whether a node's host key changed: a key pinned for it (``"type blob"``) is of a type the node
    still offers but differs, or none of its pinned keys is offered any more. New key types next to
    the pinned ones are not a change; a node with nothing pinned has not changed."""
    if not pinned:
        return False
    if not set(pinned) & set(current):
        return True
    types = {key.split(" ", 1)[0] for key in current}
    return any(key.split(" ", 1)[0] in types for key in pinned if key not in current)


def changed(hostvars: Mapping[str, Any], nodes: Nodes) -> list[str]:
    """The names of the nodes whose host keys (read on each) differ from those pinned in any node's
    known_hosts (see key_changed), in the order of `nodes`. A node this run left out (--limit) was not
    read: its pins stay as they are."""
    return _changed(hostvars, nodes, all_pinned(hostvars, [str(node["name"]) for node in nodes]))


def _changed(hostvars: Mapping[str, Any], nodes: Nodes, pinned_lines: Sequence[str]) -> list[str]:
    return [
        str(node["name"])
        for node in nodes
        if _read(hostvars, str(node["name"]))
        and key_changed(
            _pinned_for(pinned_lines, str(node["name"]), str(node["address"])),
            _fact(hostvars, str(node["name"]), HOST_KEYS),
        )
    ]


def known_hosts(nodes: Nodes, known: Mapping[str, Sequence[str]], port: Any) -> list[str]:
    """The lines of the containers' known_hosts (templates/known_hosts.j2): for each node in order, one
    line per key known_keys gives it, ``host-field type blob`` (the field as known_host makes it)."""
    return [
        f"{known_host([node['name'], node['address']], port)} {key}"
        for node in nodes
        for key in known.get(str(node["name"])) or []
    ]


def bad_host_keys(hostvars: Mapping[str, Any], nodes: Nodes) -> list[str]:
    """``"node: PATH why"`` for every host key file of the nodes that is not one key (read_files), in the
    order of `nodes`. Nodes this run left out (--limit) were not read and give none."""
    return [
        f"{node['name']}: {problem}"
        for node in nodes
        for problem in (hostvars.get(str(node["name"])) or {}).get(BAD_HOST_KEYS) or []
    ]


def pins(hostvars: Mapping[str, Any], nodes: Nodes, port: Any, master: str) -> dict[str, list[str]]:
    """What tasks/pins.yml decides, from one pass over every node's pinned lines:
    ``{"changed": changed(...), "keyless": keyless(...), "known_hosts": known_hosts(...),
    "bad_host_keys": bad_host_keys(...)}``.
    The same for every node: the role works it out once per run (run_once), and every node writes the
    same known_hosts lines, so the pin set costs one pass over the cluster instead of one per node."""
    known = _known_keys(hostvars, nodes, master_pinned(hostvars, master))
    return {
        "changed": _changed(hostvars, nodes, all_pinned(hostvars, [str(node["name"]) for node in nodes])),
        "keyless": _keyless(known),
        "known_hosts": known_hosts(nodes, known, port),
        "bad_host_keys": bad_host_keys(hostvars, nodes),
    }


# --- tasks/verify.yml ----------------------------------------------------------------------------


def rows(hostvars: Mapping[str, Any], sources: Sequence[str]) -> Rows:
    """``{source: {target: "ok" or ssh's error}}`` from each key node's run of the matrix script.

    Each line is ``node<TAB>ok`` or ``node<TAB>failed<TAB>error``; an empty error reads "ssh failed".
    A node whose loop did not run (skipped, or never reached) has an empty row.
    """
    out: Rows = {}
    for source in sources:
        result = (hostvars.get(source) or {}).get(ROW) or {}
        row: dict[str, str] = {}
        for line in result.get("stdout_lines") or []:
            fields = line.split("\t")
            status = fields[1] if len(fields) > 1 else ""
            row[fields[0]] = "ok" if status == "ok" else " ".join(fields[2:]).strip() or "ssh failed"
        out[source] = row
    return out


def failures(matrix_rows: Rows, sources: Sequence[str], names: Sequence[str], source: str | None = None) -> list[str]:
    """``"source -> target: error"`` for every pair of a key node and a node that did not log in
    (only those from `source` when it is given)."""
    return [
        f"{row_name} -> {target}: {matrix_rows.get(row_name, {}).get(target, NOT_RUN)}"
        for row_name in sources
        if source is None or row_name == source
        for target in names
        if matrix_rows.get(row_name, {}).get(target, NOT_RUN) != "ok"
    ]


def matrix(matrix_rows: Rows, names: Sequence[str], sources: Sequence[str], port: Any) -> list[str]:
    """The printed ssh matrix: a title, a header of the node names, then one line per node: ``ok``,
    ``FAILED`` or ``-`` (no result) per target, and a note on the rows of nodes without a key."""
    width = max(len(name) for name in names) + 2

    def cell(text: str) -> str:
        return f"{text:<{width}}"  # as Jinja's "%-*s" | format(width, text)

    lines = [f"ssh from the container of (row) to (column), port {port}:", cell("") + "".join(map(cell, names))]
    for row_name in names:
        cells = []
        for target in names:
            result = matrix_rows.get(row_name, {}).get(target, "-") if row_name in sources else "-"
            cells.append(cell(result if result in ("ok", "-") else "FAILED"))
        note = "" if row_name in sources else NO_KEY_NOTE
        lines.append(cell(row_name) + "".join(cells) + note)
    return lines


class FilterModule:
    """multinode.horovod.ssh_trust_* filters."""

    def filters(self) -> dict[str, Callable[..., Any]]:
        return {
            "ssh_trust_read_files": read_files,
            "ssh_trust_listed_files": listed_files,
            "ssh_trust_authorized": authorized,
            "ssh_trust_host_names": host_names,
            "ssh_trust_unresolved": unresolved,
            "ssh_trust_key_nodes": key_nodes,
            "ssh_trust_from": from_addresses,
            "ssh_trust_wanted_keys": wanted_keys,
            "ssh_trust_own_keys": own_keys,
            "ssh_trust_stale_keys": stale_keys,
            "ssh_trust_keyless": keyless,
            "ssh_trust_known_keys": known_keys,
            "ssh_trust_known_host": known_host,
            "ssh_trust_changed": changed,
            "ssh_trust_known_hosts": known_hosts,
            "ssh_trust_pins": pins,
            "ssh_trust_rows": rows,
            "ssh_trust_failures": failures,
            "ssh_trust_matrix": matrix,
        }
