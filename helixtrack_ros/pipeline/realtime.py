# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""The real-time policy: the event stride k, from the packet queue or the load.

Live, when processing falls behind the sensor, the trackers get every k-th
routed event instead of letting a queue grow (and their Gauss-Newton event
target is at most halved); k narrows again when the queue is empty and the
load leaves room. The load (processing wall time per second of sensor
time) is kept in any case, for diagnostics.
"""

from __future__ import annotations

#: Live: a queue of more than this many packets (smoothed) widens the event stride.
BACKLOG_BEHIND_PACKETS = 3.0
#: The stride leaves every rotor at least this many tracked events per microsecond
#: (the 4 m quadcopter held lock at 0.36 M/s per rotor, stride 8, egomotion 1-5).
MIN_TRACKED_PER_US = 0.35
#: Under a stride k the Gauss-Newton event target is divided by min(k, this): a
#: solve on fewer events lets the pose drift off under camera motion (stride 8 with
#: the target divided by 8 lost lock on the 4 m quadcopter; halved, it held).
MAX_GN_DIVISOR = 2


def gn_divisor(stride: int) -> int:
    """What the Gauss-Newton event target is divided by under event stride ``stride``."""
    return max(1, min(int(stride), MAX_GN_DIVISOR))


class StridePolicy:
    """Chooses the event stride; ``enabled`` False keeps it at 1 (offline).

    The stride is at most ``max_stride``, and at most what leaves the sparsest
    tracked rotor MIN_TRACKED_PER_US (a dense scene may go further than a
    sparse one, which would lose lock).
    """

    def __init__(self, enabled: bool, max_stride: int) -> None:
        self.enabled = enabled
        self.max_stride = max_stride
        self.stride = 1
        self._rate_ema: float | None = None
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

    def cap(self) -> int:
        """The largest stride allowed now."""
        if self._rate_ema is None:
            return self.max_stride
        return max(1, min(self.max_stride, int(self._rate_ema / MIN_TRACKED_PER_US)))

    def note_rotor_rate(self, events_per_us: float | None) -> None:
        """Routed events per us (before the stride) of the sparsest tracked rotor."""
        if events_per_us is not None:
            self._rate_ema = (events_per_us if self._rate_ema is None
                              else 0.8 * self._rate_ema + 0.2 * events_per_us)

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
        cap = self.cap()
        if self.stride > cap:
            self.stride = cap
            return True
        if behind and self.stride < cap:
            self.stride += 1
            self.load_ema = 0.5
            self.backlog_ema = 0.0
            return True
        if room and self.stride > 1:
            self.stride -= 1
            self.load_ema = 0.6
            return True
        return False
