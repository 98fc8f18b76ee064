# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""Detection stage 3b kernels: the tip ellipse around a seed and its q-homography.

Around a centre seed the tip edge is found along rays in the smoothed,
motion-compensated count image, fitted with an ellipse (direct least squares,
outliers dropped by their median deviation) and turned into the small-tilt
q-homography whose unit circle maps onto it. One kernel call per seed: the same
steps in numpy spent most of their time in small-array calls
(benchmarks/RESULTS.md); ``test/reference/naive_detection.py`` keeps them as
the kernels' twin.
"""

from __future__ import annotations

import math

import numpy as np

from helixtrack_ros.core.jit import numpy_errors, numpy_errors_inline

N_RAYS = 72
"""Rays from the seed along which the tip edge is looked for."""
RAY_STEP_PX = 0.5
"""Sample spacing along a ray [px]."""
N_FIT = 17
"""Length of :func:`_fit_disc`'s output: centre (2), shape M (4, row-major),
semi-axes (2, major first), q = (s, tx, ty, w1, w2) (5), M^-1 (4)."""
_N_ELLIPSE_PTS = 48     # points on the ellipse the q-homography is fitted to


@numpy_errors
def _box3_region(pix, x0, y0, x1, y1, out):
    """3 x 3 box mean of ``pix`` over [x0, x1) x [y0, y1) into ``out[y - y0, x - x0]``.

    The image's own edges are replicated; float32 sums in row order (what the
    twin's shifted-image sums give).
    """
    h, w = pix.shape
    nine = np.float32(9.0)
    for y in range(y0, y1):
        for x in range(x0, x1):
            acc = np.float32(0.0)
            for oy in range(-1, 2):
                yy = min(max(y + oy, 0), h - 1)
                for ox in range(-1, 2):
                    acc += np.float32(pix[yy, min(max(x + ox, 0), w - 1)])
            out[y - y0, x - x0] = acc / nine


@numpy_errors_inline
def _median_sorted(v, n):
    """Median of the sorted ``v[:n]`` (mean of the middle two when n is even)."""
    k = n // 2
    if n % 2 == 1:
        return v[k]
    return (v[k - 1] + v[k]) / 2


@numpy_errors_inline
def _ray_edge(smooth, x0, y0, x1, y1, cx, cy, ca, sa, radii, n_in, prof, inside, seg):
    """Tip-edge radius along one ray, or -1.0.

    The disc level is the median count over the ray's samples inside 0.9 r0
    (all of which must lie in the region); the edge is the first place beyond
    the level's position where two samples in a row fall below half of it,
    linearly interpolated. A ray that leaves the region first gives none.
    """
    n_r = radii.shape[0]
    for i in range(n_r):
        xi = int(math.floor(cx + ca * radii[i] + 0.5))
        yi = int(math.floor(cy + sa * radii[i] + 0.5))
        inside[i] = x0 <= xi < x1 and y0 <= yi < y1
        if inside[i]:
            prof[i] = smooth[yi - y0, xi - x0]
        elif i < n_in:
            return -1.0
    for i in range(n_in):
        seg[i] = prof[i]
    seg[:n_in].sort()
    level = _median_sorted(seg, n_in)
    start = 0
    while prof[start] < level:
        start += 1
    half = np.float32(0.5) * level
    for j in range(start, n_r - 1):
        if not inside[j]:
            return -1.0
        if prof[j] < half and inside[j + 1] and prof[j + 1] < half:
            if j == 0 or not level > 0.0:
                return -1.0
            a, b = np.float64(prof[j - 1]), np.float64(prof[j])
            frac = min(max((a - np.float64(half)) / max(a - b, 1e-9), 0.0), 1.0)
            return radii[j - 1] + RAY_STEP_PX * frac
    return -1.0


@numpy_errors_inline
def _tip_points(smooth, x0, y0, x1, y1, cx, cy, r0, px, py):
    """Tip-edge points around (cx, cy) along :data:`N_RAYS` rays; their count.

    Samples every :data:`RAY_STEP_PX` from 0.3 r0 to 1.7 r0 (the level from
    those within 0.9 r0, see :func:`_ray_edge`).
    """
    radii = np.arange(0.3 * r0, 1.7 * r0 + RAY_STEP_PX, RAY_STEP_PX)
    n_in = 0
    while n_in < radii.shape[0] and radii[n_in] <= 0.9 * r0:
        n_in += 1
    prof = np.empty(radii.shape[0], np.float32)
    inside = np.empty(radii.shape[0], np.bool_)
    seg = np.empty(n_in, np.float32)
    n = 0
    for k in range(N_RAYS):
        ang = k * (2.0 * math.pi / N_RAYS)
        ca, sa = math.cos(ang), math.sin(ang)
        r = _ray_edge(smooth, x0, y0, x1, y1, cx, cy, ca, sa, radii, n_in, prof, inside,
                      seg)
        if r >= 0.0:
            px[n] = cx + ca * r
            py[n] = cy + sa * r
            n += 1
    return n


@numpy_errors_inline
def _solve3(a, b):
    """Solve a x = b (3 x 3, b (3, k)) in place by Gaussian elimination with partial
    pivoting; False when a is singular. ``a`` and ``b`` are overwritten (x in b)."""
    for col in range(3):
        p = col
        for r in range(col + 1, 3):
            if abs(a[r, col]) > abs(a[p, col]):
                p = r
        if a[p, col] == 0.0:
            return False
        if p != col:
            for k in range(3):
                a[p, k], a[col, k] = a[col, k], a[p, k]
            for k in range(b.shape[1]):
                b[p, k], b[col, k] = b[col, k], b[p, k]
        for r in range(col + 1, 3):
            f = a[r, col] / a[col, col]
            for k in range(col, 3):
                a[r, k] -= f * a[col, k]
            for k in range(b.shape[1]):
                b[r, k] -= f * b[col, k]
    for col in range(2, -1, -1):
        for k in range(b.shape[1]):
            s = b[col, k]
            for j in range(col + 1, 3):
                s -= a[col, j] * b[j, k]
            b[col, k] = s / a[col, col]
    return True


@numpy_errors_inline
def _cubic_roots(c2, c1, c0, roots):
    """Real roots of x^3 + c2 x^2 + c1 x + c0 (trigonometric / Cardano, then two Newton
    steps each) into ``roots``; their count (1 or 3)."""
    p = c1 - c2 * c2 / 3.0
    q = 2.0 * c2 ** 3 / 27.0 - c2 * c1 / 3.0 + c0
    disc = 4.0 * p ** 3 + 27.0 * q * q
    if p < 0.0 and disc <= 0.0:
        m = 2.0 * math.sqrt(-p / 3.0)
        arg = min(max(3.0 * q / (p * m), -1.0), 1.0)
        th = math.acos(arg) / 3.0
        for k in range(3):
            roots[k] = m * math.cos(th - 2.0 * math.pi * k / 3.0) - c2 / 3.0
        n = 3
    else:
        s = math.sqrt(max(disc / 108.0, 0.0))
        roots[0] = math.copysign(abs(-q / 2.0 + s) ** (1.0 / 3.0), -q / 2.0 + s) \
            + math.copysign(abs(-q / 2.0 - s) ** (1.0 / 3.0), -q / 2.0 - s) - c2 / 3.0
        n = 1
    for k in range(n):
        x = roots[k]
        for _ in range(2):
            d = (3.0 * x + 2.0 * c2) * x + c1
            if d != 0.0:
                x -= ((x + c2) * x + c1) * x / d + c0 / d
        roots[k] = x
    return n


@numpy_errors_inline
def _ellipse_eigenvector(m, a1):
    """The eigenvector of the 3 x 3 ``m`` whose conic (a, b, c) has 4ac - b^2 > 0 into
    ``a1``; False when none (the ellipse-specific solution of the direct fit)."""
    c2 = -(m[0, 0] + m[1, 1] + m[2, 2])
    c1 = (m[0, 0] * m[1, 1] - m[0, 1] * m[1, 0] + m[0, 0] * m[2, 2] - m[0, 2] * m[2, 0]
          + m[1, 1] * m[2, 2] - m[1, 2] * m[2, 1])
    c0 = -(m[0, 0] * (m[1, 1] * m[2, 2] - m[1, 2] * m[2, 1])
           - m[0, 1] * (m[1, 0] * m[2, 2] - m[1, 2] * m[2, 0])
           + m[0, 2] * (m[1, 0] * m[2, 1] - m[1, 1] * m[2, 0]))
    roots = np.empty(3)
    v = np.empty(3)
    for k in range(_cubic_roots(c2, c1, c0, roots)):
        best = 0.0
        for i, j in ((0, 1), (0, 2), (1, 2)):   # the null vector of m - lambda I
            ri0, ri1, ri2 = m[i, 0], m[i, 1], m[i, 2]
            rj0, rj1, rj2 = m[j, 0], m[j, 1], m[j, 2]
            if i == 0:
                ri0 -= roots[k]
            else:
                ri1 -= roots[k]
            if j == 1:
                rj1 -= roots[k]
            else:
                rj2 -= roots[k]
            x0, x1, x2 = ri1 * rj2 - ri2 * rj1, ri2 * rj0 - ri0 * rj2, ri0 * rj1 - ri1 * rj0
            nn = x0 * x0 + x1 * x1 + x2 * x2
            if nn > best:
                best = nn
                v[0], v[1], v[2] = x0, x1, x2
        if best > 0.0 and 4.0 * v[0] * v[2] - v[1] * v[1] > 0.0:
            a1[:] = v / math.sqrt(best)
            return True
    return False


@numpy_errors_inline
def _scatter(x, y, keep, n, mx, my, sc, s1, s2, s3):
    """The direct fit's scatter matrices D1^T D1, D1^T D2, D2^T D2 (added to s1, s2,
    s3) of the kept points in normalised coordinates u = (x - mx) / sc: D1 rows
    (u^2, uv, v^2), D2 rows (u, v, 1)."""
    d1, d2 = np.empty(3), np.empty(3)
    for i in range(n):
        if keep[i]:
            u, v = (x[i] - mx) / sc, (y[i] - my) / sc
            d1[0], d1[1], d1[2] = u * u, u * v, v * v
            d2[0], d2[1], d2[2] = u, v, 1.0
            for r in range(3):
                for k in range(3):
                    s1[r, k] += d1[r] * d1[k]
                    s2[r, k] += d1[r] * d2[k]
                    s3[r, k] += d2[r] * d2[k]


@numpy_errors_inline
def _fit_conic(x, y, keep, n, coef):
    """Direct least-squares ellipse through the kept points (constraint 4ac - b^2 = 1,
    the stable 3 x 3 form) into ``coef`` = (A, B, C, D, E, F) of
    A x^2 + B xy + C y^2 + D x + E y + F = 0 in pixels; False when none."""
    cnt, mx, my = 0, 0.0, 0.0
    for i in range(n):
        if keep[i]:
            cnt += 1
            mx += x[i]
            my += y[i]
    if cnt < 6:
        return False
    mx, my = mx / cnt, my / cnt
    ss = 0.0
    for i in range(n):
        if keep[i]:
            ss += (x[i] - mx) ** 2 + (y[i] - my) ** 2
    sc = math.sqrt(ss / cnt)
    if not sc > 0.0:
        return False
    s1, s2, s3 = np.zeros((3, 3)), np.zeros((3, 3)), np.zeros((3, 3))
    _scatter(x, y, keep, n, mx, my, sc, s1, s2, s3)
    tmat = -s2.T.copy()
    if not _solve3(s3, tmat):
        return False
    red = s1.copy()                      # the reduced scatter S1 + S2 T
    for r in range(3):
        for k in range(3):
            for j in range(3):
                red[r, k] += s2[r, j] * tmat[j, k]
    m = np.empty((3, 3))
    m[0] = red[2] / 2.0
    m[1] = -red[1]
    m[2] = red[0] / 2.0
    a1 = np.empty(3)
    if not _ellipse_eigenvector(m, a1):
        return False
    a, b, c = a1[0], a1[1], a1[2]
    d = tmat[0, 0] * a1[0] + tmat[0, 1] * a1[1] + tmat[0, 2] * a1[2]
    e = tmat[1, 0] * a1[0] + tmat[1, 1] * a1[1] + tmat[1, 2] * a1[2]
    f = tmat[2, 0] * a1[0] + tmat[2, 1] * a1[1] + tmat[2, 2] * a1[2]
    A, B, C = a / sc ** 2, b / sc ** 2, c / sc ** 2
    coef[0], coef[1], coef[2] = A, B, C
    coef[3] = d / sc - 2.0 * A * mx - B * my
    coef[4] = e / sc - 2.0 * C * my - B * mx
    coef[5] = f + A * mx * mx + B * mx * my + C * my * my - d * mx / sc - e * my / sc
    return True


@numpy_errors_inline
def _conic_ellipse(coef, out):
    """Centre, shape M ((z - c)^T M^-1 (z - c) = 1), semi-axes and M^-1 of a conic,
    into ``out`` in :data:`N_FIT`'s layout (q left alone); False when not an ellipse."""
    A, B, C, D, E, F = coef[0], coef[1], coef[2], coef[3], coef[4], coef[5]
    det = 4.0 * A * C - B * B
    if det == 0.0:
        return False
    c0 = (-2.0 * C * D + B * E) / det
    c1 = (-2.0 * A * E + B * D) / det
    fc = A * c0 * c0 + B * c0 * c1 + C * c1 * c1 + D * c0 + E * c1 + F
    if fc == 0.0:
        return False
    p, r, s = A / -fc, 0.5 * B / -fc, C / -fc      # M^-1
    hi = 0.5 * (p + s) + math.sqrt((0.5 * (p - s)) ** 2 + r * r)
    if not hi > 0.0:
        return False
    lo = (p * s - r * r) / hi
    if not lo > 0.0:
        return False
    dm = p * s - r * r
    out[0], out[1] = c0, c1
    out[2], out[3], out[4], out[5] = s / dm, -r / dm, -r / dm, p / dm
    out[6], out[7] = 1.0 / math.sqrt(lo), 1.0 / math.sqrt(hi)
    out[13], out[14], out[15], out[16] = p, r, r, s
    return True


@numpy_errors_inline
def _residuals_px(px, py, n, out, res):
    """Signed distances [px] of the points from the ellipse in ``out`` (radial, scaled
    by the mean semi-axis)."""
    g = math.sqrt(out[6] * out[7])
    for i in range(n):
        dx, dy = px[i] - out[0], py[i] - out[1]
        rho2 = dx * (out[13] * dx + out[14] * dy) + dy * (out[15] * dx + out[16] * dy)
        res[i] = (math.sqrt(rho2) - 1.0) * g


@numpy_errors_inline
def _keep_inliers(res, keep, n, new, tmp):
    """Inliers: |residual| within 3 scaled MADs of the kept ones (at least 1.5 px)
    into ``new``; their count."""
    m = 0
    for i in range(n):
        if keep[i]:
            tmp[m] = res[i]
            m += 1
    tmp[:m].sort()
    med = _median_sorted(tmp, m)
    for i in range(m):
        tmp[i] = abs(tmp[i] - med)
    tmp[:m].sort()
    thr = max(3.0 * 1.4826 * _median_sorted(tmp, m), 1.5)
    cnt = 0
    for i in range(n):
        new[i] = abs(res[i]) <= thr
        cnt += new[i]
    return cnt


@numpy_errors_inline
def _fit_tip_ellipse(smooth, x0, y0, x1, y1, cx, cy, r0, out):
    """Robust ellipse through the tip edge around a seed into ``out``: two ray passes
    (the second around the first's ellipse), up to three fits each with outliers out;
    False when too few points or no ellipse."""
    px, py = np.empty(N_RAYS), np.empty(N_RAYS)
    res, tmp, coef = np.empty(N_RAYS), np.empty(N_RAYS), np.empty(6)
    keep, new = np.empty(N_RAYS, np.bool_), np.empty(N_RAYS, np.bool_)
    for _ in range(2):
        n = _tip_points(smooth, x0, y0, x1, y1, cx, cy, r0, px, py)
        if n < 24:
            return False
        keep[:n] = True
        for _ in range(3):
            if not (_fit_conic(px, py, keep, n, coef) and _conic_ellipse(coef, out)):
                return False
            _residuals_px(px, py, n, out, res)
            cnt = _keep_inliers(res, keep, n, new, tmp)
            same = True
            for i in range(n):
                same = same and new[i] == keep[i]
            if cnt < 20 or same:
                if cnt >= 20:
                    keep[:n] = new[:n]
                break
            keep[:n] = new[:n]
        cx, cy, r0 = out[0], out[1], math.sqrt(out[6] * out[7])
    return True


@numpy_errors_inline
def _radial_residuals(q, zx, zy, r):
    """|H^-1 z| - 1 of the ellipse points for H = [[s, 0, tx], [0, s, ty], [w1, w2, 1]],
    q = (s, tx, ty, w1, w2), into ``r``; False when H is singular."""
    s, tx, ty, w1, w2 = q[0], q[1], q[2], q[3], q[4]
    det = s * (s - ty * w2) - tx * s * w1
    if det == 0.0:
        return False
    # adjugate of H (rows of H^-1 times det)
    i00, i01, i02 = s - ty * w2, tx * w2, -tx * s
    i10, i11, i12 = ty * w1, s - tx * w1, -s * ty
    i20, i21, i22 = -s * w1, -s * w2, s * s
    for k in range(zx.shape[0]):
        u0 = i00 * zx[k] + i01 * zy[k] + i02
        u1 = i10 * zx[k] + i11 * zy[k] + i12
        u2 = i20 * zx[k] + i21 * zy[k] + i22
        r[k] = math.hypot(u0 / u2, u1 / u2) - 1.0
    return True


@numpy_errors_inline
def _least_squares_step(jac, r, step):
    """The least-squares solution of jac step = -r (Householder QR; a column with no
    weight left gets no step)."""
    n, k = jac.shape
    a = jac.copy()
    b = -r
    for col in range(k):
        norm = math.sqrt(np.sum(a[col:, col] ** 2))
        if norm == 0.0:
            continue
        alpha = -norm if a[col, col] > 0.0 else norm
        v = a[col:, col].copy()
        v[0] -= alpha
        vv = np.sum(v * v)
        if vv == 0.0:
            continue
        for j in range(col, k):
            a[col:, j] -= (2.0 * np.sum(v * a[col:, j]) / vv) * v
        b[col:] -= (2.0 * np.sum(v * b[col:]) / vv) * v
    big = 0.0
    for col in range(k):
        big = max(big, abs(a[col, col]))
    for col in range(k - 1, -1, -1):
        if abs(a[col, col]) <= 1e-14 * big:
            step[col] = 0.0
            continue
        acc = b[col]
        for j in range(col + 1, k):
            acc -= a[col, j] * step[j]
        step[col] = acc / a[col, col]


@numpy_errors_inline
def _q_from_ellipse(out, squash_min):
    """Small-tilt q-homography (psi = 0) whose unit circle maps onto the ellipse in
    ``out``, written to ``out[8:13]`` = (s, tx, ty, w1, w2).

    Notes
    -----
    To first order the image of the unit circle is the ellipse of the Jacobian
    J = s I - t w^T at the centre, so the tilt shows only through the squash along
    t. Starting from the round solution (w = 0, s = major semi-axis, t = ellipse
    centre), Gauss-Newton (forward-difference Jacobian) on the back-warped radii
    |H^-1 z| - 1 of points z on the ellipse converges to the solution nearest to
    no tilt (the other sign would flip the disc). A disc whose axes differ by less
    than ``squash_min`` is taken as round: s = the mean semi-axis, w = 0.
    """
    a, b = out[6], out[7]
    out[8], out[9], out[10], out[11], out[12] = 0.5 * (a + b), out[0], out[1], 0.0, 0.0
    if (a - b) / a < squash_min:
        return
    # points on the ellipse: centre + major axis a cos th + minor axis b sin th
    half_angle = 0.5 * math.atan2(2.0 * out[3], out[2] - out[5])
    ux, uy = math.cos(half_angle), math.sin(half_angle)
    zx, zy = np.empty(_N_ELLIPSE_PTS), np.empty(_N_ELLIPSE_PTS)
    for k in range(_N_ELLIPSE_PTS):
        th = k * (2.0 * math.pi / _N_ELLIPSE_PTS)
        ca, sa = a * math.cos(th), b * math.sin(th)
        zx[k] = out[0] + ux * ca - uy * sa
        zy[k] = out[1] + uy * ca + ux * sa
    q = np.array([a, out[0], out[1], 0.0, 0.0])
    scale = np.array([1.0, 1.0, 1.0, 1e-5, 1e-5])
    r, rp, r_new = np.empty(_N_ELLIPSE_PTS), np.empty(_N_ELLIPSE_PTS), np.empty(_N_ELLIPSE_PTS)
    jac, step, dq = np.empty((_N_ELLIPSE_PTS, 5)), np.empty(5), np.empty(5)
    _radial_residuals(q, zx, zy, r)
    for _ in range(20):
        for i in range(5):
            dq[:] = q
            dq[i] += scale[i] * 1e-3
            if not _radial_residuals(dq, zx, zy, rp):
                return
            jac[:, i] = (rp - r) / (scale[i] * 1e-3)
        _least_squares_step(jac, r, step)
        dq[:] = q + step
        if not _radial_residuals(dq, zx, zy, r_new) or not np.all(np.isfinite(r_new)):
            break
        q[:] = dq
        r[:] = r_new
        if np.all(np.abs(step / scale) < 1e-6):
            break
    if np.all(np.isfinite(q)) and q[0] > 0.0 and abs(q[0] / a - 1.0) < 0.5:
        out[8:13] = q


@numpy_errors
def _fit_disc(smooth, x0, y0, x1, y1, cx, cy, r0, squash_min, out):
    """Tip ellipse and q-homography of the disc around a seed (cx, cy, r0) into
    ``out`` (:data:`N_FIT`); False when no ellipse fits.

    ``smooth`` is :func:`_box3_region`'s image of the region [x0, x1) x [y0, y1).
    """
    if not _fit_tip_ellipse(smooth, x0, y0, x1, y1, cx, cy, r0, out):
        return False
    _q_from_ellipse(out, squash_min)
    return True
