# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""Naive pure-Python EVT 2.0 decoder: the slow twin of helixtrack_ros.codecs.evt2.

Word by word, with the documented semantics of the numba kernel (time
extension by modular TIME_HIGH steps, monotone event time, drops, counters),
so that tests can compare the two on any input.
"""

import struct

from helixtrack_ros.codecs.types import COUNTER_NAMES

STEPS = 1 << 28


class NaiveEvt2Decoder:
    """Word-by-word EVT 2.0 decoder returning Python lists."""

    def __init__(self, width, height):
        self.width = width
        self.height = height
        self.started = 0  # 0: no TIME_HIGH yet, 1: running, 2: resynchronising
        self.high = 0
        self.latest = 0
        self.counters = {name: 0 for name in COUNTER_NAMES}

    def resync(self):
        """Lost packets: skip words until the next TIME_HIGH."""
        if self.started == 1:
            self.started = 2

    def _time_high(self, v):
        d = (v - self.high) % STEPS
        if d < STEPS // 2:
            self.high += d
            self.counters['time_wraps'] = max(self.counters['time_wraps'], self.high // STEPS)
        else:
            self.high -= STEPS - d
            self.counters['time_backwards'] += 1
            restarted = STEPS - d > 1024
            if self.high < 0:           # back past the start: the word's value, a restart
                self.high, restarted = v, True
            if restarted:
                self.counters['time_resets'] += 1
                self.latest = self.high * 64

    #: the word layout: bytes, struct code, bit of the type code, bit of the TIME_HIGH value
    WORD_BYTES, WORD_FORMAT, CODE_AT, HIGH_AT = 4, 'I', 28, 0

    def decode(self, data, is_bigendian=False):
        """Return (events, triggers) as lists of tuples."""
        c = self.counters
        size = self.WORD_BYTES
        n = len(data) // size
        c['packets'] += 1
        c['words'] += n
        c['odd_bytes'] += len(data) - size * n
        words = struct.unpack(('>' if is_bigendian else '<') + f'{n}{self.WORD_FORMAT}',
                              data[:size * n])
        events, triggers = [], []
        for w in words:
            code = w >> self.CODE_AT
            v = (w >> self.HIGH_AT) & (STEPS - 1)
            if self.started != 1:
                if code != 8:
                    c['before_time_high' if self.started == 0 else 'resync_skipped'] += 1
                    continue
                if self.started == 2:
                    self.high += (v - self.high) % STEPS
                    c['time_wraps'] = max(c['time_wraps'], self.high // STEPS)
                else:
                    self.high = v
                self.started = 1
                continue
            if code in (0, 1):
                self._event(w, code, events)
            elif code == 8:
                self._time_high(v)
            elif code == 0xA:
                triggers.append(self._trigger(w))
            elif code in (0xE, 0xF):
                c['skipped_other'] += 1
            else:
                c['skipped_unknown'] += 1
        c['events'] += len(events)
        c['triggers'] += len(triggers)
        return events, triggers

    def _event(self, w, code, events):
        """The event of one CD word."""
        x, y = (w >> 11) & 0x7FF, w & 0x7FF
        if x >= self.width or y >= self.height:
            self.counters['out_of_bounds'] += 1
            return
        t = self.high * 64 + ((w >> 22) & 0x3F)
        if t < self.latest:
            t = self.latest
            self.counters['time_clamped'] += 1
        self.latest = t
        events.append((t, x, y, code))

    def _trigger(self, w):
        """(time, value, channel) of one EXT_TRIGGER word."""
        return max(self.high * 64 + ((w >> 22) & 0x3F), self.latest), w & 1, (w >> 8) & 0x1F
