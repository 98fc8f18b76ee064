# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""The tracker's numba kernels: one rotor's per-event phase EKF and batched GN pose (Sec. 3).

:func:`_process` runs a batch of events through the steps of the paper's
implementation details (Sec. 3.6), each a named inline step below; all
state lives in the arrays of :mod:`tracker_layout`, so any batch split
gives the same result. Per input event:

1. health window: the first event past the window closes it (core.health_machine);
2. back-warp u = pi(adj(H) [z; 1]) (Sec. 3.1); events outside the annulus
   r_in <= |u| <= r_out are rejected (compared on |u|^2);
3. while not locked: acquisition of rotation sign, phase and rate from a
   prefix of ring events (Sec. 3.2, :mod:`rotation_sign`);
4. predict: lazily, over the whole gap since the last accepted event
   (Sec. 3.3; the white-jerk model composes exactly);
5. phase residual (Eq. 3, polarity-centred) and gates w_vm w_ring
   (Sec. 3.4); the events of one timestamp are folded into one EKF update
   (R = sigma0^2 / sum w, weighted mean residual), committed when a later
   timestamp arrives (``ekf_fold`` 0: one update per event, as the paper;
   ``ekf_r_vm`` 0: R from w_ring alone, as the release);
6. GN accumulation (Sec. 3.5, S1) on every gn_stride-th accepted event;
7. at each commit: the fast translation step and motion model (beyond the
   paper, :mod:`fast_step`), then the pose trigger and GN solve (Sec. 3.5).

Outputs (Sec. 3.6, :func:`_emit`): shaft RPM 60 |omega| / (2 pi B), its
standard deviation from P[1, 1], shaft phase wrap(zeta phi_eff / B), shaft
angular speed zeta omega / B. Design notes and timings: docs/DESIGN.md.
"""

import math

from helixtrack_ros.core.acquisition import _acquire_centroid, _buffer_ring_event, _lock
from helixtrack_ros.core.fast_step import _fast_step
from helixtrack_ros.core.fastmath import (
    _atan2_poly,
    _cos_poly,
    _exp_neg,
    _wrap_pi,
    shaft_rpm_k,
)
from helixtrack_ros.core.gn_accumulate import _accumulate
from helixtrack_ros.core.gn_layout import (
    ACC_FAST,
    ACC_N,
    G_FIXT,
    G_POLH,
)
from helixtrack_ros.core.gn_solve import _solve
from helixtrack_ros.core.health import (
    HI_ACC0,
    HI_EV_T0,
    HI_NOUT,
    HI_NTIP,
    HI_T0,
    HS_COS,
    HS_EPS,
    HS_EPS2,
    HS_LAG_EPS,
    HS_LAG_EPS2,
    HS_LAG_T,
    HS_LAG_W,
    HS_W,
)
from helixtrack_ros.core.health_machine import _health_advance
from helixtrack_ros.core.homography import _INV_W0, _image_x_angle, _pack_pose
from helixtrack_ros.core.jit import fma, fma_inline, kernel_inline
from helixtrack_ros.core.motion_kf import _kf_init
from helixtrack_ros.core.phase_ekf import _predict_s, _update_fold_s, _update_s
from helixtrack_ros.core.tracker_layout import (
    FS_PHIB,
    FS_PSIB,
    FS_SW,
    FS_SWE,
    FS_VX,
    FS_VY,
    IS_ACCEPT,
    IS_ACQ,
    IS_DEFER,
    IS_POSE,
    IS_T,
    IS_TMAX,
    IS_ZETA,
    MODE_EVERY,
    MODE_LAST,
    MODE_TIMES,
    OUT_OMEGA,
    OUT_PHASE,
    OUT_Q,
    OUT_RPM,
    OUT_STD,
    TP_B,
    TP_FOLD,
    TP_OMEGA0,
    TP_QJ,
    TP_RINGACQ,
    TP_RVM,
    TP_SIG0,
    _ekf_params,
    _fast_params,
    _health_params,
    _load_batch,
    _load_ekf,
    _load_motion,
    _pose_params,
    _store_batch,
    _sync,
)


@kernel_inline
def _adjugate(pose):
    """adj(H) of the packed pose as nine scalars (row-major; the back-warp of Sec. 3.1)."""
    return (pose[6], pose[7], pose[8], pose[9], pose[10], pose[11], pose[12], pose[13],
            pose[14])


@fma
def _emit(k, t, tp, fs, ist, q, out_t, out_v):
    """Write the state at time t into output row k (Sec. 3.6).

    The pending update of the current timestamp is applied to a copy, then
    the state is propagated from its time to t (t before it counts as dt = 0).
    """
    B = tp[TP_B]
    phi, om, al, P00, P01, P02, P11, P12, P22 = _load_ekf(fs)
    if fs[FS_SW] > 0.0 and tp[TP_FOLD] != 0.0:
        phi, om, al, _, _, _, P11, P12, P22 = _update_fold_s(
            phi, om, al, P00, P01, P02, P11, P12, P22, fs[FS_SW], fs[FS_SWE], tp[TP_SIG0])
    dt = 0.0
    if ist[IS_T] >= 0 and t > ist[IS_T]:
        dt = (t - ist[IS_T]) * 1e-6
    phi_t = phi + dt * om + 0.5 * dt * dt * al
    om_t = om + dt * al
    P11_t = P11 + 2.0 * dt * P12 + dt * dt * P22 + tp[TP_QJ] * dt * dt * dt / 3.0
    zeta = 1.0 if ist[IS_ZETA] >= 0 else -1.0
    out_t[k] = t
    out_v[k, OUT_RPM] = shaft_rpm_k(om_t, B)
    out_v[k, OUT_STD] = shaft_rpm_k(math.sqrt(max(P11_t, 0.0)), B)
    # blade angle atan2(u_y, u_x) = zeta phi_eff / B = zeta phi / B - psi, published from
    # the plane direction seen as image +x (beta): the same zero across re-locks
    out_v[k, OUT_PHASE] = _wrap_pi(zeta * phi_t / B - q[1] - _image_x_angle(q))
    out_v[k, OUT_OMEGA] = zeta * om_t / B
    out_v[k, OUT_Q] = math.exp(q[0])
    for j in range(1, 6):
        out_v[k, OUT_Q + j] = q[j]

# ---- per input event --------------------------------------------------------------------


@fma_inline
def _event_time(t, t_max, n_back):
    """Event time made monotonic: a time before the latest counts as the latest (dt = 0)."""
    if t_max < 0:
        t_max = t
    if t < t_max:
        # time went backwards: dt < 0 is treated as 0
        n_back += 1
        t = t_max
    return t, t, n_back


@fma_inline
def _health_sums(hs, hi):
    """The pending health window's start and sums, into locals (see :func:`_health_count`)."""
    return hi[HI_T0], hi[HI_NTIP], hi[HI_NOUT], hs[HS_COS], (
        hs[HS_EPS], hs[HS_EPS2], hs[HS_W], hs[HS_LAG_EPS], hs[HS_LAG_EPS2], hs[HS_LAG_W],
        hs[HS_LAG_T])


@fma_inline
def _health_store(hs, hi, h_tip, h_out, h_cos, h_we):
    """Write the pending health window's sums back (the next batch goes on from them)."""
    hi[HI_NTIP] = h_tip
    hi[HI_NOUT] = h_out
    hs[HS_COS] = h_cos
    (hs[HS_EPS], hs[HS_EPS2], hs[HS_W], hs[HS_LAG_EPS], hs[HS_LAG_EPS2], hs[HS_LAG_W],
     hs[HS_LAG_T]) = h_we


@fma_inline
def _health_window(hp, hs, hi, q, locked, om, P11, n_acc, t, h_t0, h_tip, h_out, h_cos, h_we):
    """Open the first health window, or close the current one at t (core.health_machine).

    Returns the new window's start and its zeroed tip / outside / coherence / drift sums
    (``h_we``: sums of w eps, w eps^2 and w over the EKF's updates; its recent sums
    (:func:`_recent_sums`) go on).
    """
    if h_t0 < 0:
        hi[HI_T0] = t
        hi[HI_EV_T0] = t
        hi[HI_ACC0] = n_acc
    else:
        _health_store(hs, hi, h_tip, h_out, h_cos, h_we)
        _health_advance(hp, hs, hi, q, locked, om, P11, n_acc, t)
        # (the tip sums start again, or go on where too few to judge: _tip_evidence)
        h_tip = hi[HI_NTIP]
        h_out = hi[HI_NOUT]
        h_cos = hs[HS_COS]
        h_we = (0.0, 0.0, 0.0, h_we[3], h_we[4], h_we[5], h_we[6])
    return hi[HI_T0], h_tip, h_out, h_cos, h_we


@fma_inline
def _backwarp_s(adj, zx, zy):
    """u = pi(adj(H) [z; 1]) (Sec. 3.1); a pixel on the rotor plane's horizon goes to infinity."""
    h0, h1, h2, h3, h4, h5, h6, h7, h8 = adj
    w3 = h6 * zx + h7 * zy + h8
    # on the rotor plane's horizon (w3 = 0) u is at infinity: outside the annulus
    iw = 1.0 / w3 if w3 != 0.0 else _INV_W0
    ux = (h0 * zx + h1 * zy + h2) * iw
    uy = (h3 * zx + h4 * zy + h5) * iw
    return ux, uy


# ---- acquisition of sign, phase and rate (Sec. 3.2) -------------------------------------
# ---- phase EKF: predict (Sec. 3.3), residual and gates (Eq. 3, Sec. 3.4) -----------------


@fma_inline
def _predict_gap(phi, om, al, P00, P01, P02, P11, P12, P22, t, t_x, qj, zb, psi):
    """Lazy predict over the whole gap since the last accepted event (Sec. 3.3).

    The white-jerk model is linear time-invariant, so one prediction over
    the gap equals one per event. Returns x, P, their new time and
    phi_eff = wrap(phi - zeta B psi).
    """
    if t_x >= 0:
        dt = (t - t_x) * 1e-6
        phi, om, al, P00, P01, P02, P11, P12, P22 = _predict_s(
            phi, om, al, P00, P01, P02, P11, P12, P22, dt, qj)
    return phi, om, al, P00, P01, P02, P11, P12, P22, t, _wrap_pi(phi - zb * psi)


@fma_inline
def _phase_residual(phiw, B, zeta, ux, uy, p, hpol):
    """theta = atan2(zeta u_y, u_x) and eps = wrap(phi_eff - B theta) (Eq. 3), polarity-centred.

    The residual is centred by polarity: -h for ON, +h for OFF (see pose_gn).
    """
    theta = _atan2_poly(zeta * uy, ux)
    eps = _wrap_pi(phiw - B * theta - (2.0 * min(p, 1) - 1.0) * hpol)
    return theta, eps


@fma_inline
def _gate(eps, r, kappa, inv2sr2):
    """Gate product w = w_vm(eps) w_ring(r) in one exp (Sec. 3.4); also r - 1 and cos eps."""
    d = r - 1.0
    ce = _cos_poly(eps)
    w = _exp_neg(kappa * (ce - 1.0) - d * d * inv2sr2)
    return d, ce, w


@fma_inline
def _recent_sums(h_we, t, inv_tau):
    """The recent residual sums of ``h_we`` (its last four: sums of w eps, w eps^2, w and
    their time) decayed to the event time t: weights exp(-age / tau) (core.health).

    Decayed in steps of tau / 16 (the events of a step weigh alike): one exp per
    step, not per event, and the same sums for any batch split.
    """
    se, se2, sw, re, re2, rw, rt = h_we
    x = (t - rt) * inv_tau
    if x >= 0.0625:
        f = _exp_neg(-x)
        re *= f
        re2 *= f
        rw *= f
        rt = float(t)
    return se, se2, sw, re, re2, rw, rt


@fma_inline
def _health_count(d, ce, eps, wr, t, tip_in, out0, out1, inv_tau, h_tip, h_out, h_cos,
                  h_we):
    """Health counters: tip-band phase coherence, spill outside the tip, residual drift.

    ``h_we`` sums w eps, w eps^2 and w over the EKF's updates (R gate w), over the
    pending window and over the recent events (:func:`_recent_sums`): the weighted
    mean residual stays near 0 while the filter follows, and keeps one sign
    while its rate lags a sudden acceleration (the coherence does not see
    that: the phase is corrected at every event).
    """
    if d <= 0.0:
        if d > tip_in:
            h_tip += 1
            h_cos += ce
    elif d > out0 and d < out1:
        h_out += 1
    se, se2, sw, re, re2, rw, rt = _recent_sums(h_we, t, inv_tau)
    we = wr * eps
    wee = we * eps
    return h_tip, h_out, h_cos, (se + we, se2 + wee, sw + wr, re + we, re2 + wee, rw + wr, rt)


@fma_inline
def _r_gate(w, d, inv2sr2, rvm):
    """The gate of R (Sec. 3.4): w = w_vm w_ring, or w_ring alone (the release drops w_vm)."""
    return w if rvm else _exp_neg(-d * d * inv2sr2)


@fma_inline
def _fold(sw, swe, w, eps, rfloor):
    """Fold an event into its timestamp's update: sum w, sum w eps (R = sigma0^2 / max(w, eps))."""
    wf = max(w, rfloor)
    return sw + wf, swe + wf * eps


@fma_inline
def _update_event(phi, om, al, P00, P01, P02, P11, P12, P22, sw, w, eps, rfloor, sig0, zb,
                  psi):
    """One EKF update per event, R = sigma0^2 / max(w, eps) (Sec. 3.4, ``ekf_fold`` 0).

    Returns x, P, sw (the timestamp's sum of weights: only marks that the
    timestamp holds events, for the commit) and phi_eff of the updated phase,
    at which the next event's residual and gates are taken.
    """
    wf = max(w, rfloor)
    phi, om, al, P00, P01, P02, P11, P12, P22 = _update_s(
        phi, om, al, P00, P01, P02, P11, P12, P22, eps, sig0 / wf)
    return phi, om, al, P00, P01, P02, P11, P12, P22, sw + wf, _wrap_pi(phi - zb * psi)


# ---- at a commit (a later timestamp): fast step, motion model, pose trigger -------------


@fma_inline
def _fast_off(gp):
    """Stop the fast step (the rotor turns fast again): the full solve moves tx, ty again."""
    gp[G_FIXT] = 0.0
    return False, 0.0, 0.0


@fma_inline
def _fast_on(tp, gp, fs, q, acc, t_x):
    """Start the fast step at t_x (low RPM): the full GN solve then leaves tx, ty to it.

    The motion filter and the fast system restart, GN accumulates every
    event. Returns fast_on, the velocity, the GN stride and count, and the
    times of the last fast step, propagation and applied step.
    """
    gp[G_FIXT] = 1.0
    _kf_init(tp, fs, math.exp(q[0]))
    for k in range(6):
        acc[ACC_FAST + k] = 0.0
    return True, 0.0, 0.0, 1, 0, t_x, t_x, t_x


@fma_inline
def _motion_predict(tp, fs, q, pose, vx, vy, t_x, t_m, t_sv, mhold):
    """Constant-velocity propagation of the centre to t_x (motion model, core.motion_kf).

    After mhold without a correction (or without an event) the velocity is
    stale: it is zeroed and the filter restarted. Returns the velocity and
    whether the pose moved.
    """
    moved = False
    if t_x - t_sv > mhold or t_x - t_m > mhold:
        # no correction (or no event) for long: the velocity is stale
        vx = 0.0
        vy = 0.0
        _kf_init(tp, fs, math.exp(q[0]))
    elif vx != 0.0 or vy != 0.0:
        dtm = float(t_x - t_m)
        q[2] += vx * dtm
        q[3] += vy * dtm
        _pack_pose(q, pose)
        moved = True
    return vx, vy, moved


@fma_inline
def _fast_translation(acc, tp, fs, q, pose, motion, vx, vy, t_x, t_f, t_sv):
    """Fast translation step from the phase term (core.fast_step); returns vx, vy, t_sv."""
    fs[FS_VX] = vx
    fs[FS_VY] = vy
    if _fast_step(acc, tp, fs, q, pose, motion, t_x - t_f):
        t_sv = t_x
    return fs[FS_VX], fs[FS_VY], t_sv


@fma_inline
def _pose_triggered(phi, phib, psi, psib, zb, trig, timer, maxev, t_x, batch_t0, batch_n):
    """Pose trigger (Sec. 3.5): the phase advanced by trig, or the timer, or the event cap."""
    return (abs(phi - phib - zb * (psi - psib)) >= trig
            or (timer > 0 and t_x - batch_t0 >= timer)
            or (maxev > 0 and batch_n >= maxev))


@fma_inline
def _pose_update(acc, gp, q, pose, ist, phi, psi, zb, hpol, gn_min, gn_target, gn_stride,
                 gn_cnt, batch_n, batch_t0, fast_on, t_x):
    """Gauss-Newton pose step on the batch (Sec. 3.5), or defer a batch too small to solve.

    After a solve, phi_eff = phi - zeta B psi is kept continuous across the
    psi step, and the GN stride is set for about gn_target events in the
    next batch. Returns phi, psi, h, the GN stride and count, batch events
    and whether it solved.
    """
    solved = False
    if batch_n >= gn_min and acc[ACC_N] >= 8.0:
        _solve(acc, gp, q, pose, True)
        ist[IS_POSE] += 1
        # keep phi_eff = phi - zeta B psi continuous across a psi step
        phi += zb * (q[1] - psi)
        psi = q[1]
        hpol = gp[G_POLH]
        if gn_target > 0:
            # in batches longer than 10 ms (low RPM) the 1 ms fast steps feed
            # on the same sums: twice the events there
            slow = fast_on and t_x - batch_t0 > 10_000
            gn_stride = max(1, batch_n // (2 * gn_target if slow else gn_target))
        else:
            gn_stride = 1
        gn_cnt = 0
        batch_n = 0
        solved = True
    else:
        ist[IS_DEFER] += 1
    return phi, psi, hpol, gn_stride, gn_cnt, batch_n, solved


# ---- the batch kernel -------------------------------------------------------------------


@kernel_inline
def _emit_samples(k_out, k_samp, t_before, sample_t, tp, fs, ist, q, out_t, out_v,
                  every=False):
    """Emit the rows of the sample times before ``t_before`` (all of them: ``every``)."""
    while k_samp < sample_t.shape[0] and (every or sample_t[k_samp] < t_before):
        _emit(k_out, sample_t[k_samp], tp, fs, ist, q, out_t, out_v)
        k_out += 1
        k_samp += 1
    return k_out, k_samp


@fma
def _process(t_us, xs, ys, ps, tp, gp, fs, ist, q, pose, acc, acq_t, acq_a, hp, hs, hi, mode,  # noqa: C901, PLR0912, PLR0915 (numba kernel)
             sample_t, out_t, out_v):
    """Run the tracker over one batch; returns the number of output rows written.

    Accepted events of one timestamp are folded into one EKF update
    (:func:`_update_fold_s`, exact for the linear update given gates at the
    predicted phase); the fold is committed when a later timestamp arrives,
    so any batch split gives the same result. Pose triggers and the motion
    model are checked at each commit; health windows close at input events.
    """
    n = t_us.shape[0]
    n_samp = sample_t.shape[0]
    k_out = 0
    k_samp = 0
    # ---- parameters and state into locals
    B, kappa, qj, sig0, rfloor, inv2sr2, rin2, rout2 = _ekf_params(tp)
    gn_min, gn_target, timer, maxev = _pose_params(tp)
    motion, mstep, mhold, fstep, om_fast = _fast_params(tp, B)
    hwin, tip_in, out0, out1, inv_tau = _health_params(hp)
    ring_acq = tp[TP_RINGACQ]
    rvm = tp[TP_RVM] != 0.0
    fold = tp[TP_FOLD] != 0.0
    hpol = gp[G_POLH]
    # a half shaft turn (paper); a whole one for B = 1 (docs/DESIGN.md, "One blade")
    trig = math.pi * max(B, 2.0)
    phi, om, al, P00, P01, P02, P11, P12, P22 = _load_ekf(fs)
    phib = fs[FS_PHIB]
    psib = fs[FS_PSIB]
    sw = fs[FS_SW]
    swe = fs[FS_SWE]
    t_x = ist[IS_T]
    t_max = ist[IS_TMAX]
    acquiring = ist[IS_ACQ] != 0
    zeta = 1.0 if ist[IS_ZETA] >= 0 else -1.0
    zb = zeta * B
    psi = q[1]
    phiw = _wrap_pi(phi - zb * psi)
    n_back, n_used, n_accept = 0, 0, 0
    gn_stride, gn_cnt, batch_n, batch_t0 = _load_batch(ist)
    adj = _adjugate(pose)
    vx, vy, t_m, t_sv, t_f, fast_on = _load_motion(fs, ist)
    h_t0, h_tip, h_out, h_cos, h_we = _health_sums(hs, hi)
    acc_base = ist[IS_ACCEPT]
    for i in range(n):
        t, t_max, n_back = _event_time(t_us[i], t_max, n_back)
        if t >= h_t0 + hwin:
            h_t0, h_tip, h_out, h_cos, h_we = _health_window(
                hp, hs, hi, q, not acquiring, om, P11, acc_base + n_accept, t, h_t0, h_tip,
                h_out, h_cos, h_we)
        if mode == MODE_TIMES and k_samp < n_samp and sample_t[k_samp] < t_us[i]:
            _sync(fs, ist, phi, om, al, P00, P01, P02, P11, P12, P22, t_x, sw, swe)
            k_out, k_samp = _emit_samples(k_out, k_samp, t_us[i], sample_t, tp, fs, ist, q,
                                          out_t, out_v)
        if sw > 0.0 and t > t_x:
            if fold:
                # commit the folded EKF update of the previous timestamp (Sec. 3.4)
                phi, om, al, P00, P01, P02, P11, P12, P22 = _update_fold_s(
                    phi, om, al, P00, P01, P02, P11, P12, P22, sw, swe, sig0)
            sw = 0.0
            swe = 0.0
            # the fast step runs while a half shaft turn is slow (hysteresis, docs/DESIGN.md)
            if fstep > 0 and fast_on and abs(om) > 1.25 * om_fast:
                fast_on, vx, vy = _fast_off(gp)
            elif fstep > 0 and not fast_on and abs(om) < om_fast:
                fast_on, vx, vy, gn_stride, gn_cnt, t_f, t_m, t_sv = _fast_on(tp, gp, fs, q, acc,
                                                                              t_x)
            moved = False
            if fast_on and motion and t_x - t_m >= mstep:
                vx, vy, moved = _motion_predict(tp, fs, q, pose, vx, vy, t_x, t_m, t_sv, mhold)
                t_m = t_x
            if fast_on and t_x - t_f >= fstep:
                vx, vy, t_sv = _fast_translation(acc, tp, fs, q, pose, motion, vx, vy, t_x, t_f,
                                                 t_sv)
                t_f = t_x
                moved = True
            if _pose_triggered(phi, phib, psi, psib, zb, trig, timer, maxev, t_x, batch_t0,
                               batch_n):
                phi, psi, hpol, gn_stride, gn_cnt, batch_n, solved = _pose_update(
                    acc, gp, q, pose, ist, phi, psi, zb, hpol, gn_min, gn_target, gn_stride,
                    gn_cnt, batch_n, batch_t0, fast_on, t_x)
                moved = moved or solved
                phib = phi
                psib = psi
                batch_t0 = t_x
            if moved:
                adj = _adjugate(pose)
        zx = float(xs[i])
        zy = float(ys[i])
        ux, uy = _backwarp_s(adj, zx, zy)
        r2 = ux * ux + uy * uy
        if r2 >= rin2 and r2 <= rout2:
            n_accept += 1
            r = math.sqrt(r2)
            if acquiring:
                if fstep > 0 and tp[TP_OMEGA0] < om_fast:
                    t_f, moved = _acquire_centroid(tp, fs, q, pose, ux, uy, r2, t, t_f, fstep, B)
                    if moved:
                        adj = _adjugate(pose)
                if abs(r - 1.0) <= ring_acq and _buffer_ring_event(tp, ist, acq_t, acq_a, ux,
                                                                    uy, t):
                    _lock(tp, gp, fs, ist, q, acq_t, acq_a, t)
                    acquiring = False
                    phi, om, al, P00, P01, P02, P11, P12, P22 = _load_ekf(fs)
                    phib, psib, sw, swe, t_x = fs[FS_PHIB], fs[FS_PSIB], 0.0, 0.0, t
                    zeta = 1.0 if ist[IS_ZETA] >= 0 else -1.0
                    zb = zeta * B
                    phiw = _wrap_pi(phi - zb * psi)
                    gn_stride, gn_cnt, batch_n, batch_t0 = 1, 0, 0, t
                    vx, vy, t_m, t_sv, t_f, fast_on = 0.0, 0.0, t, t, t, False
                    gp[G_FIXT] = 0.0
            else:
                if t > t_x:
                    phi, om, al, P00, P01, P02, P11, P12, P22, t_x, phiw = _predict_gap(
                        phi, om, al, P00, P01, P02, P11, P12, P22, t, t_x, qj, zb, psi)
                theta, eps = _phase_residual(phiw, B, zeta, ux, uy, ps[i], hpol)
                d, ce, w = _gate(eps, r, kappa, inv2sr2)
                wr = _r_gate(w, d, inv2sr2, rvm)
                h_tip, h_out, h_cos, h_we = _health_count(d, ce, eps, wr, t, tip_in, out0, out1,
                                                          inv_tau, h_tip, h_out, h_cos, h_we)
                if fold:
                    sw, swe = _fold(sw, swe, wr, eps, rfloor)
                else:
                    phi, om, al, P00, P01, P02, P11, P12, P22, sw, phiw = _update_event(
                        phi, om, al, P00, P01, P02, P11, P12, P22, sw, wr, eps, rfloor, sig0,
                        zb, psi)
                n_used += 1
                batch_n += 1
                # Gauss-Newton accumulation on every gn_stride-th event (Sec. 3.5, S1)
                gn_cnt += 1
                if gn_cnt >= gn_stride:
                    gn_cnt = 0
                    _accumulate(acc, gp, pose, zx, zy, ux, uy, r, theta, eps, w, ps[i])
        if mode == MODE_EVERY:
            _sync(fs, ist, phi, om, al, P00, P01, P02, P11, P12, P22, t_x, sw, swe)
            _emit(k_out, t, tp, fs, ist, q, out_t, out_v)
            k_out += 1
    # ---- write back
    _sync(fs, ist, phi, om, al, P00, P01, P02, P11, P12, P22, t_x, sw, swe)
    _store_batch(fs, ist, phib, psib, t_max, n, n_used, n_back, n_accept, gn_stride, gn_cnt,
                 batch_n, batch_t0, fast_on, vx, vy, t_m, t_sv, t_f)
    _health_store(hs, hi, h_tip, h_out, h_cos, h_we)
    if mode == MODE_TIMES:
        k_out, k_samp = _emit_samples(k_out, k_samp, 0, sample_t, tp, fs, ist, q,
                                      out_t, out_v, True)
    elif mode == MODE_LAST and n > 0:
        _emit(k_out, t_max, tp, fs, ist, q, out_t, out_v)
        k_out += 1
    return k_out
