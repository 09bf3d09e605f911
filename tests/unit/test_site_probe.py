# Copyright: multinode.horovod contributors
# SPDX-License-Identifier: GPL-3.0-or-later
"""The gate's host-side probe (playbooks/tasks/probe_node.yml), run on this machine itself.

The node is this machine through a local connection (so nothing else is contacted); GPUs come from
docker_horovod's faked detection (`docker_horovod_gpu_detect_*_output`), as in the docker_horovod
scenario. Only read-only tasks run: `--tags probe` keeps the gate and the probe and skips every play
that changes anything.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml
from checkout import COLLECTIONS

REPO = Path(__file__).resolve().parents[2]
TWO_GPUS = "GPU 0: NVIDIA H200 (UUID: GPU-0)\nGPU 1: NVIDIA H200 (UUID: GPU-1)\n"
FAKED_GPUS = {"docker_horovod_gpu_detect_lspci_output": "", "docker_horovod_gpu_detect_nvidia_smi_output": TWO_GPUS}

pytestmark = pytest.mark.skipif(not shutil.which("ansible-playbook"), reason="ansible-playbook is not on PATH")


def run(tmp_path: Path, *args: str, book: str = "site.yml", path: Path | None = None, **node: Any) -> str:
    """The probe on this machine; with ``path``, lspci and nvidia-smi come from that directory instead
    of the role's faked output."""
    host = {
        "ansible_connection": "local",
        "ansible_python_interpreter": os.environ.get("MNH_PROBE_PYTHON", shutil.which("python3")),
        "horovod_node_address": "192.0.2.10",
        **({} if path else FAKED_GPUS),
        **node,
    }
    data = {"all": {"children": {"horovod_cluster": {"children": {"horovod_master": {"hosts": {"node-a": host}}}}}}}
    inv = tmp_path / "hosts.yml"
    inv.write_text(yaml.safe_dump(data))
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=str(COLLECTIONS), ANSIBLE_NOCOLOR="1")
    if path:
        env["PATH"] = f"{path}:{env['PATH']}"
    res = subprocess.run(
        ["ansible-playbook", book, "-i", str(inv), "--tags", "probe", *args],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        check=False,
        stdin=subprocess.DEVNULL,
    )
    out = " ".join((res.stdout + res.stderr).split())
    return f"rc={res.returncode} {out}"


def test_slots_come_from_the_gpus_found_on_partial_runs(tmp_path):
    out = run(tmp_path)
    assert out.startswith("rc=0"), out
    assert "node-a: 2 slot(s) (2 GPU(s) found)" in out


def test_slots_above_the_gpus_are_refused_naming_both(tmp_path):
    out = run(tmp_path, horovod_slots=4)
    assert not out.startswith("rc=0"), out
    assert "horovod_slots is 4 on node-a, but the node has 2 GPU(s)" in out


def test_slots_within_the_gpus_are_taken(tmp_path):
    out = run(tmp_path, horovod_slots=1)
    assert out.startswith("rc=0"), out
    assert "node-a: 1 slot(s) (horovod_slots)" in out


def test_gpu_ids_are_the_slots(tmp_path):
    out = run(tmp_path, horovod_gpu_ids=[1])
    assert out.startswith("rc=0"), out
    assert "node-a: 1 slot(s) (1 GPU(s) of horovod_gpu_ids)" in out


def test_a_gpu_index_the_driver_does_not_list_stops_the_run_naming_host_and_index(tmp_path):
    out = run(tmp_path, horovod_gpu_ids=[0, 3])
    assert not out.startswith("rc=0"), out
    assert "horovod_gpu_ids on node-a: GPU 3 is not one the NVIDIA driver lists there (nvidia-smi -L: 0, 1)" in out


def test_a_foreign_program_on_the_ssh_port_is_named(tmp_path):
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        port = listener.getsockname()[1]
        out = run(tmp_path, horovod_ssh_port=port)
    assert not out.startswith("rc=0"), out
    holder = Path("/proc/self/comm").read_text().strip()  # this test's own process holds the port
    assert f"horovod_ssh_port {port} is already taken on node-a by {holder}" in out


def test_the_preflight_playbook_probes_too(tmp_path):
    out = run(tmp_path, book="playbooks/preflight.yml", horovod_slots=3)
    assert "horovod_slots is 3 on node-a, but the node has 2 GPU(s)" in out


def tools(tmp_path: Path, smi: str) -> Path:
    """lspci showing two NVIDIA GPUs and an nvidia-smi running ``smi``, first on PATH."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    gpus = ["17:00.0 0302: 10de:2335 (rev a1)", "3d:00.0 0302: 10de:2335 (rev a1)"]
    (bin_dir / "lspci").write_text("#!/bin/sh\n" + "".join(f"echo '{gpu}'\n" for gpu in gpus))
    (bin_dir / "nvidia-smi").write_text(f"#!/bin/sh\n{smi}\n")
    for tool in bin_dir.iterdir():
        tool.chmod(0o755)
    return bin_dir


def test_the_probe_reads_the_gpu_tools(tmp_path):
    out = run(tmp_path, path=tools(tmp_path, f"printf '{TWO_GPUS}'"))
    assert out.startswith("rc=0"), out
    assert "node-a: 2 slot(s) (2 GPU(s) found)" in out


def test_the_probe_quotes_nvidia_smi_when_the_driver_does_not_see_the_gpus(tmp_path):
    failing = "echo 'NVIDIA-SMI has failed because it could not communicate with the NVIDIA driver.' >&2; exit 9"
    out = run(tmp_path, path=tools(tmp_path, failing))
    assert not out.startswith("rc=0"), out
    assert "node-a has 2 NVIDIA GPU(s) on the PCI bus but nvidia-smi lists none" in out
    assert "(NVIDIA-SMI has failed because it could not communicate with the NVIDIA driver.)" in out
