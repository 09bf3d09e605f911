#!/usr/bin/env python3
# Copyright: multinode.horovod contributors
# SPDX-License-Identifier: GPL-3.0-or-later
"""A test bed of real Linux kernels: User-mode Linux instances on a private host bridge.

Used by the ``storage`` Molecule scenario, which needs kernels that can export and mount NFS (the
developer machine's kernel cannot). Everything is made from Debian packages (``user-mode-linux``
for the kernel and its modules, ``debootstrap`` for the root filesystem); see "The kernel" below
for which ``user-mode-linux`` and why.

Subcommands::

    kernel            fetch (or reuse) the UML kernel; prints its binary and version
    base              build (or reuse) the base image: an ext4 file with systemd, sshd, python3,
                      nfs-kernel-server, nfs-common and docker.io, cached by a hash of its recipe
    up NAME ADDR ...  boot instances (one copy-on-write file each, one veth pair on the bed bridge),
                      in parallel, and wait until each answers on ssh
    down NAME ...     hard-stop instances and remove their link and copy-on-write file
    down-all          remove everything this tool created: instances, links, rules, bridge
    list              print the instances that are up, as JSON
    ssh NAME [CMD]    run a command on an instance (root, the bed key)

The bed is a bridge (``mnhst0``, ``10.213.57.0/24``, the host is ``.1``) with two iptables rules:
traffic within the bridge is accepted (the host's FORWARD policy may drop bridged traffic) and
traffic from the bridge to anywhere else is dropped, so instances reach only each other and the
host. Every created resource is recorded in the state directory before it is made, so
``down-all`` removes exactly what was created, also after a failed or interrupted run.
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import hashlib
import ipaddress
import json
import os
import re
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

# The Debian release of the instances' root filesystem: MNH_DEBIAN (as tools/images.py), else bookworm.
RELEASES = ("bookworm", "trixie")
DEBIAN_SUITE = os.environ.get("MNH_DEBIAN") or "bookworm"
DEBIAN_MIRROR = os.environ.get("MNH_DEBIAN_MIRROR", "http://deb.debian.org/debian")
DEBIAN_SECURITY_MIRROR = os.environ.get("MNH_DEBIAN_SECURITY_MIRROR", "http://deb.debian.org/debian-security")
# The kernel: see ensure_kernel(). MNH_UML_KERNEL names a linux.uml to use instead (its modules in
# MNH_UML_MODULES, default Debian's /usr/lib/uml/modules), for hosts where Debian's own package works.
KERNEL_SUITE = os.environ.get("MNH_UML_SUITE", "unstable")
KERNEL_PACKAGES: tuple[str, ...] = ("user-mode-linux", "libc6")
DEBIAN_KEYRING = "/usr/share/keyrings/debian-archive-keyring.gpg"
IMAGE_SIZE = "4G"
DEFAULT_BRIDGE = "mnhst0"
DEFAULT_SUBNET = "10.213.57.0/24"
RULE_COMMENT = "multinode-horovod umlbed"
NAME_RE = re.compile(r"^[a-z][a-z0-9-]{0,23}$")

# Bump when the build steps below change in a way the recipe data does not show.
RECIPE_VERSION = "1"

PACKAGES: tuple[str, ...] = (
    "systemd-sysv",
    "udev",
    "dbus",
    "kmod",
    "iproute2",
    "iptables",
    "netbase",
    "procps",
    "libnss-myhostname",
    "openssh-server",
    "sudo",
    "python3",
    "python3-apt",
    "nfs-kernel-server",
    "nfs-common",
    "docker.io",
    "python3-requests",
)
# Packages of one release only: Debian 13's docker.io only recommends its command line (docker-cli),
# which Debian 12's docker.io holds itself.
RELEASE_PACKAGES: dict[str, tuple[str, ...]] = {"trixie": ("docker-cli",)}


def packages(suite: str) -> tuple[str, ...]:
    """What the base image of `suite` installs."""
    return PACKAGES + RELEASE_PACKAGES.get(suite, ())


# Files written into the image (path -> content). Part of the recipe hash.
FILES: dict[str, str] = {
    "/etc/fstab": "# <file system> <mount point> <type> <options> <dump> <pass>\n/dev/ubda / ext4 rw,relatime 0 0\n",
    "/etc/hosts": "127.0.0.1\tlocalhost\n::1\t\tlocalhost ip6-localhost ip6-loopback\n",
    # No name server: the instances reach only the bed, and an empty file fails lookups at once.
    "/etc/resolv.conf": "",
    # The address comes from the kernel command line (ip=, read by systemd-network-generator into
    # /run/systemd/network/90-vec0.network); without IPv6 router solicitations wait-online is quick.
    "/etc/systemd/network/90-vec0.network.d/umlbed.conf": ("[Network]\nLinkLocalAddressing=no\nIPv6AcceptRA=no\n"),
    "/etc/systemd/journald.conf.d/umlbed.conf": "[Journal]\nStorage=volatile\n",
    # A hung stop job must not stall a reboot for minutes.
    "/etc/systemd/system.conf.d/umlbed.conf": "[Manager]\nDefaultTimeoutStopSec=20s\n",
    # Each instance gets its own host keys at first boot, never the image's.
    "/etc/systemd/system/umlbed-ssh-hostkeys.service": (
        "[Unit]\n"
        "Description=Generate the SSH host keys on first boot\n"
        "Before=ssh.service\n"
        "ConditionPathExists=!/etc/ssh/ssh_host_ed25519_key\n\n"
        "[Service]\n"
        "Type=oneshot\n"
        'ExecStart=/usr/bin/ssh-keygen -q -t ed25519 -N "" -f /etc/ssh/ssh_host_ed25519_key\n'
        "RemainAfterExit=yes\n\n"
        "[Install]\n"
        "WantedBy=ssh.service\n"
    ),
    # The kernel has no NAT (neither nft's nat chains nor iptables' nat table), so dockerd may not make
    # its NAT chains; the collection's containers use the host's network and need none. This is the
    # machine's own Docker configuration: docker_horovod must keep it (it adds only its own keys).
    "/etc/docker/daemon.json": '{\n  "iptables": false,\n  "ip6tables": false\n}\n',
    # One ed25519 host key: RSA key generation costs seconds of every first boot under UML.
    "/etc/ssh/sshd_config.d/umlbed.conf": (
        "HostKey /etc/ssh/ssh_host_ed25519_key\nPasswordAuthentication no\nKbdInteractiveAuthentication no\n"
    ),
}

ENABLE_UNITS: tuple[str, ...] = (
    "systemd-networkd.service",
    "systemd-network-generator.service",
    "umlbed-ssh-hostkeys.service",
    "ssh.service",
)
# nfs-server is disabled as on a host that never ran the nfs_server role's service task; the
# others only cost boot time (or would wait for a console that nobody reads).
DISABLE_UNITS: tuple[str, ...] = ("nfs-server.service",)
MASK_UNITS: tuple[str, ...] = (
    "getty.target",
    "console-getty.service",
    "systemd-firstboot.service",
    "apt-daily.timer",
    "apt-daily-upgrade.timer",
    "e2scrub_all.timer",
    "e2scrub_reap.service",
    "fstrim.timer",
)


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


# ---------------------------------------------------------------------------- pure helpers


def kernel_version(modules_root: Path) -> str:
    versions = sorted(p.name for p in modules_root.iterdir() if (p / "modules.dep").is_file())
    if len(versions) != 1:
        raise BedError(
            f"expected one kernel module tree under {modules_root}, found {versions or 'none'}; "
            "reinstall user-mode-linux"
        )
    return versions[0]


def recipe(kver: str, modules_dep: bytes) -> dict[str, object]:
    """Everything the base image is made from; its hash names the cached image."""
    return {
        "version": RECIPE_VERSION,
        "suite": DEBIAN_SUITE,
        "mirror": DEBIAN_MIRROR,
        "security_mirror": DEBIAN_SECURITY_MIRROR,
        "packages": sorted(packages(DEBIAN_SUITE)),
        "files": FILES,
        "enable": list(ENABLE_UNITS),
        "disable": list(DISABLE_UNITS),
        "mask": list(MASK_UNITS),
        "size": IMAGE_SIZE,
        "kernel": kver,
        "modules_dep": hashlib.sha256(modules_dep).hexdigest(),
        "script": chroot_script(packages(DEBIAN_SUITE)),
    }


def recipe_hash(data: dict[str, object]) -> str:
    return hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()[:16]


@dataclass(frozen=True)
class Bed:
    bridge: str
    subnet: ipaddress.IPv4Network

    @property
    def host_address(self) -> ipaddress.IPv4Address:
        return next(self.subnet.hosts())

    def check_address(self, addr: str) -> ipaddress.IPv4Address:
        try:
            ip = ipaddress.IPv4Address(addr)
        except ValueError as exc:
            raise BedError(f"{addr!r} is not an IPv4 address") from exc
        if ip not in self.subnet or ip in (self.subnet.network_address, self.subnet.broadcast_address):
            raise BedError(f"{addr} is not a host address of the bed subnet {self.subnet}")
        if ip == self.host_address:
            raise BedError(f"{addr} is the host's address on {self.bridge}; pick another")
        return ip

    def link_name(self, ip: ipaddress.IPv4Address) -> str:
        """The host's end of an instance's veth pair, one per address; with its peer's suffix
        (peer_name) the name fits the kernel's 15 characters."""
        offset = int(ip) - int(self.subnet.network_address)
        name = f"{self.bridge}-{offset}"
        if len(peer_name(name)) > 15:
            raise BedError(f"bridge name {self.bridge!r} is too long for link names (max 8 characters)")
        return name

    def forward_rules(self) -> list[list[str]]:
        """iptables FORWARD rules (without -I/-D): bridge-internal traffic passes, nothing leaves."""
        tag = ["-m", "comment", "--comment", RULE_COMMENT]
        return [
            ["FORWARD", "-i", self.bridge, "-o", self.bridge, *tag, "-j", "ACCEPT"],
            ["FORWARD", "-i", self.bridge, "!", "-o", self.bridge, *tag, "-j", "DROP"],
        ]


def peer_name(link: str) -> str:
    """The instance's end of its veth pair (the kernel reads and writes it through a raw socket)."""
    return f"{link}p"


def mac_for(ip: ipaddress.IPv4Address) -> str:
    """A locally administered unicast MAC derived from the address (stable across reboots)."""
    octets = ip.packed
    return "02:6d:6e:" + ":".join(f"{b:02x}" for b in octets[1:])


def check_name(name: str) -> str:
    if not NAME_RE.match(name):
        raise BedError(f"instance name {name!r} must match {NAME_RE.pattern}")
    return name


def parse_pairs(words: Sequence[str]) -> list[tuple[str, str]]:
    """``NAME ADDR [NAME ADDR ...]`` -> pairs, with the names and addresses each used once."""
    if not words or len(words) % 2:
        raise BedError("up takes pairs: NAME ADDR [NAME ADDR ...]")
    pairs = [(check_name(words[i]), words[i + 1]) for i in range(0, len(words), 2)]
    for what, values in (("name", [p[0] for p in pairs]), ("address", [p[1] for p in pairs])):
        dupes = sorted({v for v in values if values.count(v) > 1})
        if dupes:
            raise BedError(f"{what} given twice: {', '.join(dupes)}")
    return pairs


def kernel_cmdline(
    *,
    umid: str,
    uml_dir: Path,
    mem: str,
    cow: Path,
    base: Path,
    link: str,
    mac: str,
    name: str,
    ip: ipaddress.IPv4Address,
    bed: Bed,
) -> list[str]:
    """Arguments of ``linux.uml`` for one instance."""
    return [
        f"umid={umid}",
        f"uml_dir={uml_dir}",
        f"mem={mem}",
        f"ubd0={cow},{base}",
        "root=/dev/ubda",
        "rw",
        # The vector network driver (the only one the kernel has), raw transport on the veth peer: vec0
        # inside. Not its tap transport: after an in-guest reboot the kernel cannot attach to its tap
        # again ("uml_tap: failed to create tun interface"), while a raw socket opens again and again.
        f"vec0:transport=raw,ifname={peer_name(link)},mac={mac}",
        "con=null",
        "con0=null,fd:1",
        "ssl=null",
        "net.ifnames=0",
        f"systemd.hostname={name}",
        f"ip={ip}::{bed.host_address}:{bed.subnet.netmask}::vec0:off",
    ]


def ssh_argv(key: Path, addr: str, command: Sequence[str] = (), connect_timeout: int = 5) -> list[str]:
    """ssh to a bed instance. The instances make their host keys at first boot and live minutes
    on a private bridge, so their host keys are not recorded (test bed only)."""
    return [
        "ssh",
        "-i",
        str(key),
        "-o",
        "BatchMode=yes",
        "-o",
        "IdentitiesOnly=yes",
        "-o",
        "StrictHostKeyChecking=no",
        "-o",
        "UserKnownHostsFile=/dev/null",
        "-o",
        "LogLevel=ERROR",
        "-o",
        f"ConnectTimeout={connect_timeout}",
        f"root@{addr}",
        *command,
    ]


# ---------------------------------------------------------------------------- process helpers


def run(
    argv: Sequence[str], *, check: bool = True, quiet: bool = False, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    res = subprocess.run(list(argv), text=True, capture_output=True, env=env, check=False)
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
    if DEBIAN_SUITE not in RELEASES:
        raise BedError(f"MNH_DEBIAN={DEBIAN_SUITE!r} is not a tested release; use one of {', '.join(RELEASES)}")
    missing = missing_commands()
    if missing:
        raise BedError(
            f"missing host commands {', '.join(sorted(missing))}; install the Debian packages "
            f"{' '.join(sorted(set(missing.values())))} (`make prepare` does)"
        )
    if not Path("/dev/net/tun").exists():
        raise BedError("/dev/net/tun is missing: the host kernel needs the tun module (modprobe tun)")


def pid_alive(pid: int, umid: str) -> bool:
    """True when ``pid`` is still the UML kernel of ``umid`` (not a recycled pid)."""
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return False
    return f"umid={umid}".encode() in cmdline


def uml_processes(umid: str) -> list[int]:
    """Host processes of one UML instance: the kernel and its helpers carry ``umid=`` in argv."""
    found = []
    needle = f"umid={umid}".encode()
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        with contextlib.suppress(OSError):
            if needle in (proc / "cmdline").read_bytes().split(b"\0"):
                found.append(int(proc.name))
    return found


def link_exists(name: str) -> bool:
    return Path("/sys/class/net", name).exists()


@contextlib.contextmanager
def locked(path: Path) -> Iterator[None]:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


# ---------------------------------------------------------------------------- the kernel

# Which kernel, and why not simply Debian bookworm's user-mode-linux: its kernel (6.1), and trixie's
# (6.12), cannot run a single user process on hosts whose CPUs have AMX (Intel Sapphire Rapids and
# later). They hand PTRACE_SETREGSET a fixed-size XSAVE buffer, the host kernel wants exactly its
# own XSAVE size (larger with AMX's tile data) and answers EFAULT: the console says "userspace -
# ptrace set fp regs failed, errno = 14" and init dies ("Attempted to kill init! exitcode=0x0000000b").
# Debian unstable's kernel (7.2 when this was written) sizes the buffer from the host and boots on
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
        (work / "sources.list").write_text(f"deb [signed-by={DEBIAN_KEYRING}] {DEBIAN_MIRROR} {KERNEL_SUITE} main\n")
        opts = apt_options(work)
        with timed(f"fetch {', '.join(KERNEL_PACKAGES)} from Debian {KERNEL_SUITE}"):
            run(["apt-get", "-q", *opts, "update"])
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


# ---------------------------------------------------------------------------- base image


@dataclass(frozen=True)
class BaseImage:
    directory: Path

    @property
    def image(self) -> Path:
        return self.directory / "base.img"

    @property
    def key(self) -> Path:
        return self.directory / "bed_key"

    def complete(self) -> bool:
        return self.image.is_file() and self.key.is_file() and (self.directory / "recipe.json").is_file()


def current_recipe(kernel: Kernel) -> tuple[dict[str, object], str]:
    kver = kernel.version
    data = recipe(kver, (kernel.modules / kver / "modules.dep").read_bytes())
    return data, recipe_hash(data)


def chroot_script(packages: Sequence[str]) -> str:
    """Shell run inside the new root (under a private mount namespace) to install and configure."""
    pkgs = " ".join(shlex.quote(p) for p in packages)
    enable = " ".join(ENABLE_UNITS)
    disable = " ".join(DISABLE_UNITS)
    mask = " ".join(MASK_UNITS)
    return f"""set -eu
export DEBIAN_FRONTEND=noninteractive LC_ALL=C.UTF-8
apt-get -q -o Acquire::Languages=none update
apt-get -q -y -o APT::Install-Recommends=false -o Dpkg::Options::=--force-unsafe-io \\
    -o Dpkg::Options::=--force-confold install {pkgs}
apt-get clean
# A real host has apt's binary cache; without it every apt task in an instance rebuilds it.
apt-cache gencaches
# The kernel has nf_tables, not the legacy iptables tables (dockerd makes its chains through iptables).
update-alternatives --set iptables /usr/sbin/iptables-nft
update-alternatives --set ip6tables /usr/sbin/ip6tables-nft
systemctl enable {enable}
systemctl disable {disable}
systemctl mask {mask}
"""


def build_base(cache: Path, data: dict[str, object], digest: str, kernel: Kernel) -> BaseImage:
    kver = str(data["kernel"])
    work = Path(tempfile.mkdtemp(prefix="build-", dir=cache))
    root = work / "root"
    try:
        with timed("debootstrap (minbase)"):
            run(
                [
                    "unshare",
                    "--mount",
                    "--propagation",
                    "private",
                    "debootstrap",
                    "--variant=minbase",
                    DEBIAN_SUITE,
                    str(root),
                    DEBIAN_MIRROR,
                ]
            )
        (root / "etc/apt/sources.list").write_text(
            f"deb {DEBIAN_MIRROR} {DEBIAN_SUITE} main\n"
            f"deb {DEBIAN_MIRROR} {DEBIAN_SUITE}-updates main\n"
            f"deb {DEBIAN_SECURITY_MIRROR} {DEBIAN_SUITE}-security main\n"
        )
        policy = root / "usr/sbin/policy-rc.d"
        policy.write_text("#!/bin/sh\n# umlbed: no service starts while the image is built\nexit 101\n")
        policy.chmod(0o755)
        shutil.copy2("/etc/resolv.conf", root / "etc/resolv.conf")
        for path, content in FILES.items():
            target = root / path.lstrip("/")
            target.parent.mkdir(parents=True, exist_ok=True)
            if path != "/etc/resolv.conf":
                target.write_text(content)
        with timed(f"apt-get install of {len(packages(DEBIAN_SUITE))} packages in the chroot"):
            script = chroot_script(packages(DEBIAN_SUITE))
            run(
                [
                    "unshare",
                    "--mount",
                    "--propagation",
                    "private",
                    "sh",
                    "-c",
                    'mount -t proc proc "$1/proc" && exec chroot "$1" sh -c "$2"',
                    "sh",
                    str(root),
                    script,
                ]
            )
        with timed("configure the root filesystem"):
            policy.unlink()
            (root / "etc/resolv.conf").write_text(FILES["/etc/resolv.conf"])
            for key in (root / "etc/ssh").glob("ssh_host_*"):
                key.unlink()
            (root / "etc/machine-id").write_text("")
            dbus_id = root / "var/lib/dbus/machine-id"
            dbus_id.unlink(missing_ok=True)
            dbus_id.parent.mkdir(parents=True, exist_ok=True)
            dbus_id.symlink_to("/etc/machine-id")
            (root / "etc/hostname").unlink(missing_ok=True)
            modules = root / "usr/lib/modules" / kver
            shutil.rmtree(modules, ignore_errors=True)
            shutil.copytree(kernel.modules / kver, modules, symlinks=True)
            run(
                [
                    "ssh-keygen",
                    "-q",
                    "-t",
                    "ed25519",
                    "-N",
                    "",
                    "-C",
                    "multinode-horovod-umlbed",
                    "-f",
                    str(work / "bed_key"),
                ]
            )
            ssh_dir = root / "root/.ssh"
            ssh_dir.mkdir(mode=0o700, exist_ok=True)
            shutil.copy2(work / "bed_key.pub", ssh_dir / "authorized_keys")
            (ssh_dir / "authorized_keys").chmod(0o600)
        with timed(f"mkfs.ext4 -d (size {IMAGE_SIZE})"):
            run(["mkfs.ext4", "-q", "-F", "-L", "umlroot", "-d", str(root), str(work / "base.img"), IMAGE_SIZE])
        # Read-only: a changed backing file would corrupt every copy-on-write file made from it.
        (work / "base.img").chmod(0o444)
        shutil.rmtree(root)
        (work / "recipe.json").write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")
        final = cache / digest
        shutil.rmtree(final, ignore_errors=True)
        work.rename(final)
        return BaseImage(final)
    except BaseException:
        shutil.rmtree(work, ignore_errors=True)
        raise


def images_in_use(state_dir: Path) -> set[Path]:
    return {Path(inst.base).parent for inst in load_instances(state_dir)}


def suite_of(directory: Path) -> str | None:
    """The Debian release a cached base image was built from (None: not a complete image)."""
    try:
        suite = json.loads((directory / "recipe.json").read_text()).get("suite")
    except (OSError, ValueError, AttributeError):
        return None
    return suite if isinstance(suite, str) else None


def ensure_base(cache: Path, state_dir: Path, kernel: Kernel, force: bool = False) -> BaseImage:
    data, digest = current_recipe(kernel)
    cache.mkdir(parents=True, exist_ok=True)
    with locked(cache / ".lock"):
        base = BaseImage(cache / digest)
        if base.complete() and not force:
            log(f"base image {base.image} is current (recipe {digest}), reused")
            return base
        if base.complete() and base.directory in images_in_use(state_dir):
            raise BedError(f"{base.image} backs running instances; run `down-all` before rebuilding it")
        start = time.monotonic()
        log(f"building the base image (recipe {digest})")
        base = build_base(cache, data, digest, kernel)
        log(f"built {base.image} in {time.monotonic() - start:.0f}s")
        in_use = images_in_use(state_dir)
        # Base images of the other releases stay: switching MNH_DEBIAN back finds its image again.
        for stale in cache.iterdir():
            if (
                stale.is_dir()
                and stale.name != KERNEL_DIR
                and stale != base.directory
                and stale not in in_use
                and suite_of(stale) in (DEBIAN_SUITE, None)
            ):
                log(f"removing the outdated {stale}")
                shutil.rmtree(stale, ignore_errors=True)
        return base


# ---------------------------------------------------------------------------- state


@dataclass
class Instance:
    name: str
    address: str
    tap: str  # the host's end of its veth pair on the bridge (the name older state files use)
    mac: str
    umid: str
    base: str
    cow: str
    console: str
    pid: int = 0

    @property
    def key(self) -> Path:
        return Path(self.base).parent / "bed_key"


def instances_dir(state_dir: Path) -> Path:
    return state_dir / "instances"


def load_instances(state_dir: Path) -> list[Instance]:
    found = []
    for path in sorted(instances_dir(state_dir).glob("*/instance.json")):
        with contextlib.suppress(OSError, ValueError, TypeError):
            found.append(Instance(**json.loads(path.read_text())))
    return found


def save_instance(state_dir: Path, inst: Instance) -> None:
    path = instances_dir(state_dir) / inst.name / "instance.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(asdict(inst), indent=2) + "\n")
    tmp.rename(path)


def load_bed_state(state_dir: Path) -> dict[str, object]:
    path = state_dir / "bed.json"
    if not path.is_file():
        return {"bridge": None, "rules": []}
    return json.loads(path.read_text())


def save_bed_state(state_dir: Path, state: dict[str, object]) -> None:
    state_dir.mkdir(parents=True, exist_ok=True)
    tmp = state_dir / "bed.json.tmp"
    tmp.write_text(json.dumps(state, indent=2) + "\n")
    tmp.rename(state_dir / "bed.json")


# ---------------------------------------------------------------------------- bed network


def rule_present(rule: Sequence[str]) -> bool:
    return run(["iptables", "-w", "-C", *rule], check=False, quiet=True).returncode == 0


def ensure_network(bed: Bed, state_dir: Path) -> None:
    state = load_bed_state(state_dir)
    if state.get("bridge") not in (None, bed.bridge):
        raise BedError(f"the state in {state_dir} is for bridge {state['bridge']}; run `down-all` first")
    if state.get("bridge") is None:
        if link_exists(bed.bridge):
            raise BedError(
                f"a network interface {bed.bridge} exists that this tool did not create; "
                "remove it or pick another --bridge"
            )
        state.update(bridge=bed.bridge, subnet=str(bed.subnet), rules=[])
        save_bed_state(state_dir, state)
    if not link_exists(bed.bridge):
        run(["ip", "link", "add", bed.bridge, "type", "bridge"])
        sysctl = Path(f"/proc/sys/net/ipv6/conf/{bed.bridge}/disable_ipv6")
        if sysctl.exists():
            sysctl.write_text("1\n")
        run(["ip", "addr", "add", f"{bed.host_address}/{bed.subnet.prefixlen}", "dev", bed.bridge])
        run(["ip", "link", "set", bed.bridge, "up"])
    rules: list[list[str]] = [list(r) for r in state.get("rules", [])]  # type: ignore[union-attr]
    for rule in reversed(bed.forward_rules()):
        if rule not in rules:
            rules.append(rule)
            state["rules"] = rules
            save_bed_state(state_dir, state)
        if not rule_present(rule):
            run(["iptables", "-w", "-I", rule[0], "1", *rule[1:]])


def remove_network(state_dir: Path) -> list[str]:
    state = load_bed_state(state_dir)
    errors = []
    for rule in state.get("rules", []):  # type: ignore[union-attr]
        while rule_present(rule):
            res = run(["iptables", "-w", "-D", *rule], check=False)
            if res.returncode != 0:
                errors.append(f"could not remove the iptables rule {shlex.join(rule)}: {res.stderr.strip()}")
                break
            log(f"removed the iptables rule {shlex.join(rule)}")
    bridge = state.get("bridge")
    if isinstance(bridge, str) and link_exists(bridge):
        res = run(["ip", "link", "del", bridge], check=False)
        if res.returncode != 0:
            errors.append(f"could not remove the bridge {bridge}: {res.stderr.strip()}")
        else:
            log(f"removed the bridge {bridge}")
    if not errors:
        (state_dir / "bed.json").unlink(missing_ok=True)
    return errors


# ---------------------------------------------------------------------------- instances


ANSI_RE = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


def tail_text(text: str, lines: int = 30) -> str:
    """The last non-empty lines of a console log, without colour codes."""
    kept = [line.rstrip() for line in ANSI_RE.sub("", text).splitlines() if line.strip()]
    return "\n".join(kept[-lines:]) or "(empty)"


def console_tail(inst: Instance, lines: int = 30) -> str:
    try:
        return tail_text(Path(inst.console).read_text(errors="replace"), lines)
    except OSError:
        return "(no console log)"


def start_instance(inst: Instance, bed: Bed, mem: str, kernel: Kernel) -> subprocess.Popen[bytes]:
    inst_dir = Path(inst.cow).parent
    uml_dir = inst_dir.parent.parent / "uml"
    uml_dir.mkdir(parents=True, exist_ok=True)
    shutil.rmtree(uml_dir / inst.umid, ignore_errors=True)
    Path(inst.cow).unlink(missing_ok=True)
    if not link_exists(inst.tap):
        run(["ip", "link", "add", inst.tap, "type", "veth", "peer", "name", peer_name(inst.tap)])
    run(["ip", "link", "set", inst.tap, "master", bed.bridge])
    run(["ip", "link", "set", inst.tap, "up"])
    run(["ip", "link", "set", peer_name(inst.tap), "up"])
    argv = [
        str(kernel.binary),
        *kernel_cmdline(
            umid=inst.umid,
            uml_dir=uml_dir,
            mem=mem,
            cow=Path(inst.cow),
            base=Path(inst.base),
            link=inst.tap,
            mac=inst.mac,
            name=inst.name,
            ip=ipaddress.IPv4Address(inst.address),
            bed=bed,
        ),
    ]
    env = dict(os.environ, TMPDIR="/dev/shm")
    with open(inst.console, "wb") as console:
        proc = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=console,
            stderr=subprocess.STDOUT,
            env=env,
            cwd=inst_dir,
            start_new_session=True,
        )
    inst.pid = proc.pid
    return proc


def wait_ssh(insts: Sequence[Instance], procs: dict[str, subprocess.Popen[bytes]], timeout: float) -> None:
    """Wait until every instance runs a command over ssh; fail with its console on timeout."""
    start = time.monotonic()
    pending = {inst.name: inst for inst in insts}
    while pending:
        for name, inst in list(pending.items()):
            if procs[name].poll() is not None:
                raise BedError(
                    f"instance {name} stopped while booting; console log {inst.console}:\n" + console_tail(inst)
                )
            try:
                with socket.create_connection((inst.address, 22), timeout=2):
                    pass
            except OSError:
                continue
            res = subprocess.run(
                ssh_argv(inst.key, inst.address, ["true"]), capture_output=True, check=False, timeout=30
            )
            if res.returncode == 0:
                log(f"{name} ({inst.address}) answers on ssh after {time.monotonic() - start:.1f}s")
                del pending[name]
        if not pending:
            break
        if time.monotonic() - start > timeout:
            tails = "\n".join(f"--- {inst.name}: {inst.console}\n{console_tail(inst)}" for inst in pending.values())
            raise BedError(f"no ssh answer from {', '.join(pending)} within {timeout:.0f}s:\n{tails}")
        time.sleep(1)


def stop_instances(insts: Sequence[Instance], state_dir: Path, wait: float = 15) -> list[str]:
    """Hard-stop (mconsole halt, then SIGKILL of the process group) and remove links and files."""
    uml_dir = state_dir / "uml"
    for inst in insts:
        if inst.pid and pid_alive(inst.pid, inst.umid):
            sock = uml_dir / inst.umid / "mconsole"
            if sock.exists():
                run(["uml_mconsole", str(sock), "halt"], check=False, quiet=True)
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline and any(uml_processes(i.umid) for i in insts):
        time.sleep(0.2)
    errors = []
    for inst in insts:
        left = uml_processes(inst.umid)
        if left:
            log(f"{inst.name}: {len(left)} process(es) left after halt; killing them")
            for pid in left:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            for _ in range(50):
                if not uml_processes(inst.umid):
                    break
                time.sleep(0.1)
            else:
                errors.append(f"{inst.name}: processes {uml_processes(inst.umid)} survived SIGKILL")
                continue
        if link_exists(inst.tap):
            res = run(["ip", "link", "del", inst.tap], check=False)
            if res.returncode != 0:
                errors.append(f"{inst.name}: could not remove the link {inst.tap}: {res.stderr.strip()}")
                continue
        shutil.rmtree(uml_dir / inst.umid, ignore_errors=True)
        shutil.rmtree(instances_dir(state_dir) / inst.name, ignore_errors=True)
        log(f"{inst.name} is down")
    return errors


def up(
    pairs: Sequence[tuple[str, str]], bed: Bed, *, state_dir: Path, cache: Path, mem: str, timeout: float
) -> list[Instance]:
    ips = [(name, bed.check_address(addr)) for name, addr in pairs]
    kernel = ensure_kernel(cache)
    base = ensure_base(cache, state_dir, kernel)
    with locked(state_dir / ".lock"):
        existing = {inst.name: inst for inst in load_instances(state_dir)}
        for name, ip in ips:
            if name in existing and pid_alive(existing[name].pid, existing[name].umid):
                raise BedError(f"instance {name} is already up; run `down {name}` first")
            clash = [i.name for i in existing.values() if i.address == str(ip) and i.name != name]
            if clash:
                raise BedError(f"{ip} is already used by instance {clash[0]}")
        stale = [existing[name] for name, _ in ips if name in existing]
        if stale:
            stop_instances(stale, state_dir)
        ensure_network(bed, state_dir)
        insts = []
        procs = {}
        for name, ip in ips:
            inst_dir = instances_dir(state_dir) / name
            inst = Instance(
                name=name,
                address=str(ip),
                tap=bed.link_name(ip),
                mac=mac_for(ip),
                umid=f"{bed.bridge}-{name}",
                base=str(base.image),
                cow=str(inst_dir / "disk.cow"),
                console=str(inst_dir / "console.log"),
            )
            save_instance(state_dir, inst)  # recorded before anything is made for it
            procs[name] = start_instance(inst, bed, mem, kernel)
            save_instance(state_dir, inst)
            insts.append(inst)
    with timed(f"boot of {', '.join(i.name for i in insts)} until ssh answers"):
        try:
            wait_ssh(insts, procs, timeout)
        except BedError as exc:
            raise BedError(f"{exc}\n(what was made stays for inspection; `down-all` removes it)") from exc
    return insts


# ---------------------------------------------------------------------------- command line


def describe(inst: Instance) -> dict[str, object]:
    return {
        "name": inst.name,
        "address": inst.address,
        "user": "root",
        "port": 22,
        "identity_file": str(inst.key),
        "running": pid_alive(inst.pid, inst.umid),
        "console": inst.console,
    }


def cmd_kernel(args: argparse.Namespace, bed: Bed) -> int:
    kernel = ensure_kernel(args.cache_dir)
    print(f"{kernel.binary} {kernel.version}")
    return 0


def cmd_base(args: argparse.Namespace, bed: Bed) -> int:
    print(ensure_base(args.cache_dir, args.state_dir, ensure_kernel(args.cache_dir), args.force).directory)
    return 0


def cmd_up(args: argparse.Namespace, bed: Bed) -> int:
    pairs = parse_pairs(args.pairs)
    insts = up(pairs, bed, state_dir=args.state_dir, cache=args.cache_dir, mem=args.mem, timeout=args.timeout)
    print(json.dumps([describe(i) for i in insts], indent=2))
    return 0


def cmd_down(args: argparse.Namespace, bed: Bed) -> int:
    names = {check_name(n) for n in args.names}
    with locked(args.state_dir / ".lock"):
        insts = [i for i in load_instances(args.state_dir) if i.name in names]
        errors = stop_instances(insts, args.state_dir)
    if errors:
        raise BedError("\n".join(errors))
    return 0


def cmd_down_all(args: argparse.Namespace, bed: Bed) -> int:
    with locked(args.state_dir / ".lock"):
        errors = stop_instances(load_instances(args.state_dir), args.state_dir)
        errors += remove_network(args.state_dir)
    if errors:
        raise BedError("\n".join(errors))
    log("the bed is gone: no instances, links, rules or bridge left")
    return 0


def cmd_list(args: argparse.Namespace, bed: Bed) -> int:
    print(json.dumps([describe(i) for i in load_instances(args.state_dir)], indent=2))
    return 0


def cmd_ssh(args: argparse.Namespace, bed: Bed) -> int:
    inst = next((i for i in load_instances(args.state_dir) if i.name == args.name), None)
    if inst is None:
        raise BedError(f"no instance {args.name} is recorded in {args.state_dir}")
    return subprocess.run(ssh_argv(inst.key, inst.address, args.cmd), check=False).returncode


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "--state-dir",
        type=Path,
        default=default_state_dir(),
        help="where instances, links and rules are recorded (env MNH_UMLBED_STATE)",
    )
    parser.add_argument(
        "--cache-dir", type=Path, default=default_cache_dir(), help="where base images are kept (env MNH_CACHE_DIR)"
    )
    parser.add_argument("--bridge", default=DEFAULT_BRIDGE, help="bed bridge name (at most 8 characters)")
    parser.add_argument("--subnet", default=DEFAULT_SUBNET, help="bed IPv4 subnet; the host takes its first address")
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("kernel", help="fetch or reuse the UML kernel; prints its binary and version").set_defaults(
        func=cmd_kernel
    )
    p_base = sub.add_parser("base", help="build or reuse the base image; prints its directory")
    p_base.add_argument("--force", action="store_true", help="rebuild even when the recipe hash matches")
    p_base.set_defaults(func=cmd_base)
    p_up = sub.add_parser("up", help="boot instances and wait for ssh; prints them as JSON")
    p_up.add_argument("pairs", nargs="+", metavar="NAME ADDR", help="instance name and address, repeatable")
    p_up.add_argument("--mem", default="512M", help="memory per instance (default 512M)")
    p_up.add_argument("--timeout", type=float, default=300, help="seconds to wait for ssh (default 300)")
    p_up.set_defaults(func=cmd_up)
    p_down = sub.add_parser("down", help="hard-stop instances and remove their link and disk")
    p_down.add_argument("names", nargs="+", metavar="NAME")
    p_down.set_defaults(func=cmd_down)
    sub.add_parser("down-all", help="remove every instance, link, rule and the bridge this tool created").set_defaults(
        func=cmd_down_all
    )
    sub.add_parser("list", help="print the recorded instances as JSON").set_defaults(func=cmd_list)
    p_ssh = sub.add_parser("ssh", help="run a command on an instance as root")
    p_ssh.add_argument("name")
    p_ssh.add_argument("cmd", nargs=argparse.REMAINDER)
    p_ssh.set_defaults(func=cmd_ssh)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        bed = Bed(args.bridge, ipaddress.IPv4Network(args.subnet))
    except ValueError as exc:
        parser.error(f"--subnet: {exc}")
    try:
        if args.command in ("kernel", "base", "up"):
            preflight()
        if os.geteuid() != 0 and args.command != "list":
            raise BedError("needs root (bridges, veth links, iptables, debootstrap)")
        return int(args.func(args, bed))
    except BedError as exc:
        print(f"umlbed: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
