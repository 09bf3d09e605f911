# Copyright: multinode.horovod contributors
# SPDX-License-Identifier: GPL-3.0-or-later
"""horovod_launch's decisions (plugins/module_utils/horovod_launch.py) and its filters: the plan of a run,
its name and horovodrun's command line, the report of how it went, and the pin of its code."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest
from ansible.errors import AnsibleFilterError
from ansible_collections.multinode.horovod.plugins.filter.horovod_launch import FilterModule
from ansible_collections.multinode.horovod.plugins.module_utils import horovod_launch as m

HOSTS = [
    {"name": "master", "address": "10.0.0.1", "slots": 4},
    {"name": "w1", "address": "10.0.0.2", "slots": "2"},
]
PLAN_INPUTS = {
    "hosts": HOSTS,
    "np": 0,
    "min_np": 0,
    "max_np": 0,
    "elastic": False,
    "elastic_cooldown": [10, 300],
    "workdir": "",
    "output_dir": "",
    "code_repo": "",
    "code_dest": "/data1/artifacts/code",
    "share_dir": "/data1/share",
    "artifact_dir": "/data1/artifacts",
    "runs_dir": "/data1/artifacts/runs",
    "command": [],
    "example_args": ["--epochs", "3"],
    "env": {"NCCL_DEBUG": "INFO", "WANDB_API_KEY": "secret"},
    "controller": "gloo",
    "extra_args": [],
    "image_ids": {"master": "sha256:aa", "w1": "sha256:aa"},
    "master": "master",
    "launcher": "horovodrun",
    "rdzv_port": 29500,
    "min_nodes": 0,
    "max_restarts": 3,
}
GIVEN = {
    "name": "r1",
    "code_commit": "",
    "code_version": "",
    "example_sha256": "e" * 64,
    "example_path": "/data1/artifacts/examples/horovod_train_example.py",
    "image": "sha256:aa",
    "nics": [],
    "ssh_port": 12345,
    "identity_file": "/root/.ssh/id_ed25519",
    "start_timeout": 60,
    "verbose": False,
    "timeout": 0,
    "stall_timeout": 0,
    "poll_interval": 15,
    "tail_lines": 40,
    "horovod_version": "0.28.1",
    "torch_version": "2.5.1+cu124",
}
COMMON = ["-p", "12345", "-i", "/root/.ssh/id_ed25519", "--start-timeout", "60", "--gloo"]
RUN_DIR = "/data1/artifacts/runs/r1"


def run_of(inputs: dict | None = None, **given: object) -> dict:
    return m.run(m.plan({**PLAN_INPUTS, **(inputs or {})}), {**GIVEN, **given})


def test_the_filters_tasks_call():
    assert set(FilterModule().filters()) == {
        "horovod_launch_plan",
        "horovod_launch_run",
        "horovod_launch_report",
        "horovod_run_status",
        "horovod_code_ref",
        "horovod_preflight",
        "horovod_hostfile",
        "horovod_launch_manifest",
        "horovod_manifest_compare",
        "horovod_nccl_check",
        "horovod_nccl_network",
        "horovod_doctor",
    }


def test_a_filter_names_itself_in_its_error():
    with pytest.raises(AnsibleFilterError, match="plan: horovod_launch_plan: missing hosts"):
        FilterModule().filters()["horovod_launch_plan"]({})


@pytest.mark.parametrize(
    ("np", "min_np", "max_np", "expected"),
    [
        (0, 0, 0, {"total_slots": 6, "np": 6, "min_np": 4, "max_np": 6}),
        ("0", "0", "0", {"total_slots": 6, "np": 6, "min_np": 4, "max_np": 6}),  # from -e
        (3, 0, 0, {"total_slots": 6, "np": 3, "min_np": 3, "max_np": 6}),  # min_np at most np
        (2, 1, 5, {"total_slots": 6, "np": 2, "min_np": 1, "max_np": 5}),
    ],
)
def test_counts(np, min_np, max_np, expected):
    assert m.counts(HOSTS, np, min_np, max_np) == expected


@pytest.mark.parametrize(
    ("hosts", "np"),
    [([], 0), ([{"name": "a", "address": "a", "slots": 0}], 0), (HOSTS, -1), (HOSTS, "all"), (["a"], 0)],
)
def test_counts_refuse_what_the_rules_refuse(hosts, np):
    with pytest.raises(ValueError, match=r"host list|np must"):
        m.counts(hosts, np)


def test_the_plan_of_a_run_from_the_inputs():
    plan = m.plan(PLAN_INPUTS)
    assert {key: plan[key] for key in ("total_slots", "np", "min_np", "max_np")} == {
        "total_slots": 6,
        "np": 6,
        "min_np": 4,
        "max_np": 6,
    }
    assert plan["h"] == "10.0.0.1:4,10.0.0.2:2"
    assert plan["rank_hosts"] == ["master"] * 4 + ["w1"] * 2
    assert plan["workdir"] == "/data1/artifacts"
    assert plan["other_image_ids"] == {"w1": "sha256:aa"}
    assert plan["probe_args"] == [
        "--path=/data1/share",
        "--share-marker=/data1/share",
        "--path=/data1/artifacts",
        "--share-marker=/data1/artifacts",
        "--host=master=10.0.0.1",
        "--host=w1=10.0.0.2",
        "--writable=/data1/artifacts/runs",
    ]
    # The environment's names only: its values may be secrets.
    assert plan["definition"] == {
        "command": ["(bundled example)", "--epochs", "3"],
        "hosts": "10.0.0.1:4,10.0.0.2:2",
        "np": 6,
        "env_names": ["NCCL_DEBUG", "WANDB_API_KEY"],
        "workdir": "/data1/artifacts",
        "controller": "gloo",
        "extra_args": [],
    }


def test_the_working_directory_is_the_given_one_else_the_checkout_else_the_artifact_directory():
    assert m.plan({**PLAN_INPUTS, "code_repo": "/data1/src/train.git"})["workdir"] == "/data1/artifacts/code"
    assert m.plan({**PLAN_INPUTS, "code_repo": "/r.git", "workdir": "/data1/share/w"})["workdir"] == "/data1/share/w"
    # A command of one's own starts where only the master writes, not on the share root on a worker may change.
    assert m.plan({**PLAN_INPUTS, "command": ["python3", "train.py"]})["workdir"] == "/data1/artifacts"
    # Without an artifact directory only the share is left (the role's rules refuse it unless asked for).
    assert m.plan({**PLAN_INPUTS, "artifact_dir": ""})["workdir"] == "/data1/share"


def test_a_given_command_and_np_in_the_plan():
    plan = m.plan({**PLAN_INPUTS, "command": ["python3", "train.py"], "np": "3"})
    assert plan["np"] == 3 and plan["rank_hosts"] == ["master"] * 3
    assert plan["h"] == "10.0.0.1:3"
    assert plan["definition"]["command"] == ["python3", "train.py"]


def test_only_an_elastic_runs_definition_holds_its_bounds():
    assert "elastic" not in m.plan({**PLAN_INPUTS, "elastic": "no"})["definition"]
    plan = m.plan({**PLAN_INPUTS, "elastic": "true", "min_np": 2, "elastic_cooldown": ["5", 60]})
    assert plan["definition"]["elastic"] == {"min_np": 2, "max_np": 6, "cooldown": [5, 60]}


def test_the_plan_needs_every_input():
    for key in m.PLAN_KEYS:
        with pytest.raises(ValueError, match=f"missing {key}"):
            m.plan({k: v for k, v in PLAN_INPUTS.items() if k != key})
    with pytest.raises(ValueError, match="expects a mapping"):
        m.plan([])


def test_the_default_run_name_is_what_it_was():
    # The names the role gave these runs before: an upgrade must find its runs again, not train twice.
    definition = {
        "command": ["(bundled example)", "--epochs", "3"],
        "code": "c0de",
        "hosts": "10.0.0.1:4,10.0.0.2:2",
        "np": 6,
        "image": "sha256:aa",
        "env_names": ["WANDB_API_KEY", "NCCL_DEBUG"],
        "workdir": "/data1/artifacts",
        "controller": "gloo",
        "extra_args": [],
    }
    assert m.run_id(definition) == "run-25209ede92bb"
    assert m.run_id({**definition, "elastic": {"min_np": 4, "max_np": 6, "cooldown": [10, 300]}}) == "run-356556e435a8"
    assert m.run_id({**definition, "command": ["python3", "train.py", "--epochs", 3]}) == "run-995590cf202f"
    # As the role makes it: the plan's definition, the bundled example's hash as the code, the image.
    named = run_of(name="", example_sha256="c0de")
    assert named["name"] == "run-25209ede92bb" and named["dir"] == "/data1/artifacts/runs/run-25209ede92bb"
    assert run_of({"elastic": True}, name="", example_sha256="c0de")["name"] == "run-356556e435a8"


def test_run_id_compares_env_names_as_a_set_and_takes_no_other_key():
    base = m.plan(PLAN_INPUTS)["definition"] | {"code": "", "image": "i"}
    assert m.run_id(base) == m.run_id({**base, "env_names": ["WANDB_API_KEY", "NCCL_DEBUG", "NCCL_DEBUG"]})
    with pytest.raises(ValueError, match="missing image; unknown extra"):
        m.run_id({**{k: v for k, v in base.items() if k != "image"}, "extra": 1})


@pytest.mark.parametrize(
    ("inputs", "given"),
    [
        ({"command": ["python3", "x.py"]}, {}),
        ({}, {"example_sha256": "f" * 64}),
        ({}, {"image": "sha256:bb"}),
        ({"np": 5}, {}),
        ({"env": {"X": "1"}}, {}),
        ({"extra_args": ["--verbose"]}, {}),
        ({"code_repo": "/r.git"}, {"code_commit": "1" * 40}),
    ],
)
def test_each_part_of_what_defines_a_run_changes_its_default_name(inputs, given):
    assert run_of(inputs, **{**given, "name": ""})["name"] != run_of(name="")["name"]


def test_the_code_of_a_checkout_is_its_commit_and_a_command_of_ones_own_has_none():
    repo = {"code_repo": "/r.git"}
    assert (
        run_of(repo, name="", code_commit="1" * 40)["name"]
        == run_of(repo, name="", code_commit="1" * 40, example_sha256="other")["name"]
    )
    own = {"command": ["python3", "x.py"]}
    assert run_of(own, name="", example_sha256="a")["name"] == run_of(own, name="", example_sha256="b")["name"]


def test_a_run_of_the_bundled_example_on_a_host_list():
    run = run_of()
    assert run["command"] == ["python3", GIVEN["example_path"], "--output-dir", f"{RUN_DIR}/output", "--epochs", "3"]
    assert run["output_dir"] == f"{RUN_DIR}/output"
    assert run["env_file"] == "/root/.horovod-launch-r1.env"
    assert run["argv"] == [
        "horovodrun",
        "-np",
        "6",
        "-H",
        "10.0.0.1:4,10.0.0.2:2",
        *COMMON,
        "--output-filename",
        RUN_DIR,
        "sh",
        f"{RUN_DIR}/rank-env.sh",
        *run["command"],
    ]


def test_a_run_without_an_environment_runs_its_command_itself():
    # horovodrun puts its own environment on each rank's command line: a run's environment is not in it,
    # each rank loads it from a root-only file through the run's rank-env.sh (above).
    run = run_of({"env": {}, "command": ["python3", "train.py", "--epochs", 3]})
    assert run["rank_env"] == ""
    assert run["argv"][-4:] == ["python3", "train.py", "--epochs", "3"]


@pytest.mark.parametrize(
    ("inputs", "path", "kind", "hosts", "create"),
    [
        # The bundled example writes below its run's directory, or for an elastic run below the share.
        ({}, "/data1/artifacts/runs", "example", ["master"], False),
        ({"hosts": HOSTS[::-1]}, "/data1/artifacts/runs", "example", ["w1"], False),
        ({"elastic": True}, "/data1/share/outputs", "example", ["master", "w1"], False),
        # A command of one's own writes where it runs.
        (
            {"command": ["python3", "t.py"], "workdir": "/data1/artifacts/w"},
            "/data1/artifacts/w",
            "workdir",
            ["master"],
            False,
        ),
        # A given directory: created by the role only where only the master writes.
        ({"output_dir": "/data1/artifacts/out"}, "/data1/artifacts/out", "output_dir", ["master"], True),
        (
            {"output_dir": "/data1/share/out", "elastic": True},
            "/data1/share/out",
            "output_dir",
            ["master", "w1"],
            False,
        ),
    ],
)
def test_where_the_run_writes_and_who_may_hold_rank_0(inputs, path, kind, hosts, create):
    plan = m.plan({**PLAN_INPUTS, **inputs})
    assert plan["output_check"] == {
        "path": path,
        "kind": kind,
        "hosts": hosts,
        "elastic": bool(inputs.get("elastic")),
        "create": create,
    }
    assert plan["probe_args"][-1] == f"--writable={path}"


def test_every_rank_is_told_where_to_write():
    assert run_of()["output_dir"] == f"{RUN_DIR}/output"
    assert run_of({"elastic": True})["output_dir"] == "/data1/share/outputs/r1"
    own = run_of({"command": ["python3", "t.py"], "workdir": "/data1/artifacts/w"})
    assert own["output_dir"] == "/data1/artifacts/w"
    given = run_of({"output_dir": "/data1/share/out", "elastic": True})
    assert given["output_dir"] == "/data1/share/out"
    # Only the bundled example's elastic output is the role's to replace on the share (through share_path).
    assert run_of({"elastic": True})["output_on_share"] == "outputs/r1"
    assert [run_of(more)["output_on_share"] for more in ({}, {"command": ["t"], "elastic": True})] == ["", ""]
    assert given["output_on_share"] == ""
    assert given["command"][2:4] == ["--output-dir", "/data1/share/out"]


def test_a_given_output_directory_is_part_of_the_run_only_where_given():
    plain_run = run_of(name="")["name"]
    assert run_of({"output_dir": ""}, name="")["name"] == plain_run
    assert run_of({"output_dir": "/data1/share/out"}, name="")["name"] != plain_run


def test_an_elastic_run_has_its_discovery_script_and_bounds_instead_of_h():
    run = run_of({"elastic": True, "min_np": 2, "elastic_cooldown": [1, 5]})
    assert "-H" not in run["argv"]
    assert run["argv"][:13] == [
        "horovodrun",
        "-np",
        "6",
        "--min-np",
        "2",
        "--max-np",
        "6",
        "--host-discovery-script",
        f"{RUN_DIR}/discover-hosts.py",
        "--blacklist-cooldown-range",
        "1",
        "5",
        "-p",
    ]
    # Rank 0 may run on any host: the example's output goes to the share, which every node writes.
    assert run["output_dir"] == "/data1/share/outputs/r1"


def test_one_process_has_no_rank_logs():
    argv = run_of({"np": 1})["argv"]
    assert "--output-filename" not in argv
    assert argv[:5] == ["horovodrun", "-np", "1", "-H", "10.0.0.1:1"]


def test_interfaces_verbose_extra_args_then_the_command():
    run = run_of(
        {"controller": "mpi", "extra_args": ["--timeline-filename", "/t"], "env": {}, "command": ["train"]},
        nics=["eth0", "ib0"],
        verbose="true",
    )
    assert run["argv"][run["argv"].index("--mpi") :] == [
        "--mpi",
        "--network-interfaces",
        "eth0,ib0",
        "--output-filename",
        RUN_DIR,
        "--verbose",
        "--timeline-filename",
        "/t",
        "train",
    ]


@pytest.mark.parametrize(("timeout", "interval", "polls"), [(0, 15, 241), (0, "7", 516), (600, 10, 73), (1, 60, 4)])
def test_the_polls_cover_the_time_limit_and_its_kill_or_an_hour(timeout, interval, polls):
    assert run_of(timeout=timeout, poll_interval=interval)["polls"] == polls


def test_the_run_needs_every_given_value():
    for key in m.RUN_KEYS:
        with pytest.raises(ValueError, match=f"missing {key}"):
            m.run(m.plan(PLAN_INPUTS), {k: v for k, v in GIVEN.items() if k != key})


# The options of horovodrun's parser at each release from 0.18.2, read from Horovod's repository at each tag
# (tools/horovodrun_options.py).
HOROVODRUN_OPTIONS = json.loads(
    (Path(__file__).resolve().parents[2] / "fixtures" / "horovodrun_options.json").read_text()
)


@pytest.mark.parametrize("version", sorted(HOROVODRUN_OPTIONS))
@pytest.mark.parametrize(
    "inputs",
    [{}, {"controller": "mpi", "np": 1}, {"elastic": True, "min_np": 2}],
    ids=["gloo", "mpi-one-rank", "elastic"],
)
def test_every_option_on_the_command_line_is_one_its_horovodrun_has(version, inputs):
    """Each release the preflight lets through gets only options its own parser defines (the interfaces
    found by the preflight: one before 0.20, which takes no list)."""
    nics = ["eth0"] if m.release(version) < m.NIC_LIST_OPTION else ["eth0", "ib0"]
    problems = m.release_problems(version, bool(inputs.get("elastic")), [], "master")
    if problems:
        assert m.release(version) < m.ELASTIC and inputs.get("elastic")
        return
    argv = run_of({**inputs, "env": {}, "command": ["train"]}, horovod_version=version, nics=nics)["argv"]
    options = [word for word in argv[1 : argv.index("train")] if word.startswith("-")]
    assert set(options) <= set(HOROVODRUN_OPTIONS[version]), (version, options)


NCCL_GIVEN = {
    "ssh_port": 12345,
    "identity_file": "/root/.ssh/id_ed25519",
    "start_timeout": 60,
    "nics": ["eth0"],
    "horovod_version": "0.28.1",
    "env": {"NCCL_IB_HCA": "mlx5_0", "NCCL_DEBUG": "WARN", "WANDB_API_KEY": "secret", "OMP_NUM_THREADS": 4},
}


def test_the_nccl_check_runs_one_allreduce_per_host_with_the_runs_nccl_settings_only():
    the_plan = m.plan({**PLAN_INPUTS, "extra_args": ["--fusion-threshold-mb", "32"]})
    check = m.nccl_check(the_plan, NCCL_GIVEN)
    assert check["argv"] == [
        "horovodrun", "-np", "2", "-H", "10.0.0.1:1,10.0.0.2:1", "-p", "12345", "-i", "/root/.ssh/id_ed25519",
        "--start-timeout", "60", "--gloo", "--network-interfaces", "eth0",
        "python3", "-c", m.NCCL_CHECK_CODE,
    ]  # fmt: skip
    # NCCL's own settings of the run, NCCL_DEBUG=INFO over the run's; no other variable (secrets stay out).
    assert check["env"] == {"NCCL_IB_HCA": "mlx5_0", "NCCL_DEBUG": "INFO", "NCCL_DEBUG_SUBSYS": "INIT,NET"}
    assert check["hosts"] == ["master", "w1"]
    assert "'" not in m.NCCL_CHECK_CODE and '"' not in m.NCCL_CHECK_CODE
    # Built for the image's Horovod as the run is: 0.18.2 has neither -i nor an interface option.
    old = m.nccl_check(the_plan, {**NCCL_GIVEN, "horovod_version": "0.18.2"})["argv"]
    assert "-i" not in old and not any(word.startswith("--network-interface") for word in old)
    assert old[old.index("env") : old.index("python3")] == ["env", "HOROVOD_GLOO_IFACE=eth0", "NCCL_SOCKET_IFNAME=eth0"]
    assert set(w for w in old if w.startswith("-")) <= set(HOROVODRUN_OPTIONS["0.18.2"]) | {"-c"}
    # An elastic run's check is not elastic; an np that leaves a host out leaves it out of the check.
    elastic = m.nccl_check(m.plan({**PLAN_INPUTS, "elastic": True}), NCCL_GIVEN)["argv"]
    assert "--min-np" not in elastic and elastic[elastic.index("-H") + 1] == "10.0.0.1:1,10.0.0.2:1"
    alone = m.nccl_check(m.plan({**PLAN_INPUTS, "np": 3}), NCCL_GIVEN)
    assert alone["argv"][1:5] == ["-np", "1", "-H", "10.0.0.1:1"] and alone["hosts"] == ["master"]
    with pytest.raises(ValueError, match="horovod_nccl_check"):
        m.nccl_check(the_plan, {"ssh_port": 1})


# NCCL 2.18's lines, as horovodrun prefixes them, for the two ends of the check.
NCCL_IB = [
    "[0]<stdout>:node-a:201:201 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_1:1/RoCE ; OOB eth0:10.0.0.1<0>",
    "[0]<stdout>:node-a:201:201 [0] NCCL INFO Using network IB",
    "[1]<stdout>:node-b:187:187 [0] NCCL INFO Using network IB",
]
NCCL_SOCKET = [
    "[0]<stdout>:node-a:201:201 [0] NCCL INFO NET/IB : No device found.",
    "[0]<stdout>:node-a:201:201 [0] NCCL INFO NET/Socket : Using [0]eth0:10.0.0.1<0>",
    "[0]<stdout>:node-a:201:201 [0] NCCL INFO Using network Socket",
    "[1]<stdout>:node-b:187:187 [0] NCCL INFO Using network Socket",
]


def test_nccl_over_infiniband_or_roce_passes_and_says_so():
    verdict = m.nccl_network({"rc": 0, "lines": NCCL_IB, "tail": []}, ["node-a", "node-b"])
    assert verdict == {
        "network": "IB",
        "problem": "",
        "line": "NCCL network between node-a, node-b: IB (NCCL: Using network IB)",
        "excerpt": ["NCCL between node-a, node-b now (one allreduce, NCCL_DEBUG=INFO), exit status 0:", *NCCL_IB],
    }
    # A network plugin's own name (nccl-rdma-sharp-plugins: IBext) is not sockets either.
    plugin = m.nccl_network({"rc": 0, "lines": ["x NCCL INFO Using network IBext_v8"]}, [])
    assert plugin["problem"] == "" and plugin["network"] == "IBext_v8"


def test_nccl_falling_back_to_sockets_is_refused_quoting_nccl_and_the_fixes():
    verdict = m.nccl_network({"rc": 0, "lines": NCCL_SOCKET, "tail": []}, ["node-a", "node-b"])
    assert verdict["network"] == "Socket"
    assert verdict["problem"].startswith(
        "NCCL fell back to TCP sockets between node-a, node-b, though every container sees GPUs and RDMA devices "
        "(/dev/infiniband): the run would train at socket speed. NCCL said:\n"
        "[0]<stdout>:node-a:201:201 [0] NCCL INFO NET/IB : No device found.\n"
        "NCCL needs the RDMA devices in every container (docker_horovod_rdma: auto"
    )
    assert verdict["problem"].endswith("To run over TCP knowingly, set horovod_launch_nccl_net_check: false.")
    # One rank on sockets is enough: NCCL then uses them between those ranks.
    mixed = m.nccl_network({"rc": 0, "lines": [*NCCL_IB[:2], NCCL_SOCKET[-1]]}, [])
    assert mixed["network"] == "Socket" and mixed["problem"]


def test_an_nccl_check_that_failed_or_named_no_network_is_refused_with_its_output():
    failed = m.nccl_network({"rc": 1, "lines": [], "tail": ["Traceback", "RuntimeError: CUDA error"]}, ["node-a"])
    assert failed["problem"] == (
        "The NCCL check (one allreduce between node-a, NCCL_DEBUG=INFO) failed with rc 1; its output ends:\n"
        "Traceback\nRuntimeError: CUDA error\nRun it by hand with NCCL_DEBUG=INFO to see why, or set "
        "horovod_launch_nccl_net_check: false to start the run without it."
    )
    # The doctor shows the end of the output when NCCL said nothing.
    assert failed["excerpt"] == [
        "NCCL between node-a now (one allreduce, NCCL_DEBUG=INFO), exit status 1:",
        "Traceback",
        "RuntimeError: CUDA error",
    ]
    silent = m.nccl_network({"rc": 0, "lines": ["x NCCL INFO NET/Plugin : No plugin found"], "tail": ["done"]})
    assert "named no network; its output ends:\ndone\n" in silent["problem"] and silent["network"] == ""


@pytest.mark.parametrize(
    ("version", "nics", "expected"),
    [
        ("0.18.2", ["eth0"], ["-p", "12345", "--start-timeout", "60", "--gloo", "--output-filename"]),
        (
            "0.19.0",
            ["eth0"],
            ["-p", "12345", "--start-timeout", "60", "--gloo", "--network-interface", "eth0", "--output-filename"],
        ),
        ("0.20.0", ["eth0", "ib0"], [*COMMON, "--network-interface", "eth0,ib0", "--output-filename"]),
        ("0.24.3", ["eth0", "ib0"], [*COMMON, "--network-interface", "eth0,ib0", "--output-filename"]),
        ("0.25.0", ["eth0", "ib0"], [*COMMON, "--network-interfaces", "eth0,ib0", "--output-filename"]),
        ("v0.28.1", ["eth0"], [*COMMON, "--network-interfaces", "eth0", "--output-filename"]),
    ],
)
def test_the_command_line_follows_the_release_in_the_container(version, nics, expected):
    # Before 0.20 the identity is the ssh client configuration's; before 0.19 horovodrun takes no
    # interface, so they go in the environment of the command (after the one horovodrun sets).
    argv = run_of({"env": {}, "command": ["train"]}, horovod_version=version, nics=nics)["argv"]
    assert argv[argv.index("-p") : argv.index("--output-filename") + 1] == expected
    before_command = argv[argv.index("--output-filename") + 2 : argv.index("train")]
    if m.release(version) < m.ONE_NIC_OPTION:
        assert before_command == ["env", "HOROVOD_GLOO_IFACE=eth0", "NCCL_SOCKET_IFNAME=eth0"]
    else:
        assert before_command == []


def test_before_0_19_the_interfaces_go_in_the_environment_ahead_of_the_rank_env_loader():
    argv = run_of({"env": {"SECRET": "x"}, "command": ["train"]}, horovod_version="0.18.2", nics=["ib0", "eth0"])[
        "argv"
    ]
    start = argv.index("env")
    assert argv[start : start + 4] == ["env", "HOROVOD_GLOO_IFACE=ib0", "NCCL_SOCKET_IFNAME=ib0,eth0", "sh"]
    assert argv[start + 4].endswith("/rank-env.sh") and argv[-1] == "train"
    # No interface found (one host): nothing is set, horovodrun's own choice stands.
    alone = run_of({"env": {}, "command": ["train"]}, horovod_version="0.18.2", nics=[])["argv"]
    assert "env" not in alone


@pytest.mark.parametrize(
    ("version", "elastic", "nics", "problem"),
    [
        ("0.28.1", True, ["eth0", "ib0"], None),
        ("0.18.2", False, [], None),
        ("0.24.0", True, [], None),
        ("0.18.1", False, [], "the oldest release this role launches is 0.18.2"),
        ("0.16.4", False, [], "the oldest release this role launches is 0.18.2"),
        ("0.23.0", True, [], "horovod_launch_elastic needs Horovod 0.24.0 or newer"),
        ("0.18.2", False, ["eth0"], None),
        ("0.18.2", False, ["eth0", "ib0"], None),
        ("0.19.5", False, ["eth0", "ib0"], "takes one network interface"),
        ("0.19.5", False, ["eth0"], None),
        ("", False, [], "not a Horovod release"),
        ("master", False, [], "not a Horovod release"),
    ],
)
def test_a_release_that_cannot_run_what_was_asked_is_refused_naming_the_setting(version, elastic, nics, problem):
    found = m.release_problems(version, elastic, nics, "master (the container 'horovod')")
    if problem is None:
        assert found == []
    else:
        assert len(found) == 1 and problem in found[0] and found[0].startswith("master (the container 'horovod'): ")


def test_interfaces_named_for_an_mpi_run_before_0_19_are_refused():
    # mpirun gets horovodrun's own -mca btl_tcp_if_include then, which a second one cannot override.
    found = m.release_problems("0.18.2", False, ["eth0"], "master (the container 'horovod')", "mpi")
    assert len(found) == 1 and "btl_tcp_if_include" in found[0] and "horovod_launch_controller: gloo" in found[0]
    assert m.release_problems("0.18.2", False, [], "master", "mpi") == []
    assert m.release_problems("0.19.0", False, ["eth0"], "master", "mpi") == []


def end(rc: int, **more: object) -> dict:
    return {"ended": True, "rc": rc, "duration_s": 93, "end_seen_after_s": 0.25, "stopped": False, "line": "", **more}


INFO = {
    "elastic": False,
    "host_sets": [],
    "failed_rank": None,
    "failed_exit_code": None,
    "launcher_tail": "",
    "rank_output": "",
}


def test_the_report_of_a_run_that_succeeded():
    report = m.report(run_of(), True, end=end(0), info=INFO)
    assert report["problem"] == "" and report["failure"] == ""
    result = report["result"]
    assert {k: result[k] for k in ("state", "rc", "succeeded", "stopped", "timed_out", "duration_s")} == {
        "state": "finished",
        "rc": 0,
        "succeeded": True,
        "stopped": False,
        "timed_out": False,
        "duration_s": 93,
    }
    assert result["end_seen_after_s"] == 0.25 and result["rank_logs"] == [
        f"{RUN_DIR}/rank.N/stdout",
        f"{RUN_DIR}/rank.N/stderr",
    ]
    assert result["output_dir"] == f"{RUN_DIR}/output" and result["failed_rank"] is None
    assert report["lines"] == [
        "Run r1: succeeded, rc 0, after 93 s (its end seen 0.25 s after it)",
        "np 6 on master, w1 (-H 10.0.0.1:4,10.0.0.2:2)",
        f"command: python3 {GIVEN['example_path']} --output-dir {RUN_DIR}/output --epochs 3 (in /data1/artifacts)",
        "not elastic",
        f"logs: {RUN_DIR}/launcher.log, {RUN_DIR}/rank.<N>/{{stdout,stderr}}",
        "code: /data1/artifacts",
    ]


def test_the_report_names_the_rank_that_failed_first_with_its_host_and_output():
    info = {**INFO, "failed_rank": 5, "failed_exit_code": 1, "rank_output": "==> x/stdout <==\nboom"}
    report = m.report(run_of(), False, end=end(1), info=info)
    assert report["result"]["failed_host"] == "w1" and report["result"]["state"] == "failed"
    assert report["lines"][0] == "Run r1: failed, rc 1, after 93 s (started earlier, not again)"
    assert report["failure"] == (
        "Run r1 failed: horovodrun exited with rc 1; rank 5 (on w1) failed first with exit code 1.\n"
        f"Last lines of rank 5's output:\n==> x/stdout <==\nboom\nAll logs: {RUN_DIR}"
    )


def test_without_a_named_rank_the_report_shows_the_launchers_output():
    report = m.report(run_of(), True, end=end(2), info={**INFO, "launcher_tail": "cannot enter"})
    assert report["failure"] == (
        f"Run r1 failed: horovodrun exited with rc 2.\nLast lines of {RUN_DIR}/launcher.log:\ncannot enter\n"
        f"All logs: {RUN_DIR}"
    )


@pytest.mark.parametrize(
    ("timeout", "rc", "stopped", "verdict", "how"),
    [
        (600, 124, False, "stopped by the timeout", "was stopped after horovod_launch_timeout (600 s)"),
        (0, 124, False, "failed", "failed"),
        (0, 143, True, "stopped (playbooks/stop.yml)", "was stopped by playbooks/stop.yml (horovod_launch_rerun"),
    ],
)
def test_a_run_stopped_by_its_time_limit_or_by_stop_says_so(timeout, rc, stopped, verdict, how):
    report = m.report(run_of(timeout=timeout), True, end=end(rc, stopped=stopped), info=INFO)
    assert report["lines"][0].startswith(f"Run r1: {verdict}, rc {rc}")
    assert report["failure"].startswith(f"Run r1 {how}")
    assert report["result"]["timed_out"] == (timeout > 0) and report["result"]["stopped"] == stopped


@pytest.mark.parametrize(
    ("timeout", "rc", "stopped", "seen", "diagnose"),
    [
        # Horovod 0.28.1's start timeout (runner/launch.py) and Gloo's rendezvous wait (common/gloo/http_store.cc).
        (0, 1, False, "Timed out waiting for tasks to start. Please check connectivity", True),
        (0, 1, False, "gloo::IoException: Wait timeout after 30 seconds for key(s): rank_1", True),
        (0, 1, False, "RuntimeError: Connection refused", True),
        (600, 124, False, "epoch 3/90", True),  # stopped by its own time limit: maybe a hang
        (0, 1, False, "ZeroDivisionError: division by zero", False),
        (0, 143, True, "Timed out waiting for tasks to start", False),  # stopped on purpose
        (0, 0, False, "Connection refused (retried)", False),
    ],
)
def test_a_run_that_failed_as_unreachable_hosts_make_runs_fail_asks_the_doctor(timeout, rc, stopped, seen, diagnose):
    for where in ("launcher_tail", "rank_output"):
        info = {**INFO, where: seen}
        report = m.report(run_of(timeout=timeout), True, end=end(rc, stopped=stopped), info=info)
        assert report["diagnose"] is diagnose, (where, seen)


def test_a_run_that_printed_nothing_for_the_stall_timeout_fails_with_the_doctor_and_is_left_running():
    stalled = {"ended": False, "stalled": True, "quiet_s": 301, "line": "running 400s | epoch 2/90"}
    report = m.report(run_of(stall_timeout=300), True, end=stalled, info=INFO)
    assert report["problem"] == "" and report["diagnose"] is True
    result = report["result"]
    assert {k: result[k] for k in ("state", "rc", "succeeded", "stalled", "quiet_s")} == {
        "state": "stalled", "rc": None, "succeeded": False, "stalled": True, "quiet_s": 301
    }  # fmt: skip
    assert report["lines"][0] == "Run r1: no output for 301 s (horovod_launch_stall_timeout 300 s); it is left running"
    assert report["failure"].startswith(
        "Run r1 printed nothing for 301 s (horovod_launch_stall_timeout: 300) and still runs; last seen: running "
        "400s | epoch 2/90. It is left running: stop it with ansible-playbook playbooks/stop.yml -i INVENTORY -e "
        "horovod_run_name=r1, or, "
    )
    assert report["failure"].endswith(f"All logs: {RUN_DIR}")
    # A poll that only ran out (no stall) is still the time limit's problem, as before.
    report = m.report(run_of(timeout=60), True, end={"ended": False, "stalled": False, "line": "x"}, info=INFO)
    assert report["problem"].startswith("Run r1 did not end within horovod_launch_timeout (60 s)")


def test_the_report_of_an_elastic_run_lists_its_host_sets():
    sets = [{"since": 1, "hosts": ["10.0.0.1:4", "10.0.0.2:2"]}, {"since": 2, "hosts": []}]
    report = m.report(run_of({"elastic": True}), True, end=end(0), info={**INFO, "elastic": True, "host_sets": sets})
    assert report["result"]["elastic"] and report["result"]["host_sets"] == sets
    assert report["lines"][3] == f"elastic, host sets: 10.0.0.1:4, 10.0.0.2:2 -> none ({RUN_DIR}/hosts.log)"


def test_a_run_that_did_not_end_is_a_problem():
    report = m.report(run_of(timeout=60), True, end={"ended": False, "line": "running 190s | x"}, info=INFO)
    assert report["problem"] == (
        "Run r1 did not end within horovod_launch_timeout (60 s) and the time to stop it; last seen: running 190s | x."
    )


def test_a_run_that_goes_on_with_every_rank_up():
    report = m.report(run_of(), "true", up={"state": "up", "ranks": [0, 1, 2, 3, 4, 5], "by_host": {}, "errors": {}})
    assert report["problem"] == ""
    assert report["result"]["state"] == "running" and report["result"]["ranks_up"] == [0, 1, 2, 3, 4, 5]
    assert report["lines"][0] == "Run r1 started: all 6 ranks run on master, w1; not waiting for it."
    assert report["lines"][3].endswith("-e horovod_run_name=r1")


@pytest.mark.parametrize(
    ("master", "command"),
    [
        ({"name": "master", "host": "10.0.0.1", "user": "root", "port": 22}, "ssh root@10.0.0.1 tail -f"),
        ({"name": "master", "host": "gpu-a.example", "user": "", "port": "2222"}, "ssh -p 2222 gpu-a.example tail -f"),
    ],
)
def test_a_run_that_goes_on_says_how_to_follow_it_from_the_controller(master, command):
    up = {"state": "up", "ranks": [0, 1, 2, 3, 4, 5], "by_host": {}, "errors": {}}
    line = m.report(run_of(), True, up=up, master=master)["lines"][1]
    assert line == (
        f"follow it from here: {command} /data1/artifacts/runs/r1/launcher.log (on master; each rank's output: "
        "/data1/artifacts/runs/r1/rank.<N>/)"
    )


def test_a_run_whose_ranks_did_not_all_come_up_is_a_problem():
    up = {"state": "timeout", "ranks": [0, 1], "by_host": {"localhost": [0, 1]}, "errors": {"10.0.0.2": "rc 255"}}
    assert m.report(run_of(), False, up=up)["problem"] == (
        'Run r1: only ranks 0, 1 of 6 were seen running within 90 s (by host: {"localhost": [0, 1]}, unreachable: '
        '{"10.0.0.2": "rc 255"}). Read /data1/artifacts/runs/r1/launcher.log; stop it with playbooks/stop.yml '
        "-e horovod_run_name=r1."
    )


def test_the_report_needs_what_was_seen():
    with pytest.raises(ValueError, match="give up, or end and info"):
        m.report(run_of(), True, end=end(0))


LS_REMOTE = "\n".join(
    [
        "1111111111111111111111111111111111111111\trefs/heads/main",
        "2222222222222222222222222222222222222222\trefs/tags/v1",
        "3333333333333333333333333333333333333333\trefs/tags/v1^{}",
        "4444444444444444444444444444444444444444\trefs/tags/both",
        "5555555555555555555555555555555555555555\trefs/heads/both",
    ]
)


@pytest.mark.parametrize(
    ("version", "kind"),
    [
        ("v1", "tag"),
        ("refs/tags/v1", "tag"),
        (" v1 ", "tag"),
        ("a" * 40, "commit"),
        ("b" * 64, "commit"),
        ("main", "branch"),
        ("refs/heads/main", "branch"),
        ("both", "ambiguous"),
        ("refs/tags/both", "tag"),
        ("refs/heads/both", "branch"),
        ("1111111", "missing"),
        ("A" * 40, "missing"),
        ("v9", "missing"),
        ("refs/tags/main", "missing"),
        ("refs/heads/v1", "missing"),
        ("a" * 39, "missing"),
        ("HEAD", "missing"),
    ],
)
def test_kind_of_ref(version, kind):
    assert m.code_ref(LS_REMOTE, version)["kind"] == kind


def test_a_ref_that_pins_has_no_problem_and_a_branch_only_when_allowed():
    assert m.code_ref(LS_REMOTE, "v1", "/r.git")["problem"] == ""
    assert m.code_ref("", "a" * 40)["problem"] == ""
    assert m.code_ref(LS_REMOTE, "main", "/r.git", True)["problem"] == ""
    assert m.code_ref(LS_REMOTE, "main", "/r.git", False)["problem"] == (
        "horovod_launch_code_version is 'main', which in /r.git is a branch: it moves with new commits, so nodes and "
        "re-runs could run other code. Set it to a tag or a full commit id (git rev-parse main in a clone prints "
        "it), or set horovod_launch_code_allow_branch: true to follow the branch."
    )
    assert "write refs/tags/both (or refs/heads/...)" in m.code_ref(LS_REMOTE, "both", "/r.git")["problem"]
    assert "a shortened commit id is not enough" in m.code_ref(LS_REMOTE, "1111111", "/r.git")["problem"]


def test_an_empty_repository_has_no_refs_and_text_is_required():
    assert m.code_ref("", "v1")["kind"] == "missing"
    with pytest.raises(ValueError, match="expects the text of git ls-remote"):
        m.code_ref(None, "v1")


@pytest.mark.parametrize(
    ("repo", "name"),
    [
        ("https://github.com/horovod/horovod.git", "horovod"),
        ("https://github.com/horovod/horovod", "horovod"),
        ("git@gitlab.example:ml/resnet-train.git", "resnet-train"),
        ("ssh://git@h:2222/ml/train.git/", "train"),
        ("/data1/src/launch-train", "launch-train"),
        ("/srv/repo/.git", "repo"),
        ("file:///srv/git/my model.git", "my-model"),
        (".git", "code"),
        ("/", "code"),
    ],
)
def test_a_repository_is_checked_out_under_its_own_name_by_default(repo, name):
    assert m.code_dir_name(repo) == name
    plan = m.plan({**PLAN_INPUTS, "code_repo": repo, "code_dest": ""})
    assert plan["code_dest"] == f"/data1/artifacts/code/{name}"
    # The working directory follows the checkout (what the guide's example needs: it writes ./checkpoint-*).
    assert plan["workdir"] == f"/data1/artifacts/code/{name}"


def test_a_given_checkout_directory_and_no_repository():
    assert m.plan({**PLAN_INPUTS, "code_repo": "/r.git", "code_dest": "/data1/artifacts/w"})["code_dest"] == (
        "/data1/artifacts/w"
    )
    assert m.plan({**PLAN_INPUTS, "code_dest": ""})["code_dest"] == ""
    # Without an artifact directory the share (refused by the rules unless horovod_launch_allow_share_code).
    shared = m.plan({**PLAN_INPUTS, "code_repo": "/r.git", "code_dest": "", "artifact_dir": ""})
    assert shared["code_dest"] == "/data1/share/code/r"


def test_a_torchrun_run_starts_one_torchrun_per_node_from_the_master():
    run = run_of({"launcher": "torchrun", "np": 5}, nics=["eth0"])
    assert run["argv"] == ["python3", f"{RUN_DIR}/horovod_torchrun.py", "launch", f"{RUN_DIR}/torchrun.json"]
    spec = run["torchrun"]
    # Node rank order is the host list's, each node's processes its share of np; the first host holds the
    # rendezvous; the master's own node is started there, the others over ssh.
    assert spec["nodes"] == [
        {"name": "master", "address": "10.0.0.1", "nproc": 4, "local": True, "args": ["--node_rank", "0"]},
        {"name": "w1", "address": "10.0.0.2", "nproc": 1, "local": False, "args": ["--node_rank", "1"]},
    ]
    assert spec["elastic"] is False and run["discovery_script"] == ""
    assert spec["torchrun"] == [
        "torchrun", "--nnodes", "2", "--master_addr", "10.0.0.1", "--master_port", "29500", "--max_restarts", "0",
    ]  # fmt: skip
    assert spec["env"] == {
        "HOROVOD_LAUNCH_RUN_DIR": RUN_DIR,
        "HOROVOD_LAUNCH_OUTPUT_DIR": f"{RUN_DIR}/output",
        "GLOO_SOCKET_IFNAME": "eth0",
        "NCCL_SOCKET_IFNAME": "eth0",
    }
    # The run's environment is loaded by each rank, never on a command line.
    assert spec["command"][:2] == ["sh", f"{RUN_DIR}/rank-env.sh"]
    assert spec["self"] == f"{RUN_DIR}/horovod_torchrun.py" and spec["workdir"] == "/data1/artifacts"
    assert run["rank_hosts"] == ["master"] * 4 + ["w1"]


def test_an_elastic_torchrun_run_meets_at_the_masters_c10d_store_and_gets_its_ranks_there():
    run = run_of({"launcher": "torchrun", "elastic": True, "min_nodes": 0, "max_restarts": 5}, torch_version="2.5.1")
    spec = run["torchrun"]
    assert spec["torchrun"] == [
        "torchrun", "--nnodes", "1:2", "--rdzv_backend", "c10d", "--rdzv_endpoint", "10.0.0.1:29500",
        "--rdzv_id", run["name"], "--max_restarts", "5",
    ]  # fmt: skip
    # The first node holds the store, said to each node rather than guessed from its host names; the
    # rendezvous gives the node ranks out (no --node_rank).
    assert [node["args"] for node in spec["nodes"]] == [
        ["--rdzv_conf", "is_host=true"],
        ["--rdzv_conf", "is_host=false"],
    ]
    assert spec["elastic"] is True and spec["cooldown"] == [10, 300]
    # No Horovod discovery script; the bundled example's output on the share (rank 0 may be on any node).
    assert run["discovery_script"] == ""
    assert run["output_on_share"] == f"outputs/{run['name']}"
    # Bounds given are the bounds used; an elastic run is another run than a static one.
    two = run_of({"launcher": "torchrun", "elastic": True, "min_nodes": 2, "max_restarts": 0}, name="")
    assert two["torchrun"]["torchrun"][2] == "2:2" and two["torchrun"]["torchrun"][-1] == "0"
    assert two["name"] != run_of({"launcher": "torchrun"}, name="")["name"]
    with pytest.raises(ValueError, match="min_nodes must be at most the 2 nodes of the run, got 3"):
        run_of({"launcher": "torchrun", "elastic": True, "min_nodes": 3})


def test_a_horovod_elastic_run_keeps_its_discovery_script():
    run = run_of({"elastic": True})
    assert run["discovery_script"] == f"{RUN_DIR}/discover-hosts.py"
    assert run["argv"][run["argv"].index("--host-discovery-script") + 1] == run["discovery_script"]


def test_a_torchrun_run_is_another_run_and_a_horovodrun_run_keeps_its_name():
    horovodrun = run_of(name="", example_sha256="c0de")
    torchrun = run_of({"launcher": "torchrun"}, name="", example_sha256="c0de")
    assert horovodrun["name"] == "run-25209ede92bb" and "torchrun" not in horovodrun
    assert torchrun["name"] != horovodrun["name"]
    assert m.plan({**PLAN_INPUTS, "launcher": "torchrun"})["definition"]["launcher"] == "torchrun"
    assert m.plan({**PLAN_INPUTS, "launcher": "torchrun"})["example_file"] == "torchrun_train_example.py"
    assert m.plan(PLAN_INPUTS)["example_file"] == "horovod_train_example.py"


def test_a_torchrun_run_refuses_an_interface_a_shell_would_read():
    with pytest.raises(ValueError, match="torchrun is not run with it"):
        run_of({"launcher": "torchrun"}, nics=["eth0$(touch /tmp/p)"])


def test_an_unknown_launcher_is_no_plan():
    with pytest.raises(ValueError, match="launcher must be one of horovodrun, torchrun"):
        m.plan({**PLAN_INPUTS, "launcher": "mpirun"})


def test_torchrun_of_torch_before_2_gets_redirects_its_python_3_11_can_read():
    spec = run_of({"launcher": "torchrun"}, torch_version="1.13.0a0+gitunknown")["torchrun"]
    assert spec["torchrun"][-4:] == ["--redirects", "9:1", "--tee", "9:1"]
    assert "--redirects" not in run_of({"launcher": "torchrun"}, torch_version="2.0.0")["torchrun"]["torchrun"]


def test_the_nccl_check_of_a_torchrun_run_runs_one_torch_process_per_node():
    the_plan = m.plan({**PLAN_INPUTS, "launcher": "torchrun", "np": 5})
    given = {
        "ssh_port": 12345,
        "identity_file": "/root/.ssh/id_ed25519",
        "start_timeout": 30,
        "nics": ["ib0"],
        "horovod_version": "",
        "env": {"NCCL_IB_HCA": "mlx5_0", "SECRET": "x"},
        "ssh": ["ssh", "-p", "12345"],
    }
    check = m.nccl_check(the_plan, given)
    assert check["hosts"] == ["master", "w1"]
    own = ["MASTER_ADDR=10.0.0.1", "MASTER_PORT=29500"]
    assert check["argvs"][0] == [
        "env", *own, "RANK=0", "LOCAL_RANK=0", "WORLD_SIZE=2", "python3", "-c", m.NCCL_TORCH_CHECK_CODE,
    ]  # fmt: skip
    # The other node over the pinned ssh, its environment on the command line (NCCL_* only: no secret).
    ssh, address, remote = check["argvs"][1][:3], check["argvs"][1][3], check["argvs"][1][4]
    assert ssh == ["ssh", "-p", "12345"] and address == "10.0.0.2" and len(check["argvs"][1]) == 5
    assert shlex.split(remote)[:4] == ["env", "NCCL_IB_HCA=mlx5_0", "NCCL_DEBUG=INFO", "NCCL_DEBUG_SUBSYS=INIT,NET"]
    assert "RANK=1" in shlex.split(remote) and "SECRET=x" not in remote
    assert check["env"]["NCCL_SOCKET_IFNAME"] == "ib0" and "SECRET" not in check["env"]
    with pytest.raises(ValueError, match="needs ssh"):
        m.nccl_check(the_plan, {**given, "ssh": []})
    with pytest.raises(ValueError, match="the NCCL check is not run"):
        m.nccl_check(the_plan, {**given, "nics": ["ib0;reboot"]})
