# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""The per-packet ``~/health`` message: one ``DiagnosticStatus`` per rotor, serialized once.

``~/health`` (``diagnostic_msgs/msg/DiagnosticArray``) goes out with every
``~/rotors`` message, so a consumer always knows whether a rotor's numbers
are measured (TRACKING) or withheld (NaN) and why. Its statuses carry no
numbers, only the state and the reason's name, so the few combinations
that occur are serialized once each and only the header stamp is written
per packet (:class:`helixtrack_ros.io.cdr_patch.PatchableCdr`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue

from helixtrack_ros.core.health_text import health_statuses
from helixtrack_ros.io.cdr_patch import PatchableCdr

#: the most distinct messages kept (a rotor count of 8 with every state seen stays far below)
_MAX_CACHED = 4096


def health_message(names: Sequence[str], states: Sequence[tuple[int, int]],
                   frame_id: str = '') -> DiagnosticArray:
    """The ``~/health`` message of rotors ``names`` in (state, cause) ``states``."""
    msg = DiagnosticArray()
    msg.header.frame_id = frame_id
    for s in health_statuses(names, states):
        msg.status.append(DiagnosticStatus(
            level=bytes([s['level']]), name=s['name'], message=s['message'],
            hardware_id=s['hardware_id'],
            values=[KeyValue(key=k, value=v) for k, v in s['values'].items()]))
    return msg


class HealthCdrCache:
    """Serialized ``~/health`` messages by rotor states; the stamp written per call.

    Parameters
    ----------
    serialize : callable
        ``rclpy.serialization.serialize_message`` (kept out of this module).
    """

    def __init__(self, serialize: Callable[[object], bytes]) -> None:
        self._serialize = serialize
        self._cache: dict[tuple, PatchableCdr] = {}
        self._layout: tuple[tuple[str, ...], str] = ((), '')

    def fill(self, names: Sequence[str], states: tuple[tuple[int, int], ...],
             frame_id: str, stamp_ns: int) -> bytes:
        """The serialized message for these rotors and states at ``stamp_ns``."""
        layout = (tuple(names), frame_id)
        if layout != self._layout or len(self._cache) > _MAX_CACHED:
            self._cache.clear()
            self._layout = layout
        cdr = self._cache.get(states)
        if cdr is None:
            cdr = PatchableCdr(self._serialize(health_message(names, states, frame_id)), 0,
                               has_header=True)
            self._cache[states] = cdr
        return cdr.fill((), stamp_ns)
