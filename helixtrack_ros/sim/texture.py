# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""Static scene edges: a random textured background, the drone body and the hubs.

Edges are stored as point samples (about one per pixel of edge length) with a
normal and a log-intensity step; they only fire events when the camera moves.
"""

import math

import numpy as np

from .scene import EdgeSet, RotorSpec


def _random_contrast(rng: np.random.Generator, n: int, lo: float = 0.1,
                     hi: float = 0.6) -> np.ndarray:
    return rng.choice([-1.0, 1.0], n) * rng.uniform(lo, hi, n)


def ellipse_edges(cx: float, cy: float, a: float, b: float, angle: float,
                  contrast: float) -> EdgeSet:
    """Samples of an ellipse outline; ``contrast`` = outside minus inside."""
    # parameter steps of at most 1 px along the outline
    n = max(8, int(math.ceil(2 * math.pi * max(a, b) * 1.05)))
    t = (np.arange(n) + 0.5) * (2 * math.pi / n)
    ca, sa = math.cos(angle), math.sin(angle)
    ex, ey = a * np.cos(t), b * np.sin(t)
    # tangent length per parameter step = local spacing
    tx, ty = -a * np.sin(t), b * np.cos(t)
    step = np.hypot(tx, ty) * (2 * math.pi / n)
    nx, ny = b * np.cos(t), a * np.sin(t)
    nn = np.hypot(nx, ny)
    nx, ny = nx / nn, ny / nn
    xy = np.column_stack([cx + ca * ex - sa * ey, cy + sa * ex + ca * ey])
    nrm = np.column_stack([ca * nx - sa * ny, sa * nx + ca * ny])
    return EdgeSet(xy, nrm, np.full(n, contrast), np.minimum(step, 1.0))


def segment_edges(x0: float, y0: float, x1: float, y1: float, contrast: float) -> EdgeSet:
    """Samples of a straight edge; ``contrast`` = left-normal side minus the other."""
    length = math.hypot(x1 - x0, y1 - y0)
    n = max(2, int(math.ceil(length)))
    s = (np.arange(n) + 0.5) / n
    xy = np.column_stack([x0 + (x1 - x0) * s, y0 + (y1 - y0) * s])
    nrm = np.tile([-(y1 - y0) / length, (x1 - x0) / length], (n, 1))
    return EdgeSet(xy, nrm, np.full(n, contrast), np.full(n, min(length / n, 1.0)))


def rotor_circle_edges(rotor: RotorSpec, radius: float, contrast: float) -> EdgeSet:
    """A circle of the rotor plane (hub, motor bell) seen through ``H0``."""
    h = rotor.homography0()
    n = max(16, int(math.ceil(2 * math.pi * radius * rotor.radius_px * 1.3)))
    t = (np.arange(n) + 0.5) * (2 * math.pi / n)
    u = np.stack([radius * np.cos(t), radius * np.sin(t), np.ones(n)])
    z = h @ u
    xy = (z[:2] / z[2]).T
    d = np.roll(xy, -1, axis=0) - np.roll(xy, 1, axis=0)
    step = 0.5 * np.hypot(d[:, 0], d[:, 1])
    nrm = np.column_stack([d[:, 1], -d[:, 0]]) / np.maximum(2 * step, 1e-9)[:, None]
    # orient outwards
    out = (xy - xy.mean(axis=0)) * nrm
    nrm = np.where((out.sum(axis=1) < 0)[:, None], -nrm, nrm)
    return EdgeSet(xy, nrm, np.full(n, contrast), np.minimum(step, 1.0))


def random_background(rng: np.random.Generator, width: int, height: int, margin: float,
                      edge_length_px: float) -> EdgeSet:
    """Random blobs and straight edges covering the view plus a motion margin.

    Parameters
    ----------
    rng : numpy.random.Generator
        Scene randomness.
    width, height : int
        Sensor size.
    margin : float
        Extra border [px] so that camera motion never reveals an empty area.
    edge_length_px : float
        Approximate total edge length inside the (unmoved) view.
    """
    parts = []
    x_lo, x_hi = -margin, width + margin
    y_lo, y_hi = -margin, height + margin
    area_ratio = (x_hi - x_lo) * (y_hi - y_lo) / float(width * height)
    budget = edge_length_px * area_ratio
    # a third of the budget as long straight edges (furniture, floor tiles, cables)
    used = 0.0
    while used < budget / 3:
        x0, y0 = rng.uniform(x_lo, x_hi), rng.uniform(y_lo, y_hi)
        length = rng.uniform(60, 500)
        ang = rng.uniform(0, math.pi)
        x1, y1 = x0 + length * math.cos(ang), y0 + length * math.sin(ang)
        parts.append(segment_edges(x0, y0, x1, y1, float(_random_contrast(rng, 1)[0])))
        used += length
    # the rest as blobs of log-normal size (texture, clutter)
    while used < budget:
        a = float(np.exp(rng.uniform(math.log(3.0), math.log(45.0))))
        b = a * rng.uniform(0.35, 1.0)
        e = ellipse_edges(rng.uniform(x_lo, x_hi), rng.uniform(y_lo, y_hi), a, b,
                          rng.uniform(0, math.pi), float(_random_contrast(rng, 1)[0]))
        parts.append(e)
        used += float(e.weight.sum())
    return EdgeSet.concatenate(parts)


def drone_body_edges(rng: np.random.Generator, rotors: 'list[RotorSpec]') -> EdgeSet:
    """Body plate, arms and motor hubs of a multirotor whose rotors are given."""
    if not rotors:
        return EdgeSet.empty()
    parts = []
    centers = np.array([r.center_px for r in rotors], np.float64)
    c = centers.mean(axis=0)
    rad = float(np.mean([r.radius_px for r in rotors]))
    body_con = -0.8
    if len(rotors) >= 2:
        # body plate: a rounded rectangle approximated by an ellipse plus a top deck
        parts.append(ellipse_edges(c[0], c[1], 0.55 * rad, 0.35 * rad, 0.0, -body_con))
        parts.append(ellipse_edges(c[0], c[1] - 0.05 * rad, 0.3 * rad, 0.18 * rad, 0.0,
                                   float(_random_contrast(rng, 1, 0.3, 0.8)[0])))
        half_w = 0.09 * rad
        for rc in centers:
            d = rc - c
            length = float(np.hypot(*d))
            if length < 1e-6:
                continue
            u = d / length
            nrm = np.array([-u[1], u[0]])
            a0 = c + u * 0.4 * rad
            a1 = rc - u * rad * 0.12
            for sgn in (-1.0, 1.0):
                p0 = a0 + sgn * half_w * nrm
                p1 = a1 + sgn * half_w * nrm
                parts.append(segment_edges(p0[0], p0[1], p1[0], p1[1], sgn * body_con))
    for r in rotors:
        parts.append(rotor_circle_edges(r, r.hub_radius, -body_con))
        parts.append(rotor_circle_edges(r, 0.45 * r.hub_radius,
                                        float(_random_contrast(rng, 1, 0.2, 0.6)[0])))
    return EdgeSet.concatenate(parts)
