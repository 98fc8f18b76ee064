# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""Gauss-Newton pose step of HelixTrack (Sec. 3.5, supplement S1): BTO, damping, solve.

At a pose trigger :func:`_solve` adds the BTO penalties and the perspective
regulariser to the accumulated normal equations (:func:`_system`), damps
the diagonal, solves A dq = -g (Cholesky), applies q <- q + Gamma dq within
a trust region on the tip circle, and forgets: A and g are multiplied by rho.
"""

import math

import numpy as np

from helixtrack_ros.core.fastmath import (
    _sigmoid,
    _softplus,
    _wrap_pi,
)
from helixtrack_ros.core.gn_layout import (
    _BTO_EPS,
    ACC_A,
    ACC_G,
    ACC_N,
    ACC_POL,
    ACC_SEC,
    G_BHINGE,
    G_BRATIO,
    G_BWN,
    G_COFF,
    G_CON,
    G_DAMP,
    G_FIXT,
    G_FORGET,
    G_GP,
    G_GR,
    G_GS,
    G_GT,
    G_LBTO,
    G_LOGS,
    G_LREG,
    G_MAXSTEP,
    G_NSEC,
    G_OTAU,
    G_PINLO,
    G_POLADAPT,
    G_POLH,
    G_PSISTIFF,
    SEC_C,
    SEC_DC,
    SEC_LEN,
    _set_bands,
)
from helixtrack_ros.core.homography import (
    _POSE_LEN,
    _forward1,
    _pack_pose,
)
from helixtrack_ros.core.jit import kernel, kernel_inline


@kernel_inline
def _bto_ratio(acc, base, band, bounded, dp):
    """p of one band of a sector, and dp/dq into ``dp`` (Sec. 3.5).

    bounded: p = C_band / (C_band + C_core) (ours); else the paper's
    p = C_band / (C_core + eps).
    """
    cc = acc[base + SEC_C]
    cb = acc[base + SEC_C + 1 + band]
    off = base + SEC_DC + 6 * (band + 1)
    if bounded:
        den = cb + cc + _BTO_EPS
        p = cb / den
        for k in range(6):
            dp[k] = (cc * acc[off + k] - cb * acc[base + SEC_DC + k]) / (den * den)
        return p
    den = cc + _BTO_EPS
    p = cb / den
    for k in range(6):
        # dp/dq = (dC_band - p dC_core) / (C_core + eps)
        dp[k] = (acc[off + k] - p * acc[base + SEC_DC + k]) / den
    return p


@kernel_inline
def _bto_bound(prm, band, side, p, tau):
    """One bound of a band's occupancy p (S1): (sgn, s, e), sgn 0 when it is off.

    s = p_lo - p (side 0) or p - p_hi (side 1), e = softplus_tau(s); a
    negative bound is off.
    """
    bound = prm[G_PINLO + 2 * band + side]
    if bound < 0.0:
        return 0.0, 0.0, 0.0
    sgn = -1.0 if side == 0 else 1.0
    s = sgn * (p - bound)
    return sgn, s, _softplus(s, tau)


@kernel_inline
def _bto_hinge(A, g, e, sig, sgn, dp, w):
    """GN terms of one bound as a squared hinge 0.5 w e^2 (ours); returns its value.

    For s = sgn (p - bound): e = softplus_tau(s), J_e = sigma(s / tau) J_s with
    J_s = sgn dp.
    """
    de = sig * sgn
    for i in range(6):
        g[i] += w * e * de * dp[i]
        for j in range(6):
            A[i, j] += w * de * de * dp[i] * dp[j]
    return 0.5 * w * e * e


@kernel_inline
def _bto_softplus(A, g, e, sig, sgn, dp, w, tau):
    """GN terms of one bound as the paper's w softplus_tau(s) (S1); returns its value.

    g += w phi'(s) J_s, A += w phi''(s) J_s J_s^T with phi' = sigma(s / tau)
    = sig, phi'' = sig (1 - sig) / tau and J_s = sgn dp.
    """
    curv = w * sig * (1.0 - sig) / tau
    for i in range(6):
        g[i] += w * sig * sgn * dp[i]
        for j in range(6):
            A[i, j] += curv * dp[i] * dp[j]
    return w * e


@kernel
def _bto_add_switched(A, g, acc, prm, weight):
    """:func:`_bto_add` with the paper's ratio and / or penalty (``bto_ratio`` / ``bto_hinge`` 0).

    Per sector and band p (:func:`_bto_ratio`), per active bound the
    squared hinge (:func:`_bto_hinge`) or the paper's softplus
    (:func:`_bto_softplus`). A kernel of its own: :func:`_bto_add`'s code is
    left as it was, so the default configuration keeps its last bits (numba
    compiles both with the caller's fused multiply-adds, which depend on the
    shape of the code).
    """
    tau = prm[G_OTAU]
    ns = int(prm[G_NSEC])
    wsec = weight / ns
    bounded = prm[G_BRATIO] != 0.0
    hinge = prm[G_BHINGE] != 0.0
    dp = np.empty(6)
    value = 0.0
    for sec in range(ns):
        base = ACC_SEC + SEC_LEN * sec
        for band in range(2):
            p = _bto_ratio(acc, base, band, bounded, dp)
            for side in range(2):
                sgn, s, e = _bto_bound(prm, band, side, p, tau)
                if sgn == 0.0:
                    continue
                sig = _sigmoid(s / tau)
                if hinge:
                    value += _bto_hinge(A, g, e, sig, sgn, dp, wsec)
                else:
                    value += _bto_softplus(A, g, e, sig, sgn, dp, wsec, tau)
    return value


@kernel
def _bto_add(A, g, acc, prm, weight):
    """Add the BTO penalty's GN terms and return its value.

    Per angular sector s (``bto_sectors``; 1 = the paper's single term) the
    occupancies p = C_band / (C_band + C_core) of the inside and outside
    bands are computed; each active bound gives a hinge residual
    e = softplus_tau(s), s = p_lo - p or p - p_hi, weighted as
    (weight / sectors) * 0.5 e^2: J_e = sigma(s / tau) J_s,
    A += w J_e J_e^T, g += w e J_e. With ``bto_ratio`` or ``bto_hinge`` 0
    (the paper's forms) :func:`_bto_add_switched` runs instead.

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
    if prm[G_BRATIO] == 0.0 or prm[G_BHINGE] == 0.0:
        return _bto_add_switched(A, g, acc, prm, weight)
    tau = prm[G_OTAU]
    ns = int(prm[G_NSEC])
    wsec = weight / ns
    dp = np.empty(6)
    value = 0.0
    for sec in range(ns):
        base = ACC_SEC + SEC_LEN * sec
        cc = acc[base + SEC_C]
        for band in range(2):
            cb = acc[base + SEC_C + 1 + band]
            den = cb + cc + _BTO_EPS
            # p = C_band / (C_band + C_core)
            p = cb / den
            off = base + SEC_DC + 6 * (band + 1)
            for k in range(6):
                # dp/dq = (C_core dC_band - C_band dC_core) / (C_band + C_core)^2
                dp[k] = (cc * acc[off + k] - cb * acc[base + SEC_DC + k]) / (den * den)
            for side in range(2):
                sgn, s, e = _bto_bound(prm, band, side, p, tau)
                if sgn == 0.0:
                    continue
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


@kernel_inline
def _bto_reg_weight(acc, prm):
    """N, the batch's event count, when BTO and regulariser weigh per event (ours); else 1."""
    return acc[ACC_N] if prm[G_BWN] != 0.0 else 1.0


@kernel
def _system(acc, prm, q, A, g):
    """Full GN system at q: accumulated data terms + BTO + regulariser (S1)."""
    for i in range(6):
        g[i] = acc[ACC_G + i]
        for j in range(i, 6):
            A[i, j] = acc[ACC_A + 6 * i + j]
            A[j, i] = A[i, j]
    # BTO and the perspective regulariser 0.5 lambda_reg (p31^2 + p32^2), per batch event
    # (times N) or once per batch as Eq. (loss)
    n = _bto_reg_weight(acc, prm)
    _bto_add(A, g, acc, prm, prm[G_LBTO] * n)
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


@kernel_inline
def _to_scale(A, g, s):
    """The system in s instead of log s (Eq. 1): d/ds = (1 / s) d/d(log s) on row / column 0."""
    inv = 1.0 / s
    for k in range(6):
        A[0, k] *= inv
        A[k, 0] *= inv
    g[0] *= inv


@kernel_inline
def _log_step(s, ds):
    """The step of log s for the step ds of s; NaN (no step) when s + ds <= 0."""
    return math.log((s + ds) / s) if s + ds > 0.0 else math.nan


@kernel
def _solve(acc, prm, q, pose, keep_gradient):  # noqa: C901, PLR0912, PLR0915 (numba kernel)
    """One damped GN step on the accumulated batch; then forget (Sec. 3.5).

    Returns True when q changed. A_ii <- A_ii (1 + mu) + mu; A dq = -g;
    q <- q + Gamma dq (each step limited by gn_max_step); A, g <- rho A, rho g
    (g is zeroed instead when keep_gradient is False). The accumulators hold
    the system in log s; with ``gn_log_scale`` 0 the step is taken in s
    (Eq. 1), with ``gn_psi_stiff`` 0 without the stiffness of psi (Sec. 3.5).
    """
    A = np.empty((6, 6))
    g = np.empty(6)
    _system(acc, prm, q, A, g)
    mu = prm[G_DAMP]
    if prm[G_PSISTIFF] != 0.0:
        # psi is unobservable to first order (Sec. 3.2: d eps/d psi = 0, r is rotation
        # invariant): give it the stiffness of log-scale so noise cannot spin it
        A[1, 1] += A[0, 0]
    log_scale = prm[G_LOGS] != 0.0
    if not log_scale:
        _to_scale(A, g, math.exp(q[0]))
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
        if not log_scale:
            step[0] = _log_step(math.exp(q[0]), step[0])
        for k in range(6):
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
        # c- / c+ = circular mean of the OFF / ON residuals (see pose_gn notes)
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
