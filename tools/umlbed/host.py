# Copyright: multinode.horovod contributors
# SPDX-License-Identifier: GPL-3.0-or-later
"""What the bed needs of this host and how it acts on it, for every other module: the error meant
for the user (BedError) and the log lines, running a command, file locks, where the cache and the
state live (MNH_CACHE_DIR, MNH_UMLBED_STATE), and the preflight check of the host commands, the tun
device and the Debian release before anything is fetched, built or booted.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

import progress  # tools/progress.py (tools/ is on the path however umlbed runs): how far a long command is

from . import debian


def log(msg: str) -> None:
    print(f"[umlbed] {msg}", file=sys.stderr, flush=True)


class BedError(Exception):
    """A failure with a message meant for the user."""


@contextlib.contextmanager
def timed(step: str) -> Iterator[None]:
    start = time.monotonic()
    log(f"{step} ...")
    yield
    log(f"{step}: done in {time.monotonic() - start:.1f}s")


def default_cache_dir() -> Path:
    env = os.environ.get("MNH_CACHE_DIR")
    base = Path(env) if env else Path("/var/cache/multinode-horovod")
    return base / "uml"


def default_state_dir() -> Path:
    return Path(os.environ.get("MNH_UMLBED_STATE", "/var/lib/multinode-horovod/umlbed"))


def step(line: str) -> str | None:
    """What a line of debootstrap or apt-get says it does: its first word (``Retrieving``, ``Unpacking``,
    ``Setting``), shown once; the rest of the lines go to the log and the heartbeat."""
    text = progress.plain(line).removeprefix("I: ")
    word = text.split(" ", 1)[0].rstrip(".:")
    return word if word.isalpha() else None


def watched(argv: Sequence[str], label: str, env: dict[str, str] | None) -> subprocess.CompletedProcess[str]:
    """Run a long command (debootstrap, apt-get), saying how far it is (tools/progress.py): each new
    kind of line it prints and, while it prints nothing new, its last line every HEARTBEAT_S seconds."""
    with tempfile.TemporaryDirectory(prefix="umlbed-") as tmp:
        log_file = Path(tmp) / "output.log"
        rc = progress.watch(argv, lambda text: log(f"{label}: {text}"), log_file=log_file, milestone=step, env=env)
        output = log_file.read_text(errors="replace")
    return subprocess.CompletedProcess(list(argv), rc, stdout=output, stderr=output)


def run(
    argv: Sequence[str],
    *,
    check: bool = True,
    quiet: bool = False,
    env: dict[str, str] | None = None,
    label: str | None = None,
) -> subprocess.CompletedProcess[str]:
    """Run argv, its output captured; with `label`, a long command whose progress is shown (watched)."""
    if label is None:
        res = subprocess.run(list(argv), text=True, capture_output=True, env=env, check=False)
    else:
        res = watched(argv, label, env)
    if check and res.returncode != 0:
        detail = (res.stderr or res.stdout).strip().splitlines()[-20:]
        raise BedError(f"{shlex.join(argv)} failed ({res.returncode}):\n" + "\n".join(detail))
    if not quiet and res.returncode != 0:
        log(f"ignored: {shlex.join(argv)}: {res.stderr.strip()}")
    return res


# command -> Debian package (``make prepare`` installs them)
HOST_COMMANDS: dict[str, str] = {
    "uml_mconsole": "uml-utilities",
    "patchelf": "patchelf",
    "apt-get": "apt",
    "dpkg-deb": "dpkg",
    "debootstrap": "debootstrap",
    "mkfs.ext4": "e2fsprogs",
    "iptables": "iptables",
    "ip": "iproute2",
    "ssh": "openssh-client",
    "ssh-keygen": "openssh-client",
    "unshare": "util-linux",
}


def missing_commands(path: str | None = None) -> dict[str, str]:
    """The host commands the bed needs that ``path`` (default: PATH plus the sbin dirs) lacks."""
    if path is None:
        path = os.pathsep.join([os.environ.get("PATH", ""), "/usr/sbin", "/sbin"])
    return {cmd: pkg for cmd, pkg in HOST_COMMANDS.items() if shutil.which(cmd, path=path) is None}


def preflight() -> None:
    if debian.DEBIAN_SUITE not in debian.RELEASES:
        raise BedError(
            f"MNH_DEBIAN={debian.DEBIAN_SUITE!r} is not a tested release; use one of {', '.join(debian.RELEASES)}"
        )
    missing = missing_commands()
    if missing:
        raise BedError(
            f"missing host commands {', '.join(sorted(missing))}; install the Debian packages "
            f"{' '.join(sorted(set(missing.values())))} (`make prepare` does)"
        )
    if not Path("/dev/net/tun").exists():
        raise BedError("/dev/net/tun is missing: the host kernel needs the tun module (modprobe tun)")


@contextlib.contextmanager
def locked(path: Path) -> Iterator[None]:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)
