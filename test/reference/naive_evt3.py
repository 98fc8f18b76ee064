# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""Naive pure-Python EVT 3.0 decoder: the slow twin of helixtrack_ros.codecs.evt3.

Written for clarity, word by word, with the same documented semantics as the
numba kernel (time extension by modular TIME_HIGH steps, monotone event time,
drops and counters), so that tests can compare the two on any input.
"""

from helixtrack_ros.codecs.types import COUNTER_NAMES


class NaiveEvt3Decoder:
    """Word-by-word EVT 3.0 decoder returning Python lists."""

    def __init__(self, width, height):
        self.width = width
        self.height = height
        self.reset()

    def reset(self):
        """Start a new stream."""
        self.started = False
        self.high_count = 0       # absolute number of TIME_HIGH steps
        self.low = 0
        self.row = None           # None until an ADDR_Y
        self.base = None          # None until a VECT_BASE_X
        self.pol = 0
        self.now = 0              # time given to events
        self.latest_event_t = 0   # no event may be earlier than this
        self.fresh_events = False  # events emitted at self.now since the last time word
        self.counters = {name: 0 for name in COUNTER_NAMES}

    def _emit(self, col, out):
        if self.row is None or col is None or col >= self.width or self.row >= self.height:
            self.counters['out_of_bounds'] += 1
            return
        out.append((self.now, col, self.row, self.pol_now))
        self.fresh_events = True

    def _set_time(self):
        if self.fresh_events:
            self.latest_event_t = self.now
            self.fresh_events = False
        t = self.high_count * 4096 + self.low
        if t < self.latest_event_t:
            self.counters['time_clamped'] += 1
            t = self.latest_event_t
        self.now = t

    def decode(self, data, is_bigendian=False):  # noqa: C901, PLR0912, PLR0915 (naive twin of a numba kernel)
        """Decode one packet; returns (events, triggers) as lists of tuples."""
        data = bytes(data)
        c = self.counters
        c['packets'] += 1
        c['odd_bytes'] += len(data) % 2
        events, triggers = [], []
        for i in range(len(data) // 2):
            b0, b1 = data[2 * i], data[2 * i + 1]
            word = (b0 << 8) | b1 if is_bigendian else (b1 << 8) | b0
            c['words'] += 1
            kind = word >> 12
            body = word & 0xFFF
            if not self.started:
                if kind != 8:
                    c['before_time_high'] += 1
                    continue
                self.started = True
                self.high_count = body
                self.low = 0
                self.now = max(body * 4096, self.latest_event_t)
                continue
            if kind == 0:
                self.row = body & 0x7FF
            elif kind == 2:
                self.pol_now = body >> 11
                self._emit(body & 0x7FF, events)
            elif kind == 3:
                self.base = body & 0x7FF
                self.pol = body >> 11
            elif kind in (4, 5):
                size = 12 if kind == 4 else 8
                self.pol_now = self.pol
                for bit in range(size):
                    if (body >> bit) & 1:
                        self._emit(None if self.base is None else self.base + bit, events)
                if self.base is not None:
                    self.base += size
            elif kind == 6:
                self.low = body
                self._set_time()
            elif kind == 8:
                old = self.high_count % 4096
                forward = (body - old) % 4096
                if forward < 2048:
                    self.high_count += forward
                    c['time_wraps'] = max(c['time_wraps'], self.high_count // 4096)
                else:
                    self.high_count -= 4096 - forward
                    c['time_backwards'] += 1
                    restarted = 4096 - forward > 16                   # a restarted clock
                    if self.high_count < 0:   # back past the start: the word's value
                        self.high_count, restarted = body, True
                    if restarted:
                        c['time_resets'] += 1
                        self.fresh_events = False
                        self.latest_event_t = self.high_count * 4096
                self._set_time()
            elif kind == 10:
                triggers.append((self.now, body & 1, (body >> 8) & 0xF))
            elif kind in (7, 14, 15):
                c['skipped_other'] += 1
            else:
                c['skipped_unknown'] += 1
        c['events'] += len(events)
        c['triggers'] += len(triggers)
        if self.fresh_events:
            self.latest_event_t = self.now
            self.fresh_events = False
        return events, triggers
