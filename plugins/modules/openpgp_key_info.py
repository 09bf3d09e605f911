#!/usr/bin/python
# Copyright: multinode.horovod contributors
# SPDX-License-Identifier: GPL-3.0-or-later
"""Read which OpenPGP keys a key file holds (their fingerprints), without gpg."""

from __future__ import annotations

import hashlib

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.multinode.horovod.plugins.module_utils.openpgp import KeyFileError, primary_keys

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
author: multinode.horovod developers
options:
  path:
    description: Absolute path of the key file on the managed node.
    type: path
    required: true
attributes:
  check_mode:
    support: full
"""

EXAMPLES = r"""
- name: Read the fingerprint of the downloaded key
  multinode.horovod.openpgp_key_info:
    path: /run/multinode-horovod/nvidia.asc
  register: key
"""

RETURN = r"""
keys:
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
  description: The fingerprints of RV(keys), in the same order.
  returned: success
  type: list
  elements: str
sha256:
  description: The sha256 of the file.
  returned: success
  type: str
"""


def main() -> None:
    module = AnsibleModule(argument_spec={"path": {"type": "path", "required": True}}, supports_check_mode=True)
    path = module.params["path"]
    try:
        with open(path, "rb") as handle:
            data = handle.read()
    except OSError as exc:
        module.fail_json(msg=f"cannot read {path}: {exc}")
    try:
        keys = primary_keys(data)
    except (KeyFileError, IndexError) as exc:
        module.fail_json(msg=f"{path} is not an OpenPGP public key file: {exc}")
    module.exit_json(
        changed=False,
        keys=keys,
        fingerprints=[key["fingerprint"] for key in keys],
        sha256=hashlib.sha256(data).hexdigest(),
    )


if __name__ == "__main__":
    main()
