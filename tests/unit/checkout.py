# Copyright: multinode.horovod contributors
# SPDX-License-Identifier: GPL-3.0-or-later
"""This checkout's plugins and tools, loaded by path (they are files of a collection, not a package).

A tool that is a package (tools/umlbed/) is loaded by path too (``load_package``): tools/ stays off
sys.path, so the other tools there cannot shadow anything.

``COLLECTIONS`` is a collections directory that holds this checkout as ``multinode.horovod`` (a link
in the temporary directory, one per user and checkout, reused by every run and every pytest worker):
the stand-in for `make venv`'s link under .cache, so that `pytest tests/unit` in a fresh clone imports
the plugins and runs ansible-playbook with nothing set up first.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

try:
    from ansible.template import trust_as_template
except ImportError:  # ansible-core before 2.19 templates every string; nothing to mark (make matrix)

    def trust_as_template(value: str) -> str:
        return value


__all__ = ["trust_as_template"]  # re-exported for the tests that render role templates

REPO = Path(__file__).resolve().parents[2]


def collections_dir() -> Path:
    """The collections directory of this checkout, its link made or repointed atomically (workers race).
    A checkout that already is ``ansible_collections/multinode/horovod`` (as ansible-test runs it) is its
    own: Ansible's collection loader, set up there, must find the files the tests import where they are."""
    if REPO.parent.name == "multinode" and REPO.parent.parent.name == "ansible_collections":
        return REPO.parents[2]
    digest = hashlib.sha256(str(REPO).encode()).hexdigest()[:12]
    root = Path(tempfile.gettempdir()) / f"mnh-collections-{os.getuid()}-{digest}"
    root.mkdir(mode=0o700, exist_ok=True)
    if root.stat().st_uid != os.getuid():  # someone else's directory: use a private one instead
        root = Path(tempfile.mkdtemp(prefix="mnh-collections-"))
    namespace = root / "ansible_collections" / "multinode"
    namespace.mkdir(parents=True, exist_ok=True)
    link = namespace / "horovod"
    if not (link.is_symlink() and Path(os.readlink(link)) == REPO):
        tmp = namespace / f".horovod.{os.getpid()}"
        tmp.unlink(missing_ok=True)
        tmp.symlink_to(REPO)
        os.replace(tmp, link)
    return root


COLLECTIONS = collections_dir()

# `make ansible-test` runs tests/unit/plugins (ansible-test units) and `make unit` the rest of tests/unit,
# so that CI runs each test once. A plugins test that needs what only the controller's toolchain has
# (the ansible command line, matplotlib) skips under ansible-test units: it carries the marker
# NEEDS_CONTROLLER (registered in tests/unit/conftest.py), and make unit runs those too
# (`pytest tests/unit/plugins -m needs_controller`).
NEEDS_CONTROLLER = pytest.mark.needs_controller
_SKIP_WITHOUT_ANSIBLE_CLI = pytest.mark.skipif(
    not shutil.which("ansible") or importlib.util.find_spec("ansible.cli") is None,
    reason="needs the ansible command line (the controller), which ansible-test's module unit tests lack",
)


def NEEDS_ANSIBLE_CLI(test: Callable[..., None]) -> Callable[..., None]:
    """A test that runs a module through the ansible command line: skipped where there is none (ansible-test
    runs the modules' unit tests with only what a module may import, no ansible.cli), run by make unit."""
    return NEEDS_CONTROLLER(_SKIP_WITHOUT_ANSIBLE_CLI(test))


# The result keys ansible-core gives a meaning of its own when a module returns them: the fields of its
# task result (ansible-core 2.21, UnifiedTaskResult: a value of another type is converted, so an
# epoch-seconds `finished` becomes True with a warning on every run) and those it takes from an action
# only (a module's is dropped with a warning); any ``_ansible_`` key is dropped too. A module returns
# none of them but the ones it may set with their meaning (MODULE_MAY_SET); test_module_results.py
# checks this set against the installed ansible-core where it has that table.
RESERVED_RESULT_KEYS = frozenset(
    {"changed", "failed", "unreachable", "skipped", "warnings", "deprecations", "ansible_facts", "exception",
     "finished", "msg", "rc", "diff", "ansible_stats", "ansible_job_id", "_ansible_suppress_tmpdir_delete",
     "_ansible_no_log", "_ansible_verbose_always", "_ansible_verbose_override"}
)  # fmt: skip
MODULE_MAY_SET = frozenset({"changed", "warnings", "deprecations"})


def reserved_keys(result: dict[str, Any]) -> set[str]:
    """The keys of a module's result that Ansible would read as its own (see RESERVED_RESULT_KEYS)."""
    return {k for k in result if k in RESERVED_RESULT_KEYS - MODULE_MAY_SET or k.startswith("_ansible_")}


def run_module(name: str, args: dict[str, Any], check: bool = False) -> dict[str, Any]:
    """The result of ``ansible localhost -m multinode.horovod.NAME -a ARGS`` (a local connection, this
    Python), checked to have succeeded and to hold no key Ansible reserves; with `check`, in check mode.
    For NEEDS_ANSIBLE_CLI tests."""
    done = subprocess.run(
        ["ansible", "localhost", "-c", "local", "-e", f"ansible_python_interpreter={sys.executable}",
         "-m", f"multinode.horovod.{name}", "-a", json.dumps(args), "-o", *(["--check"] if check else [])],
        cwd=REPO, env=dict(os.environ, ANSIBLE_COLLECTIONS_PATH=str(COLLECTIONS), ANSIBLE_NOCOLOR="1"),
        capture_output=True, text=True, check=False, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    result = json.loads(done.stdout.split(" => ", 1)[1])
    assert not reserved_keys(result), f"{name} returns keys Ansible reserves: {sorted(reserved_keys(result))}"
    return result


def load(relpath: str, name: str) -> ModuleType:
    """A fresh module from REPO/relpath, registered as `name` (dataclasses resolve their module by name)."""
    spec = importlib.util.spec_from_file_location(name, REPO / relpath)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def load_package(relpath: str, name: str) -> ModuleType:
    """The package in REPO/relpath, registered as `name` (the name its modules import it by), so that
    ``importlib.import_module(f"{name}.module")`` imports its modules; loaded once per process."""
    directory = REPO / relpath
    loaded = sys.modules.get(name)
    if loaded is not None and list(getattr(loaded, "__path__", [])) == [str(directory)]:
        return loaded
    for stale in [key for key in sys.modules if key.startswith(f"{name}.")]:
        del sys.modules[stale]
    spec = importlib.util.spec_from_file_location(
        name, directory / "__init__.py", submodule_search_locations=[str(directory)]
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module
