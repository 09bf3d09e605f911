#!/usr/bin/env python3
# Copyright: multinode.horovod contributors
# SPDX-License-Identifier: GPL-3.0-or-later
"""Host discovery of an elastic run of multinode.horovod.horovod_launch (horovodrun --host-discovery-script).

horovod_launch copies this file into the run's directory as ``discover-hosts.py``, beside
``discovery.json`` (the run's hosts from the inventory: ``{"hosts": [{"address", "slots"}], "ssh": [...],
"timeout": S}``). horovodrun's elastic driver runs it in the master's container about once a second and
reads one ``ADDRESS:SLOTS`` line per host that may take part.

A host is listed when its container answers over the containers' ssh with the pinned host key (the same
ssh options as the role's other ssh: BatchMode, StrictHostKeyChecking=yes, the run's identity): a
stopped container, a dead host or a changed host key leaves the host out, and the driver moves its ranks
to the others. Every host is asked at once, each for at most ``timeout`` seconds, in inventory order.

Each time the set changes, the script records it for playbooks/status.yml: ``hosts.current``
(``{"hosts": [...], "since": EPOCH}``, replaced atomically) and a line in ``hosts.log``
(``EPOCH ADDRESS:SLOTS,...``). It exits 0 whenever it could ask (an empty list means that no host
answers right now); 1 only when discovery.json cannot be read, which horovodrun treats as a
misconfiguration on its first call (the run stops at once) and as a passing error later.
"""

import json
import os
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Callable, List, Sequence  # Python 3.6: no PEP 585/604 forms

CONFIG = "discovery.json"
CURRENT = "hosts.current"
LOG = "hosts.log"


def answers(ssh: Sequence[str], address: str, timeout: float) -> bool:
    """Whether the container at `address` runs a command over the pinned ssh within `timeout` seconds."""
    try:
        done = subprocess.run(
            [*ssh, address, "true"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            timeout=timeout,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return False
    return done.returncode == 0


def discover(config: dict, ask: Callable[[Sequence[str], str, float], bool] = answers) -> List[str]:
    """``ADDRESS:SLOTS`` of every host of `config` that answers, in the order of the inventory."""
    hosts = config["hosts"]
    if not hosts:
        return []
    timeout = float(config.get("timeout", 5))
    with ThreadPoolExecutor(max_workers=min(len(hosts), 32)) as pool:
        alive = list(pool.map(lambda host: ask(config["ssh"], host["address"], timeout), hosts))
    return [f"{host['address']}:{int(host['slots'])}" for host, up in zip(hosts, alive) if up]


def record(run_dir: Path, lines: List[str], now: float) -> bool:
    """Write the host set into hosts.current and hosts.log when it changed; whether it did."""
    current = run_dir / CURRENT
    try:
        if json.loads(current.read_text()).get("hosts") == lines:
            return False
    except (OSError, ValueError, AttributeError):
        pass
    temporary = run_dir / f".{CURRENT}.{os.getpid()}"
    temporary.write_text(json.dumps({"hosts": lines, "since": int(now)}) + "\n")
    temporary.replace(current)
    with (run_dir / LOG).open("a") as log:
        log.write(f"{int(now)} {','.join(lines)}\n")
    return True


def main(argv: List[str]) -> int:
    run_dir = Path(argv[1]) if len(argv) > 1 else Path(__file__).resolve().parent
    try:
        config = json.loads((run_dir / CONFIG).read_text())
        lines = discover(config)
    except (OSError, ValueError, KeyError, TypeError) as exc:
        print(f"horovod_launch discovery: cannot read {run_dir / CONFIG}: {exc}", file=sys.stderr)
        return 1
    print("\n".join(lines))
    try:
        record(run_dir, lines, time.time())
    except OSError as exc:
        print(f"horovod_launch discovery: cannot record the hosts in {run_dir}: {exc}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
