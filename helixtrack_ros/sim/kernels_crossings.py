# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""Blade-edge crossing records of the simulator kernels (rotor events).

For each blade edge ``e`` the edge phase ``g_e(t) = theta(t) - direction * beta(t)
+ o_e(r(t))`` is evaluated at block boundaries, and a crossing happens whenever
``g_e`` passes a multiple of ``2 pi / B``; each crossing is a record (pixel, block,
edge) whose time is refined with the exact quadratic shape of ``theta`` within
the block, then written as 0-3 events.
"""

import math

import numpy as np

from helixtrack_ros.core.jit import numpy_errors

from ._kernel_cache import guard_kernel_cache
from .kernels_blade import (
    CO_L0,
    CO_L1,
    CO_M0,
    CO_M1,
    CO_T0,
    CO_T1,
    CO_W0,
    CO_W1,
    CO_X0,
    CO_X1,
    CO_Y0,
    CO_Y1,
    GEO_BLADES,
    GEO_DIRECTION,
    GEO_HUB,
    GEO_OFF_GAIN,
    GEO_ON_GAIN,
    GEO_POL_LEAD,
    GEO_SWEEP,
    GEO_TAU_US,
    N_CO,
    TWO_PI,
    _add_pixel,
    _pixel_scratch,
    _width_at,
    _width_table,
)
from .kernels_random import _rand_at
from .kernels_sensor import _emit_records

guard_kernel_cache()


@numpy_errors
def _find_crossings(coef, i, iv_b, fr_b, theta_b, inv_period, rec_i, rec_c, m):
    """Append the crossing records of pixel ``i`` from index ``m``; new count.

    Record = (pixel, ``2 * j + edge``): an edge phase passed a lattice value between
    block boundaries j - 1 and j (boundary j lies in knot interval ``iv_b[j]`` at
    fraction ``fr_b[j]``). Hot loop, kept minimal and branch-free on purpose.
    """
    k0 = iv_b[0]
    nl_prev = math.floor((theta_b[0] + coef[i, k0, CO_L0] + coef[i, k0, CO_L1] * fr_b[0])
                         * inv_period)
    nt_prev = math.floor((theta_b[0] + coef[i, k0, CO_T0] + coef[i, k0, CO_T1] * fr_b[0])
                         * inv_period)
    for j in range(1, theta_b.shape[0]):
        kk = iv_b[j]
        fr = fr_b[j]
        th = theta_b[j]
        nl = math.floor((th + coef[i, kk, CO_L0] + coef[i, kk, CO_L1] * fr) * inv_period)
        nt = math.floor((th + coef[i, kk, CO_T0] + coef[i, kk, CO_T1] * fr) * inv_period)
        rec_i[m] = i
        rec_c[m] = 2 * j
        m += nl != nl_prev
        rec_i[m] = i
        rec_c[m] = 2 * j + 1
        m += nt != nt_prev
        nl_prev = nl
        nt_prev = nt
    return m


@numpy_errors
def _crossing_records(coef, iv_b, fr_b, theta_b, q_bend, t_b, geo, key, ctr, rec_i, rec_c,
                      nrec, rec_t, rec_n, rec_cnt):
    """Time, event count and lattice count of the first crossing of every record.

    Straight-line code over independent records (no data-dependent branches), so
    consecutive records overlap in the CPU; ``rec_c`` gets the polarity in bit 0.
    Returns the largest ``rec_cnt`` (> 1: several crossings in one block or a
    fast-moving pixel, see :func:`_extra_crossings`).
    """
    period = TWO_PI / geo[GEO_BLADES]
    inv_period = 1.0 / period
    inv_tau = 1.0 / geo[GEO_TAU_US]
    pol_lead = int(geo[GEO_POL_LEAD])
    g_off = geo[GEO_OFF_GAIN]
    g_on_off = geo[GEO_ON_GAIN] - g_off
    max_cnt = 0
    for r in range(nrec):
        i = rec_i[r]
        code = rec_c[r]
        j = code >> 1
        edge = code & 1
        ka = iv_b[j - 1]
        fa = fr_b[j - 1]
        kb = iv_b[j]
        fb = fr_b[j]
        c0 = CO_L0 + 2 * edge  # CO_T0 = CO_L0 + 2
        ga = theta_b[j - 1] + coef[i, ka, c0] + coef[i, ka, c0 + 1] * fa
        gb = theta_b[j] + coef[i, kb, c0] + coef[i, kb, c0 + 1] * fb
        na = math.floor(ga * inv_period)
        nb = math.floor(gb * inv_period)
        fwd = nb > na
        v = (na + 1.0) * period if fwd else na * period
        cnt = nb - na if fwd else na - nb
        dg = gb - ga
        inv_dg = 1.0 / dg
        dt = t_b[j] - t_b[j - 1]
        s = (v - ga) * inv_dg
        # one Newton step on the quadratic shape of theta within the block
        s -= q_bend[j - 1] * s * (1.0 - s) * inv_dg
        s = min(max(s, 0.0), 1.0)
        ma = coef[i, ka, CO_M0] + coef[i, ka, CO_M1] * fa
        mb = coef[i, kb, CO_M0] + coef[i, kb, CO_M1] * fb
        wd = 0.5 * (coef[i, ka, CO_W0] + coef[i, ka, CO_W1] * fa
                    + coef[i, kb, CO_W0] + coef[i, kb, CO_W1] * fb)
        # the blade covers the pixel for width / relative rate; much shorter than the
        # photoreceptor time constant means a weaker response
        xr = wd * dt * abs(inv_dg) * inv_tau
        arrive = (edge == 0) == fwd
        pol = pol_lead if arrive else 1 - pol_lead
        mm = (ma + (mb - ma) * s) * (xr / (1.0 + xr)) * (g_off + g_on_off * pol)
        n_ev = min(int(mm + _rand_at(key, 8 * (ctr + r))), 3) * (cnt > 0)
        rec_t[r] = t_b[j - 1] + s * dt
        rec_n[r] = n_ev
        # flag (bit 10) crossings where the pixel's own rotor-plane angle changes enough
        # within the block for its linear interpolation to matter (~change^2 / 8)
        fast_px = abs(dg - (theta_b[j] - theta_b[j - 1])) > 0.04
        rec_cnt[r] = cnt | (fast_px << 10)
        rec_c[r] = (code << 1) | pol
        max_cnt = max(max_cnt, rec_cnt[r])
    return max_cnt


@numpy_errors
def _extra_crossings(coef, iv_b, fr_b, theta_b, q_bend, t_b, geo, key, ctr, rec_i, rec_c,
                     nrec, rec_t, rec_n, rec_cnt, refine, wtab, wr_lo, wscale):
    """Rare cases: refine crossings of fast-moving pixels, add multi-lattice crossings.

    Returns the new record count (extra crossings are appended).
    """
    period = TWO_PI / geo[GEO_BLADES]
    inv_period = 1.0 / period
    inv_tau = 1.0 / geo[GEO_TAU_US]
    g_off = geo[GEO_OFF_GAIN]
    g_on_off = geo[GEO_ON_GAIN] - g_off
    m = nrec
    for r in range(nrec):
        need_ref = refine and rec_cnt[r] >= 1024
        cnt = rec_cnt[r] & 1023
        if not need_ref and cnt <= 1:
            continue
        code = rec_c[r] >> 1
        j = code >> 1
        i = rec_i[r]
        edge = code & 1
        ka, fa, kb, fb = iv_b[j - 1], fr_b[j - 1], iv_b[j], fr_b[j]
        c0 = CO_L0 + 2 * edge
        ga = theta_b[j - 1] + coef[i, ka, c0] + coef[i, ka, c0 + 1] * fa
        gb = theta_b[j] + coef[i, kb, c0] + coef[i, kb, c0 + 1] * fb
        dg = gb - ga
        dt = t_b[j] - t_b[j - 1]
        qb = q_bend[j - 1]
        na = math.floor(ga * inv_period)
        nb = math.floor(gb * inv_period)
        fwd = nb > na
        v = (na + 1.0) * period if fwd else na * period
        step = period if fwd else -period
        if need_ref:
            s = (rec_t[r] - t_b[j - 1]) / dt
            s = _refine(coef, i, ka, fa, kb, fb, s, v, theta_b[j - 1], theta_b[j], qb, edge, dg,
                        period, geo, wtab, wr_lo, wscale)
            rec_t[r] = t_b[j - 1] + s * dt
        if cnt <= 1:
            continue
        ma = coef[i, ka, CO_M0] + coef[i, ka, CO_M1] * fa
        mb = coef[i, kb, CO_M0] + coef[i, kb, CO_M1] * fb
        wd = 0.5 * (coef[i, ka, CO_W0] + coef[i, ka, CO_W1] * fa
                    + coef[i, kb, CO_W0] + coef[i, kb, CO_W1] * fb)
        xr = wd * dt / abs(dg) * inv_tau
        for k in range(1, cnt):
            if m >= rec_i.shape[0]:
                break
            vk = v + k * step
            s = (vk - ga) / dg
            s -= qb * s * (1.0 - s) / dg
            s = min(max(s, 0.0), 1.0)
            mm = (ma + (mb - ma) * s) * (xr / (1.0 + xr)) * (g_off + g_on_off * (rec_c[r] & 1))
            rec_i[m] = i
            rec_c[m] = rec_c[r]
            rec_t[m] = t_b[j - 1] + s * dt
            rec_n[m] = min(int(mm + _rand_at(key, 8 * (ctr + m))), 3)
            rec_cnt[m] = 1
            m += 1
    return m


@numpy_errors
def _tile_events(coef, p0, p1, px, py, iv_b, fr_b, theta_b, q_bend, t_b, geo, key, ctr,
                 refine, wtab, wr_lo, wscale, sen, rec, out_t, out_x, out_y, out_p, n):
    """Events of pixels ``p0:p1`` of ``coef``; returns (fill level or -1, new counter)."""
    rec_i, rec_c, rec_t, rec_n, rec_cnt = rec
    inv_period = geo[GEO_BLADES] / TWO_PI
    m = 0
    for i in range(p0, p1):
        m = _find_crossings(coef, i, iv_b, fr_b, theta_b, inv_period, rec_i, rec_c, m)
    max_cnt = _crossing_records(coef, iv_b, fr_b, theta_b, q_bend, t_b, geo, key, ctr, rec_i,
                                rec_c, m, rec_t, rec_n, rec_cnt)
    if max_cnt > 1:
        m = _extra_crossings(coef, iv_b, fr_b, theta_b, q_bend, t_b, geo, key, ctr, rec_i,
                             rec_c, m, rec_t, rec_n, rec_cnt, refine, wtab, wr_lo, wscale)
    if n + 3 * m > out_t.shape[0]:
        return -1, ctr + m
    n = _emit_records(px, py, rec_i, rec_c, m, rec_t, rec_n, key, ctr, sen, out_t, out_x, out_y,
                      out_p, n)
    return n, ctr + m


TILE = 256


@numpy_errors
def _records(n_pix, n_b):
    """Scratch arrays for the crossing records of ``n_pix`` pixels over ``n_b`` boundaries."""
    # at most two crossing blocks per boundary and pixel, plus room for multi-crossings
    size = n_pix * 2 * n_b * 4 + 16
    return (np.empty(size, np.int64), np.empty(size, np.int64), np.empty(size),
            np.empty(size, np.int64), np.empty(size, np.int64))


@numpy_errors
def _refine(coef, i, ka, fa, kbb, fb, s, v, th_a, th_b, qb, edge, dg, period, geo, wtab,
            wr_lo, wscale):
    """One secant step of a crossing fraction ``s`` on the exact edge phase."""
    xa = coef[i, ka, CO_X0] + coef[i, ka, CO_X1] * fa
    ya = coef[i, ka, CO_Y0] + coef[i, ka, CO_Y1] * fa
    xb = coef[i, kbb, CO_X0] + coef[i, kbb, CO_X1] * fb
    yb = coef[i, kbb, CO_Y0] + coef[i, kbb, CO_Y1] * fb
    hub = geo[GEO_HUB]
    for _ in range(1):
        ux = xa + (xb - xa) * s
        uy = ya + (yb - ya) * s
        r = math.sqrt(ux * ux + uy * uy)
        rho = min(max((r - hub) / (1.0 - hub), 0.0), 1.0)
        half = 0.5 * _width_at(wtab, wr_lo, wscale, r)
        g = th_a + (th_b - th_a) * s + qb * s * (1.0 - s) \
            - geo[GEO_DIRECTION] * math.atan2(uy, ux) - geo[GEO_SWEEP] * rho * rho
        g += half if edge == 0 else -half
        e = g - v
        e -= period * math.floor(e / period + 0.5)
        s = min(max(s - e / dg, 0.0), 1.0)
    return s


@numpy_errors
def _bend(theta_b, theta_m):
    """Quadratic bend of theta within each block: theta(s) = lin(s) + q s (1 - s)."""
    q = np.empty(theta_m.shape[0])
    for j in range(theta_m.shape[0]):
        q[j] = 4.0 * (theta_m[j] - 0.5 * (theta_b[j] + theta_b[j + 1]))
    return q


@numpy_errors
def rotor_events(px, py, coef, iv_b, fr_b, theta_b, theta_m, t_b, geo, refine, sen, st,
                 out_t, out_x, out_y, out_p, n0):
    """Blade-edge events of precomputed pixels (see :func:`rotor_geometry`).

    Block boundary j of the segment lies in knot interval ``iv_b[j]`` of the
    coefficients at fraction ``fr_b[j]``; ``refine`` (moving camera) enables the
    crossing-time refinement of fast-moving pixels. Returns the new fill level, or
    -1 when the buffers are too small.
    """
    q_bend = _bend(theta_b, theta_m)
    wtab, wr_lo, wscale = _width_table(geo)
    key = st[0]
    rec = _records(TILE, theta_b.shape[0])
    n = n0
    ctr = 0
    for p0 in range(0, px.shape[0], TILE):
        p1 = min(p0 + TILE, px.shape[0])
        n, ctr = _tile_events(coef, p0, p1, px, py, iv_b, fr_b, theta_b, q_bend, t_b, geo, key,
                              ctr, refine, wtab, wr_lo, wscale, sen, rec, out_t, out_x, out_y,
                              out_p, n)
        if n < 0:
            return -1
    return n


@numpy_errors
def rotor_segment(g_knots, iv_b, fr_b, theta_b, theta_m, t_b, box, geo, margin_r, sen, st,
                  out_t, out_x, out_y, out_p, n0):
    """Blade-edge events of one rotor over one segment under a moving camera.

    Parameters
    ----------
    g_knots : (nk, 3, 3) float64
        Image -> rotor-plane homographies at geometry knots (nk >= 2).
    iv_b, fr_b : (S+1,) int64, float64
        Knot interval and fraction within it of every block boundary.
    theta_b : (S+1,) float64
        Shaft angle at the block boundaries; ``theta_m`` (S,) at block midpoints.
    t_b : (S+1,) float64
        Block boundary times [us].
    box : (4,) int64
        Pixel box x0, x1, y0, y1 (exclusive ends).
    geo : float64 vector
        Rotor parameters (GEO_* indices).
    margin_r : float
        Bound of a pixel's radius change over the segment (rotor-plane units).
    sen : float64 vector
        Sensor parameters (SEN_* indices).
    st : (1,) uint64
        Generator state (the key of the counter-based draws).
    out_t, out_x, out_y, out_p : arrays
        Output buffers; events are written from index ``n0``.

    Returns
    -------
    int
        New fill level, or -1 when the buffers are too small.
    """
    nk = g_knots.shape[0]
    q_bend = _bend(theta_b, theta_m)
    scratch = _pixel_scratch(nk)
    coef = np.empty((TILE, nk - 1, N_CO))
    tx = np.empty(TILE, np.uint16)
    ty = np.empty(TILE, np.uint16)
    wtab, wr_lo, wscale = _width_table(geo)
    key = st[0]
    rec = _records(TILE, theta_b.shape[0])
    n = n0
    ctr = 0
    m = 0
    for y in range(box[2], box[3]):
        for x in range(box[0], box[1]):
            m = _add_pixel(g_knots, False, x, y, geo, margin_r, wtab, wr_lo, wscale, scratch,
                           coef, tx, ty, m)
            if m == TILE or (m > 0 and y == box[3] - 1 and x == box[1] - 1):
                n, ctr = _tile_events(coef, 0, m, tx, ty, iv_b, fr_b, theta_b, q_bend, t_b,
                                      geo, key, ctr, True, wtab, wr_lo, wscale, sen, rec, out_t,
                                      out_x, out_y, out_p, n)
                if n < 0:
                    return -1
                m = 0
    return n
