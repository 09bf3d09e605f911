# Copyright: multinode.horovod contributors
# SPDX-License-Identifier: GPL-3.0-or-later
"""What runs with an image's python3 needs nothing past Python 3.6, the guide's image's.

The guide's ``horovod/horovod:0.18.2-tf2.0.0-torch1.3.0-mxnet1.5.0-py3.6-gpu`` has Python 3.6, and the
preflight's probe, the run helpers, ssh_trust's link and matrix scripts, the benchmark's in-container
steps and the TensorBoard playbook's helper run there. No Python 3.6 can be had on these machines
(Debian 12's mirror and PyPI only), so this checks it the two ways that need none: the grammar of 3.6
(``ast.parse(feature_version=(3, 6))``) and vermin's table of what each standard-library name, argument
and built-in form needs (annotations included, since without ``from __future__ import annotations``,
which 3.6 lacks, they are evaluated).
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest
from checkout import REPO

# Run by `python3` inside the Horovod containers (docker_container_exec, horovodrun's ranks, ssh).
IMAGE_PYTHON = [
    "roles/horovod_launch/files/horovod_discover.py",
    "roles/horovod_launch/files/horovod_nccl_check.py",
    "roles/horovod_launch/files/horovod_probe.py",
    "roles/horovod_launch/files/horovod_progress.py",
    "roles/horovod_launch/files/horovod_run.py",
    "roles/horovod_launch/files/horovod_torchrun.py",
    "roles/horovod_launch/files/horovod_train_example.py",
    "roles/horovod_launch/files/torchrun_train_example.py",
    "roles/ssh_trust/files/ssh_link.py",
    "roles/ssh_trust/files/ssh_matrix.py",
    "playbooks/files/benchmark/horovod_bench_link.py",
    "playbooks/files/benchmark/horovod_bench_run.py",
    "playbooks/files/tensorboard/horovod_tensorboard.py",
]
# Run by the controller's Python (ansible_playbook_python), which ansible-core's own floor bounds.
CONTROLLER_PYTHON = ["playbooks/files/benchmark/horovod_bench_plot.py"]
VERMIN = Path(sys.executable).with_name("vermin")


def _annotations(tree: ast.AST) -> list[ast.expr]:
    """The annotations Python evaluates when it defines a function or runs a module or class body."""
    found: list[ast.expr] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            args = node.args
            every = [*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg]
            found += [a.annotation for a in every if a is not None and a.annotation is not None]
            found += [node.returns] if node.returns is not None else []
    for body in [tree, *(n for n in ast.walk(tree) if isinstance(n, ast.ClassDef))]:
        found += [n.annotation for n in body.body if isinstance(n, ast.AnnAssign)]
    return found


def generic_aliases(tree: ast.AST) -> list[str]:
    """Subscripted classes in evaluated annotations that are not typing's (``subprocess.CompletedProcess[str]``):
    those become subscriptable in Python 3.9, which vermin does not know for every class."""
    typing_names = {
        alias.asname or alias.name
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and node.module == "typing"
        for alias in node.names
    }
    return [
        f"{node.lineno}: {ast.unparse(node.value)}[...] in an annotation needs Python 3.9 (use typing's name)"
        for annotation in _annotations(tree)
        for node in ast.walk(annotation)
        if isinstance(node, ast.Subscript)
        and not (isinstance(node.value, ast.Name) and node.value.id in typing_names)
        and not (isinstance(node.value, ast.Attribute) and ast.unparse(node.value.value) == "typing")
    ]


def too_new(path: Path) -> list[str]:
    """What in `path` Python 3.6 cannot run: a grammar error, a generic alias, or vermin's findings."""
    try:
        tree = ast.parse(path.read_text(), filename=str(path), feature_version=(3, 6))
    except SyntaxError as error:
        return [f"Python 3.6's grammar: {error}"]
    aliases = generic_aliases(tree)
    proc = subprocess.run(
        [str(VERMIN), "--target=3.6-", "--violations", "--eval-annotations", "--feature", "union-types", "--no-tips",
         "--format", "parsable", str(path)],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    # Parsable lines are FILE:LINE:COLUMN:PY2:PY3:WHAT; the summary lines name no line.
    return aliases + [line for line in proc.stdout.splitlines() if line.split(":")[1:2] not in ([""], [])]


def test_every_helper_is_classified() -> None:
    """A new script under files/ must say which Python runs it, so none escapes the check."""
    found = sorted(
        str(p.relative_to(REPO)) for p in [*REPO.glob("roles/*/files/**/*.py"), *REPO.glob("playbooks/files/**/*.py")]
    )
    assert found == sorted(IMAGE_PYTHON + CONTROLLER_PYTHON)


@pytest.mark.parametrize("name", IMAGE_PYTHON)
def test_runs_on_python_36(name: str) -> None:
    assert too_new(REPO / name) == []


@pytest.mark.parametrize(
    ("code", "found"),
    [
        ("from __future__ import annotations\n", "__future__.annotations"),
        ("def f(a, /):\n    return a\n", "Python 3.6's grammar"),
        ("import subprocess\nsubprocess.run(['true'], capture_output=True)\n", "capture_output"),
        ("import subprocess\nsubprocess.run(['true'], text=True)\n", "subprocess.run(text)"),
        ("def f(a: list[str]) -> None:\n    pass\n", "builtin generic type annotation"),
        ("def f(a: int | None) -> None:\n    pass\n", "union types as `X | Y`"),
        ("import shlex\nshlex.join(['a'])\n", "shlex.join"),
        ("from dataclasses import dataclass\n", "dataclasses"),
        ("print(list(zip([1], [2], strict=True)))\n", "zip(strict)"),
        # Vermin misses this one: CompletedProcess is subscriptable from Python 3.9 only.
        ("import subprocess\ndef f() -> subprocess.CompletedProcess[str]:\n    pass\n", "needs Python 3.9"),
        ("import queue\nclass A:\n    q: queue.Queue[int]\n", "needs Python 3.9"),
    ],
)
def test_finds_what_36_lacks(tmp_path: Path, code: str, found: str) -> None:
    """Each form these files once used (and Python 3.6 cannot run) is caught."""
    path = tmp_path / "new.py"
    path.write_text(code)
    problems = too_new(path)
    assert problems, code
    assert any(found in problem for problem in problems), problems
