#!/usr/bin/env python3
# Copyright: multinode.horovod contributors
# SPDX-License-Identifier: GPL-3.0-or-later
"""The controller matrix: the collection on the lowest and the newest ansible-core it declares.

meta/runtime.yml declares the ansible-core range; make test runs one version inside it (the pinned
toolchain's). For each controller below this builds a virtualenv with that ansible-core and the
``ansible`` package of its time (which carries the collections we depend on), then, with it:

1. ``ansible-test sanity`` and ``ansible-test units`` (tools/run_ansible_test.py) on its Python;
2. on the lab (``make lab`` first; started here when it is not up) the site twice, the second run
   changing nothing, and a launch of the bundled example under a new run name, none of them printing
   a warning about a module's result key (ansible-core 2.21 converts or drops the keys it reserves).

    controller_matrix.py [--only 2.18|2.21] [--skip-lab]

The virtualenvs are kept in /var/cache/multinode-horovod/matrix, by requirements file. A controller
whose Python is missing fails with the command that gives it.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import re
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import lab  # tools/lab.py: the lab's machines and its playbook runner
import progress  # tools/progress.py: how far a long command is

REPO = Path(__file__).resolve().parent.parent
CACHE = Path("/var/cache/multinode-horovod/matrix")


@dataclass(frozen=True)
class Controller:
    core: str  # the ansible-core minor version
    python: str  # the Python it runs on here
    requirements: Path

    def interpreter(self) -> str:
        """The Python to build the virtualenv with: on PATH, or one pyenv installed (whose shim on
        PATH refuses a version that is not the global one)."""
        candidates = [shutil.which(f"python{self.python}") or ""]
        candidates += sorted(
            str(p) for p in Path.home().glob(f".pyenv/versions/{self.python}*/bin/python{self.python}")
        )
        for candidate in filter(None, candidates):
            if subprocess.run([candidate, "-c", ""], capture_output=True, check=False).returncode == 0:
                return candidate
        raise SystemExit(
            f"controller_matrix: ansible-core {self.core} runs on Python {self.python}, which is not found "
            f"here; install it (pyenv install {self.python}, or Debian 13's python3) and run again"
        )

    def env(self, venv: Path) -> dict[str, str]:
        """This controller's commands first on PATH, then its Python (ansible-test --python looks there)."""
        return dict(
            os.environ,
            PATH=os.pathsep.join([str(venv / "bin"), str(Path(self.interpreter()).parent), os.environ["PATH"]]),
        )

    def venv(self) -> Path:
        digest = hashlib.sha256(f"{self.python}\n{self.requirements.read_text()}".encode()).hexdigest()[:12]
        return CACHE / f"ansible-{self.core}-{digest}"


CONTROLLERS = (
    Controller("2.18", "3.11", REPO / "tools" / "matrix" / "ansible-2.18.txt"),
    Controller("2.21", "3.13", REPO / "tools" / "matrix" / "ansible-2.21.txt"),
)


# What ansible-core (2.21) prints when a module returns a result key it reserves: converted to its own
# type (an epoch-seconds `finished` became True), replaced, or dropped.
RESULT_KEY_WARNING_RE = re.compile(
    r"^\[WARNING\]: (?:Value for result key .*|Removed reserved key .* from module result\.?)$", re.MULTILINE
)


def result_key_warnings(output: str) -> list[str]:
    """The warnings in a playbook's output about a module's result keys."""
    return [m.group(0) for m in RESULT_KEY_WARNING_RE.finditer(output)]


def say(text: str) -> None:
    print(f"[matrix] {text}", flush=True)


def checked(argv: list[str], what: str, *, env: dict[str, str] | None = None) -> None:
    rc = progress.watch(argv, lambda line: say(f"{what}: {line}"), env=env)
    if rc != 0:
        raise SystemExit(f"controller_matrix: {what} failed (rc {rc}): {' '.join(argv)}")


def ensure_venv(controller: Controller) -> Path:
    venv = controller.venv()
    stamp = venv / ".stamp"
    if stamp.exists():
        return venv
    if venv.exists():
        shutil.rmtree(venv)
    CACHE.mkdir(parents=True, exist_ok=True)
    what = f"ansible-core {controller.core} virtualenv"
    checked([controller.interpreter(), "-m", "venv", str(venv)], what)
    pip = [str(venv / "bin" / "pip"), "install", "--progress-bar", "off", "--disable-pip-version-check"]
    checked([*pip, "-r", str(controller.requirements)], what)
    stamp.touch()
    return venv


def ansible_test(controller: Controller, venv: Path) -> None:
    for command in ("sanity", "units"):
        argv = [str(venv / "bin" / "python"), str(REPO / "tools" / "run_ansible_test.py"), command]
        what = f"ansible-core {controller.core} ansible-test {command}"
        checked([*argv, "--python", controller.python], what, env=controller.env(venv))


def on_the_lab(controller: Controller, venv: Path) -> str:
    """The site twice and a launch on the lab, with this controller's ansible-playbook."""
    # lab.playbook runs the ansible-playbook found on PATH.
    os.environ["PATH"] = controller.env(venv)["PATH"]
    version = subprocess.run(["ansible-playbook", "--version"], capture_output=True, text=True, check=True)
    say(f"on the lab with {version.stdout.splitlines()[0]}")
    first, first_changed, first_out = lab.playbook()
    second, second_changed, second_out = lab.playbook()
    if second_changed:
        raise SystemExit(f"controller_matrix: ansible-core {controller.core}: the site's second run changed "
                         f"{second_changed} things; it must change nothing")  # fmt: skip
    run_name = time.strftime(f"matrix-{controller.core.replace('.', '')}-%Y%m%d-%H%M%S")
    launch, _, launch_out = lab.playbook("--tags", "launch", "-e", f"horovod_run_name={run_name}")
    warned = result_key_warnings(first_out + second_out + launch_out)
    if warned:
        raise SystemExit(f"controller_matrix: ansible-core {controller.core}: a module returns a result key "
                         "Ansible reserves (rename it; tests/unit/checkout.py RESERVED_RESULT_KEYS):\n"
                         + "\n".join(sorted(set(warned))))  # fmt: skip
    return (
        f"ansible-core {controller.core} (Python {controller.python}): site {first:.0f}s changed={first_changed}, "
        f"again {second:.0f}s changed=0, launch {run_name} {launch:.0f}s"
    )


def main(args: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", choices=[c.core for c in CONTROLLERS], help="one controller")
    parser.add_argument("--skip-lab", action="store_true", help="ansible-test only, no lab")
    opts = parser.parse_args(args)
    chosen = [c for c in CONTROLLERS if opts.only in (None, c.core)]
    for controller in chosen:
        controller.interpreter()  # every Python is there before anything long starts
    if not opts.skip_lab:
        lab.up()
    start = time.monotonic()
    results = []
    for controller in chosen:
        venv = ensure_venv(controller)
        ansible_test(controller, venv)
        results.append(
            f"ansible-core {controller.core}: ansible-test sanity and units passed"
            if opts.skip_lab
            else on_the_lab(controller, venv)
        )
    say(f"controller matrix passed in {time.monotonic() - start:.0f}s:")
    for line in results:
        say(f"  {line}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
