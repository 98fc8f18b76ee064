# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""The rotor layout's turn in the image, in each published RPM standard deviation.

A camera that rolls (or a drone that yaws under it) turns every blade pattern
in the image at its own rate, and a rotor's tracker cannot tell that rate from
its shaft's: the blade angle it tracks is the shaft angle plus the image's turn
(Sec. 3.2 tracks the phase in the image). Under the simulator's heaviest camera
shake the RPM error follows the layout's turn (benchmarks/RESULTS.md) and is
twice the phase filter's own standard deviation. Taking the turn off the rate
would need it precisely, and estimated from the tracked centres it made the
error larger at lighter shake; its size is known well enough to be stated. So
each TRACKING output's std becomes sqrt(std^2 + s^2), with s the RMS of the
layout's rotation rate [rad/s, as shaft RPM] over about the last ``RMS_TAU_US``,
the rate fitted over about the last ``RATE_TAU_US``. The rotation comes from
the lines between the centres of rotors TRACKING in consecutive packets.

A rotor tracked alone shows no turn of a layout, yet the camera turns it all
the same (single-rotor shaken scenes: values 1.1-1.3 % off with a filter std
of 0.4 %). Its turn is then taken to be as fast as the camera's pan and tilt,
which move the centre across the image: |v| / (sqrt(2) f) for a centre moving
at v [px/s] under a focal length f [px] (the same rate about each of the three
axes). f is not known here; it is taken as the sensor's width in pixels (a lens
about 53 degrees across; a longer lens means a smaller turn). A still centre
keeps the filter's std.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from helixtrack_ros.core.health import RotorState
from helixtrack_ros.pipeline.identity import disc_of

if TYPE_CHECKING:  # pragma: no cover
    from helixtrack_ros.pipeline.records import RotorOutput

#: the layout's rotation rate is the slope of its angle, fitted with weights that fall
#: by e over this much sensor time
RATE_TAU_US = 5_000
#: the std takes the RMS of that rate, weighted to fall by e over this much sensor time
RMS_TAU_US = 50_000
#: a stream gap or a step back in time longer than this starts the measure again
RESTART_US = 50_000
#: rad/s -> RPM of the shaft: the image turns every blade angle, which is the shaft angle
RPM_PER_RAD_S = 60.0 / (2.0 * math.pi)
#: a lone rotor's centre speed [px/s] -> the camera's turn [rad/s]: over sqrt(2) focal
#: lengths, the pan and tilt rates' RMS (module docstring)
_PER_FOCAL = 1.0 / math.sqrt(2.0)
_TRACKING = RotorState.TRACKING


class LayoutRoll:
    """The layout's rotation rate from the tracked centres, packet by packet (O(rotors):
    sums that decay, no windows kept)."""

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        """Forget everything (new rotors, a restarted clock)."""
        self._t_us: int | None = None
        self._centres: dict[int, complex] = {}
        self._source: int | None = None    # what the fit follows: -1 the layout, r rotor r
        # the weighted angle fit, its times and angles taken from the latest sample's:
        # sums of w, w t, w t^2, w a, w t a
        self._fit = [0.0, 0.0, 0.0, 0.0, 0.0]
        self._sq = [0.0, 0.0]              # weighted sums of rate^2 and of the weights
        self._rate_t_us = 0                # time of the last rate taken into them

    @property
    def rms_rad_s(self) -> float:
        """Weighted RMS of the rotation rate [rad/s] (RMS_TAU_US); 0 before any."""
        sq, w = self._sq
        return math.sqrt(max(sq, 0.0) / w) if w > 0.0 else 0.0

    def update(self, t_us: int, centres: dict[int, complex], focal_px: float = 0.0) -> float:
        """Take one packet's TRACKING centres (x + iy [px], by rotor index) at sensor
        time ``t_us``; return :attr:`rms_rad_s`. ``focal_px`` > 0 lets a lone rotor's
        moving centre stand for the camera's turn (module docstring)."""
        if self._t_us is not None and not 0 <= t_us - self._t_us <= RESTART_US:
            self.reset()
        source, step = _step(self._centres, centres, focal_px)
        dt_s = 0.0 if self._t_us is None else (t_us - self._t_us) * 1e-6
        self._t_us = t_us
        self._centres = centres
        if source != self._source:
            self._fit = [0.0, 0.0, 0.0, 0.0, 0.0]   # (another source: the angle starts afresh)
            self._source = source
        if step is None:
            if t_us - self._rate_t_us > RMS_TAU_US:
                self._sq = [0.0, 0.0]       # (no rotation seen for a while: none known)
            return self.rms_rad_s
        rate = self._fit_step(dt_s, step)
        if rate is not None:
            d = math.exp(-(t_us - self._rate_t_us) * 1e-6 / (RMS_TAU_US * 1e-6))
            self._sq[0] = d * self._sq[0] + (1.0 - d) * abs(rate) ** 2
            self._sq[1] = d * self._sq[1] + (1.0 - d)
            self._rate_t_us = t_us
        return self.rms_rad_s

    def _fit_step(self, dt_s: float, step: complex) -> complex | None:
        """Move the fit's origin to the new sample (dt_s later, the angle ``step`` on;
        complex for a lone rotor's two axes), decay it and add the sample; the slope
        [rad/s] once the samples spread enough."""
        w, wt, wtt, wa, wta = self._fit
        # t -> t - dt, a -> a - step: the new sample at (0, 0)
        wtt = wtt - 2.0 * dt_s * wt + dt_s * dt_s * w
        wta = wta - dt_s * wa - step * wt + dt_s * step * w
        wt = wt - dt_s * w
        wa = wa - step * w
        d = math.exp(-dt_s / (RATE_TAU_US * 1e-6))
        w, wt, wtt, wa, wta = d * w + 1.0, d * wt, d * wtt, d * wa, d * wta
        self._fit = [w, wt, wtt, wa, wta]
        den = w * wtt - wt * wt
        # (a slope only once the samples spread over about RATE_TAU_US: the first few,
        # a packet or two apart, give mostly the centres' noise)
        if not den >= (0.5 * RATE_TAU_US * 1e-6 * w) ** 2:
            return None
        return (w * wta - wt * wa) / den

    def widen(self, per_rotor: list[list[RotorOutput]], focal_px: float = 0.0) -> None:
        """Per packet of a batch (``per_rotor[r][k]``): update from the TRACKING outputs'
        centres, then put the rotation's RMS into each of their ``rpm_shaft_std``."""
        for k in range(min(len(outs) for outs in per_rotor)):
            tracking, centres = [], {}
            for r, outs in enumerate(per_rotor):
                o = outs[k]
                if o.state == _TRACKING:
                    tracking.append(o)
                    try:
                        x, y, _ = disc_of(o.homography)
                    except ZeroDivisionError:     # (h22 = 0: no centre to use)
                        continue
                    if math.isfinite(x) and math.isfinite(y):
                        centres[r] = complex(x, y)
            s_rpm = self.update(per_rotor[0][k].t_us, centres, focal_px) * RPM_PER_RAD_S
            if s_rpm > 0.0:
                for o in tracking:
                    o.rpm_shaft_std = math.hypot(o.rpm_shaft_std, s_rpm)


def _step(before: dict[int, complex], now: dict[int, complex],
          focal_px: float) -> tuple[int | None, complex | None]:
    """(source, step) from one packet to the next: (-1, the layout's turn [rad]) with two
    rotors or more in both; (r, rotor r's centre step over sqrt(2) focal lengths [rad,
    complex]) with rotor r alone in both and ``focal_px`` > 0; (None, None) else."""
    turn = _turn(before, now)
    if turn is not None:
        return -1, turn
    if len(now) == 1 and len(before) == 1 and focal_px > 0.0:
        (r, c), = now.items()
        b = before.get(r)
        if b is not None:
            return r, (c - b) * (_PER_FOCAL / focal_px)
    return None, None


def _turn(before: dict[int, complex], now: dict[int, complex]) -> float | None:
    """The angle [rad] the lines between the centres turned from ``before`` to ``now``
    (the rotors in both; each line weighted by its lengths); None with fewer than two.

    arg of sum over pairs of (c_j - c_i)(b_j - b_i)^*, which equals
    n sum c_i b_i^* - (sum c_i)(sum b_i)^*: no pair is formed.
    """
    common = [r for r in now if r in before]
    n = len(common)
    if n < 2:
        return None
    s_cb, s_c, s_b = 0j, 0j, 0j
    for r in common:
        c, b = now[r], before[r]
        s_cb += c * b.conjugate()
        s_c += c
        s_b += b
    z = n * s_cb - s_c * s_b.conjugate()
    if not abs(z) > 0.0:                   # (nan-safe: a nan centre gives no turn)
        return None
    return math.atan2(z.imag, z.real)
