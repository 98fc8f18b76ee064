# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""A simple lone-rotor event generator with exact ground truth (tests, benchmarks).

A B-blade rotor with dark blades of angular width W over a bright
background: every pixel of the disc between the hub and the tip fires an
OFF event when a leading blade edge crosses its centre and an ON event when
the trailing edge leaves it. Shaft speed ramps linearly from rpm0 to rpm1.
Event times get Gaussian jitter; uniform noise events are added over the
square around the disc. The rotor plane maps to the image by the paper's
homography H(q) (Eq. 1).
"""

from __future__ import annotations

from dataclasses import dataclass
import math

import numpy as np

from helixtrack_ros.core.events import EventArrays


@dataclass
class RotorTruth:
    """Ground truth of a synthetic rotor."""

    rpm0: float
    rpm1: float
    duration_s: float
    blades: int
    direction: int
    q_paper: np.ndarray
    theta0_rad: float
    t0_us: int
    blade_width_rad: float

    def rpm_shaft(self, t_us: np.ndarray) -> np.ndarray:
        """Shaft RPM at times t_us."""
        t = (np.asarray(t_us, dtype=np.float64) - self.t0_us) * 1e-6
        return self.rpm0 + (self.rpm1 - self.rpm0) * np.clip(t / self.duration_s, 0.0, 1.0)

    def shaft_angle(self, t_us: np.ndarray) -> np.ndarray:
        """Unwrapped shaft angle theta_shaft(t) [rad] (increasing)."""
        t = (np.asarray(t_us, dtype=np.float64) - self.t0_us) * 1e-6
        w0 = self.rpm0 * 2 * math.pi / 60.0
        al = (self.rpm1 - self.rpm0) * 2 * math.pi / 60.0 / self.duration_s
        return self.theta0_rad + w0 * t + 0.5 * al * t * t


def homography_paper(q: np.ndarray) -> np.ndarray:
    """H of Eq. (1) from q = [s, psi, tx, ty, p31, p32]."""
    s, psi, tx, ty, p31, p32 = q
    return np.array([[s * math.cos(psi), -s * math.sin(psi), tx],
                     [s * math.sin(psi), s * math.cos(psi), ty], [p31, p32, 1.0]])


def make_rotor_events(duration_s: float = 0.5, rpm0: float = 10_000.0,
                      rpm1: float | None = None, blades: int = 2,
                      center_px: tuple[float, float] = (640.0, 360.0),
                      radius_px: float = 100.0, psi_rad: float = 0.0,
                      perspective: tuple[float, float] = (0.0, 0.0), direction: int = 1,
                      blade_width_rad: float = 0.25, hub_frac: float = 0.12,
                      jitter_us: float = 5.0, noise_frac: float = 0.02,
                      theta0_rad: float = 0.3, t0_us: int = 1_000_000,
                      seed: int = 0) -> tuple[EventArrays, RotorTruth]:
    """Generate the events of one rotor.

    Parameters
    ----------
    duration_s : float
        Length of the stream [s].
    rpm0, rpm1 : float
        Shaft RPM at the start and the end (linear ramp; rpm1 None = rpm0).
    blades : int
        Blade count B.
    center_px, radius_px, psi_rad, perspective : optional
        Homography q = [radius, psi, cx, cy, p31, p32].
    direction : int
        +1: blade angle atan2(u_y, u_x) increases with time; -1 decreases.
    blade_width_rad : float
        Angular width W of a blade [rad of shaft angle].
    hub_frac : float
        Events only for hub_frac <= |u| <= 1.
    jitter_us : float
        Standard deviation of the timing jitter [us].
    noise_frac : float
        Uniform noise events as a fraction of the rotor events.
    theta0_rad : float
        Shaft angle at t0.
    t0_us : int
        Time of the first possible event [us].
    seed : int
        Random seed.

    Returns
    -------
    EventArrays, RotorTruth
    """
    rng = np.random.default_rng(seed)
    rpm1 = rpm0 if rpm1 is None else rpm1
    q = np.array([radius_px, psi_rad, center_px[0], center_px[1], perspective[0],
                  perspective[1]], dtype=np.float64)
    truth = RotorTruth(rpm0, rpm1, duration_s, blades, direction, q, theta0_rad, t0_us,
                       blade_width_rad)
    half = int(math.ceil(radius_px * 1.6)) + 2
    cx, cy = int(round(center_px[0])), int(round(center_px[1]))
    px, py, a = _disc_pixels(q, cx, cy, half, hub_frac)
    t, x, y, p = _edge_events(truth, px, py, a)
    t = t + rng.normal(0.0, jitter_us * 1e-6, t.size)
    n_noise = int(noise_frac * t.size)
    if n_noise:
        t, x, y, p = _add_noise(rng, n_noise, duration_s, (cx, cy, half), t, x, y, p)
    t_us = np.clip(np.round(t * 1e6), 0, duration_s * 1e6).astype(np.int64) + t0_us
    order = np.argsort(t_us, kind='stable')
    ev = EventArrays(t_us[order], x[order].astype(np.uint16), y[order].astype(np.uint16),
                     p[order])
    return ev, truth


def _disc_pixels(q: np.ndarray, cx: int, cy: int, half: int,
                 hub_frac: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Pixels of the square around (cx, cy) whose centre maps into the blade annulus.

    Returns their x, y and the angle atan2(u_y, u_x) of their rotor-plane point.
    """
    gx, gy = np.meshgrid(np.arange(cx - half, cx + half + 1), np.arange(cy - half, cy + half + 1))
    gx = gx.ravel().astype(np.float64)
    gy = gy.ravel().astype(np.float64)
    ok = (gx >= 0) & (gy >= 0)
    gx, gy = gx[ok], gy[ok]
    ut = np.linalg.inv(homography_paper(q)) @ np.stack([gx, gy, np.ones_like(gx)])
    ux, uy = ut[0] / ut[2], ut[1] / ut[2]
    r = np.hypot(ux, uy)
    disc = (r >= hub_frac) & (r <= 1.0)
    return gx[disc], gy[disc], np.arctan2(uy[disc], ux[disc])


def _edge_events(truth: RotorTruth, px: np.ndarray, py: np.ndarray,
                 a: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Exact (t [s from t0], x, y, p) of every blade-edge crossing of the disc pixels.

    OFF where a leading edge arrives, ON where a trailing edge leaves; the
    crossing time inverts the linear RPM ramp of ``truth``.
    """
    duration_s, theta0_rad, width = truth.duration_s, truth.theta0_rad, truth.blade_width_rad
    th_end = float(truth.shaft_angle(np.array([truth.t0_us + duration_s * 1e6]))[0])
    period = 2 * math.pi / truth.blades
    w0 = truth.rpm0 * 2 * math.pi / 60.0
    al = (truth.rpm1 - truth.rpm0) * 2 * math.pi / 60.0 / duration_s
    parts_t, parts_x, parts_y, parts_p = [], [], [], []
    for pol, off in ((0, -0.5 * width), (1, 0.5 * width)):
        # edge crosses the pixel when theta_shaft = direction a + off (mod 2 pi / B)
        target = truth.direction * a + off
        first = theta0_rad + np.mod(target - theta0_rad, period)
        count = np.where(first <= th_end, np.floor((th_end - first) / period) + 1, 0)
        count = count.astype(np.int64)
        idx = np.repeat(np.arange(first.size), count)
        k = np.arange(idx.size) - np.repeat(np.cumsum(count) - count, count)
        th = first[idx] + k * period - theta0_rad
        if abs(al) > 1e-12:
            t = (-w0 + np.sqrt(w0 * w0 + 2.0 * al * th)) / al
        else:
            t = th / w0
        parts_t.append(t)
        parts_x.append(px[idx])
        parts_y.append(py[idx])
        parts_p.append(np.full(idx.size, pol, dtype=np.uint8))
    return (np.concatenate(parts_t), np.concatenate(parts_x), np.concatenate(parts_y),
            np.concatenate(parts_p))


def _add_noise(rng: np.random.Generator, n: int, duration_s: float,
               square: tuple[int, int, int], t: np.ndarray, x: np.ndarray, y: np.ndarray,
               p: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Append ``n`` uniform noise events over the square (cx, cy, half) around the disc."""
    cx, cy, half = square
    t = np.concatenate([t, rng.uniform(0.0, duration_s, n)])
    x = np.concatenate([x, rng.integers(max(cx - half, 0), cx + half + 1, n)])
    y = np.concatenate([y, rng.integers(max(cy - half, 0), cy + half + 1, n)])
    p = np.concatenate([p, rng.integers(0, 2, n).astype(np.uint8)])
    return t, x, y, p
