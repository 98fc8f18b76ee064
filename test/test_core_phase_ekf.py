# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""Phase EKF (Sec. 3.3-3.4) against its numpy twin; Q_d against Van Loan and integration."""

import math

import numpy as np
import pytest
from reference import naive_ekf as ne

from helixtrack_ros.core import phase_ekf as pe
from helixtrack_ros.core.fastmath import _softplus_sigmoid, atan2_poly, cos_poly, exp_neg


@pytest.mark.parametrize('dt', [1e-6, 3.7e-4, 0.01, 0.25])
def test_process_noise_matches_van_loan_and_integration(dt):
    q = 400.0
    Q = pe.process_noise(dt, q)
    np.testing.assert_allclose(Q, ne.qd_van_loan(dt, q), rtol=1e-10, atol=0)
    np.testing.assert_allclose(Q, ne.qd_integrate(dt, q, steps=2000), rtol=1e-6, atol=0)
    np.testing.assert_allclose(pe.transition(dt), ne.transition(dt), rtol=1e-14)


def test_predict_update_match_naive_twin():
    rng = np.random.default_rng(4)
    ekf = pe.PhaseEKF([0.3, 2000.0, 5.0], [1.0, 100.0, 1e4], q_jerk=400.0)
    x = ekf.x.copy()
    P = ekf.P.copy()
    for _ in range(300):
        dt = rng.choice([0.0, 1e-6, rng.uniform(0, 2e-3)])
        ekf.predict(dt)
        x, P = ne.predict(x, P, dt, 400.0)
        eps = float(rng.uniform(-math.pi, math.pi))
        r = float(rng.uniform(0.2, 1.5))
        R = ekf.update(eps, r)
        R_naive = ekf.sigma0_rad2 / max(ne.gate(eps, r, 22.0, 0.15), 1e-3)
        assert R == pytest.approx(R_naive, rel=1e-7)
        x, P = ne.update(x, P, eps, R_naive)
        np.testing.assert_allclose(ekf.x, x, rtol=1e-7, atol=1e-7)
        np.testing.assert_allclose(ekf.P, P, rtol=1e-7, atol=1e-12)


def test_lazy_predict_equals_stepwise_predict():
    ekf1 = pe.PhaseEKF([0.0, 1000.0, 0.0], [1.0, 100.0, 1e4])
    ekf2 = pe.PhaseEKF([0.0, 1000.0, 0.0], [1.0, 100.0, 1e4])
    for _ in range(50):
        ekf1.predict(1e-5)
    ekf2.predict(5e-4)
    np.testing.assert_allclose(ekf1.x, ekf2.x, rtol=1e-12)
    np.testing.assert_allclose(ekf1.P, ekf2.P, rtol=1e-9)


def test_update_pulls_phase_against_residual_sign():
    ekf = pe.PhaseEKF([1.0, 0.0, 0.0], [1.0, 1.0, 1.0])
    ekf.update(0.1, 1.0)  # eps = phi_eff - B theta > 0: phi was ahead, decreases
    assert ekf.x[0] < 1.0
    with pytest.raises(ValueError):
        pe.gate_weight(4.0, 1.0, 22.0, 0.15)


def test_polynomials_accuracy():
    rng = np.random.default_rng(0)
    y = rng.normal(size=100_000)
    x = rng.normal(size=100_000)
    assert np.abs(atan2_poly(y, x) - np.arctan2(y, x)).max() < 5e-8
    special = np.array([0.0, 1.0, -1.0, 0.0, 1e-300])
    xs = np.array([1.0, 0.0, 0.0, -1.0, -1.0])
    np.testing.assert_allclose(atan2_poly(special, xs), np.arctan2(special, xs), atol=5e-8)
    e = rng.uniform(-math.pi, math.pi, 100_000)
    assert np.abs(cos_poly(e) - np.cos(e)).max() < 1e-9


def test_folded_update_equals_sequential_updates():
    rng = np.random.default_rng(9)
    x0 = np.array([1.0, 2000.0, 3.0])
    P0 = np.array([[0.01, 0.5, 2.0], [0.5, 100.0, 30.0], [2.0, 30.0, 1e4]])
    eps = rng.uniform(-0.5, 0.5, 40)
    w = rng.uniform(1e-3, 1.0, 40)
    s0 = 1.0 / 22.0
    x, P = x0.copy(), P0.copy()
    for e, wi in zip(eps, w):
        # residual of each event at the current phase = its residual at the predicted phase
        # plus the phase change so far
        x, P = ne.update(x, P, e + (x[0] - x0[0]), s0 / wi)
    r = pe._update_fold_s(*x0, P0[0, 0], P0[0, 1], P0[0, 2], P0[1, 1], P0[1, 2], P0[2, 2],
                          w.sum(), (w * eps).sum(), s0)
    np.testing.assert_allclose(r[:3], x, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(r[3:], P[[0, 0, 0, 1, 1, 2], [0, 1, 2, 1, 2, 2]], rtol=1e-9,
                               atol=1e-12)


def test_fast_exp_and_softplus():
    x = -np.random.default_rng(1).uniform(0, 42.9, 100_000)
    assert np.abs(exp_neg(x) / np.exp(x) - 1).max() < 5e-9
    assert exp_neg(np.array([-100.0]))[0] == 0.0
    tau = 0.05
    for s in (-2.0, -0.3, -1e-3, 0.0, 0.02, 1.5):
        sp, sg = _softplus_sigmoid(s, tau)
        assert sp == pytest.approx(tau * np.logaddexp(0.0, s / tau), rel=1e-8, abs=1e-300)
        assert sg == pytest.approx(1.0 / (1.0 + math.exp(-s / tau)), rel=1e-8)
