# Copyright: multinode.horovod contributors
# SPDX-License-Identifier: GPL-3.0-or-later
"""The master writes on the share only through the link-safe path (SECURITY.md, "Nothing on the share is
opened through a link"; issue 42, build item 3).

Root on a worker can make any name on the share a link (``<share>/benchmarks`` -> ``/root/.ssh``).
``ansible.builtin.file``, ``copy``, ``template`` and the other writing modules follow a link in every
component but (mostly) the last, so a task of theirs whose path is, or may be, below the share writes as
the master's root wherever the link points. Such paths go through ``multinode.horovod.share_path`` or
``share_marker``, which walk from the share's own directory by file descriptor with no link followed.

This test reads every task of the roles and the playbooks and fails when a writing module's path names a
variable that holds the share or the artifact directory, or one derived from them (found in the code:
the roles' defaults and vars, the playbooks' vars files, plays' and tasks' ``vars`` and ``set_fact``),
unless ALLOWED lists the task with its reason.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from checkout import REPO

WRITERS = ("file", "copy", "template", "lineinfile", "blockinfile", "unarchive", "get_url", "fetch")
PREFIXES = ("", "ansible.builtin.", "ansible.legacy.")
# The arguments through which those modules write (file's aliases included).
PATH_ARGS = ("path", "dest", "name")

# What holds the share or the artifact directory: any variable named after them (horovod_share_dir,
# horovod_artifact_dir, horovod_launch_share_dir, __horovod_shared_dirs, ...), and the paths that the
# Python plans compute below them (module_utils' results: the benchmark's report and script directories,
# a run's directory and the files in it, the launch's runs, output, example and working directories).
NAMED = re.compile(r"share|artifact")
COMPUTED = {
    "report_dir", "report_root", "report_path", "script_dir", "script_root", "run_dir", "output_on_share",
    "rank_env", "discovery_script", "logdir", "dir",
    # The launch's directories that its rules refuse on the share unless horovod_launch_allow_share_code.
    "horovod_launch_runs_dir", "horovod_launch_example_dir", "horovod_launch_code_dest", "horovod_launch_workdir",
    "horovod_launch_output_dir", "horovod_bench_dir", "horovod_tensorboard_logdir",
}  # fmt: skip

_ARTIFACTS = (
    "the launch's runs, example, working or output directory: by default in the artifact directory "
    "(horovod_launch_artifact_dir), which the workers mount read-only and only the master writes (SECURITY.md, "
    "'Root on a worker cannot change what every node executes'); the launch's rules refuse these directories on "
    "the share unless horovod_launch_allow_share_code, whose cost SECURITY.md lists under 'Not guaranteed'"
)
_ROOTS = (
    "the share's or the artifact directory's own directory (the trusted root every walk starts from, never a "
    "name below it); removing it, ansible.builtin.file's shutil.rmtree removes links inside by file "
    "descriptor without following them"
)
# (file, task name) -> why the task may write there another way.
ALLOWED = {
    ("playbooks/tasks/check_shared_path.yml", "Create the artifact directory on the master"): _ROOTS,
    ("playbooks/teardown.yml", "Remove the share's data and the artifact directory, as asked"): _ROOTS,
    (
        "roles/docker_horovod/tasks/container.yml",
        "Create the directories the container mounts where they are missing",
    ): (_ROOTS),
    ("roles/horovod_launch/tasks/start.yml", "Remove the earlier run of that name"): _ARTIFACTS,
    ("roles/horovod_launch/tasks/start.yml", "Create the run's output directory in the artifact directory"): (
        _ARTIFACTS
    ),
    ("roles/horovod_launch/tasks/start.yml", "Create the run directory on the share"): _ARTIFACTS,
    ("roles/horovod_launch/tasks/start.yml", "Write the run's manifest (what to compare it with another run by)"): (
        _ARTIFACTS
    ),
    ("roles/horovod_launch/tasks/start.yml", "Write the file through which every rank loads the run's environment"): (
        _ARTIFACTS
    ),
    ("roles/horovod_launch/tasks/start.yml", "Write the hosts of the elastic run for its discovery script"): _ARTIFACTS,
    ("roles/horovod_launch/tasks/start.yml", "Write the discovery script of the elastic run"): _ARTIFACTS,
    ("roles/horovod_launch/tasks/start.yml", "Write the launch script of the run"): _ARTIFACTS,
    ("roles/horovod_launch/tasks/start.yml", "Write the torchrun launcher into the run directory"): _ARTIFACTS,
    ("roles/horovod_launch/tasks/start.yml", "Write what the torchrun launcher starts on each node"): _ARTIFACTS,
    ("roles/horovod_launch/tasks/stop.yml", "Mark the run as stopped"): _ARTIFACTS,
    ("roles/horovod_launch/tasks/workspace.yml", "Create the example directory on the share"): _ARTIFACTS,
    ("roles/horovod_launch/tasks/workspace.yml", "Copy the example training script onto the share"): _ARTIFACTS,
    ("roles/horovod_launch/tasks/workspace.yml", "Create the working directory on the share"): _ARTIFACTS,
}


def task_files() -> list[Path]:
    files = sorted(REPO.glob("roles/*/tasks/**/*.yml")) + sorted(REPO.glob("roles/*/handlers/**/*.yml"))
    return files + sorted(p for p in REPO.glob("playbooks/**/*.yml") if "vars" not in p.relative_to(REPO).parts)


def var_files() -> list[Path]:
    return sorted(
        [
            *REPO.glob("roles/*/defaults/**/*.yml"),
            *REPO.glob("roles/*/vars/**/*.yml"),
            *REPO.glob("playbooks/vars/*.yml"),
        ]
    )


def _load(path: Path) -> Any:
    return yaml.safe_load(path.read_text()) or []


def tasks(node: Any) -> Iterator[dict]:
    """Every task (and play) in `node`, blocks' tasks included."""
    if isinstance(node, list):
        for each in node:
            yield from tasks(each)
    elif isinstance(node, dict):
        yield node
        for key in ("tasks", "pre_tasks", "post_tasks", "handlers", "block", "rescue", "always"):
            yield from tasks(node.get(key))


def _texts(value: Any) -> str:
    """Every string in `value`, joined (a dict's keys left out)."""
    if isinstance(value, dict):
        return " ".join(_texts(v) for v in value.values())
    if isinstance(value, list):
        return " ".join(_texts(v) for v in value)
    return str(value) if value is not None else ""


def definitions() -> dict[str, list[str]]:
    """Every variable the code defines, with the texts of its values (one per place it is defined)."""
    found: dict[str, list[str]] = {}
    for path in var_files():
        for name, value in (_load(path) or {}).items():
            found.setdefault(name, []).append(_texts(value))
    for path in task_files():
        for task in tasks(_load(path)):
            for key in ("vars", "ansible.builtin.set_fact", "set_fact"):
                if isinstance(task.get(key), dict):
                    for name, value in task[key].items():
                        found.setdefault(name, []).append(_texts(value))
    return found


def names_in(text: str) -> set[str]:
    """The names that Jinja in `text` uses: a variable, or of ``a.b.c`` the attribute read last (what a
    plan's result holds is judged by its key: ``__bench_plan.report_dir`` is on the share,
    ``__bench_plan.fetch_dir`` is not). String literals' words count too, erring towards a name too many."""
    jinja = " ".join(a + b for a, b in re.findall(r"{{(.*?)}}|{%(.*?)%}", text, re.S))
    return {
        chain.rsplit(".", 1)[-1] for chain in re.findall(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*", jinja)
    }


def share_names(found: dict[str, list[str]]) -> set[str]:
    """The names that hold, or may hold, a path on the share or in the artifact directory: the seeds above,
    then every variable whose value uses one of them, until nothing is added."""
    settings = set(re.findall(r"\b\w*(?:share|artifact)\w*\b", (REPO / "plugins/plugin_utils/cluster.py").read_text()))
    held = {name for name in [*found, *settings] if NAMED.search(name)} | COMPUTED
    while True:
        more = {name for name, texts in found.items() if name not in held and any(names_in(t) & held for t in texts)}
        if not more:
            return held
        held |= more


SHARE_NAMES = share_names(definitions())


def writes(path: Path) -> Iterator[tuple[str, str, str]]:
    """(task name, module, what it writes) of every writing task in `path`; a path made of the loop's item
    is read with the loop's text."""
    for task in tasks(_load(path)):
        loop_var = (task.get("loop_control") or {}).get("loop_var", "item")
        loop = " ".join(_texts(v) for k, v in task.items() if k == "loop" or k.startswith("with_"))
        for module in (p + w for p in PREFIXES for w in WRITERS):
            args = task.get(module)
            if isinstance(args, dict):
                for key in PATH_ARGS:
                    if isinstance(args.get(key), str):
                        target = args[key]
                        if loop_var in names_in(target):
                            target += " " + loop
                        yield str(task.get("name", "")), module, target


def offenders(path: Path, rel: str = "") -> list[str]:
    rel = rel or str(path.relative_to(REPO))
    return [
        f"{rel}: '{name}' ({module}) writes {target!r}, which may be on the share or in the artifact directory: "
        "use multinode.horovod.share_path (or share_marker), or add the task to ALLOWED with the reason"
        for name, module, target in writes(path)
        if names_in(target) & SHARE_NAMES and (rel, name) not in ALLOWED
    ]


def test_the_variables_found_hold_the_share_and_what_is_made_of_it():
    # Seeds and some of what the code derives from them: the test sees what it must see.
    for name in ("horovod_share_dir", "horovod_artifact_dir", "horovod_launch_share_dir", "horovod_launch_runs_dir",
                 "horovod_launch_example_dir", "horovod_launch_output_dir", "__horovod_shared_dirs",
                 "__horovod_launch_plan", "__horovod_launch_run", "__bench_plan", "report_dir"):  # fmt: skip
        assert name in SHARE_NAMES, name
    assert "ansible_playbook_python" not in SHARE_NAMES


@pytest.mark.parametrize("path", task_files(), ids=lambda p: str(p.relative_to(REPO)))
def test_no_task_writes_on_the_share_through_a_module_that_follows_links(path: Path):
    assert offenders(path) == []


def test_every_allowed_task_exists_and_writes_there():
    # An entry whose task was renamed or changed would let a new task through under an old name.
    seen = {
        (str(path.relative_to(REPO)), name)
        for path in task_files()
        for name, _module, target in writes(path)
        if names_in(target) & SHARE_NAMES
    }
    assert sorted(set(ALLOWED) - seen) == []


# playbooks/benchmark.yml's tasks as they were (issue 42, finding 2), verbatim, and the same writes in the
# other spellings the test must see (a short module name, in a block, a loop of its own name).
OLD_BENCHMARK = """
- name: Measure the cluster
  hosts: horovod_master
  tasks:
    - name: Create the benchmark's directories on the share
      ansible.builtin.file:
        path: "{{ item }}"
        state: directory
        owner: root
        group: root
        mode: "0755"
      loop: ["{{ __bench_plan.script_dir }}", "{{ __bench_plan.report_dir }}"]

    - name: Copy the report onto the share
      ansible.builtin.copy:
        src: "{{ __bench_plan.fetch_dir }}/{{ item }}"
        dest: "{{ __bench_plan.report_dir }}/{{ item }}"
        owner: root
        group: root
        mode: "0644"
      loop: "{{ __bench_report.share_files }}"

    - name: Write report.json and report.md on the controller
      ansible.builtin.copy:
        content: "{{ item.value }}"
        dest: "{{ __bench_plan.fetch_dir }}/{{ item.key }}"
        mode: "0644"
      loop: "{{ __bench_report.files | dict2items }}"
      delegate_to: localhost

    - name: In a block
      block:
        - name: A short module name
          template:
            src: x.j2
            dest: "{{ horovod_share_dir }}/x"
        - name: A loop variable of its own
          ansible.legacy.lineinfile:
            path: "{{ __where }}/x"
            line: x
          loop: ["{{ horovod_launch_share_dir }}"]
          loop_control:
            loop_var: __where
"""


def test_the_old_benchmark_playbook_is_caught(tmp_path: Path):
    old = tmp_path / "benchmark.yml"
    old.write_text(OLD_BENCHMARK)
    found = [line.split(": '", 1)[1].split("' (", 1)[0] for line in offenders(old, "playbooks/benchmark.yml")]
    assert found == [
        "Create the benchmark's directories on the share",
        "Copy the report onto the share",
        "A short module name",
        "A loop variable of its own",
    ]
