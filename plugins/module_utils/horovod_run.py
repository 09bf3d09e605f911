# Copyright: multinode.horovod contributors
# SPDX-License-Identifier: GPL-3.0-or-later
"""A run of horovod_launch as its directory on the share tells it, and what horovodrun's output says of it.

The launch script (templates/horovod-launch.sh.j2) records ``started``, ``finished`` and ``rc`` (epoch
seconds, the exit status) beside itself, ``launcher.log`` (all horovodrun prints) and each rank's output
in ``rank.<N>/``; playbooks/stop.yml adds ``stopped``; an elastic run's discovery script ``hosts.log``.
Read on the master by the module horovod_run_info; :func:`failed_rank` also serves the run table.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

SCRIPT = "horovod-launch.sh"
# How much of launcher.log is searched for the failing rank: horovodrun names it near the end.
SEARCHED_LINES = 200
# horovodrun (Gloo) ends a failed run with "The first process to do so was:\n\nProcess name: 2\nExit code: 1"
# and logs "Process 2 exit with status code 1." for each failure; mpirun names the rank in
# "Process name: [[1234,1],2]" or "rank 2 with PID ... exited on signal". An elastic run names a slot
# (``10.0.0.2[0]``, a host and its local rank), which is no rank: the second pattern finds it then.
FIRST_FAILURE_RES = (
    re.compile(
        r"first process to do so was:\s*Process name:\s*(?:\[\[\d+,\d+\],)?(\d+)\]?[ \t]*(?:\r?\n|$)", re.IGNORECASE
    ),
    re.compile(r"Process (\d+) exit with status code [1-9]"),
    re.compile(r"^\s*Process name:\s*\[\[\d+,\d+\],(\d+)\]", re.MULTILINE),
    re.compile(r"rank (\d+) with PID \d+ on node \S+ exited on signal"),
    # A torchrun run: the role's launcher (files/horovod_torchrun.py) names the first rank whose exit status
    # reached it.
    re.compile(r"^First rank to fail: rank (\d+) on ", re.MULTILINE),
)
EXIT_CODE_RE = re.compile(r"(?:Exit code:|^First rank to fail: rank \d+ on \S+, exit code) (-?[0-9]+)", re.MULTILINE)


def failed_rank(output: object) -> int | None:
    """The rank horovodrun (or mpirun) reports as the first to fail, or None when none is named."""
    text = "" if output is None else str(output)
    for pattern in FIRST_FAILURE_RES:
        match = pattern.search(text)
        if match:
            return int(match.group(1))
    return None


def host_sets(text: str) -> list[dict[str, Any]]:
    """An elastic run's host sets over time from its hosts.log (``EPOCH ADDRESS:SLOTS,...`` per change):
    ``[{since, hosts}]`` in order; a line of another form is skipped (the run may be writing it)."""
    out: list[dict[str, Any]] = []
    for line in text.splitlines():
        since, _unused, hosts = line.strip().partition(" ")
        if since.isdigit():
            out.append({"since": int(since), "hosts": [h for h in hosts.split(",") if h]})
    return out


def _int(path: Path) -> int | None:
    try:
        return int(path.read_text().strip())
    except (OSError, ValueError):
        return None


def tail(path: Path, lines: int) -> list[str]:
    """The last `lines` lines of a file, read from its end only (logs grow large); [] when unreadable."""
    try:
        with path.open("rb") as handle:
            handle.seek(0, os.SEEK_END)
            handle.seek(max(0, handle.tell() - 65536))
            text = handle.read().decode(errors="replace")
    except OSError:
        return []
    return text.splitlines()[-lines:] if lines > 0 else []


def rank_dir(run_dir: Path, rank: int) -> Path | None:
    """The directory of `rank`'s output: ``rank.<N>`` (zero-padded) below the run's directory (mpirun
    puts it one level deeper)."""
    name = re.compile(rf"rank\.0*{rank}")
    found = sorted(Path(top, d) for top, dirs, _unused in os.walk(run_dir) for d in dirs if name.fullmatch(d))
    return found[0] if found else None


def rank_output(directory: Path, lines: int) -> str:
    """The last `lines` lines of the rank's stdout and stderr, each under a ``==> PATH <==`` header."""
    parts = []
    for stream in ("stdout", "stderr"):
        path = directory / stream
        if path.is_file():
            parts.append("\n".join([f"==> {path} <==", *tail(path, lines)]))
    return "\n\n".join(parts)


def state(run_dir: Path, launchers: Sequence[str] = ()) -> str:
    """``running`` when its launch script is among `launchers` (command lines), else ``finished``,
    ``failed`` or ``stopped`` when it recorded an exit status, ``interrupted`` when it was started and has
    none, ``new`` when it never was."""
    if any(f"{run_dir}/{SCRIPT}" in line for line in launchers):
        return "running"
    if (run_dir / "rc").exists():
        if (run_dir / "stopped").exists():
            return "stopped"
        return "finished" if _int(run_dir / "rc") == 0 else "failed"
    script = run_dir / SCRIPT
    return "interrupted" if script.exists() or script.is_symlink() else "new"


def read(run_dir: Path, launchers: Sequence[str] = (), tail_lines: int = 40) -> dict[str, Any]:
    """What the run's directory tells: its state, times and exit status, an elastic run's host sets, and
    for a run that failed the rank horovodrun names, that rank's exit code and output, and the end of
    launcher.log."""
    started, finished, rc = _int(run_dir / "started"), _int(run_dir / "finished"), _int(run_dir / "rc")
    hosts_log = run_dir / "hosts.log"
    try:
        sets = host_sets(hosts_log.read_text(errors="replace"))
        elastic = True
    except OSError:
        sets, elastic = [], False
    out: dict[str, Any] = {
        "state": state(run_dir, launchers),
        "started": started,
        # Not "finished": Ansible reserves it for async jobs (ansible-core 2.21 makes it a bool).
        "finished_at": finished,
        # Not "rc": Ansible fails a task whose result has an rc other than 0.
        "exit_status": rc,
        "duration_s": max(0, finished - started) if started is not None and finished is not None else None,
        "elastic": elastic,
        "host_sets": sets,
        "failed_rank": None,
        "failed_exit_code": None,
        "launcher_tail": "",
        "rank_output": "",
    }
    if rc in (None, 0):
        return out
    searched = "\n".join(tail(run_dir / "launcher.log", SEARCHED_LINES))
    rank = failed_rank(searched)
    code = EXIT_CODE_RE.search(searched)
    directory = rank_dir(run_dir, rank) if rank is not None else None
    out.update(
        failed_rank=rank,
        failed_exit_code=int(code.group(1)) if code and rank is not None else None,
        launcher_tail="\n".join(searched.split("\n")[-tail_lines:]) if tail_lines > 0 else "",
        rank_output=rank_output(directory, tail_lines) if directory is not None else "",
    )
    return out
