# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""Encoder of EVT 2.1 words (:mod:`helixtrack_ros.codecs.evt21`), for simulated ``.raw`` files.

Vectorized with numpy: a vector word holds a run of events with the same
time, row and polarity in one 32-pixel group, x rising, so that decoding
gives the events back in their order; a TIME_HIGH word goes before each
new high part of the time, and first in every call (a packet decodes after
a loss). Words are whole 64-bit little-endian values (a GenX320's order).
"""

import numpy as np

from helixtrack_ros.core.events import EventArrays


def evt21_words(ev: EventArrays) -> np.ndarray:
    """EVT 2.1 words (whole, little-endian 64-bit) of time-sorted events, in their order.

    A vector word holds a run of events with the same time, row and polarity,
    in one 32-pixel group, x rising; a TIME_HIGH word goes before each new
    high part of the time. Decoding gives the events back in this order.
    """
    t = ev.t_us.astype(np.int64)
    x = ev.x.astype(np.int64)
    y = ev.y.astype(np.int64)
    p = ev.p.astype(np.int64)
    if t.size == 0:
        return np.empty(0, np.uint64)
    new = np.ones(t.size, bool)
    new[1:] = ((t[1:] != t[:-1]) | (y[1:] != y[:-1]) | (p[1:] != p[:-1])
               | ((x[1:] >> 5) != (x[:-1] >> 5)) | (x[1:] <= x[:-1]))
    first = np.flatnonzero(new)
    mask = np.bitwise_or.reduceat(np.int64(1) << (x & 31), first)
    tg = t[first]
    vec = ((p[first] << 60) | ((tg & 0x3F) << 54) | ((x[first] >> 5 << 5) << 43)
           | (y[first] << 32) | mask).astype(np.uint64)
    high = tg >> 6
    th_at = np.flatnonzero(np.r_[True, high[1:] != high[:-1]])
    th = ((np.int64(0x8) << 60) | ((high[th_at] & 0x0FFFFFFF) << 32)).astype(np.uint64)
    return np.insert(vec, th_at, th)


class Evt21Encoder:
    """EVT 2.1 encoder with the other encoders' ``encode`` (no state is needed)."""

    def encode(self, events: EventArrays) -> np.ndarray:
        """The EVT 2.1 bytes (uint8) of time-sorted events."""
        return evt21_words(events).astype('<u8').view(np.uint8)
