# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""Naive pure-numpy twin of the simulator's per-pixel blade-crossing kernel.

Brute force: on a 1 us time grid, every pixel's centre is mapped to the rotor plane
through the exact ground-truth homography, tested for being covered by a blade
(angular interval around each blade centre line, between hub and tip), and every
change of coverage is reported as an edge crossing with its polarity. No knots, no
interpolation, no lattice arithmetic: an independent check of the fast kernel.
"""

import math

import numpy as np


def _covered(rotor, theta: float, r: np.ndarray, beta: np.ndarray) -> np.ndarray:
    """Whether the rotor-plane points (r, beta) lie on a blade at shaft angle theta."""
    width = rotor.blade_width_rad(r)
    center = rotor.blade_center_offset_rad(r)
    cov = np.zeros(r.shape, bool)
    for k in range(rotor.blades):
        a = rotor.direction * (theta + center) + 2.0 * math.pi * k / rotor.blades
        d = np.angle(np.exp(1j * (beta - a)))
        cov |= np.abs(d) <= 0.5 * width
    return cov & (r >= rotor.hub_radius) & (r <= 1.0)


def naive_rotor_crossings(rotor, width: int, height: int, t0_us: int, t1_us: int,
                          step_us: int = 1) -> dict:
    """Blade-edge crossings of every pixel on a regular time grid.

    Parameters
    ----------
    rotor : RotorSpec
        Rotor with its exact ``shaft_angle`` and ``homography``.
    width, height : int
        Sensor size.
    t0_us, t1_us : int
        Time range; crossings are reported at the first grid time after them.
    step_us : int
        Grid step.

    Returns
    -------
    dict
        ``t_us`` (grid time just after the crossing), ``x``, ``y``, ``p`` (1 = ON) and
        ``r`` (rotor-plane radius of the pixel at that time).
    """
    h0 = rotor.homography(np.array([t0_us], np.float64))[0]
    a = np.linspace(0, 2 * math.pi, 64, endpoint=False)
    z = h0 @ np.stack([np.cos(a), np.sin(a), np.ones_like(a)])
    xs, ys = z[0] / z[2], z[1] / z[2]
    x0, x1 = max(int(xs.min()) - 4, 0), min(int(xs.max()) + 5, width)
    y0, y1 = max(int(ys.min()) - 4, 0), min(int(ys.max()) + 5, height)
    gy, gx = np.mgrid[y0:y1, x0:x1]
    pix = np.stack([gx.ravel(), gy.ravel(), np.ones(gx.size)]).astype(np.float64)
    times = np.arange(t0_us, t1_us + 1, step_us, dtype=np.float64)
    thetas = rotor.shaft_angle(times)
    hs = rotor.homography(times)
    prev = None
    out_t, out_i, out_p, out_r = [], [], [], []
    bright = rotor.contrast > 0
    for k in range(times.size):
        u = np.linalg.solve(hs[k], pix)
        ux, uy = u[0] / u[2], u[1] / u[2]
        r = np.hypot(ux, uy)
        cov = _covered(rotor, float(thetas[k]), r, np.arctan2(uy, ux))
        if prev is not None:
            changed = np.nonzero(cov != prev)[0]
            for i in changed:
                arrive = bool(cov[i])
                out_t.append(times[k])
                out_i.append(i)
                out_p.append(1 if arrive == bright else 0)
                out_r.append(r[i])
        prev = cov
    idx = np.asarray(out_i, np.int64)
    return {'t_us': np.asarray(out_t, np.float64), 'x': gx.ravel()[idx],
            'y': gy.ravel()[idx], 'p': np.asarray(out_p, np.uint8),
            'r': np.asarray(out_r, np.float64)}
