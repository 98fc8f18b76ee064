# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""Detection stage 3b: disc candidates, their tip radius and homography.

Around each centre seed the tip edge is found along rays in the
motion-compensated pixel-count image and fitted with an ellipse, from which the
q-homography follows (small-tilt solution).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

from helixtrack_ros.core.homography import homography_from_paper_q

if TYPE_CHECKING:
    from helixtrack_ros.core.detection_types import DetectionParams


def _box3(img: np.ndarray) -> np.ndarray:
    """3 x 3 box mean (edges replicated)."""
    p = np.pad(img.astype(np.float32), 1, mode='edge')
    h, w = img.shape
    out = np.zeros((h, w), np.float32)
    for oy in range(3):
        for ox in range(3):
            out += p[oy:oy + h, ox:ox + w]
    return out / 9.0


def _tip_points(smooth: np.ndarray, box, cx: float, cy: float, r0: float,
                n_rays: int = 72) -> tuple[np.ndarray, np.ndarray]:
    """Tip-edge points: where the event count falls below half of the disc level.

    Along each ray from (cx, cy), the disc level is the median of the counts
    between 0.3 r0 and 0.9 r0 (thin background edges crossing the disc, which can
    outshine a slow rotor under strong egomotion, do not move it); the edge is the
    first half-level crossing
    (two samples in a row below) beyond the level's position, linearly
    interpolated. Rays that leave the region first give no point.
    """
    x0, y0, x1, y1 = box
    step = 0.5
    radii = np.arange(0.3 * r0, 1.7 * r0 + step, step)
    ang = np.linspace(0.0, 2.0 * math.pi, n_rays, endpoint=False)
    ca, sa = np.cos(ang), np.sin(ang)
    px = cx + ca[:, None] * radii[None, :]
    py = cy + sa[:, None] * radii[None, :]
    xi = np.floor(px + 0.5).astype(np.int64)
    yi = np.floor(py + 0.5).astype(np.int64)
    inside = (xi >= x0) & (xi < x1) & (yi >= y0) & (yi < y1)
    prof = np.full(xi.shape, np.nan, np.float32)
    prof[inside] = smooth[yi[inside], xi[inside]]
    inner = radii <= 0.9 * r0
    ok = np.all(np.isfinite(prof[:, inner]), axis=1)
    prof, ca, sa = prof[ok], ca[ok], sa[ok]
    if prof.shape[0] == 0:
        return np.empty(0), np.empty(0)
    seg = prof[:, inner]
    level = np.median(seg, axis=1)
    start = np.argmax(seg >= level[:, None], axis=1)
    half = 0.5 * level[:, None]
    finite = np.isfinite(prof)
    below = finite & (prof < half)
    run = (below[:, :-1] & below[:, 1:]) | ~finite[:, :-1]
    run &= np.arange(run.shape[1])[None, :] >= start[:, None]
    j = np.argmax(run, axis=1)
    rows = np.arange(prof.shape[0])
    good = run[rows, j] & finite[rows, j] & (j > 0) & (level > 0.0)
    rows, j = rows[good], j[good]
    a = prof[rows, j - 1].astype(np.float64)
    b = prof[rows, j].astype(np.float64)
    frac = np.clip((a - half[rows, 0]) / np.maximum(a - b, 1e-9), 0.0, 1.0)
    r = radii[j - 1] + step * frac
    return cx + ca[rows] * r, cy + sa[rows] * r


def _fit_conic(x: np.ndarray, y: np.ndarray) -> np.ndarray | None:
    """Direct least-squares ellipse fit (constraint 4ac - b^2 = 1, stable 3x3 form).

    Returns conic coefficients (a, b, c, d, e, f) of a x^2 + b xy + c y^2 + d x + e y
    + f = 0 in the original coordinates, or None.
    """
    if x.size < 6:
        return None
    mx, my = float(x.mean()), float(y.mean())
    sc = float(np.sqrt(np.mean((x - mx) ** 2 + (y - my) ** 2)))
    if not sc > 0.0:
        return None
    u, v = (x - mx) / sc, (y - my) / sc
    d1 = np.column_stack([u * u, u * v, v * v])
    d2 = np.column_stack([u, v, np.ones_like(u)])
    s1, s2, s3 = d1.T @ d1, d1.T @ d2, d2.T @ d2
    try:
        tmat = -np.linalg.solve(s3, s2.T)
    except np.linalg.LinAlgError:
        return None
    m = s1 + s2 @ tmat
    m = np.vstack([m[2] / 2.0, -m[1], m[0] / 2.0])
    vals, vecs = np.linalg.eig(m)
    vecs = np.real(vecs)
    cond = 4.0 * vecs[0] * vecs[2] - vecs[1] ** 2
    good = np.nonzero(cond > 0)[0]
    if good.size == 0:
        return None
    a1 = vecs[:, good[0]]
    a, b, c = a1
    d, e, f = tmat @ a1
    # back to pixel coordinates: u = (x - mx) / sc
    A, B, C = a / sc ** 2, b / sc ** 2, c / sc ** 2
    D = d / sc - 2.0 * A * mx - B * my
    E = e / sc - 2.0 * C * my - B * mx
    F = f + A * mx * mx + B * mx * my + C * my * my - d * mx / sc - e * my / sc
    return np.array([A, B, C, D, E, F])


def _conic_ellipse(coef: np.ndarray):
    """Centre (2,), shape matrix M ((z-c)^T M^-1 (z-c) = 1) and semi-axes of a conic."""
    A, B, C, D, E, F = coef
    q = np.array([[A, 0.5 * B], [0.5 * B, C]])
    try:
        c = np.linalg.solve(2.0 * q, -np.array([D, E]))
    except np.linalg.LinAlgError:
        return None
    fc = A * c[0] ** 2 + B * c[0] * c[1] + C * c[1] ** 2 + D * c[0] + E * c[1] + F
    if fc == 0.0:
        return None
    minv = q / (-fc)
    vals = np.linalg.eigvalsh(minv)
    if not np.all(vals > 0):
        return None
    m = np.linalg.inv(minv)
    axes = 1.0 / np.sqrt(vals)          # ascending eigenvalues: major first
    return c, m, (float(axes[0]), float(axes[1]))


def _fit_tip_ellipse(smooth: np.ndarray, box, cx: float, cy: float, r0: float):
    """Robust ellipse through the tip edge around a seed: two ray passes, outliers out."""
    best = None
    for _ in range(2):
        px, py = _tip_points(smooth, box, cx, cy, r0)
        if px.size < 24:
            return None
        keep = np.ones(px.size, bool)
        fit = None
        for _ in range(3):
            coef = _fit_conic(px[keep], py[keep])
            if coef is None:
                return None
            fit = _conic_ellipse(coef)
            if fit is None:
                return None
            c, m, axes = fit
            dz = np.column_stack([px - c[0], py - c[1]])
            rho = np.sqrt(np.einsum('ni,ij,nj->n', dz, np.linalg.inv(m), dz))
            res = (rho - 1.0) * math.sqrt(axes[0] * axes[1])
            mad = float(np.median(np.abs(res[keep] - np.median(res[keep]))))
            new = np.abs(res) <= max(3.0 * 1.4826 * mad, 1.5)
            if new.sum() < 20 or np.array_equal(new, keep):
                keep = new if new.sum() >= 20 else keep
                break
            keep = new
        c, m, axes = fit
        best = (c, m, axes, int(keep.sum()), px.size)
        cx, cy, r0 = float(c[0]), float(c[1]), math.sqrt(axes[0] * axes[1])
    return best


def _q_from_ellipse(c: np.ndarray, m: np.ndarray, axes, squash_min: float):
    """Small-tilt q-homography (psi = 0) whose unit circle maps onto the ellipse.

    Returns (s, tx, ty, w1, w2) with H = [[s, 0, tx], [0, s, ty], [w1, w2, 1]]; for
    another psi the perspective becomes R(psi)^T w.

    Notes
    -----
    To first order the image of the unit circle is the ellipse of the Jacobian
    J = s I - t w^T at the centre, so the tilt shows only through the squash along
    t. Starting from the round solution (w = 0, s = major semi-axis, t = ellipse
    centre), Gauss-Newton on the back-warped radii |H^-1 z| - 1 of points z on
    the ellipse converges to the solution nearest to no tilt (the other sign
    would flip the disc). A disc whose axes differ by less than ``squash_min`` is
    taken as round.
    """
    a, b = axes
    if (a - b) / a < squash_min:
        return 0.5 * (a + b), float(c[0]), float(c[1]), 0.0, 0.0
    vals, vecs = np.linalg.eigh(m)
    th = np.linspace(0.0, 2.0 * math.pi, 48, endpoint=False)
    pts = (c[:, None] + vecs @ (np.sqrt(np.maximum(vals, 0.0))[:, None]
                                * np.vstack([np.cos(th), np.sin(th)])))
    zh = np.vstack([pts, np.ones(th.size)])

    def resid(q):
        h = np.array([[q[0], 0.0, q[1]], [0.0, q[0], q[2]], [q[3], q[4], 1.0]])
        try:
            u = np.linalg.solve(h, zh)
        except np.linalg.LinAlgError:
            return None
        return np.hypot(u[0] / u[2], u[1] / u[2]) - 1.0

    q = np.array([a, c[0], c[1], 0.0, 0.0])
    scale = np.array([1.0, 1.0, 1.0, 1e-5, 1e-5])
    r = resid(q)
    for _ in range(20):
        jac = np.empty((th.size, 5))
        for i in range(5):
            dq = np.zeros(5)
            dq[i] = scale[i] * 1e-3
            rp = resid(q + dq)
            if rp is None:
                return 0.5 * (a + b), float(c[0]), float(c[1]), 0.0, 0.0
            jac[:, i] = (rp - r) / dq[i]
        step, *_ = np.linalg.lstsq(jac, -r, rcond=None)
        q_new = q + step
        r_new = resid(q_new)
        if r_new is None or not np.all(np.isfinite(r_new)):
            break
        q, r = q_new, r_new
        if np.all(np.abs(step / scale) < 1e-6):
            break
    if not (np.all(np.isfinite(q)) and q[0] > 0 and abs(q[0] / a - 1.0) < 0.5):
        return 0.5 * (a + b), float(c[0]), float(c[1]), 0.0, 0.0
    return float(q[0]), float(q[1]), float(q[2]), float(q[3]), float(q[4])


def _inside(cand: dict, x: float, y: float) -> bool:
    """True when (x, y) lies inside the candidate's tip ellipse."""
    dz = np.array([x - cand['c'][0], y - cand['c'][1]])
    return float(dz @ cand['minv'] @ dz) < 1.0


def _disc_candidates(seeds: list, pix: np.ndarray, box, prm: DetectionParams) -> list:
    """Disc candidates: a tip ellipse fitted around each (cx, cy, r0) seed, in order.

    The seeds (region frame, vortex seeds first) are tried in turn; a seed inside
    an accepted disc, or a fit that overlaps one (e.g. a merged blob of touching
    discs), is skipped. Each candidate is a dict: ellipse centre ``c``, shape
    ``m`` and semi-axes ``axes``, its inverse shape ``minv``, the psi = 0
    q-homography parameters ``q`` = (s, tx, ty, w1, w2) and matrix ``H0``.
    """
    smooth = _box3(pix)
    cands = []
    for cx, cy, r0 in seeds[:2 * prm.max_candidates]:
        cx, cy = cx + box[0], cy + box[1]
        if any(_inside(o, cx, cy) for o in cands):
            continue
        fit = _fit_tip_ellipse(smooth, box, cx, cy, max(r0, prm.radius_min_px))
        if fit is None:
            continue
        c, m, axes = fit[:3]
        if not (prm.radius_min_px <= axes[1] and axes[0] <= prm.radius_max_px
                and axes[1] >= 0.5 * axes[0]):
            continue
        if not (box[0] <= c[0] < box[2] and box[1] <= c[1] < box[3]):
            continue
        r_new = math.sqrt(axes[0] * axes[1])
        if any(math.hypot(c[0] - o['c'][0], c[1] - o['c'][1])
               < 0.8 * (r_new + math.sqrt(o['axes'][0] * o['axes'][1])) for o in cands):
            continue
        s, tx, ty, w1, w2 = _q_from_ellipse(c, m, axes, prm.squash_min)
        h0 = homography_from_paper_q(s, 0.0, tx, ty, w1, w2)
        cands.append({'c': c, 'm': m, 'axes': axes, 'q': (s, tx, ty, w1, w2), 'H0': h0,
                      'minv': np.linalg.inv(m)})
        if len(cands) >= prm.max_candidates:
            break
    return cands
