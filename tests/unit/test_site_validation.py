# Copyright: multinode.horovod contributors
# SPDX-License-Identifier: GPL-3.0-or-later
"""The gate: every broken inventory stops the whole site before any host is touched.

Each case is a malformed inventory run through the full `ansible-playbook site.yml` (no tags) against
hosts that cannot be reached (TEST-NET addresses): the run must stop in the gate, with the expected
message, and no play may have tried to reach a host (no `UNREACHABLE`, no fact gathering, no task of a
role). Partial runs (--limit, --tags launch, --start-at-task, the preflight playbook, --check) are
gated too. The valid example and lab inventories pass the gate.
"""

from __future__ import annotations

import copy
import json
import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml
from checkout import COLLECTIONS

REPO = Path(__file__).resolve().parents[2]
HEADER = "Fix the inventory first (nothing was changed)"

pytestmark = pytest.mark.skipif(not shutil.which("ansible-playbook"), reason="ansible-playbook is not on PATH")

MASTER = {"server-a": {"ansible_host": "192.0.2.10", "horovod_slots": 4}}
WORKERS = {"server-b": {"ansible_host": "192.0.2.11", "horovod_slots": 4}, "server-c": {"ansible_host": "192.0.2.12"}}


def base() -> dict[str, Any]:
    return {
        "all": {
            "children": {
                "horovod_cluster": {
                    "vars": {"ansible_user": "root", "ansible_ssh_common_args": "-o ConnectTimeout=3"},
                    "children": {
                        "horovod_master": {"hosts": copy.deepcopy(MASTER)},
                        "horovod_workers": {"hosts": copy.deepcopy(WORKERS)},
                    },
                }
            }
        }
    }


def cluster(**values: Any) -> dict[str, Any]:
    data = base()
    data["all"]["children"]["horovod_cluster"]["vars"].update(values)
    return data


def host(name: str, **values: Any) -> dict[str, Any]:
    data = base()
    groups = data["all"]["children"]["horovod_cluster"]["children"]
    group = "horovod_master" if name in MASTER else "horovod_workers"
    groups[group]["hosts"][name].update(values)
    return data


def groups_of(**children: dict[str, Any]) -> dict[str, Any]:
    """An inventory with these groups under all (not under horovod_cluster)."""
    return {"all": {"vars": {"ansible_user": "root"}, "children": children}}


def extra_group() -> dict[str, Any]:
    data = base()
    data["all"]["children"]["horovod_cluster"]["hosts"] = {"stray": {"ansible_host": "192.0.2.20"}}
    return data


def typo_group() -> dict[str, Any]:
    data = base()
    children = data["all"]["children"]["horovod_cluster"]["children"]
    children["horovod_worker"] = children.pop("horovod_workers")
    return data


def orphan_children() -> dict[str, Any]:
    return groups_of(horovod_master={"hosts": copy.deepcopy(MASTER)}, horovod_workers={"hosts": copy.deepcopy(WORKERS)})


def same_address_but_case() -> dict[str, Any]:
    data = host("server-b", ansible_host="gpu-b.example")
    data["all"]["children"]["horovod_cluster"]["children"]["horovod_workers"]["hosts"]["server-c"].update(
        ansible_host="GPU-B.example"
    )
    return data


def not_pem(tmp: Path) -> str:
    path = tmp / "bundle.pem"
    path.write_text("not a certificate\n")
    return str(path)


# (id, inventory or a function of tmp_path giving one, a fragment the error must contain)
CASES: list[tuple[str, Any, str]] = [
    # NFS export options: an injected client, contradictions, strings for lists
    (
        "export-option-injection",
        cluster(horovod_nfs_export_options=["fsid=0) *(rw,insecure,no_root_squash"]),
        "horovod_nfs_export_options",
    ),
    ("export-option-unknown", cluster(horovod_nfs_export_options=["rw", "everyone"]), "horovod_nfs_export_options"),
    (
        "export-option-bad-value",
        cluster(horovod_nfs_export_options=["rw", "anonuid=root"]),
        "horovod_nfs_export_options",
    ),
    ("export-options-contradict", cluster(horovod_nfs_export_options=["rw", "ro"]), "horovod_nfs_export_options"),
    ("export-options-string", cluster(horovod_nfs_export_options="rw,sync"), "horovod_nfs_export_options"),
    ("mount-option-comma", cluster(horovod_nfs_mount_options=["hard,nolock"]), "horovod_nfs_mount_options"),
    ("mount-option-space", cluster(horovod_nfs_mount_options=["nfsvers=4.2 ro"]), "horovod_nfs_mount_options"),
    ("mount-option-bad-version", cluster(horovod_nfs_mount_options=["nfsvers=9"]), "horovod_nfs_mount_options"),
    ("mount-options-string", cluster(horovod_nfs_mount_options="hard"), "horovod_nfs_mount_options"),
    # weakening NFS options without their switch (nfs_client_allow_weak_options, nfs_server_allow_weak_options)
    (
        "mount-options-without-nosuid",
        cluster(horovod_nfs_mount_options=["nfsvers=4.2", "hard", "nodev"]),
        "lack nosuid: a set-user-ID program that root on another client puts on the share",
    ),
    (
        "mount-options-with-dev",
        cluster(horovod_nfs_mount_options=["nfsvers=4.2", "hard", "nosuid", "dev"]),
        "option 'dev' undoes nodev",
    ),
    (
        "export-options-crossmnt",
        cluster(horovod_nfs_export_options=["rw", "sync", "no_subtree_check", "no_root_squash", "crossmnt"]),
        "option 'crossmnt' exports every file system mounted below the export too",
    ),
    # node addresses
    ("address-network", host("server-b", ansible_host="10.0.0.0/8"), "is a network"),
    ("address-wide-network", host("server-b", ansible_host="0.0.0.0/1"), "is a network"),
    ("address-wildcard", host("server-b", ansible_host="*.example.com"), "not a valid host name"),
    ("address-netgroup", host("server-c", ansible_host="@gpus"), "not a valid host name"),
    ("address-localhost", host("server-c", ansible_host="localhost"), "this machine's own name"),
    ("address-loopback", host("server-c", horovod_node_address="127.0.0.1"), "not an address other nodes can reach"),
    ("address-unspecified", host("server-b", ansible_host="0.0.0.0"), "not an address other nodes can reach"),
    ("address-duplicate", host("server-c", ansible_host="192.0.2.10"), "address 192.0.2.10 is also server-a's"),
    ("address-duplicate-case", same_address_but_case(), "address GPU-B.example is also server-b's"),
    (
        "address-leading-zero",
        host("server-b", ansible_host="192.0.2.011"),
        "server-b: ansible_host: '192.0.2.011' is not an IPv4 address as written (the C library reads it as 192.0.2.9)",
    ),
    (
        "address-leading-zero-named-by-the-node",
        host("server-b", horovod_node_address="192.0.2.011"),
        "horovod_node_address of server-b (as nfs_server_exports)",
    ),
    (
        "address-trailing-newline",
        host("server-b", ansible_host="server-b\n"),
        "server-b: ansible_host: 'server-b\\n' is not a valid host name",
    ),
    # paths
    ("share-dir-dotdot", cluster(horovod_share_dir="/data1/../etc"), "horovod_share_dir"),
    ("share-root-slash", cluster(horovod_share_root="/", horovod_share_dir="/"), "horovod_share_root"),
    ("share-root-etc", cluster(horovod_share_root="/etc", horovod_share_dir="/etc/share"), "system directory /etc"),
    ("share-dir-relative", cluster(horovod_share_dir="data1/share"), "is not absolute"),
    ("share-dir-outside-root", cluster(horovod_share_dir="/srv/share"), "must be a directory below horovod_share_root"),
    ("share-dir-is-root", cluster(horovod_share_dir="/data1"), "must be a directory below horovod_share_root"),
    ("share-dir-space", cluster(horovod_share_dir="/data1/my share"), "not allowed"),
    ("artifact-dir-in-share", cluster(horovod_artifact_dir="/data1/share/bin"), "must be apart, neither inside"),
    ("artifact-dir-outside-root", cluster(horovod_artifact_dir="/opt/bin"), "horovod_artifact_dir: '/opt/bin' must be"),
    ("image-archive-relative", cluster(horovod_image_archive="images/horovod.tar"), "horovod_image_archive"),
    # types
    ("interfaces-string", cluster(horovod_network_interfaces="eth0"), "horovod_network_interfaces (on every host)"),
    ("command-string", cluster(horovod_train_command="python train.py"), "horovod_train_command (on every host)"),
    ("pip-packages-string", cluster(horovod_pip_packages="tqdm"), "horovod_pip_packages"),
    ("pip-packages-strings", cluster(horovod_pip_packages=["tqdm"]), "is not a mapping"),
    ("port-word", cluster(horovod_ssh_port="twelve"), "'twelve' is not a whole number"),
    ("slots-word", host("server-b", horovod_slots="four"), "horovod_slots (on server-b)"),
    ("slots-zero", host("server-c", horovod_slots=0), "horovod_slots (on server-c)"),
    ("container-name-list", cluster(horovod_container_name=["horovod"]), "horovod_container_name"),
    ("storage-kind", cluster(horovod_shared_storage="s3"), "'s3' is not one of nfs, existing"),
    ("role-variable-type", cluster(docker_horovod_rdma="maybe"), "docker_horovod_rdma"),
    # names
    ("variable-typo", cluster(horovod_ssh_prot=2222), "did you mean horovod_ssh_port?"),
    ("role-variable-typo", cluster(horovod_launch_timout=10), "did you mean horovod_launch_timeout?"),
    ("unknown-switch", cluster(horovod_unknown_variables="maybe"), "horovod_unknown_variables"),
    # structure
    ("group-typo", typo_group(), "Did you mean horovod_workers?"),
    ("host-outside-children", extra_group(), "stray: in horovod_cluster but in neither"),
    ("children-without-parent", orphan_children(), "but not in horovod_cluster"),
    (
        "no-master",
        groups_of(horovod_cluster={"children": {"horovod_workers": {"hosts": copy.deepcopy(WORKERS)}}}),
        "horovod_master: the group is missing or empty",
    ),
    (
        "two-masters",
        groups_of(horovod_cluster={"children": {"horovod_master": {"hosts": {**MASTER, **WORKERS}}}}),
        "there must be exactly one",
    ),
    # cluster-wide settings that differ
    ("port-differs", host("server-b", horovod_ssh_port=2222), "horovod_ssh_port differs between hosts"),
    ("share-differs", host("server-c", horovod_share_dir="/data1/other"), "horovod_share_dir differs between hosts"),
    ("image-differs", host("server-b", horovod_image="horovod/horovod:0.28.0"), "horovod_image differs"),
    # values the roles refuse
    ("port-zero", cluster(horovod_ssh_port=0), "horovod_ssh_port"),
    ("port-too-high", cluster(horovod_ssh_port=70000), "horovod_ssh_port"),
    ("port-is-ansible-port", cluster(horovod_ssh_port=22), "horovod_ssh_port"),
    ("port-is-nfs", cluster(horovod_ssh_port=2049), "horovod_ssh_port: 2049 is NFS's (nfsd) port"),
    ("port-is-rpcbind", cluster(horovod_ssh_port="111"), "horovod_ssh_port: 111 is rpcbind's (the NFS portmapper)"),
    ("image-untagged", cluster(horovod_image="horovod/horovod"), "horovod_image"),
    ("image-latest", cluster(horovod_image="horovod/horovod:latest"), "horovod_image"),
    (
        "image-trailing-newline",
        cluster(horovod_image="horovod/horovod:0.28.1\n"),
        "horovod_image (as docker_horovod_image): 'horovod/horovod:0.28.1\\n' is not a valid image reference",
    ),
    ("container-name-space", cluster(horovod_container_name="my container"), "horovod_container_name"),
    ("shm-size-word", cluster(horovod_shm_size="lots"), "horovod_shm_size"),
    ("shm-size-zero", cluster(horovod_shm_size="0g"), "horovod_shm_size (as docker_horovod_shm_size): '0g' is zero"),
    ("pip-version-range", cluster(horovod_pip_packages=[{"name": "tqdm", "version": ">=4"}]), "horovod_pip_packages"),
    ("ca-bundle-missing", cluster(horovod_extra_ca_bundle="/nonexistent/ca.pem"), "horovod_extra_ca_bundle"),
    ("ca-bundle-not-pem", lambda tmp: cluster(horovod_extra_ca_bundle=not_pem(tmp)), "horovod_extra_ca_bundle"),
    ("run-name-path", cluster(horovod_run_name="../etc"), "horovod_run_name"),
    (
        "run-name-too-long",
        cluster(horovod_run_name="r" * 100_000),
        "horovod_run_name (as horovod_launch_run_name): 'rrrrrrrrrrrrrrrrrrrr'... is 100000 characters long",
    ),
    ("interface-with-space", cluster(horovod_network_interfaces=["eth0 eth1"]), "horovod_network_interfaces"),
    ("command-empty-program", cluster(horovod_train_command=["", "train.py"]), "horovod_train_command"),
    # an elastic run the launch role would refuse, set on the master as a role variable
    (
        "elastic-with-mpi",
        host("server-a", horovod_launch_elastic=True, horovod_launch_controller="mpi"),
        "Horovod runs elastic jobs with Gloo only",
    ),
    # modes that trust the workers, without horovod_trust_workers
    ("mpi-untrusted", host("server-a", horovod_launch_controller="mpi"), "horovod_launch_controller: 'mpi' trusts"),
    ("mesh-untrusted", host("server-a", ssh_trust_mesh=True), "ssh_trust_mesh: true trusts the workers"),
    ("elastic-untrusted", host("server-a", horovod_launch_elastic=True), "horovod_launch_elastic: true trusts the"),
    (
        "launch-env-path",
        host("server-a", horovod_launch_env={"PATH": "/data1/share/bin:/usr/bin"}),
        "horovod_launch_env: PATH may not be set here",
    ),
    (
        "launch-env-boolean",
        host("server-a", horovod_launch_env={"NCCL_DEBUG": "INFO", "USE_X": True}),
        "horovod_launch_env: the value of USE_X is a boolean",
    ),
    (
        "elastic-cooldown-zero",
        host("server-a", horovod_launch_elastic_cooldown=[0, 10]),
        "horovod_launch_elastic_cooldown",
    ),
]


def write(tmp_path: Path, data: Any) -> Path:
    if callable(data):
        data = data(tmp_path)
    path = tmp_path / "hosts.yml"
    path.write_text(yaml.safe_dump(data))
    return path


def playbook(inv: Path, *args: str, book: str = "site.yml") -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=str(COLLECTIONS), ANSIBLE_NOCOLOR="1")
    env.pop("ANSIBLE_CALLBACKS_ENABLED", None)
    return subprocess.run(
        ["ansible-playbook", book, "-i", str(inv), *args],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        check=False,
        stdin=subprocess.DEVNULL,
    )


TASK_RE = re.compile(r"^TASK \[(.*)\]", re.MULTILINE)
GATE_TASKS = {"Check the inventory against the contract and the roles' rules", "Stop on a broken inventory"}


def assert_stopped_in_gate(res: subprocess.CompletedProcess[str], expected: str) -> None:
    out = res.stdout + res.stderr
    assert res.returncode != 0, out
    assert HEADER in out, out
    assert expected in out, out
    # No host was contacted: nothing unreachable, no facts gathered, no task but the gate's ran.
    assert "UNREACHABLE" not in out, out
    assert set(TASK_RE.findall(out)) <= GATE_TASKS, out


@pytest.mark.parametrize(("case", "data", "expected"), CASES, ids=[case[0] for case in CASES])
def test_broken_inventory_stops_in_the_gate(tmp_path, case, data, expected):
    del case
    assert_stopped_in_gate(playbook(write(tmp_path, data)), expected)


def test_there_are_forty_cases_or_more():
    assert len(CASES) >= 40


BROKEN = cluster(horovod_nfs_export_options=["fsid=0) *(rw,insecure,no_root_squash"], horovod_ssh_prot=1)


@pytest.mark.parametrize(
    "args",
    [
        ["--limit", "server-b"],
        ["--limit", "horovod_workers"],
        ["--tags", "launch"],
        ["--tags", "storage", "--limit", "server-c"],
        ["--check", "--diff"],
        ["--start-at-task", "Run horovodrun from the master's container"],
        ["--skip-tags", "always"],
    ],
    ids=" ".join,
)
def test_partial_runs_are_gated_too(tmp_path, args):
    res = playbook(write(tmp_path, BROKEN), *args)
    assert_stopped_in_gate(res, "did you mean horovod_ssh_port?")
    assert "horovod_nfs_export_options" in res.stdout + res.stderr


@pytest.mark.parametrize("book", ["playbooks/preflight.yml", "playbooks/doctor.yml"])
def test_the_preflight_and_doctor_playbooks_are_gated(tmp_path, book):
    res = playbook(write(tmp_path, BROKEN), book=book)
    assert_stopped_in_gate(res, "did you mean horovod_ssh_port?")


def test_a_role_variable_the_site_sets_is_named_as_ignored(tmp_path):
    res = playbook(write(tmp_path, cluster(container_sshd_port=2222)), "--tags", "validate", "--skip-tags", "probe")
    out = " ".join((res.stdout + res.stderr).split())  # the callback folds long warnings
    assert res.returncode == 0, out
    assert (
        "container_sshd_port (on every host): set in the inventory, but the site sets it from horovod_ssh_port" in out
    )


def test_a_value_only_the_hosts_know_is_left_to_the_roles(tmp_path):
    data = cluster(horovod_node_address="{{ ansible_facts['default_ipv4']['address'] }}")
    res = playbook(write(tmp_path, data), "--tags", "validate", "--skip-tags", "probe")
    out = res.stdout + res.stderr
    assert res.returncode == 0, out
    assert "horovod_node_address (on every host) depends on what only the hosts can tell" in out


def test_unknown_names_can_be_only_warnings(tmp_path):
    res = playbook(
        write(tmp_path, cluster(horovod_ssh_prot=2222, horovod_unknown_variables="warn")),
        "--tags",
        "validate",
        "--skip-tags",
        "probe",
    )
    out = res.stdout + res.stderr
    assert res.returncode == 0, out
    assert "did you mean horovod_ssh_port?" in out


@pytest.mark.parametrize("name", ["example", "lab"])
def test_the_shipped_inventories_pass_the_gate(name):
    res = playbook(REPO / "inventories" / name, "--tags", "validate", "--skip-tags", "probe")
    assert res.returncode == 0, res.stdout + res.stderr
    assert HEADER not in res.stdout + res.stderr


def test_a_sound_inventory_passes_the_gate(tmp_path):
    res = playbook(write(tmp_path, base()), "--tags", "validate", "--skip-tags", "probe")
    assert res.returncode == 0, res.stdout + res.stderr


def test_the_teardown_playbook_is_gated(tmp_path):
    res = playbook(write(tmp_path, BROKEN), book="playbooks/teardown.yml")
    assert_stopped_in_gate(res, "did you mean horovod_ssh_port?")


def test_the_teardown_switches_are_known_names_and_a_typo_of_one_is_not(tmp_path):
    inventory = write(tmp_path, base())
    switches = ["-e", "horovod_teardown_force=true", "-e", "horovod_teardown_remove_share_data=false"]
    res = playbook(inventory, *switches, "--tags", "validate", "--skip-tags", "probe", book="playbooks/teardown.yml")
    assert res.returncode == 0, res.stdout + res.stderr
    res = playbook(inventory, "-e", "horovod_teardown_forse=true", book="playbooks/teardown.yml")
    assert_stopped_in_gate(res, "did you mean horovod_teardown_force?")
    res = playbook(inventory, "--tags", "validate", "--skip-tags", "probe", book="playbooks/teardown.yml")
    assert res.returncode == 0, res.stdout + res.stderr  # without the switches (their defaults)
    only_checks = ["--tags", "validate", "--skip-tags", "probe"]
    res = playbook(inventory, "-e", "horovod_teardown_force=maybe", *only_checks, book="playbooks/teardown.yml")
    assert res.returncode != 0
    assert "argument 'horovod_teardown_force' is of type str and we were unable to convert to bool" in res.stdout


def test_the_benchmark_playbook_is_gated_and_checks_its_settings_before_any_host(tmp_path):
    res = playbook(write(tmp_path, BROKEN), book="playbooks/benchmark.yml")
    assert_stopped_in_gate(res, "did you mean horovod_ssh_port?")
    inventory = write(tmp_path, base())
    res = playbook(inventory, "-e", "horovod_bench_alreduce_iters=3", book="playbooks/benchmark.yml")
    assert_stopped_in_gate(res, "did you mean horovod_bench_allreduce_iters?")
    res = playbook(inventory, "-e", "horovod_bench_allreduce_max_bytes=1023", "--skip-tags", "probe",
                   book="playbooks/benchmark.yml")  # fmt: skip
    assert res.returncode != 0
    out = res.stdout + res.stderr
    assert "horovod_bench_allreduce_max_bytes: '1023' is not a size in bytes" in out
    assert "Check the benchmark's settings" in out and "Read the container's image ID" not in out


def test_the_tensorboard_playbook_is_gated_and_checks_its_settings_before_any_host(tmp_path):
    book = "playbooks/tensorboard.yml"
    res = playbook(write(tmp_path, BROKEN), book=book)
    assert_stopped_in_gate(res, "did you mean horovod_ssh_port?")
    inventory = write(tmp_path, base())
    res = playbook(inventory, "-e", "horovod_tensorboard_prot=6007", book=book)
    assert_stopped_in_gate(res, "did you mean horovod_tensorboard_port?")
    bad = ["-e", "horovod_tensorboard_port=70000", "-e", "horovod_tensorboard_state=up", "-e",
           "horovod_tensorboard_logdir=/srv/elsewhere"]  # fmt: skip
    res = playbook(inventory, *bad, "--skip-tags", "probe", book=book)
    out = " ".join((res.stdout + res.stderr).split())
    assert res.returncode != 0, out
    assert "horovod_tensorboard_port: 70000 is not a TCP port (1-65535)" in out
    assert "horovod_tensorboard_state: 'up' is not one of started, stopped" in out
    assert "horovod_tensorboard_logdir: '/srv/elsewhere' is not on the share" in out
    assert "Check TensorBoard's settings" in out and "TASK [Read TensorBoard, its processes" not in out
    assert "UNREACHABLE" not in out
    # The same settings, sound, pass (the play that reads the master's container left out).
    good = ["-e", "horovod_tensorboard_port=6007", "-e", "horovod_tensorboard_state=stopped", "-e",
            "horovod_tensorboard_logdir=/data1/share/tensorboard"]  # fmt: skip
    res = playbook(inventory, *good, "--skip-tags", "probe,tensorboard", book=book)
    assert res.returncode == 0, res.stdout + res.stderr
    assert "Check TensorBoard's settings" in res.stdout


def test_an_unsafe_inventory_value_is_judged_raw_as_the_role_gets_it(tmp_path):
    """`!unsafe` text is never run by the gate (its result would show in the message), and the value the
    gate judges is the one the launch role gets from the site's mapping (playbooks/vars/launch.yml)."""
    raw = "{{ cycler.__init__.__globals__.os.getcwd() }}"
    text = yaml.safe_dump(host("server-a", horovod_launch_runs_dir="RAW")).replace("RAW", f'!unsafe "{raw}"')
    inventory = tmp_path / "hosts.yml"
    inventory.write_text(text)
    res = playbook(inventory)
    assert_stopped_in_gate(res, f"{raw!r} is not absolute")
    judged = [line for line in (res.stdout + res.stderr).splitlines() if "horovod_launch_runs_dir" in line]
    assert judged and not any(str(REPO) in line for line in judged), judged
    show = tmp_path / "show.yml"
    show.write_text(
        yaml.safe_dump(
            [
                {
                    "hosts": "horovod_master",
                    "gather_facts": False,
                    "vars_files": [str(REPO / "playbooks/vars/cluster.yml"), str(REPO / "playbooks/vars/launch.yml")],
                    "tasks": [{"ansible.builtin.debug": {"msg": "role gets {{ horovod_launch_runs_dir | to_json }}"}}],
                }
            ]
        )
    )
    res = playbook(inventory, book=str(show))
    assert res.returncode == 0, res.stdout + res.stderr
    assert f"role gets {json.dumps(raw)}" in res.stdout, res.stdout


@pytest.mark.parametrize(
    ("data", "args", "named"),
    [
        (host("server-a", horovod_launch_controller="mpi"), [], "horovod_launch_controller: 'mpi' trusts the workers"),
        (cluster(ssh_trust_mesh=True), [], "ssh_trust_mesh: true trusts the workers"),
        (base(), ["-e", "horovod_launch_elastic=true"], "horovod_launch_elastic: true trusts the workers"),
    ],
    ids=["mpi", "mesh", "elastic"],
)
def test_trusting_the_workers_is_said_once_by_name(tmp_path, data, args, named):
    """The mpi controller, the key mesh and an elastic run (as tools/lab.py starts one, with -e) stop in the
    gate until horovod_trust_workers says the workers are trusted; then they pass with its warning."""
    checks = ["--tags", "validate", "--skip-tags", "probe"]
    res = playbook(write(tmp_path, data), *args)
    assert_stopped_in_gate(res, named)
    assert "horovod_trust_workers: true" in " ".join((res.stdout + res.stderr).split())
    res = playbook(write(tmp_path, data), *args, "-e", "horovod_trust_workers=true", *checks)
    out = " ".join((res.stdout + res.stderr).split())
    assert res.returncode == 0, out
    assert "horovod_trust_workers (on every host) is true: root on every worker is trusted with root in the" in out
