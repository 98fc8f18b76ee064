# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""Naive numpy twins of the numba kernels of helixtrack_ros.core.detection.

Each function computes, with whole-array numpy operations (or plain loops for the
distance transform), what the kernel of the same name writes into its outputs.
"""

import math

import numpy as np


def cell_counts(t_us, x, y, t0_us, step_us, n_sub, cell_of_x, cell_of_y, shape):
    """(n_sub, ncy, ncx) event counts per sub-window and cell."""
    out = np.zeros((n_sub,) + tuple(shape), np.float32)
    k = (t_us - t0_us) // step_us
    xi, yi = x.astype(np.int64), y.astype(np.int64)
    ok = (t_us >= t0_us) & (k < n_sub) & (xi < cell_of_x.size) & (yi < cell_of_y.size)
    cx = np.where(ok, cell_of_x[np.minimum(xi, cell_of_x.size - 1)], -1)
    cy = np.where(ok, cell_of_y[np.minimum(yi, cell_of_y.size - 1)], -1)
    ok &= (cx >= 0) & (cy >= 0)
    np.add.at(out, (k[ok], cy[ok], cx[ok]), 1.0)
    return out


def compensate(t_us, x, y, knot0_us, knot_step_us, sx, sy, box, t0_us, bin_us, n_bins,
               block_of_x, block_of_y, row_of, shape, n_rows):
    """(xc, yc, pix, series) as the kernel writes them."""
    x0, y0, x1, y1 = box
    f = (t_us.astype(np.float64) - knot0_us) * (1.0 / knot_step_us)
    k = np.clip(np.floor(f), 0, sx.size - 2).astype(np.int64)
    w = f - k
    xf = x.astype(np.float64) + sx[k] + w * (sx[k + 1] - sx[k]) + 0.5
    yf = y.astype(np.float64) + sy[k] + w * (sy[k + 1] - sy[k]) + 0.5
    xi = np.floor(xf).astype(np.int64)
    yi = np.floor(yf).astype(np.int64)
    ok = (xi >= x0) & (xi < x1) & (yi >= y0) & (yi < y1)
    xc = np.where(ok, xi, -1)
    yc = np.where(ok, yi, -1)
    pix = np.zeros(shape, np.int32)
    np.add.at(pix, (yi[ok], xi[ok]), 1)
    series = np.zeros((n_bins, n_rows), np.float32)
    b = (t_us - t0_us) // bin_us
    sel = ok & (b < n_bins)
    rows = np.full(t_us.size, -1, np.int64)
    rows[sel] = row_of[block_of_y[yi[sel]], block_of_x[xi[sel]]]
    sel &= rows >= 0
    np.add.at(series, (b[sel], rows[sel]), 1.0)
    return xc, yc, pix, series


def angular_hist(t_us, xc, yc, t0_us, bin_us, n_bins, pix_code):
    """(n_bins, n_codes) event counts per time bin and disc-sector code."""
    n_codes = int(pix_code.max()) + 1 if pix_code.size else 0
    out = np.zeros((n_bins, max(n_codes, 1)), np.float32)
    ok = xc >= 0
    code = np.full(xc.size, -1, np.int64)
    code[ok] = pix_code[yc[ok], xc[ok]]
    b = (t_us - t0_us) // bin_us
    ok &= (code >= 0) & (b < n_bins)
    np.add.at(out, (b[ok], code[ok]), 1.0)
    return out


def chamfer_distance(mask):
    """Chamfer (1, sqrt 2) distance to the nearest unmasked cell, border unmasked."""
    h, w = mask.shape
    d2 = math.sqrt(2.0)
    out = np.where(mask, 1e30, 0.0)
    for i in range(1, h - 1):
        for j in range(1, w - 1):
            if mask[i, j]:
                out[i, j] = min(out[i, j], out[i - 1, j - 1] + d2, out[i - 1, j] + 1.0,
                                out[i - 1, j + 1] + d2, out[i, j - 1] + 1.0)
    for i in range(h - 2, 0, -1):
        for j in range(w - 2, 0, -1):
            if mask[i, j]:
                out[i, j] = min(out[i, j], out[i + 1, j + 1] + d2, out[i + 1, j] + 1.0,
                                out[i + 1, j - 1] + d2, out[i, j + 1] + 1.0)
    return out


def euclidean_distance(mask):
    """Brute-force Euclidean distance of masked cells to unmasked cells (reference)."""
    fy, fx = np.nonzero(~mask)
    out = np.zeros(mask.shape)
    for i, j in zip(*np.nonzero(mask)):
        out[i, j] = np.sqrt(np.min((fy - i) ** 2 + (fx - j) ** 2))
    return out
