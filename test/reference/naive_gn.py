# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""Naive numpy twin of helixtrack_ros.core.pose_gn (S1 normal equations, BTO, solve).

Written from the equations, with full 6x6 outer products and numpy's
solver, for comparison against the numba kernels.
"""

import numpy as np

from . import naive_homography as nh


def softplus(s, tau):
    return tau * np.logaddexp(0.0, s / tau)


def sigmoid(x):
    return 0.5 * (1.0 + np.tanh(0.5 * x))


def wrap(a):
    return np.mod(a + np.pi, 2 * np.pi) - np.pi


def terms(q, x, y, p, phi_eff, P):
    """Per-event residuals, gate and Jacobians. P is a dict of parameters.

    Returns u, r, eps, res (n, 5), w (n,), jac (n, 5, 6).
    """
    u, Ju = nh.backwarp_jacobian(q, x, y)
    r = np.hypot(u[:, 0], u[:, 1])
    B, zeta = P['B'], P['zeta']
    theta = np.arctan2(zeta * u[:, 1], u[:, 0])
    eraw = wrap(phi_eff - B * theta)
    # polarity-centred phase residual: -h for ON, +h for OFF
    eps = wrap(eraw - np.where(p != 0, P['h'], -P['h']))
    jr = (u[:, 0:1] * Ju[:, 0] + u[:, 1:2] * Ju[:, 1]) / r[:, None]
    jphi = -B * zeta * (u[:, 0:1] * Ju[:, 1] - u[:, 1:2] * Ju[:, 0]) / r[:, None] ** 2
    jphi[:, 1] -= zeta * B
    cp = np.where(p != 0, P['c_on'], P['c_off'])
    delta = wrap(eraw - cp)
    tau = P['band_tau']
    # the kernels drop barrier terms more than 6 tau inside the annulus (value < 2.5e-3 tau)
    near_in = (P['r_in'] - r) > -6.0 * tau
    near_out = (r - P['r_out']) > -6.0 * tau
    res = np.stack([eps, r - 1.0, P['c_pol'] * np.sin(0.5 * delta),
                    np.where(near_in, P['c_b'] * softplus(P['r_in'] - r, tau), 0.0),
                    np.where(near_out, P['c_b'] * softplus(r - P['r_out'], tau), 0.0)], axis=1)
    kpol = P['c_pol'] * 0.5 * np.cos(0.5 * delta)
    kin = np.where(near_in, -P['c_b'] * sigmoid((P['r_in'] - r) / tau), 0.0)
    kout = np.where(near_out, P['c_b'] * sigmoid((r - P['r_out']) / tau), 0.0)
    jac = np.stack([jphi, jr, kpol[:, None] * jphi, kin[:, None] * jr, kout[:, None] * jr],
                   axis=1)
    w = np.exp(P['kappa'] * (np.cos(eps) - 1.0) - 0.5 * ((r - 1.0) / P['sigma_ring']) ** 2)
    return u, r, eps, res, w, jac


def bands(r, P, s_px):
    """Gaussian band weights (core, in, out) and their d/dr, with the pixel floor."""
    floor = P['min_px'] / s_px
    sc, dl, sb = max(P['sig_core'], floor), max(P['delta'], floor), max(P['sig_band'], floor)
    cs = np.array([1.0, 1.0 - dl, 1.0 + dl])
    ss = np.array([sc, sb, sb])
    m = np.exp(-0.5 * ((r[:, None] - cs) / ss) ** 2)
    # the kernels skip events farther than delta + 5 sigma from r = 1
    m[np.abs(r - 1.0) >= dl + 5.0 * max(sc, sb)] = 0.0
    dm = -m * (r[:, None] - cs) / ss ** 2
    return m, dm


def system(q, x, y, p, phi_eff, P):
    """(A, g, loss) of the batch at q: data terms in annulus + sectored BTO + regulariser."""
    u, r, eps, res, w, jac = terms(q, x, y, p, phi_eff, P)
    keep = (r >= P['r_in']) & (r <= P['r_out'])
    u, r, eps, res, w, jac = u[keep], r[keep], eps[keep], res[keep], w[keep], jac[keep]
    n = len(r)
    hphi = np.minimum(1.0, P['huber_phi'] / np.maximum(np.abs(eps), 1e-300))
    hr = np.minimum(1.0, P['huber_r'] / np.maximum(np.abs(r - 1.0), 1e-300))
    wts = np.stack([P['l_phi'] * w * hphi, P['l_r'] * w * hr, np.full(n, P['l_pol']),
                    np.full(n, P['l_band']), np.full(n, P['l_band'])], axis=1)
    A = np.einsum('nk,nki,nkj->ij', wts, jac, jac)
    g = np.einsum('nk,nk,nki->i', wts, res, jac)
    loss = 0.5 * np.sum(wts * res ** 2)
    # BTO per sector
    m, dm = bands(r, P, np.exp(q[0]))
    ns = P['sectors']
    sec = (((np.arctan2(u[:, 1] + 0.0, u[:, 0]) + np.pi + np.pi / ns) * ns / (2 * np.pi))
           .astype(int) % ns) if ns > 1 else np.zeros(n, int)
    per_batch = n if P.get('weight_n', 1) else 1.0
    weight = P['l_bto'] * per_batch / ns
    for s_i in range(ns):
        sel = sec == s_i
        C = m[sel].sum(axis=0)
        dC = (dm[sel][:, :, None] * jac[sel][:, 1:2, :]).sum(axis=0)
        a, gb, lb = bto_terms(C, dC, P, weight)
        A += a
        g += gb
        loss += lb
    lr = P['l_reg'] * per_batch
    A[4, 4] += lr
    A[5, 5] += lr
    g[4] += lr * q[4]
    g[5] += lr * q[5]
    loss += 0.5 * lr * (q[4] ** 2 + q[5] ** 2)
    return A, g, loss


def bto_terms(C, dC, P, weight):
    """(A, g, value) of the BTO bounds of one sector: counts C (core, in, out), dC/dq.

    Ratio p = C_band / (C_band + C_core) or, with P['ratio'] 0, the paper's
    C_band / (C_core + eps); per bound the squared hinge 0.5 softplus(s)^2 or,
    with P['hinge'] 0, the paper's softplus(s) with curvature phi''(s) (S1).
    """
    A = np.zeros((6, 6))
    g = np.zeros(6)
    value = 0.0
    tau = P['bto_tau']
    bounds = [(1, P['pin_lo'], -1.0), (1, P['pin_hi'], 1.0), (2, P['pout_lo'], -1.0),
              (2, P['pout_hi'], 1.0)]
    for band, bound, sgn in bounds:
        if bound < 0:
            continue
        if P.get('ratio', 1):
            den = C[band] + C[0] + 1e-9
            dp = (C[0] * dC[band] - C[band] * dC[0]) / den ** 2
        else:
            den = C[0] + 1e-9
            dp = (dC[band] * den - C[band] * dC[0]) / den ** 2
        s = sgn * (C[band] / den - bound)
        e = softplus(s, tau)
        if P.get('hinge', 1):
            je = sigmoid(s / tau) * sgn * dp
            A += weight * np.outer(je, je)
            g += weight * e * je
            value += 0.5 * weight * e * e
        else:
            sig = sigmoid(s / tau)
            A += weight * sig * (1.0 - sig) / tau * np.outer(dp, dp)
            g += weight * sig * sgn * dp
            value += weight * e
    return A, g, value


def gn_step(q, A, g, P):
    """Damped GN step with gains (no trust region): returns the new q.

    A and g are in q_core = [log s, ...]; with P['log_scale'] 0 the step is
    taken in s (chain rule d/ds = d/dlog s / s), with P['psi_stiff'] 0 without
    the psi stiffness.
    """
    A = A.copy()
    g = g.copy()
    if P.get('psi_stiff', 1):
        A[1, 1] += A[0, 0]
    s = np.exp(q[0])
    D = np.eye(6)
    if not P.get('log_scale', 1):
        D[0, 0] = 1.0 / s
    A = D @ A @ D
    g = D @ g
    A[np.diag_indices(6)] = A[np.diag_indices(6)] * (1.0 + P['damp']) + P['damp']
    dq = np.linalg.solve(A, -g)
    gam = np.array([P['g_s'], P['g_r'], P['g_t'], P['g_t'], P['g_p'], P['g_p']])
    step = gam * dq
    if not P.get('log_scale', 1):
        step[0] = np.log((s + step[0]) / s)
    return q + step


def params_dict(tp, blades, zeta):
    """The dict P from a TrackerParams."""
    return dict(B=blades, zeta=zeta, kappa=tp.kappa, sigma_ring=tp.sigma_ring,
                c_on=tp.pol_c_on_rad, c_off=tp.pol_c_off_rad, c_pol=tp.pol_scale,
                c_b=tp.band_scale, band_tau=tp.band_tau, r_in=tp.r_in, r_out=tp.r_out,
                huber_phi=tp.huber_phi_rad, huber_r=tp.huber_r, l_phi=tp.lambda_phi,
                l_r=tp.lambda_r, l_pol=tp.lambda_pol, l_band=tp.lambda_band,
                l_bto=tp.lambda_bto, l_reg=tp.lambda_reg, sig_core=tp.bto_sigma_core,
                delta=tp.bto_delta, sig_band=tp.bto_sigma_band, min_px=tp.bto_min_px,
                sectors=tp.bto_sectors, bto_tau=tp.bto_tau, pin_lo=tp.bto_p_in_min,
                pin_hi=tp.bto_p_in_max, pout_lo=tp.bto_p_out_min, pout_hi=tp.bto_p_out_max,
                damp=tp.gn_damping, g_s=tp.gamma_scale, g_r=tp.gamma_rot, g_t=tp.gamma_t,
                g_p=tp.gamma_persp,
                h=0.5 * (tp.pol_c_on_rad - tp.pol_c_off_rad) * tp.ekf_polarity,
                ratio=tp.bto_ratio, hinge=tp.bto_hinge, weight_n=tp.bto_weight_n,
                psi_stiff=tp.gn_psi_stiff, log_scale=tp.gn_log_scale)
