# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""Rotation sign, signed azimuth and phase residual (Sec. 3.2, Eq. 3)."""

import math

import numpy as np
import pytest
from reference import naive_sign as ns

from helixtrack_ros.core import rotation_sign as rs


def _window(direction, blades=2, rpm=9000.0, n=3000, turns=0.6, seed=0, noise=0.2):
    rng = np.random.default_rng(seed)
    omega = rpm * 2 * math.pi / 60.0
    t = np.sort(rng.uniform(0, turns * 60.0 / rpm, n))
    edge = rng.choice([-0.1, 0.1], n)
    k = rng.integers(0, blades, n)
    a = direction * (0.7 + omega * t) + 2 * math.pi * k / blades + edge
    a = a + rng.normal(0, 0.02, n)
    m = rng.random(n) < noise
    a[m] = rng.uniform(-math.pi, math.pi, m.sum())
    a = np.mod(a + math.pi, 2 * math.pi) - math.pi
    return t - t[-1], a, omega * blades, blades * (0.7 + omega * t[-1])


@pytest.mark.parametrize('direction', [1, -1])
def test_estimate_sign_finds_direction_phase_and_rate(direction):
    t, a, omega_b, phi_end = _window(direction)
    zeta, phi, omega, s_pos, s_neg = rs.estimate_sign(t, a, 2, omega_b * 1.1)
    assert zeta == direction
    assert abs(math.remainder(phi - phi_end, 2 * math.pi)) < 0.05
    assert omega == pytest.approx(omega_b, rel=0.01)
    assert (s_pos > s_neg) == (direction > 0)
    ref = ns.acquire(t, a, 2, 0, omega_b * 1.1, 0.3, 0.02, float(t.max() - t.min()))
    assert ref[0] == zeta
    np.testing.assert_allclose([phi, omega, s_pos, s_neg], ref[1:], rtol=1e-7, atol=1e-9)


def test_known_direction_is_kept_and_tie_gives_plus_one():
    t, a, omega_b, _ = _window(-1)
    assert rs.estimate_sign(t, a, 2, omega_b, direction=1)[0] == 1
    rng = np.random.default_rng(3)
    t = np.linspace(-1e-3, 0, 2000)
    a = rng.uniform(-math.pi, math.pi, 2000)
    assert rs.estimate_sign(t, a, 2, 1000.0, margin=10.0)[0] == 1


def test_signed_azimuth_and_residual():
    u = np.array([[0.0, 1.0], [1.0, 0.0], [-1.0, 1e-9]])
    np.testing.assert_allclose(rs.signed_azimuth(u, 1), [math.pi / 2, 0.0, math.pi])
    np.testing.assert_allclose(rs.signed_azimuth(u, -1)[:2], [-math.pi / 2, 0.0])
    eps = rs.phase_residual(np.array([0.0, 3.0]), 2, np.array([math.pi / 2, -3.0]))
    np.testing.assert_allclose(eps, [-math.pi, math.remainder(9.0, 2 * math.pi)])
    assert np.all(eps >= -math.pi) and np.all(eps < math.pi)
    with pytest.raises(ValueError):
        rs.signed_azimuth(u, 0)
    with pytest.raises(ValueError):
        rs.estimate_sign(np.zeros(3), np.zeros(4), 2, 100.0)
