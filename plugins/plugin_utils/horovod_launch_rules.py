# Copyright: multinode.horovod contributors
# SPDX-License-Identifier: GPL-3.0-or-later
"""horovod_launch's controller-side input rules: what its variables may be, before any host is read.

``problems(inputs)`` takes the role's variables by their full names and returns ``(variable, message)``
for each problem (see plugins/filter/role_rules.py). The role checks them first in tasks/assert.yml; the
site's gate checks the same rules on what it will hand to the role. What only the hosts can tell (the
container runs, the interfaces exist, /dev/shm is large enough) is checked by the preflight
(tasks/checks.yml). A variable missing from ``inputs`` is not checked (the entry points that need no
host list, status and stop, pass none); the host list, when given, must not be empty.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ansible_collections.multinode.horovod.plugins.module_utils import defaults
from ansible_collections.multinode.horovod.plugins.module_utils.horovod_hosts import allocate, host_errors, slot_count
from ansible_collections.multinode.horovod.plugins.module_utils.horovod_launch import LAUNCHERS, code_dest
from ansible_collections.multinode.horovod.plugins.module_utils.horovod_manifest import compare_names
from ansible_collections.multinode.horovod.plugins.module_utils.jobs import invalid_patterns
from ansible_collections.multinode.horovod.plugins.module_utils.numbers import shown, whole
from ansible_collections.multinode.horovod.plugins.module_utils.paths import is_inside, path_problem
from ansible_collections.multinode.horovod.plugins.module_utils.values import container_name_problem, switch
from ansible_collections.multinode.horovod.plugins.module_utils.worker_reports import INTERFACE_SHAPE, is_interface_name
from ansible_collections.multinode.horovod.plugins.plugin_utils.code_paths import (
    code_path,
    home_dir,
    leads_onto,
    places,
    resolve,
)

Problems = list[tuple[str, str]]

P = "horovod_launch_"
NAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
# A run name is a directory name (and part of file names beside it): well below the 255 bytes of one.
RUN_NAME_MAX = 100
ENV_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
SIZE_RE = re.compile(r"[0-9]+(\.[0-9]+)? ?[KMGTPEkmgtpe]?B?")
CONTROLLERS = ("gloo", "mpi")
FRAMEWORKS = ("pytorch", "tensorflow", "mxnet")
MAX_PORT = 65535

# Whole numbers that must be 1 or more, and what each one counts.
POSITIVE = {
    f"{P}poll_interval": "the seconds between two progress lines",
    f"{P}start_timeout": "the seconds horovodrun waits for every process to start",
    f"{P}ssh_connect_timeout": "the seconds each preflight ssh may take to connect",
    f"{P}failure_tail_lines": "the lines of the failing rank's output to show",
    f"{P}stop_grace": "the seconds a stopped run's processes get to end before they are killed",
}

# Directories on the share, below horovod_launch_share_dir or horovod_launch_artifact_dir: every rank, on
# every host, reads or writes them at the same path. code_dest must be below one, not the directory itself
# (a checkout would take it over).
ON_THE_SHARE = (f"{P}runs_dir", f"{P}example_dir", f"{P}code_dest", f"{P}workdir", f"{P}output_dir")

# horovodrun's options and how many values each takes: Horovod 0.28.1's parser (horovod/runner/launch.py,
# parse_args) and argparse's own -h/--help. argparse also takes a unique prefix of a long option
# (--ssh-p for --ssh-port) and a one-letter option's value glued on (-p22), so the reserved options
# below are found through this list, not by their names alone.
HOROVODRUN_OPTIONS: dict[str, int] = {
    option: count
    for count, options in (
        (0, "-h --help -v --version -cb --check-build --disable-cache"),
        (1, "-np --num-proc --start-timeout --output-filename --config-file --network-interfaces --network-interface"),
        (0, "--verbose"),
        (1, "-p --ssh-port -i --ssh-identity-file --fusion-threshold-mb --cycle-time-ms --cache-capacity"),
        (
            0,
            "--hierarchical-allreduce --no-hierarchical-allreduce --hierarchical-allgather "
            "--no-hierarchical-allgather --torus-allreduce --no-torus-allreduce --autotune "
            "--no-autotune",
        ),
        (
            1,
            "--autotune-log-file --autotune-warmup-samples --autotune-steps-per-sample "
            "--autotune-bayes-opt-max-samples --autotune-gaussian-process-noise --min-np "
            "--min-num-proc --max-np --max-num-proc --slots-per-host --elastic-timeout --reset-limit",
        ),
        (2, "--blacklist-cooldown-range"),
        (1, "--timeline-filename"),
        (0, "--timeline-mark-cycles --no-timeline-mark-cycles --no-stall-check --stall-check"),
        (1, "--stall-check-warning-time-seconds --stall-check-shutdown-time-seconds"),
        (0, "--mpi-threads-disable --no-mpi-threads-disable --tcp"),
        (1, "--mpi-args --binding-args --num-nccl-streams --thread-affinity --gloo-timeout-seconds --log-level"),
        (
            0,
            "--log-with-timestamp --log-without-timestamp -prefix-timestamp "
            "--prefix-output-with-timestamp --log-hide-timestamp --no-log-hide-timestamp",
        ),
        (1, "-H --hosts -hostfile --hostfile --host-discovery-script"),
        (0, "--gloo --mpi --jsrun"),
    )
    for option in options.split()
}
# A YAML file that can set every option, the reserved ones included.
CONFIG_FILE = "--config-file"
# horovodrun options this role sets from its own variables.
RESERVED_ARGS = {
    option: f"{P}{variable}"
    for variable, options in (
        ("np", "-np --num-proc"),
        ("hosts", "-H --hosts -hostfile --hostfile --slots-per-host"),
        ("ssh_port", "-p --ssh-port"),
        ("ssh_identity_file", "-i --ssh-identity-file"),
        ("start_timeout", "--start-timeout"),
        ("controller", "--gloo --mpi"),
        ("network_interfaces", "--network-interfaces --network-interface"),
        ("runs_dir and horovod_launch_run_name", "--output-filename"),
        ("verbose", "--verbose"),
        ("min_np", "--min-np --min-num-proc"),
        ("max_np", "--max-np --max-num-proc"),
        ("elastic", "--host-discovery-script"),
        ("elastic_cooldown", "--blacklist-cooldown-range"),
    )
    for option in options.split()
}
# Root on any worker may change the share (no_root_squash), so what every rank executes must not come
# from it (docs/architecture.md, "What every node executes, only the master writes"): the master's
# root runs it in the container that holds the cluster's key. Programs that run the script named by
# their first word that is not an option:
INTERPRETER_RE = re.compile(r"(python|pypy)[0-9.]*|(ba|da|z)?sh")
# The variables of horovod_launch_env from which a rank loads code are code_paths.CODE_PATH_VARIABLES
# (PATH, LD_PRELOAD and the like are refused whatever they hold: RESERVED_ENV).
# GNU env's options that take a value (-u NAME, -C DIR, -S STRING), short and long.
ENV_VALUED = {"-u": "-u", "--unset": "-u", "-C": "-C", "--chdir": "-C", "-S": "-S", "--split-string": "-S"}

# Names horovod_launch_env may not set, by group, with why and the fix: each rank loads the environment
# after horovodrun set its own, so these would change how ranks are reached, loaded or told apart. A
# name ending in "*" stands for every name it begins. (Horovod 0.28.1: horovod/runner/gloo_run.py
# create_slot_env_vars and create_run_env_vars; common/util/secret.py.)
REMOVE = "remove it"
RESERVED_ENV: tuple[tuple[tuple[str, ...], str, str], ...] = (
    (("PATH",), "it decides which ssh runs, and the ranks must run the ssh wrapper that pins the host keys", REMOVE),
    (("LD_PRELOAD", "LD_AUDIT"), "it loads code of its own into every program of the run", REMOVE),
    (("BASH_ENV", "ENV"), "it names a script every shell of the run executes first", REMOVE),
    (("PYTHONHOME",), "it replaces the Python library of the image that every rank runs", REMOVE),
    (
        ("OMPI_MCA_plm_*", "OMPI_MCA_orte_rsh_*", "PRTE_MCA_plm_*"),
        "it changes how OpenMPI and PRRTE start the remote ranks (the pinning ssh wrapper)",
        REMOVE,
    ),
    (("HOROVOD_LAUNCH_RUN_DIR",), "the role sets it to mark the run's processes (status, stop, timeout)", REMOVE),
    (
        ("HOROVOD_LAUNCH_OUTPUT_DIR",),
        "the role sets it to the directory the run writes, which the preflight checked",
        f"set {P}output_dir instead",
    ),
    (
        (
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
            "HOROVOD_ELASTIC",
            "_HOROVOD_SECRET_KEY",
            "HOROVOD_SECRET_KEY",
        ),
        "horovodrun sets it for every rank (which rank it is, where the ranks meet, the run's secret)",
        REMOVE,
    ),
    (
        ("HOROVOD_GLOO_IFACE", "NCCL_SOCKET_IFNAME"),
        "horovodrun sets it for every rank from the network interfaces",
        f"list them in {P}network_interfaces instead",
    ),
)


# What torchrun sets for every rank of a torchrun run (torch/distributed/run.py and the elastic agent), and the
# interfaces' variables the role sets from horovod_launch_network_interfaces.
TORCHRUN_RESERVED_ENV: tuple[tuple[tuple[str, ...], str, str], ...] = (
    (
        (
            "RANK",
            "LOCAL_RANK",
            "WORLD_SIZE",
            "LOCAL_WORLD_SIZE",
            "GROUP_RANK",
            "GROUP_WORLD_SIZE",
            "ROLE_RANK",
            "ROLE_NAME",
            "ROLE_WORLD_SIZE",
            "MASTER_ADDR",
            "MASTER_PORT",
            "TORCHELASTIC_*",
        ),
        "torchrun sets it for every rank (which rank it is, where the ranks meet)",
        REMOVE,
    ),
    (
        ("PET_*",),
        "torchrun reads its options' defaults from PET_<OPTION> (torch/distributed/argparse_util.py), but the "
        "run's environment is loaded by each rank, after torchrun started, so it would not reach torchrun",
        "remove it; the role's variables set torchrun's options (horovod_launch_hosts, horovod_launch_rdzv_port)",
    ),
    (
        ("GLOO_SOCKET_IFNAME",),
        "the role sets it for every rank of a torchrun run from the network interfaces",
        f"list them in {P}network_interfaces instead",
    ),
)


def _reserved_env(name: str, launcher: str = "horovodrun") -> str | None:
    """Why horovod_launch_env may not set `name`, and the fix (RESERVED_ENV, and TORCHRUN_RESERVED_ENV for a
    torchrun run); None when it may."""
    for names, why, fix in (*RESERVED_ENV, *(TORCHRUN_RESERVED_ENV if launcher == "torchrun" else ())):
        if any(name == n or (n.endswith("*") and name.startswith(n[:-1])) for n in names):
            return f"{why}; {fix}"
    return None


# Horovod's bounds of --blacklist-cooldown-range (horovod/runner/elastic/discovery.py).
COOLDOWN_MIN, COOLDOWN_MAX = 1, 3600

_ABSENT = object()


def _hosts(inputs: Mapping[str, Any]) -> tuple[Problems, int | None]:
    """The host list's problems, and its total of slots when it is valid."""
    hosts = inputs.get(f"{P}hosts", _ABSENT)
    if hosts is _ABSENT:
        return [], None
    errors = host_errors(hosts)
    if errors:
        return [(f"{P}hosts", error) for error in errors], None
    return [], sum(slot_count(host["slots"]) or 0 for host in hosts)


def _np(inputs: Mapping[str, Any], total: int | None) -> Problems:
    value = inputs.get(f"{P}np", _ABSENT)
    if value is _ABSENT:
        return []
    np = whole(value)
    if np is None or np < 0:
        return [
            (
                f"{P}np",
                f"{shown(value)} is not a whole number of 0 or more; give the number of processes (0: all slots)",
            )
        ]
    if total is not None and np > total:
        hosts = inputs[f"{P}hosts"]
        slots = ", ".join(f"{host['name']}: {slot_count(host['slots'])}" for host in hosts)
        plural = "s" if total != 1 else ""
        return [
            (
                f"{P}np",
                f"{np} is more than the {total} slot{plural} of the hosts ({slots}); lower it (0 means all slots) "
                "or give the hosts more slots",
            )
        ]
    return []


def _whole_at_least(inputs: Mapping[str, Any], name: str, minimum: int, what: str) -> tuple[Problems, int | None]:
    """The problem of a whole-number input below `minimum` (none when absent), and the number when sound."""
    value = inputs.get(name, _ABSENT)
    if value is _ABSENT:
        return [], None
    number = whole(value)
    if number is None or number < minimum:
        return [(name, f"{shown(value)} is not a whole number of {minimum} or more; set it to {what}")], None
    return [], number


def _elastic_settings(inputs: Mapping[str, Any]) -> tuple[Problems, dict[str, int]]:
    """The types of min/max np and the cooldown range; the bounds given (> 0)."""
    out: Problems = []
    bounds: dict[str, int] = {}
    for name, what in (("min_np", "the fewest processes"), ("max_np", "the most processes")):
        problem, number = _whole_at_least(inputs, f"{P}{name}", 0, f"{what} of an elastic run (0: the default)")
        out += problem
        if number:
            bounds[name] = number
    cooldown = inputs.get(f"{P}elastic_cooldown", _ABSENT)
    if cooldown is not _ABSENT:
        numbers = [whole(v) for v in cooldown] if isinstance(cooldown, list | tuple) and len(cooldown) == 2 else []
        if len(numbers) != 2 or None in numbers or not COOLDOWN_MIN <= numbers[0] <= numbers[1] <= COOLDOWN_MAX:
            out.append(
                (
                    f"{P}elastic_cooldown",
                    f"{shown(cooldown)} is not [lowest, highest] seconds with {COOLDOWN_MIN} <= lowest <= highest "
                    f"<= {COOLDOWN_MAX} (horovodrun's --blacklist-cooldown-range), e.g. [10, 300]",
                )
            )
    return out, bounds


def _flag(value: Any) -> Any:
    """A boolean as Ansible's ``bool`` type reads one (``true``, ``no``, ``1``...); anything else as it is."""
    flag = switch(value)
    return value if flag is None else flag


def _elastic(inputs: Mapping[str, Any], total: int | None) -> Problems:
    """An elastic run's settings: Gloo, min np <= np <= max np <= the slots, a cooldown range Horovod takes."""
    out, bounds = _elastic_settings(inputs)
    elastic = _flag(inputs.get(f"{P}elastic", _ABSENT))
    if elastic is _ABSENT or elastic is False:
        return out
    if not isinstance(elastic, bool):
        return [*out, (f"{P}elastic", f"{shown(elastic)} is not true or false")]
    if inputs.get(f"{P}controller", "gloo") != "gloo":
        out.append(
            (
                f"{P}elastic",
                "Horovod runs elastic jobs with Gloo only; set horovod_launch_controller: gloo or "
                "horovod_launch_elastic: false",
            )
        )
    np = whole(inputs.get(f"{P}np", 0)) or total
    low, high = bounds.get("min_np"), bounds.get("max_np") or total
    if low is not None and np is not None and low > np:
        out.append(
            (f"{P}min_np", f"{low} is more than the {np} processes the run starts with ({P}np, 0: all slots); lower it")
        )
    if high is not None and np is not None and high < np:
        out.append((f"{P}max_np", f"{high} is fewer than the {np} processes the run starts with ({P}np); raise it"))
    if high is not None and total is not None and high > total:
        out.append(
            (
                f"{P}max_np",
                f"{high} is more than the {total} slots of {P}hosts; a run cannot grow beyond the hosts the "
                "discovery script lists (raise their slots or lower it)",
            )
        )
    return out


# What each mode that trusts the workers lets root on a worker do, and the one decision that allows it
# (SECURITY.md, "Trusting the workers"; a later launcher or mode with the same property uses it too).
TRUST = f"{P}trust_workers"
TRUST_FIX = (
    "or, if root on every worker may be root in the master's container, say so once: horovod_trust_workers: "
    f"true (site.yml; the role's own variable is {TRUST})"
)
TRUSTING_MODES = {
    f"{P}controller": (
        "mpi",
        "OpenMPI starts its daemons from the workers too, so every node holds a key that logs in to every "
        "container as root (site.yml turns on ssh_trust_mesh): root on any worker can then log in to the "
        "master's container as root; use horovod_launch_controller: gloo",
    ),
    f"{P}elastic": (
        True,
        "Horovod's elastic rendezvous in horovodrun on the master unpickles whatever a host that reaches it "
        "sends (PUT /worker_addresses/..., cloudpickle.loads, no authentication), and so does torchrun's c10d "
        "rendezvous with the state any client of its store on the master writes (pickle.loads, no "
        "authentication), so root on any worker can run code as root in the master's container; use "
        "horovod_launch_elastic: false",
    ),
}


def _trust(inputs: Mapping[str, Any]) -> Problems:
    """The modes of TRUSTING_MODES, refused unless the workers are trusted (horovod_launch_trust_workers)."""
    trust = _flag(inputs.get(TRUST, False))
    if not isinstance(trust, bool):
        return [(TRUST, f"{shown(trust)} is not true or false")]
    out: Problems = []
    for name, (value, why) in TRUSTING_MODES.items():
        if not trust and _flag(inputs.get(name, _ABSENT)) == value:
            shown_value = "true" if value is True else repr(value)
            out.append((name, f"{shown_value} trusts the workers: {why}, {TRUST_FIX}"))
    return out


def _counts(inputs: Mapping[str, Any]) -> Problems:
    out: Problems = []
    for name, what in POSITIVE.items():
        out += _whole_at_least(inputs, name, 1, what)[0]
    out += _whole_at_least(inputs, f"{P}timeout", 0, "the seconds the run may take, or 0 for no limit")[0]
    out += _whole_at_least(
        inputs, f"{P}stall_timeout", 0, "the seconds a run may print nothing before the doctor looks, or 0 for never"
    )[0]
    value = inputs.get(f"{P}ssh_port", _ABSENT)
    if value is not _ABSENT:
        port = whole(value)
        if port is None or not 1 <= port <= MAX_PORT:
            out.append(
                (
                    f"{P}ssh_port",
                    f"{shown(value)} is not a TCP port; use the port of the containers' sshd, from 1 to 65535 "
                    f"(container_sshd_port, default {defaults.SSH_PORT})",
                )
            )
    return out


def _artifact_dir(inputs: Mapping[str, Any], share: Any, share_problem: str | None) -> tuple[Problems, str]:
    """The problems of horovod_launch_artifact_dir, and the directory when it is sound ("" else)."""
    artifacts = inputs.get(f"{P}artifact_dir", "")
    if artifacts == "":
        return [], ""
    problem = path_problem(artifacts)
    if problem:
        return [(f"{P}artifact_dir", f'{problem}, or "" for none')], ""
    if isinstance(share, str) and not share_problem and (is_inside(artifacts, share) or is_inside(share, artifacts)):
        message = (
            f"{artifacts!r} and the share {share!r} must be apart, neither inside the other (the workers write "
            "the share and only read the artifact directory)"
        )
        return [(f"{P}artifact_dir", message)], ""
    return [], artifacts


def _placement(name: str, value: str, share: str, artifacts: str) -> str | None:
    """Why a directory every rank uses is not where every host has it (below the artifact directory or
    the share, and not that directory itself for the checkout), or None."""
    for root, what in ((artifacts, "the artifact directory"), (share, "the share")):
        if root and is_inside(value, root):
            if name == f"{P}code_dest" and value == root:
                return f"{value!r} is {what} itself; check the code out into a directory below it, e.g. {root}/code"
            return None
    where = f"the artifact directory {artifacts}" if artifacts else f"the artifact directory ({P}artifact_dir)"
    return (
        f"{value!r} is not on the share {share!r} or the artifact directory; every rank uses it at the same path "
        f"on every host, so put it below {where}"
    )


def _directories(inputs: Mapping[str, Any]) -> Problems:
    out: Problems = []
    share = inputs.get(f"{P}share_dir", _ABSENT)
    share_problem = None
    if share is not _ABSENT:
        share_problem = path_problem(share)
        if share_problem:
            out.append((f"{P}share_dir", share_problem))
    found, artifacts = _artifact_dir(inputs, share, share_problem)
    out += found
    for name in ON_THE_SHARE:
        value = inputs.get(name, _ABSENT)
        if value is _ABSENT or (name in (f"{P}workdir", f"{P}output_dir", f"{P}code_dest") and value == ""):
            continue
        # A directory below a bad share is the share's problem, reported once, for the share.
        if share_problem and isinstance(value, str) and isinstance(share, str) and value.startswith(share + "/"):
            continue
        problem = path_problem(value)
        if problem:
            out.append((name, problem))
        elif share is not _ABSENT and not share_problem and (placed := _placement(name, value, share, artifacts)):
            out.append((name, placed))
    key = inputs.get(f"{P}ssh_identity_file", _ABSENT)
    if key is not _ABSENT and (not isinstance(key, str) or not key.startswith("/")):
        out.append(
            (
                f"{P}ssh_identity_file",
                f"{key!r} is not an absolute path; give the private key's path inside the master's container, "
                f"e.g. {defaults.SSH_KEY_FILE}",
            )
        )
    return out


@dataclass
class _Launch:
    """What a command runs: the word that names the file (None: none, as with ``python3 -c``, ``-m``),
    whether it is a path even without a ``/`` (an interpreter's script; a program's bare name is found on
    PATH), the directory it runs in (``env -C`` changes it; None: unknown), and the variables set on the
    way (``env NAME=VALUE``, ``python3 -X pycache_prefix=DIR``), each with the word that set it."""

    word: str | None = None
    script: bool = False
    cwd: str | None = None
    env: dict[str, tuple[str, str]] = field(default_factory=dict)


def _env_words(words: list[str], launch: _Launch) -> list[str]:
    """The words after GNU env's options and NAME=VALUE assignments, recording those in `launch`."""
    while words:
        word = words[0]
        name, equals, value = word.partition("=")
        option = ENV_VALUED.get(name if word.startswith("--") else word[:2])
        if word == "--":
            return words[1:]
        if option:
            if word.startswith("--"):
                value, words = (value, words[1:]) if equals else ((words[1:] or [""])[0], words[2:])
            else:
                value, words = (word[2:], words[1:]) if word[2:] else ((words[1:] or [""])[0], words[2:])
            if option == "-C":
                launch.cwd = resolve(value, launch.cwd, None)
            elif option == "-S":
                words = value.split() + words
        elif word.startswith("-"):
            words = words[1:]
        elif equals and ENV_RE.fullmatch(name):
            launch.env[name] = (value, word)
            words = words[1:]
        else:
            return words
    return words


def _launch(command: list[str], cwd: str | None) -> _Launch:
    """What `command`, started in `cwd`, runs: its program, or the script that an interpreter's first word
    that is not an option names (also through ``env``)."""
    launch = _Launch(cwd=cwd)
    words = list(command)
    while words and words[0].rsplit("/", 1)[-1] == "env":
        words = _env_words(words[1:], launch)
    match = INTERPRETER_RE.fullmatch(words[0].rsplit("/", 1)[-1]) if words else None
    if not match:
        launch.word = words[0] if words else None
        return launch
    python = bool(match.group(1))
    no_script, valued = ("cm", "WX") if python else ("c", "oO")
    rest = iter(words[1:])
    for arg in rest:
        if arg == "--":
            launch.word, launch.script = next(rest, None), True
            return launch
        if arg == "-" or not arg.startswith(("-", "+")) or (python and arg.startswith("+")):
            launch.word, launch.script = arg, True
            return launch
        if arg.startswith("--"):
            continue
        # Letters run together (python3 -uc CODE, bash -eo pipefail); a value may be glued on (-Wignore).
        for position, letter in enumerate(arg[1:], start=1):
            if letter in no_script:
                return launch
            if letter in valued:
                value = arg[position + 1 :] if position < len(arg) - 1 else next(rest, "")
                # -X pycache_prefix=DIR: where Python reads compiled modules, as PYTHONPYCACHEPREFIX.
                if python and letter == "X" and value.startswith("pycache_prefix="):
                    launch.env["PYTHONPYCACHEPREFIX"] = (value.partition("=")[2], f"-X {value}")
                break
    return launch


def _working_dir(inputs: Mapping[str, Any], share: str) -> str | None:
    """Where every rank starts (horovod_launch.plan: the given directory, else the checkout, else the
    artifact directory, else the share); None when that directory is malformed (_directories says so)."""
    workdir = inputs.get(f"{P}workdir", "")
    if workdir == "":
        code = {key: inputs.get(f"{P}{key}", "") for key in ("code_repo", "code_dest", "artifact_dir", "share_dir")}
        if not isinstance(code["code_repo"], str):
            return None
        workdir = code_dest(code) or code["artifact_dir"] or share
    return workdir if isinstance(workdir, str) and not path_problem(workdir) else None


def _code_env(
    env: Mapping[str, str], cwd: str | None, share: str, allowed: str, opt_in: str, *, reserved: bool = False
) -> list[tuple[str, str]]:
    """For each variable of `env` (name -> value) that leads onto the share (CODE_PATH_VARIABLES): the name
    and why, with the fix. The value itself is not quoted (see _env). Names of RESERVED_ENV count only
    when `reserved` (a command's own ``env NAME=VALUE``): horovod_launch_env refuses them outright."""
    out = []
    home = home_dir(env, cwd)
    for name, value in env.items():
        row = code_path(name)
        if row is None or (_reserved_env(name) and not reserved):
            continue
        for where, how in places(row, value, cwd, home if name != "HOME" else None):
            if leads_onto(where, share):
                base = f" {cwd}" if "working directory" in how else f" {home}" if "home directory" in how else ""
                place = (
                    "leave it unset (its default is in the container) or point it at a directory of the container"
                    if row.cache
                    else f"put what it names below {allowed}, or remove it"
                )
                out.append(
                    (
                        name,
                        f"{name} {'is on' if where.startswith('/') else 'may lead onto'} the share {share!r} "
                        f"({how}{base}): {row.reader} loads code from it "
                        f"({row.loads}), and root on any worker may change the share; {place}, {opt_in}",
                    )
                )
                break
    return out


def _share_code(inputs: Mapping[str, Any]) -> Problems:
    """What every rank executes that comes from the share (root on any worker may change it), refused
    unless horovod_launch_allow_share_code. Data arguments on the share stay allowed. Paths are resolved
    as the rank sees them: relative ones against its working directory, ``~`` through its home, ``..``
    normalised."""
    allow = _flag(inputs.get(f"{P}allow_share_code", False))
    if not isinstance(allow, bool):
        return [(f"{P}allow_share_code", f"{shown(allow)} is not true or false")]
    share = inputs.get(f"{P}share_dir", _ABSENT)
    if allow or not isinstance(share, str) or path_problem(share):
        return []
    artifacts = _artifact_dir(inputs, share, None)[1]
    allowed = (
        f"the artifact directory {artifacts} (only the master writes it)"
        if artifacts
        else f"an artifact directory only the master writes ({P}artifact_dir, empty now)"
    )
    why = (
        "root on any worker may change the share, and the master's root would run it in the container that "
        "holds the cluster's key"
    )
    opt_in = (
        f"or set {P}allow_share_code: true, which lets root on any worker run code as root in the master's "
        "container and from there in every container"
    )
    fix = f"{why}; put it below {allowed} or check the code out with {P}code_repo, {opt_in}"
    out: Problems = []
    for name in (f"{P}runs_dir", f"{P}example_dir", f"{P}code_dest", f"{P}workdir"):
        value = inputs.get(name)
        # A malformed path, or the checkout on the share itself, is _directories' problem alone.
        if _is_on(value, share) and not path_problem(value) and not (name == f"{P}code_dest" and value == share):
            placed = f"{why}; put it below {allowed}, {opt_in}" if name in (f"{P}runs_dir", f"{P}example_dir") else fix
            out.append((name, f"{value!r} is on the share {share!r}; {placed}"))
    if inputs.get(f"{P}workdir") == "" and not inputs.get(f"{P}code_repo") and inputs.get(f"{P}artifact_dir", "") == "":
        out.append((f"{P}workdir", f"'' is the share {share!r} here (no {P}artifact_dir, no code repository); {fix}"))
    if inputs.get(f"{P}code_dest") == "" and inputs.get(f"{P}code_repo") and inputs.get(f"{P}artifact_dir", "") == "":
        out.append((f"{P}code_dest", f"'' is a directory of the share {share!r} here (no {P}artifact_dir); {fix}"))
    cwd = _working_dir(inputs, share)
    command = inputs.get(f"{P}command")
    if isinstance(command, list | tuple) and all(isinstance(word, str | int | float) for word in command):
        launch = _launch([str(word) for word in command], cwd)
        word = launch.word
        path = resolve(word, launch.cwd, None) if word and (launch.script or "/" in word) else None
        if word and path and is_inside(path, share):
            shown_path = (
                ""
                if path == word
                else f" ({path})"
                if word.startswith("/")
                else f" ({path} from the working directory {launch.cwd})"
            )
            out.append((f"{P}command", f"runs {word!r}{shown_path}, which is on the share {share!r}; {fix}"))
        elif word and launch.cwd is not None and launch.cwd != cwd and is_inside(launch.cwd, share):
            out.append((f"{P}command", f"runs {word!r} in {launch.cwd}, which is on the share {share!r}; {fix}"))
        given = {name: value for name, (value, _word) in launch.env.items()}
        for name, message in _code_env(given, launch.cwd, share, allowed, opt_in, reserved=True):
            out.append((f"{P}command", f"sets {launch.env[name][1].partition('=')[0]}: {message}"))
    env = inputs.get(f"{P}env")
    if isinstance(env, Mapping):
        plain = {
            name: str(value)
            for name, value in env.items()
            if isinstance(name, str) and isinstance(value, str | int | float) and not isinstance(value, bool)
        }
        out += [(f"{P}env", message) for _name, message in _code_env(plain, cwd, share, allowed, opt_in)]
    return out


def _is_on(value: object, share: str) -> bool:
    """Whether `value` is an absolute path on the share, however it is written (a/../share/x)."""
    return isinstance(value, str) and value.startswith("/") and is_inside(resolve(value, None, None) or "", share)


def _names(inputs: Mapping[str, Any]) -> Problems:
    out: Problems = []
    run = inputs.get(f"{P}run_name", _ABSENT)
    if isinstance(run, str) and len(run) > RUN_NAME_MAX:
        out.append(
            (
                f"{P}run_name",
                f"{run[:20]!r}... is {len(run)} characters long; a run name is a directory name of at most "
                f"{RUN_NAME_MAX} characters, so shorten it, or leave it empty for a new time-stamped name per run",
            )
        )
    elif run is not _ABSENT and run != "" and not (isinstance(run, str) and NAME_RE.fullmatch(run)):
        out.append(
            (
                f"{P}run_name",
                f"{run!r} is not a plain directory name; use letters, digits, '.', '_' and '-' (starting with a "
                "letter or digit), or leave it empty for a new time-stamped name per run",
            )
        )
    compare = inputs.get(f"{P}compare", _ABSENT)
    if compare is not _ABSENT and compare not in ("", []) and compare_names(compare) is None:
        out.append(
            (
                f"{P}compare",
                f"{compare!r} does not name two runs; give two run names, as a list or as 'A,B' "
                "(playbooks/status.yml lists the runs), or [] to compare nothing",
            )
        )
    container = inputs.get(f"{P}container", _ABSENT)
    problem = None if container is _ABSENT else container_name_problem(container)
    if problem:
        out.append((f"{P}container", problem))
    controller = inputs.get(f"{P}controller", _ABSENT)
    if controller is not _ABSENT and controller not in CONTROLLERS:
        out.append((f"{P}controller", f"{controller!r} is not a controller; choose gloo or mpi"))
    return out


# Ports a torchrun run's rendezvous may not take: NFS and rpcbind on the hosts (the containers share the
# hosts' network), besides the containers' ssh port.
TAKEN_PORTS = {2049: "NFS", 111: "rpcbind"}


def _torchrun_elastic(inputs: Mapping[str, Any]) -> Problems:
    """A torchrun run's elastic bounds: whole numbers, and at most as many nodes at least as the run has."""
    problem, low = _whole_at_least(inputs, f"{P}min_nodes", 0, "the fewest nodes an elastic run goes on with (0: 1)")
    more, _unused = _whole_at_least(inputs, f"{P}max_restarts", 0, "how often torchrun may restart the workers")
    out = problem + more
    hosts = inputs.get(f"{P}hosts", _ABSENT)
    np = whole(inputs.get(f"{P}np", 0))
    if low and hosts is not _ABSENT and not host_errors(hosts) and np is not None and np >= 0:
        try:
            nodes = len(allocate(hosts, np or None))
        except ValueError:
            return out  # the host list's or np's own problem is named by their rules
        if low > nodes and _flag(inputs.get(f"{P}elastic", False)) is True:
            out.append(
                (
                    f"{P}min_nodes",
                    f"{low} is more than the {nodes} nodes the run starts on (torchrun's --nnodes MIN:MAX, MAX the "
                    f"nodes of {P}hosts that get processes); lower it",
                )
            )
    return out


def _launcher(inputs: Mapping[str, Any]) -> Problems:
    """The launcher is one the role has; a torchrun run's rendezvous port is free of the ports the cluster
    uses, its elastic bounds are sound, and it asks for nothing only horovodrun does."""
    launcher = inputs.get(f"{P}launcher", _ABSENT)
    if launcher is _ABSENT:
        return []
    if launcher not in LAUNCHERS:
        return [(f"{P}launcher", f"{launcher!r} is not a launcher; choose {' or '.join(LAUNCHERS)}")]
    if launcher != "torchrun":
        return []
    out: Problems = []
    # Absent where the entry point passes no port (status, stop); the role's default otherwise.
    given = inputs.get(f"{P}rdzv_port", _ABSENT)
    port = None if given is _ABSENT else whole(given)
    ssh_port = whole(inputs.get(f"{P}ssh_port", _ABSENT))
    if given is not _ABSENT and (port is None or not 1 <= port <= MAX_PORT):
        out.append((f"{P}rdzv_port", f"{shown(given)} is not a TCP port (1 to {MAX_PORT})"))
    elif port is not None and (port == ssh_port or port in TAKEN_PORTS):
        taken = "the containers' sshd (horovod_launch_ssh_port)" if port == ssh_port else TAKEN_PORTS[port]
        out.append((f"{P}rdzv_port", f"{port} is the port of {taken}; choose another, e.g. 29500"))
    out += _torchrun_elastic(inputs)
    if inputs.get(f"{P}extra_args"):
        out.append(
            (
                f"{P}extra_args",
                "holds horovodrun's options, which a torchrun run does not take; leave it empty with "
                "horovod_launch_launcher: torchrun",
            )
        )
    if inputs.get(f"{P}controller", "gloo") != "gloo":
        out.append(
            (
                f"{P}controller",
                "is Horovod's; a torchrun run has no controller (Gloo or NCCL is torch.distributed's backend): "
                "leave it gloo with horovod_launch_launcher: torchrun",
            )
        )
    return out


def _code(inputs: Mapping[str, Any]) -> Problems:
    repo = inputs.get(f"{P}code_repo", "")
    if not isinstance(repo, str):
        return [(f"{P}code_repo", f"{repo!r} is not a string; give a git URL or a path on the master, or ''")]
    version = inputs.get(f"{P}code_version", "")
    if repo and (not isinstance(version, str) or not version.strip() or version.strip() == "HEAD"):
        return [
            (
                f"{P}code_version",
                f"{version!r} does not pin the code of {P}code_repo ({repo}); set it to a tag or a commit "
                "(a branch name moves with new commits) so that every node runs the same code",
            )
        ]
    return []


def _list(inputs: Mapping[str, Any], name: str, example: str) -> tuple[Problems, list[Any] | None]:
    """A list variable's type problems (not a list, or an item that is not a plain string), and the list."""
    value = inputs.get(name, _ABSENT)
    if value is _ABSENT:
        return [], None
    if not isinstance(value, list | tuple):
        return [(name, f"{value!r} is not a list; give one item per entry, e.g. {example}, or []")], None
    for index, item in enumerate(value):
        if not isinstance(item, str | int | float) or isinstance(item, bool):
            return [
                (name, f"item {index} ({item!r}) is not a plain string; give one string per item, e.g. {example}")
            ], None
    return [], list(value)


def _command(inputs: Mapping[str, Any]) -> Problems:
    out, command = _list(inputs, f"{P}command", '[python3, train.py, --epochs, "10"]')
    if command and not str(command[0]).strip():
        out.append(
            (
                f"{P}command",
                f"{command!r} starts with an empty item; give the program first, one argument per item (for "
                'example [python3, train.py, --epochs, "10"]), or leave it empty for the bundled example',
            )
        )
    more, _unused = _list(inputs, f"{P}example_args", '[--epochs, "5"]')
    return out + more


def _env(inputs: Mapping[str, Any]) -> Problems:
    env = inputs.get(f"{P}env", _ABSENT)
    if env is _ABSENT:
        return []
    fix = "map variable names to plain values, e.g. {NCCL_DEBUG: INFO, OMP_NUM_THREADS: 4}"
    if not isinstance(env, Mapping):
        return [(f"{P}env", f"{env!r} is not a mapping; {fix}")]
    out: Problems = []
    for name, value in env.items():
        if not isinstance(name, str) or not ENV_RE.fullmatch(name):
            out.append(
                (f"{P}env", f"{name!r} is not a variable name (letters, digits, '_', not starting with a digit); {fix}")
            )
        elif why := _reserved_env(name, str(inputs.get(f"{P}launcher", "horovodrun"))):
            out.append((f"{P}env", f"{name} may not be set here: {why}"))
        # The value itself is never quoted: it may be a secret.
        elif isinstance(value, bool):
            out.append(
                (
                    f"{P}env",
                    f"the value of {name} is a boolean (YAML reads an unquoted yes, no, true, false, on or off as "
                    'one, and the ranks would get True or False); quote it, e.g. "yes" or "1"',
                )
            )
        elif not isinstance(value, str | int | float):
            out.append(
                (
                    f"{P}env",
                    f"the value of {name} is a {type(value).__name__}, not a plain value (a string or a number); {fix}",
                )
            )
    return out


def horovodrun_options(arg: str) -> tuple[list[str], str | None]:
    """The options of HOROVODRUN_OPTIONS that horovodrun's argparse may read `arg` as (more than one: it
    stops, the option being ambiguous), and the value given within `arg` (None: its values follow)."""
    name, equals, value = arg.partition("=")
    glued = value if equals else None
    if arg in HOROVODRUN_OPTIONS or (equals and name in HOROVODRUN_OPTIONS):
        return [arg if arg in HOROVODRUN_OPTIONS else name], None if arg in HOROVODRUN_OPTIONS else glued
    if arg.startswith("--"):
        return [option for option in HOROVODRUN_OPTIONS if option.startswith(name)], glued
    # One dash: a one-letter option with its value glued on (-p22), which after a flag may be the next
    # one-letter option (-vp22), or a prefix of a one-dash option (-hostf for -hostfile).
    found = [option for option in HOROVODRUN_OPTIONS if option.startswith(name) and option[1] != "-"]
    short = arg[:2]
    if short in HOROVODRUN_OPTIONS and len(arg) > 2:
        found.insert(0, short)
        glued = arg[2:]
        if HOROVODRUN_OPTIONS[short] == 0:
            found += horovodrun_options("-" + glued)[0]
    return list(dict.fromkeys(found)), glued


def _reserved(arg: str, option: str) -> str:
    """The refusal of `arg`, which horovodrun reads as the reserved `option`."""
    name = arg.partition("=")[0]
    if name == option:
        read_as = ""
    elif option == arg[:2]:
        read_as = f" (horovodrun reads it as {option} with its value glued on)"
    elif option.startswith(name):
        read_as = f" (horovodrun's argparse takes a prefix of an option for the option: this is {option})"
    else:
        read_as = f" (horovodrun reads one-letter options run together: this holds {option})"
    if option == CONFIG_FILE:
        return (
            f"{arg!r}{read_as} names a file that can set every horovodrun option, the ssh port and identity file "
            f"the role sets included; give the options you need one by one in {P}extra_args"
        )
    return f"{arg!r}{read_as} is an option the role sets itself; use {RESERVED_ARGS[option]} instead"


def _extra_args(inputs: Mapping[str, Any]) -> Problems:
    out, args = _list(inputs, f"{P}extra_args", f"[--timeline-filename, {defaults.SHARE_DIR}/timeline.json]")
    words = [str(arg) for arg in args or []]
    index = 0
    while index < len(words):
        arg = words[index]
        index += 1
        if arg in ("", "-", "--") or not arg.startswith("-"):
            # horovodrun's command starts at its first word that is neither an option nor an option's value.
            out.append(
                (
                    f"{P}extra_args",
                    f"{arg!r} is not a horovodrun option or the value of the option before it, so horovodrun would "
                    f"run it and everything after it as the command; give options and their values only (the "
                    f"command goes in {P}command)",
                )
            )
            break
        options, glued = horovodrun_options(arg)
        reserved = [option for option in options if option in RESERVED_ARGS or option == CONFIG_FILE]
        if reserved:
            out.append((f"{P}extra_args", _reserved(arg, reserved[0])))
        if options and glued is None and len({HOROVODRUN_OPTIONS[option] for option in options}) == 1:
            index += HOROVODRUN_OPTIONS[options[0]]
        elif not options and index < len(words) and not words[index].startswith("-"):
            index += 1  # an option of another Horovod version: what follows may be its value
    return out


def _interfaces(inputs: Mapping[str, Any]) -> Problems:
    out, nics = _list(inputs, f"{P}network_interfaces", "[eth0, ib0]")
    for nic in nics or []:
        if not is_interface_name(nic):
            out.append(
                (
                    f"{P}network_interfaces",
                    f"{nic!r} is not {INTERFACE_SHAPE}; list such names, or leave it empty to use the interface "
                    "that holds each host's address",
                )
            )
    more, frameworks = _list(inputs, f"{P}required_frameworks", "[pytorch]")
    for name in frameworks or []:
        if name not in FRAMEWORKS:
            more.append(
                (
                    f"{P}required_frameworks",
                    f"{name!r} is not a framework --check-build reports; choose from {', '.join(FRAMEWORKS)}",
                )
            )
    return out + more


def _idle(inputs: Mapping[str, Any]) -> Problems:
    out, patterns = _list(inputs, f"{P}idle_process_patterns", "['jupyter-lab']")
    for pattern in invalid_patterns(patterns or []):
        out.append(
            (
                f"{P}idle_process_patterns",
                f"{pattern!r} is not a regular expression; write one Python re pattern per item, e.g. 'jupyter-lab'",
            )
        )
    return out


def _shm(inputs: Mapping[str, Any]) -> Problems:
    size = inputs.get(f"{P}min_shm_size", _ABSENT)
    if size is _ABSENT or (isinstance(size, str | int) and not isinstance(size, bool) and SIZE_RE.fullmatch(str(size))):
        return []
    return [(f"{P}min_shm_size", f"{size!r} is not a size; write one such as 512M, 1G or 16G")]


def problems(inputs: Mapping[str, Any]) -> Problems:
    """Every controller-side problem of horovod_launch's inputs, as (variable, message); empty when sound."""
    if not isinstance(inputs, Mapping):
        return [(f"{P}hosts", f"the role's inputs must be a mapping of variables, got {type(inputs).__name__}")]
    out, total = _hosts(inputs)
    out += _np(inputs, total)
    out += _elastic(inputs, total)
    out += _trust(inputs)
    out += _counts(inputs)
    out += _directories(inputs)
    out += _names(inputs)
    out += _launcher(inputs)
    out += _code(inputs)
    out += _command(inputs)
    out += _env(inputs)
    out += _extra_args(inputs)
    out += _share_code(inputs)
    out += _interfaces(inputs)
    out += _idle(inputs)
    out += _shm(inputs)
    return out
