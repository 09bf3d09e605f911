# Copyright: multinode.horovod contributors
# SPDX-License-Identifier: GPL-3.0-or-later
"""The parts of tools/lab.py's TensorBoard test that need no lab: the training code it runs, how it finds
the tunnel the playbook prints, and how it judges the screenshot."""

from __future__ import annotations

import ast

import numpy as np
import pytest
from checkout import load

matplotlib_image = pytest.importorskip("matplotlib.image")
lab = load("tools/lab.py", "lab_tensorboard")


def test_the_training_writes_its_scalars_where_the_run_writes():
    tree = ast.parse(lab.TB_CODE)
    assert tree.body
    assert "SummaryWriter(out)" in lab.TB_CODE and "os.environ['HOROVOD_LAUNCH_OUTPUT_DIR']" in lab.TB_CODE
    assert f"writer.add_scalar({lab.TB_TAG!r}, losses[-1], step)" in lab.TB_CODE
    assert f"range({lab.TB_STEPS})" in lab.TB_CODE


@pytest.mark.parametrize(
    ("out", "tunnel"),
    [
        (
            "ok: [lab-master] =>\n  msg:\n"
            "  - 'From the controller: ssh -N -L 16006:127.0.0.1:16006 root@10.213.9.11'\n",
            "ssh -N -L 16006:127.0.0.1:16006 root@10.213.9.11",
        ),
        (
            '  - "From the controller: ssh -N -L 6006:127.0.0.1:6006 -p 2222 a"\n',
            "ssh -N -L 6006:127.0.0.1:6006 -p 2222 a",
        ),
        ("  - Check mode: TensorBoard would be started\n", None),
    ],
)
def test_the_tunnel_is_read_from_the_playbooks_output(out, tunnel):
    assert lab.printed_tunnel(out) == tunnel


def page(curve_rgb=None, top=300, height=120):
    """A 1400x900 stand-in screenshot: light grey, the orange bar on top, and a curve of `curve_rgb` falling
    from `top` + `height` to `top`."""
    image = np.full((900, 1400, 3), 0.96)
    image[:64] = np.array([245, 124, 0]) / 255
    if curve_rgb is not None:
        for x in range(450, 710):
            y = top + int(height * 2 ** (-(x - 450) / 40))
            image[y : y + 2, x] = np.array(curve_rgb) / 255
    return image


@pytest.mark.parametrize(
    ("image", "seen"),
    [
        (page(lab.TB_CURVE_RGB), True),
        (page(), False),  # the chart drawn without its curve (as WebGL fails in a headless browser)
        (page((66, 80, 102)), False),  # a curve of another colour
        (page(lab.TB_CURVE_RGB, top=10, height=40), False),  # only in the bar
    ],
)
def test_the_screenshot_shows_the_runs_curve_only_when_it_is_drawn(tmp_path, image, seen):
    png = tmp_path / "shot.png"
    matplotlib_image.imsave(png, np.clip(image, 0, 1))
    assert (lab.curve_pixels(png) >= lab.TB_CURVE_PIXELS) is seen
