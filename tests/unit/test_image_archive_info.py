# Copyright: multinode.horovod contributors
# SPDX-License-Identifier: GPL-3.0-or-later
"""Unit tests of plugins/modules/image_archive_info.py and the filter docker_horovod_archive_problem."""

from __future__ import annotations

import hashlib
import io
import json
import tarfile
from pathlib import Path
from typing import Any

import pytest
from checkout import load

m = load("plugins/modules/image_archive_info.py", "image_archive_info")
f = load("plugins/filter/docker_horovod.py", "docker_horovod_filters_archive").FilterModule().filters()

A, B = "a" * 64, "b" * 64


def archive(path: Path, manifest: Any, *, layout: str = "legacy", raw: bytes | None = None) -> Path:
    """A tar shaped like `docker save`: layers first, then manifest.json (as Docker writes it)."""
    with tarfile.open(path, "w") as tar:
        for name, data in [
            (f"{A}/layer.tar", b"x" * 4096),
            (f"blobs/sha256/{A}" if layout == "oci" else f"{A}.json", b"{}"),
            ("manifest.json", raw if raw is not None else json.dumps(manifest).encode()),
        ]:
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return path


def test_reads_the_images_of_a_legacy_archive(tmp_path: Path) -> None:
    path = archive(tmp_path / "a.tar", [{"Config": f"{A}.json", "RepoTags": ["horovod/horovod:0.28.1"], "Layers": []}])
    assert m.describe(str(path), checksum=False) == {
        "images": [{"id": f"sha256:{A}", "repo_tags": ["horovod/horovod:0.28.1"]}],
        "sha256": "",
    }


def test_reads_the_images_of_an_oci_layout_archive_and_its_sha256(tmp_path: Path) -> None:
    manifest = [
        {"Config": f"blobs/sha256/{A}", "RepoTags": ["x:1"], "Layers": []},
        {"Config": f"blobs/sha256/{B}", "RepoTags": None, "Layers": []},
    ]
    path = archive(tmp_path / "b.tar", manifest, layout="oci")
    result = m.describe(str(path), checksum=True)
    assert result["images"] == [{"id": f"sha256:{A}", "repo_tags": ["x:1"]}, {"id": f"sha256:{B}", "repo_tags": []}]
    assert result["sha256"] == hashlib.sha256(path.read_bytes()).hexdigest()


def test_the_sha256_is_skipped_only_when_the_archive_holds_exactly_the_loaded_image(tmp_path: Path) -> None:
    path = archive(tmp_path / "a.tar", [{"Config": f"{A}.json", "RepoTags": ["x:1"]}])
    assert m.describe(str(path), checksum=True, loaded_image_id=f"sha256:{A}")["sha256"] == ""
    assert len(m.describe(str(path), checksum=True, loaded_image_id=f"sha256:{B}")["sha256"]) == 64
    assert len(m.describe(str(path), checksum=True, loaded_image_id="")["sha256"]) == 64


@pytest.mark.parametrize(
    ("manifest", "raw", "message"),
    [
        (None, b"not json", "its manifest.json is not JSON"),
        ({"Config": "x"}, None, "is not a list of images"),
        ([{"Config": "config.json", "RepoTags": []}], None, "which is not a sha256 digest"),
        ([{"RepoTags": ["x:1"]}], None, "without Config"),
    ],
)
def test_a_bad_manifest_is_an_error(tmp_path: Path, manifest: Any, raw: bytes | None, message: str) -> None:
    path = archive(tmp_path / "bad.tar", manifest, raw=raw)
    with pytest.raises(m.ArchiveError, match=message):
        m.describe(str(path), checksum=False)


def test_a_file_that_is_no_docker_save_archive_is_an_error(tmp_path: Path) -> None:
    plain = tmp_path / "plain.tar"
    with tarfile.open(plain, "w") as tar:
        tar.add(__file__, arcname="readme")
    with pytest.raises(m.ArchiveError, match=r"no manifest\.json at its top"):
        m.describe(str(plain), checksum=False)
    text = tmp_path / "text.tar"
    text.write_text("hello")
    with pytest.raises(m.ArchiveError, match="cannot be read as a tar archive"):
        m.describe(str(text), checksum=False)


def one(tags: list[str], sha: str = "") -> dict[str, Any]:
    return {"images": [{"id": f"sha256:{A}", "repo_tags": tags}], "sha256": sha}


@pytest.mark.parametrize(
    ("result", "image", "checksum", "fragment"),
    [
        (one(["horovod/horovod:0.28.1"]), "horovod/horovod:0.28.1", "", ""),
        (one(["horovod/horovod:0.28.1"]), "docker.io/horovod/horovod:0.28.1", "", ""),
        (one(["debian:12"]), "docker.io/library/debian:12", "", ""),
        (one(["x:1"], sha=A), "x:1", f"sha256:{A}", ""),
        (one(["x:1"], sha=A), "x:1", f"sha256:{A.upper()}", ""),
        # Not computed (the archive's image is the one loaded already): nothing to compare.
        (one(["x:1"], sha=""), "x:1", f"sha256:{B}", ""),
        (
            one(["x:1"], sha=A),
            "x:1",
            f"sha256:{B}",
            f"has the sha256 {A}, but docker_horovod_image_archive_checksum is sha256:{B}",
        ),
        (one(["x:2"]), "x:1", "", "holds an image tagged x:2, not docker_horovod_image x:1."),
        (one(["y:1", "x:1", "z:2"]), "x:1", "", "also tags y:1, z:2 besides docker_horovod_image x:1: docker load"),
        (one([]), "x:1", "", "holds an image tagged (none)"),
        ({"images": [], "sha256": ""}, "x:1", "", "holds 0 images (none), not one"),
        (
            {"images": [{"id": f"sha256:{A}", "repo_tags": ["x:1"]}, {"id": f"sha256:{B}", "repo_tags": []}]},
            "x:1",
            "",
            f"holds 2 images (sha256:{A[:12]} (x:1); sha256:{B[:12]} (untagged)), not one: docker load would tag",
        ),
    ],
)
def test_archive_problem(result: dict[str, Any], image: str, checksum: str, fragment: str) -> None:
    problem = f["docker_horovod_archive_problem"](result, image=image, path="/data1/share/h.tar", checksum=checksum)
    if fragment:
        assert fragment in problem and problem.startswith("/data1/share/h.tar ")
    else:
        assert problem == ""
