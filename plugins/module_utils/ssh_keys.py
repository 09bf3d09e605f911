# Copyright: multinode.horovod contributors
# SPDX-License-Identifier: GPL-3.0-or-later
"""The OpenSSH texts the ssh roles read: public keys, known_hosts and authorized_keys lines, and a
private key's public half as ssh-keygen derives it. Used by the modules container_sshd_info and
ssh_trust_info (on the managed host) and the ssh_trust filters (on the controller)."""

from __future__ import annotations

import base64
import grp
import os
import pwd
import re
import stat
import unicodedata
from collections.abc import Callable, Iterable, Sequence
from typing import Any

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
# An address written as an IPv4 or IPv6 address (anything else is a host name, resolved on the node).
IP_RE = re.compile(r"^([0-9.]+|[0-9A-Fa-f:.]*:[0-9A-Fa-f:.]*)$")
LOOPBACK_RE = re.compile(r"^(127[.]|::1$)")

Run = Callable[[list[str]], tuple[int, str, str]]


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

    The file must hold one key of a known type on one line, which may end in a newline, and at most a
    comment (dropped) without control characters. A second line would become a known_hosts line of its
    own on every node: ``* ssh-ed25519 KEY`` there is that key for any host.
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


def content_lines(text: str) -> list[str]:
    """The lines of a file, stripped, without comments and empty lines."""
    return [line for line in (line.strip() for line in text.splitlines()) if line and not line.startswith("#")]


def pinnable(line: str) -> bool:
    """Whether a known_hosts line's second and third fields (all that is kept of a pinned line) are one
    key of a known type: nothing else of a pinned line can reach known_hosts again."""
    fields = line.split()
    return len(fields) >= 3 and not key_problem(fields[1], fields[2])


def known_host(hosts: Sequence[str], port: Any) -> str:
    """The host field of a known_hosts line for `hosts` (a node's name and address): each once,
    ``[host]:port``, or the bare host on port 22, joined by commas."""
    unique = dict.fromkeys(str(host) for host in hosts)
    return ",".join(host if int(port) == 22 else f"[{host}]:{port}" for host in unique)


def pinned_for(pinned_lines: Iterable[str], name: str, address: str) -> list[str]:
    """``"type blob"`` of the known_hosts lines pinned for a node: by its name or address, on any port."""
    alternatives = "|".join(re.escape(host) for host in (name, address))
    hosts = re.compile(r"^([^\s,]*,)*(\[(" + alternatives + r")\]:\d+|(" + alternatives + r"))(,\S*)?\s")
    keys = [" ".join(line.split()[1:3]) for line in pinned_lines if hosts.search(line)]
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


def own_keys(lines: Iterable[str], marker: str) -> list[str]:
    """Lines of authorized_keys ssh_trust made: their last word is ``MARKER:node``. Lines without the
    marker, or with it anywhere but as the last word, are someone else's."""
    ours = re.compile(r"\s" + re.escape(marker) + r":\S+\s*$")
    return [line for line in lines if ours.search(line)]


def _name(lookup: Callable[[int], Any], number: int) -> str:
    try:
        return str(lookup(number)[0])
    except KeyError:
        return str(number)


def private_key(path: str, run: Run) -> dict[str, Any] | None:
    """Mode (``"0600"``), owner and group of a private key file, and ``public_key``: ``"type blob"`` as
    ``ssh-keygen -y`` derives it when the key loads without a passphrase (ssh-keygen also refuses a key
    that others may read), else ""; None when there is no file."""
    try:
        info = os.stat(path)
    except OSError:
        return None
    rc, out, _err = run(["ssh-keygen", "-y", "-P", "", "-f", path])
    fields = out.split() if rc == 0 else []
    return {
        "mode": f"{stat.S_IMODE(info.st_mode):04o}",
        "owner": _name(pwd.getpwuid, info.st_uid),
        "group": _name(grp.getgrgid, info.st_gid),
        "public_key": " ".join(fields[:2]) if len(fields) >= 2 else "",
    }
