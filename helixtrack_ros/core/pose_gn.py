# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""Gauss-Newton pose refinement of HelixTrack (Sec. 3.5, Eq. loss, supplement S1).

Per event the GN accumulator adds the phase, radial, polarity and soft
annulus residuals with their analytic Jacobians (S1) to the upper triangle of
the 6x6 normal matrix A and the gradient g, and sums the soft band
occupancies of the Balanced Tip Occupancy (BTO) term with their Jacobians.
At a pose trigger :func:`_solve` adds the BTO penalties and the perspective
regulariser, damps the diagonal, solves A dq = -g (Cholesky) and applies
q <- q + Gamma dq; then A and g are multiplied by the forgetting factor rho.

Parameters are q_core = [log s, psi, tx, ty, p31, p32]. Phase residuals use
phi_eff = phi - zeta B psi: for zeta = +1 this is the paper's phi - B psi;
for zeta = -1 the sign of the psi term must flip to keep the paper's
invariance d eps / d psi = 0 (a rotation by psi shifts theta_zeta by -zeta
psi).

Deviations from the paper, each needed to hold the scale on rotors whose
edge events reach down to the hub (the release drifts 20-30 % there):

- BTO bands are Gaussian weights (the release's geometry: core band at r = 1
  of width sigma_core, inside / outside bands at 1 -+ delta of width
  sigma_band); p_in = C_in / C_core and p_out = C_out / C_core as in the
  main text. For a density that stops at the tip, p_in peaks at the true
  scale and falls on both sides, so the lower bound on p_in pins the tip.
- The BTO penalty and the perspective regulariser are multiplied by the
  batch's event count N: the paper's p are batch means, so its BTO gradient
  is N times weaker than the summed per-event data terms and cannot resist
  the radial term's outward pull (the release's drift).
- Polarity offsets: the EKF locks on the gate-weighted mode of the phase
  residuals, which for a blade with two edges is not the point midway
  between fixed c+ / c- (on the synthetic rotor it sits 0.2 rad from it);
  with fixed offsets the polarity term then has a non-zero mean that no
  rotation can absorb (eps is psi-invariant), so it drags centre and
  perspective and the RPM follows (0.5 % error). With ``pol_adapt`` the
  offsets are the ring-weighted circular means of the ON / OFF residuals
  (forgotten with rho like the normal equations), so the polarity term keeps
  its information (edge alignment across the disc) without the bias.
- Polarity-centred phase residual (``ekf_polarity``): a blade seen by an
  event camera has two edges, leading OFF and trailing ON for dark blades,
  so the residuals of Eq. (3) are bimodal and the EKF lock can slide from
  one edge to the other (a 0.3 % RPM wander on the synthetic rotor after a
  start with the centre 7 % off). With h = (c+ - c-) / 2 (adaptive, see
  above) the EKF and the GN phase term use eps - h for ON and eps + h for
  OFF events: both edges then agree on the blade centre. h = 0 (no
  polarity / edge correlation, or ``ekf_polarity`` = 0) is the paper.
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
from helixtrack_ros.core.homography import (
    _POSE_LEN,
    _backwarp1,
    _du_dq,
    _du_dq_s,
    _forward1,
    _pack_pose,
)
from helixtrack_ros.core.jit import fma, fma_inline, kernel
from helixtrack_ros.core.params import TrackerParams

# ---- GN parameter vector (float64) -------------------------------------------------------
G_B = 0
G_ZETA = 1
G_LPHI = 2
G_LR = 3
G_LPOL = 4
G_LBAND = 5
G_LBTO = 6
G_LREG = 7
G_COFF = 8
G_CON = 9
G_CPOL = 10
G_CB = 11
G_BTAU = 12
G_RIN = 13
G_ROUT = 14
G_HPHI = 15
G_HR = 16
G_SC = 17          # effective core band width (>= bto_min_px / s)
G_DELTA = 18       # effective band offset
G_SB = 19          # effective inside / outside band width
G_OTAU = 20
G_PINLO = 21
G_PINHI = 22
G_POUTLO = 23
G_POUTHI = 24
G_DAMP = 25
G_GS = 26
G_GR = 27
G_GT = 28
G_GP = 29
G_FORGET = 30
G_MAXSTEP = 31
G_KAPPA = 32
G_INV2SR2 = 33
G_SC0 = 34         # configured widths (before the pixel floor)
G_DELTA0 = 35
G_SB0 = 36
G_MINPX = 37
G_NSEC = 38        # BTO sectors
G_POLADAPT = 39    # 1: c+ / c- follow the observed residuals
G_POLH = 40        # polarity half-offset h of the centred phase residual (0 = paper)
G_FIXT = 41        # 1: the solve does not move tx, ty (the tracker's fast step does)
G_LEN = 42

# ---- accumulator layout (float64) --------------------------------------------------------
ACC_A = 0          # 36: A row-major, upper triangle filled
ACC_G = 36         # 6: gradient
ACC_N = 42         # events in the current batch
ACC_LOSS = 43      # data loss of the batch (diagnostics)
ACC_SEC = 44       # per BTO sector: C_core, C_in, C_out, then dC/dq (3 x 6)
SEC_LEN = 21
MAX_SECTORS = 16
ACC_POL = ACC_SEC + SEC_LEN * MAX_SECTORS  # 4: sum w cos eps, sum w sin eps for OFF, ON
# phase-term translation system of the fast pose step (tracker notes, beyond the paper):
# A_xx, A_xy, A_yy, g_x, g_y, sum of the phase gates; never touched by _solve
ACC_FAST = ACC_POL + 4
ACC_LEN = ACC_FAST + 6

_BTO_EPS = 1e-9
# events closer than this to the rotor centre (tip radii) carry no phase or radial
# direction (atan2 and |u| are not differentiable at u = 0): their Jacobians are 1 / r
_R_MIN = 1e-9


def pack_gn_params(params: TrackerParams, blades: int, zeta: int) -> np.ndarray:
    """Build the GN parameter vector from :class:`TrackerParams`.

    The band widths get their pixel floor at the first :func:`_set_bands`.
    """
    g = np.zeros(G_LEN)
    g[G_B] = blades
    g[G_ZETA] = 1.0 if zeta >= 0 else -1.0
    g[G_LPHI] = params.lambda_phi
    g[G_LR] = params.lambda_r
    g[G_LPOL] = params.lambda_pol
    g[G_LBAND] = params.lambda_band
    g[G_LBTO] = params.lambda_bto
    g[G_LREG] = params.lambda_reg
    g[G_CON] = params.pol_c_on_rad
    g[G_COFF] = params.pol_c_off_rad
    g[G_CPOL] = params.pol_scale
    g[G_CB] = params.band_scale
    g[G_BTAU] = params.band_tau
    g[G_RIN] = params.r_in
    g[G_ROUT] = params.r_out
    g[G_HPHI] = params.huber_phi_rad
    g[G_HR] = params.huber_r
    g[G_SC0] = params.bto_sigma_core
    g[G_DELTA0] = params.bto_delta
    g[G_SB0] = params.bto_sigma_band
    g[G_MINPX] = params.bto_min_px
    g[G_NSEC] = params.bto_sectors
    g[G_POLADAPT] = params.pol_adapt
    g[G_POLH] = 0.5 * (params.pol_c_on_rad - params.pol_c_off_rad) * params.ekf_polarity
    g[G_SC] = params.bto_sigma_core
    g[G_DELTA] = params.bto_delta
    g[G_SB] = params.bto_sigma_band
    g[G_OTAU] = params.bto_tau
    g[G_PINLO] = params.bto_p_in_min
    g[G_PINHI] = params.bto_p_in_max
    g[G_POUTLO] = params.bto_p_out_min
    g[G_POUTHI] = params.bto_p_out_max
    g[G_DAMP] = params.gn_damping
    g[G_GS] = params.gamma_scale
    g[G_GR] = params.gamma_rot
    g[G_GT] = params.gamma_t
    g[G_GP] = params.gamma_persp
    g[G_FORGET] = params.gn_forget
    g[G_MAXSTEP] = params.gn_max_step
    g[G_KAPPA] = params.kappa
    g[G_FIXT] = 0.0
    g[G_INV2SR2] = 0.5 / params.sigma_ring ** 2
    return g


@kernel
def _set_bands(prm, scale_px):
    """Apply the pixel floor bto_min_px / s to the BTO band widths and offset."""
    floor = prm[G_MINPX] / max(scale_px, 1e-9)
    prm[G_SC] = max(prm[G_SC0], floor)
    prm[G_DELTA] = max(prm[G_DELTA0], floor)
    prm[G_SB] = max(prm[G_SB0], floor)


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


@fma
def _accumulate(acc, prm, pose, zx, zy, ux, uy, r, theta, eps, w, pol):
    """Add one event's residuals to the normal equations (S1, upper triangle).

    theta = atan2(zeta u_y, u_x) is the event's blade angle (Eq. 3, already
    computed by the caller; it also gives the BTO sector). eps is the
    (polarity-centred, see module notes) wrapped phase residual (Eq. 3) and
    w = w_vm(eps) w_ring(r) the gate product; both are frozen (Gauss-Newton
    with frozen gates). The polarity term and the c+ / c-
    statistics use the plain residual eps + (h for ON, -h for OFF).
    J_phi and J_r are the only Jacobian directions (J_pol ~ J_phi,
    J_in, J_out ~ J_r), so A gets two weighted rank-1 updates, written out
    on scalars. Terms far from their support are skipped: annulus barriers
    more than 6 tau inside the annulus (value and slope below 2.5e-3 of
    their scale, below 6e-6 in A) and BTO bands beyond 5 sigma. An event at
    the rotor centre (r <= _R_MIN, reachable with ``r_in = 0``) is skipped:
    its Jacobians are undefined (1 / r) and it tells nothing about the pose.
    """
    if not r > _R_MIN:
        return
    p0, p1, p2, p3, p4, p5, q0, q1, q2, q3, q4, q5 = _event_jac_s(
        pose[0], pose[1], pose[4], pose[5], prm[G_B] * prm[G_ZETA], zx, zy, ux, uy, r)
    er = r - 1.0
    # Huber weights w_H = min(1, c / |eps|)
    hphi = 1.0
    if abs(eps) > prm[G_HPHI]:
        hphi = prm[G_HPHI] / abs(eps)
    hr = 1.0
    if abs(er) > prm[G_HR]:
        hr = prm[G_HR] / abs(er)
    # event gates g_phi = lambda_phi w w_H, g_r = lambda_r w w_H
    gphi = prm[G_LPHI] * w * hphi
    gr = prm[G_LR] * w * hr
    # polarity: delta = wrap(eps - c_p), eps_pol = c_pol sin(delta / 2)
    cp = prm[G_CON] if pol != 0 else prm[G_COFF]
    eraw = eps + (prm[G_POLH] if pol != 0 else -prm[G_POLH])
    delta = _wrap_pi(eraw - cp)
    # half-angle identities: cos(delta / 2) >= 0 on [-pi, pi)
    cd = _cos_poly(delta)
    epol = prm[G_CPOL] * math.copysign(math.sqrt(max(0.5 * (1.0 - cd), 0.0)), delta)
    kpol = prm[G_CPOL] * 0.5 * math.sqrt(max(0.5 * (1.0 + cd), 0.0))
    # soft annulus barriers eps_in / eps_out = c_b softplus_tau(.), J = -+c_b sigma(.) J_r
    tau = prm[G_BTAU]
    ein = 0.0
    kin = 0.0
    if prm[G_RIN] - r > -6.0 * tau:
        sp, sg = _softplus_sigmoid(prm[G_RIN] - r, tau)
        ein = prm[G_CB] * sp
        kin = -prm[G_CB] * sg
    eout = 0.0
    kout = 0.0
    if r - prm[G_ROUT] > -6.0 * tau:
        sp, sg = _softplus_sigmoid(r - prm[G_ROUT], tau)
        eout = prm[G_CB] * sp
        kout = prm[G_CB] * sg
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
        e0 = er
        e1 = r - (1.0 - dl)
        e2 = r - (1.0 + dl)
        isc2 = 1.0 / (sc * sc)
        isb2 = 1.0 / (sb * sb)
        m0 = _exp_neg(-0.5 * e0 * e0 * isc2)
        m1 = _exp_neg(-0.5 * e1 * e1 * isb2)
        m2 = _exp_neg(-0.5 * e2 * e2 * isb2)
        nsf = prm[G_NSEC]
        sec = 0
        # sector s: atan2(u_y, u_x) + pi + pi / ns in [s, s + 1) 2 pi / ns; the
        # boundaries, odd multiples of pi / ns, are never on pixel rows, columns or
        # diagonals through the centre
        if nsf == 8.0:
            # (the default) without an angle: rotate u by 9 pi / 8, take the octant of
            # the result from its signs and |a| < |b|; known early, the sector's address
            # does not hold up the accumulation (-20 % time per event)
            a = ux * _COS_9PI8 - uy * _SIN_9PI8
            b = ux * _SIN_9PI8 + uy * _COS_9PI8
            turn = np.int64(b < 0.0) != np.int64(a < 0.0)
            sec = 4 * np.int64(b < 0.0) + 2 * np.int64(turn) + np.int64(
                (abs(a) < abs(b)) != turn)
        elif nsf > 1.0:
            ns = int(nsf)
            # atan2(u_y, u_x) = zeta theta (the same sector for u_y = -0.0 and +0.0)
            ang = prm[G_ZETA] * theta + math.pi + math.pi / ns
            sec = int(ang * (ns / (2.0 * math.pi)))
            if sec >= ns:
                sec -= ns
        base = ACC_SEC + SEC_LEN * sec
        acc[base] += m0
        acc[base + 1] += m1
        acc[base + 2] += m2
        # dm/dq = -m (r - c) / sigma^2 J_r
        d0 = -m0 * e0 * isc2
        d1 = -m1 * e1 * isb2
        d2 = -m2 * e2 * isb2
        acc[base + 3] += d0 * q0
        acc[base + 4] += d0 * q1
        acc[base + 5] += d0 * q2
        acc[base + 6] += d0 * q3
        acc[base + 7] += d0 * q4
        acc[base + 8] += d0 * q5
        acc[base + 9] += d1 * q0
        acc[base + 10] += d1 * q1
        acc[base + 11] += d1 * q2
        acc[base + 12] += d1 * q3
        acc[base + 13] += d1 * q4
        acc[base + 14] += d1 * q5
        acc[base + 15] += d2 * q0
        acc[base + 16] += d2 * q1
        acc[base + 17] += d2 * q2
        acc[base + 18] += d2 * q3
        acc[base + 19] += d2 * q4
        acc[base + 20] += d2 * q5
    # circular statistics of eps per polarity (ring-weighted) for the adaptive c+ / c-
    wr = _exp_neg(-er * er * prm[G_INV2SR2])
    eraw = _wrap_pi(eraw)
    ce = _cos_poly(eraw)
    kp = ACC_POL + (2 if pol != 0 else 0)
    acc[kp] += wr * ce
    acc[kp + 1] += wr * math.copysign(math.sqrt(max(1.0 - ce * ce, 0.0)), eraw)


@kernel
def _bto_add(A, g, acc, prm, weight):
    """Add the BTO penalty's GN terms and return its value.

    Per angular sector s (``bto_sectors``; 1 = the paper's single term) the
    occupancies p = C_band / (C_band + C_core) of the inside and outside
    bands are computed; each active bound gives a hinge residual
    e = softplus_tau(s), s = p_lo - p or p - p_hi, weighted as
    (weight / sectors) * 0.5 e^2: J_e = sigma(s / tau) J_s,
    A += w J_e J_e^T, g += w e J_e.

    Notes
    -----
    Deviations from S1, all for a stable, unbiased tip: (i) the paper's
    p = C_band / C_core is unbounded when the core band empties, the
    bounded ratio keeps the GN step sane; (ii) the paper's penalty is a plain
    softplus with A += phi'' J_s J_s^T, whose curvature vanishes once
    s >> tau so the GN step explodes exactly when the penalty matters; the
    squared hinge (the paper's own form for the band barriers) does not;
    (iii) one scalar BTO fixes only the mean tip radius, sectors pin the
    tip ellipse (scale, centre and the perspective terms).
    """
    tau = prm[G_OTAU]
    ns = int(prm[G_NSEC])
    wsec = weight / ns
    dp = np.empty(6)
    value = 0.0
    for sec in range(ns):
        base = ACC_SEC + SEC_LEN * sec
        cc = acc[base]
        for band in range(2):
            cb = acc[base + 1 + band]
            den = cb + cc + _BTO_EPS
            # p = C_band / (C_band + C_core)
            p = cb / den
            off = base + 3 + 6 * (band + 1)
            for k in range(6):
                # dp/dq = (C_core dC_band - C_band dC_core) / (C_band + C_core)^2
                dp[k] = (cc * acc[off + k] - cb * acc[base + 3 + k]) / (den * den)
            for side in range(2):
                bound = prm[G_PINLO + 2 * band + side]
                if bound < 0.0:
                    continue
                sgn = -1.0 if side == 0 else 1.0
                s = sgn * (p - bound)
                e = _softplus(s, tau)
                de = _sigmoid(s / tau) * sgn
                value += 0.5 * wsec * e * e
                for i in range(6):
                    g[i] += wsec * e * de * dp[i]
                    for j in range(6):
                        A[i, j] += wsec * de * de * dp[i] * dp[j]
    return value


@kernel
def _cholesky_solve(A, b, x):
    """Solve A x = b for symmetric positive definite 6x6 A (in place on a copy)."""
    n = 6
    L = np.zeros((n, n))
    for i in range(n):
        for j in range(i + 1):
            s = A[i, j]
            for k in range(j):
                s -= L[i, k] * L[j, k]
            if i == j:
                if s <= 0.0:
                    return False
                L[i, i] = math.sqrt(s)
            else:
                L[i, j] = s / L[j, j]
    y = np.zeros(n)
    for i in range(n):
        s = b[i]
        for k in range(i):
            s -= L[i, k] * y[k]
        y[i] = s / L[i, i]
    for i in range(n - 1, -1, -1):
        s = y[i]
        for k in range(i + 1, n):
            s -= L[k, i] * x[k]
        x[i] = s / L[i, i]
    return True


@kernel
def _system(acc, prm, q, A, g):
    """Full GN system at q: accumulated data terms + BTO + regulariser (S1)."""
    for i in range(6):
        g[i] = acc[ACC_G + i]
        for j in range(i, 6):
            A[i, j] = acc[ACC_A + 6 * i + j]
            A[j, i] = A[i, j]
    n = acc[ACC_N]
    _bto_add(A, g, acc, prm, prm[G_LBTO] * n)
    # perspective regulariser 0.5 lambda_reg N (p31^2 + p32^2)
    lr = prm[G_LREG] * n
    A[4, 4] += lr
    A[5, 5] += lr
    g[4] += lr * q[4]
    g[5] += lr * q[5]


@kernel
def _tip_shift(q, step):
    """Largest image displacement [px] of 16 tip points (|u| = 1) under q -> q + step."""
    pa = np.empty(_POSE_LEN)
    pb = np.empty(_POSE_LEN)
    qb = np.empty(6)
    for k in range(6):
        qb[k] = q[k] + step[k]
    _pack_pose(q, pa)
    _pack_pose(qb, pb)
    worst = 0.0
    for j in range(16):
        a = 2.0 * math.pi * j / 16.0
        ux = math.cos(a)
        uy = math.sin(a)
        xa, ya = _forward1(pa, ux, uy)
        xb, yb = _forward1(pb, ux, uy)
        d = math.sqrt((xa - xb) ** 2 + (ya - yb) ** 2)
        if not d <= worst:
            worst = d
    return worst


@kernel
def _solve(acc, prm, q, pose, keep_gradient):
    """One damped GN step on the accumulated batch; then forget (Sec. 3.5).

    Returns True when q changed. A_ii <- A_ii (1 + mu) + mu; A dq = -g;
    q <- q + Gamma dq (each step limited by gn_max_step); A, g <- rho A, rho g
    (g is zeroed instead when keep_gradient is False).
    """
    A = np.empty((6, 6))
    g = np.empty(6)
    _system(acc, prm, q, A, g)
    mu = prm[G_DAMP]
    # psi is unobservable to first order (Sec. 3.2: d eps/d psi = 0, r is rotation
    # invariant): give it the stiffness of log-scale so noise cannot spin it
    A[1, 1] += A[0, 0]
    for i in range(6):
        A[i, i] = A[i, i] * (1.0 + mu) + mu
    rhs = np.empty(6)
    for i in range(6):
        rhs[i] = -g[i]
    dq = np.zeros(6)
    ok = _cholesky_solve(A, rhs, dq)
    changed = False
    if ok:
        gam = np.empty(6)
        gam[0] = prm[G_GS]
        gam[1] = prm[G_GR]
        gam[2] = prm[G_GT]
        gam[3] = prm[G_GT]
        gam[4] = prm[G_GP]
        gam[5] = prm[G_GP]
        step = np.empty(6)
        finite = True
        for k in range(6):
            step[k] = gam[k] * dq[k]
            if not math.isfinite(step[k]):
                finite = False
        if prm[G_FIXT] != 0.0:
            # the tracker's fast step owns the translation: the joint solution keeps
            # translation errors out of scale and perspective, its tx, ty are dropped
            step[2] = 0.0
            step[3] = 0.0
        if finite:
            # trust region: the tip circle may move by at most gn_max_step * s pixels
            # (rotation excluded: it does not move the circle; |d psi| <= gn_max_step)
            lim = prm[G_MAXSTEP] * math.exp(q[0])
            d_psi = step[1]
            step[1] = 0.0
            d = _tip_shift(q, step)
            if not d <= lim:
                # d = inf / nan (a tip point at the horizon): the step is not taken
                f = lim / d if d < math.inf else 0.0
                for k in range(6):
                    step[k] *= f
            step[1] = max(-prm[G_MAXSTEP], min(prm[G_MAXSTEP], d_psi))
            for k in range(6):
                if step[k] != 0.0:
                    q[k] += step[k]
                    changed = True
            _pack_pose(q, pose)
            _set_bands(prm, math.exp(q[0]))
    if prm[G_POLADAPT] != 0.0:
        # c- / c+ = circular mean of the OFF / ON residuals (see module notes)
        for k in range(2):
            c = acc[ACC_POL + 2 * k]
            s = acc[ACC_POL + 2 * k + 1]
            if c * c + s * s > 0.0:
                prm[G_COFF + k] = math.atan2(s, c)
        if prm[G_POLH] != 0.0:
            prm[G_POLH] = 0.5 * _wrap_pi(prm[G_CON] - prm[G_COFF])
    # exponential forgetting of the normal equations; occupancies restart
    rho = prm[G_FORGET]
    for i in range(36):
        acc[ACC_A + i] *= rho
    for i in range(6):
        acc[ACC_G + i] = acc[ACC_G + i] * rho if keep_gradient else 0.0
    for i in range(ACC_N, ACC_POL):
        acc[i] = 0.0
    for i in range(ACC_POL, ACC_POL + 4):
        acc[i] *= rho
    return changed


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


def _check_batch(x, y, p, phi_eff):
    x = np.ascontiguousarray(x, dtype=np.float64)
    y = np.ascontiguousarray(y, dtype=np.float64)
    p = np.ascontiguousarray(p, dtype=np.uint8)
    phi_eff = np.ascontiguousarray(phi_eff, dtype=np.float64)
    n = x.shape[0]
    if x.ndim != 1 or y.shape != (n,) or p.shape != (n,) or phi_eff.shape != (n,):
        raise ValueError('x, y, p and phi_eff must be 1-D arrays of equal length')
    return x, y, p, phi_eff


def _check_q(q_core):
    q = np.array(q_core, dtype=np.float64)
    if q.shape != (6,) or not np.all(np.isfinite(q)):
        raise ValueError('q_core must be a finite array of shape (6,)')
    return q


def event_terms(q_core: np.ndarray, x: np.ndarray, y: np.ndarray, p: np.ndarray,
                phi_eff_rad: np.ndarray, gn_params: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Residuals and Jacobians of every per-event term of Eq. (loss) (S1).

    Parameters
    ----------
    q_core : numpy.ndarray
        [log s, psi, tx, ty, p31, p32].
    x, y, p : numpy.ndarray
        Event pixels and polarities.
    phi_eff_rad : numpy.ndarray
        Effective phase phi - zeta B psi at each event's time (psi of q_core).
    gn_params : numpy.ndarray
        From :func:`pack_gn_params`.

    Returns
    -------
    res : numpy.ndarray
        (n, 6): eps_phi, eps_r, eps_pol, eps_in, eps_out, gate w_vm w_ring.
    jac : numpy.ndarray
        (n, 5, 6): d(eps_phi, eps_r, eps_pol, eps_in, eps_out)/dq_core.
    """
    q = _check_q(q_core)
    x, y, p, phi_eff = _check_batch(x, y, p, phi_eff_rad)
    pose = np.empty(_POSE_LEN)
    _pack_pose(q, pose)
    res = np.empty((x.shape[0], 6))
    jac = np.empty((x.shape[0], 5, 6))
    _event_terms_kernel(pose, np.asarray(gn_params, dtype=np.float64), x, y, p, phi_eff,
                        res, jac)
    return res, jac


def _batch_accumulators(q_core, x, y, p, phi_eff_rad, gn_params):
    """Validate a batch and accumulate its normal-equation terms at q (S1)."""
    q = _check_q(q_core)
    x, y, p, phi_eff = _check_batch(x, y, p, phi_eff_rad)
    prm = np.array(gn_params, dtype=np.float64)
    pose = np.empty(_POSE_LEN)
    _pack_pose(q, pose)
    _set_bands(prm, math.exp(q[0]))
    acc = np.zeros(ACC_LEN)
    _accumulate_batch(acc, prm, pose, x, y, p, phi_eff)
    return q, prm, acc


def normal_equations(q_core: np.ndarray, x: np.ndarray, y: np.ndarray, p: np.ndarray,
                     phi_eff_rad: np.ndarray,
                     gn_params: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """GN system of a batch at q: returns (A, g, acc) with A, g as in S1 (no damping)."""
    q, prm, acc = _batch_accumulators(q_core, x, y, p, phi_eff_rad, gn_params)
    A = np.empty((6, 6))
    g = np.empty(6)
    _system(acc, prm, q, A, g)
    return A, g, acc


def objective(q_core: np.ndarray, x: np.ndarray, y: np.ndarray, p: np.ndarray,
              phi_eff_rad: np.ndarray, gn_params: np.ndarray) -> float:
    """Batch objective L(q) of Eq. (loss) with gates recomputed at q.

    phi_eff_rad is the effective phase for the psi of ``q_core``.
    """
    q, prm, acc = _batch_accumulators(q_core, x, y, p, phi_eff_rad, gn_params)
    A = np.zeros((6, 6))
    g = np.zeros(6)
    n = acc[ACC_N]
    value = acc[ACC_LOSS] + _bto_add(A, g, acc, prm, prm[G_LBTO] * n)
    value += 0.5 * prm[G_LREG] * n * (q[4] ** 2 + q[5] ** 2)
    return float(value)


def bto_occupancy(q_core: np.ndarray, x: np.ndarray, y: np.ndarray,
                  gn_params: np.ndarray) -> tuple[float, float, np.ndarray, np.ndarray]:
    """p_in, p_out of the BTO term over all sectors and their gradients dp/dq_core (S1)."""
    q = _check_q(q_core)
    n = np.asarray(x).shape[0]
    x, y, p, phi = _check_batch(x, y, np.zeros(n, np.uint8), np.zeros(n))
    prm = np.array(gn_params, dtype=np.float64)
    pose = np.empty(_POSE_LEN)
    _pack_pose(q, pose)
    _set_bands(prm, math.exp(q[0]))
    acc = np.zeros(ACC_LEN)
    _accumulate_batch(acc, prm, pose, x, y, p, phi)
    sec = acc[ACC_SEC:ACC_SEC + SEC_LEN * MAX_SECTORS].reshape(MAX_SECTORS, SEC_LEN)
    c = sec[:, :3].sum(axis=0)
    dc = sec[:, 3:].sum(axis=0).reshape(3, 6)
    out = []
    for band in (1, 2):
        den = c[band] + c[0] + _BTO_EPS
        out.append((c[band] / den, (c[0] * dc[band] - c[band] * dc[0]) / den ** 2))
    return float(out[0][0]), float(out[1][0]), out[0][1], out[1][1]


class PoseGN:
    """Array-backed GN pose refiner (one rotor): accumulate batches, solve.

    Parameters
    ----------
    q_core : numpy.ndarray
        Initial [log s, psi, tx, ty, p31, p32].
    params : TrackerParams
        Weights, bands, gains, damping and forgetting.
    blades : int
        B.
    zeta : int
        Rotation sign +1 / -1.
    """

    def __init__(self, q_core: np.ndarray, params: TrackerParams, blades: int,
                 zeta: int) -> None:
        if zeta not in (-1, 1) or not 1 <= int(blades) <= 16:
            raise ValueError('PoseGN: zeta must be +-1 and blades in 1..16')
        self.q = _check_q(q_core)
        self.prm = pack_gn_params(params, int(blades), int(zeta))
        self.pose = np.empty(_POSE_LEN)
        _pack_pose(self.q, self.pose)
        _set_bands(self.prm, math.exp(self.q[0]))
        self.acc = np.zeros(ACC_LEN)

    def accumulate(self, x: np.ndarray, y: np.ndarray, p: np.ndarray,
                   phi_rad: np.ndarray) -> int:
        """Add a batch; phi_rad is the EKF phase phi at each event. Returns events used."""
        x, y, p, phi = _check_batch(x, y, p, phi_rad)
        phi_eff = phi - self.prm[G_ZETA] * self.prm[G_B] * self.q[1]
        return int(_accumulate_batch(self.acc, self.prm, self.pose, x, y, p, phi_eff))

    def solve(self, keep_gradient: bool = True) -> bool:
        """One damped GN step (q updated in place); returns True if q changed."""
        return bool(_solve(self.acc, self.prm, self.q, self.pose, bool(keep_gradient)))
