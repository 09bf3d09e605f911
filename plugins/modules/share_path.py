#!/usr/bin/python
# Copyright: multinode.horovod contributors
# SPDX-License-Identifier: GPL-3.0-or-later
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Create or remove a directory, or write a file, below the share without following a link someone else
planted there."""

from __future__ import annotations

DOCUMENTATION = r"""
module: share_path
short_description: Create or remove a directory, or write a file, on the share, never through a link
description:
  - Root on any worker can change anything on a read-write share (C(no_root_squash)), a directory's name
    included, so a name below the share may be a link by the time the master's root uses it.
    M(ansible.builtin.file) follows a link in every component but the last one, so removing
    C(SHARE/outputs/RUN) would remove whatever C(outputs) points to on the master.
  - This module walks from O(root) (the master's own directory, trusted) down O(path) one component at a
    time, opening each relative to the one before without following a link (C(O_NOFOLLOW)). A component
    that is a link or not a directory stops the module, which then names it and changes nothing below it.
  - O(state=directory) creates the missing components (mode O(mode), owned by the user that runs it).
  - O(state=absent) removes the last component and everything below it in the same way (what it holds
    is removed relative to open directories, so a link inside is removed, never followed); a link at the
    last component is removed itself.
  - O(state=file) writes O(content), or the bytes of O(src), into the last component, a regular file in a
    directory that exists already. It is written under a fresh name of its own, created exclusively and
    without following a link, then renamed onto the last component, so nothing is ever written through a
    link and a reader sees the old file or the new one, whole. A link or anything else but a regular file
    at the last component stops the module, which names it. A file that already holds those bytes with
    that mode is left as it is.
version_added: 0.1.0
author: multinode.horovod contributors (!UNKNOWN)
options:
  root:
    description: The trusted directory the walk starts from (the share's directory on the master), an absolute path.
    type: path
    required: true
  path:
    description: The directory below O(root), relative, without C(.) or C(..) components.
    type: str
    required: true
  state:
    description: Create the directory, remove it with everything in it, or write the file.
    type: str
    choices: [directory, absent, file]
    default: directory
  mode:
    description:
      - With O(state=directory), the mode of each component created (octal string); a directory that exists
        keeps its mode.
      - With O(state=file), the file's mode.
      - Default C(0755) for directories, C(0644) for a file.
    type: str
  content:
    description: With O(state=file), the text to write. One of O(content) and O(src) is required there.
    type: str
  src:
    description:
      - With O(state=file), a file on the managed host (outside the share, such as a temporary file) whose
        bytes are written.
    type: path
attributes:
  check_mode:
    description: In check mode the walk only reads and reports what it would change.
    support: full
"""

EXAMPLES = r"""
- name: Remove an earlier run's output on the share
  multinode.horovod.share_path:
    root: /srv/share
    path: outputs/run-1a2b3c
    state: absent

- name: Create the run's output directory on the share
  multinode.horovod.share_path:
    root: /srv/share
    path: outputs/run-1a2b3c

- name: Write a report into it
  multinode.horovod.share_path:
    root: /srv/share
    path: outputs/run-1a2b3c/report.md
    state: file
    content: "# Report\n"
    mode: "0644"
"""

RETURN = r"""
path:
  description: The full path the module worked on.
  returned: success
  type: str
created:
  description: With O(state=directory), the directories created (or that would be, in check mode), in order.
  returned: success
  type: list
  elements: str
removed:
  description: With O(state=absent), whether something was at O(path) and was removed (or would be, in check mode).
  returned: success
  type: bool
written:
  description: With O(state=file), whether the file was written (or would be, in check mode).
  returned: success
  type: bool
"""

import errno
import os
import secrets
import stat

from ansible.module_utils.basic import AnsibleModule

DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_NOCTTY
# O_NONBLOCK: a FIFO planted at the name must not hold the read (it is refused after fstat anyway).
READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NOCTTY | os.O_NONBLOCK
NEW_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_NOCTTY
DEFAULT_MODES = {"directory": 0o755, "absent": 0o755, "file": 0o644}


class PathError(Exception):
    """The walk met something it must not pass, or the arguments are wrong."""


def components(root: str, path: str) -> list[str]:
    """`path`'s components, after checking both arguments."""
    if not os.path.isabs(root):
        raise PathError(f"root must be an absolute path, not {root!r}")
    parts = [p for p in path.split("/") if p]
    if not parts or path.startswith("/") or any(p in (".", "..") for p in parts):
        raise PathError(f"path must be a relative path below root without '.' or '..', not {path!r}")
    return parts


def _open_dir(name: str, dir_fd: int, shown: str) -> int | None:
    """An open directory `name` in `dir_fd`, None when there is nothing of that name."""
    try:
        return os.open(name, DIR_FLAGS, dir_fd=dir_fd)
    except FileNotFoundError:
        return None
    except OSError as err:
        if err.errno in (errno.ELOOP, errno.ENOTDIR):
            # Linux answers a link opened with O_DIRECTORY|O_NOFOLLOW with ENOTDIR, so ask what it is.
            is_link = stat.S_ISLNK(os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode)
            kind = "a symbolic link" if is_link else "not a directory"
            raise PathError(
                f"{shown} is {kind}: nothing was done through it. Something on the share replaced it (root on a"
                " node that mounts the share can); remove it and run again."
            ) from None
        raise PathError(f"{shown} could not be opened: {err.strerror}") from None


def _remove_entry(dir_fd: int, name: str, st_mode: int) -> None:
    """Remove `name` in `dir_fd` (a directory with all it holds), never following a link."""
    if stat.S_ISDIR(st_mode):
        child = os.open(name, DIR_FLAGS, dir_fd=dir_fd)
        try:
            for inside in os.listdir(child):
                _remove_entry(child, inside, os.stat(inside, dir_fd=child, follow_symlinks=False).st_mode)
        finally:
            os.close(child)
        os.rmdir(name, dir_fd=dir_fd)
    else:
        os.unlink(name, dir_fd=dir_fd)


def _descend(root: str, parts: list[str], opened: list[int]) -> tuple[int, int]:
    """The deepest of `parts` that exists, opened below the last of `opened` (each open kept in `opened`),
    and how many of `parts` that is."""
    fd = opened[-1]
    for index, name in enumerate(parts):
        child = _open_dir(name, fd, os.path.join(root, *parts[: index + 1]))
        if child is None:
            return fd, index
        opened.append(child)
        fd = child
    return fd, len(parts)


def _remove(dir_fd: int, name: str, check_mode: bool) -> bool:
    """Remove `name` in `dir_fd` with all it holds (a link itself); whether something was there."""
    try:
        st_mode = os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode
    except FileNotFoundError:
        return False
    if not check_mode:
        _remove_entry(dir_fd, name, st_mode)
    return True


def _same_file(dir_fd: int, name: str, shown: str, content: bytes, mode: int) -> bool:
    """Whether `name` in `dir_fd` is a regular file holding `content` with `mode`; False when there is none.
    Anything else at the name (a link above all) stops the module."""
    try:
        st = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        return False
    if not stat.S_ISREG(st.st_mode):
        kind = "a symbolic link" if stat.S_ISLNK(st.st_mode) else "not a regular file"
        raise PathError(
            f"{shown} is {kind}: nothing was written through it. Something on the share replaced it (root on a"
            " node that mounts the share can); remove it and run again."
        )
    if stat.S_IMODE(st.st_mode) != mode or st.st_size != len(content):
        return False
    fd = os.open(name, READ_FLAGS, dir_fd=dir_fd)
    try:
        with os.fdopen(fd, "rb", closefd=False) as handle:
            return handle.read(len(content) + 1) == content
    finally:
        os.close(fd)


def _write(dir_fd: int, name: str, content: bytes, mode: int) -> None:
    """`content` into `name` in `dir_fd`: written under a fresh name created exclusively, then renamed
    onto `name` (rename replaces a name, it never follows one)."""
    fresh = f".{name}.{secrets.token_hex(8)}"
    fd = os.open(fresh, NEW_FLAGS, 0o600, dir_fd=dir_fd)
    try:
        try:
            os.fchmod(fd, mode)  # the umask does not decide the mode asked for
            view = memoryview(content)
            while view:
                view = view[os.write(fd, view) :]
            os.fsync(fd)
        finally:
            os.close(fd)
        os.rename(fresh, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    except BaseException:
        try:
            os.unlink(fresh, dir_fd=dir_fd)
        except FileNotFoundError:
            pass
        raise


def run(
    root: str,
    path: str,
    state: str = "directory",
    mode: int | None = None,
    *,
    check_mode: bool = False,
    content: bytes | None = None,
) -> dict:
    """The module's result (see RETURN), raising PathError where the walk must stop."""
    parts = components(root, path)
    mode = DEFAULT_MODES[state] if mode is None else mode
    result: dict = {"path": os.path.join(root, *parts)}
    opened = [os.open(root, os.O_RDONLY | os.O_DIRECTORY)]
    try:
        if state == "absent":
            fd, depth = _descend(root, parts[:-1], opened)
            removed = depth == len(parts) - 1 and _remove(fd, parts[-1], check_mode)
            return {**result, "changed": removed, "removed": removed}
        if state == "file":
            if content is None:
                raise PathError("state=file needs content or src")
            fd, depth = _descend(root, parts[:-1], opened)
            if depth < len(parts) - 1:
                missing = os.path.join(root, *parts[: depth + 1])
                raise PathError(f"{missing} does not exist: create the directory first (state=directory)")
            written = not _same_file(fd, parts[-1], result["path"], content, mode)
            if written and not check_mode:
                _write(fd, parts[-1], content, mode)
            return {**result, "changed": written, "written": written}
        fd, depth = _descend(root, parts, opened)
        created = [os.path.join(root, *parts[: i + 1]) for i in range(depth, len(parts))]
        if not check_mode:
            for name in parts[depth:]:
                os.mkdir(name, mode, dir_fd=fd)
                fd = os.open(name, DIR_FLAGS, dir_fd=fd)
                opened.append(fd)
                os.chmod(fd, mode)  # the umask does not decide the mode asked for
        return {**result, "changed": bool(created), "created": created}
    finally:
        for each in opened:
            os.close(each)


def main() -> None:
    module = AnsibleModule(
        argument_spec={
            "root": {"type": "path", "required": True},
            "path": {"type": "str", "required": True},
            "state": {"type": "str", "choices": ["directory", "absent", "file"], "default": "directory"},
            "mode": {"type": "str"},
            "content": {"type": "str"},
            "src": {"type": "path"},
        },
        mutually_exclusive=[("content", "src")],
        required_if=[("state", "file", ("content", "src"), True)],
        supports_check_mode=True,
    )
    params = module.params
    mode = None
    if params["mode"] is not None:
        try:
            mode = int(params["mode"], 8)
        except ValueError:
            module.fail_json(msg=f"mode must be an octal string such as '0755', not {params['mode']!r}")
    content = None
    if params["state"] == "file":
        if params["src"] is not None:
            try:
                with open(params["src"], "rb") as handle:
                    content = handle.read()
            except OSError as err:
                module.fail_json(msg=f"src {params['src']}: {err.strerror}")
        else:
            content = params["content"].encode()
    try:
        result = run(
            params["root"], params["path"], params["state"], mode, check_mode=module.check_mode, content=content
        )
    except PathError as err:
        module.fail_json(msg=str(err))
    except OSError as err:
        module.fail_json(msg=f"{params['root']}/{params['path']}: {err.strerror}")
    module.exit_json(**result)


if __name__ == "__main__":
    main()
