# Copyright: multinode.horovod contributors
# SPDX-License-Identifier: GPL-3.0-or-later
"""tools/machines.py defines the Docker-in-Docker machine once: tools/lab.py builds its machines from it,
and every DinD platform of the Molecule scenarios (YAML, which cannot import it) equals it, but for the
differences it lists with their reasons. A copy that drifts fails, naming the scenario and the field."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml
from checkout import load

REPO = Path(__file__).resolve().parents[2]
machines = load("tools/machines.py", "machines")


def platforms(scenario: str) -> list[dict[str, Any]]:
    data = yaml.safe_load((REPO / "molecule" / scenario / "molecule.yml").read_text())
    return list(data.get("platforms") or [])


def is_dind(platform: dict[str, Any]) -> bool:
    return str(platform.get("image", "")).startswith(tuple(f"multinode-horovod/{name}:" for name in machines.IMAGES))


def test_the_definition_knows_every_scenario_with_dind_machines():
    scenarios = sorted(
        p.parent.name for p in REPO.glob("molecule/*/molecule.yml") if any(map(is_dind, platforms(p.parent.name)))
    )
    assert scenarios == sorted(machines.SCENARIOS)


@pytest.mark.parametrize(
    ("scenario", "platform"),
    [(s, p) for s in machines.SCENARIOS for p in platforms(s)],
    ids=lambda value: value if isinstance(value, str) else value["name"],
)
def test_every_dind_platform_is_the_defined_machine(scenario: str, platform: dict[str, Any]):
    assert machines.drift(scenario, platform) == []


def test_every_difference_is_explained_and_used():
    for (bed, field), (value, reason) in machines.DIFFERENCES.items():
        assert bed in (*machines.SCENARIOS, "lab")
        assert field in machines.molecule_fields(""), field
        assert len(reason) > 20, reason
        assert value != machines.molecule_fields("")[field]


DRIFTS = {
    "a capability dropped": ("capabilities", lambda p: p["capabilities"].remove("NET_RAW")),
    "privileged": ("privileged", lambda p: p.update(privileged=True)),
    "another tmpfs": ("tmpfs", lambda p: p["tmpfs"].append("/tmp")),
    "the difference of another scenario": ("tmpfs", lambda p: p.update(tmpfs=[*p["tmpfs"], "/var/lib/docker:size=8g"])),
    "no cgroup namespace mode": ("cgroupns_mode", lambda p: p.pop("cgroupns_mode")),
    "the cgroup tree read-only": (
        "volumes",
        lambda p: p.update(volumes=[v.replace("cgroup:rw", "cgroup:ro") for v in p["volumes"]]),
    ),
    "no volume for Docker's data": ("volumes", lambda p: p["volumes"].remove("/var/lib/docker")),
    "another environment": ("env", lambda p: p["env"].update(container="podman")),
    "another command": ("command", lambda p: p.update(command="sleep infinity")),
    "another stop signal": ("stop_signal", lambda p: p.pop("stop_signal")),
    "kept volumes": ("keep_volumes", lambda p: p.update(keep_volumes=True)),
    "another image": ("image", lambda p: p.update(image="debian:12")),
}


@pytest.mark.parametrize("drift", sorted(DRIFTS))
def test_a_drifted_copy_fails_naming_the_scenario_and_the_field(drift: str):
    field, change = DRIFTS[drift]
    platform = copy.deepcopy(platforms("docker_horovod")[0])
    change(platform)
    problems = machines.drift("docker_horovod", platform)
    assert len(problems) == 1, problems
    assert problems[0].startswith(f"molecule/docker_horovod/molecule.yml, platform 'docker_horovod-a': {field} is ")


def test_a_difference_is_allowed_only_where_it_is_listed():
    launch = platforms("horovod_launch")[0]
    assert machines.drift("horovod_launch", launch) == []
    problems = machines.drift("docker_horovod", {**launch, "name": "moved"})
    assert [p.split(": ")[1].split(" is ")[0] for p in problems] == ["tmpfs", "volumes"]


def test_the_lab_runs_the_defined_machine():
    lab = load("tools/lab.py", "lab_machines")
    argv = lab.machine_run_argv(lab.MACHINES[1], Path("/share"), Path("/artifacts"))
    defined = machines.docker_run_args()
    start = argv.index(defined[0])
    assert argv[start : start + len(defined)] == defined
    assert "--privileged" not in argv
    assert argv[-2:] == [machines.image("machine"), machines.COMMAND]
    mount = argv[argv.index("--mount") + 1]
    assert f"dst={machines.DOCKER_DATA}," in mount
    assert f"src={lab.MACHINES[1].container}-docker," in mount
