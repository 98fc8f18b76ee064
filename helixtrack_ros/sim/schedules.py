# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""Shaft-RPM schedules with an exact, closed-form shaft angle.

A schedule is a piecewise-linear base curve through knots ``(t_us, rpm)`` plus a
sum of sinusoids. Both integrate in closed form, so the shaft angle handed out
as ground truth is the exact integral of the RPM curve (up to float64 rounding).
"""

from dataclasses import dataclass, field
import math

import numpy as np

RPM_TO_RAD_PER_US = 2.0 * math.pi / 60.0 / 1e6


@dataclass(frozen=True)
class RpmSchedule:
    """Shaft speed as a function of sensor time.

    ``rpm(t) = base(t) + sum_i amp_i * sin(2 pi f_i t + phase_i)`` where ``base`` is
    piecewise linear through ``knots_t_us``/``knots_rpm`` (held constant outside).

    Attributes
    ----------
    knots_t_us : tuple of float
        Increasing knot times [us].
    knots_rpm : tuple of float
        Shaft RPM at the knots.
    sine_amp_rpm, sine_freq_hz, sine_phase_rad : tuple of float
        Sinusoidal terms added on top of the base curve.
    theta0_rad : float
        Shaft angle at t = 0.
    """

    knots_t_us: tuple = (0.0,)
    knots_rpm: tuple = (10_000.0,)
    sine_amp_rpm: tuple = ()
    sine_freq_hz: tuple = ()
    sine_phase_rad: tuple = ()
    theta0_rad: float = 0.0
    _cum: np.ndarray = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        kt = np.asarray(self.knots_t_us, np.float64)
        kr = np.asarray(self.knots_rpm, np.float64)
        if kt.ndim != 1 or kt.size == 0 or kt.shape != kr.shape:
            raise ValueError('knots_t_us and knots_rpm must be equal-length, non-empty 1-D')
        if np.any(np.diff(kt) <= 0):
            raise ValueError('knots_t_us must be strictly increasing')
        n = len(self.sine_amp_rpm)
        if len(self.sine_freq_hz) != n or len(self.sine_phase_rad) != n:
            raise ValueError('sine_amp_rpm, sine_freq_hz, sine_phase_rad must match in length')
        # cumulative integral of the base curve (rpm * us) at each knot
        seg = 0.5 * (kr[1:] + kr[:-1]) * np.diff(kt)
        object.__setattr__(self, '_cum', np.concatenate([[0.0], np.cumsum(seg)]))

    # ------------------------------------------------------------------ evaluation
    def rpm(self, t_us: np.ndarray) -> np.ndarray:
        """Shaft RPM at times ``t_us`` (any shape, float or int microseconds)."""
        t = np.asarray(t_us, np.float64)
        kt = np.asarray(self.knots_t_us, np.float64)
        out = np.interp(t, kt, np.asarray(self.knots_rpm, np.float64))
        ts = t * 1e-6
        for a, f, ph in zip(self.sine_amp_rpm, self.sine_freq_hz, self.sine_phase_rad,
                                strict=True):
            out = out + a * np.sin(2.0 * math.pi * f * ts + ph)
        return out

    def _from_first_knot(self, t: np.ndarray) -> np.ndarray:
        """Integral of the base curve from the first knot to ``t`` [rpm * us]."""
        kt = np.asarray(self.knots_t_us, np.float64)
        kr = np.asarray(self.knots_rpm, np.float64)
        i = np.clip(np.searchsorted(kt, t, side='right') - 1, 0, kt.size - 1)
        dt = t - kt[i]
        if kt.size > 1:
            ii = np.minimum(i, kt.size - 2)
            slope = (kr[ii + 1] - kr[ii]) / (kt[ii + 1] - kt[ii])
            slope = np.where(i >= kt.size - 1, 0.0, slope)
        else:
            slope = np.zeros_like(t)
        val = self._cum[i] + kr[i] * dt + 0.5 * slope * dt * dt
        return np.where(t < kt[0], kr[0] * (t - kt[0]), val)

    def _base_integral(self, t: np.ndarray) -> np.ndarray:
        """Integral of the base curve from 0 to ``t`` [rpm * us]."""
        return self._from_first_knot(t) - self._from_first_knot(np.zeros(1))[0]

    def shaft_angle(self, t_us: np.ndarray) -> np.ndarray:
        """Unwrapped shaft angle [rad] at ``t_us``: exact integral of :meth:`rpm`."""
        t = np.asarray(t_us, np.float64)
        ang = self._base_integral(t) * RPM_TO_RAD_PER_US
        ts = t * 1e-6
        for a, f, ph in zip(self.sine_amp_rpm, self.sine_freq_hz, self.sine_phase_rad,
                                strict=True):
            w = 2.0 * math.pi * f
            # integral over seconds of a*sin(w s + ph), converted rpm*s -> rad
            ang = ang + a * (2.0 * math.pi / 60.0) * (math.cos(ph) - np.cos(w * ts + ph)) / w
        return self.theta0_rad + ang

    # ------------------------------------------------------------------ builders
    @staticmethod
    def constant(rpm: float, theta0_rad: float = 0.0) -> 'RpmSchedule':
        """A constant shaft speed."""
        return RpmSchedule((0.0,), (float(rpm),), theta0_rad=theta0_rad)

    @staticmethod
    def piecewise(t_us: 'list[float]', rpm: 'list[float]',
                  theta0_rad: float = 0.0) -> 'RpmSchedule':
        """Linear ramps between knots."""
        return RpmSchedule(tuple(float(v) for v in t_us), tuple(float(v) for v in rpm),
                           theta0_rad=theta0_rad)

    @staticmethod
    def spiral_sweep(rpm_max: float, rng: np.random.Generator, period_s: float = 6.0,
                     lo: float = 0.30, hi: float = 0.80, ripple: float = 0.03,
                     theta0_rad: float = 0.0) -> 'RpmSchedule':
        """The paper's slow 'spiral path' sweep between ``lo`` and ``hi`` of ``rpm_max``.

        A main slow sinusoid spanning most of the band, plus a few faster, small
        flight-like corrections (total amplitude ``ripple * rpm_max``); the sum never
        leaves ``[lo, hi] * rpm_max``.
        """
        mid = 0.5 * (lo + hi) * rpm_max
        half = 0.5 * (hi - lo) * rpm_max
        rip = ripple * rpm_max
        main = half - rip
        amps = [main]
        freqs = [1.0 / period_s]
        phases = [float(rng.uniform(0, 2 * math.pi))]
        n_small = 3
        for _ in range(n_small):
            amps.append(rip / n_small)
            freqs.append(float(rng.uniform(0.6, 4.0)))
            phases.append(float(rng.uniform(0, 2 * math.pi)))
        return RpmSchedule((0.0,), (mid,), tuple(amps), tuple(freqs), tuple(phases),
                           theta0_rad=theta0_rad)

    def rpm_bounds(self) -> 'tuple[float, float]':
        """Conservative lower/upper bounds of :meth:`rpm` over all time."""
        amp = float(np.sum(np.abs(self.sine_amp_rpm))) if self.sine_amp_rpm else 0.0
        return min(self.knots_rpm) - amp, max(self.knots_rpm) + amp
