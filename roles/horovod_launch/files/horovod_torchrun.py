# Copyright: multinode.horovod contributors
# SPDX-License-Identifier: GPL-3.0-or-later
"""A torchrun run of multinode.horovod.horovod_launch: one torchrun per node, started from the master.

Three commands, all in the run's containers (Python 3.6 or newer, the standard library only):

* ``launch SPEC``, in the master's container (the run's launch script runs it; SPEC is the run's
  ``torchrun.json``): starts ``node`` on every node of the run, on the master itself and on the others over
  the pinned ssh, with the node's rank and process count. It writes each node's own output (torchrun's)
  to ``node.<NAME>.log`` and, with a ``[NAME]`` prefix, to its standard output (the launch script's
  launcher.log), and each rank's output to ``rank.<N>/stdout`` and ``rank.<N>/stderr`` in the run's
  directory, which only the master writes: the workers send their ranks' lines over ssh. When a node
  fails, the others get GRACE seconds to end on their own, then are stopped. It ends with the exit status
  of the first node that failed (0 when none did) and names the first rank that failed.

  An elastic run (the spec's ``elastic``: torchrun's c10d rendezvous, which the role starts only when the
  workers are trusted) goes on when a node other than the first ends: that node is started again after
  the cooldown's seconds (doubled after each failed try, up to its upper bound) while the first node (the
  master's) runs, and the run's exit status is that node's, whose agent holds the rendezvous store. Its ranks
  move between nodes from one round of the rendezvous to the next, so a node's lines count for any rank.
  Each time every rank of a round has started, the nodes in it are recorded for playbooks/status.yml as the
  discovery script of a Horovod elastic run records its hosts: ``hosts.current`` (``{"hosts": [...],
  "since": EPOCH}``, replaced atomically) and a line in ``hosts.log`` (``EPOCH NAME:PROCESSES,...``).
* ``node -- TORCHRUN ...``: runs torchrun and stops it (SIGTERM, SIGKILL after GRACE s) when its standard
  input closes, i.e. when ``launch`` or its ssh connection goes away: no torchrun outlives its run.
* ``rank -- COMMAND ...`` (torchrun starts it once per rank, ``--no_python``): says that the rank is up and
  in a world of how many ranks (torchrun's WORLD_SIZE), runs the command and sends its output, line by line
  and marked with the rank (torchrun's RANK), to torchrun's output, and at the end its exit status.

Every process carries the run's HOROVOD_LAUNCH_RUN_DIR (``node`` gets it on its command line and torchrun
passes it on), which is how playbooks/status.yml and playbooks/stop.yml find them on every node.
"""

import json
import os
import re
import shlex
import signal
import subprocess
import sys
import threading
import time
from typing import Dict, List, Optional  # Python 3.6: no PEP 585/604 forms

# What a rank's line looks like on torchrun's output: the mark, the rank, the stream, the text.
MARK = b"@multinode-horovod-rank:"
# torchrun's tee, where the role asks for it (torch before 2.0, local rank 9), puts "[default9]:" in front.
MARK_RE = re.compile(rb"^(?:\[[A-Za-z0-9_]+\]:)?@multinode-horovod-rank:([0-9]+):(out|err|rc|up):(.*)$", re.DOTALL)
# One line at most, so that lines of ranks that share a pipe never mix (PIPE_BUF is 4096 on Linux);
# a longer line arrives in pieces.
LINE_MAX = 4000
TICK = 0.25
# Log files in the run's directory: created afresh, never through a link.
NEW_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW  # novermin (not a union type)
APPEND_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW  # novermin (not a union type)
EXCL_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW  # novermin (not a union type)
# An elastic run's record of the nodes in it (as files/horovod_discover.py's of a Horovod run's hosts).
CURRENT = "hosts.current"
LOG = "hosts.log"


def status_of(returncode: int) -> int:
    """A shell's exit status for a process's returncode (128 + N for a signal N)."""
    return 128 - returncode if returncode < 0 else returncode


def _stop(proc: "subprocess.Popen[bytes]", grace: float) -> None:
    """SIGTERM `proc`, SIGKILL it after `grace` seconds."""
    if proc.poll() is not None:
        return
    proc.send_signal(signal.SIGTERM)
    deadline = time.monotonic() + grace
    while proc.poll() is None and time.monotonic() < deadline:
        time.sleep(TICK)
    if proc.poll() is None:
        proc.kill()


def forward_signals(proc: "subprocess.Popen[bytes]") -> None:
    """SIGTERM, SIGINT and SIGHUP sent to this process go on to `proc` (stop.yml signals every process of
    the run; the child ends as it would have)."""

    def forward(signum: int, _frame: object) -> None:
        if proc.poll() is None:
            proc.send_signal(signum)

    for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(signum, forward)


def node(argv: List[str], grace: float) -> int:
    """Run torchrun (`argv`) until it ends, or stop it once standard input closes."""
    proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL)
    forward_signals(proc)

    def watch() -> None:
        while os.read(0, 4096):
            pass
        _stop(proc, grace)

    threading.Thread(target=watch, daemon=True).start()
    return status_of(proc.wait())


def rank(argv: List[str]) -> int:
    """Run one rank's command; its output and exit status, marked with its rank, on standard output."""
    number = os.environ.get("RANK", "")
    if not number.isdigit():
        sys.stderr.write("rank: RANK is not set: torchrun starts this, once per rank\n")
        return 2
    out = sys.stdout.buffer
    lock = threading.Lock()

    def send(stream: bytes, text: bytes) -> None:
        with lock:
            out.write(MARK + number.encode() + b":" + stream + b":" + text)
            out.flush()

    world = os.environ.get("WORLD_SIZE", "")
    send(b"up", (world if world.isdigit() else "0").encode() + b"\n")
    try:
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    except OSError as exc:
        send(b"err", f"cannot run {argv[0]}: {exc}\n".encode())
        send(b"rc", b"127\n")
        return 127
    forward_signals(proc)

    def pump(pipe: "object", stream: bytes) -> None:
        for line in iter(lambda: pipe.readline(LINE_MAX), b""):  # type: ignore[attr-defined]
            send(stream, line if line.endswith(b"\n") else line + b"\n")

    threads = [
        threading.Thread(target=pump, args=(proc.stdout, b"out")),
        threading.Thread(target=pump, args=(proc.stderr, b"err")),
    ]
    for thread in threads:
        thread.start()
    code = status_of(proc.wait())
    for thread in threads:
        thread.join()
    send(b"rc", f"{code}\n".encode())
    return code


class Launch:
    """One run: the nodes' processes, their logs and what they said of their ranks."""

    def __init__(self, spec: Dict[str, object]) -> None:
        self.spec = spec
        self.run_dir = str(spec["run_dir"])
        self.grace = float(spec.get("grace", 30))  # type: ignore[arg-type]
        self.nodes = list(spec["nodes"])  # type: ignore[call-overload]
        self.elastic = bool(spec.get("elastic"))
        self.cooldown = [float(v) for v in spec.get("cooldown") or [10, 300]]  # type: ignore[attr-defined]
        self.lock = threading.Lock()
        self.rank_files = {}  # type: Dict[str, int]
        self.rank_ends = []  # type: List[Dict[str, object]]
        self.node_logs = {}  # type: Dict[str, int]
        self.stopping = False
        # The ranks each node holds (torchrun numbers them in node rank order): a node's root controls
        # what its ssh sends, so a line it marks with another node's rank is not that rank's. An elastic
        # run's ranks move between nodes: there any node's mark counts (its workers are trusted).
        self.ranks = {}  # type: Dict[str, range]
        first = 0
        for entry in self.nodes:
            count = int(entry["nproc"])  # type: ignore[call-overload]
            self.ranks[str(entry["name"])] = range(first, first + count)
            first += count
        # An elastic run's ranks up now (rank: (node, world size)) and the node set last recorded.
        self.up = {}  # type: Dict[int, tuple]
        self.recorded = None  # type: Optional[List[str]]
        # Seconds before an elastic run's node that left is started again, by node (the cooldown's lower
        # bound until it failed to come up).
        self.delays = {}  # type: Dict[str, float]
        self.env = {}  # type: Dict[str, str]
        self.threads = []  # type: List[threading.Thread]

    # --- what runs on each node -------------------------------------------------------------------
    def node_argv(self, index: int) -> List[str]:
        """The command that starts node `index`'s torchrun, on the master or over ssh."""
        entry = self.nodes[index]  # type: Dict[str, object]
        spec = self.spec
        torchrun = [
            *spec["torchrun"],  # type: ignore[misc]
            *[str(arg) for arg in entry.get("args") or []],  # type: ignore[attr-defined]
            "--nproc_per_node",
            str(entry["nproc"]),
            "--no_python",
            "python3",
            str(spec["self"]),
            "rank",
            "--",
            *spec["command"],  # type: ignore[misc]
        ]
        env = [f"{k}={v}" for k, v in sorted(dict(spec["env"]).items())]  # type: ignore[call-overload]
        wrapper = ["env", *env, "python3", str(spec["self"]), "node", "--grace", str(self.grace), "--", *torchrun]
        if entry.get("local"):
            return wrapper
        remote = f"cd {shlex.quote(str(spec['workdir']))} && exec " + " ".join(shlex.quote(w) for w in wrapper)
        return [*spec["ssh"], str(entry["address"]), remote]  # type: ignore[misc]

    # --- logs -------------------------------------------------------------------------------------
    def _write(self, fd: int, data: bytes) -> None:
        while data:
            data = data[os.write(fd, data) :]

    def _rank_fd(self, number: str, stream: str) -> int:
        key = f"{number}/{stream}"
        if key not in self.rank_files:
            directory = os.path.join(self.run_dir, f"rank.{number}")
            try:
                os.mkdir(directory, 0o755)
            except FileExistsError:
                pass
            name = "stdout" if stream == "out" else "stderr"
            self.rank_files[key] = os.open(os.path.join(directory, name), APPEND_FLAGS, 0o644)
        return self.rank_files[key]

    def line(self, name: str, data: bytes) -> None:
        """One line a node sent: a rank's (to its file, its start or its end) or the node's own."""
        found = MARK_RE.match(data)
        if found and not self.elastic and int(found.group(1)) not in self.ranks[name]:
            found = None  # kept as the node's own line, in its log
        with self.lock:
            if found:
                number, stream, text = found.group(1).decode(), found.group(2).decode(), found.group(3)
                if stream == "rc":
                    code = int(text.strip() or b"0") if text.strip().isdigit() else 255
                    self.rank_ends.append({"rank": int(number), "rc": code, "node": name, "at": time.time()})
                    self.up.pop(int(number), None)
                elif stream == "up":
                    world = int(text.strip()) if text.strip().isdigit() else 0
                    # A rank of another world size belongs to an earlier round (a rank killed ends unsaid).
                    self.up = {n: up for n, up in self.up.items() if up[1] == world}
                    self.up[int(number)] = (name, world)
                    self.delays.pop(name, None)
                    self._round()
                else:
                    self._write(self._rank_fd(number, stream), text)
                return
            self._write(self.node_logs[name], data)
            sys.stdout.buffer.write(f"[{name}] ".encode() + data)
            sys.stdout.buffer.flush()

    def node_ended(self, name: str) -> None:
        """A node's torchrun ended: none of its ranks runs any more."""
        with self.lock:
            for number in [n for n, (node, _world) in self.up.items() if node == name]:
                del self.up[number]

    def _round(self) -> None:
        """Record an elastic run's nodes when every rank of a round is up (with the lock held)."""
        worlds = {world for _node, world in self.up.values()}
        world = worlds.pop() if len(worlds) == 1 else 0
        if not self.elastic or not world or sorted(self.up) != list(range(world)):
            return
        counts = {}  # type: Dict[str, int]
        for node, _world in self.up.values():
            counts[node] = counts.get(node, 0) + 1
        order = [str(entry["name"]) for entry in self.nodes]
        hosts = [f"{node}:{counts[node]}" for node in sorted(counts, key=order.index)]
        if hosts == self.recorded:
            return
        self.recorded = hosts
        sys.stdout.write(f"nodes in the run now: {', '.join(hosts)}\n")
        sys.stdout.flush()
        try:
            self._record(hosts, int(time.time()))
        except OSError as exc:  # a link in the run's directory, a full disk: the run goes on unrecorded
            sys.stdout.write(f"cannot record the nodes in the run in {self.run_dir}: {exc}\n")
            sys.stdout.flush()

    def _record(self, hosts: List[str], since: int) -> None:
        """hosts.current, replaced through a new file (never a link), and a line in hosts.log."""
        fd = os.open(os.path.join(self.run_dir, LOG), APPEND_FLAGS, 0o644)
        try:
            self._write(fd, f"{since} {','.join(hosts)}\n".encode())
        finally:
            os.close(fd)
        temporary = os.path.join(self.run_dir, f".{CURRENT}.{os.getpid()}")
        try:
            os.unlink(temporary)
        except FileNotFoundError:
            pass
        fd = os.open(temporary, EXCL_FLAGS, 0o644)
        try:
            self._write(fd, json.dumps({"hosts": hosts, "since": since}).encode())
        finally:
            os.close(fd)
        os.replace(temporary, os.path.join(self.run_dir, CURRENT))

    def pump(self, name: str, pipe: "object") -> None:
        for data in iter(lambda: pipe.readline(LINE_MAX), b""):  # type: ignore[attr-defined]
            self.line(name, data if data.endswith(b"\n") else data + b"\n")

    def say(self, text: str) -> None:
        with self.lock:
            sys.stdout.write(text + "\n")
            sys.stdout.flush()

    # --- the run ----------------------------------------------------------------------------------
    def run(self) -> int:
        for entry in self.nodes:
            name = str(entry["name"])
            self.node_logs[name] = os.open(os.path.join(self.run_dir, f"node.{name}.log"), NEW_FLAGS, 0o644)
        signal.signal(signal.SIGTERM, self._on_signal)
        signal.signal(signal.SIGINT, self._on_signal)
        self.env = dict(os.environ)
        self.env.update({str(k): str(v) for k, v in dict(self.spec["env"]).items()})  # type: ignore[call-overload]
        procs = [self.start(index) for index in range(len(self.nodes))]
        first = self.wait(procs)
        for thread in self.threads:
            thread.join()
        for fd in [*self.node_logs.values(), *self.rank_files.values()]:
            os.close(fd)
        return self.summary(procs, first)

    def start(self, index: int) -> "subprocess.Popen[bytes]":
        """Start node `index`'s torchrun and the threads that read its output."""
        entry = self.nodes[index]
        name = str(entry["name"])
        self.say(
            f"node {name} (node rank {index}): {entry['nproc']} processes"
            + ("" if entry.get("local") else f", over ssh to {entry['address']}")
        )
        proc = subprocess.Popen(
            self.node_argv(index),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=str(self.spec["workdir"]) if entry.get("local") else None,
            env=self.env,
        )
        for pipe in (proc.stdout, proc.stderr):
            thread = threading.Thread(target=self.pump, args=(name, pipe))
            thread.start()
            self.threads.append(thread)
        return proc

    def _on_signal(self, _signum: int, _frame: object) -> None:
        self.stopping = True

    def _close(self, proc: "subprocess.Popen[bytes]") -> None:
        try:
            proc.stdin.close()  # type: ignore[union-attr]
        except OSError:
            pass

    def wait(self, procs: "List[subprocess.Popen[bytes]]") -> Optional[int]:
        """Wait for every node; the index of the first that failed, if one did (in an elastic run node rank 0
        once it ended, and the others are started again while it runs)."""
        first = None  # type: Optional[int]
        closed_at = None  # type: Optional[float]
        deadline = None  # type: Optional[float]
        retry = {}  # type: Dict[int, float]  # node index: when it is started again
        # Every node polled each time (any() would stop at the first still running).
        while None in [proc.poll() for proc in procs] or (retry and closed_at is None):
            now = time.monotonic()
            if self.elastic and closed_at is None:
                self._rejoin(procs, retry, now)
            if first is None:
                first = self._master_ended(procs) if self.elastic else self._failed(procs)
                deadline = None if first is None else now + self.grace
            if closed_at is None and (self.stopping or (deadline is not None and now >= deadline)):
                self.say("stopping the nodes that still run" + (" (the run was stopped)" if self.stopping else ""))
                for proc in procs:
                    self._close(proc)
                closed_at = now
                retry.clear()
            if closed_at is not None and now >= closed_at + self.grace + 5:
                for proc in procs:
                    if proc.poll() is None:
                        proc.kill()
            time.sleep(TICK)
        if first is None:
            first = self._master_ended(procs) if self.elastic else self._failed(procs)
        for proc in procs:
            self._close(proc)
        return first

    def _master_ended(self, procs: "List[subprocess.Popen[bytes]]") -> Optional[int]:
        """An elastic run's end: node rank 0 (it holds the rendezvous store) once it ended; the others get
        GRACE s."""
        index = 0
        if procs[index].poll() is None:
            return None
        self.say(
            f"node {self.nodes[index]['name']} (node rank {index}), which holds the rendezvous, ended with exit "
            f"status {status_of(procs[index].returncode)}; the other nodes get {self.grace:.0f} s to end"
        )
        return index

    def _rejoin(self, procs: "List[subprocess.Popen[bytes]]", retry: Dict[int, float], now: float) -> None:
        """Start again, after the cooldown, an elastic run's node that left it (a status other than 0)."""
        for index, proc in enumerate(procs):
            name = str(self.nodes[index]["name"])
            if index == 0 or proc.poll() is None:
                continue
            if index not in retry:
                if proc.returncode == 0:
                    continue  # its part of the run is done
                self.node_ended(name)
                delay = self.delays.get(name, self.cooldown[0])
                retry[index] = now + delay
                self.say(
                    f"node {name} (node rank {index}) left the run, exit status {status_of(proc.returncode)}; "
                    f"it is started again in {delay:.0f} s"
                )
            elif now >= retry[index]:
                del retry[index]
                # A next try, if this one fails before its ranks are up, waits twice as long (at most the
                # cooldown's upper bound).
                with self.lock:
                    self.delays[name] = min(self.delays.get(name, self.cooldown[0]) * 2, self.cooldown[1])
                procs[index] = self.start(index)

    def _failed(self, procs: "List[subprocess.Popen[bytes]]") -> Optional[int]:
        """The first node (in node rank order) seen ended with a non-zero status, said; None if none is."""
        for index, proc in enumerate(procs):
            if proc.returncode not in (None, 0):
                self.say(
                    f"node {self.nodes[index]['name']} (node rank {index}) failed first, exit status "
                    f"{status_of(proc.returncode)}; the other nodes get {self.grace:.0f} s to end"
                )
                return index
        return None

    def summary(self, procs: "List[subprocess.Popen[bytes]]", first: Optional[int]) -> int:
        for index, proc in enumerate(procs):
            self.say(f"node {self.nodes[index]['name']} (node rank {index}): exit status {status_of(proc.returncode)}")
        failed = sorted((end for end in self.rank_ends if end["rc"] != 0), key=lambda end: end["at"])  # type: ignore[arg-type, return-value]
        code = 143 if self.stopping else 0 if first is None else status_of(procs[first].returncode)
        # An elastic run's ranks fail on the way when a node leaves; they are named only if the run failed.
        if failed and (code != 0 or not self.elastic):
            end = failed[0]
            self.say(f"First rank to fail: rank {end['rank']} on {end['node']}, exit code {end['rc']}")
        return code


def main(argv: List[str]) -> int:
    if len(argv) >= 2 and argv[0] == "launch":
        with open(argv[1], encoding="utf-8") as handle:
            return Launch(json.load(handle)).run()
    if argv[:1] == ["node"] and "--" in argv:
        split = argv.index("--")
        options, rest = argv[1:split], argv[split + 1 :]
        grace = float(options[1]) if options[:1] == ["--grace"] and len(options) > 1 else 30.0
        return node(rest, grace) if rest else 2
    if argv[:2] == ["rank", "--"] and len(argv) > 2:
        return rank(argv[2:])
    sys.stderr.write(__doc__ or "")
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
