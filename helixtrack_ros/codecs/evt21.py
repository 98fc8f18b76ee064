# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""Decoder of the Prophesee EVT 2.1 event stream (GenX320, IMX636): 64-bit vector words.

EVT 2.1 extends EVT 2.0 (:mod:`helixtrack_ros.codecs.evt2`) to 64-bit words,
each event word giving up to 32 events of one row and polarity; the top 4
bits give the word type:

====  ==============  ===========================================================
code  name            payload
====  ==============  ===========================================================
0x0   EVT_NEG         bits 59..54 time low (6 bits), 53..43 x, 42..32 y, 31..0
                      valid: bit i set is an event at (x + i, y)
0x1   EVT_POS         same layout, polarity 1
0x8   EVT_TIME_HIGH   bits 59..32: bits 33..6 of the microsecond time
0xA   EXT_TRIGGER     bits 59..54 time low, 44..40 channel id, bit 32 edge value
0xE   OTHERS          vendor extensions (skipped, ``skipped_other``)
0xF   CONTINUED       extra data of the previous word (skipped, ``skipped_other``)
====  ==============  ===========================================================

Other codes are reserved (``skipped_unknown``). The words are read as
little-endian 64-bit values; an IMX636 sends the upper 32 bits first, which a
``.raw`` reader puts right before the words get here
(:func:`helixtrack_ros.io.raw_file.iter_raw_packets`). Time extension,
clamping, resync and the counters are those of EVT 2.0 (an event earlier
than the latest one is held at its time; events out of the sensor are
dropped, and do not move the latest time).
"""

import numpy as np

from helixtrack_ros.codecs import counter_slots as cs
from helixtrack_ros.codecs.event_out import _put_event
from helixtrack_ros.codecs.evt2 import HIGH_BITS, HIGH_MASK, LOW_BITS, RESET_STEPS, Evt2Decoder
from helixtrack_ros.codecs.kernel_decoder import native_words
from helixtrack_ros.codecs.time_high import S_ABS_HIGH, S_HAVE_TH, TIME_HIGH, step_time_high
from helixtrack_ros.core.jit import kernel, kernel_inline

#: Largest sensor size EVT 2.1 can address (11-bit coordinates).
EVT21_MAX_SIZE = 2048

EVT_POS = 0x1
EXT_TRIGGER = 0xA
OTHERS = 0xE
CONTINUED = 0xF

#: the index of a 32-bit word's single set bit b: _DEBRUIJN_BIT[(b * _DEBRUIJN mod 2**32) >> 27]
#: (a de Bruijn sequence: a mask's bits without a branch per bit position)
_DEBRUIJN = 0x077CB531
_DEBRUIJN_BIT = np.zeros(32, np.int64)
_DEBRUIJN_BIT[[((1 << i) * _DEBRUIJN & 0xFFFFFFFF) >> 27 for i in range(32)]] = np.arange(32)

_S_FLOOR = 2     # time of the latest emitted event (monotone floor)
_N_STATE = 3


@kernel_inline
def _code(w):
    """The word type of a 64-bit word held as int64."""
    return (w >> 60) & 0xF


@kernel_inline
def _first_time_high(words, state, counters):
    """Index after the first TIME_HIGH word (-1: none), which sets ``state``'s count."""
    n = words.shape[0]
    i = 0
    while i < n and _code(np.int64(words[i])) != TIME_HIGH:
        i += 1
    counters[cs.BEFORE if state[S_HAVE_TH] == 0 else cs.RESYNC] += i
    if i == n:
        return -1
    h0 = (np.int64(words[i]) >> 32) & HIGH_MASK
    if state[S_HAVE_TH] == 2:
        h0 = state[S_ABS_HIGH] + ((h0 - state[S_ABS_HIGH]) & HIGH_MASK)
        if (h0 >> HIGH_BITS) > counters[cs.WRAPS]:
            counters[cs.WRAPS] = h0 >> HIGH_BITS
    state[S_HAVE_TH] = 1
    state[S_ABS_HIGH] = h0
    return i + 1


@kernel
def _evt21_decode(words, new_packet, odd_bytes, time_base_us, width, height, state, counters,  # noqa: C901, PLR0912, PLR0915 (numba kernel)
                  out_t, out_x, out_y, out_p, tr_t, tr_v, tr_id):
    """Decode native-order 64-bit EVT 2.1 words, updating ``state`` and ``counters``.

    Events go to ``out_*`` (capacity >= 32 per word) and triggers to ``tr_*``;
    returns their counts. ``time_base_us`` is unused (EVT 2.1 keeps its time).
    """
    n = words.shape[0]
    cs.count_call(counters, new_packet, odd_bytes, n)
    i = 0
    if state[S_HAVE_TH] != 1:
        i = _first_time_high(words, state, counters)
        if i < 0:
            return 0, 0
    abs_high = state[S_ABS_HIGH]
    base = abs_high << LOW_BITS
    floor = state[_S_FLOOR]
    k = 0
    kt = 0
    n_oob = 0
    n_clamped = 0
    for ii in range(i, n):
        w = np.int64(words[np.uint64(ii)])
        code = _code(w)
        if code <= EVT_POS:
            x0 = (w >> 43) & 0x7FF
            yy = (w >> 32) & 0x7FF
            t = max(base + ((w >> 54) & 0x3F), floor)
            valid = w & 0xFFFFFFFF
            k0 = k
            while valid:                   # the set bits, lowest first
                lsb = valid & -valid
                j = _DEBRUIJN_BIT[((lsb * _DEBRUIJN) & 0xFFFFFFFF) >> 27]
                valid ^= lsb
                if x0 + j < width and yy < height:
                    _put_event(out_t, out_x, out_y, out_p, k, t, x0 + j, yy, code)
                    k += 1
                else:
                    n_oob += 1
            if k > k0:
                n_clamped += (k - k0) if t > base + ((w >> 54) & 0x3F) else 0
                floor = t
        elif code == TIME_HIGH:
            abs_high, restarted = step_time_high(abs_high, (w >> 32) & HIGH_MASK, HIGH_BITS,
                                                 RESET_STEPS, counters)
            if restarted:  # times may decrease here
                floor = abs_high << LOW_BITS
            base = abs_high << LOW_BITS
        elif code == EXT_TRIGGER:
            tr_t[np.uint64(kt)] = max(base + ((w >> 54) & 0x3F), floor)
            tr_v[np.uint64(kt)] = (w >> 32) & 1
            tr_id[np.uint64(kt)] = (w >> 40) & 0x1F
            kt += 1
        elif code == OTHERS or code == CONTINUED:
            counters[cs.OTHER] += 1
        else:
            counters[cs.UNKNOWN] += 1
    state[S_ABS_HIGH] = abs_high
    state[_S_FLOOR] = floor
    counters[cs.OOB] += n_oob
    counters[cs.CLAMPED] += n_clamped
    counters[cs.EVENTS] += k
    counters[cs.TRIGGERS] += kt
    return k, kt


class Evt21Decoder(Evt2Decoder):
    """Stateful EVT 2.1 decoder for one event stream (resync as EVT 2.0)."""

    encoding = 'evt21'
    MAX_SIZE = EVT21_MAX_SIZE
    EVENTS_PER_WORD = 32
    _kernel = staticmethod(_evt21_decode)

    def _new_state(self) -> np.ndarray:
        return np.zeros(_N_STATE, np.int64)

    def _words(self, buf: np.ndarray, is_bigendian: bool) -> np.ndarray:
        return native_words(buf, 'u8', is_bigendian)


def swap_halves(words: np.ndarray) -> np.ndarray:
    """64-bit words with their 32-bit halves exchanged (an IMX636's order <-> this one's)."""
    w = words.astype(np.uint64, copy=False)
    return (w << np.uint64(32)) | (w >> np.uint64(32))
