# Copyright: multinode.horovod contributors
# SPDX-License-Identifier: GPL-3.0-or-later
"""Filters of horovod_launch's command line: how many processes, and what horovodrun is given.

Kept in Python so that they are unit-tested (tests/unit/test_horovod_launch_filters.py); the role's
tasks hand its variables to them (vars/main.yml holds constants only). Their inputs have passed the role's input rules
(plugins/module_utils/horovod_launch_rules.py) first, so they raise on what those rules refuse instead of
explaining it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ansible.errors import AnsibleFilterError
from ansible.module_utils.parsing.convert_bool import boolean
from ansible_collections.multinode.horovod.plugins.filter.horovod_hosts import hosts_arg, rank_hosts
from ansible_collections.multinode.horovod.plugins.module_utils.horovod_hosts import slot_count
from ansible_collections.multinode.horovod.plugins.module_utils.numbers import whole

ARGV_KEYS = (
    "np",
    "hosts",
    "elastic",
    "min_np",
    "max_np",
    "cooldown",
    "discovery_script",
    "ssh_port",
    "identity_file",
    "start_timeout",
    "controller",
    "nics",
    "run_dir",
    "rank_env",
    "verbose",
    "extra_args",
    "command",
)


def _count(value: Any, what: str) -> int:
    number = whole(value)
    if number is None or number < 0:
        raise AnsibleFilterError(f"horovod_launch_counts: {what} must be a whole number of 0 or more, got {value!r}")
    return number


def counts(hosts: Sequence[Mapping[str, Any]], np: Any = 0, min_np: Any = 0, max_np: Any = 0) -> dict[str, int]:
    """The processes of a run: ``{total_slots, np, min_np, max_np}`` from the host list and the settings.

    ``np`` 0 means every slot. An elastic run goes on with at least ``min_np`` (0: the first host's slots,
    the master's, at most np) and grows to ``max_np`` (0: every slot); a run that is not elastic ignores both.
    """
    slots = [slot_count(host.get("slots")) if isinstance(host, Mapping) else None for host in hosts or []]
    if not slots or None in slots:
        raise AnsibleFilterError(f"horovod_launch_counts: expects a valid host list with slots, got {hosts!r}")
    total = sum(slots)  # type: ignore[arg-type]
    run_np = _count(np, "np") or total
    return {
        "total_slots": total,
        "np": run_np,
        "min_np": _count(min_np, "min_np") or min(slots[0], run_np),  # type: ignore[type-var]
        "max_np": _count(max_np, "max_np") or total,
    }


def horovodrun_argv(run: Mapping[str, Any]) -> list[str]:
    """horovodrun's command line for a run (ARGV_KEYS, all required), command last.

    ``-H`` names the hosts, or, for an elastic run, ``--min-np``/``--max-np``, the discovery script and the
    cooldown range do. ``--output-filename`` (the rank logs in the run's directory) only with two processes
    or more: horovodrun's Gloo launcher fails on it with one (log10(0) in _pad_rank), and that run's output
    stays in launcher.log. With ``rank_env`` (the run's rank-env.sh, when it has an environment) every
    rank runs the command through it: it loads the environment from a root-only file on its node, which
    keeps the values off every command line (horovodrun puts its own environment on each rank's).
    """
    if not isinstance(run, Mapping):
        raise AnsibleFilterError(f"horovodrun_argv expects a mapping, got {type(run).__name__}")
    missing = [key for key in ARGV_KEYS if key not in run]
    if missing:
        raise AnsibleFilterError(f"horovodrun_argv: missing {', '.join(missing)}")
    np = int(run["np"])
    argv = ["horovodrun", "-np", str(np)]
    if run["elastic"]:
        low, high = run["cooldown"]
        argv += ["--min-np", str(int(run["min_np"])), "--max-np", str(int(run["max_np"]))]
        argv += ["--host-discovery-script", str(run["discovery_script"])]
        argv += ["--blacklist-cooldown-range", str(int(low)), str(int(high))]
    else:
        argv += ["-H", str(run["hosts"])]
    argv += ["-p", str(run["ssh_port"]), "-i", str(run["identity_file"])]
    argv += ["--start-timeout", str(run["start_timeout"]), f"--{run['controller']}"]
    if run["nics"]:
        argv += ["--network-interfaces", ",".join(str(nic) for nic in run["nics"])]
    if np > 1:
        argv += ["--output-filename", str(run["run_dir"])]
    if run["verbose"]:
        argv.append("--verbose")
    loader = ["sh", str(run["rank_env"])] if run["rank_env"] else []
    return argv + [str(arg) for arg in run["extra_args"]] + loader + [str(arg) for arg in run["command"]]


PLAN_KEYS = (
    "hosts",
    "np",
    "min_np",
    "max_np",
    "elastic",
    "elastic_cooldown",
    "workdir",
    "code_repo",
    "code_dest",
    "share_dir",
    "artifact_dir",
    "command",
    "example_args",
    "env",
    "controller",
    "extra_args",
    "image_ids",
    "master",
)


def plan(inputs: Mapping[str, Any]) -> dict[str, Any]:
    """What the role's inputs decide before any host is read (PLAN_KEYS: the role's variables without
    the ``horovod_launch_`` prefix, and ``master``, the master's inventory name).

    ``{total_slots, np, min_np, max_np}`` (counts), the host of each rank (``rank_hosts``) and ``-H``
    (``h``), the working directory (the given one, else the code checkout, else the artifact directory,
    which only the master writes, else the share), the image IDs
    the preflight compares with the master's (``other_image_ids``: every one but the master's own), and
    what defines the run (``definition``) but for what only the hosts tell (its ``code`` and ``image``,
    added when the run is named): the command (the bundled example as ``(bundled example)`` and its
    arguments), -H, np, the environment's names (never its values, which may be secrets), the working
    directory, the controller, the extra arguments, and for an elastic run its bounds and cooldown.
    """
    if not isinstance(inputs, Mapping):
        raise AnsibleFilterError(f"horovod_launch_plan expects a mapping, got {type(inputs).__name__}")
    missing = [key for key in PLAN_KEYS if key not in inputs]
    if missing:
        raise AnsibleFilterError(f"horovod_launch_plan: missing {', '.join(missing)}")
    hosts = inputs["hosts"]
    numbers = counts(hosts, inputs["np"], inputs["min_np"], inputs["max_np"])
    np = numbers["np"]
    if inputs["workdir"]:
        workdir = str(inputs["workdir"])
    else:
        workdir = str(inputs["code_dest"] if inputs["code_repo"] else inputs["artifact_dir"] or inputs["share_dir"])
    command = list(inputs["command"] or []) or ["(bundled example)", *(inputs["example_args"] or [])]
    h = hosts_arg(hosts, np=np)
    definition: dict[str, Any] = {
        "command": command,
        "hosts": h,
        "np": np,
        "env_names": list((inputs["env"] or {}).keys()),
        "workdir": workdir,
        "controller": inputs["controller"],
        "extra_args": list(inputs["extra_args"] or []),
    }
    # Only an elastic run's name depends on these: other runs keep the names they had.
    if boolean(inputs["elastic"], strict=True):
        definition["elastic"] = {
            "min_np": numbers["min_np"],
            "max_np": numbers["max_np"],
            "cooldown": [int(value) for value in inputs["elastic_cooldown"]],
        }
    image_ids = inputs["image_ids"] or {}
    return {
        **numbers,
        "rank_hosts": rank_hosts(hosts, np),
        "h": h,
        "workdir": workdir,
        "other_image_ids": {name: value for name, value in image_ids.items() if name != inputs["master"]},
        "definition": definition,
    }


class FilterModule:
    """multinode.horovod launch filters."""

    def filters(self) -> dict[str, Callable[..., Any]]:
        return {
            "horovod_launch_counts": counts,
            "horovodrun_argv": horovodrun_argv,
            "horovod_launch_plan": plan,
        }
