# Copyright: multinode.horovod contributors
# SPDX-License-Identifier: GPL-3.0-or-later
"""The primary keys of an OpenPGP key file (binary or ASCII-armoured), without gpg.

Enough of RFC 4880 / RFC 9580 to pin a repository key: packets are walked (old and new length
formats), and each primary public key packet (tag 6) gives its fingerprint — version 4: SHA-1 of
``0x99 || 2-byte length || body``; version 6: SHA-256 of ``0x9B || 4-byte length || body``; version 5:
SHA-256 of ``0x9A || 4-byte length || body`` — with the user IDs (tag 13) that follow it. Signatures
are not checked: apt checks the repository's signatures with the key; this only proves which key it is.
"""

from __future__ import annotations

import base64
import hashlib
import re

PUBLIC_KEY = 6
USER_ID = 13
ARMOR_RE = re.compile(
    rb"-----BEGIN PGP PUBLIC KEY BLOCK-----\r?\n(?P<body>.*?)-----END PGP PUBLIC KEY BLOCK-----", re.DOTALL
)


class KeyFileError(ValueError):
    """The file is not an OpenPGP public key file this parser reads."""


def dearmor(data: bytes) -> bytes:
    """The binary packets of `data`: itself when it is binary, else every armoured block decoded."""
    blocks = list(ARMOR_RE.finditer(data))
    if not blocks:
        if data.lstrip().startswith(b"-----BEGIN"):
            raise KeyFileError("an ASCII-armoured block that is not a PGP PUBLIC KEY BLOCK")
        return data
    out = b""
    for block in blocks:
        lines = block.group("body").replace(b"\r", b"").split(b"\n")
        # Armour headers ("Comment: ...") end at the first empty line, when there are any.
        if b"" in lines and any(b": " in line for line in lines[: lines.index(b"")]):
            lines = lines[lines.index(b"") + 1 :]
        text = b"".join(line for line in lines if line and not line.startswith(b"="))
        try:
            out += base64.b64decode(text, validate=True)
        except ValueError as exc:
            raise KeyFileError(f"an armoured block that is not valid base64 ({exc})") from exc
    return out


def packets(data: bytes) -> list[tuple[int, bytes]]:
    """(tag, body) of every packet in binary `data`."""
    found = []
    pos = 0
    while pos < len(data):
        header = data[pos]
        if not header & 0x80:
            raise KeyFileError(f"byte {pos} is not an OpenPGP packet header")
        if header & 0x40:  # new format
            tag = header & 0x3F
            first = data[pos + 1]
            if first < 192:
                length, pos = first, pos + 2
            elif first < 224:
                length, pos = ((first - 192) << 8) + data[pos + 2] + 192, pos + 3
            elif first == 255:
                length, pos = int.from_bytes(data[pos + 2 : pos + 6], "big"), pos + 6
            else:
                raise KeyFileError("a partial-length packet, which key files do not use")
        else:  # old format
            tag = (header >> 2) & 0x0F
            size = {0: 1, 1: 2, 2: 4}.get(header & 3)
            if size is None:
                raise KeyFileError("an old-format packet of indeterminate length")
            length, pos = int.from_bytes(data[pos + 1 : pos + 1 + size], "big"), pos + 1 + size
        body = data[pos : pos + length]
        if len(body) != length:
            raise KeyFileError("a packet cut short (the file is truncated)")
        found.append((tag, body))
        pos += length
    return found


def fingerprint(body: bytes) -> str:
    """The fingerprint of a public key packet's body, upper-case hex."""
    version = body[0] if body else None
    if version == 4:
        return hashlib.sha1(b"\x99" + len(body).to_bytes(2, "big") + body, usedforsecurity=False).hexdigest().upper()
    if version in (5, 6):
        prefix = b"\x9a" if version == 5 else b"\x9b"
        return hashlib.sha256(prefix + len(body).to_bytes(4, "big") + body).hexdigest().upper()
    raise KeyFileError(f"a version {version} public key, which this parser does not read (4, 5 and 6 only)")


def primary_keys(data: bytes) -> list[dict[str, object]]:
    """``[{fingerprint, user_ids}]`` of every primary key in a key file's bytes, in file order."""
    keys: list[dict[str, object]] = []
    for tag, body in packets(dearmor(data)):
        if tag == PUBLIC_KEY:
            keys.append({"fingerprint": fingerprint(body), "user_ids": []})
        elif tag == USER_ID and keys:
            keys[-1]["user_ids"].append(body.decode("utf-8", "replace"))  # type: ignore[union-attr]
    if not keys:
        raise KeyFileError("no public key in it")
    return keys


def normalise_fingerprint(value: str) -> str:
    """A fingerprint as written by people ("C95B 321B ...", lower case) in this module's form."""
    return re.sub(r"\s+", "", value).upper()
