# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""Sensor time inside one packet: its steps, and the events a damaged time word mistimed.

Within a packet sensor time is monotone up to microseconds. A step back
larger than :data:`RESTART_JUMP_US` is a camera restart, a step ahead larger
than :data:`UNSEEN_GAP_US` events lost upstream, and events far ahead of the
packet's end were timed by a damaged word. :class:`~.intake.PacketIntake`
judges packets with these.
"""

from __future__ import annotations

import numpy as np

from helixtrack_ros.core.events import EventArrays

#: A backward jump of sensor time larger than this is a camera restart.
RESTART_JUMP_US = 60_000
#: Sensor time going on this much further than the header stamps between two packets, and
#: jumping as far between two events: events were lost upstream (as a sequence gap; header
#: stamps jitter by a few ms, and a header clock stepped back leaves sensor time continuous).
UNSEEN_GAP_US = 15_000
#: an array's largest / smallest value (per packet: without ndarray.max's Python wrapper)
_MAX, _MIN = np.maximum.reduce, np.minimum.reduce


def largest_step(t_us: np.ndarray, back: bool = False) -> tuple[int, int]:
    """(index of the event after it, size [us]) of the largest step between consecutive
    event times, or with ``back`` of the largest step back (its size > 0); (0, 0) with
    fewer than two events."""
    if len(t_us) < 2:
        return 0, 0
    steps = np.diff(t_us)
    if back:
        j = int(np.argmin(steps))
        return j + 1, -int(steps[j])
    j = int(np.argmax(steps))
    return j + 1, int(steps[j])




def without_spikes(ev: EventArrays, last_t_us: int | None,
                    counters: dict[str, int]) -> EventArrays:
    """A packet's events without those far ahead of where the packet ends.

    Sensor time is monotone up to microseconds within a packet; events more
    than :data:`UNSEEN_GAP_US` later than the packet's last event, where that
    one goes on from the packet before (no restart), were timed by a damaged
    time word (one flipped bit of an EVT 2.0 TIME_HIGH: 67 s ahead until the
    next one). Tracked, they moved every rotor's clock ahead and froze it: each
    later event came "before" it, its health windows never closed, and it stayed
    TRACKING 2-5 times off (bad-input review). Events before time 0 (a damaged
    TIME_HIGH stepping back past the start) are no times either. Both are left
    out (``events_mistimed``, in ``counters``); ``last_t_us``: the stream's latest time
    before the packet.
    """
    t = ev.t_us
    if not len(t):
        return ev
    t_end = int(t[-1])
    spiked = int(_MAX(t)) > t_end + UNSEEN_GAP_US and (
        last_t_us is None or t_end >= last_t_us - RESTART_JUMP_US)
    if not spiked and int(_MIN(t)) >= 0:
        return ev                        # (the usual packet: a max and a min)
    keep = t >= 0
    if spiked:
        keep &= t <= t_end + UNSEEN_GAP_US
    counters['events_mistimed'] += len(t) - int(keep.sum())
    return EventArrays(t[keep], ev.x[keep], ev.y[keep], ev.p[keep])


def jump_inside_us(ev: EventArrays) -> int:
    """The largest step between a packet's events where over :data:`UNSEEN_GAP_US`
    [us], else 0: a loss the next packet's stamp may show (words before the jump
    kept the old TIME_HIGH)."""
    t = ev.t_us
    if int(t[-1]) - int(t[0]) <= UNSEEN_GAP_US:     # (cheap: most packets stop here)
        return 0
    step = largest_step(t)[1]
    return step if step > UNSEEN_GAP_US else 0


def after_jump(ev: EventArrays, counters: dict[str, int]) -> EventArrays:
    """A packet's events from its jump over an unseen gap on: the words before its first
    full time word still carry the time of before the gap (EVT3), so those events
    are left out (``events_mistimed``)."""
    after, step = largest_step(ev.t_us)
    if step <= UNSEEN_GAP_US:
        return ev
    counters['events_mistimed'] += after
    return ev.slice(after, len(ev))


