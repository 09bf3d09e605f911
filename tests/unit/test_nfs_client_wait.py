# Copyright: multinode.horovod contributors
# SPDX-License-Identifier: GPL-3.0-or-later
"""nfs_client's wait (roles/nfs_client/files/wait_for_share.sh) with fake mount and umount commands:
it retries until a scratch mount works, within its timeout, and reports mount's last error."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "roles/nfs_client/files/wait_for_share.sh"


@pytest.fixture
def fakes(tmp_path):
    """A bin directory with `mount` and `umount` fakes; `mount` follows tmp_path/plan (one line per
    call: ok, a message to fail with, or hang) and logs its arguments to tmp_path/calls."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "mount").write_text(
        "#!/bin/sh\n"
        f'echo "$*" >> {tmp_path}/calls\n'
        f"n=$(wc -l < {tmp_path}/calls)\n"
        f'step=$(sed -n "${{n}}p" {tmp_path}/plan)\n'
        '[ -n "$step" ] || step=$(tail -n 1 ' + f"{tmp_path}/plan)\n"
        'case "$step" in ok) exit 0;; hang) exec sleep 100;; *) echo "mount.nfs: $step" >&2; exit 32;; esac\n'
    )
    (bin_dir / "umount").write_text(f'#!/bin/sh\necho "$*" >> {tmp_path}/umounts\n')
    for fake in bin_dir.iterdir():
        fake.chmod(0o755)
    return tmp_path


def wait(fakes, plan, timeout=10, delay=1):
    """Runs the wait for 192.0.2.10:/data1/share with options nfsvers=4.2,hard: (result, seconds)."""
    (fakes / "plan").write_text("\n".join(plan) + "\n")
    env = {**os.environ, "PATH": f"{fakes / 'bin'}:{os.environ['PATH']}"}
    started = time.monotonic()
    result = subprocess.run(
        ["sh", str(SCRIPT), str(timeout), str(delay), "nfsvers=4.2,hard", "192.0.2.10:/data1/share", "/mnt/x"],
        check=False,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    return result, time.monotonic() - started


def calls(fakes):
    return (fakes / "calls").read_text().splitlines() if (fakes / "calls").exists() else []


def test_retries_until_the_scratch_mount_works_then_unmounts_it(fakes):
    result, _unused = wait(fakes, ["Connection refused", "access denied by server while mounting", "ok"])
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "mounted"
    made = calls(fakes)
    assert len(made) == 3
    scratch = made[-1].split()[-1]
    assert made[-1] == f"-t nfs -o nfsvers=4.2,hard,ro,retry=0 192.0.2.10:/data1/share {scratch}"
    assert scratch.startswith("/run/nfs-client-wait.")
    assert (fakes / "umounts").read_text().splitlines()[0] == scratch
    assert not Path(scratch).exists(), "the scratch directory was left behind"


def test_gives_up_at_the_timeout_with_mounts_last_error(fakes):
    result, elapsed = wait(fakes, ["access denied by server while mounting"], timeout=3, delay=1)
    assert result.returncode == 1
    assert result.stderr.strip() == "mount.nfs: access denied by server while mounting"
    assert 2 <= len(calls(fakes)) <= 4
    assert elapsed < 6


def test_a_mount_that_hangs_is_cut_at_the_timeout(fakes):
    result, elapsed = wait(fakes, ["hang"], timeout=2, delay=1)
    assert result.returncode == 1
    assert "did not finish within 2s" in result.stderr
    assert elapsed < 5
