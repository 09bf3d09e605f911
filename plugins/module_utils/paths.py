# Copyright: multinode.horovod contributors
# SPDX-License-Identifier: GPL-3.0-or-later
"""One rule for every directory the collection exports, mounts, bind-mounts or writes to.

A path is accepted when it has this shape, and only then:
- absolute and normalised: starts with ``/``, no ``.`` or ``..`` component, no ``//``, no trailing ``/``;
- at least one component, each made of letters, digits, ``.``, ``_``, ``+``, ``-`` and ``@`` (no spaces,
  quotes, commas or parentheses, so it cannot break an exports line, an fstab line or a shell word);
- its first component is not one of the operating system's own top-level directories (``SYSTEM_TOPS``,
  the Filesystem Hierarchy Standard's list), so ``/``, ``/etc`` or ``/usr/local/x`` are refused while
  ``/data1``, ``/srv/share``, ``/mnt/nfs`` or ``/home/ml/share`` are fine.
"""

from __future__ import annotations

import re

SYSTEM_TOPS = frozenset("bin boot dev etc lib lib32 lib64 libx32 proc root run sbin sys tmp usr var".split())
COMPONENT_RE = re.compile(r"^[A-Za-z0-9_+@-][A-Za-z0-9._+@-]*$")
SHAPE = (
    "an absolute, normalised path (no '..', '.', '//' or trailing '/') whose components use only letters, "
    "digits, '.', '_', '+', '-' and '@', outside the system directories "
    "(/" + ", /".join(sorted(SYSTEM_TOPS)) + ")"
)


def path_problem(value: object) -> str | None:
    """Why `value` is not an acceptable data directory, or None when it is."""
    if not isinstance(value, str) or not value:
        return f"{value!r} is not a path; use {SHAPE}"
    if not value.startswith("/"):
        return f"{value!r} is not absolute; use {SHAPE}"
    parts = value[1:].split("/")
    if value == "/" or any(part in ("", ".", "..") for part in parts):
        return f"{value!r} is not normalised; use {SHAPE}"
    bad = [part for part in parts if not COMPONENT_RE.fullmatch(part)]
    if bad:
        return f"{value!r} has characters that are not allowed in {bad[0]!r}; use {SHAPE}"
    if parts[0] in SYSTEM_TOPS:
        return f"{value!r} is inside the system directory /{parts[0]}; use {SHAPE}"
    return None


def strip_slash(value: object) -> object:
    """`value` without its trailing ``/`` ("/srv/share/" -> "/srv/share"), ``/`` itself kept.

    The one place a trailing slash is dropped: the site's settings (gate), the roles' input rules,
    the exports file, the mounts and the client's wait all read paths through it.
    """
    return re.sub(r"(.)/+$", r"\1", value) if isinstance(value, str) else value


def is_inside(path: str, root: str) -> bool:
    """Whether normalised `path` is `root` or below it."""
    return path == root or path.startswith(root.rstrip("/") + "/")
