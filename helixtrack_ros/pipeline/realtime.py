# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""The real-time policy: the event stride k, from the packet queue or the load.

Live, when processing falls behind the sensor, the trackers get every k-th
routed event instead of letting a queue grow (and their Gauss-Newton event
target is divided by k); k narrows again when the queue is empty and the
load leaves room. The load (processing wall time per second of sensor
time) is kept in any case, for diagnostics.
"""

from __future__ import annotations

#: Live: a queue of more than this many packets (smoothed) widens the event stride.
BACKLOG_BEHIND_PACKETS = 3.0


class StridePolicy:
    """Chooses the event stride; ``enabled`` False keeps it at 1 (offline)."""

    def __init__(self, enabled: bool, max_stride: int) -> None:
        self.enabled = enabled
        self.max_stride = max_stride
        self.stride = 1
        self.load_ema = 0.0
        self.backlog_ema = 0.0
        self._backlog_known = False
        self._wall_s = 0.0
        self.sensor_us = 0

    @property
    def load(self) -> float:
        """Processing wall time per second of sensor time, since the start."""
        return self._wall_s / max(self.sensor_us * 1e-6, 1e-9)

    def note_backlog(self, waiting: int) -> None:
        """Live use: how many packets waited in the queue behind the ones now processed.

        The node calls this before each batch; it is the policy's sign of
        falling behind. Without it (a caller that does not know its queue)
        the policy judges from the processing load alone, which also reads a
        replay slower than real time as behind.
        """
        self.backlog_ema = 0.7 * self.backlog_ema + 0.3 * max(int(waiting), 0)
        self._backlog_known = True

    def account(self, wall_s: float, span_us: int) -> bool:
        """Add ``wall_s`` of processing for ``span_us`` of sensor time; True when k changed."""
        self._wall_s += wall_s
        self.sensor_us += span_us
        load = wall_s / (span_us * 1e-6)
        self.load_ema = 0.9 * self.load_ema + 0.1 * load
        if not self.enabled:
            return False
        if self._backlog_known:
            behind = self.backlog_ema > BACKLOG_BEHIND_PACKETS
            room = self.backlog_ema < 0.5 and self.load_ema < 0.5
        else:
            behind = self.load_ema > 0.9
            room = self.load_ema < 0.4
        if behind and self.stride < self.max_stride:
            self.stride += 1
            self.load_ema = 0.5
            self.backlog_ema = 0.0
            return True
        if room and self.stride > 1:
            self.stride -= 1
            self.load_ema = 0.6
            return True
        return False
