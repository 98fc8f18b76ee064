# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""Detection stage 1: egomotion from registered event-count images.

Event-count images of short sub-windows (and of sliding ~30 / ~50 ms sums, for
slow rotors) are registered to the last one by FFT cross-correlation; the
sharpest plausible result (or no motion) gives the image shift that moves every
event to the window end (rotors and background share the camera motion).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

from helixtrack_ros.core.jit import kernel

if TYPE_CHECKING:
    from helixtrack_ros.core.detection_types import DetectionParams


@kernel
def _cell_counts(t_us, x, y, t0_us, step_us, n_sub, cell_of_x, cell_of_y, out):
    """Event counts per (sub-window, cell row, cell column).

    Sub-window k spans [t0 + k step, t0 + (k + 1) step); ``cell_of_x[x]`` and
    ``cell_of_y[y]`` give the cell column / row of a pixel (-1 = outside the
    region). Events must be time-sorted.
    """
    k = 0
    edge = t0_us + step_us
    nx = cell_of_x.shape[0]
    ny = cell_of_y.shape[0]
    for i in range(t_us.shape[0]):
        t = t_us[i]
        if t < t0_us:
            continue
        while t >= edge:
            k += 1
            edge += step_us
        if k >= n_sub:
            break
        xi = x[i]
        yi = y[i]
        if xi >= nx or yi >= ny:
            continue
        cx = cell_of_x[xi]
        cy = cell_of_y[yi]
        if cx >= 0 and cy >= 0:
            out[k, cy, cx] += 1.0


_MOTION_SPANS_US = (30_000, 50_000)  # longer registration windows for slow rotors


def _register(t_w, x_w, y_w, t0: int, t_end: int, box, prm: DetectionParams):
    """Knot times and the per-knot image shift that moves an event to the window end.

    Returns ((knot0_us, knot_step_us, sx, sy), cells): the shift at time t is the
    linear interpolation (extrapolation beyond the ends) of the knots ``knot0 + k
    step``; ``cells`` holds the uncompensated event counts per cell of the region.

    Notes
    -----
    Count images (square-root compressed, 4 px cells) of short sub-windows
    (``motion_step_us``) are cross-correlated with the last one (FFT, parabolic
    sub-cell peak). A slow rotor fills only a sector of its disc in a few ms and its
    blades then dominate the correlation, so the registration is repeated on
    sliding sums spanning ~30 and ~50 ms. Registrations with implausibly fast jumps
    are dropped; among the rest and 'no motion' the one whose
    motion-compensated sum image is sharpest (largest energy of the sum of the
    shifted sub-window images, i.e. of all their pairwise correlations) is kept.
    """
    step = prm.motion_step_us
    n_sub = max((t_end - t0) // step, 1)
    zero = (float(t0), 1.0, np.zeros(2), np.zeros(2))
    x0, y0, x1, y1 = box
    cell = prm.motion_cell_px
    ncx, ncy = -(-(x1 - x0) // cell), -(-(y1 - y0) // cell)
    sub0 = t_end - n_sub * step
    raw = np.zeros((n_sub, ncy, ncx), np.float32)
    cell_x = np.full(65536, -1, np.int32)
    cell_y = np.full(65536, -1, np.int32)
    cell_x[x0:x1] = (np.arange(x0, x1) - x0) // cell
    cell_y[y0:y1] = (np.arange(y0, y1) - y0) // cell
    _cell_counts(t_w, x_w, y_w, sub0, step, n_sub, cell_x[:x1], cell_y[:y1], raw)
    cells = raw.sum(axis=0)
    if n_sub < 3 or ncx < 8 or ncy < 8:
        return zero, cells
    tc = sub0 + step * (np.arange(n_sub) + 0.5)
    base = np.sqrt(raw)
    base -= base.mean(axis=(1, 2), keepdims=True)
    base_spec = np.fft.rfft2(base)
    best = zero
    best_sharp = _sharpness(base_spec, np.zeros(n_sub), np.zeros(n_sub))
    spans = sorted({1, *(max(1, round(v / step)) for v in _MOTION_SPANS_US)})
    csum = np.cumsum(np.concatenate([np.zeros((1, ncy, ncx), np.float32), raw]), axis=0)
    for span in spans:
        # sliding sums, the last ending at the window end; long sums need fewer knots
        stride = max(1, span // 2)
        starts = np.arange(n_sub - span, -1, -stride)[::-1]
        if starts.size < 2:
            continue
        img = np.sqrt(csum[starts + span] - csum[starts])
        img -= img.mean(axis=(1, 2), keepdims=True)
        shifts = _correlate_to_last(img, prm.motion_min_corr)
        if shifts is None:
            continue
        shifts *= cell
        dt_k = step * stride
        # camera motion is smooth: a jump beyond the speed limit means the blades,
        # not the scene, were registered
        jump = np.hypot(*np.diff(shifts, axis=0).T)
        if np.any(jump > prm.motion_max_px_per_ms * dt_k * 1e-3 + 2.0 * cell):
            continue
        tk = sub0 + step * (starts + 0.5 * span)
        slope = (shifts[-1] - shifts[-2]) / dt_k
        s_end = shifts[-1] + slope * (t_end - tk[-1])
        comp = s_end[None, :] - shifts
        # shift of each sub-window (linear, extrapolated at the ends)
        f = np.clip(np.floor((tc - tk[0]) / dt_k), 0, tk.size - 2).astype(np.int64)
        w = (tc - tk[f]) / dt_k
        dx = comp[f, 0] + w * (comp[f + 1, 0] - comp[f, 0])
        dy = comp[f, 1] + w * (comp[f + 1, 1] - comp[f, 1])
        sharp = _sharpness(base_spec, dx / cell, dy / cell)
        if sharp > best_sharp:
            best_sharp = sharp
            best = (float(tk[0]), float(dt_k), comp[:, 0].copy(), comp[:, 1].copy())
    return best, cells


def _correlate_to_last(img: np.ndarray, min_corr: float) -> np.ndarray | None:
    """(n, 2) shift [cells] of each image's content relative to the last image."""
    n_k, ncy, ncx = img.shape
    norms = np.sqrt(np.einsum('kij,kij->k', img, img))
    if norms[-1] <= 0.0:
        return None
    spec = np.fft.rfft2(img)
    ref = np.conj(spec[-1])
    shifts = np.full((n_k, 2), np.nan)
    for k in range(n_k):
        if norms[k] <= 0.0:
            continue
        corr = np.fft.irfft2(spec[k] * ref, s=(ncy, ncx))
        iy, ix = np.unravel_index(int(np.argmax(corr)), corr.shape)
        if corr[iy, ix] / (norms[k] * norms[-1]) < min_corr:
            continue
        dy = iy + _parabola_peak(corr[iy - 1, ix], corr[iy, ix], corr[(iy + 1) % ncy, ix])
        dx = ix + _parabola_peak(corr[iy, ix - 1], corr[iy, ix], corr[iy, (ix + 1) % ncx])
        shifts[k] = (dx - ncx if dx > ncx / 2 else dx, dy - ncy if dy > ncy / 2 else dy)
    ok = np.isfinite(shifts[:, 0])
    if ok.sum() < 2 or not ok[-1]:
        return None
    idx = np.arange(n_k)
    for d in range(2):
        shifts[~ok, d] = np.interp(idx[~ok], idx[ok], shifts[ok, d])
    return shifts


def _sharpness(spec: np.ndarray, dx: np.ndarray, dy: np.ndarray) -> float:
    """Energy of the sum of images k moved by (dx[k], dy[k]) cells (Fourier shift).

    ``spec`` holds the rfft2 of the images; shifting by a phase ramp is exact for
    fractional shifts, so no interpolation blur favours integer shifts.
    """
    n_k, ncy, nfx = spec.shape
    ncx = (nfx - 1) * 2
    ky = np.fft.fftfreq(ncy)
    kx = np.fft.rfftfreq(ncx)
    acc = np.zeros((ncy, nfx), np.complex128)
    for k in range(n_k):
        ramp_y = np.exp(-2j * math.pi * ky * dy[k])
        ramp_x = np.exp(-2j * math.pi * kx * dx[k])
        acc += spec[k] * ramp_y[:, None] * ramp_x[None, :]
    w = np.full(nfx, 2.0)
    w[0] = 1.0
    w[-1] = 1.0
    return float(np.sum((acc.real ** 2 + acc.imag ** 2) * w[None, :]))


def _parabola_peak(cm: float, c0: float, cp: float) -> float:
    d = cm - 2.0 * c0 + cp
    if d >= 0.0:
        return 0.0
    return float(np.clip(0.5 * (cm - cp) / d, -0.5, 0.5))
