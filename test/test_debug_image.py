# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""The debug image drawing (ROS-free): font, ellipses, tracked rotors, detections."""

from __future__ import annotations

import math
from types import SimpleNamespace

import numpy as np
import pytest

from helixtrack_ros import debug_image as di


def test_draw_text_and_unknown_glyph():
    img = np.zeros((20, 40), np.uint8)
    di.draw_text(img, '18', 1, 1, 255, scale=1)
    # '1' is 010/110/010/010/111 at x = 1..3
    assert img[1:6, 1:4].tolist() == [[0, 255, 0], [255, 255, 0], [0, 255, 0], [0, 255, 0],
                                      [255, 255, 255]]
    assert img[1:6, 5:8].sum() == 255 * 13          # '8' has 13 dots
    other = np.zeros_like(img)
    di.draw_text(other, '#', 1, 1, 255, scale=1)
    q = np.zeros_like(img)
    di.draw_text(q, '?', 1, 1, 255, scale=1)
    assert np.array_equal(other, q)
    di.draw_text(img, '888', 35, 17, 255, scale=3)  # clipped at the border, no error


def test_ellipse_points_follow_the_homography():
    H = np.array([[80.0, 0, 400], [0, 40.0, 300], [0, 0, 1]])
    pts = di.ellipse_points(H, n=64)
    assert pts.shape == (64, 2)
    u = (pts[:, 0] - 400) / 80
    v = (pts[:, 1] - 300) / 40
    assert np.allclose(u ** 2 + v ** 2, 1.0)
    # a point behind the camera is dropped
    Hp = np.array([[1.0, 0, 0], [0, 1, 0], [2.0, 0, 1]])
    assert len(di.ellipse_points(Hp, n=64)) < 64


@pytest.mark.parametrize('encoding', ['mono8', 'rgb8'])
def test_render_debug_image(encoding):
    rotor = SimpleNamespace(homography=np.array([[50.0, 0, 100], [0, 50, 80], [0, 0, 1]]),
                            rpm_shaft=6012.4, level=1)
    bad = SimpleNamespace(homography=np.full((3, 3), np.nan), rpm_shaft=math.nan, level=2)
    x = np.array([10, 20, 5000], np.uint16)
    y = np.array([10, 20, 10], np.uint16)
    p = np.array([1, 0, 1], np.uint8)
    img = di.render_debug_image(200, 160, [(x, y, p)], [rotor, bad], encoding)
    assert img.shape == ((160, 200, 3) if encoding == 'rgb8' else (160, 200))
    on, off, ring = img[10, 10], img[20, 20], img[80, 150]
    if encoding == 'rgb8':
        assert tuple(on) == (255, 255, 255) and tuple(off) == (0, 0, 0)
        assert tuple(ring) == di._LEVEL_RGB[1]
    else:
        assert on == 255 and off == 0 and ring == 255
    # the RPM label sits above the ellipse
    label = img[16:26, 60:140]
    assert (label != 128).any()


@pytest.mark.parametrize('encoding', ['mono8', 'rgb8'])
def test_render_debug_image_draws_detections_dashed_with_a_label(encoding):
    det = SimpleNamespace(center_px=(100.0, 70.0), radius_px=40.0, psi_rad=0.3,
                          perspective=(0.0, 0.0), blades=3, direction=-1, rpm_shaft=4200.0)
    img = di.render_debug_image(200, 160, [], [], encoding, [('rotor_0', det)])
    grey = (np.all(img == 128, axis=-1) if encoding == 'rgb8' else img == 128)
    ring = ~grey[70 - 45:70 + 45, 100 - 45:100 + 45]
    assert ring.any()
    # dashed: along the circle, drawn and empty stretches alternate
    ang = np.linspace(0, 2 * np.pi, 360, endpoint=False)
    rows = np.rint(70 + 40 * np.sin(ang)).astype(int)
    cols = np.rint(100 + 40 * np.cos(ang)).astype(int)
    on = ~grey[rows, cols]
    assert 0.3 < on.mean() < 0.9
    # the label sits below the ellipse
    assert (~grey[112:124, :]).any()
    if encoding == 'rgb8':
        assert (img == np.array(di._DETECTION_RGB, np.uint8)).all(axis=-1).any()
    H = di.detection_homography(det)
    assert np.allclose(H @ [0, 0, 1], [100, 70, 1])
