# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""Naive pure-Python EVT 2.1 decoder: the slow twin of helixtrack_ros.codecs.evt21.

Word by word with the documented semantics of the numba kernel; the word
loop and the time extension are EVT 2.0's
(:class:`reference.naive_evt2.NaiveEvt2Decoder`), the fields 64-bit.
"""

from reference.naive_evt2 import NaiveEvt2Decoder


class NaiveEvt21Decoder(NaiveEvt2Decoder):
    """Word-by-word EVT 2.1 decoder returning Python lists."""

    WORD_BYTES, WORD_FORMAT, CODE_AT, HIGH_AT = 8, 'Q', 60, 32

    def _event(self, w, code, events):
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

    def _trigger(self, w):
        """(time, value, channel) of one EXT_TRIGGER word."""
        return (max(self.high * 64 + ((w >> 54) & 0x3F), self.latest), (w >> 32) & 1,
                (w >> 40) & 0x1F)
