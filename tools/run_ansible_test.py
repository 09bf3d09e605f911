#!/usr/bin/env python3
# Copyright: multinode.horovod contributors
# SPDX-License-Identifier: GPL-3.0-or-later
"""Run ansible-test (sanity, units) on the collection, as the collections Ansible ships are tested.

ansible-test wants the collection at ``ansible_collections/<namespace>/<name>``: the collection as
``ansible-galaxy collection build`` ships it (galaxy.yml's build_ignore), plus its ``tests/``, is copied
to ``ansible_collections/multinode/horovod`` in a directory of the system's temporary directory and
tested there. Not below this checkout: ansible-test would take the checkout's git repository for the
collection's and find the copy ignored. The development tooling that is not part of the collection
(tools/, images/, the Makefile) is left out; the Molecule scenarios are tests and stay.

Each sanity test runs in a virtualenv of its own with the versions ansible-test pins (``--venv``). It
bootstraps pip in them with a script it downloads from ci-files.testing.ansible.com unless
``~/.ansible/test/cache/get_pip_<version>.py`` exists; that host is not reachable from every network,
so tools/ansible_test_get_pip.py is put there first (it installs pip from the standard library's
ensurepip and the package index pip is configured with).

    run_ansible_test.py sanity [--python 3.11 ...]   every sanity test that applies (pslint: no PowerShell)
    run_ansible_test.py units [--python 3.11 ...]    tests/unit/plugins, the plugins' unit tests
"""

from __future__ import annotations

import argparse
import fnmatch
import hashlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import ansible_test  # the installed ansible-test, which names the pip version it bootstraps
import yaml

REPO = Path(__file__).resolve().parent.parent
_COPY = f"mnh-ansible-test-{os.getuid()}-{hashlib.sha256(str(REPO).encode()).hexdigest()[:12]}"
_GALAXY = yaml.safe_load((REPO / "galaxy.yml").read_text())
ROOT = Path(tempfile.gettempdir()) / _COPY / "ansible_collections" / _GALAXY["namespace"] / _GALAXY["name"]
GET_PIP = REPO / "tools" / "ansible_test_get_pip.py"
# Not part of the collection, and not its tests: development tooling.
TOOLING = ("tools/", "images/", ".ci/", "Makefile", "requirements.txt", "pyproject.toml")
# Sanity tests that do not apply: no PowerShell in the collection.
SKIPPED = ("pslint",)


def ansible_test_command() -> str:
    beside = Path(sys.executable).with_name("ansible-test")
    return str(beside) if beside.is_file() else "ansible-test"


def collection_files() -> list[str]:
    """The files to test: tracked and untracked-not-ignored, minus build_ignore (tests kept) and tooling."""
    listed = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z"],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split("\0")
    ignore = [p for p in _GALAXY.get("build_ignore", []) if p not in ("tests", "molecule")]

    def ignored(name: str) -> bool:
        return name.startswith(TOOLING) or any(fnmatch.fnmatch(name, p) or name.startswith(f"{p}/") for p in ignore)

    return [name for name in listed if name and (REPO / name).is_file() and not ignored(name)]


def copy_collection() -> None:
    if ROOT.exists():
        shutil.rmtree(ROOT)
    for name in collection_files():
        target = ROOT / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(REPO / name, target)


def pip_bootstrap() -> None:
    """Put the stand-in for the pip bootstrap script where ansible-test looks for its cached copy."""
    source = Path(ansible_test.__file__).parent / "_internal" / "python_requirements.py"
    version = re.search(r"pip='([0-9.]+)'", source.read_text())
    if not version:
        raise SystemExit(f"ansible_test: no pip version found in {source}")
    cached = Path.home() / ".ansible" / "test" / "cache" / f"get_pip_{version.group(1).replace('.', '_')}.py"
    cached.parent.mkdir(parents=True, exist_ok=True)
    if not cached.exists() or cached.read_bytes() != GET_PIP.read_bytes():
        shutil.copyfile(GET_PIP, cached)


def main(args: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("command", choices=("sanity", "units"))
    parser.add_argument("--python", action="append", help="Python version(s) (default: this Python's)")
    opts = parser.parse_args(args)
    pythons = opts.python or [f"{sys.version_info.major}.{sys.version_info.minor}"]
    copy_collection()
    pip_bootstrap()
    rc = 0
    for python in pythons:
        argv = [ansible_test_command(), opts.command, "--venv", "--python", python, "--color", "no"]
        if opts.command == "sanity":
            argv += [f"--skip-test={test}" for test in SKIPPED]
        else:
            argv += ["tests/unit/plugins/"]
        print(f"ansible-test {' '.join(argv[1:])}", flush=True)
        rc = subprocess.run(argv, cwd=ROOT, check=False).returncode or rc
    return rc


if __name__ == "__main__":
    sys.exit(main())
