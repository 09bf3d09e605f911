# Copyright: multinode.horovod contributors
# SPDX-License-Identifier: GPL-3.0-or-later
"""make lab builds the CPU Horovod image through tools/lab.py, which reads the archive's path from
tools/images.py: the build's lines (many minutes of them on a fresh machine) reach the user as they
come, not after the build. The real images.py runs, with a stand-in for docker on PATH whose build of
horovod-cpu prints its first step and then waits until the test has seen that line (or 10 s)."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path

from checkout import REPO

FAKE_DOCKER = r"""#!PYTHON
import os, sys, time
from pathlib import Path

args = sys.argv[1:]
if args[:1] in (["image"], ["images"], ["pull"], ["tag"]):
    sys.exit(0)  # no image here; the base "pulls" at once
if args[:1] == ["save"]:
    Path(args[args.index("-o") + 1]).write_bytes(b"archive")
    sys.exit(0)
if args[:1] == ["build"]:
    if "-q" in args:
        sys.exit(0)
    print("Step 1/2 : RUN pip install horovod", flush=True)
    if "multinode-horovod/horovod-cpu:local" in args:
        go, deadline = Path(os.environ["GO_FILE"]), time.monotonic() + 10
        while not go.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
    print("Step 2/2 : LABEL built", flush=True)
    sys.exit(0)
sys.exit(f"fake docker: unexpected {args}")
"""


def test_the_cpu_image_build_is_seen_through_lab_while_it_runs(tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    docker = bin_dir / "docker"
    docker.write_text(FAKE_DOCKER.replace("PYTHON", sys.executable))
    docker.chmod(0o755)
    go = tmp_path / "go"
    env = dict(
        os.environ,
        PATH=f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
        GO_FILE=str(go),
        MNH_CACHE_DIR=str(tmp_path / "cache"),
        MNH_EXTRA_CA_BUNDLE="",
        MNH_BASE_SOURCE="pull",
    )
    code = "import sys; sys.path.insert(0, 'tools'); import lab; print('ARCHIVE', lab.image_archive('horovod-cpu'))"
    # The user's terminal: lab's output and whatever its children pass on, both streams.
    proc = subprocess.Popen(
        [sys.executable, "-c", code], cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    assert proc.stdout is not None
    lines: list[str] = []
    seen_while_building: list[str] = []

    def read() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.append(line.rstrip("\n"))
            if "horovod-cpu: step 1/2" in line and not go.exists():
                seen_while_building.append(line)
                go.touch()  # the build goes on only now: the line came while it ran

    reader = threading.Thread(target=read)
    start = time.monotonic()
    reader.start()
    rc = proc.wait(timeout=60)
    reader.join(timeout=10)
    output = "\n".join(lines)
    assert rc == 0, output
    assert seen_while_building, f"the build's lines did not reach the user while it ran:\n{output}"
    assert time.monotonic() - start < 10, "the build waited for its line to be seen: it was hidden"
    archives = list((tmp_path / "cache" / "images").glob("horovod-cpu-*.tar"))
    assert len(archives) == 1 and lines[-1] == f"ARCHIVE {archives[0]}", output
