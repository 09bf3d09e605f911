"""The site's first play stops on a broken inventory, names the fix, and touches no host."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.skipif(not shutil.which("ansible-playbook"), reason="run through make unit")


def inventory(tmp_path: Path, master: dict, workers: dict, cluster_vars: dict | None = None) -> Path:
    data = {
        "all": {
            "children": {
                "horovod_cluster": {
                    "vars": cluster_vars or {},
                    "children": {
                        "horovod_master": {"hosts": master},
                        "horovod_workers": {"hosts": workers},
                    },
                }
            }
        }
    }
    path = tmp_path / "hosts.yml"
    path.write_text(yaml.safe_dump(data))
    return path


def validate(inv: Path) -> subprocess.CompletedProcess[str]:
    # Every host is unreachable (TEST-NET addresses, no ssh): a play that tried to connect would fail
    # differently, so a pass or a validation message proves nothing but the first play ran.
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=str(REPO / ".cache" / "collections"), ANSIBLE_NOCOLOR="1")
    return subprocess.run(
        ["ansible-playbook", "site.yml", "-i", str(inv), "--tags", "validate"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )


def test_example_inventory_is_valid():
    res = validate(REPO / "inventories" / "example")
    assert res.returncode == 0, res.stdout + res.stderr


def test_lab_inventory_is_valid():
    res = validate(REPO / "inventories" / "lab")
    assert res.returncode == 0, res.stdout + res.stderr


@pytest.mark.parametrize(
    ("master", "workers", "cluster_vars", "expected"),
    [
        ({}, {"b": {"ansible_host": "192.0.2.11"}}, {}, "horovod_master: the group is missing or empty"),
        (
            {"a": {"ansible_host": "192.0.2.10"}, "b": {"ansible_host": "192.0.2.11"}},
            {},
            {},
            "there must be exactly one",
        ),
        (
            {"a": {"ansible_host": "192.0.2.10"}},
            {"b": {"ansible_host": "192.0.2.10"}},
            {},
            "address 192.0.2.10 is also a's",
        ),
        (
            {"a": {"ansible_host": "192.0.2.10"}},
            {"b": {"ansible_host": "192.0.2.11", "horovod_slots": -4}},
            {},
            "b: horovod_slots=-4 is not a positive integer",
        ),
        (
            {"a": {"ansible_host": "192.0.2.10"}},
            {"b": {"ansible_host": "192.0.2.11"}},
            {"horovod_shared_storage": "s3"},
            "horovod_shared_storage='s3'",
        ),
    ],
)
def test_broken_inventory_stops_with_the_fix(tmp_path, master, workers, cluster_vars, expected):
    res = validate(inventory(tmp_path, master, workers, cluster_vars))
    assert res.returncode != 0
    out = res.stdout + res.stderr
    assert "Fix the inventory first (nothing was changed)" in out
    assert expected in out


def test_host_in_both_groups(tmp_path):
    inv = inventory(tmp_path, {"a": {"ansible_host": "192.0.2.10"}}, {"a": {}, "b": {"ansible_host": "192.0.2.11"}})
    res = validate(inv)
    assert res.returncode != 0
    assert "a: in both horovod_master and horovod_workers" in res.stdout + res.stderr
