# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""The motion Kalman filter's kernels against the textbook filter its docstring states."""

import numpy as np
import pytest

from helixtrack_ros.core import motion_kf as mk


def _spd(rng, n):
    a = rng.normal(size=(n, n))
    return a @ a.T + n * np.eye(n)


@pytest.mark.parametrize('seed', [0, 1, 2])
def test_predict_is_f_p_ft_plus_white_acceleration_noise(seed):
    rng = np.random.default_rng(seed)
    P = _spd(rng, 4)
    dt, qa = 1e-3 * (1 + seed), 50.0
    F = np.block([[np.eye(2), dt * np.eye(2)], [np.zeros((2, 2)), np.eye(2)]])
    Q = qa * np.block([[dt ** 3 / 3 * np.eye(2), dt ** 2 / 2 * np.eye(2)],
                       [dt ** 2 / 2 * np.eye(2), dt * np.eye(2)]])
    out = P.copy()
    mk._kf_predict(out, dt, qa)
    np.testing.assert_allclose(out, F @ P @ F.T + Q, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize('seed', [0, 1, 2])
def test_update_is_the_kalman_update_of_a_position_measurement(seed):
    rng = np.random.default_rng(seed)
    P = _spd(rng, 4)
    M = _spd(rng, 2)
    g = rng.normal(size=2)
    # the system (M, g) measures the position p - M^-1 g with covariance M^-1
    H = np.hstack([np.eye(2), np.zeros((2, 2))])
    K = P @ H.T @ np.linalg.inv(H @ P @ H.T + np.linalg.inv(M))
    want_dx = K @ (-np.linalg.solve(M, g))
    want_P = (np.eye(4) - K @ H) @ P
    out = P.copy()
    d = mk._kf_update(out, M[0, 0], M[0, 1], M[1, 1], g[0], g[1])
    np.testing.assert_allclose(d, want_dx, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(out, want_P, rtol=1e-10, atol=1e-12)
    # innovation distance nu^T S^-1 nu, nu = -M^-1 g, S = P_pp + M^-1
    nu = -np.linalg.solve(M, g)
    want_d2 = nu @ np.linalg.solve(P[:2, :2] + np.linalg.inv(M), nu)
    assert mk._innovation_d2(P, M[0, 0], M[0, 1], M[1, 1], g[0], g[1]) == pytest.approx(
        want_d2, rel=1e-10)


def test_gate_scales_the_information_beyond_the_gate_only():
    m = (2.0, 0.5, 1.0, 3.0, -1.0)
    assert mk._gate_scale(*m, 4.0, 9.0) == m
    assert mk._gate_scale(*m, 18.0, 0.0) == m
    np.testing.assert_allclose(mk._gate_scale(*m, 18.0, 9.0), np.array(m) * 0.5)


def test_singular_update_changes_nothing():
    P = np.diag([1.0, 1.0, 4.0, 4.0])
    # I + M P_pp singular: M = -P_pp^-1
    out = P.copy()
    assert mk._kf_update(out, -1.0, 0.0, -1.0, 1.0, 1.0) == (0.0, 0.0, 0.0, 0.0)
    np.testing.assert_array_equal(out, P)
