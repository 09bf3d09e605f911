# Copyright: multinode.horovod contributors
# SPDX-License-Identifier: GPL-3.0-or-later
"""Unit tests of plugins/filter/docker_horovod.py (the docker_horovod role's parsing and validation)."""

from __future__ import annotations

import hashlib
import json
import os
import socket
import subprocess
import threading

import pytest
import yaml
from ansible.errors import AnsibleFilterError
from ansible_collections.multinode.horovod.plugins.module_utils.docker_horovod_rules import RESERVED_TARGETS
from ansible_collections.multinode.horovod.plugins.module_utils.docker_horovod_values import (
    REGISTRY_CA_NAME,
    registry_of,
)
from checkout import REPO, load

f = load("plugins/filter/docker_horovod.py", "docker_horovod_filters")
ca_places = f.FilterModule().filters()["docker_horovod_ca_places"]

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


def test_gpu_count_pci_counts_only_nvidia_display_controllers() -> None:
    assert f.gpu_count_pci(LSPCI) == 2


def test_gpu_count_pci_vga_class_and_domain_prefix() -> None:
    assert f.gpu_count_pci("0000:01:00.0 0300: 10de:1b80 (rev a1)\n") == 1


@pytest.mark.parametrize("output", ["", None, "00:02.0 0300: 8086:3e92\n", "lspci: command not found"])
def test_gpu_count_pci_none(output: str | None) -> None:
    assert f.gpu_count_pci(output) == 0  # type: ignore[arg-type]


def test_gpu_count_smi_ignores_mig_lines() -> None:
    assert f.gpu_count_smi(NVIDIA_SMI) == 2


def test_gpu_count_smi_real_h200_output() -> None:
    # Recorded by tests/gpu/run.sh on a real NVIDIA H200 host (driver 580.159.04), where the role's
    # detection, run by tests/gpu/detect.yml, counted the one GPU that CUDA reported.
    recorded = (REPO / "tests" / "unit" / "fixtures" / "nvidia-smi-L.h200.txt").read_text()
    assert recorded.startswith("GPU 0: NVIDIA H200 (UUID: GPU-")
    assert f.gpu_count_smi(recorded) == 1


@pytest.mark.parametrize(
    "output",
    ["", None, "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.", "No devices found."],
)
def test_gpu_count_smi_none(output: str | None) -> None:
    assert f.gpu_count_smi(output) == 0  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("16g", 16 * 1024**3),
        ("16G", 16 * 1024**3),
        ("16gb", 16 * 1024**3),
        ("1536m", 1536 * 1024**2),
        ("64k", 64 * 1024),
        ("2t", 2 * 1024**4),
        ("1024", 1024),
        ("1024b", 1024),
        (1024, 1024),
    ],
)
def test_size_bytes(value: object, expected: int) -> None:
    assert f.size_bytes(value) == expected


@pytest.mark.parametrize("value", ["", "lots", "1.5g", "-1g", "0", "0g", "16x", "g", "16 gigs", None, True, 0, -5])
def test_size_bytes_rejects(value: object) -> None:
    assert f.size_bytes(value) is None


@pytest.mark.parametrize(
    ("ref", "expected"),
    [
        ("horovod/horovod:0.28.1", {"name": "horovod/horovod", "tag": "0.28.1", "digest": ""}),
        ("horovod/horovod", {"name": "horovod/horovod", "tag": "", "digest": ""}),
        (
            "multinode-horovod/horovod-cpu:local",
            {"name": "multinode-horovod/horovod-cpu", "tag": "local", "digest": ""},
        ),
        (
            "registry.local:5000/ml/horovod:0.28.1",
            {"name": "registry.local:5000/ml/horovod", "tag": "0.28.1", "digest": ""},
        ),
        ("localhost:5000/horovod", {"name": "localhost:5000/horovod", "tag": "", "digest": ""}),
        (
            "horovod/horovod:0.28.1@sha256:" + "a" * 64,
            {"name": "horovod/horovod", "tag": "0.28.1", "digest": "sha256:" + "a" * 64},
        ),
    ],
)
def test_image_reference(ref: str, expected: dict[str, str]) -> None:
    assert f.image_reference(ref) == expected


@pytest.mark.parametrize("ref", ["", None, "Horovod/Horovod:1", "horovod:", "horovod/horovod:0.28.1 ", "a//b:1"])
def test_image_reference_invalid(ref: str | None) -> None:
    assert f.image_reference(ref) is None


IDLE = [
    r"^/sbin/docker-init( |$)",
    r"^/bin/sh /etc/multinode-horovod/container/supervisor\.sh$",
    r"^sleep [0-9.]+$",
    r"^(sshd: )?/usr/sbin/sshd -D -e -f /etc/multinode-horovod/sshd/sshd_config",
]

TOP_IDLE = (
    "PID                 COMMAND\n"
    "4101                /sbin/docker-init -- /bin/sh /etc/multinode-horovod/container/supervisor.sh\n"
    "4120                /bin/sh /etc/multinode-horovod/container/supervisor.sh\n"
    "4188                sshd: /usr/sbin/sshd -D -e -f /etc/multinode-horovod/sshd/sshd_config"
    " [listener] 0 of 10-100 startups\n"
)


def test_job_processes_idle_container() -> None:
    assert f.job_processes(TOP_IDLE, IDLE) == []


def test_job_processes_sleeping_supervisor() -> None:
    assert f.job_processes(TOP_IDLE + "4200                sleep 2\n", IDLE) == []


def test_job_processes_training_and_ssh_sessions_are_jobs() -> None:
    top = TOP_IDLE + (
        "4301                sshd: root@notty\n"
        "4302                python train.py --epochs 90\n"
        "4303                horovodrun -np 2 -H a:1,b:1 -p 12345 python train.py\n"
    )
    assert f.job_processes(top, IDLE) == [
        "4301 sshd: root@notty",
        "4302 python train.py --epochs 90",
        "4303 horovodrun -np 2 -H a:1,b:1 -p 12345 python train.py",
    ]


def test_job_processes_extra_idle_pattern() -> None:
    top = TOP_IDLE + "4400                /usr/bin/python3 /usr/local/bin/jupyter-lab --port 8888\n"
    assert f.job_processes(top, [*IDLE, "jupyter-lab"]) == []


def test_job_processes_without_header_and_empty() -> None:
    assert f.job_processes("", IDLE) == []
    assert f.job_processes("12 python x.py\n", IDLE) == ["12 python x.py"]


def test_job_processes_bad_pattern() -> None:
    with pytest.raises(AnsibleFilterError, match="invalid regular expression"):
        f.job_processes(TOP_IDLE, ["("])


def test_invalid_regexes() -> None:
    assert f.invalid_regexes(["ok", "(", "[a-"]) == ["(", "[a-"]
    assert f.invalid_regexes([]) == []


PIP_LIST = json.dumps(
    [
        {"name": "tqdm", "version": "4.66.1"},
        {"name": "tensorboardX", "version": "2.6"},
        {"name": "mnh_probe", "version": "1.0.0"},
    ]
)


def test_pip_missing_nothing_when_pinned_versions_installed() -> None:
    wanted = [
        {"name": "tqdm", "version": "4.66.1"},
        {"name": "TensorBoardX", "version": "2.6"},
        {"name": "mnh-probe", "version": "1.0.0"},
    ]
    assert f.pip_missing(PIP_LIST, wanted) == []


def test_pip_missing_absent_and_other_version() -> None:
    wanted = [{"name": "tqdm", "version": "4.66.2"}, {"name": "numpy", "version": "1.26.4"}]
    assert f.pip_missing(PIP_LIST, wanted) == ["tqdm==4.66.2", "numpy==1.26.4"]


def test_pip_missing_accepts_parsed_list() -> None:
    assert f.pip_missing(json.loads(PIP_LIST), [{"name": "tqdm", "version": "4.66.1"}]) == []


def test_pip_missing_rejects_garbage() -> None:
    with pytest.raises(AnsibleFilterError):
        f.pip_missing('{"not": "a list"}', [])


def test_bind_specs() -> None:
    volumes = [
        {"source": "/scratch", "target": "/scratch"},
        {"source": "/opt/datasets", "target": "/datasets", "read_only": True},
        {"source": "/srv/a", "target": "/a", "read_only": False},
    ]
    assert f.bind_specs(volumes) == ["/scratch:/scratch:rw", "/opt/datasets:/datasets:ro", "/srv/a:/a:rw"]
    assert f.bind_specs([]) == []


def test_device_specs_defaults() -> None:
    devices = [
        {"path": "/dev/infiniband"},
        {"path": "/dev/nvidia-caps", "container_path": "", "permissions": ""},
        {"path": "/dev/fuse", "container_path": "/dev/fuse0", "permissions": "rw"},
    ]
    assert f.device_specs(devices) == [
        "/dev/infiniband:/dev/infiniband:rwm",
        "/dev/nvidia-caps:/dev/nvidia-caps:rwm",
        "/dev/fuse:/dev/fuse0:rw",
    ]


def test_filter_names() -> None:
    names = f.FilterModule().filters()
    assert set(names) == {
        "docker_horovod_gpu_count_pci",
        "docker_horovod_gpu_count_smi",
        "docker_horovod_size_bytes",
        "docker_horovod_image_reference",
        "docker_horovod_invalid_regexes",
        "docker_horovod_job_processes",
        "docker_horovod_pip_missing",
        "docker_horovod_bind_specs",
        "docker_horovod_device_specs",
        "docker_horovod_archive_problem",
        "docker_horovod_restart_victims",
        "docker_horovod_ca_places",
        "docker_horovod_container_spec",
        "docker_horovod_pip_plan",
        "docker_horovod_cli_packages",
        "docker_horovod_engine_unit",
        "docker_horovod_nvidia_pending",
        "docker_horovod_ca_pending",
        "docker_horovod_other_engines",
        "docker_horovod_host_read",
    }


# community.docker.docker_host_info's `containers` (running ones, verbose_output false).
HOST_CONTAINERS = [
    {"Id": "a" * 64, "Image": "multinode-horovod/sshbox:local", "Names": ["/horovod"], "Status": "Up 2 hours"},
    {"Id": "b" * 64, "Image": "nginx:1.27", "Names": ["/web"], "Status": "Up 3 days"},
    {"Id": "c" * 64, "Image": "prom/node-exporter:v1", "Names": ["/exporter", "/web/exporter"], "Status": "Up"},
]


def test_restart_victims_are_the_other_running_containers_sorted() -> None:
    assert f.restart_victims(HOST_CONTAINERS, "horovod") == ["exporter", "web"]


def test_restart_victims_none_besides_the_own_container() -> None:
    assert f.restart_victims(HOST_CONTAINERS[:1], "horovod") == []
    assert f.restart_victims([], "horovod") == []
    assert f.restart_victims(None, "horovod") == []


def test_restart_victims_follow_the_container_name_option() -> None:
    assert f.restart_victims(HOST_CONTAINERS, "web") == ["exporter", "horovod"]


def test_restart_victims_without_names_are_named_by_id() -> None:
    assert f.restart_victims([{"Id": "d" * 64}], "horovod") == ["d" * 12]


@pytest.mark.parametrize(
    ("name", "registry"),
    [
        ("horovod/horovod", "docker.io"),
        ("ubuntu", "docker.io"),
        ("docker.io/horovod/horovod", "docker.io"),
        ("registry.example.org/ml/horovod", "registry.example.org"),
        ("mirror:5000/horovod", "mirror:5000"),
        ("localhost/horovod", "localhost"),
        ("multinode-horovod/sshbox", "docker.io"),
    ],
)
def test_the_registry_of_an_image_as_docker_reads_it(name, registry):
    assert registry_of(name) == registry


def test_an_image_from_an_archive_needs_the_extra_ca_nowhere_on_the_host():
    places = ca_places("horovod/horovod:0.28.1", "/data1/artifacts/images/h.tar", 0, "https://nvidia.github.io/x")
    assert places == {"host_store": False, "registry": "", "why": "", "host_file": False, "registry_file": ""}


def test_a_pull_from_docker_hub_needs_the_hosts_trust_store():
    places = ca_places("horovod/horovod:0.28.1", "", 0, "https://nvidia.github.io/x")
    assert places["host_store"] and places["registry"] == ""
    assert "Docker Hub" in places["why"]


def test_a_pull_from_another_registry_uses_dockers_directory_of_it_only():
    places = ca_places("registry.example.org:5000/ml/horovod:1", "", 0, "https://nvidia.github.io/x")
    assert places == {
        "host_store": False,
        "registry": "registry.example.org:5000",
        "why": "",
        "host_file": False,
        "registry_file": "",
    }


def test_a_gpu_host_fetching_nvidias_repository_over_https_needs_the_trust_store():
    assert ca_places("horovod/horovod:0.28.1", "/a.tar", 2, "https://nvidia.github.io/x")["host_store"]
    # A mirror over plain http, or no GPU, needs nothing on the host.
    assert not ca_places("horovod/horovod:0.28.1", "/a.tar", 2, "http://mirror.example/x")["host_store"]
    assert not ca_places("horovod/horovod:0.28.1", "/a.tar", 0, "https://nvidia.github.io/x")["host_store"]


def test_the_extra_ca_files_follow_the_places_only_when_a_bundle_is_given():
    hub = ca_places("horovod/horovod:0.28.1", "", 0, "https://nvidia.github.io/x", "/etc/ssl/proxy.crt")
    assert hub["host_file"] and hub["registry_file"] == ""
    other = ca_places("registry.example.org:5000/ml/horovod:1", "", 0, "", "/etc/ssl/proxy.crt")
    assert not other["host_file"]
    assert other["registry_file"] == "/etc/docker/certs.d/registry.example.org:5000/multinode-horovod-extra-ca.crt"
    # No bundle: nothing to place anywhere, whatever needs a trust store.
    none = ca_places("registry.example.org:5000/ml/horovod:1", "", 2, "https://nvidia.github.io/x", "")
    assert none["host_store"] and not none["host_file"] and none["registry_file"] == ""


def test_the_registry_file_name_is_the_one_the_role_finds_stale_copies_by():
    role_vars = yaml.safe_load((REPO / "roles/docker_horovod/vars/main.yml").read_text())
    assert role_vars["__docker_horovod_ca_file_name"] == REGISTRY_CA_NAME
    assert role_vars["__docker_horovod_host_ca"].endswith("/{{ __docker_horovod_ca_file_name }}")


SPEC_OPTIONS = {
    "share_root": "/data1",
    "volumes": [],
    "devices": [],
    "capabilities": [],
    "env": {},
    "rdma": False,
    "gpu_count": 0,
}


def test_the_container_mounts_the_share_rslave_and_the_roles_directories_read_only():
    spec = f.container_spec(SPEC_OPTIONS)
    assert spec == {
        "volumes": [
            "/data1:/data1:rw,rslave",
            "/etc/multinode-horovod/sshd:/etc/multinode-horovod/sshd:ro",
            "/etc/multinode-horovod/ssh:/root/.ssh:ro",
            "/etc/multinode-horovod/container:/etc/multinode-horovod/container:ro",
        ],
        "devices": [],
        "capabilities": [],
        "ulimits": [],
        "env": {},
        "device_requests": [],
    }


def test_the_container_spec_adds_the_users_volumes_devices_and_string_environment():
    spec = f.container_spec(
        {
            **SPEC_OPTIONS,
            "volumes": [
                {"source": "/scratch", "target": "/scratch"},
                {"source": "/ds", "target": "/ds", "read_only": True},
            ],
            "devices": [{"path": "/dev/fuse"}],
            "capabilities": ["SYS_PTRACE"],
            "env": {"NCCL_DEBUG": "INFO", "OMP_NUM_THREADS": 1, "FLAG": True},
        }
    )
    assert spec["volumes"][4:] == ["/scratch:/scratch:rw", "/ds:/ds:ro"]
    assert spec["devices"] == ["/dev/fuse:/dev/fuse:rwm"]
    assert spec["capabilities"] == ["SYS_PTRACE"]
    assert spec["env"] == {"NCCL_DEBUG": "INFO", "OMP_NUM_THREADS": "1", "FLAG": "True"}


def test_rdma_and_gpus_in_the_container_spec():
    spec = f.container_spec({**SPEC_OPTIONS, "rdma": True, "gpu_count": 8, "capabilities": ["IPC_LOCK", "NET_ADMIN"]})
    assert spec["devices"] == ["/dev/infiniband:/dev/infiniband:rwm"]
    assert spec["capabilities"] == ["IPC_LOCK", "NET_ADMIN"]  # once, in order
    assert spec["ulimits"] == ["memlock:-1:-1"]
    assert spec["device_requests"] == [{"driver": "nvidia", "count": -1, "capabilities": [["gpu"]]}]


def test_the_container_specs_fixed_targets_are_the_reserved_ones():
    targets = [volume.split(":")[1] for volume in f.container_spec(SPEC_OPTIONS)["volumes"][1:]]
    assert targets == list(RESERVED_TARGETS)


PIP_OPTIONS = {"python": "", "pip_index_url": "", "pip_wheel_dir": "", "extra_ca_bundle": ""}


def test_pip_of_python3_or_python_by_default_from_the_default_index():
    plan = f.pip_plan(PIP_OPTIONS)
    assert plan["argv"][:2] == ["/bin/sh", "-c"] and "command -v python3 || command -v python" in plan["argv"][2]
    assert plan["source_args"] == [] and plan["cert_env"] == {}


def test_pip_of_the_given_python_from_a_wheel_directory_only():
    plan = f.pip_plan({**PIP_OPTIONS, "python": "/opt/conda/bin/python", "pip_wheel_dir": "/data1/artifacts/wheels"})
    assert plan["argv"] == ["/opt/conda/bin/python", "-m", "pip"]
    assert plan["source_args"] == ["--find-links", "/data1/artifacts/wheels", "--no-index"]


def test_pip_with_an_index_and_wheels_and_the_extra_ca():
    plan = f.pip_plan(
        {**PIP_OPTIONS, "pip_index_url": "https://pypi.example/simple", "pip_wheel_dir": "/w", "extra_ca_bundle": "/ca"}
    )
    assert plan["source_args"] == ["--index-url", "https://pypi.example/simple", "--find-links", "/w"]
    role_vars = yaml.safe_load((REPO / "roles/docker_horovod/vars/main.yml").read_text())
    own_dir = role_vars["__docker_horovod_own_dir"]
    mounted = role_vars["__docker_horovod_container_ca"].replace("{{ __docker_horovod_own_dir }}", own_dir)
    assert plan["cert_env"] == {"PIP_CERT": mounted}


@pytest.mark.parametrize(
    ("packages", "distribution", "major", "expected"),
    [
        (["docker.io"], "Debian", "13", ["docker-cli"]),
        (["docker.io"], "Debian", "12", []),
        (["docker-ce", "containerd.io"], "Debian", "13", []),
        (["docker.io"], "Ubuntu", "24", []),
        (["docker.io"], "Debian", "", []),
    ],
)
def test_the_docker_cli_package_only_with_debian_13s_docker_io(packages, distribution, major, expected):
    assert f.cli_packages(packages, distribution, major) == expected


@pytest.mark.parametrize(
    ("lines", "unit"),
    [
        (["812", "/usr/sbin/dockerd", "docker.service"], "docker.service"),
        (["812", "/usr/bin/dockerd", "snap.docker.dockerd.service"], "snap.docker.dockerd.service"),
        (["812", "/usr/local/bin/dockerd", "-"], "-"),
        (["812", "/usr/local/bin/dockerd", ""], "docker.service"),
        ([], "docker.service"),
        (None, "docker.service"),
    ],
)
def test_the_engine_unit_is_the_third_line(lines, unit):
    assert f.engine_unit(lines) == unit


def test_the_nvidia_runtime_is_pending_only_when_the_configuration_would_change():
    merged = json.dumps({"live-restore": True, "runtimes": {"nvidia": {"path": "nvidia-container-runtime"}}})
    assert not f.nvidia_pending(merged, json.dumps(json.loads(merged), indent=4))
    assert f.nvidia_pending(merged, '{"live-restore": true}')
    assert f.nvidia_pending(merged, "")
    # No dry run possible (check mode before the toolkit is installed): assumed to change.
    assert f.nvidia_pending(None, merged)
    with pytest.raises(AnsibleFilterError, match="not JSON"):
        f.nvidia_pending("oops", "{}")


def test_the_host_ca_file_is_pending_when_it_differs_from_what_is_wanted():
    sha = "0" * 40
    assert f.ca_pending(True, {"exists": False}, sha)
    assert f.ca_pending(True, {"exists": True, "checksum": "1" * 40}, sha)
    assert not f.ca_pending(True, {"exists": True, "checksum": sha}, sha)
    assert f.ca_pending(False, {"exists": True, "checksum": sha}, "")
    assert not f.ca_pending(False, {"exists": False}, "")


def test_other_engines_are_those_of_other_packages_or_none():
    lines = [
        "/usr/bin/dockerd docker.io",
        "/usr/bin/dockerd docker-ce",
        "/usr/local/bin/dockerd ",
        "/usr/sbin/dockerd",
    ]
    assert f.other_engines(lines, ["docker.io", "containerd"]) == [
        "/usr/bin/dockerd (package docker-ce)",
        "/usr/local/bin/dockerd (no Debian package)",
        "/usr/sbin/dockerd (no Debian package)",
    ]
    assert f.other_engines([], ["docker.io"]) == []


def test_host_read_parses_the_kinds_the_host_ca_and_the_registry_files():
    text = (
        "dir /etc/multinode-horovod\nfile /srv/images/h.tar\nother /dev/weird\ndir /srv/my share\n"
        "host-ca " + "a" * 40 + "\nregistry-ca /etc/docker/certs.d/r.example:5000/multinode-horovod-extra-ca.crt\n"
    )
    read = f.host_read(text)
    assert read["paths"] == {
        "/etc/multinode-horovod": "dir",
        "/srv/images/h.tar": "file",
        "/dev/weird": "other",
        "/srv/my share": "dir",
    }
    assert read["host_ca"] == {"exists": True, "checksum": "a" * 40}
    assert read["registry_cas"] == ["/etc/docker/certs.d/r.example:5000/multinode-horovod-extra-ca.crt"]
    assert f.host_read("") == {
        "paths": {},
        "host_ca": {"exists": False, "checksum": ""},
        "registry_cas": [],
        "packages": {},
        "engine": {"status": None, "version": "", "message": "", "process": []},
    }
    assert f.host_read("package python3-requests installed\npackage docker.io not-installed\n")["packages"] == {
        "python3-requests": "installed",
        "docker.io": "not-installed",
    }


def test_the_roles_read_script_reports_what_exists(tmp_path):
    # The script as the role has it, run here on a tree of its own (the find under /etc/docker finds
    # nothing of the role's on this machine, or what it finds is only printed as registry-ca lines).
    script = yaml.safe_load((REPO / "roles/docker_horovod/vars/main.yml").read_text())["__docker_horovod_read_script"]
    (tmp_path / "dir").mkdir()
    (tmp_path / "file").write_text("x")
    (tmp_path / "ca.crt").write_bytes(b"-----BEGIN CERTIFICATE-----\n")
    (tmp_path / "dangling").symlink_to(tmp_path / "nowhere")
    paths = [str(tmp_path / name) for name in ("dir", "file", "dangling", "missing", "dir with space")]
    (tmp_path / "dir with space").mkdir()
    out = subprocess.run(
        ["sh", "-c", script, "read", str(tmp_path / "ca.crt"), "no-such-ca-file-name", "", *paths],
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    read = f.host_read(out)
    assert read["paths"] == {paths[0]: "dir", paths[1]: "file", paths[2]: "other", paths[4]: "dir"}
    assert read["host_ca"] == {"exists": True, "checksum": hashlib.sha1(b"-----BEGIN CERTIFICATE-----\n").hexdigest()}
    assert read["registry_cas"] == []
    out = subprocess.run(
        ["sh", "-c", script, "read", str(tmp_path / "no-ca"), "no-such-ca-file-name", ""],
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    assert f.host_read(out)["host_ca"] == {"exists": False, "checksum": ""}


def test_the_roles_read_script_asks_dpkg_for_the_packages(tmp_path):
    """dpkg's answer for the packages in $MNH_PACKAGES (this machine's dpkg: coreutils is installed, the
    other name exists nowhere), and none when the variable is empty."""
    script = yaml.safe_load((REPO / "roles/docker_horovod/vars/main.yml").read_text())["__docker_horovod_read_script"]
    argv = ["sh", "-c", script, "read", str(tmp_path / "no-ca"), "no-such-ca-file-name", ""]
    env = {"PATH": "/usr/bin:/bin", "MNH_PACKAGES": "coreutils no-such-package-mnh"}
    out = subprocess.run(argv, capture_output=True, text=True, check=True, env=env).stdout
    assert f.host_read(out)["packages"] == {"coreutils": "installed"}
    out = subprocess.run(argv, capture_output=True, text=True, check=True, env={"PATH": "/usr/bin:/bin"}).stdout
    assert f.host_read(out)["packages"] == {}


def test_host_read_parses_the_engine_answer_and_process():
    text = (
        "file /srv/h.tar\nengine-answer 200 26.1.5+dfsg1\n@@ engine-process\n812\n/usr/sbin/dockerd\n"
        "docker.service\ncli=/usr/bin/docker\n## 755 root:root /etc/multinode-horovod/container\n"
    )
    read = f.host_read(text)
    assert read["engine"] == {
        "status": 200,
        "version": "26.1.5+dfsg1",
        "message": "",
        "process": ["812", "/usr/sbin/dockerd", "docker.service", "cli=/usr/bin/docker"],
    }
    assert read["paths"] == {"/srv/h.tar": "file"}
    assert f.engine_unit(read["engine"]["process"]) == "docker.service"
    # Nothing answered; no dockerd runs (empty lines), no command line; the section ends the output.
    silent = f.host_read("engine-silent [Errno 2] No such file or directory\n@@ engine-process\n\n\n\ncli=\n")
    assert silent["engine"] == {
        "status": 0,
        "version": "",
        "message": "[Errno 2] No such file or directory",
        "process": ["", "", "", "cli="],
    }
    # Another status than 200 is no engine for the role; the read did not ask: None.
    assert f.host_read("engine-answer 502 \n")["engine"]["status"] == 502
    assert f.host_read("file /x\n")["engine"] == {"status": None, "version": "", "message": "", "process": []}


def serve_docker_version(path: str, version: str) -> threading.Thread:
    """A Docker socket at `path` that answers one GET /version as dockerd does (HTTP/1.0: the body, then close)."""
    server = socket.socket(socket.AF_UNIX)
    server.bind(path)
    server.listen(1)

    def answer() -> None:
        conn, _ = server.accept()
        request = b""
        while b"\r\n\r\n" not in request:
            request += conn.recv(4096)
        assert request.startswith(b"GET /version HTTP/1.0\r\n")
        body = json.dumps({"Version": version, "ApiVersion": "1.45"}).encode()
        conn.sendall(
            b"HTTP/1.0 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body)
        )
        conn.close()
        server.close()

    thread = threading.Thread(target=answer, daemon=True)
    thread.start()
    return thread


def test_the_roles_read_script_asks_the_docker_socket(tmp_path):
    """The read with $MNH_DOCKER_SOCKET and the role's probe: a socket that answers gives its version; none
    there, the error; and section @@ engine-process in the shape the engine unit filter reads."""
    constants = yaml.safe_load((REPO / "roles/docker_horovod/vars/main.yml").read_text())
    script = constants["__docker_horovod_read_script"].replace(
        "{{ __docker_horovod_engine_process_script }}", constants["__docker_horovod_engine_process_script"]
    )
    probe = constants["__docker_horovod_engine_probe"]
    argv = ["sh", "-c", script, "read", str(tmp_path / "no-ca"), "no-such-ca-file-name", probe]
    sock = str(tmp_path / "docker.sock")
    env = dict(os.environ, MNH_DOCKER_SOCKET=sock)
    thread = serve_docker_version(sock, "27.5.1")
    out = subprocess.run(argv, capture_output=True, text=True, check=True, env=env, timeout=30).stdout
    thread.join(timeout=10)
    engine = f.host_read(out)["engine"]
    assert (engine["status"], engine["version"], engine["message"]) == (200, "27.5.1", "")
    assert len(engine["process"]) == 4
    assert engine["process"][3].startswith("cli=")
    os.unlink(sock)
    out = subprocess.run(argv, capture_output=True, text=True, check=True, env=env, timeout=30).stdout
    engine = f.host_read(out)["engine"]
    assert engine["status"] == 0
    assert "No such file or directory" in engine["message"]
    # Without $MNH_DOCKER_SOCKET (the script alone, as the other tests run it) nothing is asked.
    out = subprocess.run(argv, capture_output=True, text=True, check=True, env={"PATH": "/usr/bin:/bin"}).stdout
    assert f.host_read(out)["engine"]["status"] is None


@pytest.mark.parametrize("python", ["", "/usr/bin/python3", "python3.11"])
def test_job_processes_own_pip_list_is_idle(python: str) -> None:
    # The role's own read of the installed packages, with the argv the role runs (both forms of
    # pip_plan's), is not a job: a check-mode run beside a real one had its job guard refuse on it.
    argv = f.pip_plan({"python": python})["argv"] + ["list", "--format=json"]
    top = TOP_IDLE + f"4500                {' '.join(argv)}\n"
    assert f.job_processes(top, []) == []
    # Installing, or anything else run through pip, is.
    install = " ".join(f.pip_plan({"python": python})["argv"] + ["install", "tqdm"])
    listed = " ".join(f.pip_plan({"python": python})["argv"] + ["list"])
    assert f.job_processes(TOP_IDLE + f"4501 {install}\n4502 {listed}\n", []) == [f"4501 {install}", f"4502 {listed}"]
    assert f.job_processes(TOP_IDLE + "4503 python3 -m pip list --format=json; sleep 9\n", []) == [
        "4503 python3 -m pip list --format=json; sleep 9"
    ]
