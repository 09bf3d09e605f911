# Copyright: multinode.horovod contributors
# SPDX-License-Identifier: GPL-3.0-or-later
"""What a role's one read command printed about its own files, and whether a write would change them.

A role that reads its files in one command (instead of a stat or slurp per file) prints, for each file
or directory it owns, a line ``## MODE USER:GROUP PATH`` (``stat -c '## %a %U:%G %n'``) and, for a file
whose text matters, a line ``@@ PATH`` followed by a line of its content in base64 (``base64 -w 0``).
``listed_in_place`` tells from that whether the task that writes the file (template, copy, file with
``state: directory``) would change nothing, so that a re-run can skip it: the same owner, mode and text.
Anything else - missing, a link, another mode, owner or text - runs the task, which then decides.
For a key pair (``listed_key_pair_in_place``) the read command also prints ``@@ derived PATH`` and the
public key ``ssh-keygen -y`` derives from the private key PATH.
"""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Callable
from typing import Any

from ansible_collections.multinode.horovod.plugins.module_utils.listing import section_lines

STAT_RE = re.compile(r"^## ([0-7]+) (\S+):(\S+) (.+)$")


def listed_stats(listing: str) -> dict[str, tuple[int, str, str]]:
    """``{path: (mode, user, group)}`` of the ``##`` lines."""
    stats = {}
    for line in (listing or "").splitlines():
        found = STAT_RE.match(line)
        if found:
            stats[found.group(4)] = (int(found.group(1), 8), found.group(2), found.group(3))
    return stats


def listed_paths(listing: str) -> list[str]:
    """The paths the listing has a ``##`` line for (the files and directories that are there)."""
    return list(listed_stats(listing))


def listed_texts(listing: str) -> dict[str, str]:
    """``{path: text}`` of the ``@@ /PATH`` lines (an empty line, or none, after one: an empty file; other
    ``@@ NAME`` lines are a read command's own sections)."""
    texts = {}
    lines = (listing or "").splitlines()
    for i, line in enumerate(lines):
        if line.startswith("@@ /"):
            encoded = lines[i + 1] if i + 1 < len(lines) and not lines[i + 1].startswith(("@@ ", "## ")) else ""
            try:
                texts[line[3:]] = base64.b64decode(encoded.strip(), validate=True).decode(
                    "utf-8", errors="surrogateescape"
                )
            except ValueError:
                continue  # not a file's text: the write runs
    return texts


def listed_lines(listing: str, name: str) -> list[str] | None:
    """The lines a read command printed in its section ``@@ NAME`` (up to the next ``@@``/``##`` line), or
    None when the listing has no such section."""
    return section_lines(listing, name)


def listed_json(listing: str, name: str) -> Any:
    """The JSON a read command printed in its section ``@@ NAME`` (listed_lines), or None when the section
    is missing, empty or not JSON. For a `docker inspect` (a list), its first item, or None for an empty
    list."""
    try:
        found = json.loads("\n".join(listed_lines(listing, name) or []))
    except ValueError:
        return None
    if isinstance(found, list):
        return found[0] if found else None
    return found


def listed_in_place(
    listing: str, path: str, mode: Any, content: str | None = None, *, owner: str = "root", group: str = "root"
) -> bool:
    """Whether the listing shows `path` as the write task would leave it: `owner`:`group`, `mode`
    (``"0644"``) and, when `content` is given, exactly that text (for a directory, mode and owner only)."""
    if listed_stats(listing).get(path) != (int(str(mode), 8), str(owner), str(group)):
        return False
    if content is None:
        return True
    texts = listed_texts(listing)
    return path in texts and texts[path] == content


def listed_derived_keys(listing: str) -> dict[str, str]:
    """``{private key path: "TYPE BLOB"}`` of the ``@@ derived PATH`` lines, each followed by what
    ``ssh-keygen -y -P '' -f PATH`` printed (the public key of a private key that loads)."""
    derived = {}
    lines = (listing or "").splitlines()
    for i, line in enumerate(lines):
        if line.startswith("@@ derived /") and i + 1 < len(lines):
            fields = lines[i + 1].split()
            if len(fields) >= 2 and not lines[i + 1].startswith(("@@ ", "## ")):
                derived[line[len("@@ derived ") :]] = f"{fields[0]} {fields[1]}"
    return derived


def listed_key_pair_in_place(
    listing: str, path: str, comment: str, mode: Any = "0600", *, owner: str = "root", group: str = "root"
) -> bool:
    """Whether community.crypto.openssh_keypair (``regenerate: never``, state present) would change nothing
    on the key pair `path` and `path`.pub: both `owner`:`group` and `mode`, the private key loads without a
    passphrase (``@@ derived PATH``), and the public key file is exactly that key with `comment`."""
    derived = listed_derived_keys(listing).get(path)
    return (
        derived is not None
        and listed_in_place(listing, path, mode, owner=owner, group=group)
        and listed_in_place(listing, f"{path}.pub", mode, f"{derived} {comment}\n", owner=owner, group=group)
    )


class FilterModule:
    """multinode.horovod.listed_in_place, listed_key_pair_in_place, listed_derived_keys, listed_paths,
    listed_json and listed_lines."""

    def filters(self) -> dict[str, Callable[..., Any]]:
        return {
            "listed_in_place": listed_in_place,
            "listed_key_pair_in_place": listed_key_pair_in_place,
            "listed_derived_keys": listed_derived_keys,
            "listed_paths": listed_paths,
            "listed_json": listed_json,
            "listed_lines": listed_lines,
        }
