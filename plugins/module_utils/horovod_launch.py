# Copyright: multinode.horovod contributors
# SPDX-License-Identifier: GPL-3.0-or-later
"""What horovod_launch decides on the controller: the run's plan, its name and command line, how it went,
and the table of runs. Behind the filters of plugins/filter/horovod_launch.py (unit-tested in
tests/unit/plugins/filter/test_horovod_launch_filters.py). The inputs have passed the role's input rules
(horovod_launch_rules.py), so what those refuse raises ValueError here instead of being explained.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import shlex
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ansible.module_utils.parsing.convert_bool import boolean
from ansible_collections.multinode.horovod.plugins.module_utils import horovod_hosts
from ansible_collections.multinode.horovod.plugins.module_utils.controller_ssh import ssh_command
from ansible_collections.multinode.horovod.plugins.module_utils.horovod_run import failed_rank
from ansible_collections.multinode.horovod.plugins.module_utils.numbers import whole
from ansible_collections.multinode.horovod.plugins.module_utils.paths import is_inside, strip_slash
from ansible_collections.multinode.horovod.plugins.module_utils.worker_reports import (
    INTERFACE_SHAPE,
    is_interface_name,
    nccl_answer,
)

# The run's environment (horovod_launch_env, which may hold secrets) lives outside the share, readable by
# root only, in every node's container at this path while the run lasts: the launch script copies the
# master's to the other nodes over the pinned ssh and removes them all when horovodrun ends. Each rank
# loads it through the run's rank-env.sh, so the values are on no command line (horovodrun puts its own
# environment on every rank's).
ENV_FILE = "/root/.horovod-launch-{name}.env"
RANK_ENV = "rank-env.sh"
# An elastic run's hosts come from this script in its directory (files/horovod_discover.py), not from -H.
DISCOVERY_SCRIPT = "discover-hosts.py"
BUNDLED = "(bundled example)"
# What defines a run; a change to any of them is another run (another default name). An elastic run's
# bounds ("elastic"), an output directory ("output_dir") and a launcher other than horovodrun ("launcher")
# only where they are given, so that other runs keep their names.
IDENTITY_KEYS = ("command", "code", "hosts", "np", "image", "env_names", "workdir", "controller", "extra_args")
OPTIONAL_IDENTITY_KEYS = ("elastic", "output_dir", "launcher")
# The environment variable that tells every rank where to write (horovod_launch_output_dir, else the
# bundled example's output directory, else the working directory).
OUTPUT_ENV = "HOROVOD_LAUNCH_OUTPUT_DIR"
# The inputs of plan(): the role's variables without their prefix, and the master's inventory name.
PLAN_KEYS = tuple(
    "hosts np min_np max_np elastic elastic_cooldown workdir output_dir code_repo code_dest share_dir artifact_dir "
    "runs_dir command example_args env controller extra_args image_ids master launcher rdzv_port min_nodes "
    "max_restarts".split()
)
# What run() is given besides the plan.
RUN_KEYS = tuple(
    "name code_commit code_version example_sha256 example_path image nics ssh_port identity_file "
    "start_timeout verbose timeout stall_timeout poll_interval tail_lines horovod_version torch_version".split()
)
# horovodrun's options by the first release that has them, as Horovod's own argument parser defines
# them at each release tag (horovod/run/run.py up to 0.19.5, horovod/runner/launch.py from 0.20.0):
#   0.18.2  --output-filename: the oldest release this role launches (-np, -H, -p, --start-timeout,
#           --gloo/--mpi and --verbose are older)
#   0.19.0  --network-interface NIC, one interface
#   0.20.0  -i (--ssh-identity-file); --network-interface takes a comma-separated list; elastic runs
#           (--min-np, --max-np, --host-discovery-script)
#   0.24.0  --blacklist-cooldown-range, which lets an elastic run take back a host that failed
#   0.25.0  --network-interfaces (--network-interface now one interface per use, deprecated)
OLDEST_HOROVOD = (0, 18, 2)
IDENTITY_OPTION = (0, 20, 0)
ONE_NIC_OPTION = (0, 19, 0)
NIC_LIST_OPTION = (0, 20, 0)
NICS_OPTION = (0, 25, 0)
ELASTIC = (0, 24, 0)
# The launchers a run may be started with (horovod_launch_launcher), the first the default, and the bundled
# example each runs (roles/horovod_launch/files/).
LAUNCHERS = ("horovodrun", "torchrun")
EXAMPLES = {"horovodrun": "horovod_train_example.py", "torchrun": "torchrun_train_example.py"}
# torchrun (torch.distributed.run) came with torch 1.10.0; before, only torch.distributed.launch.
OLDEST_TORCH = (1, 10, 0)
# The torchrun launcher in a torchrun run's directory (files/horovod_torchrun.py) and what it reads.
TORCHRUN_SCRIPT = "horovod_torchrun.py"
TORCHRUN_SPEC = "torchrun.json"
# Seconds the other nodes of a torchrun run get to end on their own once one failed, and a node's torchrun
# to end once stopped.
TORCHRUN_GRACE = 30
# torch before 2.0 reads torchrun's --redirects and --tee (default "0") with Std.from_str, whose to_std finds
# no member for 0 or 3 on Python 3.11 (an IntFlag's zero and multi-bit values are not iterated from 3.11
# on), so torchrun fails at once ("'NoneType' object has no attribute 'get'"): Debian 12's python3-torch 1.13
# on its Python 3.11 does. A mapping of local rank 9 (one digit: the mapping's pattern) to stdout parses
# there and leaves the other local ranks' output as it is (to_map gives them Std.NONE); a node's tenth
# process, where there is one, has its stdout teed with torchrun's "[default9]:" in front, which the
# launcher reads past.
TORCH_STD_FIXED = (2, 0, 0)
NO_REDIRECTS = ["--redirects", "9:1", "--tee", "9:1"]
RELEASE_RE = re.compile(r"^v?(\d+)\.(\d+)\.(\d+)")


def release(version: Any) -> tuple[int, int, int] | None:
    """(major, minor, patch) of a Horovod version as horovodrun --check-build or the package metadata give
    it ("0.28.1", "v0.19.0", "0.21.0rc1"); None when it is not one."""
    match = RELEASE_RE.match(str(version or "").strip())
    return (int(match[1]), int(match[2]), int(match[3])) if match else None


def _dotted(version: tuple[int, ...]) -> str:
    return ".".join(str(part) for part in version)


def release_problems(
    version: Any, elastic: bool, named_nics: Iterable[str], where: str, controller: str = "gloo"
) -> list[str]:
    """What the Horovod of `where` (its version as horovodrun reports it) cannot do of this run: a release
    older than OLDEST_HOROVOD, an elastic run before ELASTIC, interfaces named in
    horovod_launch_network_interfaces that its horovodrun cannot take."""
    found = release(version)
    if found is None:
        return [
            f"{where}: horovodrun reports the version {str(version)!r}, which is not a Horovod release "
            "(MAJOR.MINOR.PATCH); the role builds horovodrun's command line for the release it runs. Use an "
            "image with a released Horovod (docker_horovod_image)."
        ]
    if found < OLDEST_HOROVOD:
        return [
            f"{where}: the image runs Horovod {_dotted(found)}; the oldest release this role launches is "
            f"{_dotted(OLDEST_HOROVOD)} (its horovodrun writes each rank's output, --output-filename). Use an "
            "image with a newer Horovod (docker_horovod_image)."
        ]
    problems = []
    if elastic and found < ELASTIC:
        problems.append(
            f"{where}: horovod_launch_elastic needs Horovod {_dotted(ELASTIC)} or newer (an elastic run takes a "
            f"host that failed back after horovod_launch_elastic_cooldown, --blacklist-cooldown-range); the "
            f"image runs {_dotted(found)}. Use an image with a newer Horovod, or set horovod_launch_elastic: false."
        )
    nics = list(named_nics)
    if nics and found < ONE_NIC_OPTION and controller == "mpi":
        problems.append(
            f"{where}: Horovod {_dotted(found)}'s horovodrun takes no network interface and gives mpirun the "
            f"interfaces it finds itself (-mca btl_tcp_if_include, which a second one cannot override), but "
            f"horovod_launch_network_interfaces is {nics}. Leave it empty, set horovod_launch_controller: gloo, or "
            f"use an image with Horovod {_dotted(ONE_NIC_OPTION)} or newer."
        )
    elif len(nics) > 1 and ONE_NIC_OPTION <= found < NIC_LIST_OPTION:
        problems.append(
            f"{where}: Horovod {_dotted(found)}'s horovodrun takes one network interface, but "
            f"horovod_launch_network_interfaces is {nics}. Name one, or use an image with Horovod "
            f"{_dotted(NIC_LIST_OPTION)} or newer."
        )
    return problems


def _nic_env(found: tuple[int, int, int], nics: list[str]) -> list[str]:
    """Before 0.19 horovodrun takes no interface: it sets HOROVOD_GLOO_IFACE and NCCL_SOCKET_IFNAME to the
    interfaces it found in front of the command (horovod/run/gloo_run.py at v0.18.2), so `env` in the
    command sets the run's after it. Its rendezvous address stays on an interface of its own choosing."""
    if not nics or found >= ONE_NIC_OPTION:
        return []
    return ["env", f"HOROVOD_GLOO_IFACE={nics[0]}", f"NCCL_SOCKET_IFNAME={','.join(nics)}"]


def _nic_options(found: tuple[int, int, int], nics: list[str]) -> list[str]:
    """The interfaces in the option of that release; none before 0.19 (they go in the environment)."""
    if not nics or found < ONE_NIC_OPTION:
        return []
    option = "--network-interfaces" if found >= NICS_OPTION else "--network-interface"
    return [option, ",".join(nics) if found >= NIC_LIST_OPTION else nics[0]]


def plain(value: Any) -> Any:
    """`value` with Ansible's string and container types turned into JSON's."""
    if isinstance(value, Mapping):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [plain(v) for v in value]
    if isinstance(value, bool) or value is None or isinstance(value, int | float):
        return value
    return str(value)


def _require(given: Any, keys: Iterable[str], what: str) -> Mapping[str, Any]:
    if not isinstance(given, Mapping):
        raise ValueError(f"{what} expects a mapping, got {type(given).__name__}")
    missing = [key for key in keys if key not in given]
    if missing:
        raise ValueError(f"{what}: missing {', '.join(missing)}")
    return given


def _count(value: Any, what: str) -> int:
    number = whole(value)
    if number is None or number < 0:
        raise ValueError(f"{what} must be a whole number of 0 or more, got {value!r}")
    return number


def counts(hosts: Any, np: Any = 0, min_np: Any = 0, max_np: Any = 0) -> dict[str, int]:
    """``{total_slots, np, min_np, max_np}``: np 0 is every slot; an elastic run goes on with at least
    min_np (0: the first host's slots, at most np) and grows to max_np (0: every slot)."""
    slots = [horovod_hosts.slot_count(h["slots"]) for h, _unused in horovod_hosts.allocate(hosts)]
    total = sum(s or 0 for s in slots)
    run_np = _count(np, "np") or total
    return {
        "total_slots": total,
        "np": run_np,
        "min_np": _count(min_np, "min_np") or min(slots[0] or 0, run_np),
        "max_np": _count(max_np, "max_np") or total,
    }


# What a directory name of ours may not hold (paths.COMPONENT_RE).
NOT_IN_A_NAME_RE = re.compile(r"[^A-Za-z0-9._+@-]+")


def code_dir_name(repo: str) -> str:
    """The directory a repository is checked out into by default, as git clone names it: the last
    component of its URL or path without ``.git`` (``https://example.org/ml/train.git`` and
    ``git@host:ml/train`` give ``train``), other characters than a path allows made ``-``; ``code``
    when nothing is left."""
    path = str(strip_slash(str(repo).strip())).removesuffix("/.git").removesuffix(".git")
    name = re.split(r"[/:]", path)[-1]
    name = NOT_IN_A_NAME_RE.sub("-", name).strip("-")
    return name if name and not name.startswith(".") else "code"


def code_dest(inputs: Mapping[str, Any]) -> str:
    """Where the training code is checked out: the given directory, else a directory of its own per
    repository (``code/<name>``) in the artifact directory (else the share); "" without a repository."""
    if not inputs["code_repo"]:
        return ""
    given = str(inputs["code_dest"] or "")
    root = inputs["artifact_dir"] or inputs["share_dir"]
    return given or f"{root}/code/{code_dir_name(str(inputs['code_repo']))}"


def plan(inputs: Mapping[str, Any]) -> dict[str, Any]:
    """What the role's inputs (PLAN_KEYS: its variables without the prefix, and ``master``) decide before
    any host is read: the counts, the host of each rank and ``-H``, the working directory (the given one,
    else the code checkout, else the artifact directory, else the share), the probe's arguments, the
    image IDs to compare with the master's, and what defines the run but for its code and image."""
    _require(inputs, PLAN_KEYS, "horovod_launch_plan")
    hosts = inputs["hosts"]
    numbers = counts(hosts, inputs["np"], inputs["min_np"], inputs["max_np"])
    np = numbers["np"]
    if inputs["workdir"]:
        workdir = str(inputs["workdir"])
    else:
        workdir = code_dest(inputs) or str(inputs["artifact_dir"] or inputs["share_dir"])
    command, example_args = list(inputs["command"] or []), list(inputs["example_args"] or [])
    elastic = boolean(inputs["elastic"], strict=True)
    cooldown = [int(value) for value in inputs["elastic_cooldown"]]
    h = horovod_hosts.hosts_arg(hosts, np)
    definition: dict[str, Any] = {
        "command": command or [BUNDLED, *example_args],
        "hosts": h,
        "np": np,
        "env_names": list((inputs["env"] or {}).keys()),
        "workdir": workdir,
        "controller": inputs["controller"],
        "extra_args": list(inputs["extra_args"] or []),
    }
    launcher = str(inputs["launcher"])
    if launcher not in LAUNCHERS:
        raise ValueError(f"launcher must be one of {', '.join(LAUNCHERS)}, got {launcher!r}")
    nodes = [
        {"name": str(host["name"]), "address": str(host["address"]), "nproc": n}
        for host, n in horovod_hosts.allocate(hosts, np)
    ]
    # torchrun's elastic run goes on with at least min_nodes of the nodes (0: the master's alone), restarting
    # its workers at most max_restarts times.
    min_nodes = _count(inputs["min_nodes"], "min_nodes") or 1
    max_restarts = _count(inputs["max_restarts"], "max_restarts")
    if elastic and launcher == "torchrun":
        if min_nodes > len(nodes):
            raise ValueError(f"min_nodes must be at most the {len(nodes)} nodes of the run, got {min_nodes}")
        definition["elastic"] = {"min_nodes": min_nodes, "max_nodes": len(nodes), "max_restarts": max_restarts}
        definition["elastic"]["cooldown"] = cooldown
    elif elastic:
        definition["elastic"] = {"min_np": numbers["min_np"], "max_np": numbers["max_np"], "cooldown": cooldown}
    output_dir = str(inputs["output_dir"] or "")
    if output_dir:
        definition["output_dir"] = output_dir
    if launcher != LAUNCHERS[0]:
        definition["launcher"] = launcher
    rank_hosts = horovod_hosts.rank_hosts(hosts, np)
    shared = [d for d in (inputs["share_dir"], inputs["artifact_dir"]) if d]
    check = output_check(inputs, workdir, rank_hosts)
    return {
        **numbers,
        "rank_hosts": rank_hosts,
        "launcher": launcher,
        "example_file": EXAMPLES[launcher],
        "master": str(inputs["master"]),
        "rdzv_port": int(inputs["rdzv_port"]),
        # A torchrun run's nodes, in node rank order: the hosts that get processes and how many.
        "nodes": nodes,
        "min_nodes": min_nodes,
        "max_restarts": max_restarts,
        "h": h,
        "workdir": workdir,
        "hosts": [str(host["name"]) for host in hosts],
        "elastic": elastic,
        "cooldown": cooldown,
        "command": [str(word) for word in command],
        "example_args": [str(word) for word in example_args],
        "code_repo": str(inputs["code_repo"] or ""),
        "code_dest": code_dest(inputs),
        "share_dir": str(inputs["share_dir"]),
        "output_dir": output_dir,
        "runs_dir": str(inputs["runs_dir"]),
        "output_check": check,
        "probe_args": [f"--{kind}={d}" for d in shared for kind in ("path", "share-marker")]
        + [f"--host={host['name']}={host['address']}" for host in hosts]
        + [f"--writable={check['path']}"],
        "other_image_ids": {k: v for k, v in (inputs["image_ids"] or {}).items() if k != inputs["master"]},
        "definition": definition,
    }


def output_check(inputs: Mapping[str, Any], workdir: str, rank_hosts: list[str]) -> dict[str, Any]:
    """Where the run writes its checkpoints and logs, and the hosts that must be able to (the preflight
    checks it in their containers): the hosts that may hold rank 0 - the host of rank 0, or every host of
    an elastic run, where rank 0 moves with the hosts. ``kind`` says whose directory it is: the given
    output directory, the bundled example's (its run's directory, or below the share for an elastic run;
    the example creates it) or the working directory (where a command writes unless told otherwise)."""
    output_dir = str(inputs["output_dir"] or "")
    elastic = boolean(inputs["elastic"], strict=True)
    if output_dir:
        path, kind = output_dir, "output_dir"
    elif inputs["command"]:
        path, kind = workdir, "workdir"
    else:
        path, kind = (f"{inputs['share_dir']}/outputs" if elastic else str(inputs["runs_dir"])), "example"
    hosts = list(dict.fromkeys(str(host["name"]) for host in inputs["hosts"])) if elastic else rank_hosts[:1]
    # The role creates a given output directory only below the artifact directory, which only the master
    # writes: on the share, a name a worker planted there would be followed.
    artifacts = str(inputs["artifact_dir"] or "")
    create = bool(output_dir and artifacts and is_inside(output_dir, artifacts))
    return {"path": path, "kind": kind, "hosts": hosts, "elastic": elastic, "create": create}


def run_id(definition: Mapping[str, Any]) -> str:
    """``run-`` and 12 hex digits of the SHA-256 of what defines a run (IDENTITY_KEYS, and ``elastic`` for
    an elastic run), whatever the order of its keys; ``env_names`` is compared as a set."""
    missing = [key for key in IDENTITY_KEYS if key not in definition]
    unknown = sorted(str(key) for key in definition if key not in (*IDENTITY_KEYS, *OPTIONAL_IDENTITY_KEYS))
    if missing or unknown:
        raise ValueError(
            f"horovod_run_id: give exactly the keys {', '.join(IDENTITY_KEYS)}"
            + (f"; missing {', '.join(missing)}" if missing else "")
            + (f"; unknown {', '.join(unknown)}" if unknown else "")
        )
    values = plain(definition)
    values["env_names"] = sorted(set(values["env_names"] or []))
    digest = hashlib.sha256(json.dumps(values, sort_keys=True, separators=(",", ":")).encode()).hexdigest()
    return "run-" + digest[:12]


def horovodrun_argv(the_plan: Mapping[str, Any], run: Mapping[str, Any]) -> list[str]:
    """horovodrun's command line, the command last.

    ``-H`` names the hosts, or, for an elastic run, ``--min-np``/``--max-np``, the discovery script and the
    cooldown range do. ``--output-filename`` (the rank logs in the run's directory) only with two processes
    or more: horovodrun's Gloo launcher fails on it with one (log10(0) in _pad_rank), and that run's output
    stays in launcher.log. A run with an environment starts every rank through its rank-env.sh.
    """
    np = int(the_plan["np"])
    # A version the preflight could not read is refused there (release_problems); here it is the newest.
    found = release(run["horovod_version"]) or (999, 0, 0)
    argv = ["horovodrun", "-np", str(np)]
    if the_plan["elastic"]:
        low, high = the_plan["cooldown"]
        argv += ["--min-np", str(the_plan["min_np"]), "--max-np", str(the_plan["max_np"])]
        argv += ["--host-discovery-script", run["discovery_script"]]
        argv += ["--blacklist-cooldown-range", str(low), str(high)]
    else:
        argv += ["-H", the_plan["h"]]
    argv += ["-p", str(run["ssh_port"])]
    # Before 0.20 horovodrun has no -i: ssh logs in with the identity of the container's ssh client
    # configuration, which ssh_trust writes.
    if found >= IDENTITY_OPTION:
        argv += ["-i", str(run["identity_file"])]
    argv += ["--start-timeout", str(run["start_timeout"]), f"--{the_plan['definition']['controller']}"]
    nics = [str(nic) for nic in run["nics"] or []]
    # Horovod puts the interfaces unquoted into a command it runs with shell=True (NCCL_SOCKET_IFNAME=...
    # in gloo_run): only names that cannot mean anything to a shell reach it, whoever reported them.
    bad = [nic for nic in nics if not is_interface_name(nic)]
    if bad:
        raise ValueError(f"the network interface {bad[0]!r} is not {INTERFACE_SHAPE}; horovodrun is not run with it")
    argv += _nic_options(found, nics)
    if np > 1 and run["dir"]:
        argv += ["--output-filename", run["dir"]]
    if boolean(run["verbose"], strict=True):
        argv.append("--verbose")
    loader = ["sh", run["rank_env"]] if run["rank_env"] else []
    extra = [str(arg) for arg in the_plan["definition"]["extra_args"]]
    return argv + extra + _nic_env(found, nics) + loader + run["command"]


# The NCCL check's rank: one allreduce on the GPU of its local rank, which makes NCCL pick its network
# and say which ("Using network IB", "... Socket") with NCCL_DEBUG=INFO. No quotes: horovodrun passes
# the words on through ssh.
NCCL_CHECK_CODE = (
    "import torch, horovod.torch as hvd; hvd.init(); torch.cuda.set_device(hvd.local_rank()); "
    "hvd.allreduce(torch.ones(1).cuda()); hvd.shutdown()"
)
NCCL_CHECK_KEYS = ("ssh_port", "identity_file", "start_timeout", "nics", "horovod_version", "env")
# A torchrun run's check: the same allreduce with torch.distributed's NCCL backend, one process per host on its
# first GPU, meeting at the first host's rendezvous port as the run's ranks do (RANK, WORLD_SIZE, MASTER_* set
# by the check: no torchrun, so no rendezvous store of torchrun's own).
NCCL_TORCH_CHECK_CODE = (
    "import torch, torch.distributed as dist; torch.cuda.set_device(0); dist.init_process_group('nccl'); "
    "t = torch.ones(1).cuda(); dist.all_reduce(t); torch.cuda.synchronize(); dist.destroy_process_group()"
)
# What the NCCL check gives NCCL besides the run's own NCCL_* settings: its log of the network's choice.
NCCL_CHECK_ENV = {"NCCL_DEBUG": "INFO", "NCCL_DEBUG_SUBSYS": "INIT,NET"}


def nccl_check(the_plan: Mapping[str, Any], given: Mapping[str, Any]) -> dict[str, Any]:
    """The preflight's NCCL check (files/horovod_nccl_check.py runs it in the master's container): ``argv``,
    horovodrun with one process on each host of the run (its first address:slots of -H), built for the
    image's Horovod as the run's own command line is, without the run's extra arguments, running
    NCCL_CHECK_CODE; ``env``, the NCCL_* variables of the run's environment (`given`'s ``env``: not secrets,
    and they decide NCCL's choice) with NCCL_CHECK_ENV over them; ``hosts``, the names of those hosts.
    `given` has NCCL_CHECK_KEYS."""
    _require(given, NCCL_CHECK_KEYS, "horovod_nccl_check")
    if the_plan.get("launcher") == "torchrun":
        return _torch_nccl_check(the_plan, given)
    hosts = list(dict.fromkeys(part.rsplit(":", 1)[0] for part in str(the_plan["h"]).split(",") if part))
    one_each = {
        **the_plan,
        "np": len(hosts),
        "h": ",".join(f"{host}:1" for host in hosts),
        "elastic": False,
        "definition": {**the_plan["definition"], "extra_args": []},
    }
    run_given = {**given, "verbose": False, "dir": "", "rank_env": "", "command": ["python3", "-c", NCCL_CHECK_CODE]}
    nccl = {str(k): str(v) for k, v in (given["env"] or {}).items() if str(k).startswith("NCCL_")}
    names = list(dict.fromkeys(str(name) for name in the_plan["rank_hosts"]))
    return {"argv": horovodrun_argv(one_each, run_given), "env": {**nccl, **NCCL_CHECK_ENV}, "hosts": names}


def _torch_nic_env(given: Any, refused: str) -> dict[str, str]:
    """The interfaces for torch.distributed's Gloo and NCCL (GLOO_SOCKET_IFNAME, NCCL_SOCKET_IFNAME), {} for
    none; an interface that is not a name is refused (`refused` says what is then not run)."""
    nics = [str(nic) for nic in given or []]
    bad = [nic for nic in nics if not is_interface_name(nic)]
    if bad:
        raise ValueError(f"the network interface {bad[0]!r} is not {INTERFACE_SHAPE}; {refused}")
    return {"GLOO_SOCKET_IFNAME": ",".join(nics), "NCCL_SOCKET_IFNAME": ",".join(nics)} if nics else {}


def _torch_nccl_check(the_plan: Mapping[str, Any], given: Mapping[str, Any]) -> dict[str, Any]:
    """A torchrun run's NCCL check: ``argvs``, one command per node of the run in node rank order (the master's
    own in its container, the others over the pinned ssh, `given`'s ``ssh``), each one process of
    NCCL_TORCH_CHECK_CODE with its rank, the world size and the rendezvous port; ``env`` and ``hosts`` as
    horovodrun's check has them."""
    if not given.get("ssh"):
        raise ValueError("horovod_nccl_check: a torchrun run's check needs ssh (the pinned ssh command)")
    nodes = the_plan["nodes"]
    nccl = {str(k): str(v) for k, v in (given["env"] or {}).items() if str(k).startswith("NCCL_")}
    env = {**nccl, **NCCL_CHECK_ENV, **_torch_nic_env(given["nics"], "the NCCL check is not run")}
    argvs = []
    for rank, node in enumerate(nodes):
        own = {
            "MASTER_ADDR": str(nodes[0]["address"]),
            "MASTER_PORT": str(the_plan["rdzv_port"]),
            "RANK": str(rank),
            "LOCAL_RANK": "0",
            "WORLD_SIZE": str(len(nodes)),
        }
        if node["name"] == the_plan["master"]:
            argvs.append(["env", *(f"{k}={v}" for k, v in own.items()), "python3", "-c", NCCL_TORCH_CHECK_CODE])
            continue
        # The other hosts get the environment on their command line: ssh passes no environment.
        words = ["env", *(f"{k}={v}" for k, v in {**env, **own}.items()), "python3", "-c", NCCL_TORCH_CHECK_CODE]
        argvs.append([*given["ssh"], str(node["address"]), _quoted(words)])
    return {"argvs": argvs, "env": env, "hosts": [str(node["name"]) for node in nodes]}


# NCCL's line naming the network a communicator uses (src/init.cc: INFO(NCCL_INIT, "Using network %s")):
# IB for InfiniBand and RoCE, Socket for TCP; a plugin's own name otherwise (IBext, AWS Libfabric).
NCCL_NETWORK_RE = re.compile(r"NCCL INFO Using network (?P<network>\S.*?)\s*$")
# Why NCCL left InfiniBand out, as it says it (src/transport/net_ib*.cc, src/misc/ibvwrap.cc).
NCCL_IB_WHY_RE = re.compile(
    r"NET/IB : No device found|NET/IB : No IP interface found|Failed to open libibverbs|NCCL_IB_DISABLE"
)
NCCL_SOCKET_FIX = (
    "NCCL needs the RDMA devices in every container (docker_horovod_rdma: auto passes /dev/infiniband where a host "
    "has it, with IPC_LOCK and an unlimited memlock), libibverbs in the image (rdma-core, or the NIC vendor's "
    "OFED user space) and NCCL_IB_DISABLE unset; NCCL_IB_HCA in horovod_launch_env must name HCAs the hosts have "
    "(ibv_devinfo lists them). To run over TCP knowingly, set horovod_launch_nccl_net_check: false"
)


def nccl_network(answer: Mapping[str, Any], hosts: Sequence[str] = ()) -> dict[str, Any]:
    """The verdict on the NCCL check's answer (``rc``, ``lines``: NCCL's INFO lines, ``tail``: the last lines
    horovodrun printed): ``network`` (the one NCCL named, or ""), ``problem`` ("" when NCCL used a
    network other than sockets on every rank), ``line`` to show, and ``excerpt``, the doctor's lines (a
    heading, then NCCL's lines or the end of the output)."""
    answer = nccl_answer(answer)
    lines = [str(line) for line in answer.get("lines") or []]
    networks = [m["network"] for m in (NCCL_NETWORK_RE.search(line) for line in lines) if m]
    between = f"between {', '.join(map(str, hosts))}" if hosts else "between the hosts"
    tail_lines = [str(line) for line in (answer.get("tail") or [])[-12:]]
    # What the doctor shows: NCCL's lines, else the end of the check's output.
    shown = [
        f"NCCL {between} now (one allreduce, NCCL_DEBUG=INFO), exit status {answer.get('rc')}:",
        *(lines[-12:] or tail_lines),
    ]
    excerpt = "\n".join(lines[-12:])
    if int(answer.get("rc") or 0) != 0 or not networks:
        tail = "\n".join(tail_lines)
        return {
            "excerpt": shown,
            "network": "",
            "problem": (
                f"The NCCL check (one allreduce {between}, NCCL_DEBUG=INFO) "
                + (f"failed with rc {answer.get('rc')}" if int(answer.get("rc") or 0) else "named no network")
                + f"; its output ends:\n{tail or excerpt or '(nothing)'}\nRun it by hand with NCCL_DEBUG=INFO to see "
                "why, or set horovod_launch_nccl_net_check: false to start the run without it."
            ),
            "line": "",
        }
    network = "Socket" if "Socket" in networks else networks[0]
    if network == "Socket":
        said = "\n".join(([line for line in lines if NCCL_IB_WHY_RE.search(line)] or lines)[-12:])
        return {
            "excerpt": shown,
            "network": network,
            "problem": (
                f"NCCL fell back to TCP sockets {between}, though every container sees GPUs and RDMA devices "
                f"(/dev/infiniband): the run would train at socket speed. NCCL said:\n{said}\n{NCCL_SOCKET_FIX}."
            ),
            "line": "",
        }
    line = f"NCCL network {between}: {network} (NCCL: Using network {network})"
    return {"excerpt": shown, "network": network, "problem": "", "line": line}


def run(the_plan: Mapping[str, Any], given: Mapping[str, Any]) -> dict[str, Any]:
    """The run: its name (given, else made from what defines it: the plan's definition, the code - the
    checkout's commit or the bundled example's sha256 - and the master's image), its directory, files and
    command line, and what the report of it needs (RUN_KEYS are given)."""
    _require(given, RUN_KEYS, "horovod_launch_run")
    torchrun = the_plan.get("launcher") == "torchrun"
    if the_plan["code_repo"]:
        code = str(given["code_commit"] or "")
    else:
        code = "" if the_plan["command"] else str(given["example_sha256"])
    name = str(given["name"] or run_id({**the_plan["definition"], "code": code, "image": given["image"]}))
    run_dir = f"{the_plan['runs_dir']}/{name}"
    # The one output directory the role owns on the share (the bundled example's in an elastic run, where
    # rank 0 may be on any host), relative to the share: it is replaced through share_path, never a link.
    output_on_share = ""
    if the_plan["output_dir"]:
        output_dir = the_plan["output_dir"]
    elif the_plan["command"]:
        output_dir = the_plan["workdir"]
    elif the_plan["elastic"]:
        output_on_share = f"outputs/{name}"
        output_dir = f"{the_plan['share_dir']}/{output_on_share}"
    else:
        output_dir = f"{run_dir}/output"
    timeout = int(given["timeout"])
    bundled = ["python3", str(given["example_path"]), "--output-dir", output_dir, *the_plan["example_args"]]
    command = the_plan["command"] or bundled
    if the_plan["code_repo"]:
        code_line = f"{the_plan['code_repo']} at {given['code_version']} ({given['code_commit'] or ''})"
    else:
        code_line = the_plan["workdir"]
    out: dict[str, Any] = {
        "name": name,
        "dir": run_dir,
        "output_dir": output_dir,
        "output_on_share": output_on_share,
        "command": command,
        "rank_env": f"{run_dir}/{RANK_ENV}" if the_plan["definition"]["env_names"] else "",
        # Horovod's elastic run only: a torchrun run's nodes meet at torchrun's rendezvous.
        "discovery_script": f"{run_dir}/{DISCOVERY_SCRIPT}" if the_plan["elastic"] and not torchrun else "",
        "env_file": ENV_FILE.format(name=name),
        "code_commit": str(given["code_commit"] or "") if the_plan["code_repo"] else "",
        "code_line": code_line,
        "timeout": timeout,
        # Polls of one round of the wait (tasks/wait.yml): the run stops itself after its timeout (+60 s to
        # kill it), so a little longer; without a timeout, an hour, and the wait includes itself again.
        "polls": math.ceil((timeout + 120 if timeout > 0 else 3600) / int(given["poll_interval"])) + 1,
        "tail_lines": int(given["tail_lines"]),
        "start_timeout": int(given["start_timeout"]),
        "stall_timeout": int(given["stall_timeout"]),
        **{key: the_plan[key] for key in ("np", "h", "hosts", "rank_hosts", "workdir", "elastic")},
        "launcher": str(the_plan.get("launcher") or LAUNCHERS[0]),
    }
    if torchrun:
        out["torchrun"] = torchrun_spec(the_plan, {**given, **out})
        out["argv"] = ["python3", f"{run_dir}/{TORCHRUN_SCRIPT}", "launch", f"{run_dir}/{TORCHRUN_SPEC}"]
    else:
        out["argv"] = horovodrun_argv(the_plan, {**given, **out})
    return plain(out)


def torchrun_spec(the_plan: Mapping[str, Any], run: Mapping[str, Any]) -> dict[str, Any]:
    """What files/horovod_torchrun.py starts on each node (its ``torchrun.json``, but for ``ssh``, which the
    role adds): one torchrun per node of the plan, in node rank order, the master's own node started there, the
    others over the pinned ssh. A run's nodes meet at the first node's address on the rendezvous port: with
    torchrun's static rendezvous (node rank 0 holds the store on the master port, each node is given its node
    rank), or, for an elastic run, its c10d rendezvous (``--nnodes MIN:MAX``, the store held by the master's
    node, ``is_host`` said to each node rather than guessed from host names, the ranks given out by the
    rendezvous, the workers restarted at most ``max_restarts`` times, a node that left started again after the
    cooldown). The interfaces go to Gloo and NCCL by their variables; a run with an environment starts every
    rank through its rank-env.sh."""
    nodes = the_plan["nodes"]
    master = str(the_plan["master"])
    env = {
        "HOROVOD_LAUNCH_RUN_DIR": run["dir"],
        OUTPUT_ENV: run["output_dir"],
        **_torch_nic_env(run["nics"], "torchrun is not run with it"),
    }
    address, port = str(nodes[0]["address"]), str(the_plan["rdzv_port"])
    elastic = bool(the_plan["elastic"])
    if elastic:
        # Host addresses are host names or IPv4 (horovod_hosts): no brackets needed.
        torchrun = ["torchrun", "--nnodes", f"{the_plan['min_nodes']}:{len(nodes)}", "--rdzv_backend", "c10d"]
        torchrun += ["--rdzv_endpoint", f"{address}:{port}", "--rdzv_id", str(run["name"])]
        torchrun += ["--max_restarts", str(the_plan["max_restarts"])]
    else:
        torchrun = ["torchrun", "--nnodes", str(len(nodes)), "--master_addr", address]
        torchrun += ["--master_port", port, "--max_restarts", "0"]
    found = release(run["torch_version"])
    if found is not None and found < TORCH_STD_FIXED:
        torchrun += NO_REDIRECTS
    loader = ["sh", run["rank_env"]] if run["rank_env"] else []

    def args(index: int) -> list[str]:
        if elastic:
            return ["--rdzv_conf", f"is_host={'true' if index == 0 else 'false'}"]
        return ["--node_rank", str(index)]

    return {
        "run_dir": run["dir"],
        "self": f"{run['dir']}/{TORCHRUN_SCRIPT}",
        "workdir": run["workdir"],
        "grace": TORCHRUN_GRACE,
        "elastic": elastic,
        "cooldown": [int(value) for value in the_plan["cooldown"]],
        "nodes": [{**node, "local": node["name"] == master, "args": args(index)} for index, node in enumerate(nodes)],
        "env": env,
        "torchrun": torchrun,
        "command": [*loader, *run["command"]],
    }


def _quoted(command: Iterable[str]) -> str:
    return " ".join(shlex.quote(str(word)) for word in command)


def _result(run: Mapping[str, Any], started_now: bool, **more: Any) -> dict[str, Any]:
    """horovod_launch_result: what every run has, and `more`."""
    fixed = {key: run[key] for key in ("np", "h", "hosts", "rank_hosts", "command", "workdir")}
    return {"run_name": run["name"], "run_dir": run["dir"], "started_now": started_now, **fixed,
            "launcher_log": f"{run['dir']}/launcher.log", **more}  # fmt: skip


def follow_command(master: Mapping[str, Any], path: str) -> str:
    """``ssh [-p PORT] [USER@]HOST tail -f PATH``: the master's log followed from the controller, with the
    inventory's connection to the master (``host``, ``user``, ``port``)."""
    return ssh_command(master, command=["tail", "-f", path])


def _running(
    run: Mapping[str, Any], started_now: bool, up: Mapping[str, Any], master: Mapping[str, Any] | None
) -> dict[str, Any]:
    """The report of a run that goes on (horovod_launch_wait false), from horovod_run.py's ``up`` answer."""
    name, run_dir = run["name"], run["dir"]
    problem = ""
    if up.get("state") != "up":
        unreachable = f", unreachable: {json.dumps(up['errors'])}" if up.get("errors") else ""
        problem = (
            f"Run {name}: only ranks {', '.join(str(r) for r in up.get('ranks') or []) or 'none'} of {run['np']} "
            f"were seen running within {run['start_timeout'] + 30} s (by host: {json.dumps(up.get('by_host'))}"
            f"{unreachable}). Read {run_dir}/launcher.log; stop it with playbooks/stop.yml "
            f"-e horovod_run_name={name}."
        )
    result = _result(run, started_now, state="running", rc=None, succeeded=None, ranks_up=up.get("ranks") or [])
    lines = [
        f"Run {name} {'started' if started_now else 'runs'}: all {run['np']} ranks run on "
        f"{', '.join(dict.fromkeys(run['rank_hosts']))}; not waiting for it.",
        (
            f"follow it from here: {follow_command(master, f'{run_dir}/launcher.log')} "
            f"(on {master['name']}; each rank's output: {run_dir}/rank.<N>/)"
            if master
            else f"follow it on the master: tail -f {run_dir}/launcher.log (ranks: {run_dir}/rank.<N>/)"
        ),
        "all runs: ansible-playbook playbooks/status.yml -i INVENTORY",
        f"stop it: ansible-playbook playbooks/stop.yml -i INVENTORY -e horovod_run_name={name}",
    ]
    return {"problem": problem, "result": result, "lines": lines, "failure": "", "diagnose": False}


# What horovodrun, Gloo and NCCL print when the hosts cannot reach each other (Horovod 0.28.1:
# runner/launch.py's start timeout, common/gloo/http_store.cc's rendezvous wait, http_server.py's KVStore):
# such a failure, or a run stopped by its own time limit, is worth the doctor's look at the hosts.
UNREACHED_RE = re.compile(
    r"Timed out waiting for|Wait timeout after|KVStore ERROR|Connection refused|Connection timed out|"
    r"No route to host|connectFullMesh|Connect timeout|NCCL error.*(?:remote process exited|unhandled system error)"
)


def _stalled(run: Mapping[str, Any], started_now: bool, end: Mapping[str, Any]) -> dict[str, Any]:
    """The report of a run whose logs did not grow for horovod_launch_stall_timeout: a failure the doctor
    explains, the run left running (it may be quiet on purpose; playbooks/stop.yml ends it)."""
    name, run_dir = run["name"], run["dir"]
    quiet = int(end.get("quiet_s") or 0)
    result = _result(
        run, started_now, state="stalled", rc=None, succeeded=False, stalled=True, quiet_s=quiet,
        code_commit=run["code_commit"], output_dir=run["output_dir"],
    )  # fmt: skip
    lines = [
        f"Run {name}: no output for {quiet} s (horovod_launch_stall_timeout {run['stall_timeout']} s); "
        "it is left running",
        f"np {run['np']} on {', '.join(dict.fromkeys(run['rank_hosts']))} (-H {run['h']})",
        f"command: {_quoted(run['command'])} (in {run['workdir']})",
        f"logs: {result['launcher_log']}" + (f", {run_dir}/rank.<N>/{{stdout,stderr}}" if run["np"] > 1 else ""),
    ]
    failure = (
        f"Run {name} printed nothing for {quiet} s (horovod_launch_stall_timeout: {run['stall_timeout']}) and still "
        f"runs; last seen: {end.get('line', '')}. It is left running: stop it with ansible-playbook "
        f"playbooks/stop.yml -i INVENTORY -e horovod_run_name={name}, or, for a run that is quiet that long on "
        "purpose (output buffered, a long step between prints), raise horovod_launch_stall_timeout (0: never) "
        "and start the role again to follow it. All logs: " + run_dir
    )
    return {"problem": "", "result": result, "lines": lines, "failure": failure, "diagnose": True}


def _ended(
    run: Mapping[str, Any], started_now: bool, end: Mapping[str, Any], info: Mapping[str, Any]
) -> dict[str, Any]:
    """The report of a run that was waited for: `end` is the last answer of files/horovod_progress.py,
    `info` what multinode.horovod.horovod_run_info read in the run's directory after it."""
    name, run_dir = run["name"], run["dir"]
    if end.get("stalled") and not end.get("ended"):
        return _stalled(run, started_now, end)
    if not end.get("ended"):
        return {
            "problem": f"Run {name} did not end within horovod_launch_timeout ({run['timeout']} s) and the time to "
            f"stop it; last seen: {end.get('line', '')}.",
            "result": {},
            "lines": [],
            "failure": "",
            "diagnose": False,
        }
    rc, stopped = int(end["rc"]), bool(end.get("stopped"))
    timed_out = rc == 124 and run["timeout"] > 0
    rank = info.get("failed_rank") if rc != 0 else None
    hosts = run["rank_hosts"]
    failed_host = hosts[rank] if rank is not None and rank < len(hosts) else None
    sets = info.get("host_sets") or []
    result = _result(
        run,
        started_now,
        state="stopped" if stopped else ("finished" if rc == 0 else "failed"),
        rc=rc,
        succeeded=rc == 0,
        stopped=stopped,
        timed_out=timed_out,
        duration_s=int(end.get("duration_s") or 0),
        # Seconds between the end of the run and the role noticing it (meaningful for a run it waited for).
        end_seen_after_s=float(end.get("end_seen_after_s") or 0),
        code_commit=run["code_commit"],
        output_dir=run["output_dir"],
        rank_logs=[f"{run_dir}/rank.N/stdout", f"{run_dir}/rank.N/stderr"] if run["np"] > 1 else [],
        host_sets=sets,
        elastic=bool(info.get("elastic")),
        failed_rank=rank,
        failed_host=failed_host,
    )
    if rc == 0:
        verdict = "succeeded"
    elif timed_out:
        verdict = "stopped by the timeout"
    else:
        verdict = "stopped (playbooks/stop.yml)" if stopped else "failed"
    again = (
        f" (its end seen {result['end_seen_after_s']} s after it)" if started_now else " (started earlier, not again)"
    )
    elastic = (
        "elastic, host sets: " + " -> ".join(", ".join(s["hosts"]) or "none" for s in sets) + f" ({run_dir}/hosts.log)"
        if result["elastic"]
        else "not elastic"
    )
    rank_logs = f", {run_dir}/rank.<N>/{{stdout,stderr}}" if run["np"] > 1 else ""
    lines = [
        f"Run {name}: {verdict}, rc {rc}, after {result['duration_s']} s{again}",
        f"np {run['np']} on {', '.join(dict.fromkeys(hosts))} (-H {run['h']})",
        f"command: {_quoted(run['command'])} (in {run['workdir']})",
        elastic,
        f"logs: {result['launcher_log']}{rank_logs}",
        f"code: {run['code_line']}",
    ]
    failure = ""
    if rc != 0:
        if timed_out:
            how = f"was stopped after horovod_launch_timeout ({run['timeout']} s)"
        elif stopped:
            how = "was stopped by playbooks/stop.yml (horovod_launch_rerun: true starts it again)"
        else:
            how = "failed"
        who = ""
        if rank is not None:
            code = info.get("failed_exit_code")
            who = f"; rank {rank} (on {failed_host}) failed first" + (
                f" with exit code {code}" if code is not None else ""
            )
        if info.get("rank_output"):
            tail = f"Last lines of rank {rank}'s output:\n{info['rank_output']}"
        else:
            tail = f"Last lines of {result['launcher_log']}:\n{info.get('launcher_tail') or ''}"
        launcher = run.get("launcher") or LAUNCHERS[0]
        failure = f"Run {name} {how}: {launcher} exited with rc {rc}{who}.\n{tail}\nAll logs: {run_dir}"
    seen = f"{info.get('launcher_tail') or ''}\n{info.get('rank_output') or ''}"
    diagnose = rc != 0 and not stopped and (timed_out or bool(UNREACHED_RE.search(seen)))
    return {"problem": "", "result": result, "lines": lines, "failure": failure, "diagnose": diagnose}


def report(
    run: Mapping[str, Any],
    started_now: Any,
    *,
    up: Mapping[str, Any] | None = None,
    end: Mapping[str, Any] | None = None,
    info: Mapping[str, Any] | None = None,
    master: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """``{problem, result, lines, failure}`` of a run (the output of :func:`run`): with `up`, one that goes on
    (with `master`, ``{name, host, user, port}``, how to follow it from the controller); with `end` and
    `info`, one that was waited for. ``problem`` (the run is not where it should be) stops the role;
    ``result`` is horovod_launch_result, ``lines`` the summary, ``failure`` the failed run's message."""
    started = boolean(started_now, strict=True)
    if up is not None:
        return plain(_running(run, started, up, master))
    if end is None or info is None:
        raise ValueError("horovod_launch_report: give up, or end and info")
    return plain(_ended(run, started, end, info))


def _duration(seconds: Any) -> str:
    if not isinstance(seconds, int) or isinstance(seconds, bool):
        return "-"
    days, rest = divmod(seconds, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    if days:
        return f"{days}d{hours:02d}h{minutes:02d}m"
    if hours:
        return f"{hours}h{minutes:02d}m{secs:02d}s"
    return f"{minutes}m{secs:02d}s" if minutes else f"{secs}s"


def _host_names(manifest: object) -> dict[str, str]:
    """``{address: inventory name}`` of a run's hosts, from its manifest (none for a run without one)."""
    hosts = manifest.get("hosts") if isinstance(manifest, Mapping) else None
    return {
        str(h["address"]): str(h["name"])
        for h in hosts or []
        if isinstance(h, Mapping) and h.get("address") and h.get("name")
    }


def _in_words(address: str, names: Mapping[str, str]) -> str:
    """An address (``ADDRESS`` or ``ADDRESS:SLOTS``) as the user named its host: ``node-c (10.0.0.3)``,
    ``node-c:2 (10.0.0.3)``; the address alone where the run's manifest does not name it."""
    host, slots = address.rsplit(":", 1) if address.count(":") == 1 else (address, "")
    name = names.get(host)
    if not name:
        return address
    return f"{name}:{slots} ({host})" if slots else f"{name} ({host})"


def run_status(runs: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The runs horovod_run.py's ``status`` reported, each with failed_rank, failed_host (its address) and a
    one-line summary, which names hosts as the inventory does (the run's manifest maps the addresses)."""
    out = []
    for given in runs or []:
        if not isinstance(given, Mapping) or "name" not in given or "state" not in given:
            raise ValueError(f"horovod_run_status: {given!r} is not a run of the status helper")
        item = dict(given)
        names = _host_names(given.get("manifest"))
        rank = failed_rank(item.pop("log_tail", "")) if given["state"] == "failed" else None
        hosts = list(given.get("rank_hosts") or [])
        item["failed_rank"] = rank
        item["failed_host"] = hosts[rank] if rank is not None and rank < len(hosts) else None
        parts = [f"{given['name']}: {given['state']}", _duration(given.get("duration_s"))]
        if given.get("rc") is not None:
            parts.append(f"rc {given['rc']}")
        if rank is not None:
            on = f" (on {_in_words(str(item['failed_host']), names)})" if item["failed_host"] else ""
            parts.append(f"rank {rank} failed first{on}")
        if given.get("elastic"):
            now = ", ".join(_in_words(str(h), names) for h in given.get("current_hosts") or []) or "none"
            parts.append(
                f"elastic, hosts {'now' if given['state'] == 'running' else 'last'}: {now} "
                f"({given.get('host_sets', 0)} host sets)"
            )
        last = given.get("last_line") or ""
        item["summary"] = ", ".join(parts) + (f" | {last}" if last else "")
        out.append(item)
    return plain(out)


# A full commit id: SHA-1 (40 hex digits) or SHA-256 (64). A shorter prefix is not a pin: it can become
# ambiguous as the repository grows, and git ls-remote cannot confirm it.
FULL_COMMIT = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")
REF_PROBLEMS = {
    "branch": "is a branch: it moves with new commits, so nodes and re-runs could run other code",
    "ambiguous": "names both a tag and a branch; write refs/tags/{ref} (or refs/heads/...) to say which",
    "missing": "is neither a tag nor a branch (a shortened commit id is not enough either)",
}


def code_ref_kind(ls_remote: str, version: str) -> str:
    """``commit`` (a full commit id, by its shape), ``tag``, ``branch``, ``ambiguous`` (a tag and a branch of
    that name) or ``missing``, from the output of ``git ls-remote --tags --heads REPO``."""
    ref = version.strip()
    if FULL_COMMIT.fullmatch(ref):
        return "commit"
    refs = {
        parts[1].strip().removesuffix("^{}")
        for parts in (line.split("\t") for line in ls_remote.splitlines())
        if len(parts) == 2
    }
    if ref.startswith("refs/tags/"):
        return "tag" if ref in refs else "missing"
    if ref.startswith("refs/heads/"):
        return "branch" if ref in refs else "missing"
    tag, branch = f"refs/tags/{ref}" in refs, f"refs/heads/{ref}" in refs
    if tag and branch:
        return "ambiguous"
    if tag:
        return "tag"
    return "branch" if branch else "missing"


def remote_tag_commit(ls_remote: str, version: str) -> str:
    """The commit the tag `version` points to in the output of ``git ls-remote`` (an annotated tag's
    peeled ``^{}`` line first); "" when it has no such tag."""
    name = version if version.startswith("refs/tags/") else f"refs/tags/{version}"
    commits = {}
    for line in ls_remote.splitlines():
        commit, _sep, ref = line.partition("\t")
        commits[ref.strip()] = commit.strip()
    return commits.get(name + "^{}") or commits.get(name, "")


def checkout_problem(checkout: Mapping[str, Any], ls_remote: str, kind: str, given: Mapping[str, Any]) -> str:
    """What stops the checkout of horovod_launch_code_repo into horovod_launch_code_dest, from what the
    directory holds (the module code_checkout_info): "" for a new or empty directory, or a checkout of that
    repository whose tag `version` is where the repository has it (or `force`). `given`: repo, version,
    dest, force."""
    repo, version, dest = str(given["repo"]), str(given["version"]), str(given["dest"])
    if not checkout["exists"] or (checkout["is_dir"] and not checkout["entries"]):
        return ""
    name = str(strip_slash(repo)).rsplit("/", 1)[-1].removesuffix(".git") or "code"
    base = str(strip_slash(dest))
    elsewhere = f"{base}-{name}" if not base.endswith(name) else f"{base}-2"
    own = (
        f"Each repository needs a directory of its own: set horovod_launch_code_dest to a new or empty one "
        f"(e.g. {elsewhere})"
    )
    if not checkout["is_dir"]:
        return f"horovod_launch_code_dest ({dest}) is a file, not a directory. {own}."
    if not checkout["git"]:
        return (
            f"horovod_launch_code_dest ({dest}) holds {checkout['entries']} entries but no git checkout, so "
            f"{repo} cannot be checked out there. {own}, or empty this one."
        )
    origin = str(checkout.get("origin") or "")
    # ansible.builtin.git clones a path as file://PATH, and takes that origin for the same repository.
    if origin and origin not in (repo, f"file://{repo}"):
        return (
            f"horovod_launch_code_dest ({dest}) is a checkout of {origin}, not of horovod_launch_code_repo "
            f"({repo}). {own}; if it is the same repository at a new address, remove {dest} first."
        )
    had, has = str(checkout.get("tag_commit") or ""), remote_tag_commit(ls_remote, version)
    if kind == "tag" and had and has and had != has and not boolean(given["force"], strict=True):
        return (
            f"The tag {version} of {repo} points to {has}, but the checkout in {dest} has it at {had}: the tag "
            f"was moved, so the code it names changed. Pin the commit you mean (horovod_launch_code_version: "
            f"{has}, or {had}), or set horovod_launch_code_force: true to take the tag's new commit (it also "
            "discards local changes in the checkout)."
        )
    return ""


def code_ref(  # noqa: PLR0917 - the filter horovod_code_ref: Jinja passes its arguments by position
    ls_remote: Any,
    version: Any,
    repo: Any = "",
    allow_branch: Any = False,
    checkout: Any = None,
    dest: Any = "",
    force: Any = False,
) -> dict[str, str]:
    """``{kind, problem}`` of horovod_launch_code_version (:func:`code_ref_kind`); ``problem`` is empty for
    a tag or a full commit id, and for a branch when `allow_branch`, and then, given what the directory
    `dest` holds (`checkout`), what :func:`checkout_problem` finds."""
    if not isinstance(ls_remote, str) or not isinstance(version, str):
        raise ValueError("horovod_code_ref: expects the text of git ls-remote and a ref name")
    kind = code_ref_kind(ls_remote, version)
    if kind in ("tag", "commit") or (kind == "branch" and boolean(allow_branch, strict=True)):
        found = {"repo": repo, "version": version, "dest": dest, "force": force}
        return {"kind": kind, "problem": checkout_problem(checkout, ls_remote, kind, found) if checkout else ""}
    how = REF_PROBLEMS[kind].format(ref=version)
    hint = ", or set horovod_launch_code_allow_branch: true to follow the branch" if kind == "branch" else ""
    problem = (
        f"horovod_launch_code_version is '{version}', which in {repo} {how}. Set it to a tag or a full commit id "
        f"(git rev-parse {version} in a clone prints it){hint}."
    )
    return {"kind": kind, "problem": problem}
