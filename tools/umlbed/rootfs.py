# Copyright: multinode.horovod contributors
# SPDX-License-Identifier: GPL-3.0-or-later
"""The instances' root filesystem: its recipe (the Debian release and mirrors, the packages, the
files written into it, the units enabled, disabled and masked, the kernel's modules) and the hash of
that recipe, which names the cached base image; building it (debootstrap, apt-get in a chroot, the
bed's ssh key, mkfs.ext4 -d) and reusing or replacing it in the cache. The base image is read-only:
every instance boots a copy-on-write file on top of it (instance.py).
"""

from __future__ import annotations

import hashlib
import json
import shlex
import shutil
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from . import debian
from .host import BedError, locked, log, run, timed
from .kernel import KERNEL_DIR, Kernel
from .state import load_instances

IMAGE_SIZE = "4G"


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


def recipe(kver: str, modules_dep: bytes) -> dict[str, object]:
    """Everything the base image is made from; its hash names the cached image."""
    return {
        "version": RECIPE_VERSION,
        "suite": debian.DEBIAN_SUITE,
        "mirror": debian.DEBIAN_MIRROR,
        "security_mirror": debian.DEBIAN_SECURITY_MIRROR,
        "packages": sorted(packages(debian.DEBIAN_SUITE)),
        "files": FILES,
        "enable": list(ENABLE_UNITS),
        "disable": list(DISABLE_UNITS),
        "mask": list(MASK_UNITS),
        "size": IMAGE_SIZE,
        "kernel": kver,
        "modules_dep": hashlib.sha256(modules_dep).hexdigest(),
        "script": chroot_script(packages(debian.DEBIAN_SUITE)),
    }


def recipe_hash(data: dict[str, object]) -> str:
    return hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()[:16]


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
                    debian.DEBIAN_SUITE,
                    str(root),
                    debian.DEBIAN_MIRROR,
                ],
                label="debootstrap",
            )
        (root / "etc/apt/sources.list").write_text(
            f"deb {debian.DEBIAN_MIRROR} {debian.DEBIAN_SUITE} main\n"
            f"deb {debian.DEBIAN_MIRROR} {debian.DEBIAN_SUITE}-updates main\n"
            f"deb {debian.DEBIAN_SECURITY_MIRROR} {debian.DEBIAN_SUITE}-security main\n"
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
        with timed(f"apt-get install of {len(packages(debian.DEBIAN_SUITE))} packages in the chroot"):
            script = chroot_script(packages(debian.DEBIAN_SUITE))
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
                ],
                label="apt-get in the chroot",
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
                and suite_of(stale) in (debian.DEBIAN_SUITE, None)
            ):
                log(f"removing the outdated {stale}")
                shutil.rmtree(stale, ignore_errors=True)
        return base
