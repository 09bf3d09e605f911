# Copyright: multinode.horovod contributors
# SPDX-License-Identifier: GPL-3.0-or-later
"""The ssh command a user types on the controller to reach a node, from the inventory's connection to it.

One primitive for every command the collection prints for the user to run on the controller:
horovod_launch's "follow it from here" (``ssh ... tail -f LOG``) and the TensorBoard playbook's tunnel
(``ssh -N -L ...``). A node is ``{host, user, port}`` as the plays take them from the inventory
(``ansible_host`` or the inventory name, ``ansible_user``, ``ansible_port``).
"""

from __future__ import annotations

import shlex
from collections.abc import Iterable, Mapping
from typing import Any

SSH_PORT = 22


def ssh_command(node: Mapping[str, Any], options: Iterable[str] = (), command: Iterable[str] = ()) -> str:
    """``ssh [OPTIONS] [-p PORT] [USER@]HOST [COMMAND]``: each word quoted for a POSIX shell, ``-p`` only
    for a port other than ssh's own, ``USER@`` only when the inventory names a user."""
    user = f"{node['user']}@" if node.get("user") else ""
    port = ["-p", str(node["port"])] if str(node.get("port") or SSH_PORT) != str(SSH_PORT) else []
    words = ["ssh", *options, *port, f"{user}{node['host']}", *command]
    return " ".join(shlex.quote(str(word)) for word in words)
