# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""numba kernels of the event simulator (private; see simulator.py for the wrappers).

All kernels work on one *segment* of fixed length (several 1 ms blocks) and use a
counter-based splitmix64 generator seeded per (source, segment), so the event stream
depends on the seed only, never on how the caller chunks it.

Rotor model (per pixel): the pixel's rotor-plane polar coordinates (r, beta) are
computed at geometry knots and interpolated linearly in time; for each blade edge
``e`` the edge phase ``g_e(t) = theta(t) - direction * beta(t) + o_e(r(t))`` is
evaluated at block boundaries, and a crossing happens whenever ``g_e`` passes a
multiple of ``2 pi / B`` (leading edge ``o = c + w/2``, trailing ``o = c - w/2``
with ``c`` the centre-line offset and ``w`` the angular blade width). Crossing
times are refined with the exact quadratic shape of ``theta`` within the block.
"""

import math

import numpy as np

from helixtrack_ros.core.jit import kernel_inline, numpy_errors, numpy_errors_inline

_GOLD = np.uint64(0x9E3779B97F4A7C15)
_MIX1 = np.uint64(0xBF58476D1CE4E5B9)
_MIX2 = np.uint64(0x94D049BB133111EB)
_S30 = np.uint64(30)
_S27 = np.uint64(27)
_S31 = np.uint64(31)
_S11 = np.uint64(11)
_INV53 = 1.0 / 9007199254740992.0
TWO_PI = 2.0 * math.pi

# indices into the rotor parameter vector
GEO_DIRECTION, GEO_BLADES, GEO_HUB, GEO_RADIUS_PX = 0, 1, 2, 3
GEO_CHORD_ROOT, GEO_CHORD_PEAK, GEO_CHORD_TIP, GEO_SWEEP = 4, 5, 6, 7
GEO_M_SCALE, GEO_TAU_US, GEO_POL_LEAD = 8, 9, 10
N_GEO = 11
# indices into the sensor parameter vector
SEN_JITTER, SEN_REFR, SEN_GAP, SEN_JNEG, SEN_JPOS, SEN_INV_THR = 0, 1, 2, 3, 4, 5
N_SEN = 6


def seed_state(*keys: int) -> np.ndarray:
    """A splitmix64 state (uint64[1]) derived from integer keys."""
    h = 0x243F6A8885A308D3
    mask = (1 << 64) - 1
    for k in keys:
        h = (h ^ (int(k) & mask)) & mask
        h = (h * 0x100000001B3 + 0x9E3779B97F4A7C15) & mask
        h ^= h >> 29
        h = (h * 0xBF58476D1CE4E5B9) & mask
        h ^= h >> 32
    return np.array([h], np.uint64)


@numpy_errors_inline
def _next(st):
    s = st[0] + _GOLD
    st[0] = s
    z = (s ^ (s >> _S30)) * _MIX1
    z = (z ^ (z >> _S27)) * _MIX2
    return z ^ (z >> _S31)


@numpy_errors_inline
def _rand(st):
    """Uniform in [0, 1)."""
    return float(_next(st) >> _S11) * _INV53


@numpy_errors_inline
def _rand_at(key, idx):
    """Uniform in [0, 1): the idx-th draw of the counter-based stream ``key``."""
    z = key + np.uint64(idx) * _GOLD
    z = (z ^ (z >> _S30)) * _MIX1
    z = (z ^ (z >> _S27)) * _MIX2
    z = z ^ (z >> _S31)
    return float(z >> _S11) * _INV53


@numpy_errors_inline
def _hash_at(key, idx):
    """The idx-th 64-bit word of the counter-based stream ``key``."""
    z = key + np.uint64(idx) * _GOLD
    z = (z ^ (z >> _S30)) * _MIX1
    z = (z ^ (z >> _S27)) * _MIX2
    return z ^ (z >> _S31)


_M16 = np.uint64(0xFFFF)
_M32 = np.uint64(0xFFFFFFFF)
_S16 = np.uint64(16)
_S32 = np.uint64(32)
_S48 = np.uint64(48)


@numpy_errors_inline
def _gauss_word(z):
    """Approximately standard normal (Irwin-Hall of four 16-bit uniforms), within +-3.46."""
    a = float(z & _M16) + float((z >> _S16) & _M16) + float((z >> _S32) & _M16) \
        + float(z >> _S48)
    return (a * (1.0 / 65536.0) - 2.0) * 1.7320508075688772


@numpy_errors_inline
def _gauss4(st):
    """Approximately standard normal (Irwin-Hall of 4), bounded to +-3.46."""
    return (_rand(st) + _rand(st) + _rand(st) + _rand(st) - 2.0) * 1.7320508075688772


@numpy_errors
def _poisson(st, lam):
    if lam <= 0.0:
        return 0
    if lam > 40.0:
        v = lam + math.sqrt(lam) * _gauss4(st) + 0.5
        return max(0, int(v))
    lim = math.exp(-lam)
    k = 0
    prod = _rand(st)
    while prod > lim:
        k += 1
        prod *= _rand(st)
    return k


@kernel_inline
def _put3(out_t, out_x, out_y, out_p, n, t1, t2, t3, x, y, pol):
    """Write the three event slots n..n+2 of one crossing (times floored to us)."""
    out_t[n] = int(math.floor(t1))
    out_t[n + 1] = int(math.floor(t2))
    out_t[n + 2] = int(math.floor(t3))
    for k in range(3):
        out_x[n + k] = x
        out_y[n + k] = y
        out_p[n + k] = pol


@numpy_errors_inline
def _emit_counter(key, c, tc, n_ev, pol, x, y, sen, out_t, out_x, out_y, out_p, n):
    """Append ``n_ev`` (0..3) events of one threshold crossing near time ``tc``.

    Jitter and gaps as in :func:`_emit_records`, from the counter-based draws
    ``c + 1`` and ``c + 2`` of ``key``; three slots are always written (branch-free),
    the caller guarantees the room.
    """
    t1 = tc + sen[SEN_JITTER] * _gauss_word(_hash_at(key, c + 1))
    z = _hash_at(key, c + 2)
    gap2 = 2.0 * sen[SEN_GAP] / 4294967296.0
    t2 = t1 + sen[SEN_REFR] + gap2 * float(z & _M32)
    t3 = t2 + sen[SEN_REFR] + gap2 * float(z >> _S32)
    _put3(out_t, out_x, out_y, out_p, n, t1, t2, t3, x, y, pol)
    return n + n_ev


@numpy_errors_inline
def _blade_width(r, hub, c_root, c_peak, c_tip):
    """Full angular blade width at rotor-plane radius r (chord piecewise linear in r)."""
    if r <= hub:
        chord = c_root
    elif r <= 0.4:
        chord = c_root + (c_peak - c_root) * (r - hub) / max(0.4 - hub, 1e-9)
    elif r < 1.0:
        chord = c_peak + (c_tip - c_peak) * (r - 0.4) / 0.6
    else:
        chord = c_tip
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
                              geo[GEO_CHORD_TIP])
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
def _pixel_coefs(g_knots, static, fx, fy, geo, margin_r, wtab, wr_lo, wscale, rk, bk, xk, yk,
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
        mm = (ma + (mb - ma) * s) * (xr / (1.0 + xr))
        n_ev = min(int(mm + _rand_at(key, 8 * (ctr + r))), 3) * (cnt > 0)
        arrive = (edge == 0) == fwd
        pol = pol_lead if arrive else 1 - pol_lead
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
            mm = (ma + (mb - ma) * s) * (xr / (1.0 + xr))
            rec_i[m] = i
            rec_c[m] = rec_c[r]
            rec_t[m] = t_b[j - 1] + s * dt
            rec_n[m] = min(int(mm + _rand_at(key, 8 * (ctr + m))), 3)
            rec_cnt[m] = 1
            m += 1
    return m


@numpy_errors
def _emit_records(px, py, rec_i, rec_c, nrec, rec_t, rec_n, key, ctr, sen, out_t, out_x,
                  out_y, out_p, n):
    """Write the events of all records (0-3 each); the caller checked the room.

    The first event of a crossing is jittered (approximately normal, sd
    ``jitter_us``), the next ones follow after the refractory time plus a uniform
    extra gap (mean ``gap_us``). Branch-free: three slots are always written and the
    fill level advances by the record's event count.
    """
    jit = sen[SEN_JITTER]
    refr = sen[SEN_REFR]
    gap2 = 2.0 * sen[SEN_GAP] / 4294967296.0
    for r in range(nrec):
        c = 8 * (ctr + r)
        t1 = rec_t[r] + jit * _gauss_word(_hash_at(key, c + 1))
        z = _hash_at(key, c + 2)
        t2 = t1 + refr + gap2 * float(z & _M32)
        t3 = t2 + refr + gap2 * float(z >> _S32)
        i = rec_i[r]
        x = px[i]
        y = py[i]
        pol = np.uint8(rec_c[r] & 1)
        _put3(out_t, out_x, out_y, out_p, n, t1, t2, t3, x, y, pol)
        n += rec_n[r]
    return n


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
    rk = np.empty(nk)
    bk = np.empty(nk)
    xk = np.empty(nk)
    yk = np.empty(nk)
    wtab, wr_lo, wscale = _width_table(geo)
    m = 0
    for y in range(box[2], box[3]):
        for x in range(box[0], box[1]):
            if _pixel_coefs(g_knots, static, float(x), float(y), geo, margin_r, wtab, wr_lo,
                            wscale, rk, bk, xk, yk, coef, m):
                px[m] = x
                py[m] = y
                m += 1
    return px[:m].copy(), py[:m].copy(), coef[:m].copy()


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
    rk = np.empty(nk)
    bk = np.empty(nk)
    xk = np.empty(nk)
    yk = np.empty(nk)
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
            if _pixel_coefs(g_knots, False, float(x), float(y), geo, margin_r, wtab, wr_lo,
                            wscale, rk, bk, xk, yk, coef, m):
                tx[m] = x
                ty[m] = y
                m += 1
            if m == TILE or (m > 0 and y == box[3] - 1 and x == box[1] - 1):
                n, ctr = _tile_events(coef, 0, m, tx, ty, iv_b, fr_b, theta_b, q_bend, t_b,
                                      geo, key, ctr, True, wtab, wr_lo, wscale, sen, rec, out_t,
                                      out_x, out_y, out_p, n)
                if n < 0:
                    return -1
                m = 0
    return n


@numpy_errors
def edges_segment(xy, normal, contrast, weight, m_b, t_b, width, height, reach_px, sen, st,
                  out_t, out_x, out_y, out_p, n0):
    """Events of static scene edges moved by the camera over one segment.

    Each edge sample is carried through the camera transforms ``m_b`` (one per knot,
    straight-line motion in between); every time it enters a new pixel the pixel
    fires with probability ``weight * |n . d| / |d|_1`` (the swept area),
    ``|contrast| / C`` events on average, polarity by the sign of the brightness
    change. Samples farther than ``reach_px`` (the largest image motion within the
    segment) outside the view at the first knot are skipped.

    Returns the new fill level, or -1 when the buffers are too small.
    """
    n = n0
    cap = out_t.shape[0]
    n_b = m_b.shape[0]
    inv_thr = sen[SEN_INV_THR]
    key = st[0]
    ctr = 0
    for i in range(xy.shape[0]):
        rx = xy[i, 0]
        ry = xy[i, 1]
        m = m_b[0]
        w = m[2, 0] * rx + m[2, 1] * ry + m[2, 2]
        px = (m[0, 0] * rx + m[0, 1] * ry + m[0, 2]) / w
        py = (m[1, 0] * rx + m[1, 1] * ry + m[1, 2]) / w
        if px < -reach_px or py < -reach_px or px > width + reach_px or \
                py > height + reach_px:
            continue
        nx_ = normal[i, 0]
        ny_ = normal[i, 1]
        con = contrast[i]
        m_ev = abs(con) * inv_thr
        for j in range(1, n_b):
            m = m_b[j]
            w = m[2, 0] * rx + m[2, 1] * ry + m[2, 2]
            qx = (m[0, 0] * rx + m[0, 1] * ry + m[0, 2]) / w
            qy = (m[1, 0] * rx + m[1, 1] * ry + m[1, 2]) / w
            dx = qx - px
            dy = qy - py
            ix = int(math.floor(px + 0.5))
            iy = int(math.floor(py + 0.5))
            ix1 = int(math.floor(qx + 0.5))
            iy1 = int(math.floor(qy + 0.5))
            steps = abs(ix1 - ix) + abs(iy1 - iy)
            if steps > 0:
                l1 = abs(dx) + abs(dy)
                nd = nx_ * dx + ny_ * dy
                acc = weight[i] * abs(nd) / l1
                # brightness change at the pixels the edge sweeps over
                pol = np.uint8(1) if -con * nd > 0.0 else np.uint8(0)
                sgx = 1 if dx > 0 else -1
                sgy = 1 if dy > 0 else -1
                sx = ((ix + 0.5 * sgx) - px) / dx if dx != 0.0 else 2.0
                sy = ((iy + 0.5 * sgy) - py) / dy if dy != 0.0 else 2.0
                dsx = 1.0 / abs(dx) if dx != 0.0 else 2.0
                dsy = 1.0 / abs(dy) if dy != 0.0 else 2.0
                t0 = t_b[j - 1]
                dt = t_b[j] - t0
                for _ in range(steps):
                    if sx <= sy:
                        s = sx
                        ix += sgx
                        sx += dsx
                    else:
                        s = sy
                        iy += sgy
                        sy += dsy
                    if ix < 0 or iy < 0 or ix >= width or iy >= height:
                        continue
                    # branch-free acceptance and event count; counter-based draws keep
                    # the steps independent of each other
                    z = _hash_at(key, 4 * ctr)
                    u1 = float(z & _M32) * (1.0 / 4294967296.0)
                    u2 = float(z >> _S32) * (1.0 / 4294967296.0)
                    n_ev = min(int(m_ev + u1), 3) * (u2 < acc)
                    if n + 3 > cap:
                        return -1
                    n = _emit_counter(key, 4 * ctr, t0 + min(s, 1.0) * dt, n_ev, pol,
                                      np.uint16(ix), np.uint16(iy), sen, out_t, out_x, out_y,
                                      out_p, n)
                    ctr += 1
            px = qx
            py = qy
    return n


@numpy_errors
def noise_segment(t0, t1, width, height, ba_rate_hz, hot_xy, hot_rate_hz, st,
                  out_t, out_x, out_y, out_p, n0):
    """Uniform background-activity noise and hot pixels over ``[t0, t1)`` us.

    Returns the new fill level, or -1 when the buffers are too small.
    """
    n = n0
    cap = out_t.shape[0]
    span = t1 - t0
    lam = ba_rate_hz * width * height * span * 1e-6
    k = _poisson(st, lam)
    if n + k > cap:
        return -1
    for _ in range(k):
        out_t[n] = t0 + int(_rand(st) * span)
        out_x[n] = np.uint16(int(_rand(st) * width))
        out_y[n] = np.uint16(int(_rand(st) * height))
        out_p[n] = np.uint8(1) if _rand(st) < 0.5 else np.uint8(0)
        n += 1
    for h in range(hot_xy.shape[0]):
        k = _poisson(st, hot_rate_hz[h] * span * 1e-6)
        if n + k > cap:
            return -1
        bias = 0.35 + 0.3 * (h % 3) / 2.0
        for _ in range(k):
            out_t[n] = t0 + int(_rand(st) * span)
            out_x[n] = np.uint16(hot_xy[h, 0])
            out_y[n] = np.uint16(hot_xy[h, 1])
            out_p[n] = np.uint8(1) if _rand(st) < bias else np.uint8(0)
            n += 1
    return n


@numpy_errors
def sort_emit(t, x, y, p, t_emit, t_end, last_t, width, refr_us):
    """Stable counting sort by time, then the per-pixel refractory filter.

    Events with ``t < t_emit`` are emitted (after the refractory filter, which keeps
    its per-pixel state in ``last_t``); the rest are returned as the sorted carry.
    Events outside ``[0, t_end)`` are dropped.

    Returns
    -------
    tuple
        (t, x, y, p) emitted, (t, x, y, p) carry.
    """
    n = t.shape[0]
    if n == 0:
        e64 = np.empty(0, np.int64)
        e16 = np.empty(0, np.uint16)
        e8 = np.empty(0, np.uint8)
        return e64, e16, e16, e8, e64.copy(), e16.copy(), e16.copy(), e8.copy()
    t_lo = t[0]
    t_hi = t[0]
    for i in range(n):
        ti = t[i]
        if ti < t_lo:
            t_lo = ti
        if ti > t_hi:
            t_hi = ti
    span = t_hi - t_lo + 1
    start = np.zeros(span + 1, np.int64)
    for i in range(n):
        start[t[i] - t_lo + 1] += 1
    for k in range(span):
        start[k + 1] += start[k]
    pos = start[:-1].copy()
    # payload: x << 24 | y << 8 | p, time implied by the bucket
    pay = np.empty(n, np.uint64)
    for i in range(n):
        k = t[i] - t_lo
        pay[pos[k]] = (np.uint64(x[i]) << np.uint64(24)) | (np.uint64(y[i]) << np.uint64(8)) \
            | np.uint64(p[i])
        pos[k] += 1
    k_emit = min(max(t_emit - t_lo, 0), span)
    n_emit = start[k_emit]
    et = np.empty(n_emit, np.int64)
    ex = np.empty(n_emit, np.uint16)
    ey = np.empty(n_emit, np.uint16)
    ep = np.empty(n_emit, np.uint8)
    ne = 0
    for k in range(k_emit):
        tk = t_lo + k
        if tk < 0 or tk >= t_end:
            continue
        for i in range(start[k], start[k + 1]):
            v = pay[i]
            xi = np.uint16(v >> np.uint64(24))
            yi = np.uint16((v >> np.uint64(8)) & np.uint64(0xFFFF))
            pix = np.int64(yi) * width + np.int64(xi)
            if tk - last_t[pix] < refr_us:
                continue
            last_t[pix] = tk
            et[ne] = tk
            ex[ne] = xi
            ey[ne] = yi
            ep[ne] = np.uint8(v & np.uint64(0xFF))
            ne += 1
    nc = n - n_emit
    ct = np.empty(nc, np.int64)
    cx = np.empty(nc, np.uint16)
    cy = np.empty(nc, np.uint16)
    cp = np.empty(nc, np.uint8)
    c = 0
    for k in range(k_emit, span):
        tk = t_lo + k
        for i in range(start[k], start[k + 1]):
            v = pay[i]
            ct[c] = tk
            cx[c] = np.uint16(v >> np.uint64(24))
            cy[c] = np.uint16((v >> np.uint64(8)) & np.uint64(0xFFFF))
            cp[c] = np.uint8(v & np.uint64(0xFF))
            c += 1
    return et[:ne], ex[:ne], ey[:ne], ep[:ne], ct, cx, cy, cp
