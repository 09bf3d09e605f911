# Copyright: multinode.horovod contributors
# SPDX-License-Identifier: GPL-3.0-or-later
"""horovod_launch's input rules (plugins/plugin_utils/horovod_launch_rules.py): each rule fed its bad case."""

from __future__ import annotations

import argparse
import fnmatch
import re
from pathlib import Path
from typing import Any, NoReturn

import pytest
import yaml
from ansible_collections.multinode.horovod.plugins.filter.role_rules import role_problems
from ansible_collections.multinode.horovod.plugins.plugin_utils import code_paths
from ansible_collections.multinode.horovod.plugins.plugin_utils import horovod_launch_rules as rules
from ansible_collections.multinode.horovod.plugins.plugin_utils.gate import OPT_INS

REPO = Path(__file__).resolve().parents[4]
SHARE = "/data1/share"
ARTIFACTS = "/data1/artifacts"

GOOD: dict[str, Any] = {
    "horovod_launch_hosts": [
        {"name": "node-a", "address": "192.0.2.10", "slots": 2},
        {"name": "node-b", "address": "192.0.2.11", "slots": 1},
    ],
    "horovod_launch_np": 0,
    "horovod_launch_elastic": False,
    "horovod_launch_min_np": 0,
    "horovod_launch_max_np": 0,
    "horovod_launch_elastic_cooldown": [10, 300],
    "horovod_launch_command": [],
    "horovod_launch_example_args": [],
    "horovod_launch_container": "horovod",
    "horovod_launch_share_dir": SHARE,
    "horovod_launch_artifact_dir": ARTIFACTS,
    "horovod_launch_allow_share_code": False,
    "horovod_launch_workdir": "",
    "horovod_launch_output_dir": "",
    "horovod_launch_runs_dir": f"{ARTIFACTS}/runs",
    "horovod_launch_run_name": "",
    "horovod_launch_example_dir": f"{ARTIFACTS}/examples",
    "horovod_launch_code_repo": "",
    "horovod_launch_code_version": "",
    "horovod_launch_code_dest": "",
    "horovod_launch_ssh_port": 12345,
    "horovod_launch_ssh_identity_file": "/root/.ssh/id_ed25519",
    "horovod_launch_controller": "gloo",
    "horovod_launch_network_interfaces": [],
    "horovod_launch_start_timeout": 60,
    "horovod_launch_env": {},
    "horovod_launch_extra_args": [],
    "horovod_launch_timeout": 0,
    "horovod_launch_stop_grace": 10,
    "horovod_launch_idle_process_patterns": [],
    "horovod_launch_poll_interval": 15,
    "horovod_launch_failure_tail_lines": 40,
    "horovod_launch_required_frameworks": ["pytorch"],
    "horovod_launch_min_shm_size": "1G",
    "horovod_launch_ssh_connect_timeout": 10,
    "horovod_launch_launcher": "horovodrun",
    "horovod_launch_rdzv_port": 29500,
}


def problems(**changes: Any) -> list[tuple[str, str]]:
    return rules.problems({**GOOD, **{f"horovod_launch_{k}": v for k, v in changes.items()}})


def test_the_defaults_with_a_host_list_are_sound():
    assert problems() == []


def test_the_inputs_cover_every_role_default_the_rules_read():
    """The good case is the role's defaults (templated for the artifact directory), plus a host list."""
    defaults = yaml.safe_load((REPO / "roles/horovod_launch/defaults/main.yml").read_text())
    for name, value in GOOD.items():
        if name != "horovod_launch_hosts" and not str(defaults[name]).startswith("{{"):
            assert defaults[name] == value, name


@pytest.mark.parametrize(
    "changes",
    [
        {"np": 3},
        {"np": "2"},
        {"ssh_port": "2222"},
        {"ssh_port": 65535},
        {"timeout": "300"},
        {"timeout": 7200},
        {"idle_process_patterns": ["jupyter-lab", "^tensorboard( |$)"]},
        {"workdir": f"{ARTIFACTS}/workspace/examples/pytorch"},
        {"workdir": ARTIFACTS},
        {"runs_dir": ARTIFACTS},
        # Checkpoints are data: on the share (an elastic run's) as well as in the artifact directory.
        {"output_dir": f"{SHARE}/outputs/resnet50"},
        {"output_dir": f"{ARTIFACTS}/resnet50"},
        {
            "share_dir": "/srv/share",
            "artifact_dir": "/srv/artifacts",
            "runs_dir": "/srv/artifacts/runs",
            "example_dir": "/srv/artifacts/ex",
            "code_dest": "/srv/artifacts/code",
        },
        # What every rank executes may come from the share only when asked for.
        {
            "allow_share_code": True,
            "artifact_dir": "",
            "runs_dir": f"{SHARE}/runs",
            "example_dir": f"{SHARE}/examples",
            "code_dest": f"{SHARE}/workspace",
            "workdir": f"{SHARE}/w",
            "command": ["python3", f"{SHARE}/code/train.py"],
            "env": {"PYTHONPATH": f"{SHARE}/lib"},
        },
        {
            "allow_share_code": "yes",
            "artifact_dir": "",
            "runs_dir": f"{SHARE}/runs",
            "example_dir": f"{SHARE}/examples",
            "code_dest": f"{SHARE}/workspace",
        },
        # Data on the share is fine: only what is executed must not be there.
        {"command": ["python3", "train.py", "--data-dir", f"{SHARE}/imagenet", f"{SHARE}/x.py"]},
        {"command": ["python3", "-c", f"import runpy; print('{SHARE}/x.py')"]},
        {"command": ["python3", "-m", "trainer", f"{SHARE}/config.py"]},
        {"command": ["sh", "-c", f"while [ -e {SHARE}/hold ]; do sleep 1; done"]},
        {"command": ["python3", "-W", "ignore", f"{ARTIFACTS}/train.py", f"{SHARE}/data"]},
        {"command": ["torchrun-like", f"{SHARE}/script.py"]},  # not an interpreter the rule knows
        {"env": {"PYTHONPATH": f"{ARTIFACTS}/lib:/opt/lib", "NCCL_DEBUG": f"{SHARE}/not-code", "DATA": SHARE}},
        {"run_name": "r1.2_x-y"},
        {"run_name": "r" * 100},
        {"code_repo": "https://github.com/horovod/horovod.git", "code_version": "v0.28.1"},
        {"command": ["python3", "train.py", "--epochs", 10]},
        {"example_args": ["--epochs", "5"]},
        {"env": {"NCCL_DEBUG": "INFO", "OMP_NUM_THREADS": 4, "X_1": "yes", "X_2": 0.5}},
        # Another helper's rule refuses these only where they point at the share.
        {"env": {"PYTHONPATH": "/opt/lib", "LD_LIBRARY_PATH": "/opt/lib", "PATHS": "x", "MY_PATH": "/x"}},
        {"env": {"OMPI_MCA_btl_tcp_if_include": "eth0", "HOROVOD_FUSION_THRESHOLD": "67108864", "NCCL_IB_HCA": "mlx5"}},
        {"extra_args": ["--timeline-filename", "/data1/share/t.json", "--fusion-threshold-mb=32"]},
        {"extra_args": ["--fusion-t", "32", "--mpi-a=-x A", "--tcp", "--log-level", "INFO", "-cb", "--no-stall"]},
        {"extra_args": ["--autotune", "--autotune-log-file", "/data1/share/at.csv", "--cycle-time-ms", "-1"]},
        # an option of another Horovod version, with its value
        {"extra_args": ["--no-such-option", "3"]},
        {"network_interfaces": ["eth0", "ib0", "eth0.100", "veth@if3", "enp0s31f6_x-1"]},
        {"min_shm_size": "512M"},
        {"min_shm_size": "1.5 GB"},
        {"trust_workers": True, "controller": "mpi"},
        {"required_frameworks": ["pytorch", "tensorflow", "mxnet"]},
        {"required_frameworks": []},
        {"hosts": [{"name": "solo", "address": "solo", "slots": "4"}]},
        {"trust_workers": True, "elastic": True},
        {"trust_workers": True, "elastic": "true", "min_np": 1, "max_np": 3, "np": 2},
        {"trust_workers": True, "elastic": True, "min_np": "3", "elastic_cooldown": [1, 3600]},
        {
            "trust_workers": True,
            "elastic": False,
            "controller": "mpi",
            "min_np": 9,
        },  # the bounds only bind an elastic run
        {"elastic_cooldown": ["5", 5]},
    ],
)
def test_good_inputs_have_no_problems(changes):
    assert problems(**changes) == []


BAD = [
    # (changes, variable, fragment of the message)
    ({"hosts": []}, "hosts", "the host list is empty"),
    ({"hosts": "node-a"}, "hosts", "must be a list of {name, address, slots}"),
    ({"hosts": [{"name": "a", "address": "a"}]}, "hosts", "host 0 (a): slots is missing"),
    ({"hosts": [{"name": "a", "address": "a", "slots": 0}]}, "hosts", "slots must be a whole number of 1 or more"),
    ({"hosts": [{"name": "a", "address": "fe80::1", "slots": 1}]}, "hosts", "'fe80::1' is not a host name or IPv4"),
    (
        {"hosts": [{"name": "a", "address": "x", "slots": 1}, {"name": "b", "address": "x", "slots": 1}]},
        "hosts",
        "address 'x' is also used by host 0",
    ),
    ({"np": 4}, "np", "4 is more than the 3 slots of the hosts (node-a: 2, node-b: 1)"),
    ({"np": -1}, "np", "-1 is not a whole number of 0 or more"),
    ({"np": "four"}, "np", "'four' is not a whole number"),
    ({"np": True}, "np", "True is not a whole number"),
    ({"timeout": -1}, "timeout", "-1 is not a whole number of 0 or more; set it to the seconds the run may take, or 0"),
    ({"stall_timeout": -5}, "stall_timeout", "-5 is not a whole number of 0 or more; set it to the seconds a run may"),
    ({"timeout": "long"}, "timeout", "'long' is not a whole number of 0 or more"),
    ({"stop_grace": 0}, "stop_grace", "0 is not a whole number of 1 or more"),
    ({"idle_process_patterns": ["("]}, "idle_process_patterns", "'(' is not a regular expression"),
    ({"idle_process_patterns": "jupyter"}, "idle_process_patterns", "'jupyter' is not a list"),
    ({"poll_interval": -5}, "poll_interval", "-5 is not a whole number of 1 or more"),
    ({"start_timeout": "soon"}, "start_timeout", "'soon' is not a whole number"),
    ({"ssh_connect_timeout": 0}, "ssh_connect_timeout", "0 is not a whole number of 1 or more"),
    ({"failure_tail_lines": 2.5}, "failure_tail_lines", "2.5 is not a whole number"),
    ({"ssh_port": 0}, "ssh_port", "0 is not a TCP port; use the port of the containers' sshd, from 1 to 65535"),
    ({"ssh_port": 70000}, "ssh_port", "70000 is not a TCP port"),
    ({"ssh_port": "ssh"}, "ssh_port", "'ssh' is not a TCP port"),
    ({"ssh_port": "70000"}, "ssh_port", "70000 is not a TCP port"),  # from -e: the number, not a quoted string
    ({"share_dir": "data1/share"}, "share_dir", "'data1/share' is not absolute"),
    ({"share_dir": "/data1/../etc"}, "share_dir", "'/data1/../etc' is not normalised"),
    ({"share_dir": "/"}, "share_dir", "'/' is not normalised"),
    ({"share_dir": "/etc/share"}, "share_dir", "inside the system directory /etc"),
    ({"runs_dir": "runs"}, "runs_dir", "'runs' is not absolute"),
    ({"runs_dir": "/data2/runs"}, "runs_dir", "'/data2/runs' is not on the share '/data1/share' or the artifact"),
    ({"runs_dir": "/data2/runs"}, "runs_dir", "so put it below the artifact directory /data1/artifacts"),
    ({"runs_dir": "/data1/sharefoo/runs"}, "runs_dir", "is not on the share"),
    ({"example_dir": "/data1/share/ex amples"}, "example_dir", "characters that are not allowed in 'ex amples'"),
    ({"example_dir": "/srv/examples"}, "example_dir", "is not on the share"),
    ({"code_dest": "/data1/share/./code"}, "code_dest", "is not normalised"),
    ({"code_dest": "/opt/code"}, "code_dest", "'/opt/code' is not on the share"),
    ({"code_dest": SHARE}, "code_dest", "'/data1/share' is the share itself"),
    ({"workdir": "work"}, "workdir", "'work' is not absolute"),
    ({"workdir": "/data1/share/"}, "workdir", "is not normalised"),
    ({"workdir": "/workspace"}, "workdir", "'/workspace' is not on the share"),
    ({"output_dir": "out"}, "output_dir", "'out' is not absolute"),
    ({"output_dir": "/opt/out"}, "output_dir", "'/opt/out' is not on the share"),
    ({"ssh_identity_file": "id_ed25519"}, "ssh_identity_file", "'id_ed25519' is not an absolute path"),
    ({"ssh_identity_file": None}, "ssh_identity_file", "None is not an absolute path"),
    ({"run_name": "../x"}, "run_name", "'../x' is not a plain directory name"),
    ({"run_name": "-r"}, "run_name", "'-r' is not a plain directory name"),
    ({"run_name": "a/b"}, "run_name", "is not a plain directory name"),
    ({"run_name": "r" * 101}, "run_name", f"{'r' * 20!r}... is 101 characters long; a run name is a directory name"),
    (
        {"run_name": "r" * 100_000},
        "run_name",
        "is 100000 characters long; a run name is a directory name of at most 100",
    ),
    (
        {"code_repo": "https://example.org/x.git"},
        "code_version",
        "'' does not pin the code of horovod_launch_code_repo",
    ),
    ({"code_repo": "/srv/x.git", "code_version": "HEAD"}, "code_version", "'HEAD' does not pin the code"),
    ({"code_repo": ["x"]}, "code_repo", "['x'] is not a string"),
    ({"command": "python train.py"}, "command", "'python train.py' is not a list"),
    ({"command": ["", "train.py"]}, "command", "starts with an empty item; give the program first"),
    ({"command": ["  "]}, "command", "starts with an empty item"),
    ({"command": [["python3"]]}, "command", "item 0 (['python3']) is not a plain string"),
    ({"example_args": "--epochs 5"}, "example_args", "'--epochs 5' is not a list"),
    ({"env": ["NCCL_DEBUG=INFO"]}, "env", "['NCCL_DEBUG=INFO'] is not a mapping"),
    ({"env": {"1X": "a"}}, "env", "'1X' is not a variable name"),
    ({"env": {"A-B": "a"}}, "env", "'A-B' is not a variable name"),
    ({"env": {"A": {"b": 1}}}, "env", "the value of A is a dict, not a plain value"),
    ({"env": {"A": [1, 2]}}, "env", "the value of A is a list, not a plain value"),
    ({"env": {"A": None}}, "env", "the value of A is a NoneType, not a plain value"),
    ({"env": {"PATH": "/usr/bin:/bin"}}, "env", "PATH may not be set here: it decides which ssh runs"),
    ({"env": {"LD_PRELOAD": "/x.so"}}, "env", "LD_PRELOAD may not be set here: it loads code of its own"),
    ({"env": {"OMPI_MCA_plm_rsh_agent": "ssh"}}, "env", "OMPI_MCA_plm_rsh_agent may not be set here: it changes how"),
    ({"env": {"NCCL_SOCKET_IFNAME": "eth0"}}, "env", "list them in horovod_launch_network_interfaces instead"),
    ({"env": {"HOROVOD_RANK": "0"}}, "env", "HOROVOD_RANK may not be set here: horovodrun sets it for every rank"),
    ({"env": {"A": True}}, "env", "the value of A is a boolean (YAML reads an unquoted yes"),
    ({"env": {"A": False}}, "env", 'quote it, e.g. "yes" or "1"'),
    ({"extra_args": ["-np", "4"]}, "extra_args", "'-np' is an option the role sets itself; use horovod_launch_np"),
    ({"extra_args": ["--ssh-port=22"]}, "extra_args", "'--ssh-port=22' is an option the role sets itself"),
    ({"extra_args": ["--mpi"]}, "extra_args", "use horovod_launch_controller instead"),
    ({"extra_args": ["--output-filename", "/x"]}, "extra_args", "horovod_launch_runs_dir and horovod_launch_run_name"),
    ({"extra_args": "--verbose"}, "extra_args", "'--verbose' is not a list"),
    ({"network_interfaces": "eth0"}, "network_interfaces", "'eth0' is not a list"),
    ({"network_interfaces": ["eth0,ib0"]}, "network_interfaces", "'eth0,ib0' is not an interface name"),
    ({"network_interfaces": ["eth 0"]}, "network_interfaces", "'eth 0' is not an interface name"),
    ({"network_interfaces": [""]}, "network_interfaces", "'' is not an interface name"),
    # An alias label is no interface; ':' and '$(' are refused with every other character a shell reads.
    ({"network_interfaces": ["eth0:1"]}, "network_interfaces", "'eth0:1' is not an interface name"),
    ({"network_interfaces": ["eth0$(touch /tmp/p)"]}, "network_interfaces", "is not an interface name"),
    ({"network_interfaces": ["-eth0"]}, "network_interfaces", "'-eth0' is not an interface name"),
    ({"network_interfaces": ["a" * 16]}, "network_interfaces", "is not an interface name"),
    ({"min_shm_size": "lots"}, "min_shm_size", "'lots' is not a size; write one such as 512M"),
    ({"min_shm_size": "1G "}, "min_shm_size", "'1G ' is not a size"),
    ({"min_shm_size": ["1G"]}, "min_shm_size", "['1G'] is not a size"),
    ({"controller": "nccl"}, "controller", "'nccl' is not a controller; choose gloo or mpi"),
    ({"controller": "Gloo"}, "controller", "'Gloo' is not a controller"),
    ({"required_frameworks": ["jax"]}, "required_frameworks", "'jax' is not a framework"),
    ({"required_frameworks": "pytorch"}, "required_frameworks", "'pytorch' is not a list"),
    ({"container": "my container"}, "container", "'my container' is not a valid container name"),
    ({"container": "-x"}, "container", "'-x' is not a valid container name"),
    ({"elastic": "maybe"}, "elastic", "'maybe' is not true or false"),
    (
        {"trust_workers": True, "elastic": True, "controller": "mpi"},
        "elastic",
        "Horovod runs elastic jobs with Gloo only",
    ),
    (
        {"trust_workers": True, "elastic": True, "min_np": 3, "np": 2},
        "min_np",
        "3 is more than the 2 processes the run starts with",
    ),
    (
        {"trust_workers": True, "elastic": True, "max_np": 2},
        "max_np",
        "2 is fewer than the 3 processes the run starts with",
    ),
    (
        {"trust_workers": True, "elastic": True, "np": 1, "max_np": 4},
        "max_np",
        "4 is more than the 3 slots of horovod_launch_hosts",
    ),
    ({"min_np": -1}, "min_np", "-1 is not a whole number of 0 or more"),
    ({"max_np": "all"}, "max_np", "'all' is not a whole number of 0 or more"),
    ({"elastic_cooldown": [0, 10]}, "elastic_cooldown", "[0, 10] is not [lowest, highest] seconds with 1 <="),
    ({"elastic_cooldown": [20, 10]}, "elastic_cooldown", "is not [lowest, highest]"),
    ({"elastic_cooldown": [1, 7200]}, "elastic_cooldown", "is not [lowest, highest]"),
    ({"elastic_cooldown": 10}, "elastic_cooldown", "10 is not [lowest, highest]"),
    ({"extra_args": ["--min-np", "1"]}, "extra_args", "use horovod_launch_min_np instead"),
    ({"extra_args": ["--host-discovery-script=/x"]}, "extra_args", "use horovod_launch_elastic instead"),
    # argparse's unique prefixes of long options, glued values, --opt=value, run-together letters
    ({"extra_args": ["--ssh-p", "22"]}, "extra_args", "'--ssh-p' (horovodrun's argparse takes a prefix of an option"),
    ({"extra_args": ["--ssh-p", "22"]}, "extra_args", "this is --ssh-port) is an option the role sets itself"),
    ({"extra_args": ["--ssh-p=22"]}, "extra_args", "this is --ssh-port) is an option the role sets itself"),
    ({"extra_args": ["--ssh-i=/x"]}, "extra_args", "use horovod_launch_ssh_identity_file instead"),
    ({"extra_args": ["--num-p", "9"]}, "extra_args", "this is --num-proc"),
    ({"extra_args": ["--slots", "2"]}, "extra_args", "this is --slots-per-host"),
    ({"extra_args": ["--out=/x"]}, "extra_args", "use horovod_launch_runs_dir and horovod_launch_run_name"),
    ({"extra_args": ["--verb"]}, "extra_args", "use horovod_launch_verbose instead"),
    ({"extra_args": ["--ssh", "22"]}, "extra_args", "use horovod_launch_ssh_port instead"),  # ambiguous: refused
    ({"extra_args": ["-n", "9"]}, "extra_args", "'-n' (horovodrun's argparse takes a prefix of an option"),
    ({"extra_args": ["-p22"]}, "extra_args", "'-p22' (horovodrun reads it as -p with its value glued on) is an"),
    ({"extra_args": ["-i/root/.ssh/other"]}, "extra_args", "use horovod_launch_ssh_identity_file instead"),
    ({"extra_args": ["-Hnode-x:8"]}, "extra_args", "-H with its value glued on) is an option the role sets"),
    ({"extra_args": ["-p=22"]}, "extra_args", "'-p=22' is an option the role sets itself"),
    ({"extra_args": ["-vp22"]}, "extra_args", "one-letter options run together: this holds -p"),
    ({"extra_args": ["-hostfile", "/x"]}, "extra_args", "use horovod_launch_hosts instead"),
    # --config-file can set every option, the reserved ones included
    ({"extra_args": ["--config-file", "/x.yml"]}, "extra_args", "'--config-file' names a file that can set every"),
    ({"extra_args": ["--config-file=/x.yml"]}, "extra_args", "the ssh port and identity file the role sets included"),
    ({"extra_args": ["--con", "/x.yml"]}, "extra_args", "this is --config-file) names a file"),
    ({"extra_args": ["--config=/x.yml"]}, "extra_args", "this is --config-file"),
    # a word that is no option's value starts horovodrun's command
    ({"extra_args": ["/data1/share/evil.py"]}, "extra_args", "'/data1/share/evil.py' is not a horovodrun option"),
    ({"extra_args": ["--tcp", "x.py"]}, "extra_args", "so horovodrun would run it and everything after it as the"),
    ({"extra_args": ["--timeline-filename", "/t.json", "python"]}, "extra_args", "'python' is not a horovodrun option"),
    ({"extra_args": ["--", "--ssh-port", "22"]}, "extra_args", "'--' is not a horovodrun option"),
    ({"extra_args": [""]}, "extra_args", "'' is not a horovodrun option"),
    # what every rank executes, on the share that root on any worker may change
    ({"runs_dir": f"{SHARE}/runs"}, "runs_dir", "'/data1/share/runs' is on the share '/data1/share'; root on any"),
    ({"example_dir": f"{SHARE}/examples"}, "example_dir", "put it below the artifact directory /data1/artifacts"),
    ({"code_dest": f"{SHARE}/workspace"}, "code_dest", "or check the code out with horovod_launch_code_repo"),
    ({"workdir": f"{SHARE}/w"}, "workdir", "'/data1/share/w' is on the share"),
    ({"workdir": SHARE}, "workdir", "'/data1/share' is on the share"),
    ({"command": [f"{SHARE}/train.sh"]}, "command", "runs '/data1/share/train.sh', which is on the share"),
    ({"command": ["python3", f"{SHARE}/code/train.py"]}, "command", "runs '/data1/share/code/train.py'"),
    ({"command": ["python", "-u", f"{SHARE}/x.py", "--epochs", "3"]}, "command", "runs '/data1/share/x.py'"),
    ({"command": ["python3", "-uB", f"{SHARE}/x.py"]}, "command", "runs '/data1/share/x.py'"),
    ({"command": ["/usr/bin/python3.11", "-W", "ignore", f"{SHARE}/x.py"]}, "command", "runs '/data1/share/x.py'"),
    ({"command": ["python3", "-Wignore", f"{SHARE}/x.py"]}, "command", "runs '/data1/share/x.py'"),
    ({"command": ["python3", "-Ximporttime", f"{SHARE}/x.py"]}, "command", "runs '/data1/share/x.py'"),
    ({"command": ["python3", "--", f"{SHARE}/x.py"]}, "command", "runs '/data1/share/x.py'"),
    ({"command": ["bash", "-e", f"{SHARE}/run.sh"]}, "command", "runs '/data1/share/run.sh'"),
    ({"command": ["sh", "-o", "errexit", f"{SHARE}/run.sh"]}, "command", "runs '/data1/share/run.sh'"),
    ({"command": ["env", "-i", "A=1", "python3", f"{SHARE}/x.py"]}, "command", "runs '/data1/share/x.py'"),
    ({"command": ["/usr/bin/env", f"{SHARE}/x"]}, "command", "runs '/data1/share/x'"),
    (
        {"command": ["python3", f"{ARTIFACTS}/../share/x.py"]},
        "command",
        "runs '/data1/artifacts/../share/x.py' (/data1/share/x.py), which is on the share",
    ),
    ({"command": ["python3", f"/{SHARE}/x.py"]}, "command", "runs '//data1/share/x.py'"),
    (
        {"command": ["python3", f"{SHARE}/x.py"]},
        "command",
        "or set horovod_launch_allow_share_code: true, which lets root on any worker run code as root in the "
        "master's container and from there in every container",
    ),
    (
        {"env": {"PYTHONPATH": f"/opt/lib:{SHARE}/lib"}},
        "env",
        "PYTHONPATH is on the share '/data1/share' (absolute)",
    ),
    ({"env": {"LD_LIBRARY_PATH": f"{SHARE}/lib"}}, "env", "LD_LIBRARY_PATH is on the share"),
    ({"allow_share_code": "maybe"}, "allow_share_code", "'maybe' is not true or false"),
]


@pytest.mark.parametrize(("changes", "variable", "fragment"), BAD, ids=[f"{b[1]}-{i}" for i, b in enumerate(BAD)])
def test_each_bad_input_is_named_with_its_fix(changes, variable, fragment):
    found = problems(**changes)
    assert [v for v, _unused in found] == [f"horovod_launch_{variable}"], found
    assert fragment in found[0][1], found
    assert not found[0][1].startswith("horovod_launch_"), "the caller prefixes the variable"


# What horovodrun 0.28.1 sets for every rank (gloo_run.py create_slot_env_vars, create_run_env_vars;
# common/util/secret.py), what loads or reaches the ranks, and the role's own mark of a run's processes.
REFUSED_ENV = [
    "PATH",
    "LD_PRELOAD",
    "LD_AUDIT",
    "BASH_ENV",
    "ENV",
    "PYTHONHOME",
    "OMPI_MCA_plm_rsh_agent",
    "OMPI_MCA_plm_rsh_args",
    "OMPI_MCA_orte_rsh_agent",
    "PRTE_MCA_plm_ssh_agent",
    "HOROVOD_LAUNCH_RUN_DIR",
    "HOROVOD_LAUNCH_OUTPUT_DIR",
    "HOROVOD_HOSTNAME",
    "HOROVOD_RANK",
    "HOROVOD_SIZE",
    "HOROVOD_LOCAL_RANK",
    "HOROVOD_LOCAL_SIZE",
    "HOROVOD_CROSS_RANK",
    "HOROVOD_CROSS_SIZE",
    "HOROVOD_GLOO_RENDEZVOUS_ADDR",
    "HOROVOD_GLOO_RENDEZVOUS_PORT",
    "HOROVOD_CONTROLLER",
    "HOROVOD_CPU_OPERATIONS",
    "HOROVOD_GLOO_IFACE",
    "NCCL_SOCKET_IFNAME",
    "HOROVOD_ELASTIC",
    "_HOROVOD_SECRET_KEY",
    "HOROVOD_SECRET_KEY",
]


@pytest.mark.parametrize("name", REFUSED_ENV)
def test_an_environment_name_that_changes_how_ranks_are_reached_or_loaded_is_refused(name):
    found = problems(env={"NCCL_DEBUG": "INFO", name: "s3cret-value"})
    assert [v for v, _unused in found] == ["horovod_launch_env"], found
    assert found[0][1].startswith(f"{name} may not be set here: "), found
    assert "s3cret-value" not in found[0][1]


# One option of each alias group of horovodrun 0.28.1's parser: argparse treats them as one option.
HOROVODRUN_ALIASES = [
    ("-h", "--help"),
    ("-v", "--version"),
    ("-np", "--num-proc"),
    ("-cb", "--check-build"),
    ("-p", "--ssh-port"),
    ("-i", "--ssh-identity-file"),
    ("--min-np", "--min-num-proc"),
    ("--max-np", "--max-num-proc"),
    ("-prefix-timestamp", "--prefix-output-with-timestamp"),
    ("-H", "--hosts"),
    ("-hostfile", "--hostfile"),
]


class _ParseError(Exception):
    pass


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise _ParseError(message)


def horovodrun_parser() -> argparse.ArgumentParser:
    """A parser with horovodrun's options as the rules know them, parsed by this Python's argparse."""
    parser = _Parser(add_help=False)
    grouped = {name for group in HOROVODRUN_ALIASES for name in group}
    groups = [*HOROVODRUN_ALIASES, *((name,) for name in rules.HOROVODRUN_OPTIONS if name not in grouped)]
    for names in groups:
        nargs = rules.HOROVODRUN_OPTIONS[names[0]]
        dest = names[-1].lstrip("-").replace("-", "_")
        if nargs == 0:
            parser.add_argument(*names, dest=dest, action="store_true")
        else:
            parser.add_argument(*names, dest=dest, nargs=None if nargs == 1 else nargs)
    parser.add_argument("command", nargs=argparse.REMAINDER)
    return parser


def _spellings() -> list[str]:
    """Every prefix of every option, with a glued value and with =value, and letters run together."""
    out = []
    for option in rules.HOROVODRUN_OPTIONS:
        start = 2 if option.startswith("--") else 1
        for end in range(start + 1, len(option) + 1):
            out += [option[:end], f"{option[:end]}=7"]
        if len(option) == 2:
            out += [f"{option}7", f"-v{option[1]}7", f"-h{option[1]}"]
    return out


@pytest.mark.parametrize("arg", _spellings())
def test_every_spelling_argparse_reads_as_a_reserved_option_is_refused(arg):
    """Cross-checked with argparse itself: whatever it reads as a reserved option (or as --config-file)
    is refused, and what is refused as one is that option for argparse, or an error there."""
    parser = horovodrun_parser()
    reserved = {
        action.dest
        for action in parser._actions
        if set(action.option_strings) & {*rules.RESERVED_ARGS, rules.CONFIG_FILE}
    }
    try:
        given = {key for key, value in vars(parser.parse_args([arg, "7", "7"])).items() if value not in (None, False)}
    except _ParseError:
        given = None
    refused = [message for _unused, message in problems(extra_args=[arg, "7", "7"]) if not message.startswith("'7'")]
    if given is None:
        return  # horovodrun stops: anything goes
    assert bool(given & reserved) == bool(refused), (arg, given, refused)


def test_the_reserved_options_are_options_of_horovodrun():
    assert set(rules.RESERVED_ARGS) <= set(rules.HOROVODRUN_OPTIONS)
    assert rules.CONFIG_FILE in rules.HOROVODRUN_OPTIONS


def test_without_an_artifact_directory_everything_executed_is_on_the_share_and_refused():
    """horovod_launch_artifact_dir: "" leaves the share as the only shared place: the role's defaults then
    put the runs, the example and the checkout there, and the ranks start there."""
    on_share = {
        "artifact_dir": "",
        "runs_dir": f"{SHARE}/runs",
        "example_dir": f"{SHARE}/examples",
        "code_dest": f"{SHARE}/workspace",
    }
    found = problems(**on_share)
    assert [name for name, _unused in found] == [
        "horovod_launch_runs_dir",
        "horovod_launch_example_dir",
        "horovod_launch_code_dest",
        "horovod_launch_workdir",
    ]
    assert found[-1][1].startswith("'' is the share '/data1/share' here (no horovod_launch_artifact_dir")
    assert "below an artifact directory only the master writes (horovod_launch_artifact_dir, empty now" in found[0][1]
    assert problems(**on_share, allow_share_code=True) == []
    # The checkout is where a run with a repository starts.
    found = problems(**on_share, code_repo="/srv/x.git", code_version="v1")
    assert "horovod_launch_workdir" not in [name for name, _unused in found]


def test_a_path_variable_on_the_share_is_named_but_not_quoted():
    found = problems(env={"PYTHONPATH": f"{SHARE}/s3cret-lib"})
    assert [name for name, _unused in found] == ["horovod_launch_env"]
    assert "s3cret" not in found[0][1]


def test_the_role_defaults_put_what_the_ranks_execute_in_the_artifact_directory():
    role = yaml.safe_load((REPO / "roles/horovod_launch/defaults/main.yml").read_text())
    assert role["horovod_launch_artifact_dir"] == ARTIFACTS
    assert role["horovod_launch_allow_share_code"] is False
    for name in ("runs_dir", "example_dir"):
        assert role[f"horovod_launch_{name}"].startswith("{{ horovod_launch_artifact_dir or "), name
    # The checkout: a directory per repository the plan places in the artifact directory.
    assert role["horovod_launch_code_dest"] == ""


def test_the_default_checkout_without_an_artifact_directory_is_code_on_the_share():
    found = problems(artifact_dir="", runs_dir=f"{SHARE}/runs", example_dir=f"{SHARE}/examples", code_repo="/r.git")
    assert ("horovod_launch_code_dest" in [v for v, _unused in found]) and any(
        "'' is a directory of the share '/data1/share' here (no horovod_launch_artifact_dir)" in m
        for _unused, m in found
    ), found
    allowed = problems(
        artifact_dir="",
        runs_dir=f"{SHARE}/runs",
        example_dir=f"{SHARE}/examples",
        code_repo="/r.git",
        code_version="v1",
        allow_share_code=True,
    )
    assert allowed == [], allowed


def test_an_environment_value_is_never_quoted():
    found = problems(env={"TOKEN": ["s3cret-value"]})
    assert found and all("s3cret-value" not in message for _unused, message in found), found


def test_np_beyond_the_slots_is_not_judged_on_a_broken_host_list():
    found = problems(hosts=[{"name": "a", "address": "a", "slots": 0}], np=4)
    assert [v for v, _unused in found] == ["horovod_launch_hosts"]


def test_directories_below_a_bad_share_are_reported_through_the_share():
    share = "/data1/../etc"
    found = problems(
        share_dir=share, runs_dir=f"{share}/runs", example_dir=f"{share}/examples", code_dest=f"{share}/workspace"
    )
    assert found == [("horovod_launch_share_dir", rules.path_problem(share))]


def test_every_problem_is_reported_at_once():
    found = problems(np=-1, ssh_port=0, command="x", controller="x")
    assert [v for v, _unused in found] == [
        "horovod_launch_np",
        "horovod_launch_ssh_port",
        "horovod_launch_controller",
        "horovod_launch_command",
    ]


def test_a_variable_not_given_is_not_checked_but_a_given_host_list_must_not_be_empty():
    assert rules.problems({"horovod_launch_hosts": GOOD["horovod_launch_hosts"]}) == []
    assert rules.problems({"horovod_launch_run_name": "r1"}) == []
    assert [v for v, _unused in rules.problems({"horovod_launch_hosts": []})] == ["horovod_launch_hosts"]


@pytest.mark.parametrize("inputs", [None, [], "x", 3])
def test_a_wrong_type_of_inputs_is_a_problem_not_an_exception(inputs):
    assert rules.problems(inputs)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "value", [None, 3, 2.5, True, "x", [None], [1, [2]], {"a": 1}, {1: 2}, [{"name": None, "slots": []}]]
)
def test_any_value_of_any_input_gives_problems_not_exceptions(value):
    for name in GOOD:
        rules.problems({**GOOD, name: value})


def test_the_filter_prefixes_the_role_variable():
    assert role_problems({**GOOD, "horovod_launch_np": 9}, "horovod_launch") == [
        "horovod_launch_np: 9 is more than the 3 slots of the hosts (node-a: 2, node-b: 1); lower it (0 means all "
        "slots) or give the hosts more slots"
    ]


def test_the_rules_refuse_a_compare_that_is_not_two_runs():
    assert problems(compare=[]) == []
    assert problems(compare="r1,r2") == []
    assert problems(compare=["r1", "r2"]) == []
    (found,) = problems(compare="r1")
    assert found[0] == "horovod_launch_compare" and "give two run names" in found[1]


@pytest.mark.parametrize(
    ("changes", "variable", "start"),
    [
        ({"controller": "mpi"}, "horovod_launch_controller", "'mpi' trusts the workers: OpenMPI starts its daemons"),
        ({"elastic": True}, "horovod_launch_elastic", "true trusts the workers: Horovod's elastic rendezvous"),
        ({"elastic": "yes"}, "horovod_launch_elastic", "true trusts the workers: Horovod's elastic rendezvous"),
    ],
)
def test_modes_that_trust_the_workers_are_refused_unless_trusted(changes, variable, start):
    """The mpi controller and elastic runs let root on a worker act as root in the master's container."""
    found = problems(**changes)
    assert [(name, text[: len(start)]) for name, text in found] == [(variable, start)], found
    assert "horovod_trust_workers: true" in found[0][1] and "horovod_launch_trust_workers" in found[0][1]
    assert problems(**changes, trust_workers=True) == []
    assert problems(**changes, trust_workers="true") == []


def test_elastic_rendezvous_cites_what_horovod_unpickles():
    assert "PUT /worker_addresses/..., cloudpickle.loads, no authentication" in problems(elastic=True)[0][1]


def test_trusting_the_workers_is_a_boolean():
    assert problems(trust_workers="maybe") == [("horovod_launch_trust_workers", "'maybe' is not true or false")]
    assert problems(trust_workers=True) == []


def test_the_role_warns_when_the_workers_are_trusted():
    task = " ".join((REPO / "roles/horovod_launch/tasks/assert.yml").read_text().split())
    assert "when: horovod_launch_trust_workers | bool" in task
    assert "root on every worker is trusted with root in the master's container" in task


# Issue 42, finding 5: every variable from which a rank loads code (code_paths.CODE_PATH_VARIABLES),
# and one name of each family, with a value on the share. A DIRS/PATH value may be relative; a PROGRAM
# value needs a "/" (a bare name is looked up on PATH or the loader's path).
CODE_ON_SHARE = {
    "PYTHONPATH": f"{SHARE}/lib",
    "PYTHONUSERBASE": f"{SHARE}/user",
    "PYTHONPYCACHEPREFIX": f"{SHARE}/pyc",
    "PYTHONSTARTUP": f"{SHARE}/startup.py",
    "PYTHONPLATLIBDIR": f"{SHARE}/lib",
    "PYTHONEXECUTABLE": f"{SHARE}/python3",  # PYTHON*
    "HOME": f"{SHARE}/home",
    "XDG_CACHE_HOME": f"{SHARE}/cache",  # XDG_*
    "XDG_DATA_DIRS": f"/usr/share:{SHARE}/data",
    "TMPDIR": f"{SHARE}/tmp",
    "TMP": f"{SHARE}/tmp",
    "TEMP": f"{SHARE}/tmp",
    "LD_LIBRARY_PATH": f"{SHARE}/lib",
    "LD_ORIGIN_PATH": f"{SHARE}/bin",
    "GCONV_PATH": f"{SHARE}/gconv",
    "LOCPATH": f"{SHARE}/locale",
    "NLSPATH": f"{SHARE}/%N",
    "NCCL_NET_PLUGIN": f"{SHARE}/libnccl-net.so",
    "NCCL_TUNER_PLUGIN": f"{SHARE}/libnccl-tuner.so",
    "NCCL_PROFILER_PLUGIN": f"{SHARE}/libnccl-profiler.so",
    "NCCL_ENV_PLUGIN": f"{SHARE}/libnccl-env.so",
    "NCCL_GIN_PLUGIN": f"{SHARE}/libnccl-gin.so",  # NCCL_*_PLUGIN
    "NCCL_CONF_FILE": f"{SHARE}/nccl.conf",
    "TORCH_HOME": f"{SHARE}/torch",
    "TORCH_EXTENSIONS_DIR": f"{SHARE}/ext",
    "TORCHINDUCTOR_CACHE_DIR": f"{SHARE}/inductor",
    "PYTORCH_KERNEL_CACHE_PATH": f"{SHARE}/kernels",
    "TRITON_CACHE_DIR": f"{SHARE}/triton",
    "TRITON_HOME": f"{SHARE}/triton-home",
    "TRITON_PTXAS_PATH": f"{SHARE}/ptxas",  # TRITON_*
    "CUDA_CACHE_PATH": f"{SHARE}/nv",
    "CUDA_HOME": f"{SHARE}/cuda",
    "CUDA_PATH": f"{SHARE}/cuda",
    "CC": f"ccache {SHARE}/gcc",
    "CXX": f"{SHARE}/g++",
    "CCACHE_DIR": f"{SHARE}/ccache",  # CCACHE_*
    "SCCACHE_DIR": f"{SHARE}/sccache",
    "NUMBA_CACHE_DIR": f"{SHARE}/numba",
    "CUPY_CACHE_DIR": f"{SHARE}/cupy",
    "OMPI_MCA_mca_base_component_path": f"/usr/lib/openmpi:{SHARE}/mca",  # OMPI_MCA_*
    "PRTE_MCA_mca_base_param_files": f"{SHARE}/prte.conf",  # PRTE_MCA_*
    "PMIX_MCA_mca_base_component_path": f"{SHARE}/pmix",  # PMIX_MCA_*
    "OPAL_PREFIX": f"{SHARE}/openmpi",
}


def test_every_code_path_variable_is_tried_on_the_share():
    """Each row of the one list, and a member of each family that has no row of its own; the names the
    environment rule refuses outright (RESERVED_ENV) are tried by the test of those."""
    table = code_paths.CODE_PATH_VARIABLES
    for key in table:
        if "*" in key:
            assert any(fnmatch.fnmatchcase(name, key) and name not in table for name in CODE_ON_SHARE), key
        elif rules._reserved_env(key):
            assert key in REFUSED_ENV, key
        else:
            assert key in CODE_ON_SHARE, key
    assert all(code_paths.code_path(name) for name in CODE_ON_SHARE)


@pytest.mark.parametrize("name", CODE_ON_SHARE)
def test_a_variable_that_loads_code_from_the_share_is_refused(name):
    found = problems(env={"NCCL_DEBUG": "INFO", name: CODE_ON_SHARE[name]})
    assert [v for v, _unused in found] == ["horovod_launch_env"], found
    assert found[0][1].startswith(f"{name} is on the share '/data1/share'"), found
    assert "horovod_launch_allow_share_code: true" in found[0][1], found
    assert problems(env={name: CODE_ON_SHARE[name]}, allow_share_code=True) == []


@pytest.mark.parametrize("name", CODE_ON_SHARE)
def test_a_variable_that_loads_code_from_the_artifact_directory_is_allowed(name):
    value = CODE_ON_SHARE[name].replace(SHARE, ARTIFACTS)
    assert problems(env={name: value}) == []


@pytest.mark.parametrize(
    ("env", "changes"),
    [
        # path lists: one entry on the share is enough (ld.so also separates with ';')
        ({"PYTHONPATH": f"/opt/lib:{ARTIFACTS}/lib:{SHARE}/lib"}, {}),
        ({"LD_LIBRARY_PATH": f"/usr/local/cuda/lib64;{SHARE}/lib"}, {}),
        ({"GCONV_PATH": f"/usr/lib/gconv:{SHARE}/x"}, {}),
        # relative values: below the working directory (the artifact directory by default)
        ({"LD_LIBRARY_PATH": "/opt/lib:../share/lib"}, {}),
        ({"PYTHONUSERBASE": "../../data1/share/user"}, {}),
        ({"TRITON_CACHE_DIR": "../share/triton"}, {}),
        ({"PYTHONPATH": "lib"}, {"workdir": f"{SHARE}/w", "allow_share_code": False}),
        ({"NCCL_NET_PLUGIN": "../share/libnccl-net-x.so"}, {}),
        ({"PYTHONPATH": "../../../share/lib"}, {"workdir": f"{ARTIFACTS}/a/b"}),
        # an empty entry of a list is the working directory
        ({"PYTHONPATH": "/opt/lib:"}, {"workdir": f"{SHARE}/w"}),
        ({"LD_LIBRARY_PATH": "::/opt/lib"}, {"workdir": f"{SHARE}/w"}),
        # '..' normalised
        ({"PYTHONUSERBASE": f"{ARTIFACTS}/../share/user"}, {}),
        ({"PYTHONPATH": f"/opt/lib:{ARTIFACTS}/x/../../share/lib"}, {}),
        ({"TORCH_EXTENSIONS_DIR": f"//{SHARE}/./ext"}, {}),
        # '~': the home directory, the run's HOME when it sets one
        ({"HOME": f"{SHARE}/home", "TORCH_HOME": "/root/.cache/torch"}, {}),
        ({"HOME": "../share/home"}, {}),
        ({"TORCHINDUCTOR_CACHE_DIR": f"~/../..{SHARE}/inductor"}, {}),
        ({"HOME": f"{ARTIFACTS}/../share", "NCCL_GIN_PLUGIN": "x"}, {}),
        # a relative path that climbs out of a directory only the image knows may lead anywhere
        ({"PYTHONPLATLIBDIR": "../../data1/share/lib"}, {}),
        ({"LD_LIBRARY_PATH": "$ORIGIN/../../../data1/share"}, {}),
        ({"LD_LIBRARY_PATH": "/opt/lib:${ORIGIN}/../../share/lib"}, {}),
        ({"PYTHONPLATLIBDIR": "../share"}, {}),
    ],
)
def test_a_code_path_is_resolved_as_the_rank_sees_it_before_the_share_rule(env, changes):
    found = problems(env=env, **changes)
    refused = [message for variable, message in found if variable == "horovod_launch_env"]
    assert len(refused) == 1 and "the share '/data1/share'" in refused[0], found


@pytest.mark.parametrize(
    "env",
    [
        {"PYTHONPATH": "lib:src:"},  # below the artifact directory, the working directory
        {"LD_LIBRARY_PATH": "$ORIGIN/../lib:${ORIGIN}/lib:/opt/$LIB"},
        {"PYTHONPLATLIBDIR": "lib64"},
        {"PYTHONPLATLIBDIR": "../lib/x/../../data1"},
        {"NCCL_NET_PLUGIN": "aws-ofi", "NCCL_TUNER_PLUGIN": "libnccl-tuner-x.so", "CC": "ccache gcc"},
        {"TORCH_HOME": "~/.cache/torch", "TRITON_CACHE_DIR": "~root/.triton/cache", "HOME": "/root"},
        {"HOME": f"{ARTIFACTS}/home", "TORCH_HOME": "~/torch"},
        {"PYTHONWARNINGS": "ignore::DeprecationWarning", "PYTHONIOENCODING": "utf-8:strict"},
        {"OMPI_MCA_btl": "^openib", "NCCL_DEBUG_FILE": f"{SHARE}/nccl.%h.%p.log", "NCCL_TOPO_DUMP_FILE": f"{SHARE}/t"},
        {"HOROVOD_TIMELINE": f"{SHARE}/timeline.json", "TORCH_TRACE": f"{SHARE}/trace", "DATA": f"{SHARE}/x"},
        {"TRITON_CACHE_DIR": "", "PYTHONPATH": ""},
    ],
)
def test_code_paths_off_the_share_and_outputs_on_it_are_allowed(env):
    assert problems(env=env) == []


def test_a_code_path_on_the_share_names_what_it_loads_and_a_cache_gets_a_place_in_the_container():
    ((_name, message),) = problems(env={"PYTHONUSERBASE": "../share/u"})
    assert "relative to the working directory /data1/artifacts" in message, message
    assert ".pth files" in message and "put what it names below the artifact directory /data1/artifacts" in message
    ((_name, message),) = problems(env={"TRITON_CACHE_DIR": f"{SHARE}/triton"})
    assert "Triton loads code from it (the GPU kernels and launchers it compiles)" in message, message
    assert "leave it unset (its default is in the container) or point it at a directory of the container" in message
    # "~" is the run's HOME: below the share, everything under it is too, and each variable is named.
    assert problems(env={"TORCH_HOME": "~/t", "HOME": f"{ARTIFACTS}/h"}) == []
    found = problems(env={"TORCH_HOME": "~/t", "HOME": f"{ARTIFACTS}/../share"})
    assert [message.split(" (", 1)[0] for _name, message in found] == [
        "TORCH_HOME is on the share '/data1/share'",
        "HOME is on the share '/data1/share'",
    ], found
    assert "(through the home directory /data1/share)" in found[0][1], found


@pytest.mark.parametrize(
    ("command", "changes"),
    [
        (["python3", "../../data1/share/train.py"], {}),
        (["python3", "../share/train.py", "--epochs", "3"], {}),
        (["../share/run.sh"], {}),
        (["./run.sh"], {"workdir": f"{SHARE}/w", "allow_share_code": False}),
        (["python3", "../../../share/x.py"], {"workdir": f"{ARTIFACTS}/a/b"}),
        (["bash", "-e", "../share/run.sh"], {}),
        (["env", "A=1", "python3", "../share/x.py"], {}),
        (["env", "-u", "X", "python3", f"{SHARE}/x.py"], {}),
        (["env", "--unset", "X", "python3", f"{SHARE}/x.py"], {}),
        (["env", "-C", SHARE, "python3", "x.py"], {}),
        (["env", f"--chdir={SHARE}", "./x"], {}),
        (["env", "-S", f"python3 {SHARE}/x.py"], {}),
        (["env", "PYTHONPATH=../share/lib", "python3", f"{ARTIFACTS}/x.py"], {}),
        (["env", f"HOME={SHARE}", "python3", f"{ARTIFACTS}/x.py"], {}),
        (["env", f"LD_PRELOAD={SHARE}/x.so", "python3", "train.py"], {}),
        (["env", f"PATH={SHARE}/bin:/usr/bin", "python3", "train.py"], {}),
        (["python3", "-X", f"pycache_prefix={SHARE}/pyc", f"{ARTIFACTS}/x.py"], {}),
        (["python3", f"-Xpycache_prefix={SHARE}/pyc", "-m", "trainer"], {}),
    ],
)
def test_what_a_relative_command_runs_is_resolved_against_the_working_directory(command, changes):
    found = problems(command=command, **changes)
    refused = [message for variable, message in found if variable == "horovod_launch_command"]
    assert len(refused) == 1 and "the share '/data1/share'" in refused[0], found


@pytest.mark.parametrize(
    "command",
    [
        ["python3", "train.py"],
        ["python3", "../artifacts/train.py"],
        ["./run.sh", "--data", "../share/data"],
        ["torchrun", "--nproc-per-node", "2", "train.py"],  # a bare program is found on PATH
        ["env", "-C", f"{ARTIFACTS}/x", "python3", "../y.py"],
        ["env", "PYTHONPATH=lib", "NCCL_DEBUG=INFO", "python3", "-m", "trainer"],
        ["python3", "-X", "importtime", "train.py"],
        ["env", "LD_PRELOAD=libtcmalloc.so.4", "PATH=/opt/conda/bin:/usr/bin", "python3", "train.py"],
    ],
)
def test_a_relative_command_in_the_artifact_directory_is_allowed(command):
    assert problems(command=command) == []


def test_a_relative_command_names_where_it_leads():
    ((_name, message),) = problems(command=["python3", "../../data1/share/train.py"])
    assert message.startswith(
        "runs '../../data1/share/train.py' (/data1/share/train.py from the working directory /data1/artifacts), "
        "which is on the share '/data1/share'"
    ), message


def _readme_section() -> str:
    text = (REPO / "roles/horovod_launch/README.md").read_text()
    return text.split("## What the ranks execute", 1)[1].split("\n## ", 1)[0]


def test_the_docs_point_at_the_one_list_and_name_only_what_it_holds():
    """The README section, SECURITY.md, docs/architecture.md and the gate's opt-in text name the list's
    place instead of copying it; every variable the section names is a row (or a family member) of the
    list, refused outright (RESERVED_ENV), or an output it says is fine on the share, and is."""
    for doc in ("roles/horovod_launch/README.md", "SECURITY.md", "docs/architecture.md"):
        text = (REPO / doc).read_text()
        assert "CODE_PATH_VARIABLES" in text and "plugins/plugin_utils/code_paths.py" in text, doc
    assert "code_paths.CODE_PATH_VARIABLES" in OPT_INS["horovod_launch_allow_share_code"]
    section = _readme_section()
    outputs = section.split("so are outputs such as", 1)[1].split("\n\n", 1)[0]
    for name in re.findall(r"`([A-Z_][A-Z0-9_]*)`", outputs):
        assert code_paths.code_path(name) is None and problems(env={name: f"{SHARE}/x"}) == [], name
    named = set(re.findall(r"`([A-Z_][A-Z0-9_]*\*?)`", section)) - set(re.findall(r"`([A-Z_][A-Z0-9_]*)`", outputs))
    named -= {"CODE_PATH_VARIABLES"}
    for name in named | set(
        re.findall(
            r"\b[A-Z][A-Z0-9]*_[A-Z0-9_]+\b",
            OPT_INS["horovod_launch_allow_share_code"].replace("CODE_PATH_VARIABLES", ""),
        )
    ):
        assert name in code_paths.CODE_PATH_VARIABLES or code_paths.code_path(name) or rules._reserved_env(name), name


def test_a_torchrun_run_with_the_defaults_is_sound():
    assert problems(launcher="torchrun") == []
    assert problems(launcher="torchrun", env={"NCCL_DEBUG": "INFO", "OMP_NUM_THREADS": "4"}) == []


@pytest.mark.parametrize(
    ("changes", "variable", "fragment"),
    [
        ({"launcher": "mpirun"}, "launcher", "'mpirun' is not a launcher; choose horovodrun or torchrun"),
        ({"rdzv_port": 12345}, "rdzv_port", "12345 is the port of the containers' sshd"),
        ({"rdzv_port": 2049}, "rdzv_port", "2049 is the port of NFS"),
        ({"rdzv_port": 111}, "rdzv_port", "111 is the port of rpcbind"),
        ({"rdzv_port": 70000}, "rdzv_port", "70000 is not a TCP port"),
        ({"rdzv_port": "http"}, "rdzv_port", "is not a TCP port"),
        ({"elastic": True}, "elastic", "torchrun's c10d rendezvous with the state any client of its store"),
        ({"elastic": True, "trust_workers": True, "min_nodes": 3}, "min_nodes", "3 is more than the 2 nodes"),
        ({"elastic": True, "trust_workers": True, "np": 2, "min_nodes": 2}, "min_nodes", "2 is more than the 1 nodes"),
        ({"min_nodes": -1}, "min_nodes", "-1 is not a whole number of 0 or more"),
        ({"max_restarts": "often"}, "max_restarts", "'often' is not a whole number of 0 or more"),
        ({"extra_args": ["--verbose"]}, "extra_args", "holds horovodrun's options"),
        ({"controller": "mpi", "trust_workers": True}, "controller", "a torchrun run has no controller"),
        ({"env": {"MASTER_ADDR": "10.0.0.9"}}, "env", "MASTER_ADDR may not be set here: torchrun sets it"),
        ({"env": {"TORCHELASTIC_RUN_ID": "x"}}, "env", "torchrun sets it for every rank"),
        ({"env": {"PET_NNODES": "2"}}, "env", "PET_NNODES may not be set here"),
        ({"env": {"GLOO_SOCKET_IFNAME": "eth1"}}, "env", "horovod_launch_network_interfaces instead"),
    ],
)
def test_a_torchrun_run_refuses_what_it_cannot_do(changes, variable, fragment):
    found = problems(**{"launcher": "torchrun", **changes})
    assert any(name == f"horovod_launch_{variable}" and fragment in text for name, text in found), found


def test_an_elastic_torchrun_run_of_trusted_workers_is_sound():
    assert problems(launcher="torchrun", elastic=True, trust_workers=True) == []
    assert problems(launcher="torchrun", elastic=True, trust_workers=True, min_nodes=2, max_restarts=0) == []
    # Bounds that are only torchrun's do not concern a static run's nodes.
    assert problems(launcher="torchrun", min_nodes=3) == []


def test_torchruns_names_are_horovodruns_own_to_set():
    # What torchrun sets is the user's own with horovodrun, which never sets it.
    assert problems(env={"MASTER_ADDR": "10.0.0.9", "GLOO_SOCKET_IFNAME": "eth1"}) == []
    assert problems(rdzv_port=12345) == []
