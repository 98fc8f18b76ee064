# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""Detection stage 3b: disc candidates, their tip radius and homography.

Around each centre seed the tip edge is found along rays in the
motion-compensated pixel-count image and fitted with an ellipse, from which the
q-homography follows (small-tilt solution); the kernels are in ``detection_ellipse``.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

from helixtrack_ros.core.detection_ellipse import N_FIT, _box3_region, _fit_disc
from helixtrack_ros.core.homography import homography_from_paper_q

if TYPE_CHECKING:
    from helixtrack_ros.core.detection_types import DetectionParams


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
    x0, y0, x1, y1 = box
    smooth = np.empty((y1 - y0, x1 - x0), np.float32)
    _box3_region(pix, x0, y0, x1, y1, smooth)
    fit = np.empty(N_FIT)
    cands = []
    for cx, cy, r0 in seeds[:2 * prm.max_candidates]:
        cx, cy = cx + x0, cy + y0
        if any(_inside(o, cx, cy) for o in cands):
            continue
        if not _fit_disc(smooth, x0, y0, x1, y1, float(cx), float(cy),
                         float(max(r0, prm.radius_min_px)), float(prm.squash_min), fit):
            continue
        c, axes = fit[0:2].copy(), (float(fit[6]), float(fit[7]))
        if not (prm.radius_min_px <= axes[1] and axes[0] <= prm.radius_max_px
                and axes[1] >= 0.5 * axes[0]):
            continue
        if not (x0 <= c[0] < x1 and y0 <= c[1] < y1):
            continue
        r_new = math.sqrt(axes[0] * axes[1])
        if any(math.hypot(c[0] - o['c'][0], c[1] - o['c'][1])
               < 0.8 * (r_new + math.sqrt(o['axes'][0] * o['axes'][1])) for o in cands):
            continue
        s, tx, ty, w1, w2 = (float(v) for v in fit[8:13])
        cands.append({'c': c, 'm': fit[2:6].reshape(2, 2).copy(), 'axes': axes,
                      'q': (s, tx, ty, w1, w2),
                      'H0': homography_from_paper_q(s, 0.0, tx, ty, w1, w2),
                      'minv': fit[13:17].reshape(2, 2).copy()})
        if len(cands) >= prm.max_candidates:
            break
    return cands
