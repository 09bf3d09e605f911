# Copyright: multinode.horovod contributors
# SPDX-License-Identifier: GPL-3.0-or-later
"""Write the options of horovodrun's argument parser at each Horovod release, read from a clone of
Horovod's repository (every tag), as the JSON that the command line's unit tests check against.

    python3 tools/horovodrun_options.py HOROVOD_CLONE > tests/unit/fixtures/horovodrun_options.json

horovodrun's parser is horovod/run/run.py up to 0.19.5 and horovod/runner/launch.py from 0.20.0; an
option is each quoted '-x' or '--name' string in it (add_argument's names; the file holds no other).
"""

from __future__ import annotations

import json
import re
import subprocess
import sys

PARSERS = ("horovod/runner/launch.py", "horovod/run/run.py")
OPTION_RE = re.compile(r"""['"](-[A-Za-z]+|--[a-z][a-z0-9-]*)['"]""")
FIRST = (0, 18, 2)  # the oldest release the role launches


def git(clone: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", "-C", clone, *args], capture_output=True, text=True, check=False)


def main(clone: str) -> None:
    tags = [t for t in git(clone, "tag").stdout.split() if re.fullmatch(r"v\d+\.\d+\.\d+", t)]
    releases = sorted((tuple(int(p) for p in t[1:].split(".")), t) for t in tags)
    out = {}
    for version, tag in releases:
        if version < FIRST:
            continue
        for parser in PARSERS:
            shown = git(clone, "show", f"{tag}:{parser}")
            if shown.returncode == 0:
                out[tag[1:]] = sorted(set(OPTION_RE.findall(shown.stdout)))
                break
    # One release a line, so that a new release is one line of the diff.
    sys.stdout.write("{\n" + ",\n".join(f" {json.dumps(k)}: {json.dumps(v)}" for k, v in out.items()) + "\n}\n")


if __name__ == "__main__":
    main(sys.argv[1])
