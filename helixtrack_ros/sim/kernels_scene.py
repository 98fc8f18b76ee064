# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""Scene background of the simulator kernels: moving static edges and sensor noise."""

import math

import numpy as np

from helixtrack_ros.core.jit import numpy_errors

from ._kernel_cache import guard_kernel_cache
from .kernels_random import _M32, _S32, _hash_at, _poisson, _rand
from .kernels_sensor import SEN_INV_THR, _emit_counter

guard_kernel_cache()


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
