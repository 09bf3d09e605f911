# Copyright: multinode.horovod contributors
# SPDX-License-Identifier: GPL-3.0-or-later
"""SECURITY.md points every guarantee at the test that proves it: those tests must exist.

Every path in backticks must exist, every `test_...` name must be a test function in the repository
(in the file named with `::`, or anywhere under tests/ and molecule/), and every docker_horovod play
quoted by name must be a play of that scenario."""

from __future__ import annotations

import functools
import re
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[2]
TEXT = (REPO / "SECURITY.md").read_text()
CODE = re.findall(r"`([^`]+)`", TEXT)
PATH_RE = re.compile(r"[\w./-]+\.(py|yml|md)(::\w+)?")


@functools.cache
def defined_tests() -> frozenset[str]:
    names: set[str] = set()
    for path in [*REPO.glob("tests/**/*.py"), *REPO.glob("molecule/**/*.py")]:
        if path.is_file():
            names.update(re.findall(r"^def (test_\w+)", path.read_text(), flags=re.M))
    return frozenset(names)


def missing_paths(tokens: list[str]) -> list[str]:
    return [t for t in tokens if PATH_RE.fullmatch(t) and not (REPO / t.split("::")[0]).is_file()]


def missing_tests(tokens: list[str]) -> list[str]:
    missing = [t for t in tokens if re.fullmatch(r"test_\w+", t) and t not in defined_tests()]
    for ref in (t for t in tokens if PATH_RE.fullmatch(t) and "::" in t):
        path, name = ref.split("::")
        if not (REPO / path).is_file() or not re.search(rf"^def {name}\b", (REPO / path).read_text(), flags=re.M):
            missing.append(ref)
    return missing


def unpinned_links(text: str) -> list[str]:
    """Links into upstream sources that name a branch: the line numbers and behaviour cited move with it."""
    refs = re.findall(r"https://github\.com/[\w.-]+/[\w.-]+/blob/([^/)\s]+)/", text)
    return [ref for ref in refs if not re.fullmatch(r"v\d+(\.\d+)+", ref)]


def missing_plays(text: str) -> list[str]:
    # verify.yml's plays and those of the playbooks it imports (the long ones, make test-all).
    scenario = REPO / "molecule/docker_horovod"
    entries = yaml.safe_load((scenario / "verify.yml").read_text())
    for entry in [e for e in entries if "ansible.builtin.import_playbook" in e]:
        entries += yaml.safe_load((scenario / entry["ansible.builtin.import_playbook"]).read_text())
    plays = {play["name"] for play in entries if "hosts" in play}
    quoted = re.findall(r'docker_horovod\'s "([^"]+)"', " ".join(text.split()))
    return [q for q in quoted if q not in plays]


def test_every_named_path_exists():
    assert len([t for t in CODE if PATH_RE.fullmatch(t)]) >= 10
    assert missing_paths(CODE) == []


def test_every_named_test_exists_where_it_is_said_to_be():
    assert len([t for t in CODE if t.startswith("test_")]) >= 10
    assert missing_tests(CODE) == []


def test_every_quoted_docker_horovod_play_exists():
    assert len(re.findall(r'docker_horovod\'s "', TEXT)) >= 3
    assert missing_plays(TEXT) == []


def test_every_upstream_source_link_names_a_release():
    assert len(re.findall(r"https://github\.com/[\w.-]+/[\w.-]+/blob/", TEXT)) >= 10
    assert unpinned_links(TEXT) == []


def test_the_checks_find_what_is_not_there():
    assert missing_paths(["molecule/no_such/verify.yml", "README.md"]) == ["molecule/no_such/verify.yml"]
    assert missing_tests(["test_no_such_guarantee", "test_root_has_no_password"]) == ["test_no_such_guarantee"]
    assert missing_tests(["molecule/nfs/tests/test_nfs_server.py::test_root_has_no_password"]) != []
    assert missing_plays('docker_horovod\'s "Verify nothing at all"') == ["Verify nothing at all"]
    assert unpinned_links(
        "[a](https://github.com/pytorch/pytorch/blob/main/torch/distributed/run.py) "
        "[b](https://github.com/pytorch/pytorch/blob/v2.5.1/torch/distributed/run.py)"
    ) == ["main"]
