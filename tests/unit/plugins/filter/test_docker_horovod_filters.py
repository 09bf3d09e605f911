# Copyright: multinode.horovod contributors
# SPDX-License-Identifier: GPL-3.0-or-later
"""Unit tests of the docker_horovod role's decisions (plugins/module_utils/docker_horovod_values.py, the
filters of plugins/filter/docker_horovod.py) and of the Jinja the role keeps for one of them."""

from __future__ import annotations

import json

import pytest
import yaml
from ansible.errors import AnsibleFilterError
from ansible.parsing.dataloader import DataLoader
from ansible.template import Templar
from ansible_collections.multinode.horovod.plugins.module_utils import docker_horovod_values as v
from ansible_collections.multinode.horovod.plugins.module_utils import jobs
from ansible_collections.multinode.horovod.plugins.plugin_utils import roles
from ansible_collections.multinode.horovod.plugins.plugin_utils.docker_horovod_rules import RESERVED_TARGETS
from checkout import REPO, load, trust_as_template

f = load("plugins/filter/docker_horovod.py", "docker_horovod_filters")
FILTERS = f.FilterModule().filters()


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
    assert v.size_bytes(value) == expected


@pytest.mark.parametrize("value", ["", "lots", "1.5g", "-1g", "0", "0g", "16x", "g", "16 gigs", None, True, 0, -5])
def test_size_bytes_rejects(value: object) -> None:
    assert v.size_bytes(value) is None


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
    assert v.image_reference(ref) == expected


@pytest.mark.parametrize("ref", ["", None, "Horovod/Horovod:1", "horovod:", "horovod/horovod:0.28.1 ", "a//b:1"])
def test_image_reference_invalid(ref: str | None) -> None:
    assert v.image_reference(ref) is None


IDLE = [
    r"^/sbin/docker-init( |$)",
    r"^/bin/sh /etc/multinode-horovod/container/supervisor\.sh$",
    r"^sleep [0-9.]+$",
    r"^(sshd: )?/usr/sbin/sshd -D -e -f /etc/multinode-horovod/sshd/sshd_config",
]


def job_processes(top: str, idle: list[str]) -> list[str]:
    """What the job guard (tasks/job_guard.yml, filter job_processes) calls a running job."""
    return jobs.jobs(jobs.parse_top(top), idle)


TOP_IDLE = (
    "PID                 COMMAND\n"
    "4101                /sbin/docker-init -- /bin/sh /etc/multinode-horovod/container/supervisor.sh\n"
    "4120                /bin/sh /etc/multinode-horovod/container/supervisor.sh\n"
    "4188                sshd: /usr/sbin/sshd -D -e -f /etc/multinode-horovod/sshd/sshd_config"
    " [listener] 0 of 10-100 startups\n"
)


def test_job_processes_idle_container() -> None:
    assert job_processes(TOP_IDLE, IDLE) == []


def test_job_processes_sleeping_supervisor() -> None:
    assert job_processes(TOP_IDLE + "4200                sleep 2\n", IDLE) == []


def test_job_processes_training_and_ssh_sessions_are_jobs() -> None:
    top = TOP_IDLE + (
        "4301                sshd: root@notty\n"
        "4302                python train.py --epochs 90\n"
        "4303                horovodrun -np 2 -H a:1,b:1 -p 12345 python train.py\n"
    )
    assert job_processes(top, IDLE) == [
        "4301 sshd: root@notty",
        "4302 python train.py --epochs 90",
        "4303 horovodrun -np 2 -H a:1,b:1 -p 12345 python train.py",
    ]


def test_job_processes_extra_idle_pattern() -> None:
    top = TOP_IDLE + "4400                /usr/bin/python3 /usr/local/bin/jupyter-lab --port 8888\n"
    assert job_processes(top, [*IDLE, "jupyter-lab"]) == []


def test_job_processes_without_header_and_empty() -> None:
    assert job_processes("", IDLE) == []
    assert job_processes("12 python x.py\n", IDLE) == ["12 python x.py"]


def test_job_processes_bad_pattern() -> None:
    with pytest.raises(jobs.PatternError, match="invalid regular expression"):
        job_processes(TOP_IDLE, ["("])


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
    assert v.pip_missing(PIP_LIST, wanted) == []


def test_pip_missing_absent_and_other_version() -> None:
    wanted = [{"name": "tqdm", "version": "4.66.2"}, {"name": "numpy", "version": "1.26.4"}]
    assert v.pip_missing(PIP_LIST, wanted) == ["tqdm==4.66.2", "numpy==1.26.4"]


def test_pip_missing_accepts_parsed_list() -> None:
    assert v.pip_missing(json.loads(PIP_LIST), [{"name": "tqdm", "version": "4.66.1"}]) == []


def test_pip_missing_rejects_garbage() -> None:
    with pytest.raises(AnsibleFilterError, match="pip list --format=json"):
        FILTERS["docker_horovod_pip_missing"]('{"not": "a list"}', [])


def test_volumes_and_devices_in_dockers_syntax() -> None:
    volumes = [
        {"source": "/scratch", "target": "/scratch"},
        {"source": "/opt/datasets", "target": "/datasets", "read_only": True},
        {"source": "/srv/a", "target": "/a", "read_only": False},
    ]
    devices = [
        {"path": "/dev/infiniband"},
        {"path": "/dev/nvidia-caps", "container_path": "", "permissions": ""},
        {"path": "/dev/fuse", "container_path": "/dev/fuse0", "permissions": "rw"},
    ]
    spec = v.container_spec({**SPEC_OPTIONS, "volumes": volumes, "devices": devices})
    assert spec["volumes"][4:] == ["/scratch:/scratch:rw", "/opt/datasets:/datasets:ro", "/srv/a:/a:rw"]
    assert spec["devices"] == [
        "/dev/infiniband:/dev/infiniband:rwm",
        "/dev/nvidia-caps:/dev/nvidia-caps:rwm",
        "/dev/fuse:/dev/fuse0:rw",
    ]


def test_filter_names() -> None:
    assert set(FILTERS) == {
        "docker_horovod_archive_problem",
        "docker_horovod_cli_packages",
        "docker_horovod_container_spec",
        "docker_horovod_daemon_plan",
        "docker_horovod_pip_missing",
        "docker_horovod_pip_plan",
        "job_processes",
    }


def task_vars(path: str, name: str) -> dict:
    """The vars of the task called `name` in roles/docker_horovod/tasks/`path` (blocks searched too)."""
    todo = list(yaml.safe_load((REPO / "roles/docker_horovod/tasks" / path).read_text()))
    while todo:
        task = todo.pop(0)
        if task.get("name") == name:
            return task
        todo += task.get("block", [])
    raise LookupError(name)


def render(template: str, **variables: object) -> object:
    return Templar(loader=DataLoader(), variables=variables).template(trust_as_template(template))


# community.docker.docker_host_info's `containers` (running ones, verbose_output false).
HOST_CONTAINERS = [
    {"Id": "a" * 64, "Image": "multinode-horovod/sshbox:local", "Names": ["/horovod"], "Status": "Up 2 hours"},
    {"Id": "b" * 64, "Image": "nginx:1.27", "Names": ["/web"], "Status": "Up 3 days"},
    {"Id": "c" * 64, "Image": "prom/node-exporter:v1", "Names": ["/exporter", "/web/exporter"], "Status": "Up"},
]


def victims(containers: list[dict], own: str) -> object:
    task = task_vars("daemon.yml", "Refuse to stop other containers with the Docker restart")
    return render(
        task["vars"]["__docker_horovod_restart_victims"],
        __docker_horovod_restart_info={"containers": containers},
        docker_horovod_container_name=own,
    )


def test_restart_victims_are_the_other_running_containers_sorted() -> None:
    assert victims(HOST_CONTAINERS, "horovod") == ["exporter", "web"]


def test_restart_victims_none_besides_the_own_container() -> None:
    assert victims(HOST_CONTAINERS[:1], "horovod") == []
    assert victims([], "horovod") == []


def test_restart_victims_follow_the_container_name_option() -> None:
    assert victims(HOST_CONTAINERS, "web") == ["exporter", "horovod"]


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
    assert v.registry_of(name) == registry


def test_an_image_from_an_archive_needs_the_extra_ca_nowhere_on_the_host():
    places = v.ca_places("horovod/horovod:0.28.1", "/data1/artifacts/images/h.tar", 0, "https://nvidia.github.io/x")
    assert places == {"host_store": False, "registry": "", "host_file": False, "registry_file": ""}


def test_a_pull_from_docker_hub_needs_the_hosts_trust_store():
    places = v.ca_places("horovod/horovod:0.28.1", "", 0, "https://nvidia.github.io/x")
    assert places["host_store"] and places["registry"] == ""


def test_a_pull_from_another_registry_uses_dockers_directory_of_it_only():
    places = v.ca_places("registry.example.org:5000/ml/horovod:1", "", 0, "https://nvidia.github.io/x")
    assert places == {
        "host_store": False,
        "registry": "registry.example.org:5000",
        "host_file": False,
        "registry_file": "",
    }


def test_a_gpu_host_fetching_nvidias_repository_over_https_needs_the_trust_store():
    assert v.ca_places("horovod/horovod:0.28.1", "/a.tar", 2, "https://nvidia.github.io/x")["host_store"]
    # A mirror over plain http, or no GPU, needs nothing on the host.
    assert not v.ca_places("horovod/horovod:0.28.1", "/a.tar", 2, "http://mirror.example/x")["host_store"]
    assert not v.ca_places("horovod/horovod:0.28.1", "/a.tar", 0, "https://nvidia.github.io/x")["host_store"]


def test_the_extra_ca_files_follow_the_places_only_when_a_bundle_is_given():
    hub = v.ca_places("horovod/horovod:0.28.1", "", 0, "https://nvidia.github.io/x", "/etc/ssl/proxy.crt")
    assert hub["host_file"] and hub["registry_file"] == ""
    other = v.ca_places("registry.example.org:5000/ml/horovod:1", "", 0, "", "/etc/ssl/proxy.crt")
    assert not other["host_file"]
    assert other["registry_file"] == "/etc/docker/certs.d/registry.example.org:5000/multinode-horovod-extra-ca.crt"
    # No bundle: nothing to place anywhere, whatever needs a trust store.
    none = v.ca_places("registry.example.org:5000/ml/horovod:1", "", 2, "https://nvidia.github.io/x", "")
    assert none["host_store"] and not none["host_file"] and none["registry_file"] == ""


def test_the_registry_file_name_is_the_one_the_role_finds_stale_copies_by():
    role_vars = yaml.safe_load((REPO / "roles/docker_horovod/vars/main.yml").read_text())
    assert role_vars["__docker_horovod_ca_file_name"] == v.REGISTRY_CA_NAME
    assert role_vars["__docker_horovod_host_ca"].endswith("/{{ __docker_horovod_ca_file_name }}")


SPEC_OPTIONS = {
    "share_root": "/data1",
    "volumes": [],
    "devices": [],
    "capabilities": [],
    "env": {},
    "rdma": False,
    "gpu_count": 0,
    "shm_size": "1536m",
}


def test_the_container_mounts_the_share_rslave_and_the_roles_directories_read_only():
    spec = v.container_spec(SPEC_OPTIONS)
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
        "shm_size": str(1536 * 1024**2),
    }


def test_the_container_spec_adds_the_users_volumes_devices_and_string_environment():
    spec = v.container_spec(
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
    spec = v.container_spec({**SPEC_OPTIONS, "rdma": True, "gpu_count": 8, "capabilities": ["IPC_LOCK", "NET_ADMIN"]})
    assert spec["devices"] == ["/dev/infiniband:/dev/infiniband:rwm"]
    assert spec["capabilities"] == ["IPC_LOCK", "NET_ADMIN"]  # once, in order
    assert spec["ulimits"] == ["memlock:-1:-1"]
    assert spec["device_requests"] == [{"driver": "nvidia", "count": -1, "capabilities": [["gpu"]]}]


RDMA_ON = (["/dev/infiniband:/dev/infiniband:rwm"], ["IPC_LOCK"], ["memlock:-1:-1"])


@pytest.mark.parametrize(
    ("rdma", "infiniband", "on"),
    [
        ("auto", True, True),  # the default: where the host has /dev/infiniband
        ("auto", False, False),  # ... and nothing elsewhere
        ("AUTO", True, True),
        (True, False, True),  # asked for (the role's read.yml refuses a host without it first)
        ("yes", False, True),  # a boolean as -e gives it
        (False, True, False),  # never
        ("false", True, False),
        ("maybe", True, False),  # refused by the rules before; never on
    ],
)
def test_rdma_is_on_where_asked_or_automatically_where_the_host_has_it(rdma, infiniband, on):
    spec = v.container_spec({**SPEC_OPTIONS, "rdma": rdma, "infiniband": infiniband})
    assert (spec["devices"], spec["capabilities"], spec["ulimits"]) == (RDMA_ON if on else ([], [], []))
    assert v.rdma_enabled(rdma, infiniband) is on


def test_rdma_defaults_to_auto_in_the_spec_and_the_role():
    assert v.container_spec({k: val for k, val in SPEC_OPTIONS.items() if k != "rdma"} | {"infiniband": True})[
        "ulimits"
    ] == ["memlock:-1:-1"]
    assert v.rdma_mode(roles.defaults("docker_horovod")["docker_horovod_rdma"]) == "auto"


def test_the_container_specs_fixed_targets_are_the_reserved_ones():
    targets = [volume.split(":")[1] for volume in v.container_spec(SPEC_OPTIONS)["volumes"][1:]]
    assert targets == list(RESERVED_TARGETS)


PIP_OPTIONS = {"python": "", "pip_index_url": "", "pip_wheel_dir": "", "extra_ca_bundle": ""}


def test_pip_of_python3_or_python_by_default_from_the_default_index():
    plan = v.pip_plan(PIP_OPTIONS)
    assert plan["argv"][:2] == ["/bin/sh", "-c"] and "command -v python3 || command -v python" in plan["argv"][2]
    assert plan["source_args"] == [] and plan["cert_env"] == {}


def test_pip_of_the_given_python_from_a_wheel_directory_only():
    plan = v.pip_plan({**PIP_OPTIONS, "python": "/opt/conda/bin/python", "pip_wheel_dir": "/data1/artifacts/wheels"})
    assert plan["argv"] == ["/opt/conda/bin/python", "-m", "pip"]
    assert plan["source_args"] == ["--find-links", "/data1/artifacts/wheels", "--no-index"]


def test_pip_with_an_index_and_wheels_and_the_extra_ca():
    plan = v.pip_plan(
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
    assert v.cli_packages(packages, distribution, major) == expected


def test_the_nvidia_runtime_is_pending_only_when_the_configuration_would_change():
    merged = json.dumps({"live-restore": True, "runtimes": {"nvidia": {"path": "nvidia-container-runtime"}}})
    assert not v.nvidia_pending(merged, json.dumps(json.loads(merged), indent=4))
    assert v.nvidia_pending(merged, '{"live-restore": true}')
    assert v.nvidia_pending(merged, "")
    # No dry run possible (check mode before the toolkit is installed): assumed to change.
    assert v.nvidia_pending(None, merged)
    with pytest.raises(ValueError, match="not JSON"):
        v.nvidia_pending("oops", "{}")


PLAN = {
    "image": "horovod/horovod:0.28.1",
    "image_archive": "",
    "gpu_count": 0,
    "nvidia_repo_url": "https://nvidia.github.io/x",
    "extra_ca_bundle": "/etc/ssl/proxy.crt",
    "extra_ca_sha1": "0" * 40,
    "host_ca": {"exists": False, "checksum": ""},
    "nvidia_dry_run": None,
    "daemon_json": "",
}


def plan(**changes: object) -> dict:
    return FILTERS["docker_horovod_daemon_plan"]({**PLAN, **changes})


def test_the_host_ca_file_is_pending_when_it_differs_from_what_is_wanted():
    assert plan()["ca_pending"] and plan()["host_file"]
    assert plan(host_ca={"exists": True, "checksum": "1" * 40})["restart_reason"] == "the extra CA bundle changed"
    assert plan(host_ca={"exists": True, "checksum": "0" * 40}) == {
        "host_file": True,
        "registry_file": "",
        "ca_pending": False,
        "nvidia_pending": False,
        "restart_reason": "",
    }
    # Loaded from an archive, nothing on the host needs it: the file there goes, which restarts Docker.
    archived = plan(image_archive="/a.tar", host_ca={"exists": True, "checksum": "0" * 40})
    assert not archived["host_file"] and archived["ca_pending"]
    assert not plan(image_archive="/a.tar")["ca_pending"]


def test_the_nvidia_runtime_restarts_docker_only_on_a_gpu_host():
    merged = json.dumps({"runtimes": {"nvidia": {"path": "nvidia-container-runtime"}}})
    settled = {"host_ca": {"exists": True, "checksum": "0" * 40}}
    assert not plan(**settled, nvidia_dry_run=merged, daemon_json="")["nvidia_pending"]
    gpu = plan(**settled, gpu_count=2, nvidia_dry_run=merged, daemon_json="")
    assert gpu["nvidia_pending"] and gpu["restart_reason"] == "the NVIDIA runtime must be registered"
    assert not plan(**settled, gpu_count=2, nvidia_dry_run=merged, daemon_json=merged)["restart_reason"]
    assert plan(**settled, gpu_count=2)["nvidia_pending"]  # no dry run possible: assumed to change
    with pytest.raises(AnsibleFilterError, match="not JSON"):
        plan(gpu_count=2, nvidia_dry_run="oops")


def test_a_silent_engine_is_named_with_its_package_or_none():
    task = task_vars("engine.yml", "Check that no other Docker engine is installed here")
    installed = [
        {"path": "/usr/bin/dockerd", "package": "docker.io"},
        {"path": "/usr/bin/dockerd", "package": "docker-ce"},
        {"path": "/usr/local/bin/dockerd", "package": ""},
    ]
    variables = {
        "__docker_horovod_engine_state": {"engine": {"installed": installed}},
        "docker_horovod_engine_packages": ["docker.io", "containerd"],
        "inventory_hostname": "node-a",
        "__docker_horovod_socket": "/var/run/docker.sock",
    }
    others = render(task["vars"]["__others"], **variables)
    message = render(task["ansible.builtin.assert"]["fail_msg"], **variables, __others=others)
    assert (
        "/var/run/docker.sock: /usr/bin/dockerd (package docker-ce), /usr/local/bin/dockerd (no Debian package)."
        in (" ".join(str(message).split()))
    )
    assert (
        render(
            task["vars"]["__others"], **{**variables, "__docker_horovod_engine_state": {"engine": {"installed": []}}}
        )
        == []
    )


@pytest.mark.parametrize("python", ["", "/usr/bin/python3", "python3.11"])
def test_job_processes_own_pip_list_is_idle(python: str) -> None:
    # The role's own read of the installed packages, with the argv the role runs (both forms of
    # pip_plan's), is not a job: a check-mode run beside a real one had its job guard refuse on it.
    argv = v.pip_plan({"python": python})["argv"] + ["list", "--format=json"]
    top = TOP_IDLE + f"4500                {' '.join(argv)}\n"
    assert job_processes(top, []) == []
    # Installing, or anything else run through pip, is.
    install = " ".join(v.pip_plan({"python": python})["argv"] + ["install", "tqdm"])
    listed = " ".join(v.pip_plan({"python": python})["argv"] + ["list"])
    assert job_processes(TOP_IDLE + f"4501 {install}\n4502 {listed}\n", []) == [f"4501 {install}", f"4502 {listed}"]
    assert job_processes(TOP_IDLE + "4503 python3 -m pip list --format=json; sleep 9\n", []) == [
        "4503 python3 -m pip list --format=json; sleep 9"
    ]


def test_the_container_spec_takes_the_roles_variables_by_their_names():
    # The role hands the filter every docker_horovod_* variable (tasks/main.yml), prefix included.
    prefixed = {f"docker_horovod_{name}": value for name, value in SPEC_OPTIONS.items() if name != "infiniband"}
    prefixed |= {"infiniband": SPEC_OPTIONS.get("infiniband"), "docker_horovod_engine_existing": True}
    assert v.container_spec({**prefixed, "docker_horovod_rdma": True}) == v.container_spec(
        {**SPEC_OPTIONS, "rdma": True}
    )
