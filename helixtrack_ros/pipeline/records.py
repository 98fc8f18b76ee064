# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""The records the pipeline gives: rotor outputs and packet results.

One definition each, shared by the node, the CLI and the benchmarks. The
packets it takes are :class:`~helixtrack_ros.io.packet_record.EventPacketRecord`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
import math
from typing import Any, NamedTuple

import numpy as np

from helixtrack_ros.core.events import EventArrays
from helixtrack_ros.core.health import TRACKING, RotorState
from helixtrack_ros.io.packet_record import EventPacketRecord

#: Diagnostic levels (diagnostic_msgs/DiagnosticStatus).
OK, WARN, ERROR = 0, 1, 2

NAN_HOMOGRAPHY = np.full((3, 3), math.nan)
NAN_HOMOGRAPHY.flags.writeable = False


@dataclass(slots=True)
class RotorOutput:
    """State of one rotor after a packet.

    The numbers (phase, omega, RPM and its std, homography) are NaN unless
    ``state`` is TRACKING: a value is published only while the tracker
    stands behind it (README "Trusting the numbers").
    """

    name: str
    t_us: int
    phase_rad: float
    omega_rad_s: float
    rpm_shaft: float
    rpm_shaft_std: float
    homography: np.ndarray
    events: int
    level: int = OK
    message: str = 'tracking'
    health: int = TRACKING
    state: RotorState = RotorState.TRACKING
    #: health reason code (core.health R_*) behind a state other than TRACKING
    cause: int = 0


def withheld(name: str, t_us: int, events: int, level: int, message: str, health: int,
             state: RotorState, cause: int) -> RotorOutput:
    """The output of a rotor that is not TRACKING: every number NaN, the state and why."""
    return RotorOutput(name=name, t_us=t_us, phase_rad=math.nan, omega_rad_s=math.nan,
                       rpm_shaft=math.nan, rpm_shaft_std=math.nan, homography=NAN_HOMOGRAPHY,
                       events=events, level=level, message=message, health=health,
                       state=state, cause=cause)


@dataclass
class PacketResult:
    """Outcome of one packet: per-rotor states or the reason it was refused."""

    stamp_ns: int = 0
    t_us: int = 0
    n_events: int = 0
    rotors: list[RotorOutput] = field(default_factory=list)
    error: str | None = None
    #: the packet's decoded events (e.g. for the node's debug image)
    events: EventArrays | None = None
    #: why a packet that is no error (a copy of the one before, a late one) was left out:
    #: it has no outputs
    dropped: str | None = None


class StreamBatch(NamedTuple):
    """One batch of :meth:`TrackingPipeline.process_stream`."""

    packets: Sequence[EventPacketRecord]
    results: list[PacketResult]
    #: statuses (as :meth:`TrackingPipeline.diagnostics`) right after the batch, when due
    diagnostics: list[dict[str, Any]] | None
