#!/usr/bin/python
# Copyright: multinode.horovod contributors
# SPDX-License-Identifier: GPL-3.0-or-later
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Read what a `docker save` archive holds, without loading it."""

from __future__ import annotations

DOCUMENTATION = r"""
module: image_archive_info
short_description: Read the images a docker save archive holds, and its sha256, without loading it
description:
  - Reads the archive's C(manifest.json) (the tar's headers are skipped over, so a 10 GB archive is
    read in milliseconds) and returns every image it holds with its ID and tags.
  - With O(checksum), also returns the sha256 of the whole archive (this reads all of it), unless
    the archive holds exactly the image O(loaded_image_id), which is then already loaded and needs no check.
  - Used by multinode.horovod.docker_horovod before it loads an archive; it only reads.
version_added: 0.1.0
author: multinode.horovod contributors (!UNKNOWN)
options:
  path:
    description: Absolute path of the archive on the managed node.
    type: path
    required: true
  checksum:
    description: Return the sha256 of the whole archive.
    type: bool
    default: false
  loaded_image_id:
    description:
      - The ID of the image already present under the wanted tag, if any. When the archive holds
        exactly that image, nothing would be loaded, so the sha256 is not computed.
    type: str
    default: ""
attributes:
  check_mode:
    description: It only reads, in check mode too.
    support: full
"""

EXAMPLES = r"""
- name: Read the archive on the share
  multinode.horovod.image_archive_info:
    path: /data1/share/images/horovod-0.28.1.tar
    checksum: true
  register: archive
"""

RETURN = r"""
images:
  description: The images in the archive, in the order of its manifest.
  returned: success
  type: list
  elements: dict
  contains:
    id:
      description: The image ID (C(sha256:) and the digest of its configuration), as C(docker image inspect) shows it.
      type: str
    repo_tags:
      description: The tags the archive gives the image (C(docker load) applies all of them).
      type: list
      elements: str
sha256:
  description: The sha256 of the whole archive (lower-case hex), or an empty string when it was not computed.
  returned: success
  type: str
"""

import hashlib
import json
import posixpath
import tarfile

from ansible.module_utils.basic import AnsibleModule

CHUNK = 1 << 20


class ArchiveError(Exception):
    """The file is not a docker save archive that can be read."""


def image_id(config: str) -> str:
    """The image ID from a manifest's Config entry: `<hex>.json` (Docker up to 24) or
    `blobs/sha256/<hex>` (Docker 25 and later, an OCI layout)."""
    name = posixpath.basename(config)
    if name.endswith(".json"):
        name = name[: -len(".json")]
    if len(name) != 64 or any(c not in "0123456789abcdef" for c in name):
        raise ArchiveError(f"its manifest names the configuration {config!r}, which is not a sha256 digest")
    return "sha256:" + name


def read_images(path: str) -> list[dict[str, object]]:
    """The images a docker save archive holds: [{id, repo_tags}]."""
    try:
        with tarfile.open(path, mode="r:") as archive:
            try:
                member = archive.getmember("manifest.json")
            except KeyError:
                raise ArchiveError("it has no manifest.json at its top (not a docker save archive)") from None
            handle = archive.extractfile(member)
            if handle is None:
                raise ArchiveError("its manifest.json is not a file")
            manifest = json.load(handle)
    except (tarfile.TarError, OSError) as err:
        raise ArchiveError(f"it cannot be read as a tar archive: {err}") from None
    except ValueError as err:
        raise ArchiveError(f"its manifest.json is not JSON: {err}") from None
    if not isinstance(manifest, list) or not all(isinstance(entry, dict) for entry in manifest):
        raise ArchiveError("its manifest.json is not a list of images")
    images = []
    for entry in manifest:
        config, tags = entry.get("Config"), entry.get("RepoTags") or []
        if not isinstance(config, str) or not isinstance(tags, list):
            raise ArchiveError("its manifest.json has an entry without Config or with bad RepoTags")
        images.append({"id": image_id(config), "repo_tags": [str(tag) for tag in tags]})
    return images


def sha256(path: str) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(CHUNK), b""):
            digest.update(block)
    return digest.hexdigest()


def describe(path: str, checksum: bool, loaded_image_id: str = "") -> dict[str, object]:
    images = read_images(path)
    already = loaded_image_id and [image["id"] for image in images] == [loaded_image_id]
    return {"images": images, "sha256": sha256(path) if checksum and not already else ""}


def main() -> None:
    module = AnsibleModule(
        argument_spec={
            "path": {"type": "path", "required": True},
            "checksum": {"type": "bool", "default": False},
            "loaded_image_id": {"type": "str", "default": ""},
        },
        supports_check_mode=True,
    )
    path = module.params["path"]
    try:
        result = describe(path, module.params["checksum"], module.params["loaded_image_id"])
    except (ArchiveError, OSError) as err:
        module.fail_json(msg=f"{path}: {err}")
    module.exit_json(changed=False, **result)


if __name__ == "__main__":
    main()
