# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""Gauss-Newton pose refinement (Sec. 3.5, S1): Jacobians, normal equations, descent."""

import math

import numpy as np
import pytest
from reference import naive_gn as ng
from reference.synthetic_rotor import make_rotor_events

from helixtrack_ros.core import pose_gn as pg
from helixtrack_ros.core.params import TrackerParams

B = 2


@pytest.fixture(scope='module')
def batch():
    ev, truth = make_rotor_events(0.0065, 9000.0, radius_px=60.0, center_px=(200.0, 150.0),
                                  noise_frac=0.03, seed=5)
    phi = B * truth.shaft_angle(ev.t_us)
    return ev, phi


def _q_true():
    return np.array([math.log(60.0), 0.0, 200.0, 150.0, 0.0, 0.0])


@pytest.mark.parametrize('zeta', [1, -1])
def test_every_residual_jacobian_matches_finite_differences(zeta):
    rng = np.random.default_rng(7)
    n = 200
    q = np.array([math.log(70.0), 0.4, 300.0, 200.0, 8e-4, -5e-4])
    ang = rng.uniform(-np.pi, np.pi, n)
    rad = rng.uniform(0.1, 1.6, n) * 70.0
    x = 300.0 + rad * np.cos(ang)
    y = 200.0 + rad * np.sin(ang)
    p = rng.integers(0, 2, n).astype(np.uint8)
    phi = rng.uniform(-3, 3, n)
    gp = pg.pack_gn_params(TrackerParams(), B, zeta)

    def res(qq):
        return pg.event_terms(qq, x, y, p, phi - zeta * B * qq[1], gp)[0][:, :5]

    r0, jac = pg.event_terms(q, x, y, p, phi - zeta * B * q[1], gp)
    num = np.empty_like(jac)
    for k in range(6):
        d = 1e-6 * max(1.0, abs(q[k])) if k < 4 else 1e-8
        qp, qm = q.copy(), q.copy()
        qp[k] += d
        qm[k] -= d
        diff = res(qp) - res(qm)
        diff[:, 0] = np.mod(diff[:, 0] + np.pi, 2 * np.pi) - np.pi
        num[:, :, k] = diff / (2 * d)
    # skip the few events whose wrapped residuals jump inside the stencil
    ok = (np.abs(r0[:, 0]) < 3.0) & (np.abs(np.mod(r0[:, 0] - np.where(p, 0.25, -0.25)
                                                   + np.pi, 2 * np.pi) - np.pi) < 3.0)
    for term in range(5):
        scale = np.abs(num[ok, term]).max() + 1e-12
        assert np.abs(jac[ok, term] - num[ok, term]).max() / scale < 1e-5, term
    # phase invariance to in-plane rotation (Sec. 3.2) without perspective
    q0 = q.copy()
    q0[4:] = 0.0
    _, jac0 = pg.event_terms(q0, x, y, p, phi - zeta * B * q0[1], gp)
    assert np.abs(jac0[:, 0, 1]).max() < 1e-9 and np.abs(jac0[:, 1, 1]).max() < 1e-9


def test_bto_occupancy_gradient_matches_finite_differences(batch):
    ev, _ = batch
    gp = pg.pack_gn_params(TrackerParams(), B, 1)
    q = _q_true() + np.array([0.02, 0.0, 1.0, -0.5, 1e-4, 0.0])
    p_in, p_out, dp_in, dp_out = pg.bto_occupancy(q, ev.x, ev.y, gp)
    assert 0.0 < p_out < p_in < 1.0
    for k in range(6):
        d = 1e-6 * max(1.0, abs(q[k])) if k < 4 else 1e-8
        qp, qm = q.copy(), q.copy()
        qp[k] += d
        qm[k] -= d
        a = pg.bto_occupancy(qp, ev.x, ev.y, gp)
        b = pg.bto_occupancy(qm, ev.x, ev.y, gp)
        assert (a[0] - b[0]) / (2 * d) == pytest.approx(dp_in[k], rel=1e-4, abs=1e-6)
        assert (a[1] - b[1]) / (2 * d) == pytest.approx(dp_out[k], rel=1e-4, abs=1e-6)


def assert_system_matches_naive_twin(ev, phi: np.ndarray, tp: TrackerParams) -> None:
    """Normal equations and objective of the kernel equal the numpy twin's near the truth."""
    gp = pg.pack_gn_params(tp, B, 1)
    q = _q_true() + np.array([0.03, 0.1, 2.0, -1.0, 2e-4, -1e-4])
    sl = slice(0, 20000)
    args = (ev.x[sl], ev.y[sl], ev.p[sl], phi[sl] - B * q[1])
    A, g, _ = pg.normal_equations(q, *args, gp)
    A2, g2, loss2 = ng.system(q, args[0].astype(float), args[1].astype(float), *args[2:],
                              ng.params_dict(tp, B, 1))
    np.testing.assert_allclose(A, A2, rtol=1e-9, atol=1e-9 * np.abs(A2).max())
    np.testing.assert_allclose(g, g2, rtol=1e-9, atol=1e-9 * np.abs(g2).max())
    assert pg.objective(q, *args, gp) == pytest.approx(loss2, rel=1e-9)


def test_normal_equations_match_naive_twin(batch):
    ev, phi = batch
    assert_system_matches_naive_twin(ev, phi, TrackerParams())


#: the BTO's switches (#13): ours, the paper's ratio / penalty / weight, all three
BTO_FORMS = [dict(bto_ratio=1, bto_hinge=1, bto_weight_n=1),
             dict(bto_ratio=0, bto_hinge=1, bto_weight_n=1),
             dict(bto_ratio=1, bto_hinge=0, bto_weight_n=1),
             dict(bto_ratio=0, bto_hinge=0, bto_weight_n=0)]


@pytest.mark.parametrize('form', BTO_FORMS)
def test_bto_forms_match_naive_twin(batch, form):
    """Sec. 3.5 / S1's ratio C_band / (C_core + eps), softplus penalty with A += phi'' J J^T
    and once-per-batch weights against the numpy twin (both bounds of both bands on)."""
    ev, phi = batch
    tp = TrackerParams(bto_sectors=1, bto_p_in_min=0.7, bto_p_in_max=1.2, bto_p_out_min=0.05,
                       bto_p_out_max=0.1, lambda_reg=50.0, **form)
    assert_system_matches_naive_twin(ev, phi, tp)


@pytest.mark.parametrize('form', BTO_FORMS)
def test_bto_gradient_matches_finite_differences(batch, form):
    """The BTO term alone (data weights 0): g is the derivative of its value l_BTO(q)."""
    ev, phi = batch
    tp = TrackerParams(lambda_phi=0.0, lambda_r=0.0, lambda_pol=0.0, lambda_band=0.0,
                       lambda_reg=0.0, bto_sectors=1, bto_min_px=0.0, bto_p_in_min=0.7,
                       bto_p_in_max=1.2, bto_p_out_min=0.05, bto_p_out_max=0.1, **form)
    gp = pg.pack_gn_params(tp, B, 1)
    q = _q_true() + np.array([0.03, 0.0, 1.0, -0.5, 1e-4, 0.0])
    args = (ev.x, ev.y, ev.p, phi - B * q[1])
    _, g, _ = pg.normal_equations(q, *args, gp)
    assert pg.objective(q, *args, gp) > 0.0 and np.abs(g).max() > 0.0
    for k in range(6):
        d = 1e-6 * max(1.0, abs(q[k])) if k < 4 else 1e-8
        qp, qm = q.copy(), q.copy()
        qp[k] += d
        qm[k] -= d
        num = (pg.objective(qp, *args, gp) - pg.objective(qm, *args, gp)) / (2 * d)
        assert num == pytest.approx(g[k], rel=1e-4, abs=1e-6 * np.abs(g).max()), k


@pytest.mark.parametrize('switches', [dict(gn_log_scale=0), dict(gn_psi_stiff=0),
                                      dict(gn_log_scale=0, gn_psi_stiff=0)])
def test_gn_step_in_s_and_without_psi_stiffness_matches_naive_twin(batch, switches):
    """Eq. 1's parameter s (not log s) and plain damped GN (no psi stiffness)."""
    ev, phi = batch
    tp = TrackerParams(gn_max_step=10.0, gamma_scale=0.8, **switches)
    q0 = _q_true() + np.array([0.05, 0.02, 1.5, -1.0, 1e-4, -1e-4])
    args = (ev.x, ev.y, ev.p)
    A, g, _ = pg.normal_equations(q0, *args, phi - B * q0[1], pg.pack_gn_params(tp, B, 1))
    gn = pg.PoseGN(q0, tp, B, 1)
    gn.accumulate(*args, phi)
    assert gn.solve()
    q_ref = ng.gn_step(q0, A, g, ng.params_dict(tp, B, 1))
    np.testing.assert_allclose(gn.q, q_ref, rtol=1e-9, atol=1e-12)
    q_ours = ng.gn_step(q0, A, g, ng.params_dict(TrackerParams(gamma_scale=0.8), B, 1))
    assert not np.allclose(gn.q, q_ours, rtol=1e-6, atol=0.0)


@pytest.mark.parametrize('dq', [[0.06, 0, 0, 0, 0, 0], [-0.06, 0, 0, 0, 0, 0],
                                [0, 0, 4.0, -3.0, 0, 0], [0, 0, 0, 0, 5e-3, 0],
                                [0, 0, 0, 0, 0, -5e-3]])
def test_one_gn_step_lowers_the_objective(batch, dq):
    ev, phi = batch
    # a plain damped GN step: unit gains, no forgetting
    tp = TrackerParams(gamma_t=1.0, gamma_persp=1.0, gn_forget=0.0)
    gp = pg.pack_gn_params(tp, B, 1)
    q0 = _q_true() + np.array(dq)
    args = (ev.x, ev.y, ev.p)
    before = pg.objective(q0, *args, phi - B * q0[1], gp)
    gn = pg.PoseGN(q0, tp, B, 1)
    gn.accumulate(*args, phi)
    assert gn.solve()
    after = pg.objective(gn.q, *args, phi - B * gn.q[1], gp)
    assert after < before


@pytest.mark.parametrize('dq', [[math.log(1.1), 0, 0, 0, 0, 0], [math.log(0.9), 0, 0, 0, 0, 0],
                                [0, 0, 5.4, -2.7, 0, 0]])
def test_repeated_solves_recover_scale_and_centre(batch, dq):
    ev, phi = batch
    q0 = _q_true() + np.array(dq)
    gn = pg.PoseGN(q0, TrackerParams(), B, 1)
    for _ in range(25):
        gn.accumulate(ev.x, ev.y, ev.p, phi)
        gn.solve()
    assert math.exp(gn.q[0]) == pytest.approx(60.0, rel=0.02)
    assert math.hypot(gn.q[2] - 200.0, gn.q[3] - 150.0) < 1.0
