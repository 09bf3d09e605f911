# Copyright: multinode.horovod contributors
# SPDX-License-Identifier: GPL-3.0-or-later
"""Wait a little for a horovod_launch run and print one JSON object about it.

``python3 -c "$(cat horovod_progress.py)" RUN_DIR WAIT_SECONDS [STALL_SECONDS]`` runs on the master (the
run directory is on the share, at the same path as in the container). It returns as soon as the run has
finished (it looks four times a second), or after WAIT_SECONDS, and prints ``{"ended", "line"}``: ``line``
is the progress line the role shows (``starting``, ``running 42s | LAST LINE OF HOROVODRUN``, or
``finished rc=N after Ss, seen X.XXs after the end[, stopped]``); a run that ended adds ``rc``,
``duration_s``, ``end_seen_after_s`` (how long ago ``rc`` was written: the role's delay in noticing the
end) and ``stopped`` (playbooks/stop.yml marked it). A running run adds ``quiet_s``, the seconds since
any of its logs last grew (launcher.log, each rank's stdout and stderr; the start when none has), and
``stalled``: whether STALL_SECONDS (horovod_launch_stall_timeout; 0 or none: never) have passed so.
"""

import json
import sys
import time
from pathlib import Path
from typing import Dict, List, Optional  # Python 3.6: no PEP 585/604 forms

LAST_LINE_MAX = 160
TAIL_BYTES = 8192
# Seconds between two looks at the run directory: the end of a run is noticed within this.
TICK = 0.25
# Seconds between two looks at the logs' times while a stall is looked for.
QUIET_EVERY = 5.0


def read_int(path: Path) -> Optional[int]:
    try:
        return int(path.read_text().strip())
    except (OSError, ValueError):
        return None


def last_line(path: Path) -> str:
    """The last non-empty line of a file, read from its end only (logs grow large)."""
    try:
        with path.open("rb") as handle:
            handle.seek(0, 2)
            handle.seek(max(0, handle.tell() - TAIL_BYTES))
            lines = handle.read().decode(errors="replace").splitlines()
    except OSError:
        return ""
    for raw in reversed(lines):
        line = raw.strip()
        if line:
            return line if len(line) <= LAST_LINE_MAX else line[: LAST_LINE_MAX - 3] + "..."
    return ""


def status(run_dir: Path, now: float) -> Dict[str, object]:
    rc = read_int(run_dir / "rc")
    started = read_int(run_dir / "started")
    if rc is not None:
        finished = read_int(run_dir / "finished")
        duration = max(0, finished - started) if finished is not None and started is not None else 0
        try:
            seen = round(max(0.0, now - (run_dir / "rc").stat().st_mtime), 2)
        except OSError:
            seen = 0.0
        stopped = (run_dir / "stopped").exists()
        line = f"finished rc={rc} after {duration}s, seen {seen:.2f}s after the end" + (", stopped" if stopped else "")
        return {
            "ended": True,
            "line": line,
            "rc": rc,
            "duration_s": duration,
            "end_seen_after_s": seen,
            "stopped": stopped,
        }
    if started is None:
        return {"ended": False, "line": "starting"}
    line = last_line(run_dir / "launcher.log") or "(no output yet)"
    return {"ended": False, "line": f"running {max(0, int(now) - started)}s | {line}"}


def quiet(run_dir: Path, now: float) -> int:
    """Seconds since the run last wrote output: the newest change of launcher.log and the ranks' logs
    (rank.N/stdout, rank.N/stderr; horovodrun writes them, not always launcher.log too), or its start."""
    times = []
    for path in [run_dir / "launcher.log", run_dir / "started", *run_dir.glob("rank.*/std*")]:
        try:
            times.append(path.stat().st_mtime)
        except OSError:
            pass
    return max(0, int(now - max(times))) if times else 0


def main(argv: List[str]) -> int:
    if len(argv) not in (2, 3):
        print("usage: horovod_progress.py RUN_DIR WAIT_SECONDS [STALL_SECONDS]", file=sys.stderr)
        return 2
    run_dir, wait = Path(argv[0]), float(argv[1])
    stall = float(argv[2]) if len(argv) == 3 else 0.0
    deadline = time.monotonic() + wait
    looked = 0.0
    while True:
        now = time.time()
        seen = status(run_dir, now)
        due = time.monotonic() >= deadline
        # The logs are stat'ed at the end of the wait, and while it lasts every QUIET_EVERY seconds
        # when a stall is looked for (the ranks' logs are many files on the share).
        if seen["line"] != "starting" and not seen["ended"] and (due or (stall > 0 and now - looked >= QUIET_EVERY)):
            looked = now
            seen["quiet_s"] = quiet(run_dir, now)
            seen["stalled"] = 0 < stall <= seen["quiet_s"]
        if seen["ended"] or seen.get("stalled") or due:
            print(json.dumps(seen, sort_keys=True))
            return 0
        time.sleep(min(TICK, max(0.0, deadline - time.monotonic())))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
