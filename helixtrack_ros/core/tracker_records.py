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
    reason_text,
)
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
    @property
    def rpm_shaft(self) -> np.ndarray:
        """Shaft RPM at each packet's last event."""
        return self.values[:, OUT_RPM]

    @property
    def rpm_shaft_std(self) -> np.ndarray:
        """Standard deviation of the shaft RPM."""
        return self.values[:, OUT_STD]

    @property
    def phase_rad(self) -> np.ndarray:
        """Shaft phase (blade angle in the rotor plane) in [-pi, pi)."""
        return self.values[:, OUT_PHASE]

    @property
    def omega_rad_s(self) -> np.ndarray:
        """Shaft angular speed [rad/s], sign = direction."""
        return self.values[:, OUT_OMEGA]

    @property
    def q(self) -> np.ndarray:
        """(done, 6) pose [s, psi, tx, ty, p31, p32] (paper parameterisation)."""
        return self.values[:, OUT_Q:OUT_Q + 6]

    @property
    def q_core(self) -> np.ndarray:
        """(done, 6) pose [log s, psi, tx, ty, p31, p32] after each packet."""
        return self.values[:, PK_QCORE:PK_QCORE + 6]

    @property
    def rpm_ekf(self) -> np.ndarray:
        """Shaft RPM of the EKF state (at its last event, no propagation)."""
        return self.values[:, PK_RPM_EKF]

    @property
    def direction(self) -> np.ndarray:
        """Rotation sign +1 / -1 (0 while acquiring an unknown sign), as floats."""
        return self.values[:, PK_ZETA]

    @property
    def events(self) -> np.ndarray:
        """Events routed to the rotor per packet, as floats."""
        return self.values[:, PK_N]

    @property
    def boxes(self) -> np.ndarray:
        """(done, 4) routing box (x0, y0, x1, y1) of each packet, as floats."""
        return self.values[:, PK_BOX:PK_BOX + 4]

    @property
    def levels(self) -> np.ndarray:
        """Health level after each packet (core.health TRACKING / DEGRADED / LOST)."""
        return self.health_int[:, HI_LEVEL]

    @property
    def causes(self) -> np.ndarray:
        """Health reason code that made each level DEGRADED / LOST (R_OK while TRACKING)."""
        return self.health_int[:, HI_CAUSE]

    def columns(self) -> PacketColumns:
        """Every column as a list of Python numbers (``.tx[k]``, ``.level[k]``, ...).

        One conversion per run: cheap to index row by row in Python.
        """
        hi = self.health_int.T.tolist()
        return PacketColumns(*self.values.T.tolist(), hi[HI_LEVEL], hi[HI_CAUSE])

    def reason(self, k: int) -> str:
        """The health message after packet ``k`` (:func:`core.health.reason_text`)."""
        return reason_text(self.health_int[k], self.health_float[k])
