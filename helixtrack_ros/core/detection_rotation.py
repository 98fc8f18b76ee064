# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""Detection stage 4: blade count, rotation direction and RPM of each disc.

Events on each disc are warped to the rotor plane; per time bin the angular
Fourier coefficients m = 1..B_max of their azimuths give B (strongest coherent
harmonic), the direction (sign of its phase drift) and the shaft RPM (phase
slope / B).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING
import warnings

import numpy as np

from helixtrack_ros.core.jit import kernel

if TYPE_CHECKING:
    from helixtrack_ros.core.detection_types import DetectionParams


_RANK_WARNING = getattr(getattr(np, 'exceptions', np), 'RankWarning', Warning)


N_SECTORS = 128  # azimuth sectors of the angular histograms


@kernel
def _angular_hist(t_us, xc, yc, t0_us, bin_us, n_bins, pix_code, out):
    """Event counts per (time bin, disc-sector code); ``pix_code[y, x] < 0`` = no disc.

    The code of a pixel is ``candidate * n_sectors + sector`` of its rotor-plane
    azimuth. Events must be time-sorted and not before t0.
    """
    b = 0
    edge = t0_us + bin_us
    for j in range(xc.shape[0]):
        if xc[j] < 0:
            continue
        code = pix_code[yc[j], xc[j]]
        if code < 0:
            continue
        t = t_us[j]
        while t >= edge:
            b += 1
            edge += bin_us
        if b >= n_bins:
            break
        out[b, code] += 1.0


def _sector_codes(cands: list, box, ring_in: float, ring_out: float,
                  shape: tuple[int, int]) -> np.ndarray:
    """Per-pixel code ``candidate * N_SECTORS + azimuth sector`` on the disc annuli.

    The azimuth is atan2(u_y, u_x) of the pixel back-warped by the candidate's
    psi = 0 homography; a pixel on two annuli goes to the disc where it lies
    deeper inside. -1 marks pixels on no annulus.
    """
    x0, y0, x1, y1 = box
    code = np.full(shape, -1, np.int32)
    best_r = np.full(shape, np.inf)
    for ci, cd in enumerate(cands):
        hinv = np.linalg.inv(cd['H0'])
        a = cd['axes'][0] * ring_out * 1.2 + 2.0
        bx0, bx1 = max(int(cd['c'][0] - a), x0), min(int(cd['c'][0] + a) + 2, x1)
        by0, by1 = max(int(cd['c'][1] - a), y0), min(int(cd['c'][1] + a) + 2, y1)
        if bx1 <= bx0 or by1 <= by0:
            continue
        yy, xx = np.mgrid[by0:by1, bx0:bx1].astype(np.float64)
        u = hinv @ np.vstack([xx.ravel(), yy.ravel(), np.ones(xx.size)])
        ux, uy = u[0] / u[2], u[1] / u[2]
        rr = np.hypot(ux, uy).reshape(xx.shape)
        sector = np.floor((np.arctan2(uy, ux) + math.pi) * (N_SECTORS / (2.0 * math.pi)))
        sector = np.clip(sector, 0, N_SECTORS - 1).astype(np.int32).reshape(xx.shape)
        sub_best = best_r[by0:by1, bx0:bx1]
        sel = (rr >= ring_in) & (rr <= ring_out) & (rr < sub_best)
        code[by0:by1, bx0:bx1][sel] = ci * N_SECTORS + sector[sel]
        sub_best[sel] = rr[sel]
    return code


def _harmonics(hist: np.ndarray, n_cand: int, n_h: int) -> np.ndarray:
    """(n_cand, n_bins, n_h) sums of exp(i m azimuth), m = 1..n_h, from sector counts."""
    n_bins = hist.shape[0]
    az = (np.arange(N_SECTORS) + 0.5) * (2.0 * math.pi / N_SECTORS) - math.pi
    ang = az[:, None] * np.arange(1, n_h + 1)[None, :]
    h = hist.reshape(n_bins * n_cand, N_SECTORS)
    z = (h @ np.cos(ang)) + 1j * (h @ np.sin(ang))
    return z.reshape(n_bins, n_cand, n_h).transpose(1, 0, 2)


def _rotation(z: np.ndarray, n: np.ndarray, bin_us: int, t0: int, t_end: int,
              prm: DetectionParams):
    """Blade count, signed B-fold phase rate at the window end, phase, coherence.

    Parameters are one candidate's (n_bins, n_h) harmonic sums and (n_bins,) counts.
    Returns a dict or None when there is no rotating pattern.

    Notes
    -----
    Z_m(k) = sum over the events of bin k of exp(i m azimuth). The static part
    (texture, hub, arms) is the count-weighted mean of Z_m and is subtracted; the
    coherence of harmonic m is (sum |Z_m|^2 - N) / sum (N^2 - N), 1 when every event
    of a bin sits on the same B-fold angle, ~0 for random azimuths. B is the
    strongest harmonic in the blade range, replaced by a divisor that keeps at
    least half of its coherence. The B-fold phase rate comes from the lag-one
    product sum Z(k + 1) conj Z(k) (unambiguous while B omega bin < pi), then the
    demodulated coefficients, summed over ~1 ms groups, are unwrapped and fitted
    with a weighted quadratic in time; its slope at the window end gives the rate
    there and its value the phase.
    """
    tot = float(n.sum())
    if tot < 200.0:
        return None
    z = z - n[:, None] * (z.sum(axis=0) / tot)[None, :]
    noise = float(np.sum(n * n - n))
    if noise <= 0.0:
        return None
    coh = (np.sum(np.abs(z) ** 2, axis=0) - tot) / noise
    lo, hi = prm.blades_min, prm.blades_max
    m_best = lo + int(np.argmax(coh[lo - 1:hi]))
    blades = m_best
    for d in range(lo, m_best):
        if m_best % d == 0 and coh[d - 1] >= 0.5 * coh[m_best - 1]:
            blades = d
            break
    zb = z[:, blades - 1]
    lag = np.sum(zb[1:] * np.conj(zb[:-1]))
    dt = bin_us * 1e-6
    omega = float(np.angle(lag)) / dt
    tk = t0 + bin_us * (np.arange(zb.size) + 0.5) - t_end
    tk_s = tk * 1e-6
    y = zb * np.exp(-1j * omega * tk_s)
    g = max(1, int(round(1000.0 / bin_us)))
    n_g = y.size // g
    if n_g < 6:
        return None
    yg = y[y.size - n_g * g:].reshape(n_g, g).sum(axis=1)
    tg = tk_s[y.size - n_g * g:].reshape(n_g, g).mean(axis=1)
    wg = np.abs(yg)
    if not np.any(wg > 0):
        return None
    ph = np.unwrap(np.angle(yg))
    with warnings.catch_warnings():
        # a poorly conditioned fit (few weighted bins) is judged by its consistency below
        warnings.simplefilter('ignore', _RANK_WARNING)
        coef = np.polyfit(tg, ph, 2, w=np.sqrt(wg))
    fit = np.polyval(coef, tg)
    consistency = float(np.abs(np.sum(yg * np.exp(-1j * fit))) / np.sum(wg))
    omega_end = omega + float(coef[1])
    omega_mean = omega + float(np.polyval(np.polyder(coef), tg).mean())
    phase_end = float(coef[2])
    return {'blades': blades, 'omega_end': omega_end, 'omega_mean': omega_mean,
            'phase_end': phase_end, 'coherence': float(coh[blades - 1]),
            'consistency': consistency}


def _candidate_harmonics(cands: list, t_w, xc, yc, t0: int, t_end: int, box,
                         shape: tuple[int, int], prm: DetectionParams):
    """Angular harmonics of the events on each candidate's annulus.

    ``xc``, ``yc`` are the motion-compensated event pixels. Returns ``zs``
    (n_cand, n_bins, blades_max) complex sums of exp(i m azimuth) per
    ``angle_bin_us`` bin and ``cnt`` (n_cand, n_bins) event counts.
    """
    code = _sector_codes(cands, box, prm.ring_inner, prm.ring_outer, shape)
    n_ab = (t_end - t0) // prm.angle_bin_us
    hist = np.zeros((n_ab, len(cands) * N_SECTORS), np.float32)
    _angular_hist(t_w, xc, yc, t0, prm.angle_bin_us, n_ab, code, hist)
    zs = _harmonics(hist, len(cands), prm.blades_max)
    cnt = hist.reshape(n_ab, len(cands), N_SECTORS).sum(axis=2, dtype=np.float64).T
    return zs, cnt
