# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""Detection stage 3a: rotor centre seeds from the periodic blocks.

Blade-phase vortices (each periodic block votes for a centre at B / |phase
gradient| across the gradient) seed the discs, separately even for touching
neighbours; the maxima of the distance transform of the periodic mask are the
fallback seeds.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

from helixtrack_ros.core.jit import kernel

if TYPE_CHECKING:
    from helixtrack_ros.core.detection_types import DetectionParams


@kernel
def _chamfer_distance(mask, out):
    """Chamfer (1, sqrt 2) distance of every masked cell to the nearest unmasked cell.

    Two raster passes (forward, backward) over a grid whose border is unmasked;
    within 8 % of the Euclidean distance.
    """
    h, w = mask.shape
    big = 1e30
    d2 = math.sqrt(2.0)
    for i in range(h):
        for j in range(w):
            out[i, j] = big if mask[i, j] else 0.0
    for i in range(1, h - 1):
        for j in range(1, w - 1):
            if mask[i, j]:
                v = out[i, j]
                v = min(v, out[i - 1, j - 1] + d2, out[i - 1, j] + 1.0,
                        out[i - 1, j + 1] + d2, out[i, j - 1] + 1.0)
                out[i, j] = v
    for i in range(h - 2, 0, -1):
        for j in range(w - 2, 0, -1):
            if mask[i, j]:
                v = out[i, j]
                v = min(v, out[i + 1, j + 1] + d2, out[i + 1, j] + 1.0,
                        out[i + 1, j - 1] + d2, out[i, j + 1] + 1.0)
                out[i, j] = v


def _fill_holes(mask: np.ndarray) -> np.ndarray:
    """Mask with every hole (background not connected to the border) filled."""
    free = ~mask
    reach = np.zeros_like(mask)
    reach[0, :] = free[0, :]
    reach[-1, :] = free[-1, :]
    reach[:, 0] |= free[:, 0]
    reach[:, -1] |= free[:, -1]
    while True:
        grown = reach.copy()
        grown[1:, :] |= reach[:-1, :]
        grown[:-1, :] |= reach[1:, :]
        grown[:, 1:] |= reach[:, :-1]
        grown[:, :-1] |= reach[:, 1:]
        grown &= free
        if np.array_equal(grown, reach):
            return ~reach
        reach = grown


def _disc_seeds(mask: np.ndarray, blk: int, prm: DetectionParams) -> list:
    """Disc seeds (cx, cy, r) [px] at the maxima of the distance transform of ``mask``.

    The distance of a masked block to the nearest unmasked block (or the grid edge)
    peaks at disc centres; touching discs are joined only by narrow necks whose
    distance is lower, so each disc keeps its own maximum.
    """
    filled = _fill_holes(mask)
    iy, ix = np.nonzero(filled)
    if iy.size == 0:
        return []
    dpad = np.zeros((filled.shape[0] + 2, filled.shape[1] + 2))
    _chamfer_distance(np.pad(filled, 1).astype(np.uint8), dpad)
    dist = dpad[iy + 1, ix + 1]
    is_max = np.ones(iy.size, bool)
    for oy in (-1, 0, 1):
        for ox in (-1, 0, 1):
            if oy or ox:
                is_max &= dist >= dpad[iy + 1 + oy, ix + 1 + ox]
    # a disc of the smallest radius is >= 3 blocks wide; thin edges and lone blocks
    # (distance 1) never seed
    r_min = max(0.8 * prm.radius_min_px / blk, 1.5)
    cand = np.nonzero(is_max & (dist >= r_min))[0]
    cand = cand[np.argsort(-dist[cand], kind='stable')]
    seeds: list = []
    for c in cand:
        cy, cx, r = float(iy[c]), float(ix[c]), float(dist[c])
        if any(math.hypot(cx - sx, cy - sy) < max(sr, r) for sx, sy, sr in seeds):
            continue
        seeds.append((cx, cy, r))
        if len(seeds) >= prm.max_candidates:
            break
    return [((sx + 0.5) * blk, (sy + 0.5) * blk, sr * blk) for sx, sy, sr in seeds]


def _vortex_seeds(spec: np.ndarray, power: np.ndarray, band: np.ndarray,
                  row_of: np.ndarray, periodic: np.ndarray, blk: int,
                  prm: DetectionParams) -> list:
    """Disc seeds (cx, cy, r) [px, region frame] where blade-phase vortex lines meet.

    Notes
    -----
    The blade-pass component of a block's event series has the phase
    direction * B * azimuth (+ const) around its rotor centre: its spatial gradient
    (from the neighbours' spectra at the block's own peak frequency) is tangential
    with magnitude B / r. Each periodic block therefore votes for the centre at
    distance B / |grad| perpendicular to the gradient, for every B of the search
    range and both rotation senses; only the true B and sense converge. Touching
    discs keep separate vote peaks (their blocks point at their own centres),
    unlike the distance transform of a merged mask. The radius seed is from the
    distances of the blocks that voted for the peak (90th percentile ~ 0.95 R).
    """
    nby, nbx = row_of.shape
    by, bx = np.nonzero(periodic)
    if by.size < 4:
        return []
    gx, gy = _phase_gradient(spec, power, band, row_of, periodic, by, bx)
    gn = np.hypot(gx, gy)
    ok = np.isfinite(gn) & (gn > 0.02) & (gn < 2.5)
    if ok.sum() < 4:
        return []
    px, py, gx, gy, gn = bx[ok].astype(float), by[ok].astype(float), gx[ok], gy[ok], gn[ok]
    acc, votes = _centre_votes(px, py, gx, gy, gn, nby, nbx, blk, prm)
    sm, cy, cx, order = _vote_peaks(acc, nby, nbx, prm)
    seeds = []
    for i in order[:prm.max_candidates]:
        x0, y0 = float(cx[i]), float(cy[i])
        d_vote = [np.hypot(vx - x0, vy - y0) for vx, vy, _ in votes]
        voters = np.unique(np.concatenate([idx[d < 1.5] for d, (_, _, idx) in
                                           zip(d_vote, votes)]))
        if voters.size < 3:
            continue
        dist = np.hypot(px[voters] - x0, py[voters] - y0)
        r0 = (float(np.percentile(dist, 90)) / 0.95 + 0.5) * blk
        seeds.append(((x0 + 0.5) * blk, (y0 + 0.5) * blk, r0, float(sm[cy[i], cx[i]])))
    return seeds


def _phase_gradient(spec: np.ndarray, power: np.ndarray, band: np.ndarray,
                    row_of: np.ndarray, periodic: np.ndarray, by: np.ndarray,
                    bx: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(gx, gy) [rad per block] of the blade-pass phase at the periodic blocks (by, bx).

    The phase is each block's spectrum at its own in-band peak frequency; the
    gradient is the central difference to the periodic neighbours (one-sided
    where only one neighbour is periodic, NaN where none is).
    """
    nby, nbx = row_of.shape
    pk = np.argmax(np.where(band[None, :], power, 0.0), axis=1)
    rows = row_of[by, bx]
    k = pk[rows]
    xb = np.conj(spec[rows, k])

    def dphase(dy: int, dx: int):
        ny, nx = by + dy, bx + dx
        ok = (ny >= 0) & (ny < nby) & (nx >= 0) & (nx < nbx)
        ok[ok] = periodic[ny[ok], nx[ok]]
        d = np.zeros(by.size)
        d[ok] = np.angle(spec[row_of[ny[ok], nx[ok]], k[ok]] * xb[ok])
        return ok, d

    def central(ok_p, d_p, ok_m, d_m):
        g = np.full(by.size, np.nan)
        g[ok_m] = -d_m[ok_m]
        g[ok_p] = d_p[ok_p]
        both = ok_p & ok_m
        g[both] = 0.5 * (d_p[both] - d_m[both])
        return g

    gx = central(*dphase(0, 1), *dphase(0, -1))
    gy = central(*dphase(1, 0), *dphase(-1, 0))
    return gx, gy


def _centre_votes(px: np.ndarray, py: np.ndarray, gx: np.ndarray, gy: np.ndarray,
                  gn: np.ndarray, nby: int, nbx: int, blk: int, prm: DetectionParams):
    """Bilinear vote map ((nby + 2, nbx + 2), one block of border) and the votes.

    Block (px, py) with phase gradient (gx, gy), |g| = gn, votes at distance
    B / gn across the gradient, for every B of the search range and both senses
    (within the radius range). Returns (acc, votes), votes a list of (vx, vy,
    indices of the voting blocks) per (B, sense).
    """
    ux, uy = -gy / gn, gx / gn
    acc = np.zeros((nby + 2, nbx + 2))
    votes = []
    r_lo, r_hi = 0.5 * prm.radius_min_px / blk, prm.radius_max_px / blk
    for b in range(prm.blades_min, prm.blades_max + 1):
        r = b / gn
        use = (r >= r_lo) & (r <= r_hi)
        for sgn in (1.0, -1.0):
            vx = px[use] + sgn * r[use] * ux[use]
            vy = py[use] + sgn * r[use] * uy[use]
            votes.append((vx, vy, np.nonzero(use)[0]))
            inside = (vx > -1) & (vx < nbx) & (vy > -1) & (vy < nby)
            vx, vy = vx[inside] + 1.0, vy[inside] + 1.0
            ix, iy = np.floor(vx).astype(np.int64), np.floor(vy).astype(np.int64)
            fx, fy = vx - ix, vy - iy
            for oy, wy in ((0, 1.0 - fy), (1, fy)):
                for ox, wx in ((0, 1.0 - fx), (1, fx)):
                    np.add.at(acc, (iy + oy, ix + ox), wx * wy)
    return acc, votes


def _vote_peaks(acc: np.ndarray, nby: int, nbx: int, prm: DetectionParams):
    """Vote peaks: (3 x 3 summed votes sm, peak rows, peak columns, strongest-first order).

    A peak is a 5 x 5 maximum of the summed votes with at least
    ``vortex_votes_min``.
    """
    acc = acc[1:-1, 1:-1]
    sm = np.zeros_like(acc)
    pad = np.pad(acc, 1)
    for oy in range(3):
        for ox in range(3):
            sm += pad[oy:oy + nby, ox:ox + nbx]
    pad = np.pad(sm, 2)
    is_max = np.ones(sm.shape, bool)
    for oy in range(5):
        for ox in range(5):
            if oy != 2 or ox != 2:
                is_max &= sm >= pad[oy:oy + nby, ox:ox + nbx]
    cy, cx = np.nonzero(is_max & (sm >= prm.vortex_votes_min))
    order = np.argsort(-sm[cy, cx], kind='stable')
    return sm, cy, cx, order
