# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""Detection stage 2: blade-pass periodicity of 8 x 8 px blocks.

Events are moved to the window end (stage 1 shift) and counted per pixel and per
(time bin, active block); blocks whose temporal spectrum peaks in the blade-pass
band far above its median level are periodic. Background edges swept by the
camera are bursty, not periodic, and thin.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

from helixtrack_ros.core.jit import kernel

if TYPE_CHECKING:
    from helixtrack_ros.core.detection_types import DetectionParams


@kernel
def _compensate(t_us, x, y, knot0_us, knot_step_us, sx, sy, x0, y0, x1, y1, t0_us, bin_us,
                n_bins, block_of_x, block_of_y, row_of, xc, yc, pix, series):
    """Move events to the window end, round to pixels, count them, fill block series.

    The shift at time t is the linear interpolation (extrapolated beyond the ends)
    of the knots ``(sx, sy)`` at ``knot0 + k knot_step``. Writes the compensated
    pixel of event i to ``xc[i], yc[i]`` (-1 when it leaves the region [x0, x1) x
    [y0, y1)), counts it in ``pix[y, x]`` and, when its block has a row
    ``row_of[block_of_y[y], block_of_x[x]] >= 0``, in ``series[bin, row]`` with bin
    ``(t - t0) // bin_us`` (bin-major: consecutive events write to one short row).
    Events must be time-sorted and not before t0.
    """
    n_knots = sx.shape[0]
    inv_step = 1.0 / knot_step_us if knot_step_us > 0.0 else 0.0
    k = 0
    b = 0
    edge = t0_us + bin_us
    for i in range(t_us.shape[0]):
        t = t_us[i]
        f = (t - knot0_us) * inv_step
        while k < n_knots - 2 and f >= k + 1:
            k += 1
        w = f - k
        xi = int(math.floor(x[i] + sx[k] + w * (sx[k + 1] - sx[k]) + 0.5))
        yi = int(math.floor(y[i] + sy[k] + w * (sy[k + 1] - sy[k]) + 0.5))
        if not (x0 <= xi < x1 and y0 <= yi < y1):
            xc[i] = -1
            yc[i] = -1
            continue
        xc[i] = xi
        yc[i] = yi
        pix[yi, xi] += 1
        while t >= edge:
            b += 1
            edge += bin_us
        if b < n_bins:
            r = row_of[block_of_y[yi], block_of_x[xi]]
            if r >= 0:
                series[b, r] += 1.0


def _active_blocks(cells: np.ndarray, box, t0: int, t_end: int, prm: DetectionParams):
    """Row index per region block (-1 = too few events).

    Activity is judged on the uncompensated counts: motion only spreads a disc's
    events over more blocks, so no compensated disc block falls below the
    threshold.
    """
    blk, cell = prm.block_px, prm.motion_cell_px
    x0, y0, x1, y1 = box
    nbx, nby = -(-(x1 - x0) // blk), -(-(y1 - y0) // blk)
    f = blk // cell
    padded = np.zeros((nby * f, nbx * f), np.float32)
    hh, ww = min(cells.shape[0], nby * f), min(cells.shape[1], nbx * f)
    padded[:hh, :ww] = cells[:hh, :ww]
    counts = padded.reshape(nby, f, nbx, f).sum(axis=(1, 3))
    active = counts >= prm.min_rate_hz_px * (t_end - t0) * 1e-6 * blk * blk
    row_of = np.full((nby, nbx), -1, np.int32)
    row_of[active] = np.arange(int(active.sum()), dtype=np.int32)
    return row_of


def _block_lookup(box, width: int, height: int, blk: int):
    """Block column of every pixel column and block row of every pixel row (region)."""
    x0, y0, x1, y1 = box
    bx = np.full(width, 0, np.int32)
    by = np.full(height, 0, np.int32)
    bx[x0:x1] = (np.arange(x0, x1) - x0) // blk
    by[y0:y1] = (np.arange(y0, y1) - y0) // blk
    return bx, by


def _block_spectra(series: np.ndarray, row_of: np.ndarray, prm: DetectionParams):
    """Periodicity score per block, power spectra of the active blocks, frequency axis.

    ``series`` is (n_bins, n_active), bin-major.

    Returns (score (nby, nbx), complex spectra and power (n_active, n_freq), freq [Hz],
    in-band mask).
    The score is the in-band spectral peak over the in-band median (Hann window,
    mean removed): ~5 for aperiodic counts, hundreds for a blade-swept block.
    """
    n_bins = series.shape[0]
    freq = np.fft.rfftfreq(n_bins, prm.bin_us * 1e-6)
    f_lo = prm.rpm_min * prm.blades_min / 60.0
    f_hi = min(prm.rpm_max * prm.blades_max / 60.0, 0.45 / (prm.bin_us * 1e-6))
    band = (freq >= f_lo) & (freq <= f_hi)
    score = np.zeros(row_of.shape)
    if series.shape[1] == 0 or band.sum() < 3:
        empty = np.zeros((0, freq.size), np.complex64)
        return score, empty, np.zeros((0, freq.size), np.float32), freq, band
    series = series.T - series.mean(axis=0)[:, None]
    series *= np.hanning(n_bins).astype(np.float32)
    spec = np.fft.rfft(series, axis=1)
    power = (spec.real ** 2 + spec.imag ** 2).astype(np.float32)
    pb = power[:, band]
    med = np.median(pb, axis=1)
    score[row_of >= 0] = pb.max(axis=1) / np.maximum(med, 1e-12)
    return score, spec, power, freq, band
