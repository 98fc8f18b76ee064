# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""Naive twin of HelixTracker.process_packets: numpy routing, one process() per packet."""

import numpy as np

from helixtrack_ros.core.events import EventArrays
from helixtrack_ros.core.health import HI_T0, HS_W, LOST
from helixtrack_ros.core.health_machine import (
    _health_drift,
    _health_packet_support,
    _health_range,
    _health_support,
)
from helixtrack_ros.core.tracker_layout import FS_OM, IS_TMAX


def process_packets_naive(tracker, events, pkt_end, pkt_t_last, stride=1):
    """Per packet: boolean-mask routing in the box, every stride-th, process, advance, the
    per-packet health checks.

    Returns a list of (rpm_shaft, phase_rad, omega_rad_s, routed, box, health)
    rows, stopping after a packet that leaves the rotor LOST (like the kernel).
    """
    rows = []
    e0 = 0
    t_from = int(tracker.ist[IS_TMAX])
    for e1, t_last in zip(pkt_end, pkt_t_last):
        w_from, win_from = float(tracker.hs[HS_W]), int(tracker.hi[HI_T0])
        ev = events.slice(e0, int(e1))
        x0, y0, x1, y1 = tracker.bbox_px()
        inside = np.nonzero((ev.x >= x0) & (ev.x <= x1) & (ev.y >= y0) & (ev.y <= y1))[0]
        keep = inside[::stride]
        sub = EventArrays(ev.t_us[keep], ev.x[keep], ev.y[keep], ev.p[keep])
        s = tracker.process(sub, sample_t_us=np.array([t_last], np.int64))
        tracker.advance(int(t_last))
        # the per-packet checks of the pending window and the RPM range
        om = float(tracker.fs[FS_OM])
        _health_drift(tracker.hp, tracker.hs, tracker.hi, int(t_last), om)
        _health_support(tracker.hp, tracker.hs, tracker.hi, int(t_last), om)
        _health_packet_support(tracker.hp, tracker.hs, tracker.hi, int(t_last), om, w_from,
                               win_from, t_from)
        t_from = int(t_last)
        _health_range(tracker.hp, tracker.hs, tracker.hi, om)
        rows.append((float(s.rpm_shaft[0]), float(s.phase_rad[0]), float(s.omega_rad_s[0]),
                     len(keep), (x0, y0, x1, y1), tracker.health))
        e0 = int(e1)
        if tracker.health == LOST:
            break
    return rows
