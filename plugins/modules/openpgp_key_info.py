#!/usr/bin/python
# Copyright: multinode.horovod contributors
# SPDX-License-Identifier: GPL-3.0-or-later
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Read which OpenPGP keys a key file holds (their fingerprints), without gpg."""

from __future__ import annotations

DOCUMENTATION = r"""
module: openpgp_key_info
short_description: Read the fingerprints of the primary keys in an OpenPGP key file
description:
  - Reads a binary or ASCII-armoured OpenPGP public key file and returns each primary key's
    fingerprint (key versions 4, 5 and 6) and user IDs, with Python only (no gpg on the node).
  - Signatures are not checked (apt checks the repository's signatures with the key); this tells
    which key a file is, so that a role can refuse a repository key that is not the pinned one.
  - Used by multinode.horovod.docker_horovod before it installs NVIDIA's repository key; it only reads.
version_added: 0.1.0
author: multinode.horovod contributors (!UNKNOWN)
options:
  path:
    description: Absolute path of the key file on the managed node.
    type: path
    required: true
  fingerprint:
    description:
      - The fingerprint the file must hold alone, as people write it (spaces and case do not matter);
        RV(matches) tells whether it does.
    type: str
    default: ""
attributes:
  check_mode:
    description: It only reads, in check mode too.
    support: full
"""

EXAMPLES = r"""
- name: Read the fingerprint of the downloaded key
  multinode.horovod.openpgp_key_info:
    path: /run/multinode-horovod/nvidia.asc
    fingerprint: C95B 321B 61E8 8C18 09C4  F759 DDCA E044 F796 ECB0
  register: key
"""

RETURN = r"""
primary_keys:
  description: The primary keys, in file order.
  returned: success
  type: list
  elements: dict
  contains:
    fingerprint:
      description: Upper-case hex, no spaces (40 characters for a version 4 key, 64 for 5 and 6).
      type: str
    user_ids:
      description: The user IDs that follow the key.
      type: list
      elements: str
fingerprints:
  description: The fingerprints of RV(primary_keys), in the same order.
  returned: success
  type: list
  elements: str
sha256:
  description: The sha256 of the file.
  returned: success
  type: str
pinned:
  description: O(fingerprint) in the form of RV(fingerprints) (upper-case hex, no spaces), or V("").
  returned: success
  type: str
matches:
  description: Whether the file holds exactly one primary key, the one of O(fingerprint).
  returned: success
  type: bool
"""

import hashlib

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.multinode.horovod.plugins.module_utils.openpgp import (
    KeyFileError,
    normalise_fingerprint,
    primary_keys,
)


def describe(data: bytes, fingerprint: str = "") -> dict:
    """The keys in `data` (RETURN), and whether they are exactly the key of `fingerprint`."""
    keys = primary_keys(data)
    fingerprints = [key["fingerprint"] for key in keys]
    pinned = normalise_fingerprint(fingerprint)
    return {
        "primary_keys": keys,
        "fingerprints": fingerprints,
        "sha256": hashlib.sha256(data).hexdigest(),
        "pinned": pinned,
        "matches": bool(pinned) and fingerprints == [pinned],
    }


def main() -> None:
    module = AnsibleModule(
        argument_spec={"path": {"type": "path", "required": True}, "fingerprint": {"type": "str", "default": ""}},
        supports_check_mode=True,
    )
    path = module.params["path"]
    try:
        with open(path, "rb") as handle:
            data = handle.read()
    except OSError as exc:
        module.fail_json(msg=f"cannot read {path}: {exc}")
    try:
        result = describe(data, module.params["fingerprint"])
    except (KeyFileError, IndexError) as exc:
        module.fail_json(msg=f"{path} is not an OpenPGP public key file: {exc}")
    module.exit_json(changed=False, **result)


if __name__ == "__main__":
    main()
