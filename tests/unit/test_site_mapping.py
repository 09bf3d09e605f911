# Copyright: multinode.horovod contributors
# SPDX-License-Identifier: GPL-3.0-or-later
"""The gate judges what site.yml really hands each role: the one mapping from settings to role inputs
(docs/architecture.md, "Roles and how they compose").

The real site.yml runs, over local connections and in check mode, with stand-in roles that record the
options of their argument spec they were given; what each role received on each node must be what
the gate computed for it (gate.check(...).inputs, the mapping in plugins/plugin_utils/cluster.py) plus
the role variables the inventory sets itself. Inventories: the example, the lab, and two that turn
the ssh mesh on (the mpi controller; ssh_trust_mesh; both with horovod_trust_workers) and set what the
site honours from the inventory.
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
from ansible.inventory.manager import InventoryManager
from ansible.parsing.dataloader import DataLoader
from ansible.vars.manager import VariableManager
from ansible_collections.multinode.horovod.plugins.plugin_utils import gate, roles

REPO = Path(__file__).resolve().parents[2]
TAGS = ",".join(roles.ROLES)  # the plays that include a role (not the storage check, which writes)

pytestmark = pytest.mark.skipif(not shutil.which("ansible-playbook"), reason="ansible-playbook is not on PATH")


def cluster(master: dict[str, Any], worker: dict[str, Any], **settings: Any) -> dict[str, Any]:
    workers = {"gpu-b": {"ansible_host": "192.0.2.21", **worker}, "gpu-c": {"ansible_host": "192.0.2.22"}}
    return {
        "all": {
            "children": {
                "horovod_cluster": {
                    "vars": settings,
                    "children": {
                        "horovod_master": {"hosts": {"gpu-a": {"ansible_host": "192.0.2.20", **master}}},
                        "horovod_workers": {"hosts": workers},
                    },
                }
            }
        }
    }


INVENTORIES: dict[str, Any] = {
    "example": REPO / "inventories" / "example",
    "lab": REPO / "inventories" / "lab",
    "mpi": cluster(
        {"horovod_launch_controller": "mpi", "horovod_slots": 2, "horovod_launch_runs_dir": "/srv/artifacts/r"},
        {"container_sshd_allow_from": ["192.0.2.0/24"], "horovod_slots": 8},
        horovod_share_root="/srv/",
        horovod_share_dir="/srv/share",
        horovod_artifact_dir="/srv/artifacts",
        horovod_ssh_port=2222,
        horovod_nfs_export_options=["rw", "sync", "no_subtree_check", "root_squash"],
        horovod_train_command=["python3", "/srv/artifacts/train.py"],
        horovod_trust_workers=True,
    ),
    "mesh": cluster(
        {"ssh_trust_mesh": "yes", "container_sshd_listen_addresses": ["192.0.2.20"]},
        {"horovod_node_address": "198.51.100.21"},
        horovod_shared_storage="existing",
        horovod_container_name="trainer",
        horovod_network_interfaces=["eth1"],
        horovod_trust_workers="yes",
    ),
}


def stand_in(role: str) -> list[dict[str, Any]]:
    """A role that writes the options of the real role's spec it was given to OUT/<host>.<role>.json."""
    options = "|".join(sorted(roles.spec(role)))
    return [
        {
            "name": "Record what the role was given",
            "ansible.builtin.copy": {
                "content": "{{ dict(__given | zip(query('ansible.builtin.vars', *__given))) | to_json }}",
                "dest": f"{{{{ __mapping_out }}}}/{{{{ inventory_hostname }}}}.{role}.json",
                "mode": "0644",
            },
            "vars": {"__given": f"{{{{ query('ansible.builtin.varnames', '^({options})$') }}}}"},
            "delegate_to": "localhost",
            "check_mode": False,
        }
    ]


@pytest.fixture(scope="module")
def collections(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """multinode.horovod with the real playbooks and plugins and stand-ins for its roles."""
    root = tmp_path_factory.mktemp("stand-ins")
    collection = root / "ansible_collections" / "multinode" / "horovod"
    for role in roles.ROLES:
        (collection / "roles" / role / "tasks").mkdir(parents=True)
        (collection / "roles" / role / "tasks" / "main.yml").write_text(yaml.safe_dump(stand_in(role)))
    for part in ("plugins", "playbooks", "meta"):
        (collection / part).symlink_to(REPO / part)
    return root


def inventory_path(name: str, tmp_path: Path) -> Path:
    data = INVENTORIES[name]
    if isinstance(data, Path):
        return data
    path = tmp_path / f"{name}.yml"
    path.write_text(yaml.safe_dump(data))
    return path


def received(inventory: Path, collections: Path, out: Path) -> dict[str, dict[str, Any]]:
    """{node: {role: what the stand-in recorded}} after the real site.yml ran."""
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=str(collections), ANSIBLE_NOCOLOR="1")
    argv = ["ansible-playbook", "site.yml", "-i", str(inventory), "--check", "-c", "local", "--tags", TAGS]
    argv += ["--skip-tags", "probe", "-e", f"__mapping_out={out}", "-e", f"ansible_python_interpreter={sys.executable}"]
    run = subprocess.run(argv, cwd=REPO, env=env, capture_output=True, text=True, check=False)
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-2000:]
    found: dict[str, dict[str, Any]] = {}
    for path in out.glob("*.json"):
        node, role = path.name[: -len(".json")].rsplit(".", 1)
        found.setdefault(node, {})[role] = json.loads(path.read_text())
    return found


def judged(inventory: Path) -> dict[str, dict[str, Any]]:
    """{node: {role: what the gate judged the role gets}}: the site's mapping over the inventory's own
    role variables, read the way Ansible reads the inventory."""
    loader = DataLoader()
    manager = InventoryManager(loader, sources=[str(inventory)])
    variables = VariableManager(loader=loader, inventory=manager)
    hostvars = {host.name: variables.get_vars(host=host) for host in manager.get_hosts()}
    report = gate.check(manager.get_groups_dict(), hostvars)
    assert report.errors == []
    return {
        node: {
            role: {**{k: v for k, v in hostvars[node].items() if k in roles.spec(role)}, **inputs}
            for role, inputs in mapped.items()
        }
        for node, mapped in report.inputs.items()
    }


@pytest.mark.parametrize("name", sorted(INVENTORIES))
def test_the_roles_get_what_the_gate_judged(name: str, collections: Path, tmp_path: Path) -> None:
    inventory = inventory_path(name, tmp_path)
    out = tmp_path / "received"
    out.mkdir()
    assert differences(json.loads(json.dumps(judged(inventory))), received(inventory, collections, out)) == []


def differences(expected: dict[str, dict[str, Any]], got: dict[str, dict[str, Any]]) -> list[str]:
    """Each role variable whose value the role got differs from the gate's, as one line."""
    out = []
    for node in sorted(set(expected) | set(got)):
        for role in sorted(set(expected.get(node, {})) | set(got.get(node, {}))):
            judged_here, got_here = expected.get(node, {}).get(role), got.get(node, {}).get(role)
            if judged_here is None or got_here is None:
                out.append(f"{node}: {role} {'ran without' if judged_here is None else 'did not run despite'} the gate")
                continue
            out += [
                f"{node}: {name}: the gate judged {judged_here.get(name, '(not set)')!r}, "
                f"the role got {got_here.get(name, '(not set)')!r}"
                for name in sorted(set(judged_here) | set(got_here))
                if judged_here.get(name, "(not set)") != got_here.get(name, "(not set)")
            ]
    return out


def test_the_inventories_cover_what_the_mapping_decides(tmp_path: Path) -> None:
    seen = [judged(inventory_path(name, tmp_path)) for name in sorted(INVENTORIES)]
    ran = {role for each in seen for mapped in each.values() for role in mapped}
    assert ran == set(roles.ROLES)  # every role, nfs_server and nfs_client included
    mesh = {inputs["ssh_trust"]["ssh_trust_mesh"] for each in seen for inputs in each.values()}
    assert mesh == {True, False}
