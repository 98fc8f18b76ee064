# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""Acquisition of the rotation sign, phase and rate before the EKF runs (Sec. 3.2).

While a rotor is not locked, the tracker kernel keeps the blade angles of
a prefix of ring events (:func:`_buffer_ring_event`, thinned evenly when
full) and then decides sign, phase and rate from their circular statistics
(:func:`_lock`, by :mod:`rotation_sign`), which initialises the phase EKF
and a new pose batch. Meanwhile the centroid of the disc events keeps the
centre on a moving rotor (:func:`_acquire_centroid`, beyond the paper).
"""

import math

import numpy as np

from helixtrack_ros.core.fast_step import _centroid_step
from helixtrack_ros.core.gn_layout import G_ZETA
from helixtrack_ros.core.jit import fma, fma_inline
from helixtrack_ros.core.motion_kf import _kf_init
from helixtrack_ros.core.rotation_sign import _acquire
from helixtrack_ros.core.tracker_layout import (
    FS_AC,
    FS_PHIB,
    FS_PSIB,
    FS_VX,
    FS_VY,
    IS_ACQ,
    IS_ACQ_N,
    IS_ACQ_SEEN,
    IS_ACQ_STRIDE,
    IS_ACQ_T0,
    IS_BATCH_N,
    IS_BATCH_T0,
    IS_DIR,
    IS_FAST_T,
    IS_GN_CNT,
    IS_GN_STRIDE,
    IS_MT,
    IS_SOLVE_T,
    IS_ZETA,
    TP_ACQ_MIN,
    TP_ACQ_US,
    TP_B,
    TP_LOCKPH,
    TP_MARGIN,
    TP_OMEGA0,
    TP_P0AL,
    TP_P0OM,
    TP_P0PHI,
    TP_SPAN,
    _sync,
)


@fma
def _lock(tp, gp, fs, ist, q, acq_t, acq_a, t):
    """Decide rotation sign, phase and rate from the acquisition buffer (Sec. 3.2).

    With ``sign_lock_phase`` 0 (the release) only the sign is taken; the EKF
    starts at phi = 0 and the initial rate.
    """
    n = ist[IS_ACQ_N]
    ts = np.empty(n)
    for j in range(n):
        ts[j] = (acq_t[j] - t) * 1e-6
    span_s = (t - ist[IS_ACQ_T0]) * 1e-6
    out = np.empty(5)
    B = tp[TP_B]
    _acquire(ts, acq_a, n, int(B), int(ist[IS_DIR]), tp[TP_OMEGA0], tp[TP_SPAN],
             tp[TP_MARGIN], span_s, out)
    zeta = out[0]
    ist[IS_ZETA] = 1 if zeta > 0 else -1
    gp[G_ZETA] = zeta
    lock = tp[TP_LOCKPH] != 0.0
    if lock:
        # phi = phi_eff + zeta B psi
        phi = out[1] + zeta * B * q[1]
        om = out[2]
    else:
        # the release: phi = 0 at the initial rate, the EKF pulls the phase in
        phi = 0.0
        om = tp[TP_OMEGA0]
    d_omega = math.pi / 8.0 / max(span_s, 1e-9)
    # a locked rate is as uncertain as the statistic's grid step; else P0 (the release)
    P11 = max(tp[TP_P0OM], 0.0625 * d_omega * d_omega) if lock else tp[TP_P0OM]
    # x = [phi, omega, 0], diagonal P, at time t, no pending fold
    _sync(fs, ist, phi, om, 0.0, tp[TP_P0PHI], 0.0, 0.0, P11, 0.0, tp[TP_P0AL], t, 0.0, 0.0)
    fs[FS_PHIB] = phi
    fs[FS_PSIB] = q[1]
    ist[IS_ACQ] = 0
    ist[IS_MT] = t
    ist[IS_SOLVE_T] = t
    ist[IS_FAST_T] = t
    fs[FS_VX] = 0.0
    fs[FS_VY] = 0.0
    _kf_init(tp, fs, math.exp(q[0]))
    ist[IS_BATCH_T0] = t
    ist[IS_BATCH_N] = 0
    ist[IS_GN_CNT] = 0
    ist[IS_GN_STRIDE] = 1


@fma_inline
def _acquire_centroid(tp, fs, q, pose, ux, uy, r2, t, t_f, fstep, B):
    """While the phase is unknown, step the centre towards the centroid of the disc events.

    B >= 2 blades are symmetric about the centre, so the centroid keeps the
    centre on a moving rotor; background spreads evenly and only dilutes the
    step. Returns the time of the last step and whether the pose moved.
    """
    moved = False
    if r2 <= 1.21:
        fs[FS_AC] += ux
        fs[FS_AC + 1] += uy
        fs[FS_AC + 2] += 1.0
    if t - t_f >= fstep:
        if fs[FS_AC + 2] >= 50.0 and B >= 2.0:
            _centroid_step(tp, fs, q, pose)
            moved = True
        fs[FS_AC] = 0.0
        fs[FS_AC + 1] = 0.0
        fs[FS_AC + 2] = 0.0
        t_f = t
    return t_f, moved


@fma_inline
def _buffer_ring_event(tp, ist, acq_t, acq_a, ux, uy, t):
    """Keep the blade angle of a ring event for the sign decision; True once it can be taken.

    Every stride-th ring event is kept; a full buffer is thinned evenly
    (every second entry) and the stride doubled.
    """
    acq_cap = acq_t.shape[0]
    seen = ist[IS_ACQ_SEEN]
    if seen == 0:
        ist[IS_ACQ_T0] = t
    stride = ist[IS_ACQ_STRIDE]
    if seen % stride == 0:
        if ist[IS_ACQ_N] == acq_cap:
            # thin the buffer evenly: keep every second entry
            half = acq_cap // 2
            for j in range(half):
                acq_t[j] = acq_t[2 * j]
                acq_a[j] = acq_a[2 * j]
            ist[IS_ACQ_N] = half
            stride *= 2
            ist[IS_ACQ_STRIDE] = stride
        if seen % stride == 0:
            m = ist[IS_ACQ_N]
            acq_t[m] = t
            acq_a[m] = math.atan2(uy, ux)
            ist[IS_ACQ_N] = m + 1
    ist[IS_ACQ_SEEN] = seen + 1
    return t - ist[IS_ACQ_T0] >= tp[TP_ACQ_US] and ist[IS_ACQ_N] >= tp[TP_ACQ_MIN]
