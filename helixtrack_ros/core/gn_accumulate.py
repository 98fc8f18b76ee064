# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""Per-event Gauss-Newton accumulation of HelixTrack (Sec. 3.5, supplement S1).

Per event the phase, radial, polarity and soft annulus residuals of
Eq. (loss) are added with their analytic Jacobians to the upper triangle of
the 6x6 normal matrix A and the gradient g, and the soft band occupancies
of the BTO term are summed per sector with their Jacobians
(:func:`_accumulate`, on the tracker's per-event path: its steps are scalar
inline helpers). Also the batch and per-event-term kernels behind
:mod:`pose_gn`'s array API.
"""

import math

import numpy as np

from helixtrack_ros.core.fastmath import (
    _cos_poly,
    _exp_neg,
    _sigmoid,
    _softplus,
    _softplus_sigmoid,
    _wrap_pi,
)
from helixtrack_ros.core.gn_layout import (
    _R_MIN,
    ACC_FAST,
    ACC_G,
    ACC_LOSS,
    ACC_N,
    ACC_POL,
    ACC_SEC,
    G_B,
    G_BTAU,
    G_CB,
    G_COFF,
    G_CON,
    G_CPOL,
    G_DELTA,
    G_HPHI,
    G_HR,
    G_INV2SR2,
    G_KAPPA,
    G_LBAND,
    G_LPHI,
    G_LPOL,
    G_LR,
    G_NSEC,
    G_POLH,
    G_RIN,
    G_ROUT,
    G_SB,
    G_SC,
    G_ZETA,
    SEC_C,
    SEC_DC,
    SEC_LEN,
)
from helixtrack_ros.core.homography import (
    _backwarp1,
    _du_dq,
    _du_dq_s,
)
from helixtrack_ros.core.jit import fma, fma_inline, kernel


@fma_inline
def _event_jac_s(a, b, p, r31, bz, zx, zy, ux, uy, r):
    """J_phi (6) and J_r (6) of one event as 12 scalars (S1).

    J_r = u^T (du/dq) / r; J_phi = d phi_eff/dq - B d theta_zeta/du du/dq with
    d theta_zeta/du = zeta (-u_y, u_x) / r^2 and d phi_eff / d psi = -zeta B
    (bz = zeta B). At the rotor centre (r <= _R_MIN, e.g. ``r_in = 0``) both are
    undefined (1 / r): all twelve are 0 there (the event carries no information).
    """
    if not r > _R_MIN:
        return (0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0)
    j00, j01, j02, j03, j04, j05, j10, j11, j12, j13, j14, j15 = _du_dq_s(
        a, b, p, r31, zx, zy, ux, uy)
    ir = 1.0 / r
    cr = ux * ir
    sr = uy * ir
    f = -bz * ir
    return (f * (cr * j10 - sr * j00), f * (cr * j11 - sr * j01) - bz,
            f * (cr * j12 - sr * j02), f * (cr * j13 - sr * j03),
            f * (cr * j14 - sr * j04), f * (cr * j15 - sr * j05),
            cr * j00 + sr * j10, cr * j01 + sr * j11, cr * j02 + sr * j12,
            cr * j03 + sr * j13, cr * j04 + sr * j14, cr * j05 + sr * j15)


@kernel
def _event_jac(pose, prm, zx, zy, ux, uy, r, J, jphi, jr):
    """Fill J = du/dq, J_r = d r / dq and J_phi = d eps_phi / dq (S1) for one event."""
    _du_dq(pose, zx, zy, ux, uy, J)
    j = _event_jac_s(pose[0], pose[1], pose[4], pose[5], prm[G_B] * prm[G_ZETA], zx, zy, ux,
                     uy, r)
    for k in range(6):
        jphi[k] = j[k]
        jr[k] = j[6 + k]


_COS_9PI8 = math.cos(9.0 * math.pi / 8.0)
_SIN_9PI8 = math.sin(9.0 * math.pi / 8.0)


@fma_inline
def _huber(e, c):
    """Huber weight w_H = min(1, c / |e|) (Sec. 3.5)."""
    h = 1.0
    if abs(e) > c:
        h = c / abs(e)
    return h


@fma_inline
def _polarity_residual(eps, pol, c_on, c_off, h, c_pol):
    """Polarity residual eps_pol = c_pol sin(delta / 2), delta = wrap(eps - c_p) (Sec. 3.5).

    eps is the polarity-centred phase residual; the polarity term uses the
    plain one, eraw = eps + (h for ON, -h for OFF). Half-angle identities:
    cos(delta / 2) >= 0 on [-pi, pi). Returns eraw, eps_pol and
    d eps_pol / d eps.
    """
    cp = c_on if pol != 0 else c_off
    eraw = eps + (h if pol != 0 else -h)
    delta = _wrap_pi(eraw - cp)
    cd = _cos_poly(delta)
    epol = c_pol * math.copysign(math.sqrt(max(0.5 * (1.0 - cd), 0.0)), delta)
    kpol = c_pol * 0.5 * math.sqrt(max(0.5 * (1.0 + cd), 0.0))
    return eraw, epol, kpol


@fma_inline
def _annulus_barriers(r, r_in, r_out, tau, cb):
    """Soft annulus residuals eps_in / eps_out = c_b softplus_tau(.) and their slopes in r.

    J_in = -c_b sigma(.) J_r, J_out = c_b sigma(.) J_r (Sec. 3.5). A barrier
    more than 6 tau inside the annulus is skipped (value and slope below
    2.5e-3 of their scale). Returns eps_in, k_in, eps_out, k_out.
    """
    ein = 0.0
    kin = 0.0
    if r_in - r > -6.0 * tau:
        sp, sg = _softplus_sigmoid(r_in - r, tau)
        ein = cb * sp
        kin = -cb * sg
    eout = 0.0
    kout = 0.0
    if r - r_out > -6.0 * tau:
        sp, sg = _softplus_sigmoid(r - r_out, tau)
        eout = cb * sp
        kout = cb * sg
    return ein, kin, eout, kout


@fma_inline
def _bto_sector(ux, uy, theta, nsf, zeta):
    """BTO sector s of u: atan2(u_y, u_x) + pi + pi / ns in [s, s + 1) 2 pi / ns.

    The boundaries, odd multiples of pi / ns, are never on pixel rows,
    columns or diagonals through the centre.
    """
    sec = 0
    if nsf == 8.0:
        # (the default) without an angle: rotate u by 9 pi / 8, take the octant of
        # the result from its signs and |a| < |b|; known early, the sector's address
        # does not hold up the accumulation (docs/DESIGN.md)
        a = ux * _COS_9PI8 - uy * _SIN_9PI8
        b = ux * _SIN_9PI8 + uy * _COS_9PI8
        turn = np.int64(b < 0.0) != np.int64(a < 0.0)
        sec = 4 * np.int64(b < 0.0) + 2 * np.int64(turn) + np.int64(
            (abs(a) < abs(b)) != turn)
    elif nsf > 1.0:
        ns = int(nsf)
        # atan2(u_y, u_x) = zeta theta (the same sector for u_y = -0.0 and +0.0)
        ang = zeta * theta + math.pi + math.pi / ns
        sec = int(ang * (ns / (2.0 * math.pi)))
        if sec >= ns:
            sec -= ns
    return sec


@fma_inline
def _bto_bands(r, er, sc, sb, dl):
    """Soft occupancies of the BTO bands at 1, 1 - delta, 1 + delta and their slopes in r.

    Gaussian bands m = exp(-(r - c)^2 / (2 sigma^2)); dm/dq = -m (r - c) /
    sigma^2 J_r. Returns m_core, m_in, m_out, d_core, d_in, d_out.
    """
    e0 = er
    e1 = r - (1.0 - dl)
    e2 = r - (1.0 + dl)
    isc2 = 1.0 / (sc * sc)
    isb2 = 1.0 / (sb * sb)
    m0 = _exp_neg(-0.5 * e0 * e0 * isc2)
    m1 = _exp_neg(-0.5 * e1 * e1 * isb2)
    m2 = _exp_neg(-0.5 * e2 * e2 * isb2)
    # dm/dq = -m (r - c) / sigma^2 J_r
    d0 = -m0 * e0 * isc2
    d1 = -m1 * e1 * isb2
    d2 = -m2 * e2 * isb2
    return m0, m1, m2, d0, d1, d2


@fma
def _accumulate(acc, prm, pose, zx, zy, ux, uy, r, theta, eps, w, pol):  # noqa: C901, PLR0912, PLR0915 (numba kernel)
    """Add one event's residuals to the normal equations (S1, upper triangle).

    theta = atan2(zeta u_y, u_x) is the event's blade angle (Eq. 3, already
    computed by the caller; it also gives the BTO sector). eps is the
    (polarity-centred, see :mod:`pose_gn`) wrapped phase residual (Eq. 3) and
    w = w_vm(eps) w_ring(r) the gate product; both are frozen (Gauss-Newton
    with frozen gates). J_phi and J_r are the only Jacobian directions
    (J_pol ~ J_phi, J_in, J_out ~ J_r), so A gets two weighted rank-1
    updates, written out on scalars. BTO bands beyond 5 sigma are skipped.
    An event at the rotor centre (r <= _R_MIN, reachable with ``r_in = 0``)
    is skipped: its Jacobians are undefined (1 / r).
    """
    if not r > _R_MIN:
        return
    p0, p1, p2, p3, p4, p5, q0, q1, q2, q3, q4, q5 = _event_jac_s(
        pose[0], pose[1], pose[4], pose[5], prm[G_B] * prm[G_ZETA], zx, zy, ux, uy, r)
    er = r - 1.0
    # event gates g_phi = lambda_phi w w_H, g_r = lambda_r w w_H
    gphi = prm[G_LPHI] * w * _huber(eps, prm[G_HPHI])
    gr = prm[G_LR] * w * _huber(er, prm[G_HR])
    eraw, epol, kpol = _polarity_residual(eps, pol, prm[G_CON], prm[G_COFF], prm[G_POLH],
                                          prm[G_CPOL])
    ein, kin, eout, kout = _annulus_barriers(r, prm[G_RIN], prm[G_ROUT], prm[G_BTAU],
                                             prm[G_CB])
    lpol = prm[G_LPOL]
    lband = prm[G_LBAND]
    # A += a J_phi J_phi^T + b J_r J_r^T ; g += c J_phi + d J_r
    a = gphi + lpol * kpol * kpol
    b = gr + lband * (kin * kin + kout * kout)
    c = gphi * eps + lpol * epol * kpol
    d = gr * er + lband * (ein * kin + eout * kout)
    acc[0] += a * p0 * p0 + b * q0 * q0
    acc[1] += a * p0 * p1 + b * q0 * q1
    acc[2] += a * p0 * p2 + b * q0 * q2
    acc[3] += a * p0 * p3 + b * q0 * q3
    acc[4] += a * p0 * p4 + b * q0 * q4
    acc[5] += a * p0 * p5 + b * q0 * q5
    acc[7] += a * p1 * p1 + b * q1 * q1
    acc[8] += a * p1 * p2 + b * q1 * q2
    acc[9] += a * p1 * p3 + b * q1 * q3
    acc[10] += a * p1 * p4 + b * q1 * q4
    acc[11] += a * p1 * p5 + b * q1 * q5
    acc[14] += a * p2 * p2 + b * q2 * q2
    acc[15] += a * p2 * p3 + b * q2 * q3
    acc[16] += a * p2 * p4 + b * q2 * q4
    acc[17] += a * p2 * p5 + b * q2 * q5
    acc[21] += a * p3 * p3 + b * q3 * q3
    acc[22] += a * p3 * p4 + b * q3 * q4
    acc[23] += a * p3 * p5 + b * q3 * q5
    acc[28] += a * p4 * p4 + b * q4 * q4
    acc[29] += a * p4 * p5 + b * q4 * q5
    acc[35] += a * p5 * p5 + b * q5 * q5
    acc[ACC_G + 0] += c * p0 + d * q0
    acc[ACC_G + 1] += c * p1 + d * q1
    acc[ACC_G + 2] += c * p2 + d * q2
    acc[ACC_G + 3] += c * p3 + d * q3
    acc[ACC_G + 4] += c * p4 + d * q4
    acc[ACC_G + 5] += c * p5 + d * q5
    # the phase term alone, translation block (fast pose step)
    acc[ACC_FAST] += gphi * p2 * p2
    acc[ACC_FAST + 1] += gphi * p2 * p3
    acc[ACC_FAST + 2] += gphi * p3 * p3
    acc[ACC_FAST + 3] += gphi * eps * p2
    acc[ACC_FAST + 4] += gphi * eps * p3
    acc[ACC_FAST + 5] += gphi
    acc[ACC_LOSS] += 0.5 * (gphi * eps * eps + gr * er * er + lpol * epol * epol
                            + lband * (ein * ein + eout * eout))
    acc[ACC_N] += 1.0
    # BTO soft occupancies: Gaussian bands at 1, 1 - delta, 1 + delta, per sector
    sc = prm[G_SC]
    sb = prm[G_SB]
    dl = prm[G_DELTA]
    if abs(er) < dl + 5.0 * max(sc, sb):
        m0, m1, m2, d0, d1, d2 = _bto_bands(r, er, sc, sb, dl)
        base = ACC_SEC + SEC_LEN * _bto_sector(ux, uy, theta, prm[G_NSEC], prm[G_ZETA])
        acc[base + SEC_C] += m0
        acc[base + SEC_C + 1] += m1
        acc[base + SEC_C + 2] += m2
        base += SEC_DC
        acc[base] += d0 * q0
        acc[base + 1] += d0 * q1
        acc[base + 2] += d0 * q2
        acc[base + 3] += d0 * q3
        acc[base + 4] += d0 * q4
        acc[base + 5] += d0 * q5
        acc[base + 6] += d1 * q0
        acc[base + 7] += d1 * q1
        acc[base + 8] += d1 * q2
        acc[base + 9] += d1 * q3
        acc[base + 10] += d1 * q4
        acc[base + 11] += d1 * q5
        acc[base + 12] += d2 * q0
        acc[base + 13] += d2 * q1
        acc[base + 14] += d2 * q2
        acc[base + 15] += d2 * q3
        acc[base + 16] += d2 * q4
        acc[base + 17] += d2 * q5
    # circular statistics of eps per polarity (ring-weighted) for the adaptive c+ / c-
    wr = _exp_neg(-er * er * prm[G_INV2SR2])
    eraw = _wrap_pi(eraw)
    ce = _cos_poly(eraw)
    kp = ACC_POL + (2 if pol != 0 else 0)
    acc[kp] += wr * ce
    acc[kp + 1] += wr * math.copysign(math.sqrt(max(1.0 - ce * ce, 0.0)), eraw)


@kernel
def _accumulate_batch(acc, prm, pose, x, y, p, phi_eff):
    """Accumulate every in-annulus event of a batch at fixed per-event phi_eff."""
    bz = prm[G_B]
    r_in = prm[G_RIN]
    r_out = prm[G_ROUT]
    used = 0
    for i in range(x.shape[0]):
        zx = float(x[i])
        zy = float(y[i])
        ux, uy, _ = _backwarp1(pose, zx, zy)
        r = math.sqrt(ux * ux + uy * uy)
        # (r_in = 0: an event at the centre is not used, see _accumulate)
        if not (r >= r_in and r <= r_out and r > _R_MIN):
            continue
        theta = math.atan2(prm[G_ZETA] * uy, ux)
        off = prm[G_POLH] if p[i] != 0 else -prm[G_POLH]
        eps = _wrap_pi(phi_eff[i] - bz * theta - off)
        d = r - 1.0
        w = math.exp(prm[G_KAPPA] * (math.cos(eps) - 1.0) - d * d * prm[G_INV2SR2])
        _accumulate(acc, prm, pose, zx, zy, ux, uy, r, theta, eps, w, p[i])
        used += 1
    return used


@kernel
def _event_terms_kernel(pose, prm, x, y, p, phi_eff, res, jac):
    """Per-event residuals (phi, r, pol, in, out), gate w and their Jacobians (S1)."""
    J = np.empty((2, 6))
    jphi = np.empty(6)
    jr = np.empty(6)
    bz = prm[G_B]
    tau = prm[G_BTAU]
    for i in range(x.shape[0]):
        zx = float(x[i])
        zy = float(y[i])
        ux, uy, _ = _backwarp1(pose, zx, zy)
        r = math.sqrt(ux * ux + uy * uy)
        theta = math.atan2(prm[G_ZETA] * uy, ux)
        eraw = _wrap_pi(phi_eff[i] - bz * theta)
        eps = _wrap_pi(eraw - (prm[G_POLH] if p[i] != 0 else -prm[G_POLH]))
        _event_jac(pose, prm, zx, zy, ux, uy, r, J, jphi, jr)
        cp = prm[G_CON] if p[i] != 0 else prm[G_COFF]
        delta = _wrap_pi(eraw - cp)
        res[i, 0] = eps
        res[i, 1] = r - 1.0
        res[i, 2] = prm[G_CPOL] * math.sin(0.5 * delta)
        res[i, 3] = prm[G_CB] * _softplus(prm[G_RIN] - r, tau)
        res[i, 4] = prm[G_CB] * _softplus(r - prm[G_ROUT], tau)
        d = r - 1.0
        res[i, 5] = math.exp(prm[G_KAPPA] * (math.cos(eps) - 1.0) - d * d * prm[G_INV2SR2])
        kpol = prm[G_CPOL] * 0.5 * math.cos(0.5 * delta)
        kin = -prm[G_CB] * _sigmoid((prm[G_RIN] - r) / tau)
        kout = prm[G_CB] * _sigmoid((r - prm[G_ROUT]) / tau)
        for k in range(6):
            jac[i, 0, k] = jphi[k]
            jac[i, 1, k] = jr[k]
            jac[i, 2, k] = kpol * jphi[k]
            jac[i, 3, k] = kin * jr[k]
            jac[i, 4, k] = kout * jr[k]
