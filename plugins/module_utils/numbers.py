# Copyright: multinode.horovod contributors
# SPDX-License-Identifier: GPL-3.0-or-later
"""Whole numbers as inventories give them: an int, or a string of digits (``-e port=2222`` is a string).

One parser for every rule that takes a number (ports, slots, timeouts), accepting what Ansible's own
``int`` conversion of an argument spec accepts (``int(" +22 ")``), and refusing booleans and floats.
"""

from __future__ import annotations

import re

WHOLE_RE = re.compile(r"\s*[+-]?[0-9]+\s*")


def whole(value: object) -> int | None:
    """`value` as a whole number (an int or a string of digits), else None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return int(value)
    if isinstance(value, str) and WHOLE_RE.fullmatch(value):
        return int(value)
    return None


def positive(value: object) -> int | None:
    """`value` as a whole number of 1 or more, else None."""
    number = whole(value)
    return number if number is not None and number >= 1 else None


def shown(value: object) -> str:
    """A value as a message quotes it: a whole number as the number (``"70000"`` from ``-e`` too), else its repr."""
    number = whole(value)
    return repr(value) if number is None else str(number)
