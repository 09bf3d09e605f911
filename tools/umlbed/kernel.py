# Copyright: multinode.horovod contributors
# SPDX-License-Identifier: GPL-3.0-or-later
"""The user-mode-linux kernel the instances boot: which one (Debian unstable's, or MNH_UML_KERNEL's),
fetching it through apt from Debian's mirror with its own suite's glibc (signature against Debian's
archive keyring, then each file's hash), patching its ELF interpreter and library path onto that
glibc, and reusing it from the cache afterwards (kernel/ under the cache directory). Why not Debian
12's or 13's own kernel: see the comment above KERNEL_DIR.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from . import debian
from .host import BedError, locked, log, run, timed

# The kernel: see ensure_kernel(). MNH_UML_KERNEL names a linux.uml to use instead (its modules in
# MNH_UML_MODULES, default Debian's /usr/lib/uml/modules), for hosts where Debian's own package works.
KERNEL_SUITE = os.environ.get("MNH_UML_SUITE", "unstable")
KERNEL_PACKAGES: tuple[str, ...] = ("user-mode-linux", "libc6")


def kernel_version(modules_root: Path) -> str:
    versions = sorted(p.name for p in modules_root.iterdir() if (p / "modules.dep").is_file())
    if len(versions) != 1:
        raise BedError(
            f"expected one kernel module tree under {modules_root}, found {versions or 'none'}; "
            "reinstall user-mode-linux"
        )
    return versions[0]


# Which kernel, and why not simply Debian bookworm's user-mode-linux: its kernel (6.1), and trixie's
# (6.12), cannot run a single user process on hosts whose CPUs have AMX (Intel Sapphire Rapids and
# later). They hand PTRACE_SETREGSET a fixed-size XSAVE buffer, the host kernel wants exactly its
# own XSAVE size (larger with AMX's tile data) and answers EFAULT: the console says "userspace -
# ptrace set fp regs failed, errno = 14" and init dies ("Attempted to kill init! exitcode=0x0000000b").
# Debian unstable's kernel sizes the buffer from the host and boots on
# these machines as on older ones. It is linked against a newer glibc than bookworm's, so it runs
# with the glibc of its own suite: both packages come through apt from Debian's mirror (InRelease
# signature against Debian's archive keyring, then each file's hash), are unpacked under the cache,
# and the kernel's ELF interpreter and library path are set to that glibc (patchelf). The kernel is
# fetched once and reused (no network then); the base image's recipe names its version.
KERNEL_DIR = "kernel"


@dataclass(frozen=True)
class Kernel:
    binary: Path
    modules: Path  # holds <version>/modules.dep

    @property
    def version(self) -> str:
        return kernel_version(self.modules)


def kernel_from(directory: Path) -> Kernel:
    """The kernel unpacked in ``directory`` (root/ holds the packages' files)."""
    root = directory / "root"
    return Kernel(root / "usr/bin/linux.uml", root / "usr/lib/uml/modules")


def kernel_complete(directory: Path) -> bool:
    kernel = kernel_from(directory)
    return (directory / "kernel.json").is_file() and kernel.binary.is_file() and kernel.modules.is_dir()


def apt_options(work: Path) -> list[str]:
    """apt-get options that read only ``work``'s sources and lists: the host's apt state is untouched."""
    return [
        "-o",
        f"Dir::Etc::SourceList={work / 'sources.list'}",
        "-o",
        "Dir::Etc::SourceParts=/dev/null",
        "-o",
        f"Dir::State::Lists={work / 'lists'}",
        "-o",
        f"Dir::Cache={work / 'apt-cache'}",
        "-o",
        "APT::Architectures=amd64",
        "-o",
        "Acquire::Languages=none",
        "-o",
        "APT::Sandbox::User=root",
    ]


def fetch_kernel(kernel_root: Path) -> Kernel:
    work = Path(tempfile.mkdtemp(prefix="fetch-", dir=kernel_root))
    try:
        for sub in ("lists/partial", "apt-cache/archives/partial", "debs"):
            (work / sub).mkdir(parents=True)
        (work / "sources.list").write_text(
            f"deb [signed-by={debian.DEBIAN_KEYRING}] {debian.DEBIAN_MIRROR} {KERNEL_SUITE} main\n"
        )
        opts = apt_options(work)
        with timed(f"fetch {', '.join(KERNEL_PACKAGES)} from Debian {KERNEL_SUITE}"):
            run(["apt-get", "-q", *opts, "update"], label="apt-get update")
            res = subprocess.run(
                ["apt-get", "-q", *opts, "download", *KERNEL_PACKAGES],
                cwd=work / "debs",
                text=True,
                capture_output=True,
                check=False,
            )
            if res.returncode != 0:
                raise BedError(f"apt-get download {' '.join(KERNEL_PACKAGES)} failed: {res.stderr.strip()}")
        versions = {}
        for deb in sorted((work / "debs").glob("*.deb")):
            name = run(["dpkg-deb", "-f", str(deb), "Package"]).stdout.strip()
            versions[name] = run(["dpkg-deb", "-f", str(deb), "Version"]).stdout.strip()
            run(["dpkg-deb", "-x", str(deb), str(work / "root")])
        if sorted(versions) != sorted(KERNEL_PACKAGES):
            raise BedError(f"expected the packages {', '.join(KERNEL_PACKAGES)}, got {versions}")
        digest = hashlib.sha256(json.dumps(versions, sort_keys=True).encode()).hexdigest()[:12]
        final = kernel_root / f"{versions['user-mode-linux']}-{digest}"
        shutil.rmtree(final, ignore_errors=True)
        shutil.rmtree(work / "debs")
        shutil.rmtree(work / "lists")
        shutil.rmtree(work / "apt-cache")
        work.rename(final)
        work = final  # removed by the handler below if anything after this fails
        # Absolute paths into the final directory: the kernel runs with its own suite's glibc.
        kernel = kernel_from(final)
        libdir = final / "root/usr/lib/x86_64-linux-gnu"
        run(
            [
                "patchelf",
                "--set-interpreter",
                str(libdir / "ld-linux-x86-64.so.2"),
                "--set-rpath",
                str(libdir),
                str(kernel.binary),
            ]
        )
        reported = run([str(kernel.binary), "--version"]).stdout.strip()
        if reported != kernel.version:
            raise BedError(f"{kernel.binary} says it is {reported!r}, its modules are {kernel.version}")
        (final / "kernel.json").write_text(
            json.dumps({"suite": KERNEL_SUITE, "packages": versions, "kernel": kernel.version}, indent=2) + "\n"
        )
        log(f"UML kernel {kernel.version} ({versions}) in {final}")
        return kernel
    except BaseException:
        shutil.rmtree(work, ignore_errors=True)
        raise


def ensure_kernel(cache: Path) -> Kernel:
    """The UML kernel the bed boots: MNH_UML_KERNEL's, else the one fetched before, else fetched now."""
    given = os.environ.get("MNH_UML_KERNEL")
    if given:
        return Kernel(Path(given), Path(os.environ.get("MNH_UML_MODULES", "/usr/lib/uml/modules")))
    kernel_root = cache / KERNEL_DIR
    kernel_root.mkdir(parents=True, exist_ok=True)
    with locked(kernel_root / ".lock"):
        found = sorted((d for d in kernel_root.iterdir() if d.is_dir() and kernel_complete(d)), key=lambda d: d.name)
        if found:
            return kernel_from(found[-1])
        for leftover in kernel_root.glob("fetch-*"):
            shutil.rmtree(leftover, ignore_errors=True)
        return fetch_kernel(kernel_root)
