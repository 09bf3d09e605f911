# Copyright: multinode.horovod contributors
# SPDX-License-Identifier: GPL-3.0-or-later
"""The state files under the state directory (default /var/lib/multinode-horovod/umlbed): one
instances/<name>/instance.json per instance and bed.json for the bridge and the iptables rules. Every
resource is recorded here before it is made, so `down-all` removes exactly what was created, also
after a failed or interrupted run.
"""

from __future__ import annotations

import contextlib
import json
from dataclasses import asdict, dataclass
from pathlib import Path


@dataclass
class Instance:
    name: str
    address: str
    tap: str  # the host's end of its veth pair on the bridge (the name older state files use)
    mac: str
    umid: str
    base: str
    cow: str
    console: str
    pid: int = 0

    @property
    def key(self) -> Path:
        return Path(self.base).parent / "bed_key"


def instances_dir(state_dir: Path) -> Path:
    return state_dir / "instances"


def load_instances(state_dir: Path) -> list[Instance]:
    found = []
    for path in sorted(instances_dir(state_dir).glob("*/instance.json")):
        with contextlib.suppress(OSError, ValueError, TypeError):
            found.append(Instance(**json.loads(path.read_text())))
    return found


def save_instance(state_dir: Path, inst: Instance) -> None:
    path = instances_dir(state_dir) / inst.name / "instance.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(asdict(inst), indent=2) + "\n")
    tmp.rename(path)


def load_bed_state(state_dir: Path) -> dict[str, object]:
    path = state_dir / "bed.json"
    if not path.is_file():
        return {"bridge": None, "rules": []}
    return json.loads(path.read_text())


def save_bed_state(state_dir: Path, state: dict[str, object]) -> None:
    state_dir.mkdir(parents=True, exist_ok=True)
    tmp = state_dir / "bed.json.tmp"
    tmp.write_text(json.dumps(state, indent=2) + "\n")
    tmp.rename(state_dir / "bed.json")
