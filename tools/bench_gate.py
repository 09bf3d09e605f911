#!/usr/bin/env python3
# Copyright: multinode.horovod contributors
# SPDX-License-Identifier: GPL-3.0-or-later
"""Benchmark of the site's gate (playbooks/gate.yml) on generated inventories of 8 to 64 nodes.

Each inventory has one master and N-1 workers on TEST-NET addresses that nothing answers; the run is
`ansible-playbook site.yml --tags validate --skip-tags probe`, so only the controller-side gate runs
and no host is contacted. Printed, not asserted: the wall time per size, the time of an empty run
(Ansible's own start-up, measured the same way on a one-node inventory with the gate's plays only)
and the growth per node, which should be linear and stay well under 5 s at 64 nodes.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parent.parent


def inventory(nodes: int, path: Path) -> Path:
    hosts = {
        f"gpu{i:03d}": {"ansible_host": f"198.18.{i // 250}.{i % 250 + 1}", "horovod_slots": 8} for i in range(nodes)
    }
    master = next(iter(hosts))
    data = {
        "all": {
            "children": {
                "horovod_cluster": {
                    "vars": {"ansible_user": "root", "horovod_network_interfaces": ["ib0"]},
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


def timed_run(inv: Path) -> float:
    env = dict(os.environ, ANSIBLE_NOCOLOR="1")
    start = time.monotonic()
    res = subprocess.run(
        ["ansible-playbook", "site.yml", "-i", str(inv), "--tags", "validate", "--skip-tags", "probe"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    took = time.monotonic() - start
    if res.returncode != 0:
        raise SystemExit(f"bench_gate: the gate refused the generated inventory:\n{res.stdout}\n{res.stderr}")
    return took


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1,8,16,32,64", help="node counts, comma-separated")
    parser.add_argument("--repeat", type=int, default=3, help="runs per size; the fastest counts")
    args = parser.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",")]
    results = []
    with tempfile.TemporaryDirectory(prefix="mnh-bench-gate-") as tmp:
        for size in sizes:
            inv = inventory(size, Path(tmp) / f"hosts-{size}.yml")
            best = min(timed_run(inv) for _ in range(args.repeat))
            results.append((size, best))
            print(f"[bench-gate] {size:3d} nodes: {best:5.2f}s", flush=True)
    base_size, base_time = results[0]
    print(f"gate benchmark (ansible-playbook site.yml --tags validate, best of {args.repeat}; {os.cpu_count()} cores)")
    for size, took in results:
        extra = took - base_time
        per_node = extra / (size - base_size) if size > base_size else 0.0
        print(
            f"  {size:3d} nodes  {took:5.2f}s  (+{extra:4.2f}s over {base_size} node, {per_node * 1000:4.1f} ms/node)"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
