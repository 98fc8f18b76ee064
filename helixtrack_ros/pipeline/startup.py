# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""Start-up detection (``auto_detect``): find the rotors in the first events of a stream.

Runs when no rotor is configured: collects ``DETECT_WINDOW_US`` of events,
runs :func:`~helixtrack_ros.core.detection.detect_rotors` on them and names
the rotors ``rotor_0``, ``rotor_1``, ... in reading order (:func:`image_order`:
rows top to bottom, each row left to right); tried again on the next window
when nothing is found. It runs in
line even live: nothing is tracked before it, and packets queue meanwhile.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, TypeVar

from helixtrack_ros.core.detection import DetectedRotor, detect_rotors
from helixtrack_ros.core.events import EventArrays
from helixtrack_ros.core.params import RotorInit

_Rotor = TypeVar('_Rotor')

#: Start-up detection uses this much sensor time of events.
DETECT_WINDOW_US = 100_000


def image_order(rotors: Sequence[_Rotor]) -> list[_Rotor]:
    """Rotors (anything with ``center_px`` and ``radius_px``) in reading order.

    The rule that names detected rotors: the topmost rotor not yet placed
    opens a row, and every remaining rotor whose centre is less than that
    rotor's radius below it joins the row; rows go top to bottom, each row
    left to right. Two rotors side by side thus keep their left-right order
    however a few pixels of tilt or noise move them up or down, so the same
    rig gets the same names in every recording.
    """
    def y(r: Any) -> float:
        return float(r.center_px[1])

    rest = sorted(range(len(rotors)), key=lambda i: (y(rotors[i]), rotors[i].center_px[0]))
    out: list[_Rotor] = []
    while rest:
        top = rotors[rest[0]]
        row = [i for i in rest if y(rotors[i]) - y(top) < float(top.radius_px)]
        rest = [i for i in rest if i not in row]
        out += sorted((rotors[i] for i in row), key=lambda r: float(r.center_px[0]))
    return out


def rotor_inits(found: list[DetectedRotor]) -> list[RotorInit]:
    """The RotorInits of detected rotors in :func:`image_order`, named rotor_0, rotor_1, ..."""
    inits = []
    for i, d in enumerate(image_order(found)):
        r = d.to_params_dict(f'rotor_{i}')
        inits.append(RotorInit(
            name=r['name'], center_px=(float(r['center_px'][0]), float(r['center_px'][1])),
            radius_px=float(r['radius_px']), rpm_shaft=float(r['rpm']),
            blades=int(r['blades']), direction=int(r['direction']),
            psi_rad=float(r['psi_rad']),
            perspective=(float(r['perspective'][0]), float(r['perspective'][1]))))
    return inits


class StartupDetector:
    """Collects the first window of events and detects the rotors in it."""

    def __init__(self) -> None:
        self._buffer: list[EventArrays] = []
        #: what the last detection found, in :func:`image_order` (for inspection and
        #: diagnostics)
        self.found: list[DetectedRotor] = []

    def add(self, ev: EventArrays, width: int, height: int) -> list[DetectedRotor] | None:
        """Add a packet's events; the detections once a window is full (else None)."""
        # a copy: ev is a view into its batch's (much larger) buffer
        self._buffer.append(EventArrays(*(a.copy() for a in ev)))
        t0 = int(self._buffer[0].t_us[0])
        if int(ev.t_us[-1]) - t0 < DETECT_WINDOW_US:
            return None
        # (time order: packets may overlap by microseconds, and detection needs it)
        events = EventArrays.concatenate(self._buffer).time_sorted()
        self._buffer = []
        self.found = image_order(detect_rotors(events, width, height))
        return self.found
