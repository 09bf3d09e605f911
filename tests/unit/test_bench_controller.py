# Copyright: multinode.horovod contributors
# SPDX-License-Identifier: GPL-3.0-or-later
"""tools/bench_controller.py (`make bench-controller`) on clusters of 1 and 2 nodes: it finds the site's
plays and the role's tasks by what they do, so a renamed task is still taken and a missing play or
variable stops it with what is missing; its playbooks check their own results (every node in the pin
set, nothing changed, the lists hold every node)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys

import pytest
import yaml
from checkout import REPO, load

bench = load("tools/bench_controller.py", "bench_controller")


def test_the_pin_set_takes_every_set_fact_and_assert_of_the_roles_deciding_files():
    play = bench.ssh_trust_play(2)[0]
    names = [task["name"] for task in play["tasks"][1:-1]]
    wanted = []
    for name in bench.SSH_TRUST_FILES:
        for task in yaml.safe_load((REPO / "roles" / "ssh_trust" / "tasks" / name).read_text()):
            if "ansible.builtin.set_fact" in task or "ansible.builtin.assert" in task:
                wanted.append(task["name"])
    assert names == wanted
    assert "Render the pinned known_hosts and the ssh client configuration once for every node" in names
    assert not [task for task in play["tasks"] if "ansible.builtin.include_tasks" in task]
    # The baseline runs as many tasks, each on as many hosts, and keeps the stand-in facts.
    base = bench.baseline_play(2)[0]["tasks"]
    assert len(base) == len(play["tasks"])
    assert base[0] == play["tasks"][0]
    assert [bool(t.get("run_once")) for t in base[1:]] == [bool(t.get("run_once")) for t in play["tasks"][1:]]


def test_a_renamed_task_is_still_taken_and_a_missing_play_is_named(tmp_path, monkeypatch):
    role = tmp_path / "ssh_trust"
    shutil.copytree(REPO / "roles" / "ssh_trust", role)
    pins = role / "tasks" / "pins.yml"
    pins.write_text(pins.read_text().replace("- name: Find nodes whose host key", "- name: Spot nodes whose host key"))
    monkeypatch.setattr(bench, "SSH_TRUST", role)
    names = [task["name"] for task in bench.ssh_trust_play(2)[0]["tasks"]]
    assert "Spot nodes whose host key differs from the pinned one" in names
    monkeypatch.setattr(bench, "plays", lambda playbook: [])
    with pytest.raises(SystemExit, match=r"no play of playbooks/site.yml includes multinode.horovod.ssh_trust"):
        bench.ssh_trust_play(2)
    with pytest.raises(SystemExit, match=r"playbooks/gate.yml has no play whose hosts: templates a filter"):
        bench.after_gate([])


def test_the_fit_finds_a_square_term_and_none_in_a_line():
    a, b, c = bench.quadratic_fit([(n, 0.5 + 0.02 * n + 0.0003 * n * n) for n in (1, 8, 16, 32, 64)])
    assert (round(a, 6), round(b, 6), round(c, 7)) == (0.5, 0.02, 0.0003)
    assert abs(bench.quadratic_fit([(n, 0.5 + 0.05 * n) for n in (1, 8, 16, 32, 64)])[2]) < 1e-9


def test_every_playbook_runs_after_the_gates_partial_run_play():
    plays = bench.after_gate(bench.ssh_trust_play(2))
    assert plays[0]["name"] == "Validate the inventory on partial runs"
    assert "multinode.horovod." in plays[0]["hosts"]


@pytest.mark.skipif(not shutil.which("ansible-playbook"), reason="ansible-playbook is not on PATH")
def test_the_bench_runs_every_part_and_prints_the_own_work_per_node():
    run = subprocess.run(
        [sys.executable, str(REPO / "tools" / "bench_controller.py"), "--sizes", "1,2", "--repeat", "1"],
        cwd=REPO, env=dict(os.environ), capture_output=True, text=True, check=False, stdin=subprocess.DEVNULL,
        timeout=300,
    )  # fmt: skip
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    for part in bench.PARTS:
        assert re.search(rf"^  {part}:\n\s+1 nodes\s+[0-9.]+s", run.stdout, re.M), part
    assert re.search(r"^\s+2 nodes\s+-?[0-9.]+s\s+\(\s*-?[0-9.]+ ms per node\)$", run.stdout, re.M), run.stdout
