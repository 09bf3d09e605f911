#!/usr/bin/python
# Copyright: multinode.horovod contributors
# SPDX-License-Identifier: GPL-3.0-or-later
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Read, in one round trip, what the docker_horovod role must know of a host before it changes it."""

from __future__ import annotations

DOCUMENTATION = r"""
module: docker_horovod_info
short_description: Read the GPUs, the Docker engine and the files docker_horovod decides on
description:
  - Reads, without changing anything, what M(multinode.horovod.docker_horovod) must know of a host;
    each part only when an option asks for it.
  - O(gpus) - NVIDIA display controllers on the PCI bus (C(lspci -n -d 10de:)) and the GPUs the driver
    sees (C(nvidia-smi -L)).
  - O(docker_socket) - whether an engine answers C(GET /version) there (Python's standard library only,
    so before python3-requests is installed), the daemon's process, executable and systemd unit, the
    docker command line and, when nothing answers, the C(dockerd) executables installed.
version_added: 0.1.0
author: multinode.horovod contributors (!UNKNOWN)
options:
  gpus:
    description: Read the GPUs.
    type: bool
    default: false
  lspci_output:
    description: With O(gpus), this text stands in for the output of C(lspci -n -d 10de:).
    type: str
  nvidia_smi_output:
    description: With O(gpus), this text stands in for the output of C(nvidia-smi -L).
    type: str
  docker_socket:
    description: The Docker engine's Unix socket to ask; V("") asks nothing.
    type: path
    default: ""
  paths:
    description: Paths whose kind to report.
    type: list
    elements: path
    default: []
  host_ca:
    description: A file whose sha1 to report; V("") reads nothing.
    type: path
    default: ""
  registry_ca_name:
    description: The name of the files to find in Docker's directories of registries, under C(/etc/docker).
    type: str
    default: ""
  packages:
    description: Debian packages to report when they are not installed.
    type: list
    elements: str
    default: []
attributes:
  check_mode:
    description: It only reads, in check mode too.
    support: full
"""

EXAMPLES = r"""
- name: Read what the role decides on
  multinode.horovod.docker_horovod_info:
    docker_socket: /var/run/docker.sock
    paths: [/srv/images/horovod.tar, /dev/infiniband]
    packages: [python3-requests]
  register: host
"""

RETURN = r"""
gpus:
  description:
    - C(pci), NVIDIA display controllers on the PCI bus (not audio functions nor NVSwitches); C(pci_read),
      whether lspci ran; C(driver), the GPUs C(nvidia-smi -L) lists (not MIG devices); C(indexes), their
      indexes (C(GPU 0), ...); C(error), what nvidia-smi said when it failed or is missing, else V("").
  returned: when O(gpus) is true
  type: dict
engine:
  description:
    - C(status), the HTTP status of C(GET /version), V(0) when nothing answered, with C(version) or
      C(message) (why not); C(pid) of the running dockerd (V(0) when none runs), its C(executable) and
      C(unit) (C(ps -o unit=); V(-) or a scope outside a service; V(docker.service) when none was read);
      C(cli), the path of the docker command line or V("").
    - C(installed), when nothing answered, the dockerd executables in C(/usr/local/bin), C(/usr/bin) and
      C(/usr/sbin), each C({path, package}) with the Debian package that owns it (V("") when none does).
  returned: when O(docker_socket) is set
  type: dict
paths:
  description: The kind of each path of O(paths) that exists, V(dir), V(file) or V(other).
  returned: always
  type: dict
host_ca:
  description: C(exists) and C(checksum) (its sha1, V("") when it does not exist), as M(ansible.builtin.stat).
  returned: when O(host_ca) is set
  type: dict
registry_cas:
  description: The files named O(registry_ca_name) at most three levels below C(/etc/docker), sorted.
  returned: always
  type: list
  elements: str
missing_packages:
  description: The packages of O(packages) that dpkg does not report installed.
  returned: always
  type: list
  elements: str
"""

import hashlib
import json
import os
import re
import socket
from collections.abc import Callable, Iterable

from ansible.module_utils.basic import AnsibleModule

# Runs argv, returns (rc, stdout, stderr); rc 127 when the program is not there.
Run = Callable[[list[str]], tuple[int, str, str]]

# `lspci -n` line: "3b:00.0 0302: 10de:1db6 (rev a1)"; PCI class 03xx is a display controller (0300 VGA,
# 0302 3D). NVIDIA's audio functions (0403) and NVSwitch bridges (0680) are not GPUs.
LSPCI_GPU = re.compile(r"^\S+\s+(?:Class\s+)?03[0-9a-f]{2}:\s+10de:[0-9a-f]{4}", re.IGNORECASE)
# `nvidia-smi -L` line: "GPU 0: NVIDIA A100-SXM4-80GB (UUID: GPU-...)"; MIG devices are indented.
SMI_GPU = re.compile(r"^GPU\s+(\d+):")
DOCKERD_PATHS = ("/usr/local/bin/dockerd", "/usr/bin/dockerd", "/usr/sbin/dockerd")
DOCKER_PID_FILE = "/var/run/docker.pid"
DOCKER_CONFIG = "/etc/docker"


def count_pci_gpus(lspci_output: str | None) -> int:
    return sum(1 for line in (lspci_output or "").splitlines() if LSPCI_GPU.match(line.strip()))


def count_driver_gpus(nvidia_smi_output: str | None) -> int:
    return len(driver_indexes(nvidia_smi_output))


def driver_indexes(nvidia_smi_output: str | None) -> list[int]:
    """The indexes of the GPUs ``nvidia-smi -L`` lists (``GPU 0: ...``), in its order."""
    return [int(m.group(1)) for line in (nvidia_smi_output or "").splitlines() if (m := SMI_GPU.match(line))]


def read_gpus(run: Run, lspci_output: str | None = None, nvidia_smi_output: str | None = None) -> dict:
    """{pci, pci_read, driver, indexes, error}; a given output stands in for its program."""
    pci_read = True
    if lspci_output is None:
        rc, lspci_output, _unused = run(["lspci", "-n", "-d", "10de:"])
        pci_read = rc != 127
    error = ""
    if nvidia_smi_output is None:
        rc, nvidia_smi_output, err = run(["nvidia-smi", "-L"])
        error = (
            "nvidia-smi: not found" if rc == 127 else err.strip() or (f"nvidia-smi -L exited with {rc}" if rc else "")
        )
    return {
        "pci": count_pci_gpus(lspci_output),
        "pci_read": pci_read,
        "driver": count_driver_gpus(nvidia_smi_output),
        "indexes": driver_indexes(nvidia_smi_output),
        "error": error,
    }


def ask_engine(path: str, timeout: float = 10) -> dict:
    """{status, version, message} of GET /version on the Docker socket `path` (status 0: no answer)."""
    try:
        with socket.socket(socket.AF_UNIX) as sock:
            sock.settimeout(timeout)
            sock.connect(path)
            sock.sendall(b"GET /version HTTP/1.0\r\nHost: docker\r\n\r\n")
            data = b""
            while chunk := sock.recv(65536):
                data += chunk
        head, _unused, body = data.partition(b"\r\n\r\n")
        status = int(head.split(b" ", 2)[1])
        version = str(json.loads(body).get("Version", "?")) if status == 200 else ""
    except (OSError, ValueError, IndexError, AttributeError) as exc:
        return {"status": 0, "version": "", "message": " ".join(str(exc).split()) or type(exc).__name__}
    return {"status": status, "version": version, "message": ""}


def dockerd_pid(proc: str = "/proc", pid_file: str = DOCKER_PID_FILE) -> int:
    """The running dockerd's PID: its PID file when that process lives, else the first process named dockerd."""
    try:
        with open(pid_file) as handle:
            pid = int(handle.read().strip())
        if os.path.isdir(f"{proc}/{pid}"):
            return pid
    except (OSError, ValueError):
        pass
    for entry in sorted((e for e in os.listdir(proc) if e.isdigit()), key=int):
        try:
            with open(f"{proc}/{entry}/comm") as handle:
                if handle.read().strip() == "dockerd":
                    return int(entry)
        except OSError:
            continue
    return 0


def owner_package(run: Run, path: str) -> str:
    """The Debian package that owns `path` (its target when it is a link), "" when none does."""
    rc, out, _unused = run(["dpkg-query", "-S", os.path.realpath(path)])
    first = out.splitlines()[0] if rc == 0 and out.strip() else ""
    return first.split(":", 1)[0].strip() if ":" in first else ""


def read_engine(run: Run, socket_path: str, which: Callable[[str], str], proc: str = "/proc") -> dict:
    """The engine on `socket_path` and its daemon (RETURN: engine)."""
    engine = ask_engine(socket_path)
    pid = dockerd_pid(proc)
    executable = unit = ""
    if pid:
        try:
            executable = os.readlink(f"{proc}/{pid}/exe")
        except OSError:
            executable = ""
        rc, out, _unused = run(["ps", "-o", "unit=", "-p", str(pid)])
        unit = out.strip() if rc == 0 else ""
    engine.update(pid=pid, executable=executable, unit=unit or "docker.service", cli=which("docker"))
    if engine["status"] != 200:
        engine["installed"] = [
            {"path": path, "package": owner_package(run, path)}
            for path in DOCKERD_PATHS
            if os.path.isfile(path) and os.access(path, os.X_OK)
        ]
    else:
        engine["installed"] = []
    return engine


def path_kinds(paths: Iterable[str]) -> dict[str, str]:
    kinds = {}
    for path in paths:
        if os.path.isdir(path):
            kinds[path] = "dir"
        elif os.path.isfile(path):
            kinds[path] = "file"
        elif os.path.lexists(path):
            kinds[path] = "other"
    return kinds


def file_sha1(path: str) -> dict:
    if not os.path.isfile(path):
        return {"exists": False, "checksum": ""}
    with open(path, "rb") as handle:
        return {"exists": True, "checksum": hashlib.sha1(handle.read()).hexdigest()}


def files_named(name: str, root: str = DOCKER_CONFIG, depth: int = 3) -> list[str]:
    """The files called `name` at most `depth` levels below `root` (find -maxdepth)."""
    found = []
    for top, dirs, files in os.walk(root):
        level = top[len(root) :].count(os.sep) + 1
        found += [os.path.join(top, file) for file in files if file == name and level <= depth]
        if level >= depth:
            dirs[:] = []
    return sorted(found)


def missing_packages(run: Run, names: list[str]) -> list[str]:
    if not names:
        return []
    _unused, out, _unused = run(["dpkg-query", "--show", "--showformat", "${Package} ${db:Status-Status}\n", *names])
    installed = {line.split(" ", 1)[0] for line in out.splitlines() if line.endswith(" installed")}
    return [name for name in names if name not in installed]


def read(params: dict, run: Run, which: Callable[[str], str]) -> dict:
    """Everything the options ask for (RETURN)."""
    result: dict = {
        "paths": path_kinds(params["paths"]),
        "registry_cas": files_named(params["registry_ca_name"]) if params["registry_ca_name"] else [],
        "missing_packages": missing_packages(run, params["packages"]),
    }
    if params["gpus"]:
        result["gpus"] = read_gpus(run, params["lspci_output"], params["nvidia_smi_output"])
    if params["host_ca"]:
        result["host_ca"] = file_sha1(params["host_ca"])
    if params["docker_socket"]:
        result["engine"] = read_engine(run, params["docker_socket"], which)
    return result


def main() -> None:
    module = AnsibleModule(
        argument_spec={
            "gpus": {"type": "bool", "default": False},
            "lspci_output": {"type": "str"},
            "nvidia_smi_output": {"type": "str"},
            "docker_socket": {"type": "path", "default": ""},
            "paths": {"type": "list", "elements": "path", "default": []},
            "host_ca": {"type": "path", "default": ""},
            "registry_ca_name": {"type": "str", "default": ""},
            "packages": {"type": "list", "elements": "str", "default": []},
        },
        supports_check_mode=True,
    )

    def which(program: str) -> str:
        return module.get_bin_path(program) or ""

    def run(argv: list[str]) -> tuple[int, str, str]:
        path = which(argv[0])
        if not path:
            return 127, "", f"{argv[0]}: not found"
        return module.run_command([path, *argv[1:]])

    module.exit_json(changed=False, **read(module.params, run, which))


if __name__ == "__main__":
    main()
