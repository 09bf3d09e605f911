# Copyright: multinode.horovod contributors
# SPDX-License-Identifier: GPL-3.0-or-later
"""Unit tests for the helper scripts of roles/horovod_launch/files (progress and probe)."""

from __future__ import annotations

import ast
import functools
import glob
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time
from types import ModuleType

import pytest
from ansible_collections.multinode.horovod.plugins.module_utils.horovod_preflight import preflight
from checkout import REPO
from checkout import load as load_path

FILES = REPO / "roles" / "horovod_launch" / "files"


def load(name: str) -> ModuleType:
    return load_path(f"roles/horovod_launch/files/{name}.py", name)


progress = load("horovod_progress")
probe = load("horovod_probe")
nccl_check = load("horovod_nccl_check")


def test_progress_before_start(tmp_path):
    assert progress.status(tmp_path, time.time()) == {"ended": False, "line": "starting"}


def test_progress_while_running_shows_last_line(tmp_path):
    (tmp_path / "started").write_text("1000\n")
    (tmp_path / "launcher.log").write_text("[0]<stdout>:epoch 1\n[1]<stdout>:epoch 2 loss 0.5\n\n")
    assert progress.status(tmp_path, 1042.7) == {"ended": False, "line": "running 42s | [1]<stdout>:epoch 2 loss 0.5"}


def test_progress_running_without_output(tmp_path):
    (tmp_path / "started").write_text("1000")
    assert progress.status(tmp_path, 1001)["line"] == "running 1s | (no output yet)"


def test_progress_long_line_is_shortened(tmp_path):
    (tmp_path / "started").write_text("1000")
    (tmp_path / "launcher.log").write_text("x" * 500 + "\n")
    seen = progress.status(tmp_path, 1000)
    assert not seen["ended"]
    assert seen["line"].endswith("...")
    assert len(seen["line"]) < 200


def test_progress_finished(tmp_path):
    (tmp_path / "started").write_text("1000")
    (tmp_path / "finished").write_text("1093")
    (tmp_path / "rc").write_text("1\n")
    os.utime(tmp_path / "rc", (4998, 4998))
    assert progress.status(tmp_path, 5000) == {
        "ended": True,
        "rc": 1,
        "duration_s": 93,
        "end_seen_after_s": 2.0,
        "stopped": False,
        "line": "finished rc=1 after 93s, seen 2.00s after the end",
    }


def test_progress_finished_says_when_stop_marked_it(tmp_path):
    (tmp_path / "started").write_text("1000")
    (tmp_path / "finished").write_text("1012")
    (tmp_path / "rc").write_text("143")
    (tmp_path / "stopped").write_text("stopped by multinode.horovod.horovod_launch\n")
    os.utime(tmp_path / "rc", (4999.5, 4999.5))
    seen = progress.status(tmp_path, 5000)
    assert (seen["rc"], seen["stopped"], seen["end_seen_after_s"]) == (143, True, 0.5)
    assert seen["line"] == "finished rc=143 after 12s, seen 0.50s after the end, stopped"


def test_progress_main_returns_at_once_when_finished(tmp_path, capsys):
    (tmp_path / "started").write_text("1000")
    (tmp_path / "finished").write_text("1000")
    (tmp_path / "rc").write_text("0")
    started = time.monotonic()
    assert progress.main([str(tmp_path), "30"]) == 0
    assert time.monotonic() - started < 5
    seen = json.loads(capsys.readouterr().out)
    assert seen["ended"] and seen["rc"] == 0 and seen["line"].startswith("finished rc=0 after 0s, seen ")


def test_progress_main_waits_at_most_the_given_time(tmp_path, capsys):
    (tmp_path / "started").write_text(str(int(time.time())))
    started = time.monotonic()
    assert progress.main([str(tmp_path), "1"]) == 0
    assert 0.9 <= time.monotonic() - started < 5
    assert json.loads(capsys.readouterr().out)["line"].startswith("running ")


def test_progress_quiet_counts_from_the_newest_log_of_the_run(tmp_path):
    for name in ("started", "launcher.log"):
        (tmp_path / name).write_text("1000\n")
        os.utime(tmp_path / name, (1000, 1000))
    assert progress.quiet(tmp_path, 1300) == 300
    (tmp_path / "rank.1").mkdir()
    (tmp_path / "rank.1" / "stderr").write_text("step 9\n")
    os.utime(tmp_path / "rank.1" / "stderr", (1250, 1250))
    assert progress.quiet(tmp_path, 1300) == 50


def test_progress_main_returns_early_on_a_stall_and_only_with_a_stall_timeout(tmp_path, capsys):
    (tmp_path / "started").write_text(str(int(time.time()) - 100))
    (tmp_path / "launcher.log").write_text("epoch 1\n")
    old = time.time() - 90
    for name in ("started", "launcher.log"):
        os.utime(tmp_path / name, (old, old))
    began = time.monotonic()
    assert progress.main([str(tmp_path), "30", "60"]) == 0
    assert time.monotonic() - began < 10
    seen = json.loads(capsys.readouterr().out)
    assert seen["stalled"] is True and 89 <= seen["quiet_s"] <= 95 and not seen["ended"]
    # Without a stall timeout (0), or one not reached, the wait runs its whole time and says not stalled.
    for stall in ("0", "600"):
        assert progress.main([str(tmp_path), "1", stall]) == 0
        seen = json.loads(capsys.readouterr().out)
        assert seen["stalled"] is False and seen["quiet_s"] >= 89


def test_progress_runs_as_python_c_and_prints_json(tmp_path):
    # The role runs it as `python3 -c "<file>" RUN_DIR WAIT` and reads its output with from_json.
    (tmp_path / "rc").write_text("124")
    code = (FILES / "horovod_progress.py").read_text()
    out = subprocess.run([sys.executable, "-c", code, str(tmp_path), "0"], capture_output=True, text=True, check=True)
    seen = json.loads(out.stdout)
    assert (seen["ended"], seen["rc"], seen["duration_s"]) == (True, 124, 0)
    assert re.fullmatch(r"finished rc=124 after 0s, seen [0-9]+\.[0-9]{2}s after the end", seen["line"])


# A stand-in for horovodrun in the NCCL check: it prints what NCCL would with the environment it got
# (NCCL_DEBUG, the run's NCCL_IB_HCA, the pinned ssh first on PATH) and its arguments, then exits or hangs.
FAKE_HOROVODRUN = """#!/bin/sh
echo "horovodrun $*"
echo "PATH starts $(echo "$PATH" | cut -d: -f1)"
echo "[0]<stdout>:node-a:1:1 [0] NCCL INFO NET/IB : Using [0]$NCCL_IB_HCA:1/IB ; OOB eth0:10.0.0.1<0>"
[ "$NCCL_DEBUG" = INFO ] && echo "[0]<stdout>:node-a:1:1 [0] NCCL INFO Using network IB"
echo "[1]<stdout>:node-b:1:1 [0] NCCL WARN something else"
[ "$1" = hang ] && exec sleep 60
exit 0
"""


def test_the_nccl_check_runs_horovodrun_with_nccls_log_and_keeps_nccls_lines(tmp_path, monkeypatch, capsys):
    fake = tmp_path / "horovodrun"
    fake.write_text(FAKE_HOROVODRUN)
    fake.chmod(0o755)
    given = {"argv": [str(fake), "-np", "2"], "env": {"NCCL_DEBUG": "INFO", "NCCL_IB_HCA": "mlx5_0"}}
    monkeypatch.setattr(sys, "stdin", __import__("io").StringIO(json.dumps(given)))
    assert nccl_check.main(["30", "/root/.ssh/bin"]) == 0
    answer = json.loads(capsys.readouterr().out)
    assert answer["rc"] == 0 and answer["seconds"] < 30
    assert answer["lines"] == [
        "[0]<stdout>:node-a:1:1 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB ; OOB eth0:10.0.0.1<0>",
        "[0]<stdout>:node-a:1:1 [0] NCCL INFO Using network IB",
        "[1]<stdout>:node-b:1:1 [0] NCCL WARN something else",
    ]
    assert answer["tail"][:2] == ["horovodrun -np 2", "PATH starts /root/.ssh/bin"]


def test_the_nccl_check_stops_horovodrun_at_its_timeout_and_says_124(tmp_path):
    fake = tmp_path / "horovodrun"
    fake.write_text(FAKE_HOROVODRUN)
    fake.chmod(0o755)
    began = time.monotonic()
    answer = nccl_check.check([[str(fake), "hang"]], {}, 1, "/nowhere")
    assert answer["rc"] == 124 and time.monotonic() - began < 15
    assert "NCCL INFO Using network IB" not in " ".join(answer["lines"])  # NCCL_DEBUG was not given
    missing = nccl_check.check([[str(tmp_path / "absent")]], {}, 5, "/nowhere")
    assert missing["rc"] == 127 and missing["lines"] == []


def test_the_nccl_check_of_a_torchrun_run_runs_every_hosts_process_at_once(tmp_path, monkeypatch, capsys):
    # One command per host (a torchrun run's check): both run together (each waits for the other's mark),
    # their NCCL lines are kept in host order, the exit status is the first non-zero one.
    code = (
        "import os, sys, time; me, other = sys.argv[1], sys.argv[2]; open(me, 'w').close(); "
        "[time.sleep(0.05) for _ in range(200) if not os.path.exists(other)]; "
        "print(f'{os.path.basename(me)} NCCL INFO Using network ' + os.environ['NET']); "
        "sys.exit(int(sys.argv[3]))"
    )
    a, b = str(tmp_path / "a"), str(tmp_path / "b")
    argvs = [[sys.executable, "-c", code, a, b, "0"], [sys.executable, "-c", code, b, a, "3"]]
    given = {"argvs": argvs, "env": {"NET": "IB"}}
    monkeypatch.setattr(sys, "stdin", __import__("io").StringIO(json.dumps(given)))
    assert nccl_check.main(["30", str(tmp_path)]) == 0
    answer = json.loads(capsys.readouterr().out)
    assert answer["rc"] == 3 and answer["seconds"] < 15
    assert answer["lines"] == ["a NCCL INFO Using network IB", "b NCCL INFO Using network IB"]
    # One that never ends: both stopped at the timeout.
    hang = nccl_check.check(
        [[sys.executable, "-c", "pass"], [sys.executable, "-c", "import time; time.sleep(60)"]], {}, 1, "/x"
    )
    assert hang["rc"] == 124 and hang["seconds"] < 15


def test_the_probe_lists_the_rdma_devices_of_its_container(tmp_path):
    assert probe.rdma_devices(str(tmp_path / "absent")) == []
    for name in ("uverbs0", "rdma_cm"):
        (tmp_path / name).write_text("")
    assert probe.rdma_devices(str(tmp_path)) == ["rdma_cm", "uverbs0"]


def test_probe_reports_local_addresses_and_missing_paths(tmp_path):
    report = probe.probe(["127.0.0.1", "192.0.2.254"], [str(tmp_path), str(tmp_path / "missing")])
    assert report["addresses"]["127.0.0.1"] == {"ip": "127.0.0.1", "interface": "lo"}
    assert report["addresses"]["192.0.2.254"]["interface"] is None
    assert report["missing_paths"] == [str(tmp_path / "missing")]
    assert "lo" in report["interfaces"]
    assert isinstance(report["shm_bytes"], int)
    assert report["hostname"]


def test_probe_runs_from_stdin():
    # The role feeds it to `python3 -` with the arguments after the dash.
    code = (FILES / "horovod_probe.py").read_text()
    out = subprocess.run(
        [sys.executable, "-", "--address", "localhost", "--path", "/"],
        input=code,
        capture_output=True,
        text=True,
        check=True,
    )
    report = json.loads(out.stdout)
    assert report["addresses"]["localhost"]["interface"] == "lo"
    assert report["missing_paths"] == []


def test_probe_finds_launchers(monkeypatch, tmp_path):
    proc = tmp_path / "proc"
    for pid, argv in {
        "10": ["/usr/bin/python3", "/usr/local/bin/horovodrun", "-np", "2"],
        "11": ["sh", "/data1/share/runs/r1/horovod-launch.sh"],
        "12": ["python3", "train.py"],
        "13": ["timeout", "7200", "horovodrun"],
    }.items():
        (proc / pid).mkdir(parents=True)
        (proc / pid / "cmdline").write_bytes(b"\0".join(a.encode() for a in argv) + b"\0")
    real_listdir, real_open = os.listdir, open

    def fake_listdir(path):
        return real_listdir(proc) if path == "/proc" else real_listdir(path)

    def fake_open(path, *args, **kwargs):
        if str(path).startswith("/proc/"):
            path = proc / str(path)[len("/proc/") :]
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr(probe.os, "listdir", fake_listdir)
    monkeypatch.setattr("builtins.open", fake_open)
    assert probe.launcher_processes() == [
        "/usr/bin/python3 /usr/local/bin/horovodrun -np 2",
        "sh /data1/share/runs/r1/horovod-launch.sh",
    ]


def fake_horovodrun(directory, rc=0, text="Horovod v0.28.1:\n[X] PyTorch\n[X] Gloo\n"):
    """A horovodrun on PATH that counts its calls in directory/calls."""
    script = directory / "horovodrun"
    script.write_text(f"#!/bin/sh\necho x >> {directory}/calls\nprintf '{text}'\nexit {rc}\n")
    script.chmod(0o755)
    return directory / "calls"


def test_check_build_is_kept_until_the_packages_change(tmp_path, monkeypatch):
    bindir = tmp_path / "bin"
    bindir.mkdir()
    calls = fake_horovodrun(bindir)
    site = tmp_path / "site-packages"
    site.mkdir()
    monkeypatch.setenv("PATH", f"{bindir}:{os.environ['PATH']}")
    monkeypatch.setattr(probe.sys, "path", [str(site)])
    cache = str(tmp_path / "cache" / "check-build.json")
    first = probe.check_build(cache)
    assert first["rc"] == 0 and "[X] Gloo" in first["stdout"] and first["cached"] is False
    again = probe.check_build(cache)
    assert again["cached"] is True and again["stdout"] == first["stdout"]
    assert calls.read_text().count("x") == 1
    # A package installed (a new entry in site-packages) asks horovodrun again.
    time.sleep(0.01)
    (site / "newpkg").mkdir()
    assert probe.check_build(cache)["cached"] is False
    assert calls.read_text().count("x") == 2


# A failure, or an answer with nothing in it (what Horovod 0.18.2 gave through a pipe), is asked again.
@pytest.mark.parametrize(("rc", "text"), [(3, "boom\n"), (0, "")])
def test_check_build_failure_is_never_kept(tmp_path, monkeypatch, rc, text):
    bindir = tmp_path / "bin"
    bindir.mkdir()
    calls = fake_horovodrun(bindir, rc=rc, text=text)
    monkeypatch.setenv("PATH", f"{bindir}:{os.environ['PATH']}")
    cache = str(tmp_path / "check-build.json")
    assert probe.check_build(cache)["rc"] == rc
    assert probe.check_build(cache) == {"rc": rc, "stdout": text, "stderr": "", "cached": False}
    assert calls.read_text().count("x") == 2


def test_check_build_reads_a_horovodrun_that_leaves_with_os_exit(tmp_path, monkeypatch):
    # Horovod 0.18.2's check_build(): print(...) then os._exit(0); through a pipe the answer was lost.
    bindir = tmp_path / "bin"
    bindir.mkdir()
    (bindir / "horovodrun").write_text(
        f"#!{sys.executable}\nimport os\nprint('Horovod v0.18.2:\\n\\nAvailable Controllers:\\n    [X] Gloo')\n"
        "os._exit(0)\n"
    )
    (bindir / "horovodrun").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bindir}:{os.environ['PATH']}")
    monkeypatch.delenv("PYTHONUNBUFFERED", raising=False)  # as in a container
    result = probe.check_build(str(tmp_path / "check-build.json"))
    assert result["rc"] == 0 and "Horovod v0.18.2:" in result["stdout"] and "[X] Gloo" in result["stdout"]


def test_check_build_without_horovodrun(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    result = probe.check_build(str(tmp_path / "c.json"))
    assert result["rc"] == 127 and "not found" in result["stderr"]


def test_survey_probes_the_other_hosts_over_ssh_in_parallel(tmp_path):
    # A stand-in for ssh: `fakessh ADDRESS COMMAND` notes that it starts, waits a second, runs
    # COMMAND here and notes that it ends; the probe's code arrives on stdin as over the real ssh.
    ssh = tmp_path / "fakessh"
    log = tmp_path / "asked"
    ssh.write_text(f'#!/bin/sh\necho "start $1" >> {log}\nsleep 1\na=$1\nshift\nsh -c "$*"\necho "end $a" >> {log}\n')
    ssh.chmod(0o755)
    code = (FILES / "horovod_probe.py").read_text()
    hosts = ["--host=me=127.0.0.1", "--host=b=198.51.100.1", "--host=c=198.51.100.2", "--host=d=198.51.100.3"]
    out = subprocess.run(
        [sys.executable, "-c", code, "--path=/", f"--ssh-argv={json.dumps([str(ssh)])}", *hosts],
        capture_output=True,
        text=True,
        check=True,
    )
    report = json.loads(out.stdout)
    assert report["local_names"] == ["me"]
    events = log.read_text().split("\n")[:-1]
    assert sorted(events) == sorted(f"{e} 198.51.100.{i}" for e in ("start", "end") for i in (1, 2, 3))
    remotes = {r["name"]: r for r in report["remotes"]}
    assert sorted(remotes) == ["b", "c", "d"]
    for name, address in [("b", "198.51.100.1"), ("c", "198.51.100.2"), ("d", "198.51.100.3")]:
        assert remotes[name]["rc"] == 0, remotes[name]["stderr"]
        assert remotes[name]["address"] == address
        answer = json.loads(remotes[name]["stdout"])
        # The other host was asked about its own address, and for the share.
        assert list(answer["addresses"]) == [address] and answer["missing_paths"] == []
    assert "check_build" not in report
    # The three hosts are asked at the same time: every one started before the first one ended.
    assert all(e.startswith("start") for e in events[:3]), events


def test_survey_reports_a_host_that_does_not_answer(tmp_path):
    ssh = tmp_path / "deadssh"
    ssh.write_text("#!/bin/sh\necho 'ssh: connect to host 192.0.2.9 port 12345: Connection refused' >&2\nexit 255\n")
    ssh.chmod(0o755)
    report = probe.survey([("a", "127.0.0.1"), ("z", "192.0.2.9")], ["/"], [str(ssh)], 10, with_build=False)
    assert report["remotes"] == [
        {
            "name": "z",
            "address": "192.0.2.9",
            "rc": 255,
            "stdout": "",
            "stderr": "ssh: connect to host 192.0.2.9 port 12345: Connection refused\n",
        }
    ]


def test_host_entries_are_name_equals_address():
    assert probe.host_entry("node-1=10.0.0.1") == ("node-1", "10.0.0.1")
    for bad in ["10.0.0.1", "=10.0.0.1", "node="]:
        try:
            probe.host_entry(bad)
        except probe.argparse.ArgumentTypeError:
            continue
        raise AssertionError(bad)


def test_every_host_reads_back_the_share_marker_which_is_removed_after(tmp_path):
    # The stand-in ssh runs the probe here, so each "host" sees this machine's files: the share is
    # tmp_path for all of them, and the marker the master wrote reads back everywhere.
    ssh = tmp_path / "fakessh"
    ssh.write_text('#!/bin/sh\nshift\nsh -c "$*"\n')
    ssh.chmod(0o755)
    share = tmp_path / "share"
    share.mkdir()
    code = (FILES / "horovod_probe.py").read_text()
    out = subprocess.run(
        [
            *(sys.executable, "-c", code, f"--share-marker={share}", f"--ssh-argv={json.dumps([str(ssh)])}"),
            *("--host=me=127.0.0.1", "--host=b=198.51.100.1"),
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    report = json.loads(out.stdout)
    [(path, state)] = report["local"]["markers"].items()
    assert path.startswith(f"{share}/.multinode-horovod-preflight-") and state == "ok"
    [remote] = report["remotes"]
    assert json.loads(remote["stdout"])["markers"] == {path: "ok"}
    assert list(share.iterdir()) == []


def test_a_host_without_the_masters_share_does_not_read_the_marker(tmp_path):
    # Another host's empty mount point: no such file there, or a file with another token.
    marker = tmp_path / ".multinode-horovod-preflight-x"
    assert probe.probe([], [], [(str(marker), "t0k3n")])["markers"] == {str(marker): "missing"}
    marker.write_text("other\n")
    assert probe.probe([], [], [(str(marker), "t0k3n")])["markers"] == {str(marker): "different"}
    marker.write_text("t0k3n\n")
    assert probe.probe([], [], [(str(marker), "t0k3n")])["markers"] == {str(marker): "ok"}


def test_no_marker_without_a_share_directory(tmp_path):
    with probe.share_marker([str(tmp_path / "absent")]) as markers:
        assert markers == []
    with probe.share_marker([""]) as markers:
        assert markers == []


def test_a_marker_in_each_shared_directory(tmp_path):
    share, artifacts = tmp_path / "share", tmp_path / "artifacts"
    share.mkdir()
    artifacts.mkdir()
    with probe.share_marker([str(share), str(artifacts)]) as markers:
        assert [os.path.dirname(path) for path, _unused in markers] == [str(share), str(artifacts)]
        assert all(probe.marker_state(path, token) == "ok" for path, token in markers)
    assert list(share.iterdir()) == list(artifacts.iterdir()) == []


def test_marker_entries_are_path_equals_token():
    assert probe.marker_entry("/data1/share/.m=abc") == ("/data1/share/.m", "abc")
    for bad in ["/data1/share/.m", "=abc", "/x="]:
        with pytest.raises(probe.argparse.ArgumentTypeError):
            probe.marker_entry(bad)


def test_the_probe_never_opens_what_root_on_a_worker_planted_at_a_marker(tmp_path):
    # Root on a worker may replace a marker on the share by a link to a file of the master's, or a FIFO
    # (which a blocking open would wait on forever): neither is read, and the link's target is not touched.
    secret = tmp_path / "shadow"
    secret.write_text("t0k3n\n")
    link, fifo = tmp_path / ".marker-link", tmp_path / ".marker-fifo"
    link.symlink_to(secret)
    os.mkfifo(fifo)
    assert probe.probe([], [], [(str(link), "t0k3n"), (str(fifo), "t0k3n")])["markers"] == {
        str(link): "not a regular file",
        str(fifo): "not a regular file",
    }


def test_the_probe_writes_its_marker_under_a_fresh_name_only(tmp_path, monkeypatch):
    # A name that is there already (a link planted in a race) is not written through: no marker there.
    share, target = tmp_path / "share", tmp_path / "unit.service"
    share.mkdir()
    monkeypatch.setattr(probe.secrets, "token_hex", lambda _unused: "f" * 32)
    (share / f".multinode-horovod-preflight-{'f' * 12}").symlink_to(target)
    with probe.share_marker([str(share)]) as markers:
        assert markers == []
    assert not target.exists()


def test_the_probe_tells_which_ssh_the_launch_script_would_run(tmp_path, monkeypatch):
    # The launch script puts the wrapper's directory first on PATH: the wrapper wins while it is there,
    # else the PATH's ssh is what horovodrun would run (and the preflight refuses it).
    wrapper_dir, system = tmp_path / "ssh-bin", tmp_path / "usr-bin"
    wrapper_dir.mkdir()
    system.mkdir()
    (system / "ssh").write_text("#!/bin/sh\n")
    (system / "ssh").chmod(0o755)
    monkeypatch.setenv("PATH", str(system))
    assert probe.ssh_found(str(wrapper_dir / "ssh")) == str(system / "ssh")
    (wrapper_dir / "ssh").write_text("#!/bin/sh\n")
    (wrapper_dir / "ssh").chmod(0o755)
    assert probe.ssh_found(str(wrapper_dir / "ssh")) == str(wrapper_dir / "ssh")
    monkeypatch.setenv("PATH", str(tmp_path / "nowhere"))
    (wrapper_dir / "ssh").unlink()
    assert probe.ssh_found(str(wrapper_dir / "ssh")) == ""


# What runs with the image's python3 and needs no Horovod or framework: the oldest Python the role
# supports there is 3.7 (roles/horovod_launch/README.md, "Horovod releases").
CONTAINER_SCRIPTS = [
    "horovod_probe.py", "horovod_run.py", "horovod_discover.py", "horovod_progress.py", "horovod_nccl_check.py"
]  # fmt: skip
OLDEST_CONTAINER_PYTHON = (3, 7)


@pytest.mark.parametrize("name", CONTAINER_SCRIPTS)
def test_the_container_scripts_are_python_3_7_syntax(name):
    ast.parse((FILES / name).read_text(), feature_version=OLDEST_CONTAINER_PYTHON)


@functools.cache
def _oldest_python() -> str | None:
    """A Python 3.7 that runs here (pyenv's on the development machine: its shim on PATH refuses a
    version that is not the global one), else None."""
    candidates = sorted(glob.glob(os.path.expanduser("~/.pyenv/versions/3.7*/bin/python3.7")))
    candidates += [shutil.which("python3.7") or ""]
    for candidate in filter(None, candidates):
        if subprocess.run([candidate, "-c", ""], capture_output=True, check=False).returncode == 0:
            return candidate
    return None


@pytest.mark.skipif(_oldest_python() is None, reason="no Python 3.7 here (pyenv install 3.7)")
@pytest.mark.parametrize("name", CONTAINER_SCRIPTS)
def test_the_container_scripts_load_on_python_3_7(name):
    # Module-level code runs (a subscripted builtin, importlib.metadata without its fallback fail here);
    # the probe also runs whole.
    code = f"import runpy; runpy.run_path({str(FILES / name)!r}, run_name='loaded')"
    subprocess.run([_oldest_python(), "-c", code], check=True, capture_output=True, timeout=60)
    if name == "horovod_probe.py":
        out = subprocess.run(
            [_oldest_python(), str(FILES / name)], check=True, capture_output=True, text=True, timeout=60
        )
        assert json.loads(out.stdout)["horovod_version"] == ""


# Stand-ins for what a GPU container has: nvidia-smi (its query and the header of its table) and a torch
# that tells which GPUs and CUDA it was built for (torch 1.12.1+cu113 of horovod/horovod:0.28.1).
FAKE_NVIDIA_SMI = """#!/bin/sh
case "$*" in
  *compute_cap*) [ -n "$NO_COMPUTE_CAP" ] && { echo 'Field "compute_cap" is not a valid field to query.'; exit 2; }
                 printf '0, NVIDIA H100 80GB HBM3, 9.0\\n1, NVIDIA H100 80GB HBM3, 9.0\\n' ;;
  *--query-gpu=index,name*) printf '0, NVIDIA H100 80GB HBM3\\n1, NVIDIA H100 80GB HBM3\\n' ;;
  "") echo '| NVIDIA-SMI 550.54.15   Driver Version: 550.54.15   CUDA Version: 12.4 |' ;;
  *) exit 9 ;;
esac
"""
FAKE_TORCH = """__version__ = "1.12.1+cu113"
class version:
    cuda = "11.3"
class cuda:
    @staticmethod
    def is_available():
        return True
    @staticmethod
    def device_count():
        return 2
    @staticmethod
    def get_arch_list():
        return ["sm_37", "sm_50", "sm_60", "sm_70", "sm_75", "sm_80", "sm_86"]
    class nccl:
        @staticmethod
        def version():
            return (2, 10, 3)
"""


CHECK_BUILD_TORCH = (
    "Horovod v0.28.1:\n\nAvailable Frameworks:\n    [X] PyTorch\n\nAvailable Controllers:\n    [X] Gloo\n"
)


def gpu_container(tmp_path, monkeypatch, nvidia_smi=FAKE_NVIDIA_SMI):
    bin_dir, site = tmp_path / "bin", tmp_path / "site"
    bin_dir.mkdir()
    (site / "torch").mkdir(parents=True)
    (site / "torch" / "__init__.py").write_text(FAKE_TORCH)
    if nvidia_smi:
        (bin_dir / "nvidia-smi").write_text(nvidia_smi)
        (bin_dir / "nvidia-smi").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    monkeypatch.setenv("PYTHONPATH", str(site))


def test_probe_reads_the_gpus_and_what_the_framework_was_built_for(tmp_path, monkeypatch):
    gpu_container(tmp_path, monkeypatch)
    read = probe.gpus(["pytorch"])
    assert read == {
        "devices": [
            {"index": 0, "name": "NVIDIA H100 80GB HBM3", "compute_cap": "9.0"},
            {"index": 1, "name": "NVIDIA H100 80GB HBM3", "compute_cap": "9.0"},
        ],
        "driver_cuda": "12.4",
        "frameworks": {
            "pytorch": {
                "version": "1.12.1+cu113",
                "cuda": "11.3",
                "arch_list": ["sm_37", "sm_50", "sm_60", "sm_70", "sm_75", "sm_80", "sm_86"],
                "device_count": 2,
                "nccl": "2.10.3",
            }
        },
        "error": "",
    }


def test_a_torch_without_nccl_still_tells_its_gpus(tmp_path, monkeypatch):
    gpu_container(tmp_path, monkeypatch)
    init = tmp_path / "site" / "torch" / "__init__.py"
    init.write_text(init.read_text().replace("return (2, 10, 3)", "raise RuntimeError('built without NCCL')"))
    read = probe.gpus(["pytorch"])["frameworks"]["pytorch"]
    assert read["nccl"] == "" and read["arch_list"][-1] == "sm_86"


def test_probe_reads_the_packages_that_shape_a_run_without_importing_them(tmp_path, monkeypatch):
    site, lib = tmp_path / "site", tmp_path / "lib"
    for name, version in (("torch", "1.13.1"), ("tqdm", "4.66.1"), ("requests", "2.31.0")):
        info = site / f"{name}-{version}.dist-info"
        info.mkdir(parents=True)
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
    (site / "torch").mkdir()
    (site / "torch" / "__init__.py").write_text("raise SystemExit('torch imported')\n")
    lib.mkdir()
    for name in ("libnccl.so", "libnccl.so.2", "libnccl.so.2.9.9", "libnccl.so.2.18.3", "libnccl-net.so"):
        (lib / name).write_text("")
    monkeypatch.syspath_prepend(str(site))
    found = probe.packages([str(tmp_path / "missing"), str(lib)])
    assert {k: v for k, v in found.items() if k in ("torch", "tqdm", "requests", "libnccl")} == {
        "torch": "1.13.1",
        "tqdm": "4.66.1",
        "libnccl": "2.18.3",
    }
    assert "libnccl" not in probe.packages([str(tmp_path / "missing")])


def test_probe_reads_gpus_without_compute_capability_from_an_old_driver(tmp_path, monkeypatch):
    gpu_container(tmp_path, monkeypatch)
    monkeypatch.setenv("NO_COMPUTE_CAP", "1")
    read = probe.gpus([])
    assert [(d["index"], d["name"], d["compute_cap"]) for d in read["devices"]] == [
        (0, "NVIDIA H100 80GB HBM3", ""),
        (1, "NVIDIA H100 80GB HBM3", ""),
    ]
    assert read["frameworks"] == {} and read["error"] == ""


def test_probe_reads_no_framework_without_a_gpu(tmp_path, monkeypatch):
    gpu_container(tmp_path, monkeypatch, nvidia_smi="")
    assert probe.gpus(["pytorch"]) == {"devices": [], "driver_cuda": "", "frameworks": {}, "error": ""}


def test_probe_reports_a_framework_it_cannot_import(tmp_path, monkeypatch):
    gpu_container(tmp_path, monkeypatch)
    read = probe.gpus(["tensorflow"])
    assert "No module named 'tensorflow'" in read["frameworks"]["tensorflow"]["error"]


def test_a_hopper_host_under_the_default_image_is_stopped_by_the_preflight(tmp_path, monkeypatch):
    # The probe as the role runs it, with the fakes, judged by the preflight: the run is refused
    # before it starts, naming the host, the GPU and the fix.
    gpu_container(tmp_path, monkeypatch)
    code = (FILES / "horovod_probe.py").read_text()
    out = subprocess.run(
        [
            *(sys.executable, "-c", code, "--address", "127.0.0.1", "--path", "/", "--gpu-framework=pytorch"),
            f"--writable={tmp_path}/out",
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    local = json.loads(out.stdout)
    report = {
        "check_build": {"rc": 0, "stdout": CHECK_BUILD_TORCH, "stderr": ""},
        "ssh": "/root/.ssh/bin/ssh",
        "local": local,
        "local_names": ["gpu-1"],
        "remotes": [],
    }
    settings = {
        "container": "horovod",
        "ssh_port": 12345,
        "identity_file": "/root/.ssh/id_ed25519",
        "controller": "gloo",
        "required_frameworks": [],
        "network_interfaces": [],
        "never_auto_nics": ["lo", "docker0"],
        "min_shm_size": "0",
        "min_shm_bytes": 0,
        "idle_patterns": [],
        "share_dir": "/",
        "master_image": "sha256:horovod-0.28.1",
        "plan": {
            "np": 2,
            "total_slots": 2,
            "h": "127.0.0.1:2",
            "other_image_ids": {},
            "elastic": False,
            "output_check": {"path": f"{tmp_path}/out", "kind": "output_dir", "hosts": ["gpu-1"], "elastic": False},
        },
        "ssh_wrapper": "/root/.ssh/bin/ssh",
        "nccl_net_check": True,
        "launcher": "horovodrun",
    }
    hosts = [{"name": "gpu-1", "address": "127.0.0.1", "slots": 2}]
    assert preflight(report, hosts, "gpu-1", settings)["problems"] == []  # pytorch not required: not judged
    problems = preflight(report, hosts, "gpu-1", {**settings, "required_frameworks": ["pytorch"]})["problems"]
    assert [p.partition(" cannot run ")[0] for p in problems] == [
        "gpu-1: GPU 0 (NVIDIA H100 80GB HBM3, compute capability 9.0)",
        "gpu-1: GPU 1 (NVIDIA H100 80GB HBM3, compute capability 9.0)",
    ]


def test_where_the_run_writes_is_read_as_root_here_would(tmp_path, monkeypatch):
    (tmp_path / "file").write_text("")
    assert probe.writable(str(tmp_path)) == "ok"
    # Missing: the directory above it that exists is where it would be created.
    assert probe.writable(str(tmp_path / "a" / "b")) == "ok"
    assert probe.writable(str(tmp_path / "file" / "x")) == f"{tmp_path}/file is not a directory"
    # A read-only mount (as the artifact directory on a worker) and an export that squashes root, as
    # access(2) answers them.
    monkeypatch.setattr(probe.os, "access", lambda path, mode: False)
    assert probe.writable(str(tmp_path / "a")) == (
        f"{tmp_path} is not writable by root here (its permissions, or an NFS export that squashes root)"
    )
    flags = os.statvfs(str(tmp_path))
    monkeypatch.setattr(probe.os, "statvfs", lambda path: type("R", (), {"f_flag": flags.f_flag | os.ST_RDONLY})())
    assert probe.writable(str(tmp_path / "a")) == f"{tmp_path} is on a file system mounted read-only here"


def test_the_master_asks_every_other_host_where_the_run_writes(tmp_path, monkeypatch):
    seen = []

    def fake_run(argv, **kwargs):
        seen.append(argv[-1])
        return subprocess.CompletedProcess(argv, 0, "{}", "")

    monkeypatch.setattr(probe.subprocess, "run", fake_run)
    probe.probe_remote(["ssh"], "10.0.0.2", ["/data1/share"], "", 5, writable_paths=["/data1/share/out dir"])
    assert "'--writable=/data1/share/out dir'" in seen[0]


# A stand-in ssh that runs the command here; for 127.0.0.3, a listener that answers with a port nobody
# listens on, as a host whose firewall lets ssh through and nothing else looks from the other hosts.
TCP_SSH = """#!/bin/sh
address=$1
shift
case "$address $*" in
  "127.0.0.3 python3 - --listen"*) cat > /dev/null; echo '{"port": CLOSED}'; sleep 20 ;;
  *) exec sh -c "$*" ;;
esac
"""


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_tcp_matrix_tells_which_host_cannot_be_reached_on_an_ephemeral_port(tmp_path):
    ssh = tmp_path / "fakessh"
    ssh.write_text(TCP_SSH.replace("CLOSED", str(_closed_port())))
    ssh.chmod(0o755)
    source = (FILES / "horovod_probe.py").read_text()
    hosts = [("me", "127.0.0.1"), ("b", "127.0.0.2"), ("c", "127.0.0.3")]
    found = probe.tcp_matrix(hosts, ["me"], [str(ssh)], source, 60)
    assert sorted(found["ports"]) == ["b", "c", "me"] and found["errors"] == {}
    assert found["from"] == {
        "me": {"b": "ok", "c": "refused"},
        "b": {"me": "ok", "c": "refused"},
        "c": {"me": "ok", "b": "ok"},
    }


def test_tcp_matrix_names_a_host_whose_listener_did_not_start(tmp_path):
    ssh = tmp_path / "deadssh"
    ssh.write_text(
        "#!/bin/sh\ncat > /dev/null\necho 'ssh: connect to host port 12345: Connection refused' >&2\nexit 255\n"
    )
    ssh.chmod(0o755)
    found = probe.tcp_matrix([("me", "127.0.0.1"), ("z", "127.0.0.9")], ["me"], [str(ssh)], "", 10)
    assert found["errors"] == {"z": "no listener: ssh: connect to host port 12345: Connection refused"}
    assert found["ports"] == {"me": found["ports"]["me"]} and found["from"] == {"me": {}, "z": {}}


def test_connect_tells_refused_from_ok():
    closed = _closed_port()
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen(1)
        port = sock.getsockname()[1]
        assert probe.connect([f"127.0.0.1:{port}", f"127.0.0.1:{closed}"], 3) == {
            f"127.0.0.1:{port}": "ok",
            f"127.0.0.1:{closed}": "refused",
        }


def test_routes_and_the_port_range_are_read_from_the_kernel_tables(tmp_path):
    table = tmp_path / "route"
    table.write_text(
        "Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT\n"
        "eth0\t00000000\t0100000A\t0003\t0\t0\t0\t00000000\t0\t0\t0\n"
        "eth0\t0000000A\t00000000\t0001\t0\t0\t0\t00FFFFFF\t0\t0\t0\n"
        "ib0\t0000A8C0\t00000000\t0001\t0\t0\t0\t0000FFFF\t0\t0\t0\n"
    )
    assert probe.routes(str(table)) == [
        {"interface": "eth0", "destination": "0.0.0.0", "prefix": 0, "gateway": "10.0.0.1"},
        {"interface": "eth0", "destination": "10.0.0.0", "prefix": 24, "gateway": "0.0.0.0"},
        {"interface": "ib0", "destination": "192.168.0.0", "prefix": 16, "gateway": "0.0.0.0"},
    ]
    assert probe.routes(str(tmp_path / "missing")) == []
    ports = tmp_path / "range"
    ports.write_text("32768\t60999\n")
    assert probe.port_range(str(ports)) == [32768, 60999]


def test_a_listener_ends_once_every_host_connected_or_its_session_is_gone(tmp_path):
    source = str(FILES / "horovod_probe.py")
    started = time.monotonic()
    proc = subprocess.Popen(
        [sys.executable, source, "--listen", "20", "--expect", "2"], stdout=subprocess.PIPE, text=True
    )
    port = json.loads(proc.stdout.readline())["port"]
    assert probe.connect([f"127.0.0.1:{port}", f"127.0.0.1:{port}"], 3) == {f"127.0.0.1:{port}": "ok"}
    assert proc.wait(timeout=10) == 0 and time.monotonic() - started < 10
    # Nobody connects, and the ssh session that reads it goes away: it ends at its next line.
    proc = subprocess.Popen([sys.executable, source, "--listen", "20"], stdout=subprocess.PIPE, text=True)
    json.loads(proc.stdout.readline())
    proc.stdout.close()
    started = time.monotonic()
    proc.wait(timeout=10)
    assert time.monotonic() - started < 5


def test_python_json_reads_the_last_line_or_says_why_not():
    # The probe's reads in a python3 of their own (a framework's GPU build, torch for torchrun) share it.
    assert probe.python_json("print('noise'); print('{\"version\": \"2.5.1\"}')") == {"version": "2.5.1"}
    assert probe.python_json("import no_such_module_here")["error"].endswith(
        "ModuleNotFoundError: No module named 'no_such_module_here'"
    )
    assert probe.python_json("print('not json')") == {"error": "not json"}
    assert probe.python_json("pass") == {"error": "exited 0"}
