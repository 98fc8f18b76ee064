# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""Tachometer pulses in a camera's trigger input: shaft RPM as ground truth.

A bench like the paper's (Sec. 4.1: an infrared sensor aimed at reflective tape
on the rotor, its output wired to the camera's trigger input) puts
``pulses_per_rev`` rising edges per shaft turn into the event stream. The
shaft speed between two consecutive edges is ``60e6 / (pulses_per_rev * dt_us)``
RPM, the mean over that interval, given at its middle. Edges closer than a
fifth of the usual interval are bounces and dropped; an interval more than
25 % off the median of its neighbours (a missed or extra pulse, a smudge on the
tape) gives no value, and is counted. The simulator writes such pulses
(:func:`revolution_times`) so that the whole path is tested against the truth.
"""

from dataclasses import dataclass
import re

import numpy as np

#: rising edge value of a trigger event
RISING = 1
#: an edge closer to the one before than this share of the median interval is a bounce
_BOUNCE_SHARE = 0.2
#: an interval this far off the median of its neighbours gives no value
_OUTLIER_SHARE = 0.25
#: neighbours on each side whose median an interval is judged against
_NEIGHBOURS = 3


@dataclass(frozen=True)
class TachometerSpec:
    """Which trigger channel carries which rotor's pulses, and how many per turn."""

    channel: int
    rotor: str
    pulses_per_rev: int = 1


def parse_tachometer(text: str) -> TachometerSpec:
    """``CHANNEL=ROTOR`` or ``CHANNEL=ROTOR:PULSES`` (e.g. ``0=rotor_0:2``); ValueError."""
    m = re.fullmatch(r'\s*(\d+)\s*=\s*([A-Za-z_][\w]*)\s*(?::\s*(\d+)\s*)?', text)
    if not m:
        raise ValueError(f'--tachometer {text!r}: expected CHANNEL=ROTOR or '
                         'CHANNEL=ROTOR:PULSES_PER_REV, e.g. 0=rotor_0 or 0=rotor_0:2')
    spec = TachometerSpec(int(m.group(1)), m.group(2), int(m.group(3) or 1))
    if not 0 <= spec.channel <= 255 or not 1 <= spec.pulses_per_rev <= 64:
        raise ValueError(f'--tachometer {text!r}: the channel must be 0..255 and the pulses '
                         'per revolution 1..64')
    return spec


@dataclass(frozen=True)
class TachometerRpm:
    """Shaft RPM from one channel's pulses: the values and what was left out."""

    t_us: np.ndarray
    rpm: np.ndarray
    edges: int
    bounces: int
    outliers: int


def rpm_from_pulses(t_us: np.ndarray, value: np.ndarray, channel_id: np.ndarray,
                    spec: TachometerSpec) -> TachometerRpm:
    """Shaft RPM between consecutive rising edges of ``spec.channel`` (module docstring)."""
    t = np.sort(np.asarray(t_us, np.int64)[(np.asarray(channel_id) == spec.channel)
                                           & (np.asarray(value) == RISING)])
    edges = len(t)
    t, bounces = _debounced(t)
    if len(t) < 2:
        return TachometerRpm(np.zeros(0, np.int64), np.zeros(0), edges, bounces, 0)
    dt = np.diff(t).astype(np.float64)
    keep = _consistent(dt)
    mid = (t[:-1] + t[1:]) // 2
    rpm = 60e6 / (spec.pulses_per_rev * dt)
    return TachometerRpm(mid[keep], rpm[keep], edges, bounces, int(np.sum(~keep)))


def _debounced(t: np.ndarray) -> tuple[np.ndarray, int]:
    """Rising edges without the bounces (closer than a fifth of the median interval)."""
    if len(t) < 3:
        return t, 0
    short = _BOUNCE_SHARE * float(np.median(np.diff(t)))
    kept = [int(t[0])]
    for x in t[1:]:
        if x - kept[-1] >= short:
            kept.append(int(x))
    return np.asarray(kept, np.int64), len(t) - len(kept)


def _consistent(dt: np.ndarray) -> np.ndarray:
    """Whether each interval lies within 25 % of the median of its neighbours (itself
    left out: a missed pulse doubles one interval, the median of the others does not)."""
    n = len(dt)
    keep = np.ones(n, bool)
    if n < 3:
        return keep
    for i in range(n):
        lo, hi = max(0, i - _NEIGHBOURS), min(n, i + _NEIGHBOURS + 1)
        ref = float(np.median(np.r_[dt[lo:i], dt[i + 1:hi]]))
        keep[i] = abs(dt[i] - ref) <= _OUTLIER_SHARE * ref
    return keep


def revolution_times(shaft_angle_rad: 'np.ndarray', t_us: 'np.ndarray',
                     pulses_per_rev: int = 1) -> np.ndarray:
    """Times [us] at which an unwrapped, increasing shaft angle sampled at ``t_us`` passes
    each multiple of one turn / ``pulses_per_rev`` (linear between the samples)."""
    a = np.asarray(shaft_angle_rad, np.float64) * pulses_per_rev / (2.0 * np.pi)
    k = np.floor(a)
    cross = np.nonzero(k[1:] > k[:-1])[0]
    t0, t1 = t_us[cross].astype(np.float64), t_us[cross + 1].astype(np.float64)
    frac = (k[cross + 1] - a[cross]) / (a[cross + 1] - a[cross])
    return np.round(t0 + frac * (t1 - t0)).astype(np.int64)
