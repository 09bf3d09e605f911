# Copyright: multinode.horovod contributors
# SPDX-License-Identifier: GPL-3.0-or-later
"""roles/horovod_launch/files/horovod_discover.py: the host discovery script of an elastic run.

The script is run as horovodrun runs it (a shell command, the file copied into a run directory beside its
discovery.json), with a stand-in for ssh that answers for the addresses listed in a file, hangs for one
and refuses the others.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from checkout import REPO
from checkout import load as load_path

SCRIPT = REPO / "roles" / "horovod_launch" / "files" / "horovod_discover.py"
discover = load_path("roles/horovod_launch/files/horovod_discover.py", "horovod_discover")

FAKE_SSH = """
import sys, time
from pathlib import Path
address = sys.argv[-2]
assert sys.argv[-1] == "true", sys.argv
if address == "10.0.0.9":
    time.sleep(30)
sys.exit(0 if address in Path(sys.argv[1]).read_text().split() else 255)
"""

HOSTS = [
    {"name": "master", "address": "10.0.0.1", "slots": 2},
    {"name": "w1", "address": "10.0.0.2", "slots": "1"},
    {"name": "w2", "address": "10.0.0.3", "slots": 1},
]


@pytest.fixture
def run_dir(tmp_path: Path) -> Path:
    run = tmp_path / "runs" / "elastic"
    run.mkdir(parents=True)
    shutil.copy(SCRIPT, run / "discover-hosts.py")
    (run / "discover-hosts.py").chmod(0o755)
    (tmp_path / "ssh.py").write_text(FAKE_SSH)
    (tmp_path / "up").write_text("")
    config = {"hosts": HOSTS, "ssh": [sys.executable, str(tmp_path / "ssh.py"), str(tmp_path / "up")], "timeout": 2}
    (run / "discovery.json").write_text(json.dumps(config))
    return run


def call(run: Path, up: list[str]) -> subprocess.CompletedProcess[str]:
    (run.parents[1] / "up").write_text(" ".join(up))
    # As horovodrun's HostDiscoveryScript does: the path, through a shell.
    return subprocess.run(
        str(run / "discover-hosts.py"), shell=True, capture_output=True, text=True, timeout=60, check=False
    )


def test_lists_the_hosts_that_answer_in_inventory_order_with_their_slots(run_dir):
    done = call(run_dir, ["10.0.0.3", "10.0.0.1"])
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["10.0.0.1:2", "10.0.0.3:1"]


def test_records_each_change_of_the_host_set_once(run_dir):
    call(run_dir, ["10.0.0.1", "10.0.0.2", "10.0.0.3"])
    first = json.loads((run_dir / "hosts.current").read_text())
    assert first["hosts"] == ["10.0.0.1:2", "10.0.0.2:1", "10.0.0.3:1"]
    assert abs(first["since"] - time.time()) < 60
    call(run_dir, ["10.0.0.1", "10.0.0.2", "10.0.0.3"])  # no change: nothing written
    call(run_dir, ["10.0.0.1", "10.0.0.2"])  # w2's container stopped
    call(run_dir, ["10.0.0.1", "10.0.0.2", "10.0.0.3"])  # and started again
    log = [line.split(" ", 1)[1] for line in (run_dir / "hosts.log").read_text().splitlines()]
    assert log == [
        "10.0.0.1:2,10.0.0.2:1,10.0.0.3:1",
        "10.0.0.1:2,10.0.0.2:1",
        "10.0.0.1:2,10.0.0.2:1,10.0.0.3:1",
    ]
    assert json.loads((run_dir / "hosts.current").read_text())["hosts"] == first["hosts"]
    assert [p.name for p in run_dir.iterdir() if p.name.startswith(".")] == []


def test_no_host_answers_is_an_empty_list_not_an_error(run_dir):
    done = call(run_dir, [])
    assert (done.returncode, done.stdout.strip()) == (0, "")
    assert json.loads((run_dir / "hosts.current").read_text())["hosts"] == []


def test_a_host_that_hangs_is_left_out_after_the_timeout_and_the_others_are_asked_at_once(run_dir):
    config = json.loads((run_dir / "discovery.json").read_text())
    config["hosts"] = [*HOSTS, {"name": "w9", "address": "10.0.0.9", "slots": 1}]
    (run_dir / "discovery.json").write_text(json.dumps(config))
    started = time.monotonic()
    done = call(run_dir, ["10.0.0.1", "10.0.0.2", "10.0.0.3", "10.0.0.9"])
    assert done.stdout.split() == ["10.0.0.1:2", "10.0.0.2:1", "10.0.0.3:1"]
    assert time.monotonic() - started < 10  # one timeout (2 s), not one per host


def test_an_unreadable_configuration_fails_so_that_horovodrun_stops_at_once(run_dir):
    (run_dir / "discovery.json").write_text("{not json")
    done = call(run_dir, ["10.0.0.1"])
    assert done.returncode == 1
    assert "cannot read" in done.stderr and "discovery.json" in done.stderr
    assert done.stdout == ""


def test_a_missing_ssh_program_leaves_every_host_out():
    assert discover.discover({"hosts": HOSTS, "ssh": ["/nonexistent/ssh"], "timeout": 1}) == []


def test_the_ssh_command_is_the_pinned_one_with_the_address_last():
    asked = []

    def ask(ssh, address, timeout):
        asked.append((tuple(ssh), address, timeout))
        return address != "10.0.0.2"

    ssh = ["ssh", "-o", "StrictHostKeyChecking=yes"]
    assert discover.discover({"hosts": HOSTS, "ssh": ssh, "timeout": 15}, ask) == ["10.0.0.1:2", "10.0.0.3:1"]
    assert sorted(asked) == [(tuple(ssh), h["address"], 15.0) for h in HOSTS]
