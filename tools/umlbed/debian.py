# Copyright: multinode.horovod contributors
# SPDX-License-Identifier: GPL-3.0-or-later
"""Which Debian the bed is made from: the tested releases, the release of the instances' root
filesystem (MNH_DEBIAN, as tools/images.py), the mirrors that the kernel (kernel.py) and the root
filesystem (rootfs.py) are fetched from, and Debian's archive keyring. Read from the environment once,
at import; the other modules read them here (``debian.DEBIAN_SUITE``) when they run.
"""

from __future__ import annotations

import os

# The Debian release of the instances' root filesystem: MNH_DEBIAN (as tools/images.py), else bookworm.
RELEASES = ("bookworm", "trixie")
DEBIAN_SUITE = os.environ.get("MNH_DEBIAN") or "bookworm"
DEBIAN_MIRROR = os.environ.get("MNH_DEBIAN_MIRROR", "http://deb.debian.org/debian")
DEBIAN_SECURITY_MIRROR = os.environ.get("MNH_DEBIAN_SECURITY_MIRROR", "http://deb.debian.org/debian-security")
DEBIAN_KEYRING = "/usr/share/keyrings/debian-archive-keyring.gpg"
