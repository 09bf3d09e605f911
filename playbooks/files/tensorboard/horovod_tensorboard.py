# Copyright: multinode.horovod contributors
# SPDX-License-Identifier: GPL-3.0-or-later
"""TensorBoard in the Horovod container, as playbooks/tensorboard.yml sees it; JSON out.

Run in the master's container as ``python3 -c CODE COMMAND ...`` (docker exec):

* ``read MARKER ROOT LOGDIR PORT LOG``: TensorBoard's version (or why python3 cannot import it); the
  processes whose command line holds MARKER (pid and argv; this program and its parents left out); what
  LOGDIR is (``directory``, ``missing``, ``link``, ``other`` or ``unreadable``) and, when it is no
  directory, the component that decided it (``logdir_at``): every component below ROOT (the share's or the
  artifact directory's own directory, trusted) is looked at without following a link, by file descriptor,
  so a link that root on a worker made of any of them is found; whether 127.0.0.1:PORT is free to listen
  on; the last lines of LOG, TensorBoard's output;
* ``stop GRACE PROCESSES``: SIGTERM to each ``{pid, args}`` of the JSON list PROCESSES whose command line
  is still exactly ``args`` (a pid that another process took since is left alone), SIGKILL to those left
  after GRACE seconds; says which were stopped, killed, already gone, and left.

Which processes are the playbook's, and what to do, is decided on the controller
(plugins/module_utils/horovod_tensorboard.py). Nothing here writes to the share.
"""

import json
import os
import signal
import socket
import stat
import sys
import time
from typing import Dict, List, Optional, Set, Tuple  # Python 3.6: no PEP 585/604 forms

TICK = 0.2
LOG_LINES = 20


def _read(path: str) -> Optional[bytes]:
    try:
        with open(path, "rb") as handle:
            return handle.read()
    except OSError:
        return None


def cmdline(pid: int) -> List[str]:
    """The process's argv; empty for a zombie, a kernel thread or a process that is gone."""
    return [a.decode(errors="replace") for a in (_read(f"/proc/{pid}/cmdline") or b"").split(b"\0") if a]


def lineage() -> Set[int]:
    """This process and its ancestors (never listed, never signalled)."""
    pids, pid = set(), os.getpid()
    while pid > 1 and pid not in pids:
        pids.add(pid)
        raw = _read(f"/proc/{pid}/stat")
        if not raw:
            break
        # pid (comm) state ppid ...; comm may hold spaces and parentheses.
        pid = int(raw.rsplit(b")", 1)[1].split()[1])
    return pids


def processes(marker: str) -> List[Dict[str, object]]:
    mine = lineage()
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) in mine:
            continue
        args = cmdline(int(entry))
        if marker in args:
            found.append({"pid": int(entry), "args": args})
    return sorted(found, key=lambda p: int(p["pid"]))  # type: ignore[call-overload]


def tensorboard() -> Dict[str, Optional[str]]:
    """TensorBoard's version as python3 here imports it, or the error."""
    try:
        from tensorboard import version  # noqa: PLC0415 - only the answer says whether it is there

        return {"version": str(version.VERSION), "error": None}
    except Exception as error:  # any failure to import means no usable TensorBoard
        return {"version": None, "error": f"{type(error).__name__}: {error}"}


DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_NOCTTY  # novermin (not a union type)
ROOT_FLAGS = os.O_RDONLY | os.O_DIRECTORY  # novermin (the root is trusted: a link there is followed)


def _kind_at(dir_fd: int, name: str, last: bool) -> str:
    """What `name` in `dir_fd` is, not followed when it is a link."""
    try:
        mode = os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode
    except (FileNotFoundError, NotADirectoryError):
        return "missing"
    except OSError:
        return "unreadable"
    if stat.S_ISLNK(mode):
        return "link"
    if not stat.S_ISDIR(mode):
        return "other"
    if last and not os.access(name, os.R_OK | os.X_OK, dir_fd=dir_fd):  # novermin
        return "unreadable"
    return "directory"


def kind(root: str, path: str) -> Tuple[str, Optional[str]]:
    """What `path` is, and the component that decided it when it is no directory: every component below
    `root` looked at in the one before, opened without following a link (`root` itself is trusted; a
    `path` outside it is looked at by its last component only)."""
    inside = root and (path == root or path.startswith(os.path.join(root, "")))
    start, rest = (root, path[len(root) :]) if inside else (os.path.dirname(path), os.path.basename(path))
    names = [name for name in rest.split("/") if name]
    try:
        fd = os.open(start or "/", ROOT_FLAGS)
    except (FileNotFoundError, NotADirectoryError):
        return "missing", start
    except OSError:
        return "unreadable", start
    try:
        for index, name in enumerate(names):
            here = os.path.join(start, *names[: index + 1])
            found = _kind_at(fd, name, index == len(names) - 1)
            if found != "directory":
                return found, here
            if index < len(names) - 1:
                try:
                    child = os.open(name, DIR_FLAGS, dir_fd=fd)
                except OSError:  # replaced since it was looked at
                    return "unreadable", here
                os.close(fd)
                fd = child
        return "directory", None
    finally:
        os.close(fd)


def port_free(port: int) -> bool:
    """Whether a server could listen on 127.0.0.1:PORT now (SO_REUSEADDR, as TensorBoard's server sets it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def log_tail(path: str) -> List[str]:
    text = (_read(path) or b"")[-16384:].decode(errors="replace")
    return [line for line in text.splitlines() if line.strip()][-LOG_LINES:]


def read(marker: str, root: str, logdir: str, port: int, log: str) -> Dict[str, object]:
    logdir_kind, logdir_at = kind(root, logdir)
    return {
        "tensorboard": tensorboard(),
        "processes": processes(marker),
        "logdir": logdir_kind,
        "logdir_at": logdir_at,
        "port_free": port_free(port),
        "log": log_tail(log),
    }


def alive(process: Dict[str, object]) -> bool:
    """Whether the process is still there with the same command line (a zombie has none)."""
    return cmdline(int(process["pid"])) == process["args"]  # type: ignore[call-overload]


def send(targets: List[Dict[str, object]], signum: int) -> List[int]:
    reached = []
    for process in targets:
        if alive(process):
            try:
                os.kill(int(process["pid"]), signum)  # type: ignore[call-overload]
                reached.append(int(process["pid"]))  # type: ignore[call-overload]
            except ProcessLookupError:
                pass
    return reached


def stop(grace: float, targets: List[Dict[str, object]]) -> Dict[str, object]:
    gone = [int(p["pid"]) for p in targets if not alive(p)]  # type: ignore[call-overload]
    stopped = send(targets, signal.SIGTERM)
    deadline = time.monotonic() + grace
    while any(alive(p) for p in targets) and time.monotonic() < deadline:
        time.sleep(TICK)
    killed = send(targets, signal.SIGKILL)
    deadline = time.monotonic() + 5
    while any(alive(p) for p in targets) and time.monotonic() < deadline:
        time.sleep(TICK)
    left = [int(p["pid"]) for p in targets if alive(p)]  # type: ignore[call-overload]
    return {"stopped": stopped, "killed": killed, "gone": gone, "left": left}


def main(argv: List[str]) -> int:
    usage = "usage: horovod_tensorboard.py read MARKER ROOT LOGDIR PORT LOG | stop GRACE PROCESSES_JSON"
    if len(argv) == 6 and argv[0] == "read":
        result: Dict[str, object] = read(argv[1], argv[2], argv[3], int(argv[4]), argv[5])
    elif len(argv) == 3 and argv[0] == "stop":
        result = stop(float(argv[1]), json.loads(argv[2]))
    else:
        print(usage, file=sys.stderr)
        return 2
    print(json.dumps(result, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
