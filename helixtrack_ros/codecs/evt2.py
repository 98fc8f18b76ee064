# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""Decoder of the Prophesee EVT 2.0 event stream (GenX320 and similar sensors).

EVT 2.0 is a stream of 32-bit words; the top 4 bits give the word type. Each
event word is self-contained except for the high part of its time:

====  ==============  ===========================================================
code  name            payload
====  ==============  ===========================================================
0x0   CD_OFF          bits 27..22 time low (6 bits), 21..11 x, 10..0 y
0x1   CD_ON           same layout, polarity 1
0x8   EV_TIME_HIGH    bits 27..0: bits 33..6 of the microsecond time
0xA   EXT_TRIGGER     bits 27..22 time low, 12..8 channel id, bit 0 edge value
0xE   OTHERS          vendor extensions (skipped, ``skipped_other``)
0xF   CONTINUED       extra data of the previous word (skipped, ``skipped_other``)
====  ==============  ===========================================================

Other codes are reserved (``skipped_unknown``). Words are little-endian
unless the packet says ``is_bigendian``.

Time extension. The time is 34 bits of microseconds and wraps every 2**34 us
(4.8 h). As for EVT 3.0 (see :mod:`helixtrack_ros.codecs.evt3`), the decoder
keeps an absolute TIME_HIGH count and moves it by the modular difference to
each new TIME_HIGH: a difference below half the 28-bit range is a step
forward (a wrap when it crosses the top, ``time_wraps``), anything else a
backward glitch (``time_backwards``); a backward step of more than
``RESET_STEPS`` (65 ms) is a restarted sensor clock (``time_resets``) where
event times may decrease. Otherwise event times are kept non-decreasing: an
event earlier than the latest one is held at its time (``time_clamped``).
Words before the first TIME_HIGH of a stream are discarded
(``before_time_high``); after :meth:`Evt2Decoder.resync` words are skipped
until the next TIME_HIGH (``resync_skipped``). ``time_base`` is not used.
"""

import numpy as np

from helixtrack_ros.codecs import counter_slots as cs
from helixtrack_ros.codecs.event_out import _put_event
from helixtrack_ros.codecs.kernel_decoder import KernelDecoder, native_words
from helixtrack_ros.codecs.time_high import (
    S_ABS_HIGH,
    S_HAVE_TH,
    TIME_HIGH,
    find_time_high,
    step_time_high,
)
from helixtrack_ros.core.jit import kernel

#: Largest sensor size EVT 2.0 can address (11-bit coordinates).
EVT2_MAX_SIZE = 2048

# word type codes
CD_OFF = 0x0
CD_ON = 0x1
EXT_TRIGGER = 0xA
OTHERS = 0xE
CONTINUED = 0xF

#: Bits of the time below TIME_HIGH (carried by every event word).
LOW_BITS = 6
HIGH_BITS = 28  # bits of TIME_HIGH
HIGH_MASK = (1 << HIGH_BITS) - 1

#: A backward TIME_HIGH step of more than this many steps (64 us each, 65 ms) is
#: not a glitch but a restarted sensor clock: times may decrease there.
RESET_STEPS = 1024

# decoder state slots (int64 array carried across packets), after those of time_high
_S_FLOOR = 2     # time of the latest emitted event (monotone floor)
_N_STATE = 3


@kernel
def _evt2_decode(words, new_packet, odd_bytes, time_base_us, width, height, state, counters,  # noqa: C901, PLR0912, PLR0915 (numba kernel)
                 out_t, out_x, out_y, out_p, tr_t, tr_v, tr_id):
    """Decode native-order 32-bit EVT 2.0 words, updating ``state`` and ``counters``.

    Events go to ``out_*`` and triggers to ``tr_*`` (capacity >= 1 per word);
    returns their counts. ``time_base_us`` is unused (EVT 2.0 keeps its time).
    """
    n = words.shape[0]
    cs.count_call(counters, new_packet, odd_bytes, n)
    i = 0
    if state[S_HAVE_TH] != 1:
        i = find_time_high(words, 28, HIGH_BITS, state, counters)
        if i < 0:
            return 0, 0
    abs_high = state[S_ABS_HIGH]
    base = abs_high << LOW_BITS
    floor = state[_S_FLOOR]
    k = 0
    kt = 0
    n_oob = 0
    n_clamped = 0
    # unsigned indices spare the negative-index checks
    for ii in range(i, n):
        w = np.int64(words[np.uint64(ii)])
        code = w >> 28
        if code <= CD_ON:
            xx = (w >> 11) & 0x7FF
            yy = w & 0x7FF
            if xx < width and yy < height:
                t = base + ((w >> 22) & 0x3F)
                if t < floor:
                    t = floor
                    n_clamped += 1
                floor = t
                _put_event(out_t, out_x, out_y, out_p, k, t, xx, yy, code)
                k += 1
            else:
                n_oob += 1
        elif code == TIME_HIGH:
            abs_high, restarted = step_time_high(abs_high, w & HIGH_MASK, HIGH_BITS, RESET_STEPS,
                                                 counters)
            if restarted:  # times may decrease here
                floor = abs_high << LOW_BITS
            base = abs_high << LOW_BITS
        elif code == EXT_TRIGGER:
            tr_t[np.uint64(kt)] = max(base + ((w >> 22) & 0x3F), floor)
            tr_v[np.uint64(kt)] = w & 1
            tr_id[np.uint64(kt)] = (w >> 8) & 0x1F
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


class Evt2Decoder(KernelDecoder):
    """Stateful EVT 2.0 decoder for one event stream."""

    encoding = 'evt2'
    MAX_SIZE = EVT2_MAX_SIZE
    EVENTS_PER_WORD = 1
    TRIGGERS = True
    _kernel = staticmethod(_evt2_decode)

    def _new_state(self) -> np.ndarray:
        return np.zeros(_N_STATE, np.int64)

    def _words(self, buf: np.ndarray, is_bigendian: bool) -> np.ndarray:
        return native_words(buf, 'u4', is_bigendian)

    def resync(self) -> None:
        """Packets of this stream were lost: the high part of the time is stale.

        TIME_HIGH is sent only when it changes (every 64 us), so words after
        a loss could get the time of before it. Until the next TIME_HIGH the
        words are skipped (``resync_skipped``); the wrap count continues.
        """
        if self._state[S_HAVE_TH] == 1:
            self._state[S_HAVE_TH] = 2
