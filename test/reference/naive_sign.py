# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""Naive numpy twin of helixtrack_ros.core.rotation_sign (brute-force grid search)."""

import numpy as np


def wrap(a):
    return np.mod(a + np.pi, 2 * np.pi) - np.pi


def acquire(t_s, a, blades, direction, omega0, span, margin, span_s):
    """(zeta, phi_eff at t_ref, omega, score(+1), score(-1)) as the kernel defines them."""
    d_omega = np.pi / 8.0 / max(span_s, 1e-9)
    lo, hi = omega0 * (1 - span), omega0 * (1 + span)
    n_grid = int(np.ceil((hi - lo) / d_omega)) + 1
    if n_grid > 4001:
        n_grid = 4001
        d_omega = (hi - lo) / (n_grid - 1)
    if n_grid < 3:
        n_grid = 3
        d_omega = (hi - lo) / 2.0
    omegas = lo + d_omega * np.arange(n_grid)
    best, best_phase, best_omega = [0.0, 0.0], [0.0, 0.0], [0.0, 0.0]
    for si, zeta in enumerate((1.0, -1.0)):
        if direction != 0 and zeta != direction:
            best[si] = -1.0
            continue
        z = np.exp(1j * (blades * zeta * a[None, :] - omegas[:, None] * t_s[None, :])).sum(1)
        scores = np.abs(z) / max(len(a), 1)
        phases = np.angle(z)
        j = int(np.argmax(scores))
        om, ph = omegas[j], phases[j]
        if 0 < j < n_grid - 1:
            y0, y1, y2 = scores[j - 1], scores[j], scores[j + 1]
            den = y0 - 2 * y1 + y2
            if den < 0:
                off = 0.5 * (y0 - y2) / den
                if abs(off) < 1:
                    om = om + off * d_omega
                    nb = j + 1 if off > 0 else j - 1
                    ph = ph + abs(off) * wrap(phases[nb] - ph)
        best[si], best_phase[si], best_omega[si] = scores[j], ph, om
    if direction != 0:
        win = 0 if direction > 0 else 1
    elif best[1] > best[0] * (1 + margin):
        win = 1
    else:
        win = 0
    return (1 if win == 0 else -1), best_phase[win], best_omega[win], best[0], best[1]
