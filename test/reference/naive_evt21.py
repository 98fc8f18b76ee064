# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""Naive pure-Python EVT 2.1 decoder: the slow twin of helixtrack_ros.codecs.evt21.

Word by word with the documented semantics of the numba kernel; the time
extension is EVT 2.0's (:class:`reference.naive_evt2.NaiveEvt2Decoder`).
"""

import struct

from reference.naive_evt2 import STEPS, NaiveEvt2Decoder


class NaiveEvt21Decoder(NaiveEvt2Decoder):
    """Word-by-word EVT 2.1 decoder returning Python lists."""

    def decode(self, data, is_bigendian=False):
        """Return (events, triggers) as lists of tuples."""
        c = self.counters
        n = len(data) // 8
        c['packets'] += 1
        c['words'] += n
        c['odd_bytes'] += len(data) - 8 * n
        words = struct.unpack(('>' if is_bigendian else '<') + f'{n}Q', data[:8 * n])
        events, triggers = [], []
        for w in words:
            code = w >> 60
            if self.started != 1:
                if code != 8:
                    c['before_time_high' if self.started == 0 else 'resync_skipped'] += 1
                    continue
                v = (w >> 32) & (STEPS - 1)
                if self.started == 2:
                    self.high += (v - self.high) % STEPS
                    c['time_wraps'] = max(c['time_wraps'], self.high // STEPS)
                else:
                    self.high = v
                self.started = 1
                continue
            if code in (0, 1):
                self._vector(w, code, events)
            elif code == 8:
                self._time_high((w >> 32) & (STEPS - 1))
            elif code == 0xA:
                t = max(self.high * 64 + ((w >> 54) & 0x3F), self.latest)
                triggers.append((t, (w >> 32) & 1, (w >> 40) & 0x1F))
            elif code in (0xE, 0xF):
                c['skipped_other'] += 1
            else:
                c['skipped_unknown'] += 1
        c['events'] += len(events)
        c['triggers'] += len(triggers)
        return events, triggers

    def _vector(self, w, code, events):
        """The events of one EVT_NEG / EVT_POS word: bit i of the mask at x + i."""
        x0, y = (w >> 43) & 0x7FF, (w >> 32) & 0x7FF
        t_word = self.high * 64 + ((w >> 54) & 0x3F)
        t = max(t_word, self.latest)
        emitted = 0
        for i in range(32):
            if not (w >> i) & 1:
                continue
            if x0 + i >= self.width or y >= self.height:
                self.counters['out_of_bounds'] += 1
                continue
            events.append((t, x0 + i, y, code))
            emitted += 1
        if emitted:
            self.counters['time_clamped'] += emitted if t > t_word else 0
            self.latest = t
