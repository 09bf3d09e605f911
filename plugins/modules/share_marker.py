#!/usr/bin/python
# Copyright: multinode.horovod contributors
# SPDX-License-Identifier: GPL-3.0-or-later
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Prove that directories are shared, without opening anything someone else planted in them."""

from __future__ import annotations

DOCUMENTATION = r"""
module: share_marker
short_description: Write, read back and remove a marker that proves a directory is shared
description:
  - The site proves that a shared directory is the same on every node by writing a marker with a fresh
    token on the master and reading it back on each node. Root on any worker can change anything on a
    read-write share (C(no_root_squash)), so the master's root must not open a name there that someone
    else may have created.
  - O(state=present) creates C(.multinode-horovod-check-TOKEN) in each directory that exists, exclusively
    (a name that is already there, a symbolic link included, is never written through, the module fails
    and says so) and never following a link.
  - O(state=read) reports, for each directory, whether its marker holds the token. The marker is opened
    without following a link and without blocking (a FIFO), and only a regular file is read.
    With O(write_check), also whether root here can create a file in that directory (a fresh name,
    created exclusively and removed at once).
  - O(state=absent) removes the markers (an unlink never follows a link).
version_added: 0.1.0
author: multinode.horovod contributors (!UNKNOWN)
options:
  path:
    description: The directories, absolute paths.
    type: list
    elements: path
    required: true
  token:
    description: The marker's token (letters and digits); it also names the marker file.
    type: str
    required: true
  state:
    description: Write the markers, read them back, or remove them.
    type: str
    choices: [present, read, absent]
    default: read
  write_check:
    description:
      - With O(state=read), a directory in which to try whether root here can create a file (the master's
        artifact directory on a worker should refuse it). V("") tries nothing.
    type: path
    default: ""
attributes:
  check_mode:
    description: A read changes nothing; in check mode O(state=present) and O(state=absent) report what they would do.
    support: full
"""

EXAMPLES = r"""
- name: Write the markers on the master
  multinode.horovod.share_marker:
    path: [/srv/share, /srv/artifacts]
    token: "{{ token }}"
    state: present
  delegate_to: "{{ master }}"
  run_once: true

- name: Read them back on every node
  multinode.horovod.share_marker:
    path: [/srv/share, /srv/artifacts]
    token: "{{ token }}"
  register: seen
"""

RETURN = r"""
written:
  description: With O(state=present), the directories that exist and got their marker (or would, in check mode).
  returned: success
  type: list
  elements: str
markers:
  description:
    - With O(state=read), for each directory given, what its marker is here. V(ok) (it holds the token),
      V(missing) (no such file), V(different) (a regular file with another content), V(not a regular file)
      (a link, a directory, a device or a FIFO, not opened), or V(unreadable) with the reason.
  returned: success
  type: dict
writable:
  description: With O(state=read) and O(write_check), whether root here could create a file in that directory.
  returned: success
  type: bool
removed:
  description: With O(state=absent), the markers removed.
  returned: success
  type: list
  elements: str
"""

import errno
import os
import stat

from ansible.module_utils.basic import AnsibleModule

MARKER_PREFIX = ".multinode-horovod-check-"
# Opening a name on the share: never through a link, never blocking on a FIFO, never on a terminal.
READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY
WRITE_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_NOCTTY


class MarkerError(Exception):
    """A marker could not be written as asked."""


def marker_name(token: str) -> str:
    if not token or not token.isalnum() or not token.isascii():
        raise MarkerError(f"the token {token!r} must be letters and digits only")
    return MARKER_PREFIX + token


def write(directory: str, token: str) -> bool:
    """The marker in `directory`, created exclusively; False when the directory does not exist."""
    if not os.path.isdir(directory):
        return False
    path = os.path.join(directory, marker_name(token))
    try:
        fd = os.open(path, WRITE_FLAGS, 0o644)
    except FileExistsError:
        raise MarkerError(
            f"{path} is there already (put there by someone else, maybe as a link): nothing was written "
            "through it. Remove it and run again; if it comes back, a node of the share is hostile."
        ) from None
    except OSError as err:
        raise MarkerError(f"{path} could not be created: {err.strerror}") from None
    try:
        os.write(fd, f"{token}\n".encode())
    finally:
        os.close(fd)
    return True


def read(directory: str, token: str) -> str:
    """What the marker in `directory` is here (see RETURN: markers)."""
    path = os.path.join(directory, marker_name(token))
    try:
        fd = os.open(path, READ_FLAGS)
    except FileNotFoundError:
        return "missing"
    except OSError as err:
        # O_NOFOLLOW on a link: ELOOP (Linux); a FIFO or device opened non-blocking is caught below.
        return "not a regular file" if err.errno == errno.ELOOP else f"unreadable: {err.strerror}"
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return "not a regular file"
        content = os.read(fd, 256)
    except OSError as err:
        return f"unreadable: {err.strerror}"
    finally:
        os.close(fd)
    return "ok" if content.strip() == token.encode() else "different"


def can_create(directory: str, token: str) -> bool:
    """Whether root here can create a file in `directory` (a fresh name, removed at once)."""
    path = os.path.join(directory, f"{MARKER_PREFIX}write-{token}-{os.getpid()}")
    try:
        fd = os.open(path, WRITE_FLAGS, 0o600)
    except OSError:
        return False
    os.close(fd)
    os.unlink(path)
    return True


def remove(directory: str, token: str) -> bool:
    """Remove the marker in `directory` (whatever is at its name but a directory); whether one was there."""
    try:
        os.unlink(os.path.join(directory, marker_name(token)))
    except FileNotFoundError:
        return False
    except IsADirectoryError:
        raise MarkerError(f"{directory}/{marker_name(token)} is a directory now, not the marker; left alone") from None
    return True


def run(state: str, directories: list[str], token: str, write_check: str = "", check_mode: bool = False) -> dict:
    """The module's result for `state` (without its own checks of the arguments)."""
    marker_name(token)
    if state == "present":
        if check_mode:
            written = [d for d in directories if os.path.isdir(d)]
            return {"changed": bool(written), "written": written}
        written = []
        try:
            for directory in directories:
                if write(directory, token):
                    written.append(directory)
        except MarkerError:
            for directory in written:  # nothing left behind by a write that stopped half-way
                remove(directory, token)
            raise
        return {"changed": bool(written), "written": written}
    if state == "absent":
        if check_mode:
            there = [d for d in directories if os.path.lexists(os.path.join(d, marker_name(token)))]
            return {"changed": bool(there), "removed": there}
        removed = [d for d in directories if remove(d, token)]
        return {"changed": bool(removed), "removed": removed}
    result: dict = {"changed": False, "markers": {d: read(d, token) for d in directories}}
    if write_check:
        result["writable"] = can_create(write_check, token)
    return result


def main() -> None:
    module = AnsibleModule(
        argument_spec={
            "path": {"type": "list", "elements": "path", "required": True},
            "token": {"type": "str", "required": True, "no_log": False},
            "state": {"type": "str", "choices": ["present", "read", "absent"], "default": "read"},
            "write_check": {"type": "path", "default": ""},
        },
        supports_check_mode=True,
    )
    params = module.params
    try:
        result = run(params["state"], params["path"], params["token"], params["write_check"], module.check_mode)
    except MarkerError as err:
        module.fail_json(msg=str(err))
    module.exit_json(**result)


if __name__ == "__main__":
    main()
