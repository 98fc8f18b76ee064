# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""The motion Kalman filter's kernels against the textbook filter its docstring states."""

import numpy as np
import pytest

from helixtrack_ros.core import motion_kf as mk
from helixtrack_ros.core.gn_layout import ACC_FAST, ACC_LEN
from helixtrack_ros.core.tracker_layout import (
    FS_KP,
    FS_LEN,
    FS_VX,
    FS_VY,
    TP_FGATE,
    TP_FINFO,
    TP_LEN,
    TP_MVMAX,
    TP_QACC,
)


def _spd(rng, n):
    a = rng.normal(size=(n, n))
    return a @ a.T + n * np.eye(n)


def _transition(dt, qa):
    F = np.block([[np.eye(2), dt * np.eye(2)], [np.zeros((2, 2)), np.eye(2)]])
    Q = qa * np.block([[dt ** 3 / 3 * np.eye(2), dt ** 2 / 2 * np.eye(2)],
                       [dt ** 2 / 2 * np.eye(2), dt * np.eye(2)]])
    return F, Q


@pytest.mark.parametrize('seed', [0, 1, 2])
def test_predict_is_f_p_ft_plus_white_acceleration_noise(seed):
    rng = np.random.default_rng(seed)
    P = _spd(rng, 4)
    dt, qa = 1e-3 * (1 + seed), 50.0
    F, Q = _transition(dt, qa)
    out = P.copy()
    mk._kf_predict(out, dt, qa)
    np.testing.assert_allclose(out, F @ P @ F.T + Q, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize('seed', [0, 1, 2])
def test_step_is_the_kalman_filter_of_a_position_measurement(seed):
    rng = np.random.default_rng(seed)
    P = _spd(rng, 4)
    A = _spd(rng, 2)
    g = rng.normal(size=2)
    s_px, dt_us, info = 40.0, 1000, 0.5
    tp = np.zeros(TP_LEN)
    tp[TP_QACC] = 0.01
    tp[TP_FINFO] = info
    tp[TP_FGATE] = 0.0
    tp[TP_MVMAX] = 1e9
    fs = np.zeros(FS_LEN)
    fs[FS_KP:FS_KP + 16] = P.ravel()
    acc = np.zeros(ACC_LEN)
    d = mk._kf_step(acc, tp, fs, A[0, 0], A[0, 1], A[1, 1], g[0], g[1], True, 1e9, s_px,
                    dt_us)
    # predict, then the system (M, g) = info (A, g) measures the position p - M^-1 g
    # with covariance M^-1
    F, Q = _transition(dt_us * 1e-6, tp[TP_QACC] * s_px * s_px)
    Pp = F @ P @ F.T + Q
    M = info * A
    H = np.hstack([np.eye(2), np.zeros((2, 2))])
    K = Pp @ H.T @ np.linalg.inv(H @ Pp @ H.T + np.linalg.inv(M))
    dx = K @ (-np.linalg.solve(M, info * g))
    np.testing.assert_allclose(d, dx[:2], rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose([fs[FS_VX], fs[FS_VY]], dx[2:] * 1e-6, rtol=1e-9, atol=1e-18)
    want_P = (np.eye(4) - K @ H) @ Pp
    np.testing.assert_allclose(fs[FS_KP:FS_KP + 16].reshape(4, 4), 0.5 * (want_P + want_P.T),
                               rtol=1e-9, atol=1e-9)
    assert np.all(acc[ACC_FAST:ACC_FAST + 6] == 0.0)


@pytest.mark.parametrize('seed', [0, 1])
def test_innovation_distance(seed):
    rng = np.random.default_rng(seed)
    P = _spd(rng, 4)
    M = _spd(rng, 2)
    g = rng.normal(size=2)
    # nu^T S^-1 nu, nu = -M^-1 g, S = P_pp + M^-1
    nu = -np.linalg.solve(M, g)
    want = nu @ np.linalg.solve(P[:2, :2] + np.linalg.inv(M), nu)
    assert mk._innovation_d2(P, M[0, 0], M[0, 1], M[1, 1], g[0], g[1]) == pytest.approx(
        want, rel=1e-10)


def test_gate_scales_the_information_beyond_the_gate_only():
    m = (2.0, 0.5, 1.0, 3.0, -1.0)
    assert mk._gate_scale(*m, 4.0, 9.0) == m
    assert mk._gate_scale(*m, 18.0, 0.0) == m
    np.testing.assert_allclose(mk._gate_scale(*m, 18.0, 9.0), np.array(m) * 0.5)


def test_without_enough_weight_only_predicts():
    P = np.diag([1.0, 1.0, 4.0, 4.0])
    tp = np.zeros(TP_LEN)
    tp[TP_MVMAX] = 1e9
    fs = np.zeros(FS_LEN)
    fs[FS_KP:FS_KP + 16] = P.ravel()
    d = mk._kf_step(np.zeros(ACC_LEN), tp, fs, 1.0, 0.0, 1.0, 1.0, 1.0, False, 1e9, 10.0, 0)
    assert d == (0.0, 0.0)
    np.testing.assert_array_equal(fs[FS_KP:FS_KP + 16], P.ravel())
