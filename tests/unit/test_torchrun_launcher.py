# Copyright: multinode.horovod contributors
# SPDX-License-Identifier: GPL-3.0-or-later
"""roles/horovod_launch/files/horovod_torchrun.py, the torchrun run's launcher, run for real with a stand-in
torchrun (this machine has no torch): every node's and every rank's output in the run's directory, the first
failing node's status as the run's, the first failing rank named so that the role's report finds it, the
other nodes stopped once one failed, a stopped run ending every node, no link followed."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from ansible_collections.multinode.horovod.plugins.module_utils.horovod_run import EXIT_CODE_RE, failed_rank
from checkout import load

REPO = Path(__file__).resolve().parents[2]
LAUNCHER = REPO / "roles" / "horovod_launch" / "files" / "horovod_torchrun.py"

# What the stand-in does of torchrun: --nnodes, --node_rank, --nproc_per_node, --no_python; it starts the
# node's processes with RANK and LOCAL_RANK as torchrun does (node rank * processes + local rank); when one of
# them fails it stops the others and exits 1, and it forwards SIGTERM to them.
FAKE_TORCHRUN = r"""
import os, signal, subprocess, sys
args = sys.argv[1:]
opts = {}
while args and args[0].startswith("--"):
    name = args.pop(0)
    if name == "--no_python":
        continue
    opts[name] = args.pop(0)
nproc, node = int(opts["--nproc_per_node"]), int(opts["--node_rank"])
sys.stderr.write(f"fake torchrun: node {node} of {opts['--nnodes']}, {nproc} processes\n")
world = str(int(opts["--nnodes"].split(":")[-1]) * nproc)
procs = [subprocess.Popen(args, env={**os.environ, "RANK": str(node * nproc + i), "LOCAL_RANK": str(i),
                                     "WORLD_SIZE": world})
         for i in range(nproc)]
# The tests' lost node: it leaves once its ranks are up, as a node whose container was stopped.
leave = os.path.join(os.path.dirname(os.path.abspath(__file__)), f"leave-once.{node}")
if os.path.exists(leave):
    os.unlink(leave)
    import time
    time.sleep(1)
    for p in procs:
        p.kill()
    sys.exit(137)
def stop(signum, frame):
    for p in procs:
        if p.poll() is None:
            p.send_signal(signal.SIGTERM)
signal.signal(signal.SIGTERM, stop)
import time
while any(p.poll() is None for p in procs) and not any(p.poll() for p in procs):
    time.sleep(0.05)
stop(None, None)  # as torchrun's agent: one worker failed, the others of the node are stopped
codes = [p.wait() for p in procs]
sys.stderr.write(f"fake torchrun: exit codes {codes}\n")
sys.exit(1 if any(codes) else 0)
"""


def spec(tmp_path: Path, command: list[str], nodes: int = 2, nproc: int = 2, grace: float = 2, **more: object) -> Path:
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    fake = tmp_path / "torchrun"
    fake.write_text(FAKE_TORCHRUN)
    path = run_dir / "torchrun.json"
    path.write_text(
        json.dumps(
            {
                "run_dir": str(run_dir),
                "self": str(LAUNCHER),
                "workdir": str(tmp_path),
                "grace": grace,
                "nodes": [
                    {
                        "name": f"n{i}",
                        "address": f"10.0.0.{i + 1}",
                        "nproc": nproc,
                        "local": True,
                        "args": ["--node_rank", str(i)],
                    }
                    for i in range(nodes)
                ],
                "env": {"HOROVOD_LAUNCH_RUN_DIR": str(run_dir)},
                "torchrun": [sys.executable, str(fake), "--nnodes", str(nodes)],
                "command": command,
                "ssh": ["ssh", "-p", "12345"],
                **more,
            }
        )
    )
    return path


def launch(path: Path, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(LAUNCHER), "launch", str(path)],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
        cwd=path.parent,
    )


RANK_CODE = (
    "import os, sys; r = int(os.environ['RANK']); print('out of rank', r); "
    "print('err of rank', r, file=sys.stderr); sys.exit(int(os.environ.get('FAIL', '0')) if r == 2 else 0)"
)


def test_every_rank_and_node_has_its_log_and_a_good_run_ends_0(tmp_path: Path) -> None:
    done = launch(spec(tmp_path, [sys.executable, "-c", RANK_CODE]))
    run_dir = tmp_path / "run"
    assert done.returncode == 0, done.stdout + done.stderr
    for number in range(4):
        assert (run_dir / f"rank.{number}" / "stdout").read_text() == f"out of rank {number}\n"
        assert (run_dir / f"rank.{number}" / "stderr").read_text() == f"err of rank {number}\n"
    assert "fake torchrun: node 1 of 2, 2 processes" in (run_dir / "node.n1.log").read_text()
    assert "[n0] fake torchrun: node 0 of 2" in done.stdout
    assert "First rank to fail" not in done.stdout
    assert failed_rank(done.stdout) is None


def test_the_first_failing_rank_and_node_are_named_and_the_node_status_is_the_runs(tmp_path: Path) -> None:
    code = RANK_CODE.replace("os.environ.get('FAIL', '0')", "'7'")
    done = launch(spec(tmp_path, [sys.executable, "-c", code]))
    assert done.returncode == 1, done.stdout + done.stderr
    assert "node n1 (node rank 1) failed first, exit status 1" in done.stdout
    assert "First rank to fail: rank 2 on n1, exit code 7" in done.stdout
    # The role's report reads launcher.log (this output) with these.
    assert failed_rank(done.stdout) == 2
    found = EXIT_CODE_RE.search(done.stdout)
    assert found and found.group(1) == "7"


def test_the_other_nodes_are_stopped_once_one_failed(tmp_path: Path) -> None:
    # Rank 2 (node n1) fails at once; the ranks of n0 would sleep for 10 minutes.
    code = "import os, sys, time; r = int(os.environ['RANK']); sys.exit(5) if r == 2 else time.sleep(600)"
    began = time.monotonic()
    done = launch(spec(tmp_path, [sys.executable, "-c", code], grace=1), timeout=120)
    assert time.monotonic() - began < 60
    assert done.returncode == 1, done.stdout + done.stderr
    assert "stopping the nodes that still run" in done.stdout
    assert "First rank to fail: rank 2 on n1, exit code 5" in done.stdout


def test_a_stopped_run_ends_every_node_and_its_ranks(tmp_path: Path) -> None:
    code = "import os, time; print('up', os.environ['RANK'], flush=True); time.sleep(600)"
    proc = subprocess.Popen(
        [sys.executable, str(LAUNCHER), "launch", str(spec(tmp_path, [sys.executable, "-c", code], grace=2))],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    run_dir = tmp_path / "run"
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and not all((run_dir / f"rank.{n}" / "stdout").is_file() for n in range(4)):
        time.sleep(0.2)
    proc.send_signal(signal.SIGTERM)
    out, _unused = proc.communicate(timeout=60)
    assert proc.returncode == 143, out
    assert "the run was stopped" in out
    # No rank of the run is left: each printed its pid's RANK and slept.
    left = subprocess.run(["pgrep", "-f", "time.sleep\\(600\\)"], capture_output=True, text=True, check=False)
    assert str(run_dir) not in left.stdout
    for pid in left.stdout.split():
        environ = Path(f"/proc/{pid}/environ").read_bytes() if Path(f"/proc/{pid}/environ").exists() else b""
        assert str(run_dir).encode() not in environ


def test_a_node_log_planted_as_a_link_is_not_followed(tmp_path: Path) -> None:
    path = spec(tmp_path, [sys.executable, "-c", "pass"])
    victim = tmp_path / "victim"
    victim.write_text("keep\n")
    (path.parent / "node.n0.log").symlink_to(victim)
    done = launch(path)
    assert done.returncode != 0
    assert victim.read_text() == "keep\n"


def test_a_rank_line_is_marked_with_its_rank_and_stream(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "WORLD_SIZE"} | {"RANK": "5"}
    done = subprocess.run(
        [sys.executable, str(LAUNCHER), "rank", "--", sys.executable, "-c", "import sys; print('a'); sys.exit(3)"],
        capture_output=True,
        env=env,
        check=False,
    )
    assert done.returncode == 3
    assert done.stdout == (
        b"@multinode-horovod-rank:5:up:0\n@multinode-horovod-rank:5:out:a\n@multinode-horovod-rank:5:rc:3\n"
    )


@pytest.mark.parametrize("argv", [["rank", "--", "true"], ["node"], []])
def test_a_wrong_call_is_refused(argv: list[str]) -> None:
    env = {k: v for k, v in os.environ.items() if k != "RANK"}
    done = subprocess.run([sys.executable, str(LAUNCHER), *argv], capture_output=True, env=env, check=False)
    assert done.returncode == 2


def test_a_node_cannot_write_another_nodes_ranks(tmp_path: Path) -> None:
    # Node n1 holds ranks 2 and 3; its torchrun (here a stand-in printing the marks itself, as a node's root
    # can) marks a line as rank 0's and an exit status as rank 9's: both stay in n1's own log.
    path = spec(tmp_path, [sys.executable, "-c", "pass"])
    spec_data = json.loads(path.read_text())
    spec_data["torchrun"] = [
        sys.executable,
        "-c",
        "import sys; args = sys.argv[1:]; n = args[args.index('--node_rank') + 1]; "
        "print('@multinode-horovod-rank:0:out:forged' if n == '1' else 'quiet'); "
        "print('@multinode-horovod-rank:9:rc:7' if n == '1' else 'quiet')",
    ]
    path.write_text(json.dumps(spec_data))
    done = launch(path)
    run_dir = tmp_path / "run"
    assert done.returncode == 0, done.stdout + done.stderr
    assert not (run_dir / "rank.0").exists() and not (run_dir / "rank.9").exists()
    assert "@multinode-horovod-rank:0:out:forged" in (run_dir / "node.n1.log").read_text()
    assert "First rank to fail" not in done.stdout


def load_launcher():
    return load("roles/horovod_launch/files/horovod_torchrun.py", "horovod_torchrun")


def elastic_hosts(run_dir: Path) -> dict:
    """What status reads of a run's nodes (files/horovod_run.py, which playbooks/status.yml runs)."""
    return load("roles/horovod_launch/files/horovod_run.py", "horovod_run").elastic_hosts(run_dir)


def test_an_elastic_run_starts_a_node_that_left_again_and_ends_with_the_first_nodes_status(tmp_path: Path) -> None:
    # n1 leaves once, 1 s after its rank came up; the launcher starts it again after the cooldown's 1 s and
    # the run goes on. n0 holds the rendezvous: its status (0) is the run's.
    (tmp_path / "leave-once.1").write_text("")
    code = "import os, time; time.sleep(4 if os.environ['RANK'] == '0' else 1)"
    path = spec(tmp_path, [sys.executable, "-c", code], nproc=1, elastic=True, cooldown=[1, 4])
    done = launch(path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "node n1 (node rank 1) left the run, exit status 137; it is started again in 1 s" in done.stdout
    assert (
        done.stdout.count("node n1 (node rank 1): 1 processes, ")
        + done.stdout.count("node n1 (node rank 1): 1 processes\n")
        == 2
    ), done.stdout
    assert "node n0 (node rank 0), which holds the rendezvous, ended with exit status 0" in done.stdout
    # n1's rank was killed on the way: named only when the run fails.
    assert "First rank to fail" not in done.stdout
    assert not (tmp_path / "leave-once.1").exists()


def test_the_same_loss_ends_a_run_that_is_not_elastic(tmp_path: Path) -> None:
    # The check above fails without elastic: the run ends with the lost node's status.
    (tmp_path / "leave-once.1").write_text("")
    code = "import os, time; time.sleep(4 if os.environ['RANK'] == '0' else 1)"
    done = launch(spec(tmp_path, [sys.executable, "-c", code], nproc=1, grace=1))
    assert done.returncode == 137, done.stdout + done.stderr
    assert "node n1 (node rank 1) failed first, exit status 137" in done.stdout


def test_an_elastic_runs_first_node_failing_ends_the_run_with_its_status(tmp_path: Path) -> None:
    (tmp_path / "leave-once.0").write_text("")
    code = "import time; time.sleep(30)"
    began = time.monotonic()
    done = launch(spec(tmp_path, [sys.executable, "-c", code], nproc=1, grace=1, elastic=True, cooldown=[1, 4]))
    assert time.monotonic() - began < 25
    assert done.returncode == 137, done.stdout + done.stderr
    assert "node n0 (node rank 0), which holds the rendezvous, ended with exit status 137" in done.stdout


def test_an_elastic_run_records_the_nodes_of_each_complete_round(tmp_path: Path) -> None:
    module = load_launcher()
    path = spec(tmp_path, ["true"], nproc=2, elastic=True)
    launcher = module.Launch(json.loads(path.read_text()))
    run_dir = tmp_path / "run"
    for name in ("n0", "n1"):
        launcher.node_logs[name] = os.open(run_dir / f"node.{name}.log", os.O_WRONLY | os.O_CREAT, 0o644)
    mark = "@multinode-horovod-rank:{}:up:{}\n"
    # Round 1: ranks 0-3 of a world of 4; in an elastic run a node's marks count for any rank.
    for name, rank in (("n1", 0), ("n1", 1), ("n0", 2)):
        launcher.line(name, mark.format(rank, 4).encode())
    assert not (run_dir / "hosts.log").exists()  # rank 3 is not up yet
    launcher.line("n0", mark.format(3, 4).encode())
    # n1 is lost; its ranks with it. Round 2: the two ranks of n0 alone.
    launcher.node_ended("n1")
    launcher.line("n0", mark.format(0, 2).encode())
    launcher.line("n0", mark.format(1, 2).encode())
    # The same set again is no new line.
    launcher.line("n0", b"@multinode-horovod-rank:1:rc:143\n")
    launcher.line("n0", mark.format(1, 2).encode())
    lines = (run_dir / "hosts.log").read_text().splitlines()
    assert [line.split(" ", 1)[1] for line in lines] == ["n0:2,n1:2", "n0:2"]
    current = json.loads((run_dir / "hosts.current").read_text())
    assert current["hosts"] == ["n0:2"] and current["since"] == int(lines[-1].split()[0])
    # And what status reads of it.
    found = elastic_hosts(run_dir)
    assert found == {"elastic": True, "current_hosts": ["n0:2"], "hosts_since": current["since"], "host_sets": 2}


def test_a_static_run_records_no_rounds_and_status_calls_it_not_elastic(tmp_path: Path) -> None:
    module = load_launcher()
    path = spec(tmp_path, ["true"], nproc=1)
    launcher = module.Launch(json.loads(path.read_text()))
    launcher.line("n0", b"@multinode-horovod-rank:0:up:2\n")
    launcher.line("n1", b"@multinode-horovod-rank:1:up:2\n")
    assert not (tmp_path / "run" / "hosts.log").exists()
    assert elastic_hosts(tmp_path / "run") == {}


def test_an_elastic_runs_record_planted_as_a_link_is_not_followed(tmp_path: Path) -> None:
    module = load_launcher()
    launcher = module.Launch(json.loads(spec(tmp_path, ["true"], nproc=1, elastic=True).read_text()))
    victim = tmp_path / "victim"
    victim.write_text("keep\n")
    (tmp_path / "run" / "hosts.log").symlink_to(victim)
    launcher.line("n0", b"@multinode-horovod-rank:0:up:2\n")
    launcher.line("n1", b"@multinode-horovod-rank:1:up:2\n")
    assert victim.read_text() == "keep\n"
    assert not (tmp_path / "run" / "hosts.current").exists()
