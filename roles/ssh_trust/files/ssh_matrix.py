# Copyright: multinode.horovod contributors
# SPDX-License-Identifier: GPL-3.0-or-later
"""One row of ssh_trust's ssh matrix: ssh from this container to every node, as horovodrun does it.

Run in a node's Horovod container by multinode.horovod.ssh_trust (``docker exec python3 -c CODE TIMEOUT
NODE...``): ``ssh -n -o BatchMode=yes -o ConnectTimeout=TIMEOUT NODE true`` to every node side by side
(a row takes one login's time, not one per node), through the ssh first on PATH (the pinning wrapper)
and the client config. Prints JSON ``{node: "ok" or the last two lines of ssh's error}``.
"""

import json
import re
import subprocess
import sys
from typing import Dict, List  # Python 3.6: no PEP 585/604 forms


def error(output: bytes) -> str:
    lines = output.decode("utf-8", errors="replace").rstrip("\n").split("\n")[-2:]
    return re.sub(r"[\t\r\n]", " ", "\n".join(lines)).strip() or "ssh failed"


def row(timeout: str, nodes: List[str]) -> Dict[str, str]:
    argv = ["ssh", "-n", "-o", "BatchMode=yes", "-o", f"ConnectTimeout={timeout}"]
    runs = {
        node: subprocess.Popen(
            [*argv, node, "true"], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT
        )
        for node in dict.fromkeys(nodes)
    }
    done = {node: run.communicate()[0] for node, run in runs.items()}
    return {node: "ok" if runs[node].returncode == 0 else error(done[node]) for node in runs}


if __name__ == "__main__":
    print(json.dumps(row(sys.argv[1], sys.argv[2:])))
