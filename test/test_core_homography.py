# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""Homography H(q), closed-form inverse, back-warp and analytic du/dq (Sec. 3.1)."""

import math

from hypothesis import given, settings
from hypothesis import strategies as st
import numpy as np
import pytest
from reference import naive_homography as nh

from helixtrack_ros.core import homography as h


def _random_q(rng):
    return np.array([math.log(rng.uniform(20, 200)), rng.uniform(-3, 3), rng.uniform(100, 1200),
                     rng.uniform(50, 700), rng.uniform(-2e-3, 2e-3), rng.uniform(-2e-3, 2e-3)])


def test_homography_and_inverse_match_naive():
    rng = np.random.default_rng(1)
    for _ in range(20):
        q = _random_q(rng)
        np.testing.assert_allclose(h.homography(q), nh.homography(q), rtol=1e-14)
        np.testing.assert_allclose(h.homography_inverse(q), np.linalg.inv(nh.homography(q)),
                                   rtol=1e-9, atol=1e-15)


def test_backwarp_matches_naive_and_inverts_forward():
    rng = np.random.default_rng(2)
    q = _random_q(rng)
    x = rng.uniform(0, 1280, 500)
    y = rng.uniform(0, 720, 500)
    u = h.backwarp(q, x, y)
    np.testing.assert_allclose(u, nh.backwarp(q, x, y), rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(h.forward(q, u), np.c_[x, y], atol=1e-8)


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 2 ** 31))
def test_jacobian_matches_finite_differences(seed):
    rng = np.random.default_rng(seed)
    q = _random_q(rng)
    s = math.exp(q[0])
    ang = rng.uniform(-np.pi, np.pi, 30)
    rad = rng.uniform(0.2, 1.5, 30) * s
    x = q[2] + rad * np.cos(ang)
    y = q[3] + rad * np.sin(ang)
    u, J = h.backwarp_jacobian(q, x, y)
    Jn = np.empty_like(J)
    for k in range(6):
        d = 1e-6 * max(1.0, abs(q[k])) if k < 4 else 1e-8
        qp, qm = q.copy(), q.copy()
        qp[k] += d
        qm[k] -= d
        Jn[:, :, k] = (h.backwarp(qp, x, y) - h.backwarp(qm, x, y)) / (2 * d)
    rel = np.abs(J - Jn).max() / np.abs(Jn).max()
    assert rel < 1e-5
    _, Jnaive = nh.backwarp_jacobian(q, x, y)
    np.testing.assert_allclose(J, Jnaive, rtol=1e-7, atol=1e-9 * np.abs(J).max())


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 2 ** 31), st.floats(-3.0, 3.0))
def test_image_x_angle_points_to_image_x_and_follows_the_plane_frame(seed, delta):
    """beta is the plane direction the camera sees as image +x at the centre (finite
    difference of the forward map), and rotating the plane frame by delta (psi + delta,
    (p31, p32) R(delta)) moves it by -delta: the published phase's zero is a gauge-free one."""
    rng = np.random.default_rng(seed)
    q = _random_q(rng)
    beta = h._image_x_angle(q)
    eps = 1e-6
    z = h.forward(q, np.array([[0.0, 0.0], [eps * math.cos(beta), eps * math.sin(beta)]]))
    d = z[1] - z[0]
    assert abs(math.atan2(d[1], d[0])) < 1e-6
    c, s_ = math.cos(delta), math.sin(delta)
    q2 = q.copy()
    q2[1] += delta
    q2[4], q2[5] = q[4] * c + q[5] * s_, -q[4] * s_ + q[5] * c
    assert math.remainder(h._image_x_angle(q2) - (beta - delta), 2 * math.pi) == \
        pytest.approx(0.0, abs=1e-9)


def test_parameterisation_round_trip_and_validation():
    qp = np.array([80.0, 0.3, 400.0, 300.0, 1e-3, -2e-3])
    qc = h.q_core_from_paper(qp)
    assert qc[0] == pytest.approx(math.log(80.0))
    np.testing.assert_allclose(h.q_paper_from_core(qc), qp)
    with pytest.raises(ValueError, match='scale'):
        h.q_core_from_paper(np.array([-1.0, 0, 0, 0, 0, 0]))
    with pytest.raises(ValueError, match='shape'):
        h.homography(np.zeros(5))
    with pytest.raises(ValueError):
        h.backwarp(qc, np.zeros(3), np.zeros(4))
