# Copyright: multinode.horovod contributors
# SPDX-License-Identifier: GPL-3.0-or-later
"""plugins/modules/docker_horovod_info.py: its reads, on fake programs and on trees of this machine, and
once through `ansible localhost -m`."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import socket
import subprocess
import threading
from pathlib import Path

import pytest
from checkout import COLLECTIONS, NEEDS_ANSIBLE_CLI, load

m = load("plugins/modules/docker_horovod_info.py", "docker_horovod_info")

# Real `lspci -n` lines of a DGX-like server: 2 GPUs, an NVIDIA audio function, an NVSwitch, and
# a non-NVIDIA VGA controller (the BMC's).
LSPCI = """\
00:00.0 0600: 8086:2020 (rev 04)
03:00.0 0300: 1a03:2000 (rev 41)
3b:00.0 0302: 10de:20b2 (rev a1)
3b:00.1 0403: 10de:1aef (rev a1)
5e:00.0 0302: 10de:20b2 (rev a1)
c1:00.0 0680: 10de:1af1 (rev a1)
"""
NVIDIA_SMI = """\
GPU 0: NVIDIA A100-SXM4-80GB (UUID: GPU-11111111-2222-3333-4444-555555555555)
  MIG 3g.40gb     Device  0: (UUID: MIG-aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee)
GPU 1: NVIDIA A100-SXM4-80GB (UUID: GPU-66666666-7777-8888-9999-000000000000)
"""
# What a one-GPU H200 host printed (tests/gpu/run.sh).
H200 = "GPU 0: NVIDIA H200 (UUID: GPU-c6b4c2b2-5a3e-7bd4-1e70-0d5c8d1a7f42)\n"


def fake(**programs: tuple[int, str, str]):
    """A `run` whose programs answer as given (rc, stdout, stderr); any other is not there (127)."""
    calls: list[list[str]] = []

    def run(argv: list[str]) -> tuple[int, str, str]:
        calls.append(argv)
        return programs.get(argv[0].replace("-", "_"), (127, "", f"{argv[0]}: not found"))

    run.calls = calls  # type: ignore[attr-defined]
    return run


# --- GPUs ----------------------------------------------------------------------------------------


def test_only_nvidia_display_controllers_and_listed_gpus_count():
    assert m.count_pci_gpus(LSPCI) == 2
    assert m.count_pci_gpus("0000:3b:00.0 Class 0302: 10de:2335\n") == 1
    assert m.count_driver_gpus(NVIDIA_SMI) == 2
    assert m.count_driver_gpus(H200) == 1


@pytest.mark.parametrize("output", ["", None, "00:02.0 0300: 8086:3e92\n", "lspci: command not found"])
def test_no_pci_gpu(output):
    assert m.count_pci_gpus(output) == 0


@pytest.mark.parametrize("output", ["", None, "No devices were found\n", "NVIDIA-SMI has failed because ..."])
def test_no_driver_gpu(output):
    assert m.count_driver_gpus(output) == 0


def test_the_gpu_programs_are_read():
    run = fake(lspci=(0, LSPCI, ""), nvidia_smi=(0, NVIDIA_SMI, ""))
    assert m.read_gpus(run) == {"pci": 2, "pci_read": True, "driver": 2, "indexes": [0, 1], "error": ""}
    assert run.calls == [["lspci", "-n", "-d", "10de:"], ["nvidia-smi", "-L"]]


def test_a_driver_that_does_not_see_the_gpus_is_quoted():
    failing = "NVIDIA-SMI has failed because it could not communicate with the NVIDIA driver.\n"
    run = fake(lspci=(0, LSPCI, ""), nvidia_smi=(9, "", failing))
    assert m.read_gpus(run) == {"pci": 2, "pci_read": True, "driver": 0, "indexes": [], "error": failing.strip()}
    assert m.read_gpus(fake(nvidia_smi=(6, "No devices were found\n", "")))["error"] == "nvidia-smi -L exited with 6"


def test_missing_gpu_programs_are_no_gpu_and_said():
    assert m.read_gpus(fake()) == {
        "pci": 0,
        "pci_read": False,
        "driver": 0,
        "indexes": [],
        "error": "nvidia-smi: not found",
    }


def test_given_outputs_stand_in_for_the_programs():
    run = fake(lspci=(0, "", ""), nvidia_smi=(0, "", ""))
    assert m.read_gpus(run, LSPCI, H200) == {"pci": 2, "pci_read": True, "driver": 1, "indexes": [0], "error": ""}
    assert run.calls == []
    assert m.read_gpus(run, None, "") == {"pci": 0, "pci_read": True, "driver": 0, "indexes": [], "error": ""}
    assert run.calls == [["lspci", "-n", "-d", "10de:"]]


# --- the Docker engine ---------------------------------------------------------------------------


def serve(path: str, answer: bytes) -> threading.Thread:
    """A Docker socket at `path` that answers one request with `answer` (HTTP/1.0: then it closes)."""
    server = socket.socket(socket.AF_UNIX)
    server.bind(path)
    server.listen(1)

    def reply() -> None:
        conn, _unused = server.accept()
        request = b""
        while b"\r\n\r\n" not in request:
            request += conn.recv(4096)
        assert request.startswith(b"GET /version HTTP/1.0\r\n")
        conn.sendall(answer)
        conn.close()
        server.close()

    thread = threading.Thread(target=reply, daemon=True)
    thread.start()
    return thread


def http(status: str, body: bytes) -> bytes:
    return b"HTTP/1.0 %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s" % (
        status.encode(),
        len(body),
        body,
    )


def test_an_engine_that_answers_gives_its_version(tmp_path):
    sock = str(tmp_path / "docker.sock")
    thread = serve(sock, http("200 OK", json.dumps({"Version": "27.5.1", "ApiVersion": "1.47"}).encode()))
    assert m.ask_engine(sock) == {"status": 200, "version": "27.5.1", "message": ""}
    thread.join(timeout=10)


def test_another_status_is_kept_without_a_version(tmp_path):
    sock = str(tmp_path / "docker.sock")
    thread = serve(sock, http("502 Bad Gateway", b"upstream down"))
    assert m.ask_engine(sock) == {"status": 502, "version": "", "message": ""}
    thread.join(timeout=10)


@pytest.mark.parametrize("answer", [b"", b"garbage", b"HTTP/1.0 200 OK\r\n\r\nnot json"])
def test_an_odd_answer_is_no_engine_with_a_reason(tmp_path, answer):
    sock = str(tmp_path / "docker.sock")
    thread = serve(sock, answer)
    read = m.ask_engine(sock)
    thread.join(timeout=10)
    assert read["status"] == 0 and read["version"] == ""
    assert read["message"]


def test_no_socket_or_no_listener_is_no_engine(tmp_path):
    assert m.ask_engine(str(tmp_path / "none.sock"))["message"].startswith("[Errno 2]")
    stale = tmp_path / "stale.sock"
    with socket.socket(socket.AF_UNIX) as sock:
        sock.bind(str(stale))  # bound, never listening: connection refused, as after dockerd died
    assert m.ask_engine(str(stale))["status"] == 0


def fake_proc(tmp_path: Path, processes: dict[int, str]) -> Path:
    proc = tmp_path / "proc"
    for pid, comm in processes.items():
        (proc / str(pid)).mkdir(parents=True)
        (proc / str(pid) / "comm").write_text(comm + "\n")
        (proc / str(pid) / "exe").symlink_to(f"/usr/bin/{comm}")
    (proc / "self").mkdir()
    return proc


def test_dockerd_is_found_by_its_pid_file_else_by_name(tmp_path):
    proc = fake_proc(tmp_path, {1: "systemd", 77: "containerd", 812: "dockerd", 900: "dockerd"})
    pid_file = tmp_path / "docker.pid"
    assert m.dockerd_pid(str(proc), str(pid_file)) == 812
    pid_file.write_text("900\n")
    assert m.dockerd_pid(str(proc), str(pid_file)) == 900
    pid_file.write_text("4242\n")  # stale: that process is gone
    assert m.dockerd_pid(str(proc), str(pid_file)) == 812
    pid_file.write_text("not a pid")
    assert m.dockerd_pid(str(proc), str(pid_file)) == 812
    assert m.dockerd_pid(str(fake_proc(tmp_path / "x", {1: "systemd"})), str(pid_file)) == 0


def test_the_engine_read_names_the_daemon_unit_and_command_line(tmp_path, monkeypatch):
    proc = fake_proc(tmp_path, {812: "dockerd"})
    monkeypatch.setattr(m, "DOCKER_PID_FILE", str(tmp_path / "no.pid"))
    monkeypatch.setattr(m, "dockerd_pid", lambda proc_dir: 812)
    monkeypatch.setattr(m, "ask_engine", lambda path: {"status": 200, "version": "26.1.5", "message": ""})
    run = fake(ps=(0, "snap.docker.dockerd.service\n", ""))
    engine = m.read_engine(run, "/x.sock", lambda program: f"/usr/bin/{program}", str(proc))
    assert engine == {
        "status": 200,
        "version": "26.1.5",
        "message": "",
        "pid": 812,
        "executable": "/usr/bin/dockerd",
        "unit": "snap.docker.dockerd.service",
        "cli": "/usr/bin/docker",
        "installed": [],
    }
    assert run.calls == [["ps", "-o", "unit=", "-p", "812"]]
    # Outside a service, ps says "-", which the role then refuses to restart.
    assert m.read_engine(fake(ps=(0, "-\n", "")), "/x.sock", lambda p: "", str(proc))["unit"] == "-"
    # No ps, or no dockerd at all: the unit the role installs.
    assert m.read_engine(fake(), "/x.sock", lambda p: "", str(proc))["unit"] == "docker.service"
    monkeypatch.setattr(m, "dockerd_pid", lambda proc_dir: 0)
    silent = m.read_engine(fake(), "/x.sock", lambda p: "", str(proc))
    assert (silent["pid"], silent["executable"], silent["unit"], silent["cli"]) == (0, "", "docker.service", "")


def test_a_silent_engine_lists_the_dockerd_executables_and_their_packages(tmp_path, monkeypatch):
    local, usr = tmp_path / "local-dockerd", tmp_path / "usr-dockerd"
    for path in (local, usr):
        path.write_text("#!/bin/sh\n")
        path.chmod(0o755)
    (tmp_path / "not-executable").write_text("")
    monkeypatch.setattr(m, "DOCKERD_PATHS", (str(local), str(usr), str(tmp_path / "not-executable"), "/nowhere"))
    monkeypatch.setattr(m, "ask_engine", lambda path: {"status": 0, "version": "", "message": "refused"})
    monkeypatch.setattr(m, "dockerd_pid", lambda proc_dir: 0)

    def run(argv: list[str]) -> tuple[int, str, str]:
        if argv[:2] == ["dpkg-query", "-S"] and argv[2] == str(usr):
            return 0, f"docker-ce: {usr}\n", ""
        return 1, "", f"dpkg-query: no path found matching pattern {argv[2]}"

    engine = m.read_engine(run, "/x.sock", lambda p: "")
    assert engine["installed"] == [{"path": str(local), "package": ""}, {"path": str(usr), "package": "docker-ce"}]


def test_the_package_is_the_first_owner_dpkg_names(tmp_path):
    run = fake(dpkg_query=(0, "docker.io: /usr/sbin/dockerd\n", ""))
    assert m.owner_package(run, "/usr/sbin/dockerd") == "docker.io"
    assert m.owner_package(fake(), "/usr/sbin/dockerd") == ""


# --- files and packages --------------------------------------------------------------------------


def test_the_kinds_of_the_paths_that_exist(tmp_path):
    (tmp_path / "dir with space").mkdir()
    (tmp_path / "file").write_text("x")
    (tmp_path / "dangling").symlink_to(tmp_path / "nowhere")
    (tmp_path / "to-dir").symlink_to(tmp_path / "dir with space")
    names = ["dir with space", "file", "dangling", "missing", "to-dir"]
    kinds = m.path_kinds([str(tmp_path / name) for name in names])
    assert kinds == {
        str(tmp_path / "dir with space"): "dir",
        str(tmp_path / "file"): "file",
        str(tmp_path / "dangling"): "other",
        str(tmp_path / "to-dir"): "dir",
    }


def test_the_host_ca_as_stat_gives_it(tmp_path):
    ca = tmp_path / "ca.crt"
    ca.write_bytes(b"-----BEGIN CERTIFICATE-----\n")
    assert m.file_sha1(str(ca)) == {"exists": True, "checksum": hashlib.sha1(ca.read_bytes()).hexdigest()}
    assert m.file_sha1(str(tmp_path / "none")) == {"exists": False, "checksum": ""}
    assert m.file_sha1(str(tmp_path)) == {"exists": False, "checksum": ""}


def test_the_registry_files_are_found_three_levels_down_at_most(tmp_path):
    name = "multinode-horovod-extra-ca.crt"
    for where in ["certs.d/r.example:5000", "certs.d/other", "certs.d/a/too-deep", "."]:
        (tmp_path / where).mkdir(parents=True, exist_ok=True)
        (tmp_path / where / name).write_text("x")
    (tmp_path / "certs.d/other/ca.crt").write_text("x")
    assert m.files_named(name, str(tmp_path)) == [
        str(tmp_path / "certs.d/other" / name),
        str(tmp_path / "certs.d/r.example:5000" / name),
        str(tmp_path / name),
    ]
    assert m.files_named(name, str(tmp_path / "absent")) == []


def test_the_packages_dpkg_does_not_report_installed():
    out = "python3-requests installed\ndocker.io not-installed\n"
    run = fake(dpkg_query=(1, out, "dpkg-query: no packages found matching nothing-such"))
    assert m.missing_packages(run, ["python3-requests", "docker.io", "nothing-such"]) == ["docker.io", "nothing-such"]
    assert m.missing_packages(fake(), ["python3-requests"]) == ["python3-requests"]
    assert m.missing_packages(run, []) == []


@pytest.mark.skipif(not shutil.which("dpkg-query"), reason="no dpkg here")
def test_dpkg_is_asked_as_the_role_asks_it():
    def run(argv: list[str]) -> tuple[int, str, str]:
        res = subprocess.run(argv, capture_output=True, text=True, check=False)
        return res.returncode, res.stdout, res.stderr

    assert m.missing_packages(run, ["coreutils", "no-such-package-mnh"]) == ["no-such-package-mnh"]


def test_only_what_is_asked_is_read(tmp_path):
    params = {
        "gpus": False,
        "lspci_output": None,
        "nvidia_smi_output": None,
        "docker_socket": "",
        "paths": [str(tmp_path)],
        "host_ca": "",
        "registry_ca_name": "",
        "packages": [],
    }
    run = fake()
    assert m.read(params, run, lambda p: "") == {
        "paths": {str(tmp_path): "dir"},
        "registry_cas": [],
        "missing_packages": [],
    }
    assert run.calls == []
    read = m.read({**params, "gpus": True, "lspci_output": LSPCI, "nvidia_smi_output": H200}, run, lambda p: "")
    assert read["gpus"] == {"pci": 2, "pci_read": True, "driver": 1, "indexes": [0], "error": ""}


# --- through Ansible -----------------------------------------------------------------------------


@NEEDS_ANSIBLE_CLI
def test_ansible_runs_the_module_in_check_mode(tmp_path):
    args = {"gpus": True, "nvidia_smi_output": H200, "paths": [str(tmp_path)], "docker_socket": str(tmp_path / "s")}
    env = dict(
        os.environ, ANSIBLE_COLLECTIONS_PATH=str(COLLECTIONS), ANSIBLE_NOCOLOR="1", ANSIBLE_LOAD_CALLBACK_PLUGINS="1"
    )
    env["ANSIBLE_STDOUT_CALLBACK"] = "ansible.builtin.json"
    res = subprocess.run(
        ["ansible", "localhost", "--check", "-m", "multinode.horovod.docker_horovod_info", "-a", json.dumps(args)],
        capture_output=True, text=True, check=False, env=env, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert res.returncode == 0, res.stdout + res.stderr
    result = json.loads(res.stdout)["plays"][0]["tasks"][0]["hosts"]["localhost"]
    assert result["changed"] is False
    assert result["gpus"]["driver"] == 1
    assert result["paths"] == {str(tmp_path): "dir"}
    assert result["engine"]["status"] == 0


def test_the_driver_indexes_are_those_nvidia_smi_lists():
    # MIG devices are listed under their GPU and are not GPUs of their own; a host may skip an index.
    listed = "GPU 0: A100 (UUID: GPU-a)\n  MIG 1g.5gb Device 0: (UUID: MIG-b)\nGPU 2: A100 (UUID: GPU-c)\n"
    assert m.driver_indexes(listed) == [0, 2]
    assert m.count_driver_gpus(listed) == 2
