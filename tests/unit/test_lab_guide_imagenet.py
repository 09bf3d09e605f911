# Copyright: multinode.horovod contributors
# SPDX-License-Identifier: GPL-3.0-or-later
"""The parts of tools/lab.py's guide-imagenet test that need no lab: the ImageFolder it writes and how it
reads the epochs rank 0 trained."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import pytest
from checkout import load

lab = load("tools/lab.py", "lab_guide_imagenet")


def test_the_data_set_has_imagenets_layout_with_readable_images(tmp_path):
    lab.imagefolder(tmp_path)
    for split, count in lab.IMAGENET_IMAGES.items():
        assert sorted(p.name for p in (tmp_path / split).iterdir()) == sorted(lab.IMAGENET_CLASSES)
        for name in lab.IMAGENET_CLASSES:
            images = sorted((tmp_path / split / name).iterdir())
            assert len(images) == count
            data = images[0].read_bytes()
            assert data.startswith(b"P6 32 32 255\n") and len(data) == len(b"P6 32 32 255\n") + 32 * 32 * 3
    # The classes differ, or the data set would teach nothing.
    assert (tmp_path / "train/cat/0.ppm").read_bytes() != (tmp_path / "train/dog/0.ppm").read_bytes()


def test_the_images_open_in_pil(tmp_path):
    image = pytest.importorskip("PIL.Image")
    lab.imagefolder(tmp_path)
    with image.open(tmp_path / "val" / "dog" / "2.ppm") as picture:
        assert picture.size == (32, 32) and picture.mode == "RGB"


@pytest.mark.parametrize(
    ("stdout", "stderr", "epochs"),
    [
        # tqdm writes to stderr; horovodrun's --output-filename keeps each stream in its own file.
        ("", "Train Epoch     #1: 100%|##| 2/2\rValidate Epoch  #1: 100%|##| 1/1\n", [1]),
        ("[0]<stderr>:Train Epoch     #2:  50%|#\n", "Train Epoch     #2: 100%|##|\n", [2]),
        ("Train Epoch #3\n", "Train Epoch     #1\n", [1, 3]),
        ("resumed, nothing to train\n", "", []),
    ],
)
def test_the_epochs_trained_are_read_from_rank_0s_output(tmp_path, stdout, stderr, epochs):
    (tmp_path / "rank.0").mkdir()
    (tmp_path / "rank.0" / "stdout").write_text(stdout)
    (tmp_path / "rank.0" / "stderr").write_text(stderr)
    assert lab.trained_epochs(tmp_path) == epochs


def test_no_output_means_no_epochs(tmp_path):
    assert lab.trained_epochs(tmp_path) == []


def tag_commit(repo, tag):
    return subprocess.run(["git", "-C", str(repo), "rev-parse", f"{tag}^{{commit}}"],
                          capture_output=True, text=True, check=True).stdout.strip()  # fmt: skip


def test_the_standin_made_again_tags_the_same_commit(tmp_path):
    # The role refuses a tag that moved since the last checkout: the lab's own repository, made again
    # on each call, must not look like one.
    lab.examples_repo(tmp_path, None, lab.IMAGENET_TAG)
    first = tag_commit(tmp_path / "src" / "standin-examples.git", lab.IMAGENET_TAG)
    time.sleep(1.1)  # git's dates have whole seconds: a commit dated now would differ only after one
    lab.examples_repo(tmp_path, None, lab.IMAGENET_TAG)
    assert tag_commit(tmp_path / "src" / "standin-examples.git", lab.IMAGENET_TAG) == first


def test_horovods_clone_and_the_standin_have_their_own_repository(tmp_path):
    # The same tag on two commits in one checkout is a moved tag to the role: switching between a clone
    # of Horovod's repository and the stand-in on one lab must use two repositories and two checkouts.
    source = tmp_path / "horovod"
    lab.run(["cp", "-r", str(lab.STANDIN), str(source)])
    (source / "README.md").write_text("another commit than the stand-in's\n")
    lab.git("-C", str(source), "init", "--quiet", "--initial-branch=master")
    lab.git("-C", str(source), "add", "-A")
    lab.git("-C", str(source), "commit", "--quiet", "--message", "a clone of Horovod's repository")
    lab.git("-C", str(source), "tag", lab.IMAGENET_TAG)
    artifacts = tmp_path / "artifacts"
    clone = lab.examples_repo(artifacts, source, lab.IMAGENET_TAG)
    standin = lab.examples_repo(artifacts, None, lab.IMAGENET_TAG)
    assert clone != standin
    assert lab.examples_source(source) != lab.examples_source(None)
    repos = {Path(clone).name, Path(standin).name}
    commits = {tag_commit(artifacts / "src" / name, lab.IMAGENET_TAG) for name in repos}
    assert len(commits) == 2
