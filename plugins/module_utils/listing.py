# Copyright: multinode.horovod contributors
# SPDX-License-Identifier: GPL-3.0-or-later
"""The sections of a role's one read command (plugins/filter/listing.py describes its lines): a line
``@@ NAME`` opens a section, which runs up to the next ``@@``/``##`` line."""

from __future__ import annotations


def section_lines(text: str, name: str) -> list[str] | None:
    """The lines printed in section ``@@ NAME``, or None when the text has no such section."""
    lines: list[str] | None = None
    for line in (text or "").splitlines():
        if lines is not None and line.startswith(("@@ ", "## ")):
            break
        if lines is not None:
            lines.append(line)
        elif line == f"@@ {name}":
            lines = []
    return lines
