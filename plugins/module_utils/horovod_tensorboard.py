# Copyright: multinode.horovod contributors
# SPDX-License-Identifier: GPL-3.0-or-later
"""What playbooks/tensorboard.yml decides: its settings, TensorBoard's command line, which processes are
its own, what to stop and start, and what it prints (the ssh tunnel to run on the controller).

TensorBoard runs detached in the master's container as
``python3 -X multinode_horovod_tensorboard -m tensorboard.main --logdir DIR --host 127.0.0.1 --port PORT``.
Python keeps an ``-X`` option it does not know in ``sys._xoptions`` and otherwise ignores it, so the
marker costs TensorBoard nothing and names the process in every process list (/proc, ``docker top``):
the playbook stops only processes that carry it, and jobs.py counts them as idle, not as a training job
(a TensorBoard left running never holds up a launch, a container recreate or a teardown). The container
uses the host's network, so 127.0.0.1 there is the master's loopback: nothing but the master itself,
and an ssh tunnel through it, reaches TensorBoard.

The in-container helper (playbooks/files/tensorboard/horovod_tensorboard.py) only reads and signals;
the decisions are here, behind the filters horovod_tensorboard_settings and horovod_tensorboard_plan.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ansible_collections.multinode.horovod.plugins.module_utils.controller_ssh import ssh_command
from ansible_collections.multinode.horovod.plugins.module_utils.horovod_launch import release
from ansible_collections.multinode.horovod.plugins.module_utils.numbers import shown, whole
from ansible_collections.multinode.horovod.plugins.module_utils.paths import is_inside, path_problem, strip_slash

# The playbook's settings (-e NAME=VALUE, or the inventory) and their defaults; the gate knows these
# names (gate.PLAYBOOK_SWITCHES). "" for the log directory: the run's directory when horovod_run_name
# names one, else the runs directory (every run).
SETTINGS: dict[str, Any] = {
    "horovod_tensorboard_logdir": "",
    "horovod_tensorboard_port": 6006,
    "horovod_tensorboard_state": "started",
}
SETTING_NAMES: tuple[str, ...] = tuple(SETTINGS)
STATES = ("started", "stopped")
MARKER = "multinode_horovod_tensorboard"
HOST = "127.0.0.1"
# How every TensorBoard of the playbook starts; a process whose command line begins so is the playbook's.
PREFIX = ("python3", "-X", MARKER, "-m", "tensorboard.main")
# The same, as jobs.py matches ``docker top``'s and the probe's space-joined command lines.
IDLE_PATTERN = rf"^python3 -X {MARKER} -m tensorboard\.main( |$)"
# TensorBoard's own output, in the container (not on the share, which the workers' root can write).
LOG_FILE = "/var/log/multinode-horovod-tensorboard.log"
# From 2.5.0 TensorBoard may read the event files through a second process, its data server; with
# --load_fast=false it reads them itself, so the playbook's TensorBoard is one process.
LOAD_FAST = (2, 5, 0)
# Seconds between SIGTERM and SIGKILL when the playbook stops its TensorBoard.
STOP_GRACE = 10
LOG_LINES = 20


def settings(
    given: Mapping[str, Any],
    *,
    share_dir: str,
    artifact_dir: str,
    runs_dir: str,
    run_name: str,
    ssh_port: Any,
) -> dict[str, Any]:
    """The settings from every ``horovod_tensorboard_*`` variable given (None: the default) and the site's
    values: ``logdir`` (and ``logdir_from``, the variable it comes from, and ``logdir_root``, where the helper
    walks down to it from without following a link), ``port``, ``state``, ``run_name``,
    ``runs_dir``, the helper's ``marker`` and ``log_file``, and ``problems``, each naming the variable and
    the fix."""
    problems = [
        f"{name}: the TensorBoard playbook has no such setting (it has {', '.join(SETTING_NAMES)})."
        for name in sorted(set(given) - set(SETTINGS))
        if name.startswith("horovod_tensorboard_")
    ]
    value = {name: default if given.get(name) is None else given[name] for name, default in SETTINGS.items()}
    state = value["horovod_tensorboard_state"]
    if state not in STATES:
        problems.append(f"horovod_tensorboard_state: {state!r} is not one of {', '.join(STATES)}.")
    port = whole(value["horovod_tensorboard_port"])
    if port is None or not 1 <= port <= 65535:
        shown_port = shown(value["horovod_tensorboard_port"])
        problems.append(f"horovod_tensorboard_port: {shown_port} is not a TCP port (1-65535), such as 6006.")
    elif port == whole(ssh_port):
        problems.append(
            f"horovod_tensorboard_port: {port} is horovod_ssh_port, the containers' sshd's port; choose another, "
            "such as 6006."
        )
    logdir, source = _logdir(value["horovod_tensorboard_logdir"], runs_dir, str(run_name or ""))
    if source == "horovod_tensorboard_logdir":
        problems.extend(_logdir_problems(logdir, str(share_dir), str(artifact_dir)))
    root = _logdir_root(logdir, share_dir, artifact_dir, runs_dir)
    return {"logdir": logdir, "logdir_from": source, "logdir_root": root, "port": port, "state": state,
            "run_name": str(run_name or ""), "runs_dir": str(runs_dir), "marker": MARKER, "log_file": LOG_FILE,
            "problems": problems}  # fmt: skip


def _logdir_root(logdir: Any, share_dir: Any, artifact_dir: Any, runs_dir: Any) -> str:
    """The directory the helper walks down from to the log directory, no component below it followed when
    it is a link: the deepest of the share and the artifact directory that holds it (trusted, the master's
    own), else the runs directory (the master's, outside both); "" when none holds it."""
    roots = [str(strip_slash(r)) for r in (share_dir, artifact_dir) if r]
    if not isinstance(logdir, str):
        return ""
    inside = sorted((r for r in roots if is_inside(logdir, r)), key=len)
    if inside:
        return inside[-1]
    runs = str(strip_slash(runs_dir or ""))
    return runs if runs and is_inside(logdir, runs) else ""


def _logdir(given: Any, runs_dir: str, run_name: str) -> tuple[Any, str]:
    """The log directory and the variable it comes from."""
    if given not in ("", None):
        return strip_slash(given), "horovod_tensorboard_logdir"
    if run_name:
        return f"{runs_dir}/{run_name}", "horovod_run_name"
    return str(runs_dir), "horovod_launch_runs_dir"


def _logdir_problems(logdir: Any, share_dir: str, artifact_dir: str) -> list[str]:
    problem = path_problem(logdir)
    if problem:
        return [f"horovod_tensorboard_logdir: {problem}."]
    roots = [root for root in (share_dir, artifact_dir) if root]
    if not any(is_inside(logdir, root) for root in roots):
        return [
            f"horovod_tensorboard_logdir: {logdir!r} is not on the share: give horovod_share_dir "
            f"({share_dir}), horovod_artifact_dir ({artifact_dir}) or a directory below one of them, which the "
            "master's container sees at the same path."
        ]
    return []


def argv(logdir: str, port: int, version: Any) -> list[str]:
    """TensorBoard's command line in the container, for the TensorBoard release `version` there."""
    words = [*PREFIX, "--logdir", str(logdir), "--host", HOST, "--port", str(port)]
    found = release(version)
    if found is None or found >= LOAD_FAST:
        words.append("--load_fast=false")
    return words


def start_argv(words: Sequence[str]) -> list[str]:
    """What docker exec runs to start TensorBoard: a shell that sends its output to LOG_FILE and then
    becomes TensorBoard (exec), so the process carries exactly `words`."""
    return ["sh", "-c", f'exec "$@" > {LOG_FILE} 2>&1', "sh", *words]


def is_ours(args: Sequence[Any]) -> bool:
    """Whether a process with command line `args` is a TensorBoard the playbook started."""
    return tuple(str(word) for word in args[: len(PREFIX)]) == PREFIX


def _flag(args: Sequence[str], name: str) -> str | None:
    """The value of ``--NAME VALUE`` or ``--NAME=VALUE`` in `args`."""
    for i, word in enumerate(args):
        if word == f"--{name}" and i + 1 < len(args):
            return args[i + 1]
        if word.startswith(f"--{name}="):
            return word.split("=", 1)[1]
    return None


def _described(process: Mapping[str, Any]) -> str:
    args = [str(word) for word in process.get("args") or []]
    return f"pid {process.get('pid')}, --logdir {_flag(args, 'logdir')}, port {_flag(args, 'port')}"


def _read_problems(given: Mapping[str, Any], read: Mapping[str, Any], container: str) -> list[str]:
    """What the read in the container says against starting TensorBoard there."""
    problems = []
    board = read.get("tensorboard") or {}
    if not board.get("version"):
        problems.append(
            f"TensorBoard is not installed in the master's container {container} (python3 there cannot import "
            f"tensorboard: {board.get('error') or 'no version'}). Use an image that has it (the collection's CPU "
            "image does; horovod/horovod has it with TensorFlow), or install it in every container with "
            'horovod_pip_packages, such as [{name: tensorboard, version: "2.19.0"}] (docs/images.md).'
        )
    logdir, kind = given["logdir"], read.get("logdir")
    if kind != "directory":
        if given["logdir_from"] == "horovod_run_name":
            where = (
                f"horovod_run_name: there is no run {given['run_name']} in {given['runs_dir']} ({logdir} is "
                f"{kind}). playbooks/status.yml lists the runs; give another with -e horovod_run_name=NAME."
            )
        elif given["logdir_from"] == "horovod_launch_runs_dir":
            where = f"horovod_launch_runs_dir: {logdir} is {kind} in the master's container (no run started yet?)."
        else:
            where = f"horovod_tensorboard_logdir: {logdir} is {kind} in the master's container."
        at = read.get("logdir_at")
        if at and at != logdir:
            where += f" ({at} is {kind}.)"
        if kind == "link":
            where += (
                " A link on the share may be one that root on a worker planted: no component of the log directory"
                " may be a link; give the directory itself."
            )
        problems.append(where)
    return problems


def plan(
    given: Mapping[str, Any], read: Mapping[str, Any], master: Mapping[str, Any], container: str
) -> dict[str, Any]:
    """What to do: ``stop`` (the playbook's TensorBoards to end, ``{pid, args}``), ``start`` (whether to start
    ``argv``, through ``start_argv``), ``changed``, ``problems`` (when any, nothing is done), the ssh
    ``tunnel`` and ``url`` for the controller, and ``lines`` to show (what was or, in check mode, would be
    done). `given` is settings() without problems, `read` the helper's ``read`` answer, `master`
    ``{name, host, user, port}`` from the inventory, `container` the master's container."""
    ours = [dict(p) for p in read.get("processes") or [] if is_ours(p.get("args") or [])]
    port, logdir = int(given["port"]), str(given["logdir"])
    version = (read.get("tensorboard") or {}).get("version")
    tunnel = ssh_command(master, ["-N", "-L", f"{port}:{HOST}:{port}"])
    url = f"http://{HOST}:{port}/"
    where = f"the container {container} on {master['name']}"
    out: dict[str, Any] = {
        "stop": [], "start": False, "argv": [], "start_argv": [], "problems": [], "tunnel": tunnel, "url": url,
        "logdir": logdir, "port": port, "state": given["state"], "grace": STOP_GRACE,
    }  # fmt: skip
    if given["state"] == "stopped":
        out["stop"] = ours
        out["lines"] = (
            [f"TensorBoard stopped in {where} ({_described(p)})." for p in ours]
            if ours
            else [f"No TensorBoard of this playbook runs in {where}: nothing to stop."]
        )
        out["check_lines"] = [f"Check mode: TensorBoard would be stopped in {where} ({_described(p)})." for p in ours]
        out["changed"] = bool(ours)
        return out
    problems = _read_problems(given, read, container)
    wanted = argv(logdir, port, version)
    keep = next((p for p in ours if [str(w) for w in p.get("args") or []] == wanted), None)
    stop = [p for p in ours if p is not keep]
    busy = read.get("port_free") is False and not any(_flag(p["args"], "port") == str(port) for p in ours)
    if keep is None and busy:
        problems.append(
            f"horovod_tensorboard_port: {port} is taken on {master['name']}'s loopback by another program (the "
            f"container shares the host's network); choose another port, such as -e horovod_tensorboard_port="
            f"{port + 1 if port < 65535 else 6006}."
        )
    out.update(problems=problems, argv=wanted, start_argv=start_argv(wanted), stop=stop, start=keep is None)
    out["changed"] = bool(stop) or keep is None
    replaced = [f"The earlier TensorBoard ({_described(p)}) is stopped." for p in stop]
    out["lines"] = [
        *replaced,
        f"TensorBoard {version} {'runs' if keep else 'started'} in {where} (--logdir {logdir}), listening on "
        f"{HOST}:{port} of {master['name']} only.",
        f"From the controller: {tunnel}",
        f"then open {url}",
        "Stop it: ansible-playbook playbooks/tensorboard.yml -i INVENTORY -e horovod_tensorboard_state=stopped",
    ]
    out["check_lines"] = [
        *(f"Check mode: the earlier TensorBoard ({_described(p)}) would be stopped." for p in stop),
        f"Check mode: TensorBoard runs in {where} (--logdir {logdir}); nothing to do."
        if keep
        else f"Check mode: TensorBoard would be started in {where}: {' '.join(wanted)}",
    ]
    return out
