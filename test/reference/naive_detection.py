# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""Naive numpy twins of the numba kernels of helixtrack_ros.core.detection.

The disc fit (``fit_disc`` and its steps) is the numpy code the detection ran
before its ``detection_ellipse`` kernels.

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


def box3(img: np.ndarray) -> np.ndarray:
    """3 x 3 box mean (edges replicated)."""
    p = np.pad(img.astype(np.float32), 1, mode='edge')
    h, w = img.shape
    out = np.zeros((h, w), np.float32)
    for oy in range(3):
        for ox in range(3):
            out += p[oy:oy + h, ox:ox + w]
    return out / 9.0


def tip_points(smooth: np.ndarray, box, cx: float, cy: float, r0: float,
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


def fit_conic(x: np.ndarray, y: np.ndarray) -> np.ndarray | None:
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


def conic_ellipse(coef: np.ndarray):
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


def fit_tip_ellipse(smooth: np.ndarray, box, cx: float, cy: float, r0: float):
    """Robust ellipse through the tip edge around a seed: two ray passes, outliers out."""
    best = None
    for _ in range(2):
        px, py = tip_points(smooth, box, cx, cy, r0)
        if px.size < 24:
            return None
        keep = np.ones(px.size, bool)
        fit = None
        for _ in range(3):
            coef = fit_conic(px[keep], py[keep])
            if coef is None:
                return None
            fit = conic_ellipse(coef)
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


def q_from_ellipse(c: np.ndarray, m: np.ndarray, axes, squash_min: float):
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


def fit_disc(pix, box, cx, cy, r0, squash_min):
    """The kernel ``_fit_disc``'s output vector for a seed, or None."""
    smooth = box3(pix)
    fit = fit_tip_ellipse(smooth, box, cx, cy, r0)
    if fit is None:
        return None
    c, m, axes = fit[:3]
    q = q_from_ellipse(c, m, axes, squash_min)
    return np.concatenate([c, m.ravel(), axes, q, np.linalg.inv(m).ravel()])
