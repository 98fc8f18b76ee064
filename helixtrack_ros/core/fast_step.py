# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""Fast translation step of the rotor centre (beyond the paper).

At low RPM, or while the camera moves, the paper's half-turn pose trigger
comes too late for the image motion of the rotor (Sec. 4.4). Every
pose_fast_us the tracker therefore moves the centre from the phase term's
2x2 translation system alone (accumulated on the GN subsample,
``gn_layout.ACC_FAST``): by the motion Kalman filter (:mod:`motion_kf`,
``motion_model`` = 1) or by a damped Newton step (``motion_model`` = 0).
While the phase is still unknown the centroid of the disc events moves the
centre instead. Why and how well: docs/DESIGN.md, "core/fast_step.py".
"""

import math

from helixtrack_ros.core.gn_layout import ACC_FAST
from helixtrack_ros.core.homography import _pack_pose
from helixtrack_ros.core.jit import kernel, kernel_inline
from helixtrack_ros.core.motion_kf import _kf_step
from helixtrack_ros.core.tracker_layout import (
    FS_AC,
    TP_ACQGAIN,
    TP_FANISO,
    TP_FDAMP,
    TP_FFORGET,
    TP_FGAIN,
    TP_FMAX,
    TP_FMIN,
)


@kernel
def _centroid_step(tp, fs, q, pose):
    """Move the centre by pose_acq_gain times the mean disc event (rotor plane -> image)."""
    n = fs[FS_AC + 2]
    if not n > 0.0:
        return
    mx = fs[FS_AC] / n
    my = fs[FS_AC + 1] / n
    s_px = math.exp(q[0])
    c = math.cos(q[1])
    sn = math.sin(q[1])
    g = tp[TP_ACQGAIN]
    dx = g * s_px * (c * mx - sn * my)
    dy = g * s_px * (sn * mx + c * my)
    lim = tp[TP_FMAX] * s_px
    dn = math.sqrt(dx * dx + dy * dy)
    if dn > lim:
        dx *= lim / dn
        dy *= lim / dn
    q[2] += dx
    q[3] += dy
    _pack_pose(q, pose)


@kernel_inline
def _drop_weak_direction(axx, axy, ayy, gx, gy, aniso):
    """The 2x2 system (M, g) without a direction observed much more weakly than the other.

    Eigen-decomposition of A; when l2 < aniso l1 only the strong direction
    e1 is kept (M = l1 e1 e1^T, g projected on e1): the weak one's estimate
    is dominated by model errors. Returns mx, mxy, my, gx, gy.
    """
    tr2 = 0.5 * (axx + ayy)
    dif = 0.5 * (axx - ayy)
    rad = math.sqrt(dif * dif + axy * axy)
    l1 = tr2 + rad
    l2 = tr2 - rad
    if rad > 0.0:
        ang = 0.5 * math.atan2(2.0 * axy, axx - ayy)
    else:
        ang = 0.0
    e1x = math.cos(ang)
    e1y = math.sin(ang)
    mx = axx
    mxy = axy
    my = ayy
    ngx = gx
    ngy = gy
    if l2 < aniso * l1:
        gp1 = e1x * gx + e1y * gy
        mx = l1 * e1x * e1x
        mxy = l1 * e1x * e1y
        my = l1 * e1y * e1y
        ngx = gp1 * e1x
        ngy = gp1 * e1y
    return mx, mxy, my, ngx, ngy


@kernel_inline
def _newton_step(acc, tp, mx, mxy, my, ngx, ngy, enough, lim):
    """Damped Newton step (motion_model = 0), limited to lim px; the system is then forgotten.

    The kept gradient is moved to the new pose (linearised: g <- rho (g + A d))
    so that old evidence is not applied twice. Returns (dx, dy).
    """
    axx = acc[ACC_FAST]
    axy = acc[ACC_FAST + 1]
    ayy = acc[ACC_FAST + 2]
    gx = acc[ACC_FAST + 3]
    gy = acc[ACC_FAST + 4]
    dx = 0.0
    dy = 0.0
    if enough:
        lm = tp[TP_FDAMP] * 0.5 * (mx + my) + 1e-12
        det = (mx + lm) * (my + lm) - mxy * mxy
        if det > 0.0:
            # (det <= 0 only by rounding with pose_fast_damping = 0: no step)
            dx = -tp[TP_FGAIN] * ((my + lm) * ngx - mxy * ngy) / det
            dy = -tp[TP_FGAIN] * ((mx + lm) * ngy - mxy * ngx) / det
    # forget, and move the kept gradient to the new pose (linearised:
    # g <- rho (g + A d)) so that old evidence is not applied twice
    dn = math.sqrt(dx * dx + dy * dy)
    if not dn == dn:
        dx = 0.0
        dy = 0.0
    elif dn > lim:
        dx *= lim / dn
        dy *= lim / dn
    rf = tp[TP_FFORGET]
    acc[ACC_FAST + 3] = rf * (gx + axx * dx + axy * dy)
    acc[ACC_FAST + 4] = rf * (gy + axy * dx + ayy * dy)
    for k in (0, 1, 2, 5):
        acc[ACC_FAST + k] *= rf
    return dx, dy


@kernel
def _fast_step(acc, tp, fs, q, pose, motion, dt_us):
    """Fast translation step from the phase-term system of the last dt_us; True if applied.

    Without the motion model: a damped Newton step on the system, which is
    then forgotten (rho) with its gradient moved to the new pose. With it: a
    Kalman filter on [tx, ty, vx, vy] (white acceleration, :mod:`motion_kf`),
    the system being the information-form measurement of the position. The
    step is limited to pose_fast_max_step tip radii and the velocity to
    motion_max_rs.
    """
    s_px = math.exp(q[0])
    lim = tp[TP_FMAX] * s_px
    enough = acc[ACC_FAST + 5] >= tp[TP_FMIN]
    mx, mxy, my, ngx, ngy = _drop_weak_direction(
        acc[ACC_FAST], acc[ACC_FAST + 1], acc[ACC_FAST + 2], acc[ACC_FAST + 3],
        acc[ACC_FAST + 4], tp[TP_FANISO])
    if not motion:
        dx, dy = _newton_step(acc, tp, mx, mxy, my, ngx, ngy, enough, lim)
    else:
        dx, dy = _kf_step(acc, tp, fs, mx, mxy, my, ngx, ngy, enough, lim, s_px, dt_us)
    if dx == 0.0 and dy == 0.0:
        return False
    q[2] += dx
    q[3] += dy
    _pack_pose(q, pose)
    return True
