# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""What a HelixTracker gives back: samples, a state snapshot, and a packet run's rows.

Record types only (named tuples over the kernels' output arrays, with named
accessors for the columns); the tracker itself is in :mod:`tracker`.
"""

from __future__ import annotations

from collections import namedtuple
from typing import NamedTuple

import numpy as np

from helixtrack_ros.core.health import (
    HI_CAUSE,
    HI_LEVEL,
)
from helixtrack_ros.core.health_text import reason_text
from helixtrack_ros.core.tracker_layout import (
    OUT_OMEGA,
    OUT_PHASE,
    OUT_Q,
    OUT_RPM,
    OUT_STD,
    PK_BOX,
    PK_N,
    PK_NAMES,
    PK_QCORE,
    PK_RPM_EKF,
    PK_ZETA,
)


class TrackerSamples(NamedTuple):
    """Tracker outputs at sample times.

    Attributes
    ----------
    t_us : numpy.ndarray
        int64 sample times [us].
    rpm_shaft, rpm_shaft_std : numpy.ndarray
        Shaft RPM and its standard deviation.
    phase_rad : numpy.ndarray
        Shaft phase (blade angle in the rotor plane) in [-pi, pi).
    omega_rad_s : numpy.ndarray
        Shaft angular speed [rad/s], sign = direction.
    q : numpy.ndarray
        (n, 6) pose [s, psi, tx, ty, p31, p32] (paper parameterisation).
    """

    t_us: np.ndarray
    rpm_shaft: np.ndarray
    rpm_shaft_std: np.ndarray
    phase_rad: np.ndarray
    omega_rad_s: np.ndarray
    q: np.ndarray

    @classmethod
    def from_rows(cls, t_us: np.ndarray, out_v: np.ndarray) -> TrackerSamples:
        """Samples of the kernels' (n, OUT_LEN) output rows at times ``t_us`` (views)."""
        return cls(t_us, out_v[:, OUT_RPM], out_v[:, OUT_STD], out_v[:, OUT_PHASE],
                   out_v[:, OUT_OMEGA], out_v[:, OUT_Q:OUT_Q + 6])


class TrackerState(NamedTuple):
    """Current estimate of one rotor (see :class:`HelixTracker`).

    ``health`` is 0 TRACKING, 1 DEGRADED or 2 LOST and ``health_reason`` says
    why (:mod:`helixtrack_ros.core.health`).
    """

    t_us: int
    rpm_shaft: float
    rpm_shaft_std: float
    phase_rad: float
    omega_rad_s: float
    homography: np.ndarray
    q: np.ndarray
    direction: int
    events_in: int
    events_used: int
    pose_updates: int
    health: int = 0
    health_reason: str = 'tracking'


#: The rows of a :class:`PacketRun` as one list per column (:meth:`PacketRun.columns`): the
#: PK_* columns by their declared names (rpm_shaft, rpm_shaft_std, phase_rad, omega_rad_s,
#: s, psi, tx, ty, p31, p32, log_s, ..., rpm_ekf, direction, events, x0, y0, x1, y1), then
#: the health level and cause.
PacketColumns = namedtuple('PacketColumns', (*PK_NAMES, 'level', 'cause'))


def _column(array: str, index: int | slice, doc: str) -> property:
    """A read-only property: the numpy view ``self.<array>[:, index]`` (one row a packet)."""
    def get(self: PacketRun) -> np.ndarray:
        return getattr(self, array)[:, index]
    return property(get, doc=doc)


class PacketRun(NamedTuple):
    """Per-packet rows of :meth:`HelixTracker.process_packets`.

    Attributes
    ----------
    done : int
        Packets processed (rows).
    values : numpy.ndarray
        (done, PK_LEN): the sample at the packet's last event (OUT_* columns),
        then q_core, the EKF shaft RPM, the rotation sign, the routed event
        count and the routing box (PK_* columns).
    health_int, health_float : numpy.ndarray
        The health state after each packet (for :func:`reason_text`).
    """

    done: int
    values: np.ndarray
    health_int: np.ndarray
    health_float: np.ndarray

    # named columns (numpy views, one row per packet)
    rpm_shaft = _column('values', OUT_RPM, "Shaft RPM at each packet's last event.")
    rpm_shaft_std = _column('values', OUT_STD, 'Standard deviation of the shaft RPM.')
    phase_rad = _column('values', OUT_PHASE,
                        'Shaft phase (blade angle in the rotor plane) in [-pi, pi).')
    omega_rad_s = _column('values', OUT_OMEGA, 'Shaft angular speed [rad/s], sign = direction.')
    q = _column('values', slice(OUT_Q, OUT_Q + 6),
                '(done, 6) pose [s, psi, tx, ty, p31, p32] (paper parameterisation).')
    q_core = _column('values', slice(PK_QCORE, PK_QCORE + 6),
                     '(done, 6) pose [log s, psi, tx, ty, p31, p32] after each packet.')
    rpm_ekf = _column('values', PK_RPM_EKF,
                      'Shaft RPM of the EKF state (at its last event, no propagation).')
    direction = _column('values', PK_ZETA,
                        'Rotation sign +1 / -1 (0 while acquiring an unknown sign), as floats.')
    events = _column('values', PK_N, 'Events routed to the rotor per packet, as floats.')
    boxes = _column('values', slice(PK_BOX, PK_BOX + 4),
                    '(done, 4) routing box (x0, y0, x1, y1) of each packet, as floats.')
    levels = _column('health_int', HI_LEVEL,
                     'Health level after each packet (core.health TRACKING / DEGRADED / LOST).')
    causes = _column('health_int', HI_CAUSE, 'Health reason code that made each level '
                     'DEGRADED / LOST (R_OK while TRACKING).')

    def columns(self) -> PacketColumns:
        """Every column as a list of Python numbers (``.tx[k]``, ``.level[k]``, ...).

        One conversion per run: cheap to index row by row in Python.
        """
        hi = self.health_int.T.tolist()
        return PacketColumns(*self.values.T.tolist(), hi[HI_LEVEL], hi[HI_CAUSE])

    def reason(self, k: int) -> str:
        """The health message after packet ``k`` (:func:`core.health_text.reason_text`)."""
        return reason_text(self.health_int[k], self.health_float[k])
