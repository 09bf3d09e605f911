# Copyright: multinode.horovod contributors
# SPDX-License-Identifier: GPL-3.0-or-later
"""The runs of multinode.horovod.horovod_launch, seen from inside the Horovod containers; JSON out.

Run in the master's container as ``python3 -c CODE COMMAND ...``; it reaches the other nodes' containers
over the pinned ssh, where it runs itself again (``python3 -`` with its code on stdin). Commands:

* ``status RUNS_DIR``: every run - state (running, finished, failed, stopped, interrupted), times, rc, the
  last line horovodrun printed, the host of each rank, an elastic run's host set, a failed run's log tail;
* ``up RUN_DIR NP WAIT SSH_JSON ADDRESS...``: wait (at most WAIT s) until each of the NP ranks has been
  seen running on some node, or the run ended;
* ``stop RUN_DIR GRACE SSH_JSON ADDRESS...``: SIGTERM, then SIGKILL after GRACE s, to every process of
  the run on every node, then wait for the launch script to record the rc;
* ``local-ranks RUN_DIR`` / ``local-stop RUN_DIR GRACE``: the same on this node only (run over ssh).

A process belongs to a run when its environment holds ``HOROVOD_LAUNCH_RUN_DIR=RUN_DIR``: the launch
script exports it and horovodrun passes it on to every rank (in a torchrun run, every node's torchrun has it
and passes it on to its ranks). Nothing else in the containers is touched.
"""

import json
import os
import re
import shlex
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Dict, List, Optional, Set, Tuple  # Python 3.6: no PEP 585/604 forms

RUN_ENV = "HOROVOD_LAUNCH_RUN_DIR"
SCRIPT = "horovod-launch.sh"
MANIFEST = "manifest.json"
LAST_LINE_MAX = 160
TAIL_LINES = 200
TICK = 0.25

# The values of NAME=value words are hidden in every command line this prints: horovodrun puts the run's
# environment (which may hold secrets) on its ranks' command lines. The same pattern as
# plugins/module_utils/jobs.py (tests/unit/plugins/module_utils/test_horovod_run_helper.py checks that they agree).
ASSIGNMENT = re.compile(r"(?<![^\s'\"])([A-Za-z_][A-Za-z0-9_]*)=(?:'[^']*'|\"[^\"]*\"|\S*)")


def redact(args: str) -> str:
    return ASSIGNMENT.sub(lambda match: f"{match.group(1)}=...", args)


def _proc_pids() -> List[int]:
    return [int(entry) for entry in os.listdir("/proc") if entry.isdigit()]


def _read(path: str) -> Optional[bytes]:
    try:
        with open(path, "rb") as handle:
            return handle.read()
    except OSError:
        return None


def lineage() -> Set[int]:
    """This process and its ancestors (never signalled, never counted)."""
    pids, pid = set(), os.getpid()
    while pid > 1 and pid not in pids:
        pids.add(pid)
        stat = _read(f"/proc/{pid}/stat")
        if not stat:
            break
        # pid (comm) state ppid ...; comm may hold spaces and parentheses.
        pid = int(stat.rsplit(b")", 1)[1].split()[1])
    return pids


def environ(pid: int) -> Dict[str, str]:
    raw = _read(f"/proc/{pid}/environ") or b""
    out = {}
    for item in raw.split(b"\0"):
        name, sep, value = item.partition(b"=")
        if sep:
            out[name.decode(errors="replace")] = value.decode(errors="replace")
    return out


def cmdline(pid: int) -> List[str]:
    return [a.decode(errors="replace") for a in (_read(f"/proc/{pid}/cmdline") or b"").split(b"\0") if a]


def run_processes(run_dir: str) -> List[Dict[str, object]]:
    """The processes here that belong to the run: pid, rank (None for the launcher's own) and args."""
    mine = lineage()
    found = []
    for pid in _proc_pids():
        if pid in mine:
            continue
        env = environ(pid)
        if env.get(RUN_ENV) != run_dir:
            continue
        # horovodrun's ranks have HOROVOD_RANK; torchrun's have RANK (its own agent has neither).
        rank = env.get("HOROVOD_RANK") or env.get("RANK")
        found.append({"pid": pid, "rank": int(rank) if rank and rank.isdigit() else None, "args": cmdline(pid)})
    return sorted(found, key=lambda p: int(p["pid"]))  # type: ignore[call-overload]


def launcher_running(run_dir: str) -> bool:
    """Whether the run's launch script (``sh RUN_DIR/horovod-launch.sh``) runs here."""
    script = f"{run_dir}/{SCRIPT}"
    return any(script in cmdline(pid)[:3] for pid in _proc_pids() if pid != os.getpid())


def _int(path: Path) -> Optional[int]:
    try:
        return int(path.read_text().strip())
    except (OSError, ValueError):
        return None


def _manifest(path: Path) -> Optional[Dict[str, object]]:
    """The run's manifest.json (written by the role when it starts the run), None without one."""
    try:
        value = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return value if isinstance(value, dict) else None


def _tail(path: Path, lines: int) -> List[str]:
    try:
        with path.open("rb") as handle:
            handle.seek(0, os.SEEK_END)
            handle.seek(max(0, handle.tell() - 65536))
            text = handle.read().decode(errors="replace")
    except OSError:
        return []
    return text.splitlines()[-lines:]


def hostfile_ranks(path: Path) -> List[str]:
    """The host of each rank, in rank order, from the run's hostfile (``ADDRESS slots=N`` lines)."""
    hosts: List[str] = []
    try:
        text = path.read_text()
    except OSError:
        return hosts
    for line in text.splitlines():
        parts = line.split()
        if not parts:
            continue
        slots = 1
        for part in parts[1:]:
            if part.startswith("slots=") and part[6:].isdigit():
                slots = int(part[6:])
        hosts += [parts[0]] * slots
    return hosts


def _elastic_torchrun(run_dir: Path) -> bool:
    """Whether the run is an elastic torchrun run (its torchrun.json says so)."""
    try:
        return json.loads((run_dir / "torchrun.json").read_text()).get("elastic") is True
    except (OSError, ValueError, AttributeError):
        return False


def elastic_hosts(run_dir: Path) -> Dict[str, object]:
    """An elastic run's host set now and how it changed (its discovery script's hosts.current and hosts.log,
    or, for a torchrun run, its launcher's: the nodes of the rendezvous's round that last had every rank up).

    ``{}`` for a run that is not elastic (no discovery.json, no elastic torchrun.json); else ``elastic``,
    ``current_hosts`` (the ``ADDRESS:SLOTS`` the driver was last told of, or a torchrun run's
    ``NODE:PROCESSES``), ``hosts_since`` (epoch seconds) and ``host_sets`` (the number of sets the run has
    had, the first included).
    """
    if not (run_dir / "discovery.json").is_file() and not _elastic_torchrun(run_dir):
        return {}
    try:
        current = json.loads((run_dir / "hosts.current").read_text())
        hosts, since = [str(h) for h in current["hosts"]], int(current["since"])
    except (OSError, ValueError, KeyError, TypeError):
        hosts, since = [], None
    try:
        sets = sum(1 for line in (run_dir / "hosts.log").read_text().splitlines() if line.strip())
    except OSError:
        sets = 0
    return {"elastic": True, "current_hosts": hosts, "hosts_since": since, "host_sets": sets}


def run_status(run_dir: Path, running: bool, now: float) -> Dict[str, object]:
    started, finished, rc = _int(run_dir / "started"), _int(run_dir / "finished"), _int(run_dir / "rc")
    stopped = (run_dir / "stopped").exists()
    if running:
        state = "running"
    elif rc is None:
        state = "interrupted"
    elif stopped:
        state = "stopped"
    else:
        state = "finished" if rc == 0 else "failed"
    end = finished if finished is not None and not running else int(now)
    lines = [line for line in _tail(run_dir / "launcher.log", TAIL_LINES) if line.strip()]
    last = lines[-1].strip() if lines else ""
    return {
        "name": run_dir.name,
        "run_dir": str(run_dir),
        "state": state,
        "started": started,
        "finished": finished if not running else None,
        "duration_s": max(0, end - started) if started is not None else None,
        "rc": None if running else rc,
        "last_line": last if len(last) <= LAST_LINE_MAX else last[: LAST_LINE_MAX - 3] + "...",
        "rank_hosts": hostfile_ranks(run_dir / "hostfile"),
        **elastic_hosts(run_dir),
        "log_tail": "\n".join(lines) if state in ("failed", "stopped") else "",
        "manifest": _manifest(run_dir / MANIFEST),
    }


def status(runs_dir: str) -> List[Dict[str, object]]:
    root = Path(runs_dir)
    try:
        dirs = sorted(p for p in root.iterdir() if (p / SCRIPT).is_file())
    except OSError:
        return []
    now = time.time()
    return [run_status(d, launcher_running(str(d)), now) for d in dirs]


def is_local(address: str) -> bool:
    """Whether `address` leads to this container (an address of one of its interfaces)."""
    try:
        ip = socket.gethostbyname(address)
    except OSError:
        return False
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        try:
            sock.bind((ip, 0))
        except OSError:
            return False
    return True


def own_source() -> str:
    """This program's code: it runs as ``python3 -c CODE``, so CODE is the third item of its cmdline."""
    argv = cmdline(os.getpid())
    return argv[2] if len(argv) > 2 and argv[1] == "-c" else Path(__file__).read_text()


def remote(ssh: List[str], address: str, args: List[str], source: str) -> Tuple[int, str, str]:
    """Run this program with `args` in the container at `address`, over the containers' ssh."""
    command = "python3 - " + " ".join(shlex.quote(a) for a in args)
    proc = subprocess.run(
        [*ssh, address, command],
        input=source,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        universal_newlines=True,
        check=False,
    )
    return proc.returncode, proc.stdout, proc.stderr


def send(processes: List[Dict[str, object]], signum: int) -> List[Dict[str, object]]:
    """Send `signum` to each process; those that were still there to get it."""
    reached = []
    for process in processes:
        try:
            os.kill(int(process["pid"]), signum)  # type: ignore[call-overload]
            reached.append(process)
        except ProcessLookupError:
            pass
    return reached


def local_stop(run_dir: str, grace: float) -> Dict[str, object]:
    """SIGTERM every process of the run here, SIGKILL what is left after `grace` seconds."""
    terminated = send(run_processes(run_dir), signal.SIGTERM)
    deadline = time.monotonic() + grace
    left = run_processes(run_dir)
    while left and time.monotonic() < deadline:
        time.sleep(TICK)
        left = run_processes(run_dir)
    killed = send(left, signal.SIGKILL)
    time.sleep(TICK if killed else 0)
    return {
        "host": socket.gethostname(),
        "terminated": [redact(" ".join(p["args"])) for p in terminated],  # type: ignore[arg-type]
        "killed": [redact(" ".join(p["args"])) for p in killed],  # type: ignore[arg-type]
        "left": [redact(" ".join(p["args"])) for p in run_processes(run_dir)],  # type: ignore[arg-type]
    }


def local_ranks(run_dir: str) -> Dict[str, object]:
    ranks = sorted({p["rank"] for p in run_processes(run_dir) if p["rank"] is not None})  # type: ignore[type-var]
    return {"host": socket.gethostname(), "ranks": ranks}


def _others(addresses: List[str]) -> List[str]:
    return [a for a in dict.fromkeys(addresses) if not is_local(a)]


def _remote_json(ssh: List[str], address: str, args: List[str], source: str) -> Dict[str, object]:
    rc, out, err = remote(ssh, address, args, source)
    if rc != 0:
        return {"host": address, "error": f"rc {rc}: {err.strip()[-300:]}"}
    try:
        return json.loads(out)
    except ValueError:
        return {"host": address, "error": f"unreadable answer: {out.strip()[-300:]}"}


def up(run_dir: str, np: int, wait: float, ssh: List[str], addresses: List[str]) -> Dict[str, object]:
    """Wait until every rank has been seen running somewhere (or the run ended, or `wait` passed)."""
    source, others = own_source(), _others(addresses)
    seen: Dict[str, Set[int]] = {}
    errors: Dict[str, str] = {}
    deadline = time.monotonic() + wait
    next_remote = 0.0
    while True:
        seen.setdefault("localhost", set()).update(local_ranks(run_dir)["ranks"])  # type: ignore[arg-type]
        if time.monotonic() >= next_remote:
            for address in others:
                answer = _remote_json(ssh, address, ["local-ranks", run_dir], source)
                if "error" in answer:
                    errors[address] = str(answer["error"])
                else:
                    seen.setdefault(address, set()).update(answer["ranks"])  # type: ignore[arg-type]
            next_remote = time.monotonic() + 1.0
        ranks = set().union(*seen.values())
        ended = (Path(run_dir) / "rc").exists()
        if len(ranks) >= np or ended or time.monotonic() >= deadline:
            state = "up" if len(ranks) >= np else ("ended" if ended else "timeout")
            return {
                "state": state,
                "ranks": sorted(ranks),
                "by_host": {h: sorted(r) for h, r in seen.items()},
                "errors": errors,
            }
        time.sleep(TICK)


def stop(run_dir: str, grace: float, ssh: List[str], addresses: List[str]) -> Dict[str, object]:
    """End every process of the run on every node, then wait (grace + 10 s at most) for its rc.

    ``clean`` tells whether nothing of the run is left and its rc is recorded; ``problem`` says what is
    wrong otherwise, ``summary`` what was ended on each host."""
    source = own_source()
    hosts = [local_stop(run_dir, grace)]
    for address in _others(addresses):
        answer = _remote_json(ssh, address, ["local-stop", run_dir, str(grace)], source)
        answer["address"] = address
        hosts.append(answer)
    rc_file = Path(run_dir) / "rc"
    deadline = time.monotonic() + grace + 10
    while not rc_file.exists() and launcher_running(run_dir) and time.monotonic() < deadline:
        time.sleep(TICK)
    rc, running = _int(rc_file), launcher_running(run_dir)
    where = []
    for host in hosts:
        if "error" in host:
            where.append(f"{host.get('address', host['host'])}: {host['error']}")
        elif host["left"]:
            where.append(f"{host.get('address', host['host'])}: still running: {'; '.join(host['left'])}")  # type: ignore[arg-type]
        else:
            where.append(f"{host.get('address', host['host'])}: ended")
    ended = [
        f"{host['host']}: {len(host['terminated'])} processes ended"  # type: ignore[arg-type]
        + (f", {len(host['killed'])} killed after {grace:g} s" if host["killed"] else "")  # type: ignore[arg-type]
        for host in hosts
        if "error" not in host
    ]
    return {
        "hosts": hosts,
        "rc": rc,
        "launcher_running": running,
        "clean": rc is not None and all("error" not in host and not host["left"] for host in hosts),
        "problem": f"{'; '.join(where)}; exit status {'not recorded' if rc is None else rc} "
        f"(launcher still running: {running})",
        "summary": "; ".join(ended),
    }


def main(argv: List[str]) -> int:
    usage = (
        "usage: horovod_run.py status RUNS_DIR | up RUN_DIR NP WAIT SSH_JSON ADDRESS... | "
        "stop RUN_DIR GRACE SSH_JSON ADDRESS... | local-ranks RUN_DIR | local-stop RUN_DIR GRACE"
    )
    if not argv:
        print(usage, file=sys.stderr)
        return 2
    command, args = argv[0], argv[1:]
    if command == "status" and len(args) == 1:
        result: object = status(args[0])
    elif command == "up" and len(args) >= 4:
        result = up(args[0], int(args[1]), float(args[2]), json.loads(args[3]), args[4:])
    elif command == "stop" and len(args) >= 3:
        result = stop(args[0], float(args[1]), json.loads(args[2]), args[3:])
    elif command == "local-ranks" and len(args) == 1:
        result = local_ranks(args[0])
    elif command == "local-stop" and len(args) == 2:
        result = local_stop(args[0], float(args[1]))
    else:
        print(usage, file=sys.stderr)
        return 2
    print(json.dumps(result, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
