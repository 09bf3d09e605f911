# Copyright: multinode.horovod contributors
# SPDX-License-Identifier: GPL-3.0-or-later
"""Stand-in for the pip bootstrap script ansible-test downloads, for machines that cannot reach it.

ansible-test makes a virtualenv per sanity test and bootstraps pip in it with a script it fetches from
ci-files.testing.ansible.com, unless ``~/.ansible/test/cache/get_pip_<version>.py`` already exists
(`make sanity` copies this file there). It is run as ``python get_pip.py [pip options] pip==X ...`` in
the new virtualenv: this installs pip with the standard library's ensurepip, then the packages asked
for from the package index pip is configured with. ``--no-setuptools``/``--no-wheel`` (options of the
real script only) are dropped: ensurepip installs neither.
"""

from __future__ import annotations

import subprocess
import sys

SCRIPT_ONLY = {"--no-setuptools", "--no-wheel"}


def main() -> int:
    subprocess.run(
        [sys.executable, "-m", "ensurepip", "--upgrade", "--default-pip"], check=True, stdout=subprocess.DEVNULL
    )
    args = [arg for arg in sys.argv[1:] if arg not in SCRIPT_ONLY]
    return subprocess.run([sys.executable, "-m", "pip", "install", *args], check=False).returncode


if __name__ == "__main__":
    sys.exit(main())
