# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""Motion Kalman filter of the rotor centre: constant velocity, white acceleration.

Beyond the paper (see docs/DESIGN.md, "core/fast_step.py"): between pose
solves the image of the rotor centre moves with the camera, so the fast
translation step tracks it with a Kalman filter on x = [tx, ty, vx, vy]
(image position [px] and velocity [px/s]); P is its 4x4 covariance.

- Dynamics: x <- F x, F = [[I, dt I], [0, I]]; white acceleration of
  density qa [px^2/s^3] gives Q_d = qa [[dt^3/3 I, dt^2/2 I],
  [dt^2/2 I, dt I]] (:func:`_kf_predict`).
- Measurement (information form): the phase term's 2x2 translation system
  (information M, gradient g at the current centre) measures the position
  as p - M^-1 g with covariance M^-1. The update is written so that only
  (I + M P_pp) is inverted, so a singular M (a direction the blades do not
  observe) is safe: correction -[P_pp; P_vp] L g and
  P <- P - [P_pp; P_vp] G [P_pp, P_pv], L = (I + M P_pp)^-1, G = M L^T.
- Innovation gate: d2 = nu^T S^-1 nu = g^T (M P_pp M + M)^-1 g; beyond the
  gate the information is scaled down by gate / d2, Huber-like
  (:func:`_innovation_d2`, :func:`_gate_scale`).

:func:`_kf_step` runs one predict / update on the tracker's state (P in
fs[FS_KP:], the velocity in px / us); it inlines into
:func:`~helixtrack_ros.core.fast_step._fast_step`. The update stays written
out inside it: as an inline kernel of its own it changed how LLVM fuses the
multiply-adds there (last-bit differences, docs/DESIGN.md).
"""

import math

import numpy as np

from helixtrack_ros.core.gn_layout import ACC_FAST
from helixtrack_ros.core.jit import kernel, kernel_inline
from helixtrack_ros.core.tracker_layout import (
    FS_KP,
    FS_VX,
    FS_VY,
    TP_FGATE,
    TP_FINFO,
    TP_MVMAX,
    TP_P0POS,
    TP_P0VEL,
    TP_QACC,
)


@kernel
def _kf_init(tp, fs, s_px):
    """Initial covariance of the motion Kalman filter (diagonal)."""
    for k in range(16):
        fs[FS_KP + k] = 0.0
    vp = (tp[TP_P0POS] * s_px) ** 2
    vv = (tp[TP_P0VEL] * s_px) ** 2
    fs[FS_KP + 0] = vp
    fs[FS_KP + 5] = vp
    fs[FS_KP + 10] = vv
    fs[FS_KP + 15] = vv


@kernel_inline
def _kf_predict(P, dt, qa):
    """P <- F P F^T + Q_d over dt [s] (constant velocity, white acceleration qa)."""
    for i in range(4):
        for j in range(2):
            P[i, j] += dt * P[i, j + 2]
    for i in range(4):
        for j in range(2):
            P[j, i] += dt * P[j + 2, i]
    for k in range(2):
        P[k, k] += qa * dt * dt * dt / 3.0
        P[k, k + 2] += qa * dt * dt / 2.0
        P[k + 2, k] += qa * dt * dt / 2.0
        P[k + 2, k + 2] += qa * dt


@kernel_inline
def _innovation_d2(P, m00, m01, m11, g0, g1):
    """Squared Mahalanobis distance of the measurement: g^T (M P_pp M + M)^-1 g.

    nu = -M^-1 g, S = P_pp + M^-1, d2 = nu^T S^-1 nu. When M has rank one
    (weak direction dropped) the distance is taken along its direction only.
    """
    s00 = m00 * (P[0, 0] * m00 + P[0, 1] * m01) + m01 * (P[1, 0] * m00
                                                          + P[1, 1] * m01) + m00
    s01 = m00 * (P[0, 0] * m01 + P[0, 1] * m11) + m01 * (P[1, 0] * m01
                                                          + P[1, 1] * m11) + m01
    s11 = m01 * (P[0, 0] * m01 + P[0, 1] * m11) + m11 * (P[1, 0] * m01
                                                          + P[1, 1] * m11) + m11
    sdet = s00 * s11 - s01 * s01
    if sdet > 0.0:
        d2 = (s11 * g0 * g0 - 2.0 * s01 * g0 * g1 + s00 * g1 * g1) / sdet
    else:
        # rank one (weak direction dropped): along e1 only
        sm = s00 + s11
        d2 = (g0 * g0 + g1 * g1) / sm if sm > 0.0 else 0.0
    return d2


@kernel_inline
def _gate_scale(m00, m01, m11, g0, g1, d2, gate):
    """Scale the information M, g by gate / d2 when d2 exceeds the gate (0 = off)."""
    if gate > 0.0 and d2 > gate:
        f = gate / d2
        m00 *= f
        m01 *= f
        m11 *= f
        g0 *= f
        g1 *= f
    return m00, m01, m11, g0, g1


@kernel_inline
def _kf_step(acc, tp, fs, mx, mxy, my, ngx, ngy, enough, lim, s_px, dt_us):
    """One step of the filter on the tracker's state: predict over dt_us, update, store.

    The measurement is the fast step's system (M, g) = c (mx, mxy, my; gx,
    gy), c = pose_fast_info, used only when ``enough`` phase weight was
    accumulated; the system is then consumed. The correction is limited to
    lim px (the velocity's by the same factor) and the velocity to
    motion_max_rs. Returns the position step (dx, dy); P and the velocity
    are stored in fs.
    """
    P = np.empty((4, 4))
    for i in range(4):
        for j in range(4):
            P[i, j] = fs[FS_KP + 4 * i + j]
    _kf_predict(P, dt_us * 1e-6, tp[TP_QACC] * s_px * s_px)
    dx = 0.0
    dy = 0.0
    dvx = 0.0
    dvy = 0.0
    if enough:
        c = tp[TP_FINFO]
        m00 = c * mx
        m01 = c * mxy
        m11 = c * my
        g0 = c * ngx
        g1 = c * ngy
        # innovation gate: a measurement far outside its predicted spread (model
        # error: a burst of background events, a jolt) gets its information scaled
        # down (Huber-like)
        d2 = _innovation_d2(P, m00, m01, m11, g0, g1)
        m00, m01, m11, g0, g1 = _gate_scale(m00, m01, m11, g0, g1, d2, tp[TP_FGATE])
        # L = (I + M P_pp)^-1
        t00 = 1.0 + m00 * P[0, 0] + m01 * P[1, 0]
        t01 = m00 * P[0, 1] + m01 * P[1, 1]
        t10 = m01 * P[0, 0] + m11 * P[1, 0]
        t11 = 1.0 + m01 * P[0, 1] + m11 * P[1, 1]
        det = t00 * t11 - t01 * t10
        if det > 1e-12:
            l00 = t11 / det
            l01 = -t01 / det
            l10 = -t10 / det
            l11 = t00 / det
            # correction -[P_pp; P_vp] L g
            lg0 = l00 * g0 + l01 * g1
            lg1 = l10 * g0 + l11 * g1
            dx = -(P[0, 0] * lg0 + P[0, 1] * lg1)
            dy = -(P[1, 0] * lg0 + P[1, 1] * lg1)
            dvx = -(P[2, 0] * lg0 + P[2, 1] * lg1)
            dvy = -(P[3, 0] * lg0 + P[3, 1] * lg1)
            # G = M L^T (symmetric); P <- P - [P_pp; P_vp] G [P_pp, P_pv]
            a00 = m00 * l00 + m01 * l01
            a01 = m00 * l10 + m01 * l11
            a10 = m01 * l00 + m11 * l01
            a11 = m01 * l10 + m11 * l11
            gs01 = 0.5 * (a01 + a10)
            PH = np.empty((4, 2))
            for i in range(4):
                PH[i, 0] = P[i, 0]
                PH[i, 1] = P[i, 1]
            for i in range(4):
                u0 = PH[i, 0] * a00 + PH[i, 1] * gs01
                u1 = PH[i, 0] * gs01 + PH[i, 1] * a11
                for j in range(4):
                    P[i, j] -= u0 * PH[j, 0] + u1 * PH[j, 1]
    dn = math.sqrt(dx * dx + dy * dy)
    f = 1.0
    if not (dn == dn and dvx == dvx and dvy == dvy):
        f = 0.0
    elif dn > lim:
        f = lim / dn
    dx *= f
    dy *= f
    dvx *= f
    dvy *= f
    for i in range(4):
        for j in range(4):
            fs[FS_KP + 4 * i + j] = 0.5 * (P[i, j] + P[j, i])
    for k in range(6):
        acc[ACC_FAST + k] = 0.0
    # velocity in px / us
    vx = fs[FS_VX] + dvx * 1e-6
    vy = fs[FS_VY] + dvy * 1e-6
    vmax = tp[TP_MVMAX] * s_px
    vn = math.sqrt(vx * vx + vy * vy)
    if vn > vmax:
        vx *= vmax / vn
        vy *= vmax / vn
    fs[FS_VX] = vx
    fs[FS_VY] = vy
    return dx, dy
