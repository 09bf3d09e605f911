# Copyright: multinode.horovod contributors
# SPDX-License-Identifier: GPL-3.0-or-later
"""molecule/shared/tasks/expect_failure.yml, the scenarios' one check that a run is refused, can fail.

One ansible-playbook run on this machine (local connection), one inventory host per case: each host
includes the helper with its own case. A refused run that says the expected words passes; an accepted
run, a failure for another reason (words missing, an absent word said, another task, hosts changed)
must make the helper itself fail on that host, saying why.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from checkout import COLLECTIONS

REPO = Path(__file__).resolve().parents[2]
HELPER = REPO / "molecule" / "shared" / "tasks" / "expect_failure.yml"

pytestmark = pytest.mark.skipif(not shutil.which("ansible-playbook"), reason="ansible-playbook is not on PATH")


def sh(script: str) -> list[str]:
    return ["sh", "-c", script]


RECAP = "localhost                  : ok=3    changed={}    unreachable=0    failed=1    skipped=0"

# host: (the case's variables, None when the helper must pass, else a text its failure must say)
CASES: dict[str, tuple[dict[str, Any], str | None]] = {
    "refused": ({"command": sh("echo 'no such   thing' >&2; exit 3"), "words": ["no such thing"]}, None),
    "refused_one_word": ({"command": sh("echo 'it is refused'; exit 1"), "words": "refused"}, None),
    "accepted": ({"command": sh("echo 'no such thing'; exit 0"), "words": ["no such thing"]}, "the run was accepted"),
    "other_reason": ({"command": sh("echo 'disk full' >&2; exit 1"), "words": ["no such thing"]}, 'missing: ["no such'),
    "some_words": (
        {"command": sh("echo 'no such thing'; exit 1"), "words": ["no such thing", "in the share"]},
        'missing: ["in the share"]',
    ),
    "no_words": ({"command": sh("exit 1"), "words": []}, "saying []"),
    "absent_said": (
        {"command": sh("echo 'no such thing: hunter2'; exit 1"), "words": ["no such thing"], "absent": ["hunter2"]},
        'present: ["hunter2"]',
    ),
    "absent_not_said": (
        {"command": sh("echo 'no such thing'; exit 1"), "words": ["no such thing"], "absent": ["hunter2"]},
        None,
    ),
    "unchanged": (
        {
            "command": sh(f"echo 'no such thing'; echo '{RECAP.format(0)}'; exit 2"),
            "words": "no such",
            "unchanged": True,
        },
        None,
    ),
    "changed": (
        {
            "command": sh(f"echo 'no such thing'; echo '{RECAP.format(1)}'; exit 2"),
            "words": "no such",
            "unchanged": True,
        },
        'changed= in its recap: ["1"]',
    ),
    "role_refused": ({"role": "refuser", "words": ["refused it"], "task": "Refuse the value"}, None),
    "role_refused_elsewhere": (
        {"role": "refuser", "words": ["refused it"], "task": "Check the value"},
        'it stopped in the task "Refuse the value"',
    ),
    "role_accepted": ({"role": "refuser", "value": "fine", "words": ["refused"]}, "the run was accepted"),
}

PLAYBOOK = [
    {
        "name": "Check the expect-failure helper",
        "hosts": "all",
        "gather_facts": False,
        "tasks": [
            {
                "name": "Run the case",
                "ansible.builtin.include_tasks": str(HELPER),
                # What a caller gives: the case's inputs, and the role's variable.
                "vars": {
                    "expect_failure_name": "{{ inventory_hostname }}",
                    "refuser_value": "{{ case_value | default('it') }}",
                },
            }
        ],
    }
]

ROLE_TASKS = [
    {
        "name": "Refuse the value",
        "ansible.builtin.fail": {"msg": "refused {{ refuser_value }}"},
        "when": "refuser_value != 'fine'",
    },
    {"name": "Accept the value", "ansible.builtin.debug": {"msg": "{{ refuser_value }}"}},
]


def host_vars(case: dict[str, Any]) -> dict[str, Any]:
    names = {"command": "expect_failure_command", "role": "expect_failure_role", "words": "expect_failure_words"}
    names |= {"absent": "expect_failure_absent", "task": "expect_failure_task"}
    names |= {"unchanged": "expect_failure_unchanged", "value": "case_value"}
    return {names[key]: value for key, value in case.items()}


@pytest.fixture(scope="module")
def outcome(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The json callback's record of the one run of every case."""
    tmp = tmp_path_factory.mktemp("expect_failure")
    (tmp / "roles" / "refuser" / "tasks").mkdir(parents=True)
    (tmp / "roles" / "refuser" / "tasks" / "main.yml").write_text(yaml.safe_dump(ROLE_TASKS))
    (tmp / "playbook.yml").write_text(yaml.safe_dump(PLAYBOOK))
    hosts = {name: host_vars(case) for name, (case, _unused) in CASES.items()}
    inventory = {
        "all": {
            "vars": {"ansible_connection": "local", "ansible_python_interpreter": sys.executable},
            "hosts": hosts,
        }
    }
    (tmp / "inventory.yml").write_text(yaml.safe_dump(inventory))
    env = dict(
        os.environ,
        ANSIBLE_COLLECTIONS_PATH=str(COLLECTIONS),
        ANSIBLE_ROLES_PATH=str(tmp / "roles"),
        ANSIBLE_STDOUT_CALLBACK="ansible.builtin.json",
        ANSIBLE_NOCOLOR="1",
        ANSIBLE_FORKS="16",
        ANSIBLE_LOCAL_TEMP=str(tmp / "tmp"),
    )
    env.pop("ANSIBLE_CALLBACKS_ENABLED", None)
    res = subprocess.run(
        ["ansible-playbook", "-i", str(tmp / "inventory.yml"), str(tmp / "playbook.yml")],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert res.returncode in {0, 2}, res.stdout[-3000:] + res.stderr[-3000:]
    return json.loads(res.stdout)


def failures(outcome: dict[str, Any], host: str) -> list[tuple[str, str]]:
    """(task name, message) of every failure of `host` that no rescue caught."""
    found = []
    for play in outcome["plays"]:
        for task in play["tasks"]:
            result = task["hosts"].get(host)
            if result and result.get("failed") and not result.get("ignore_errors"):
                found.append((task["task"]["name"], str(result.get("msg", ""))))
    return found


@pytest.mark.parametrize("host", sorted(CASES))
def test_the_helper_passes_a_refusal_and_fails_anything_else(outcome: dict[str, Any], host: str) -> None:
    _unused, must_say = CASES[host]
    stats = outcome["stats"][host]
    if must_say is None:
        assert stats["failures"] == 0, failures(outcome, host)
        assert stats["rescued"] == 1, stats  # the run did fail, inside the helper
        return
    assert stats["failures"] == 1, f"{host}: the helper passed a case it must fail: {stats}"
    # The json callback names a task once for all hosts: the message names the case.
    (msg,) = [msg for task, msg in failures(outcome, host) if task.startswith("Check the run was refused as expected")]
    assert msg.startswith(f"{host}: ")
    assert must_say in msg, msg
