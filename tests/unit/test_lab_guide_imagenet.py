# Copyright: multinode.horovod contributors
# SPDX-License-Identifier: GPL-3.0-or-later
"""The parts of tools/lab.py's guide-imagenet test that need no lab: the ImageFolder it writes and how it
reads the epochs rank 0 trained."""

from __future__ import annotations

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
