# Copyright: multinode.horovod contributors
# SPDX-License-Identifier: GPL-3.0-or-later
"""Link ssh_trust's ssh wrapper first on the Horovod container's PATH, or only say how it stands.

Run in the container by multinode.horovod.ssh_trust (``docker exec python3 -c CODE MODE LINK WRAPPER
REAL_SSH``, MODE ``read`` or ``link``). Prints JSON ``{"before": STATE, "after": STATE}``, a STATE being
``["link TARGET" | "a file that is not a link at LINK" | "no link at LINK", "first PATH-OF-SSH" | "no
REAL_SSH"]`` (which ssh the container's PATH finds). A file at LINK that is not a link is never replaced.
"""

import json
import os
import shutil
import sys
from typing import Dict, List  # Python 3.6: no PEP 585/604 forms


def state(link: str, real_ssh: str) -> List[str]:
    if os.path.islink(link):
        found = f"link {os.readlink(link)}"
    elif os.path.lexists(link):
        found = f"a file that is not a link at {link}"
    else:
        found = f"no link at {link}"
    first = f"first {shutil.which('ssh') or 'none'}" if os.access(real_ssh, os.X_OK) else f"no {real_ssh}"
    return [found, first]


def run(mode: str, link: str, wrapper: str, real_ssh: str) -> Dict[str, List[str]]:
    before = state(link, real_ssh)
    if mode == "link" and before[0] != f"link {wrapper}" and (os.path.islink(link) or not os.path.lexists(link)):
        os.makedirs(os.path.dirname(link), exist_ok=True)
        tmp = f"{link}.multinode-horovod"
        if os.path.lexists(tmp):
            os.unlink(tmp)
        os.symlink(wrapper, tmp)
        os.replace(tmp, link)
    return {"before": before, "after": state(link, real_ssh)}


if __name__ == "__main__":
    print(json.dumps(run(*sys.argv[1:5])))
