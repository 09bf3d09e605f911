#!/usr/bin/env python3
# Copyright: multinode.horovod contributors
# SPDX-License-Identifier: GPL-3.0-or-later
"""The site's controller-side work on generated clusters of 1 to 64 nodes, without contacting a host.

Each part is an `ansible-playbook` run, timed on its own, per cluster size:

- gate: `site.yml --tags validate --skip-tags probe` on an inventory of one master and N-1 workers on
  TEST-NET addresses nothing answers (the whole inventory validated on the controller);
- host lists: the site's node list, the launch role's plan and hostfile, templated on the master; then,
  on every node, what the site's plays template there from the node list (container_sshd's listen and
  allow lists with the sshd play's own tasks, the NFS mounts' server), taken from playbooks/site.yml;
- ssh pin set: ssh_trust's controller-side tasks (every set_fact and assert of the files where it decides),
  on every node, with ssh_trust_nodes as the site builds it and facts that stand for what the role reads
  on the hosts (one host key per node, all pinned);
- baseline: the same play with as many empty tasks, each on the hosts its task runs on: Ansible's own
  cost per host and task, to tell the pin set's own work from it.

The plays and tasks are found by what they do (the play that runs a role, a task's module), not by their
names, and a missing one stops the run with what is missing. Each of the last three playbooks starts
with the gate's play for partial runs, as every run of the site does: its `hosts:` templates one of the
collection's filters in ansible-playbook's own process, so the workers forked for every host and task
find the collection's filter files loaded, as in the site. The N nodes are inventory names with
`ansible_connection: local`. Printed, not asserted: the time per size and per node added, the ratio of
the last step's per-node cost to the first's (about 1 when the work grows linearly), the least-squares
fit a + b*N + c*N^2 with the share of the N^2 part at the largest size, and the pin set's own work per node.
"""

from __future__ import annotations

import argparse
import base64
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parent.parent
SSH_TRUST = REPO / "roles" / "ssh_trust"
PARTS = ("gate", "host lists", "ssh pin set", "baseline")
# Seconds added from the smallest to the largest size below which a part is flat: the runs' noise on a
# 2-core machine, which a fit would read as a curve.
FLAT = 0.5
# The port in the pins: any (nothing listens), only the known_hosts lines carry it.
PORT = 2222
# ssh_trust's files where it decides; their set_fact and assert tasks connect to no host.
SSH_TRUST_FILES = ("assert.yml", "pins.yml", "main.yml")
CONTROLLER_MODULES = ("ansible.builtin.set_fact", "ansible.builtin.assert")
# The ansible-playbook of the Python that runs this tool (a virtualenv's, active or not), else PATH's.
_BESIDE = Path(sys.executable).with_name("ansible-playbook")
ANSIBLE_PLAYBOOK = str(_BESIDE) if _BESIDE.is_file() else "ansible-playbook"


def missing(what: str) -> SystemExit:
    return SystemExit(f"bench_controller: {what}; update tools/bench_controller.py to the playbooks and roles")


def names(nodes: int) -> list[str]:
    return [f"gpu{i:03d}" for i in range(nodes)]


def address(i: int) -> str:
    return f"198.18.{i // 250}.{i % 250 + 1}"


def write_inventory(hosts: dict[str, dict[str, Any]], group_vars: dict[str, Any], path: Path) -> Path:
    """One master (the first host) and the others as workers, in the site's groups."""
    master = next(iter(hosts))
    data = {
        "all": {
            "children": {
                "horovod_cluster": {
                    "vars": group_vars,
                    "children": {
                        "horovod_master": {"hosts": {master: hosts.pop(master)}},
                        "horovod_workers": {"hosts": hosts},
                    },
                }
            }
        }
    }
    path.write_text(yaml.safe_dump(data))
    return path


def gate_inventory(nodes: int, path: Path) -> Path:
    """A cluster on TEST-NET addresses nothing answers, for the gate."""
    hosts = {name: {"ansible_host": address(i), "horovod_slots": 8} for i, name in enumerate(names(nodes))}
    return write_inventory(hosts, {"ansible_user": "root", "horovod_network_interfaces": ["ib0"]}, path)


def local_inventory(nodes: int, path: Path) -> Path:
    """The same cluster, each node a local connection (nothing is contacted)."""
    hosts = {
        name: {
            "ansible_connection": "local",
            "ansible_python_interpreter": sys.executable,
            "horovod_node_address": address(i),
        }
        for i, name in enumerate(names(nodes))
    }
    return write_inventory(hosts, {"horovod_slots": 8}, path)


def plays(playbook: str) -> list[dict[str, Any]]:
    return yaml.safe_load((REPO / "playbooks" / playbook).read_text())


def role_play(role: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """The play of playbooks/site.yml that runs `role`, and the variables it hands to the role."""
    for play in plays("site.yml"):
        for task in play.get("tasks", []):
            if task.get("ansible.builtin.include_role", {}).get("name") == f"multinode.horovod.{role}":
                return play, task.get("vars", {})
    raise missing(f"no play of playbooks/site.yml includes multinode.horovod.{role}")


def role_input(role: str, name: str) -> Any:
    given = role_play(role)[1]
    if name not in given:
        raise missing(f"playbooks/site.yml does not hand {name} to {role}")
    return given[name]


def after_gate(plays_: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """`plays_` after the gate's play for partial runs (the play of playbooks/gate.yml whose `hosts:` a
    collection's filter templates), which every run of the site goes through first."""
    gate = [play for play in plays("gate.yml") if "multinode.horovod." in str(play.get("hosts", ""))]
    if not gate:
        raise missing("playbooks/gate.yml has no play whose hosts: templates a filter of the collection")
    return [gate[0], *plays_]


def per_node_lists_play() -> dict[str, Any]:
    """What the site templates from the node list on every node, as its plays write it: container_sshd's
    listen and allow lists (the sshd play's own tasks before the role, then the role's two lists) and
    the NFS mounts' server (the mount play's nfs_client_mounts)."""
    sshd, _ = role_play("container_sshd")
    own = [task for task in sshd["tasks"] if "ansible.builtin.include_role" not in task]
    mounts = role_input("nfs_client", "nfs_client_mounts")
    return {
        "name": "The site's per-node host lists",
        "hosts": "horovod_cluster",
        "gather_facts": False,
        "vars": sshd.get("vars", {}),
        "vars_files": [str(REPO / "playbooks" / "vars" / "cluster.yml")],
        "tasks": [
            *own,
            {
                "name": "Template container_sshd's address lists and the NFS mounts",
                "ansible.builtin.set_fact": {
                    "__listen": role_input("container_sshd", "container_sshd_listen_addresses"),
                    "__allow": role_input("container_sshd", "container_sshd_allow_from"),
                    "__mounts": mounts,
                },
            },
            {
                "name": "Check the lists: this node's address, every node's, the master's",
                "ansible.builtin.assert": {
                    "that": [
                        "__listen | length == 1",
                        "__allow | length == groups['horovod_cluster'] | length",
                        "__mounts | map(attribute='server') | unique"
                        " == [hostvars[__horovod_master].horovod_node_address]",
                    ],
                    "quiet": True,
                },
            },
        ],
    }


def host_lists_play() -> list[dict[str, Any]]:
    """The site's node list, the launch plan and the hostfile, templated on the master; then what the
    site templates from the node list on every node."""
    return [
        {
            "name": "The site's host lists",
            "hosts": "horovod_master",
            "gather_facts": False,
            "vars": {
                "__nodes": (
                    "{{ (groups['horovod_master'] + groups['horovod_workers'])"
                    " | multinode.horovod.cluster_nodes(hostvars) }}"
                ),
            },
            "tasks": [
                {
                    "name": "Template the node list, the launch plan and the hostfile",
                    "ansible.builtin.set_fact": {
                        "__plan": (
                            "{{ {'hosts': __nodes, 'np': 0, 'min_np': 0, 'max_np': 0, 'elastic': false,"
                            " 'elastic_cooldown': [10, 300], 'workdir': '', 'output_dir': '', 'code_repo': '',"
                            " 'code_dest': '', 'share_dir': '/srv/share', 'artifact_dir': '/srv/artifacts',"
                            " 'runs_dir': '/srv/artifacts/runs', 'command': [],"
                            " 'example_args': [], 'env': {},"
                            " 'controller': 'gloo', 'extra_args': [], 'image_ids': {},"
                            " 'master': inventory_hostname, 'launcher': 'horovodrun', 'rdzv_port': 29500,"
                            " 'min_nodes': 0, 'max_restarts': 3}"
                            " | multinode.horovod.horovod_launch_plan }}"
                        ),
                        "__hostfile": "{{ __nodes | multinode.horovod.horovod_hostfile }}",
                    },
                },
                {
                    "name": "Check the lists hold every node",
                    "ansible.builtin.assert": {
                        "that": [
                            "__plan.rank_hosts | unique | length == groups['horovod_cluster'] | length",
                            "__hostfile.splitlines() | length == groups['horovod_cluster'] | length",
                        ],
                        "quiet": True,
                    },
                },
            ],
        },
        per_node_lists_play(),
    ]


def site_ssh_trust_vars() -> dict[str, Any]:
    """The variables the site hands to ssh_trust (playbooks/site.yml), as it writes them: ssh_trust_nodes
    is built from every node's hostvars (vars/cluster.yml), which the role reads as the site runs it."""
    return {name: role_input("ssh_trust", name) for name in ("ssh_trust_nodes", "ssh_trust_master", "ssh_trust_mesh")}


def ssh_trust_tasks() -> list[dict[str, Any]]:
    """Every set_fact and assert of ssh_trust's deciding files, in the order the role runs them."""
    tasks = []
    for name in SSH_TRUST_FILES:
        path = SSH_TRUST / "tasks" / name
        if not path.is_file():
            raise missing(f"{path.relative_to(REPO)} is gone")
        tasks += [task for task in yaml.safe_load(path.read_text()) if any(m in task for m in CONTROLLER_MODULES)]
    return tasks


def role_templates(value: Any) -> Any:
    """`value` with each template lookup of a file of ssh_trust given its path (outside the role it needs one)."""
    if isinstance(value, str):
        return re.sub(
            r"(lookup\('ansible\.builtin\.template', ')([^'/]+')", rf"\g<1>{SSH_TRUST}/templates/\g<2>", value
        )
    if isinstance(value, dict):
        return {key: role_templates(item) for key, item in value.items()}
    if isinstance(value, list):
        return [role_templates(item) for item in value]
    return value


def fake_key(seed: str) -> str:
    """``ssh-ed25519 BLOB``: a public key's shape (its blob names its type), not a usable key."""
    blob = len(b"ssh-ed25519").to_bytes(4, "big") + b"ssh-ed25519" + seed.encode()
    return f"ssh-ed25519 {base64.b64encode(blob).decode()}"


def ssh_trust_play(nodes: int) -> list[dict[str, Any]]:
    """ssh_trust's controller-side tasks and both templates on every node, with the site's ssh_trust_nodes
    and with what the role would have read from the hosts."""
    role_tasks = role_templates(ssh_trust_tasks())
    # Keys whose blob encodes their type, as the controller's check of every node's report takes them. The
    # type's SSH string is 15 bytes, so the blob's base64 is that of the type, then that of the rest.
    host_keys = {name: fake_key(f"host-{name}") for name in names(nodes)}
    key = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5{{{{ ('{}' ~ inventory_hostname) | b64encode }}}}"
    facts = {
        "name": "Stand for what the role reads on the hosts: one host key per node, every node pinned",
        "ansible.builtin.set_fact": {
            # What ssh_trust_info returns (tasks/read.yml).
            "__ssh_trust_read": {
                "host_keys": [key.format("host-")],
                "pinned_lines": [f"[{name}]:{PORT} {key}" for name, key in host_keys.items()],
                "authorized_lines": [],
                "bad_host_keys": [],
            },
            "__ssh_trust_keypair": {"changed": False, "public_key": key.format("client-")},
            # What files/ssh_link.py prints in the container (tasks/main.yml): the wrapper linked and found first.
            "__ssh_trust_link": {"stdout": "{{ {'after': __ssh_trust_link_wanted} | to_json }}"},
        },
    }
    # The bench's own check, not the role's work: the texts are the same on every node, checked once.
    check = {
        "name": "Check the pin set holds every node and nothing changed",
        "run_once": True,
        "ansible.builtin.assert": {
            "that": [
                "__ssh_trust_changed | length == 0",
                f"__ssh_trust_known_hosts_text.splitlines() | select('match', '^[^#]') | list | length == {nodes}",
                f"__ssh_trust_client_config.splitlines() | select('match', '^Host ') | list | length == {nodes}",
            ],
            "quiet": True,
        },
    }
    defaults = yaml.safe_load((SSH_TRUST / "defaults" / "main.yml").read_text())
    return [
        {
            "name": "ssh_trust's decisions",
            "hosts": "horovod_cluster",
            "gather_facts": False,
            "vars": {**defaults, **site_ssh_trust_vars(), "ssh_trust_port": PORT},
            # The site's cluster variables (the node list over hostvars), then the role's constants.
            "vars_files": [str(REPO / "playbooks" / "vars" / "cluster.yml"), str(SSH_TRUST / "vars" / "main.yml")],
            "tasks": [facts, *role_tasks, check],
        }
    ]


def baseline_play(nodes: int) -> list[dict[str, Any]]:
    """The pin set's play with the role's tasks and the bench's check replaced by as many empty ones:
    Ansible's own cost per host and task (a worker per host and task, even for set_fact), which the pin
    set's own work comes on top of. The facts that stand for the hosts' reads stay: they are the bench's,
    not the role's work."""
    play = ssh_trust_play(nodes)[0]
    facts, *others = play["tasks"]
    return [
        {
            **play,
            "name": "Ansible's own cost of the pin set's play",
            # Each on the hosts its task runs on: every node, or one (run_once).
            "tasks": [
                facts,
                *(
                    {"name": f"Empty task {i}", "ansible.builtin.set_fact": {"__empty": i}}
                    | ({"run_once": True} if task.get("run_once") else {})
                    for i, task in enumerate(others)
                ),
            ],
        }
    ]


def quadratic_fit(rows: list[tuple[int, float]]) -> tuple[float, float, float]:
    """Least squares a + b*N + c*N**2 through (N, seconds); needs 3 distinct sizes."""
    sums = [sum(n**k for n, _ in rows) for k in range(5)]
    rhs = [sum(t * n**k for n, t in rows) for k in range(3)]
    matrix = [[sums[i + j] for j in range(3)] + [rhs[i]] for i in range(3)]
    for col in range(3):  # Gauss-Jordan elimination with partial pivoting
        pivot = max(range(col, 3), key=lambda r: abs(matrix[r][col]))
        matrix[col], matrix[pivot] = matrix[pivot], matrix[col]
        for row in range(3):
            if row != col:
                factor = matrix[row][col] / matrix[col][col]
                matrix[row] = [x - factor * y for x, y in zip(matrix[row], matrix[col], strict=True)]
    a, b, c = (matrix[i][3] / matrix[i][i] for i in range(3))
    return a, b, c


def collections_dir(tmp: Path) -> Path:
    """A collections directory in `tmp` that holds this checkout as multinode.horovod: the runs find the
    collection's plugins whether or not `make venv` linked it or a copy is installed."""
    link = tmp / "collections" / "ansible_collections" / "multinode/horovod"
    link.parent.mkdir(parents=True)
    link.symlink_to(REPO, target_is_directory=True)
    return tmp / "collections"


def timed(argv: list[str], collections: Path) -> float:
    env = dict(os.environ, ANSIBLE_NOCOLOR="1", ANSIBLE_COLLECTIONS_PATH=str(collections))
    start = time.monotonic()
    res = subprocess.run(argv, cwd=REPO, env=env, capture_output=True, text=True, check=False, stdin=subprocess.DEVNULL)
    took = time.monotonic() - start
    if res.returncode != 0:
        raise SystemExit(f"bench_controller: {' '.join(argv)} failed:\n{res.stdout[-4000:]}\n{res.stderr[-2000:]}")
    return took


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1,8,16,32,64", help="node counts, comma-separated, ascending")
    parser.add_argument("--repeat", type=int, default=3, help="runs per size and part; the fastest counts")
    parser.add_argument("--parts", default=",".join(PARTS), help=f"comma-separated, of: {', '.join(PARTS)}")
    args = parser.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",")]
    parts = [part for part in PARTS if part in args.parts.split(",")]
    results: dict[str, list[tuple[int, float]]] = {part: [] for part in parts}
    with tempfile.TemporaryDirectory(prefix="mnh-bench-controller-") as tmp_dir:
        tmp = Path(tmp_dir)
        collections = collections_dir(tmp)
        for size in sizes:
            gate_inv = gate_inventory(size, tmp / f"gate-{size}.yml")
            local_inv = local_inventory(size, tmp / f"local-{size}.yml")
            for name, plays in (
                ("lists", host_lists_play()),
                ("ssh", ssh_trust_play(size)),
                ("base", baseline_play(size)),
            ):
                (tmp / f"{name}-{size}.yml").write_text(yaml.safe_dump(after_gate(plays), sort_keys=False))
            runs = {
                "gate": [
                    ANSIBLE_PLAYBOOK, "site.yml", "-i", str(gate_inv), "--tags", "validate", "--skip-tags", "probe",
                ],
                "host lists": [ANSIBLE_PLAYBOOK, "-i", str(local_inv), str(tmp / f"lists-{size}.yml")],
                "ssh pin set": [ANSIBLE_PLAYBOOK, "-i", str(local_inv), str(tmp / f"ssh-{size}.yml")],
                "baseline": [ANSIBLE_PLAYBOOK, "-i", str(local_inv), str(tmp / f"base-{size}.yml")],
            }  # fmt: skip
            line = []
            for part in parts:
                best = min(timed(runs[part], collections) for _ in range(args.repeat))
                results[part].append((size, best))
                line.append(f"{part} {best:5.2f}s")
            print(f"[bench-controller] {size:3d} nodes: " + ", ".join(line), flush=True)
    print(
        f"controller-side work of the site (ansible-playbook, best of {args.repeat}; {os.cpu_count()} cores; "
        "no host contacted)"
    )
    for part in parts:
        rows = results[part]
        print(f"  {part}:")
        base_size, base_time = rows[0]
        for size, took in rows:
            per_node = (took - base_time) / (size - base_size) if size > base_size else 0.0
            print(f"    {size:3d} nodes  {took:5.2f}s  (+{took - base_time:5.2f}s, {per_node * 1000:5.1f} ms/node)")
        if len(rows) >= 3:
            (s0, t0), (s1, t1) = rows[0], rows[1]
            (s2, t2), (s3, t3) = rows[-2], rows[-1]
            first, last = (t1 - t0) / (s1 - s0), (t3 - t2) / (s3 - s2)
            ratio = last / first if first > 0 else float("inf")
            print(
                f"    per node: {first * 1000:.1f} ms from {s0} to {s1} nodes, {last * 1000:.1f} ms from {s2} to {s3}"
                f" (x{ratio:.1f}; about 1 is linear)"
            )
            a, b, c = quadratic_fit(rows)
            if t3 - t0 < FLAT:
                print(f"    flat: {t3 - t0:+.2f}s from {s0} to {s3} nodes (within the noise, no fit)")
            else:
                print(
                    f"    fitted {a:.2f} s + {b * 1000:.1f} ms x N + {c * 1e6:.1f} us x N^2: the N^2 part is"
                    f" {c * s3 * s3 / t3 * 100:.0f}% of the time at {s3} nodes (0 or below: linear)"
                )
    if not {"ssh pin set", "baseline"} <= set(parts):
        return 0
    pins = dict(results["ssh pin set"])
    base = dict(results["baseline"])
    print(
        "  the pin set's own work (ssh pin set minus baseline, the same play with empty tasks; the same per node"
        " at every size is linear):"
    )
    for size in sizes:
        own = pins[size] - base[size]
        print(f"    {size:3d} nodes  {own:5.2f}s  ({own / size * 1000:5.1f} ms per node)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
