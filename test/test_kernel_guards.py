# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""No kernel can raise (issue #11): r_in = 0 with events at the rotor centre, events on
the horizon of the rotor plane, and every guarded division against a naive twin.

Before the guards each of these raised ZeroDivisionError inside a numba kernel (the
tracker's state half written): 1 / r of the phase / radial Jacobian for an event at
the centre, 1 / w of the back-warp and the forward map on the horizon, the fast
step's 2 x 2 solve, the acquisition centroid, the health window's perspective
drift and the detector's knot interpolation.
"""

import math

import numpy as np
import pytest
from reference.synthetic_rotor import make_rotor_events

from helixtrack_ros.core import homography as hg
from helixtrack_ros.core import pose_gn as pg
from helixtrack_ros.core.detection import _compensate
from helixtrack_ros.core.events import EventArrays
from helixtrack_ros.core.params import RotorInit, TrackerParams
from helixtrack_ros.core.tracker import FS_AC, HelixTracker, _centroid_step, _fast_step

# tip radius 32 px: exp(log 32) == 32 in double precision, so with psi = 0 and an
# integer centre the back-warp of the centre pixel is exactly u = 0
CX, CY, RAD = 320, 240, 32.0


def _merge(ev: EventArrays, t, x, y, p) -> EventArrays:
    """ev plus extra events, stably time-sorted (the extra ones after equal times)."""
    tt = np.concatenate([ev.t_us, np.asarray(t, np.int64)])
    o = np.argsort(tt, kind='stable')
    return EventArrays(tt[o], np.concatenate([ev.x, np.asarray(x, np.uint16)])[o],
                       np.concatenate([ev.y, np.asarray(y, np.uint16)])[o],
                       np.concatenate([ev.p, np.asarray(p, np.uint8)])[o])


def _assert_finite_state(tr: HelixTracker) -> None:
    for name in ('fs', 'q', 'pose', 'acc', 'gp', 'tp'):
        arr = getattr(tr, name)
        assert np.all(np.isfinite(arr)), name
    st = tr.state
    assert math.isfinite(st.rpm_shaft) and math.isfinite(st.phase_rad)
    assert np.all(np.isfinite(st.homography))


def _mare(s, truth, t0_us, skip_us=100_000) -> float:
    m = s.t_us - t0_us >= skip_us
    gt = truth.rpm_shaft(s.t_us[m])
    return float(np.mean(np.abs(s.rpm_shaft[m] - gt) / gt) * 100.0)


@pytest.fixture(scope='module')
def rotor():
    return make_rotor_events(0.4, 10_000.0, radius_px=RAD, center_px=(CX, CY), seed=11)


def test_r_in_zero_is_accepted():
    assert TrackerParams(r_in=0.0).r_in == 0.0
    assert TrackerParams.from_dict({'r_in': 0}).r_in == 0.0


@pytest.mark.parametrize('extra', [{'pose_fast_rpm': 0.0}, {}], ids=['no_fast_step', 'default'])
def test_r_in_zero_with_events_at_the_centre(rotor, extra):
    """r_in = 0 (paper S3 grid) and an event at the centre pixel every 50 us.

    Without the fast step (pose_fast_rpm 0): the centre stays on its integer pixel until
    the first pose solve, so the centre events back-warp to u = 0 exactly (before
    the guards: ZeroDivisionError in pose_gn._event_jac_s, 1 / r).
    """
    ev, truth = rotor
    prm = TrackerParams(r_in=0.0, **extra)
    init = RotorInit('a', (float(CX), float(CY)), RAD, 10_000.0, 2, 0)
    assert hg.pack_pose(np.array([math.log(RAD), 0.0, CX, CY, 0.0, 0.0]))[0] == RAD
    tc = np.arange(ev.t_us[0], ev.t_us[-1], 50, dtype=np.int64)
    with_centre = _merge(ev, tc, np.full(tc.size, CX), np.full(tc.size, CY),
                         np.arange(tc.size) % 2)
    samp = np.arange(ev.t_us[0], ev.t_us[-1], 2000, dtype=np.int64)
    ref = HelixTracker(init, prm)
    s_ref = ref.process(ev, sample_t_us=samp)
    tr = HelixTracker(init, prm)
    s = tr.process(with_centre, sample_t_us=samp)
    _assert_finite_state(tr)
    assert tr.state.pose_updates >= 10
    assert np.all(np.isfinite(s.rpm_shaft)) and np.all(np.isfinite(s.q))
    # the centre events cost no accuracy
    m_ref = _mare(s_ref, truth, truth.t0_us)
    m = _mare(s, truth, truth.t0_us)
    assert m < 0.1, (m, m_ref)
    assert abs(m - m_ref) < 0.02, (m, m_ref)
    assert abs(tr.q[2] - CX) < 1.0 and abs(tr.q[3] - CY) < 1.0


def test_events_on_the_horizon_of_the_rotor_plane():
    """psi = 0, s = 32, p31 = 0.5: the back-warp's w3 = s (s - p31 x) is 0 on column 64.

    Before the guards the first such event raised ZeroDivisionError in the tracker's
    inline back-warp (1 / w3); in pose_gn the back-warp and du/dq did the same.
    """
    init = RotorInit('h', (20.0, 100.0), 32.0, 6000.0, 2, 1, perspective=(0.5, 0.0))
    tr = HelixTracker(init, TrackerParams(r_in=0.0))
    pose = tr.pose
    assert pose[0] == 32.0 and pose[12] == -16.0 and pose[13] == 0.0 and pose[14] == 1024.0
    with np.errstate(divide='ignore', invalid='ignore'):
        ev, _ = make_rotor_events(0.05, 6000.0, radius_px=32.0, center_px=(20.0, 100.0),
                                  perspective=(0.5, 0.0), t0_us=1000, seed=4)
    # a burst on the horizon before anything moved the pose, then one every 100 us
    th = np.concatenate([np.full(200, 500), np.arange(1000, int(ev.t_us[-1]), 100)])
    yh = 40 + np.arange(th.size) % 120
    stream = _merge(ev, th, np.full(th.size, 64), yh, np.arange(th.size) % 2)
    s = tr.process(stream, every_event=True)
    _assert_finite_state(tr)
    assert np.all(np.isfinite(s.rpm_shaft))
    # and through the packet path (routing box, per-packet samples)
    tr2 = HelixTracker(init, TrackerParams(r_in=0.0))
    ends = np.linspace(0, len(stream), 21).astype(np.int64)[1:]
    run = tr2.process_packets(stream, ends, stream.t_us[ends - 1])
    assert np.all(np.isfinite(run.values[:, :10]))
    _assert_finite_state(tr2)


# ----------------------------------------------------------------- guarded helpers
def _naive_backwarp(q, x, y):
    H = hg.homography(q)
    z = np.linalg.solve(H, np.vstack([x, y, np.ones_like(x)]))
    return (z[:2] / z[2]).T, z[2]


def test_backwarp_forward_and_jacobian_on_and_off_the_horizon():
    q = np.array([math.log(32.0), 0.0, 20.0, 100.0, 0.5, 0.0])
    rng = np.random.default_rng(3)
    x = rng.uniform(-60, 50, 50)
    y = rng.uniform(0, 200, 50)
    # twin: off the horizon the guarded back-warp is the plain projective division
    np.testing.assert_allclose(hg.backwarp(q, x, y), _naive_backwarp(q, x, y)[0],
                               rtol=1e-9, atol=1e-9)
    # on it (x = 64): u at infinity, huge but never nan; du/dq = 0 (det M = w = 0)
    u = hg.backwarp(q, np.array([64.0, 64.0]), np.array([0.0, 150.0]))
    assert not np.any(np.isnan(u)) and np.all(np.hypot(u[:, 0], u[:, 1]) > 1e100)
    u, J = hg.backwarp_jacobian(q, np.array([64.0]), np.array([150.0]))
    assert np.all(J == 0.0)
    # forward: a rotor-plane point on the horizon (p31 u_x + 1 = 0) goes far away
    pose = hg.pack_pose(q)
    zx, zy = hg._forward1(pose, -2.0, 0.3)
    assert math.isfinite(zx) and math.isfinite(zy) and abs(zx) > 1e100
    for ux, uy in ((0.3, -0.4), (-1.2, 0.8), (0.9, 0.1)):
        z = hg.homography(q) @ np.array([ux, uy, 1.0])
        np.testing.assert_allclose(hg._forward1(pose, ux, uy), z[:2] / z[2], rtol=1e-12)


def _naive_event_jac(q, x, y, bz):
    """J_phi and J_r of S1 from du/dq: J_r = u^T J / r, J_phi = -bz (-u_y, u_x) J / r^2
    + d phi_eff / d psi (= -bz)."""
    u, J = hg.backwarp_jacobian(q, x, y)
    r = np.hypot(u[:, 0], u[:, 1])
    jr = (u[:, 0, None] * J[:, 0] + u[:, 1, None] * J[:, 1]) / r[:, None]
    jphi = -bz * (-u[:, 1, None] * J[:, 0] + u[:, 0, None] * J[:, 1]) / (r * r)[:, None]
    jphi[:, 1] -= bz
    return jphi, jr


def test_event_jacobian_is_zero_at_the_centre_and_the_twin_elsewhere():
    q = np.array([math.log(RAD), 0.0, CX, CY, 1e-4, -2e-4])
    gp = pg.pack_gn_params(TrackerParams(r_in=0.0), 2, 1)
    rng = np.random.default_rng(5)
    x = CX + rng.uniform(-40, 40, 40)
    y = CY + rng.uniform(-40, 40, 40)
    p = rng.integers(0, 2, 40).astype(np.uint8)
    _, jac = pg.event_terms(q, x, y, p, rng.uniform(-3, 3, 40), gp)
    jphi, jr = _naive_event_jac(q, x, y, 2.0)
    np.testing.assert_allclose(jac[:, 0], jphi, rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(jac[:, 1], jr, rtol=1e-7, atol=1e-9)
    # the centre pixel of an exact pose: u = 0, no direction, all Jacobians 0
    q0 = np.array([math.log(RAD), 0.0, CX, CY, 0.0, 0.0])
    res, jac = pg.event_terms(q0, np.array([CX]), np.array([CY]), np.array([1], np.uint8),
                              np.array([0.3]), gp)
    assert res[0, 1] == -1.0 and np.all(np.isfinite(res))
    assert np.all(jac == 0.0)


def test_normal_equations_skip_the_centre_event(rotor):
    ev, truth = rotor
    ev = ev.slice(20_000, 23_000)
    q = np.array([math.log(RAD), 0.0, CX, CY, 0.0, 0.0])
    phi = 2.0 * truth.shaft_angle(ev.t_us)
    gp = pg.pack_gn_params(TrackerParams(r_in=0.0), 2, 1)
    A0, g0, acc0 = pg.normal_equations(q, ev.x, ev.y, ev.p, phi, gp)
    xs = np.append(ev.x.astype(float), CX)
    ys = np.append(ev.y.astype(float), CY)
    ps = np.append(ev.p, 1).astype(np.uint8)
    A1, g1, acc1 = pg.normal_equations(q, xs, ys, ps, np.append(phi, 0.7), gp)
    np.testing.assert_array_equal(A1, A0)
    np.testing.assert_array_equal(g1, g0)
    np.testing.assert_array_equal(acc1, acc0)
    # and a solve on a batch holding it
    gn0 = pg.PoseGN(q, TrackerParams(r_in=0.0), 2, 1)
    gn = pg.PoseGN(q, TrackerParams(r_in=0.0), 2, 1)
    assert gn.accumulate(xs, ys, ps, np.append(phi, 0.7)) == gn0.accumulate(ev.x, ev.y, ev.p,
                                                                             phi)
    gn0.solve()
    gn.solve()
    assert np.all(np.isfinite(gn.q)) and np.all(np.isfinite(gn.acc))
    np.testing.assert_array_equal(gn.q, gn0.q)


def test_solve_trust_region_with_a_tip_on_the_horizon():
    """p31 = -1: the tip point u = (1, 0) maps to infinity (w = 0 in the forward map)."""
    q = np.array([math.log(50.0), 0.0, 300.0, 200.0, -1.0, 0.0])
    pose = hg.pack_pose(q)
    prm = pg.pack_gn_params(TrackerParams(), 2, 1)
    acc = np.zeros(pg.ACC_LEN)
    for i in range(6):
        acc[pg.ACC_A + 7 * i] = 1.0
    acc[pg.ACC_G:pg.ACC_G + 6] = [0.1, 0.0, 2.0, -1.0, 0.01, 0.02]
    q1 = q.copy()
    pg._solve(acc, prm, q1, pose, True)
    assert np.all(np.isfinite(q1)) and np.all(np.isfinite(pose))
    # the step whose tip shift cannot be measured is (nearly) not taken
    assert np.all(np.abs(q1 - q)[[0, 2, 3, 4, 5]] < 1e-6)


def _tracker(**kw) -> HelixTracker:
    return HelixTracker(RotorInit('a', (float(CX), float(CY)), RAD, 3000.0, 2, 1),
                        TrackerParams(**kw))


def test_fast_step_singular_system_takes_no_step():
    """Newton step (motion_model 0) without damping on a singular 2 x 2 system."""
    tr = _tracker(motion_model=0, pose_fast_damping=0.0, pose_fast_aniso=0.0)
    acc = tr.acc.copy()
    # (1e6 + 1e-12)^2 - 1e6^2 == 0 in double precision
    acc[pg.ACC_FAST:pg.ACC_FAST + 6] = [1e6, 1e6, 1e6, 3.0, -1.0, 100.0]
    q = tr.q.copy()
    moved = _fast_step(acc, tr.tp, tr.fs.copy(), q, tr.pose.copy(), False, 1000)
    assert not moved and np.array_equal(q, tr.q)
    assert np.all(np.isfinite(acc))
    # twin: a regular system gives the damped Newton step of the 2 x 2 system
    acc[pg.ACC_FAST:pg.ACC_FAST + 6] = [4.0, 1.0, 3.0, 0.5, -0.25, 100.0]
    moved = _fast_step(acc, tr.tp, tr.fs.copy(), q, tr.pose.copy(), False, 1000)
    d = -np.linalg.solve(np.array([[4.0, 1.0], [1.0, 3.0]]) + 1e-12 * np.eye(2),
                         np.array([0.5, -0.25]))
    assert moved
    np.testing.assert_allclose(q[2:4] - tr.q[2:4], d, rtol=1e-9)


def test_centroid_step_without_events_does_nothing():
    tr = _tracker()
    fs = tr.fs.copy()
    fs[FS_AC:FS_AC + 3] = 0.0
    q = tr.q.copy()
    _centroid_step(tr.tp, fs, q, tr.pose.copy())
    assert np.array_equal(q, tr.q)
    # twin: the centre moves by gain * s * mean(u) (psi = 0), within the trust region
    fs[FS_AC:FS_AC + 3] = [0.5, -1.0, 100.0]
    _centroid_step(tr.tp, fs, q, tr.pose.copy())
    np.testing.assert_allclose(q[2:4] - tr.q[2:4], 0.5 * RAD * np.array([0.005, -0.01]),
                               rtol=1e-12)


def test_health_window_with_a_vanishing_scale():
    """The perspective-drift metric divides by s = exp(log s): no raise when it underflows."""
    ev, _ = make_rotor_events(0.02, 10_000.0, radius_px=RAD, center_px=(CX, CY), seed=2)
    tr = _tracker()
    tr.process(ev)
    tr.q[0] = -800.0
    tr.advance(int(ev.t_us[-1]) + 100_000)
    assert tr.health in (0, 1, 2)


def test_detector_knot_interpolation_with_a_zero_step():
    """_compensate with knot_step_us = 0 (no motion: one knot) moves nothing."""
    n = 50
    t = np.arange(n, dtype=np.int64) * 100
    x = (np.arange(n) % 16 + 8).astype(np.uint16)
    y = (np.arange(n) % 8 + 8).astype(np.uint16)
    blk = np.zeros(64, np.int32)
    row_of = np.zeros((1, 1), np.int32)
    xc = np.empty(n, np.int16)
    yc = np.empty(n, np.int16)
    pix = np.zeros((64, 64), np.int32)
    series = np.zeros((50, 1), np.float32)
    _compensate(t, x, y, 0.0, 0.0, np.zeros(2), np.zeros(2), 0, 0, 64, 64, 0, 100, 50, blk,
                blk, row_of, xc, yc, pix, series)
    np.testing.assert_array_equal(xc, x)
    np.testing.assert_array_equal(yc, y)
    assert pix.sum() == n and series.sum() == n
