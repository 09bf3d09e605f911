# Copyright: multinode.horovod contributors
# SPDX-License-Identifier: GPL-3.0-or-later
"""Unit tests for playbooks/files/tensorboard/horovod_tensorboard.py, the TensorBoard playbook's helper in
the master's container (read, stop). It reads /proc and binds sockets, so these tests start real processes
with and without the playbook's marker and listen on real ports."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from ansible_collections.multinode.horovod.plugins.module_utils import horovod_tensorboard as tb
from checkout import REPO
from checkout import load as load_path

RELPATH = "playbooks/files/tensorboard/horovod_tensorboard.py"
helper = load_path(RELPATH, "horovod_tensorboard_helper")
SOURCE = (REPO / RELPATH).read_text()
SLEEP = "import time; time.sleep(60)"
IGNORE_TERM = "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(60)"


@pytest.fixture
def procs():
    started: list[subprocess.Popen[bytes]] = []

    def start(*argv: str) -> subprocess.Popen[bytes]:
        proc = subprocess.Popen([sys.executable, *argv])
        started.append(proc)
        return proc

    yield start
    for proc in started:
        if proc.poll() is None:
            proc.kill()
        proc.wait()


def args_of(pid: int) -> list[str]:
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        args = helper.cmdline(pid)
        if SLEEP in args or IGNORE_TERM in args:
            return args
        time.sleep(0.02)
    raise AssertionError(f"process {pid} did not start")


def run_helper(*argv: str) -> dict:
    """The helper as the playbook runs it: python3 -c CODE COMMAND ..."""
    proc = subprocess.run([sys.executable, "-c", SOURCE, *argv], capture_output=True, text=True, check=True)
    return json.loads(proc.stdout)


def test_read_lists_the_processes_with_the_marker_and_never_itself(procs, tmp_path):
    marked = procs("-X", tb.MARKER, "-c", SLEEP)
    procs("-c", SLEEP)
    args = args_of(marked.pid)
    found = run_helper("read", tb.MARKER, str(tmp_path), str(tmp_path), "1", str(tmp_path / "no.log"))
    # The helper's own command line holds the marker too (an argument): it is not listed.
    assert [p for p in found["processes"] if p["pid"] == marked.pid] == [{"pid": marked.pid, "args": args}]
    assert all(p["args"][:2] != [sys.executable, "-c"] or SOURCE not in p["args"] for p in found["processes"])
    assert (found["logdir"], found["logdir_at"]) == ("directory", None)
    assert set(found) == {"tensorboard", "processes", "logdir", "logdir_at", "port_free", "log"}


def test_the_log_directory_is_looked_at_without_following_a_link(tmp_path):
    (tmp_path / "dir").mkdir()
    (tmp_path / "file").write_text("x")
    (tmp_path / "link").symlink_to(tmp_path / "dir")
    names = ("dir", "file", "link", "missing", "file/below")
    kinds = {name: helper.kind(str(tmp_path), str(tmp_path / name)) for name in names}
    assert kinds == {
        "dir": ("directory", None),
        "file": ("other", str(tmp_path / "file")),
        "link": ("link", str(tmp_path / "link")),
        "missing": ("missing", str(tmp_path / "missing")),
        "file/below": ("other", str(tmp_path / "file")),
    }
    # Outside the root (or without one) only the last component is looked at, as before.
    assert helper.kind("", str(tmp_path / "link")) == ("link", str(tmp_path / "link"))
    assert helper.kind(str(tmp_path / "dir"), str(tmp_path / "dir")) == ("directory", None)


@pytest.mark.parametrize("where", ["tb", "tb/runs", "tb/runs/one"])
def test_a_link_at_any_component_below_the_root_is_found_and_named(tmp_path, where):
    # Root on a worker made one component of the log directory a link (to a directory of the master's).
    share, master = tmp_path / "share", tmp_path / "master"
    (share / "tb" / "runs" / "one").mkdir(parents=True)
    (master / "runs" / "one").mkdir(parents=True)
    target = share / where
    for inside in sorted(target.rglob("*"), reverse=True):
        inside.rmdir()
    target.rmdir()
    target.symlink_to(master / "/".join(["runs", "one"][: where.count("/")]) if where != "tb" else master)
    # The last component alone (the old check) sees a directory when the link is higher up.
    assert os.path.isdir(share / "tb" / "runs" / "one")
    found = run_helper("read", tb.MARKER, str(share), str(share / "tb/runs/one"), "1", str(tmp_path / "no.log"))
    assert (found["logdir"], found["logdir_at"]) == ("link", str(target))


def test_a_port_another_program_listens_on_is_not_free():
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        port = server.getsockname()[1]
        assert helper.port_free(port) is False
    assert helper.port_free(port) is True


def test_tensorboards_version_or_why_python_cannot_import_it(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "tensorboard", None)  # as if not installed
    missing = helper.tensorboard()
    assert missing["version"] is None and missing["error"].startswith("ModuleNotFoundError")
    fake = tmp_path / "site" / "tensorboard"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text("")
    (fake / "version.py").write_text('VERSION = "2.19.0"\n')
    monkeypatch.delitem(sys.modules, "tensorboard")
    monkeypatch.syspath_prepend(str(fake.parent))
    assert helper.tensorboard() == {"version": "2.19.0", "error": None}
    for name in ("tensorboard", "tensorboard.version"):
        sys.modules.pop(name, None)


def test_the_log_tail_is_its_last_lines(tmp_path):
    log = tmp_path / "tb.log"
    log.write_text("".join(f"line {i}\n" for i in range(50)) + "\n")
    assert helper.log_tail(str(log)) == [f"line {i}" for i in range(30, 50)]
    assert helper.log_tail(str(tmp_path / "none.log")) == []


def test_stop_ends_the_given_processes_and_kills_one_that_ignores_sigterm(procs):
    polite = procs("-X", tb.MARKER, "-c", SLEEP)
    stubborn = procs("-X", tb.MARKER, "-c", IGNORE_TERM)
    targets = [{"pid": p.pid, "args": args_of(p.pid)} for p in (polite, stubborn)]
    found = run_helper("stop", "1", json.dumps(targets))
    assert found["stopped"] == [polite.pid, stubborn.pid]
    assert found["killed"] == [stubborn.pid]
    assert (found["gone"], found["left"]) == ([], [])
    assert polite.wait(5) == -signal.SIGTERM and stubborn.wait(5) == -signal.SIGKILL


def test_stop_leaves_alone_a_pid_whose_command_line_is_not_the_one_read(procs):
    """A pid read earlier may belong to another process by the time stop runs."""
    other = procs("-c", SLEEP)
    args_of(other.pid)
    found = run_helper("stop", "1", json.dumps([{"pid": other.pid, "args": tb.argv("/x", 6006, "2.19.0")}]))
    assert (found["stopped"], found["gone"], found["left"]) == ([], [other.pid], [])
    assert other.poll() is None


def test_a_wrong_call_says_how_to_call_it():
    proc = subprocess.run([sys.executable, "-c", SOURCE, "start"], capture_output=True, text=True, check=False)
    assert proc.returncode == 2 and proc.stderr.startswith("usage:")


def test_the_marker_does_not_change_what_python_runs(tmp_path):
    """Python keeps an -X option it does not know and runs the program as without it."""
    out = subprocess.run(
        [sys.executable, "-X", tb.MARKER, "-c", "import sys; print(sorted(sys._xoptions))"],
        capture_output=True, text=True, check=True, cwd=tmp_path, env={**os.environ, "PYTHONWARNINGS": "error"},
    )  # fmt: skip
    assert out.stdout.split() == [f"['{tb.MARKER}']"] and out.stderr == ""


def test_the_helper_is_where_the_playbook_looks_for_it():
    text = (REPO / "playbooks" / "tensorboard.yml").read_text()
    assert "lookup('ansible.builtin.file', 'tensorboard/horovod_tensorboard.py')" in text
    assert Path(REPO / RELPATH).is_file()
