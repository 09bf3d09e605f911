#!/usr/bin/python
# Copyright: multinode.horovod contributors
# SPDX-License-Identifier: GPL-3.0-or-later
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Read what a training code checkout's directory holds, before the checkout is made or updated."""

from __future__ import annotations

DOCUMENTATION = r"""
module: code_checkout_info
short_description: Read what the directory of a training code checkout holds
description:
  - Tells whether the directory exists and holds anything, whether it is a git checkout, the repository
    it was cloned from and, for O(version), the commit its own tag of that name points to (the commit the
    tag had when it was last fetched).
  - Used by multinode.horovod.horovod_launch before it checks the code out, so that a directory holding
    another repository or other files, and a tag that moved, are refused with the setting to change
    instead of failing in git. It only reads.
version_added: 0.1.0
author: multinode.horovod contributors (!UNKNOWN)
options:
  path:
    description: The checkout's directory on the managed node.
    type: path
    required: true
  version:
    description: The tag (or other ref) to read in the checkout; empty reads none.
    type: str
    default: ""
attributes:
  check_mode:
    description: It only reads, in check mode too.
    support: full
requirements:
  - git on the managed node, to read a checkout (without it RV(origin) and RV(tag_commit) are empty)
"""

EXAMPLES = r"""
- name: Read the checkout's directory
  multinode.horovod.code_checkout_info:
    path: /srv/checkouts/train
    version: v1.2.0
  register: checkout
"""

RETURN = r"""
exists:
  description: Whether O(path) exists.
  returned: success
  type: bool
entries:
  description: How many entries O(path) holds (0 when it does not exist or is not a directory).
  returned: success
  type: int
is_dir:
  description: Whether O(path) is a directory (a link to one is not).
  returned: success
  type: bool
git:
  description: Whether O(path) is a git checkout (it holds C(.git)).
  returned: success
  type: bool
origin:
  description: The URL of the checkout's C(origin) remote; empty when there is none or no git to read it.
  returned: success
  type: str
tag_commit:
  description: The commit the checkout's own tag O(version) points to; empty when it has no such tag.
  returned: success
  type: str
"""

import os
import stat

from ansible.module_utils.basic import AnsibleModule


def describe(path: str) -> dict[str, object]:
    """exists, is_dir, entries and git, read without following a link at `path`."""
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return {"exists": False, "is_dir": False, "entries": 0, "git": False}
    if not stat.S_ISDIR(mode):
        return {"exists": True, "is_dir": False, "entries": 0, "git": False}
    names = os.listdir(path)
    return {"exists": True, "is_dir": True, "entries": len(names), "git": ".git" in names}


def main() -> None:
    module = AnsibleModule(
        argument_spec={"path": {"type": "path", "required": True}, "version": {"type": "str", "default": ""}},
        supports_check_mode=True,
    )
    path, version = module.params["path"], module.params["version"]
    found = {**describe(path), "origin": "", "tag_commit": ""}
    git = module.get_bin_path("git") if found["git"] else None
    if git:
        rc, out, _err = module.run_command([git, "-C", path, "config", "--get", "remote.origin.url"])
        found["origin"] = out.strip() if rc == 0 else ""
        if version:
            ref = f"{version if version.startswith('refs/') else 'refs/tags/' + version}^{{commit}}"
            rc, out, _err = module.run_command([git, "-C", path, "rev-parse", "--quiet", "--verify", ref])
            found["tag_commit"] = out.strip() if rc == 0 else ""
    module.exit_json(changed=False, **found)


if __name__ == "__main__":
    main()
