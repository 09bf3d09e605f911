# Copyright: multinode.horovod contributors
# SPDX-License-Identifier: GPL-3.0-or-later
"""Run the preflight's NCCL check in the master's container and print one JSON object about it.

``python3 -c CODE TIMEOUT SSH_WRAPPER_DIR`` with ``{"argv": [...], "env": {...}}`` on stdin (the filter
multinode.horovod.horovod_nccl_check builds both: horovodrun with one process per host running one NCCL
allreduce, and NCCL_DEBUG=INFO with the run's NCCL_* settings), or, for a torchrun run, ``{"argvs": [...],
"env": {...}}``: one command per host, all run at once (each host's process of one torch.distributed
allreduce, started there over the pinned ssh). The pinned ssh wrapper goes first on PATH,
as in the run's launch script. Prints ``{"rc", "lines", "tail", "seconds"}``: horovodrun's exit status
(124 when TIMEOUT seconds passed), the lines where NCCL said which network it uses or why it left
InfiniBand out, and the last lines of horovodrun's output. The verdict is the filter
multinode.horovod.horovod_nccl_network's.
"""

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from typing import Dict, List  # Python 3.6: no PEP 585/604 forms

NCCL_LINE_RE = re.compile(r"NCCL INFO (Using network |NET/)|NCCL WARN")
# An interface name as plugins/module_utils/worker_reports.py's is_interface_name allows it: Horovod writes
# the interfaces unquoted into a command it runs with shell=True, so nothing else is passed on.
INTERFACE_RE = re.compile(r"[A-Za-z0-9_.@][A-Za-z0-9_.@-]{0,14}")
NIC_OPTIONS = ("--network-interfaces", "--network-interface")
LINES_KEPT = 60
TAIL_LINES = 20


def bad_interfaces(argv: List[str]) -> List[str]:
    """The interfaces of horovodrun's interface option in `argv` that are no interface names."""
    bad = []
    for option, value in zip(argv, argv[1:]):
        if option in NIC_OPTIONS:
            bad += [nic for nic in value.split(",") if nic in (".", "..") or not INTERFACE_RE.fullmatch(nic)]
    return bad


def check(argvs: List[List[str]], env: Dict[str, str], timeout: float, wrapper_dir: str) -> Dict[str, object]:
    """Run every command of `argvs` at once (horovodrun's one, or a torchrun run's one per node) and keep what
    NCCL said in their output, in order; the exit status is the first non-zero one, 124 after `timeout`."""
    bad = [nic for argv in argvs for nic in bad_interfaces(argv)]
    if bad:
        return {"rc": 2, "lines": [], "tail": [f"not run: {bad[0]!r} is not a network interface name"], "seconds": 0.0}
    environment = dict(os.environ)
    environment.update({str(k): str(v) for k, v in env.items()})
    environment["PATH"] = wrapper_dir + os.pathsep + environment.get("PATH", "")
    started = time.monotonic()
    procs = []  # type: List[subprocess.Popen[bytes]]
    outputs = []  # type: List[List[bytes]]
    readers = []
    for argv in argvs:
        try:
            # A session of its own: on the timeout horovodrun goes with its ssh clients and local ranks.
            proc = subprocess.Popen(
                argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=environment,
                start_new_session=True,
            )  # fmt: skip
        except OSError as exc:
            for other in procs:
                os.killpg(other.pid, signal.SIGKILL)
            return {"rc": 127, "lines": [], "tail": [str(exc)], "seconds": 0.0}
        chunks = []  # type: List[bytes]
        reader = threading.Thread(target=lambda p=proc, c=chunks: c.append(p.stdout.read()))  # type: ignore[union-attr]
        reader.start()
        procs.append(proc)
        outputs.append(chunks)
        readers.append(reader)
    codes = []
    timed_out = False
    for proc in procs:
        try:
            codes.append(proc.wait(timeout=max(0.0, started + timeout - time.monotonic())))
        except subprocess.TimeoutExpired:
            timed_out = True
            break
    if timed_out:
        for proc in procs:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
    for reader in readers:
        reader.join()
    rc = 124 if timed_out else next((code for code in codes if code != 0), 0)
    lines = b"".join(b"".join(chunks) for chunks in outputs).decode(errors="replace").splitlines()
    return {
        "rc": rc,
        "lines": [line for line in lines if NCCL_LINE_RE.search(line)][:LINES_KEPT],
        "tail": lines[-TAIL_LINES:],
        "seconds": round(time.monotonic() - started, 1),
    }


def main(args: List[str]) -> int:
    if len(args) != 2:
        print("usage: horovod_nccl_check.py TIMEOUT SSH_WRAPPER_DIR < {argv, env}", file=sys.stderr)
        return 2
    given = json.load(sys.stdin)
    argvs = given["argvs"] if "argvs" in given else [given["argv"]]
    print(json.dumps(check(argvs, given.get("env") or {}, float(args[0]), args[1]), sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
