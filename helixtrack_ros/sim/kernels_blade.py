# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""Blade geometry of the simulator kernels: per-pixel edge-phase coefficients.

The pixel's rotor-plane polar coordinates (r, beta) are computed at geometry
knots; per knot interval each pixel gets the start value and change of its
leading / trailing edge phase offsets, radius, blade width, event count scale and
rotor-plane position (``CO_*``), interpolated linearly in time by the crossing
kernels.
"""

import math

import numpy as np

from helixtrack_ros.core.jit import numpy_errors, numpy_errors_inline

from ._kernel_cache import guard_kernel_cache
from .kernels_random import _gauss_word, _hash_at

guard_kernel_cache()

TWO_PI = 2.0 * math.pi

# indices into the rotor parameter vector
GEO_DIRECTION, GEO_BLADES, GEO_HUB, GEO_RADIUS_PX = 0, 1, 2, 3
GEO_CHORD_ROOT, GEO_CHORD_PEAK, GEO_CHORD_TIP, GEO_SWEEP = 4, 5, 6, 7
GEO_M_SCALE, GEO_TAU_US, GEO_POL_LEAD = 8, 9, 10
# simulator variants (sim/variants.py): rounded tip (corner radius in half tip chords),
# sd of the log per-pixel event gain and the key of its draws, ON / OFF event gains
GEO_TIP_ROUND, GEO_PIX_SPREAD, GEO_PIX_KEY, GEO_ON_GAIN, GEO_OFF_GAIN = 11, 12, 13, 14, 15
N_GEO = 16


@numpy_errors_inline
def _blade_width(r, hub, c_root, c_peak, c_tip, tip_round):
    """Full angular blade width at rotor-plane radius r (chord piecewise linear in r).

    ``tip_round`` > 0 rounds the two tip corners with radius ``tip_round * c_tip / 2``
    (1: a semicircular tip that ends in a point at r = 1).
    """
    if r <= hub:
        chord = c_root
    elif r <= 0.4:
        chord = c_root + (c_peak - c_root) * (r - hub) / max(0.4 - hub, 1e-9)
    elif r < 1.0:
        chord = c_peak + (c_tip - c_peak) * (r - 0.4) / 0.6
    else:
        chord = c_tip
    if tip_round > 0.0:
        # the corner circles are tangent to both edges and to the tip line r = 1
        rc = 0.5 * tip_round * c_tip
        d = min(r, 1.0) - (1.0 - rc)
        if d > 0.0:
            chord = max(chord - 2.0 * (rc - math.sqrt(max(rc * rc - d * d, 0.0))), 0.0)
    a = chord / (2.0 * max(r, 1e-6))
    if a >= 1.0:
        return math.pi
    return 2.0 * math.asin(a)


N_WTAB = 1024


@numpy_errors
def _width_table(geo):
    """Blade width sampled on [r_lo, r_hi] (N_WTAB + 1 points) plus range and scale."""
    hub = geo[GEO_HUB]
    r_lo = hub - 2.0 / geo[GEO_RADIUS_PX]
    r_hi = 1.0 + 2.0 / geo[GEO_RADIUS_PX]
    tab = np.empty(N_WTAB + 1)
    for i in range(N_WTAB + 1):
        r = r_lo + (r_hi - r_lo) * i / N_WTAB
        tab[i] = _blade_width(r, hub, geo[GEO_CHORD_ROOT], geo[GEO_CHORD_PEAK],
                              geo[GEO_CHORD_TIP], geo[GEO_TIP_ROUND])
    return tab, r_lo, N_WTAB / (r_hi - r_lo)


@numpy_errors_inline
def _width_at(tab, r_lo, scale, r):
    f = (r - r_lo) * scale
    if f <= 0.0:
        return tab[0]
    if f >= N_WTAB:
        return tab[N_WTAB]
    i = int(f)
    f -= i
    return tab[i] + (tab[i + 1] - tab[i]) * f


# per pixel and knot interval: start value and change over the interval of the
# leading-edge phase offset, trailing-edge phase offset, radius, blade width, the
# mean number of events per crossing before the photoreceptor response, and the
# rotor-plane position u of the pixel (for the refinement of crossing times)
(CO_L0, CO_L1, CO_T0, CO_T1, CO_R0, CO_R1, CO_W0, CO_W1, CO_M0, CO_M1,
 CO_X0, CO_X1, CO_Y0, CO_Y1) = range(14)
N_CO = 14


@numpy_errors_inline
def _uv(g, fx, fy):
    w = g[2, 0] * fx + g[2, 1] * fy + g[2, 2]
    return ((g[0, 0] * fx + g[0, 1] * fy + g[0, 2]) / w,
            (g[1, 0] * fx + g[1, 1] * fy + g[1, 2]) / w)


@numpy_errors
def _pixel_coefs(g_knots, static, fx, fy, geo, margin_r, wtab, wr_lo, wscale, rk, bk, xk, yk,  # noqa: C901, PLR0912, PLR0915 (numba kernel)
                 coef, ic):
    """Fill ``coef[ic]`` (n_iv, N_CO) for one pixel; False when it never meets the blades.

    ``margin_r`` bounds how far (rotor-plane units) a pixel's radius can change
    between the first and the last knot; pixels out of the blade band at both
    ends by more than that are skipped without evaluating the inner knots.
    """
    direction = geo[GEO_DIRECTION]
    hub = geo[GEO_HUB]
    rad_px = geo[GEO_RADIUS_PX]
    sweep = geo[GEO_SWEEP]
    r_lo = hub - 1.5 / rad_px
    r_hi = 1.0 + 1.5 / rad_px
    nk = g_knots.shape[0]
    ux, uy = _uv(g_knots[0], fx, fy)
    r = math.sqrt(ux * ux + uy * uy)
    if static:
        if r < r_lo or r > r_hi:
            return False
    else:
        vx, vy = _uv(g_knots[nk - 1], fx, fy)
        r_end = math.sqrt(vx * vx + vy * vy)
        if (r < r_lo - margin_r or r > r_hi + margin_r) and \
                (r_end < r_lo - margin_r or r_end > r_hi + margin_r):
            return False
    rk[0] = r
    bk[0] = math.atan2(uy, ux)
    xk[0] = ux
    yk[0] = uy
    for k in range(1, nk):
        if static:
            rk[k] = rk[0]
            bk[k] = bk[0]
            xk[k] = ux
            yk[k] = uy
            continue
        vx, vy = _uv(g_knots[k], fx, fy)
        xk[k] = vx
        yk[k] = vy
        rk[k] = math.sqrt(vx * vx + vy * vy)
        # angle increment from the previous knot (small-angle series when possible)
        cr = ux * vy - uy * vx
        dt_ = ux * vx + uy * vy
        if dt_ > 0.0 and abs(cr) < 0.2 * dt_:
            z = cr / dt_
            z2 = z * z
            d = z * (1.0 - z2 * (1.0 / 3.0 - z2 * (0.2 - z2 * (1.0 / 7.0))))
        else:
            d = math.atan2(cr, dt_)
        bk[k] = bk[k - 1] + d
        ux = vx
        uy = vy
    a_prev = 0.0
    w_prev = 0.0
    m_prev = 0.0
    m_any = 0.0
    m_scale = geo[GEO_M_SCALE]
    if geo[GEO_PIX_SPREAD] > 0.0:
        # per-pixel threshold mismatch: a fixed log-normal gain of the pixel's events
        idx = int(fy) * 65536 + int(fx)
        g = _gauss_word(_hash_at(np.uint64(int(geo[GEO_PIX_KEY])), idx))
        m_scale *= math.exp(geo[GEO_PIX_SPREAD] * g)
    for k in range(nk):
        r = rk[k]
        if static and k > 0:
            a = a_prev
            wd = w_prev
            mk = m_prev
        else:
            rho = min(max((r - hub) / (1.0 - hub), 0.0), 1.0)
            a = -direction * bk[k] - sweep * rho * rho
            wd = _width_at(wtab, wr_lo, wscale, r)
            # fewer events toward the hub; pixels straddling the tip / hub circle
            # see the blade over part of their area only
            soft = min(max((1.0 - r) * rad_px + 0.5, 0.0), 1.0)
            soft *= min(max((r - hub) * rad_px + 0.5, 0.0), 1.0)
            mk = m_scale * (0.2 + 0.8 * rho) * soft
        if k < nk - 1:
            coef[ic, k, CO_L0] = a + 0.5 * wd
            coef[ic, k, CO_T0] = a - 0.5 * wd
            coef[ic, k, CO_R0] = r
            coef[ic, k, CO_W0] = wd
            coef[ic, k, CO_M0] = mk
            coef[ic, k, CO_X0] = xk[k]
            coef[ic, k, CO_Y0] = yk[k]
        if k > 0:
            coef[ic, k - 1, CO_L1] = a + 0.5 * wd - coef[ic, k - 1, CO_L0]
            coef[ic, k - 1, CO_T1] = a - 0.5 * wd - coef[ic, k - 1, CO_T0]
            coef[ic, k - 1, CO_R1] = r - coef[ic, k - 1, CO_R0]
            coef[ic, k - 1, CO_W1] = wd - coef[ic, k - 1, CO_W0]
            coef[ic, k - 1, CO_M1] = mk - coef[ic, k - 1, CO_M0]
            coef[ic, k - 1, CO_X1] = xk[k] - coef[ic, k - 1, CO_X0]
            coef[ic, k - 1, CO_Y1] = yk[k] - coef[ic, k - 1, CO_Y0]
        a_prev = a
        w_prev = wd
        m_prev = mk
        m_any += mk
    # never on the blade band at any knot: no events possible
    return m_any > 0.0


@numpy_errors_inline
def _add_pixel(g_knots, static, x, y, geo, margin_r, wtab, wr_lo, wscale, scratch, coef, px,
               py, m):
    """Keep pixel (x, y) as row m when the blade can cover it (:func:`_pixel_coefs`); new m.

    ``scratch`` holds the four knot work arrays of :func:`_pixel_scratch`.
    """
    rk, bk, xk, yk = scratch
    if _pixel_coefs(g_knots, static, float(x), float(y), geo, margin_r, wtab, wr_lo, wscale,
                    rk, bk, xk, yk, coef, m):
        px[m] = x
        py[m] = y
        return m + 1
    return m


@numpy_errors_inline
def _pixel_scratch(nk):
    """The knot work arrays (r, b, x, y per knot) that :func:`_pixel_coefs` fills."""
    return np.empty(nk), np.empty(nk), np.empty(nk), np.empty(nk)


@numpy_errors
def rotor_geometry(g_knots, static, box, geo, margin_r):
    """Per-pixel edge-phase coefficients of the pixels of ``box`` that meet the blades.

    Returns
    -------
    tuple
        (x uint16 (m,), y uint16 (m,), coef float64 (m, nk - 1, N_CO)).
    """
    nk = g_knots.shape[0]
    n_box = max(box[1] - box[0], 0) * max(box[3] - box[2], 0)
    px = np.empty(n_box, np.uint16)
    py = np.empty(n_box, np.uint16)
    coef = np.empty((n_box, nk - 1, N_CO))
    scratch = _pixel_scratch(nk)
    wtab, wr_lo, wscale = _width_table(geo)
    m = 0
    for y in range(box[2], box[3]):
        for x in range(box[0], box[1]):
            m = _add_pixel(g_knots, static, x, y, geo, margin_r, wtab, wr_lo, wscale, scratch,
                           coef, px, py, m)
    return px[:m].copy(), py[:m].copy(), coef[:m].copy()
