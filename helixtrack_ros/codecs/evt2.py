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
from helixtrack_ros.core.jit import kernel_inline, packet_kernel

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


@kernel_inline
def _time_high_word(abs_high, floor, high, counters):
    """A TIME_HIGH word carrying ``high``: the new count, the time of its events, the floor."""
    abs_high, restarted = step_time_high(abs_high, high, HIGH_BITS, RESET_STEPS, counters)
    if restarted:  # times may decrease here
        floor = abs_high << LOW_BITS
    return abs_high, abs_high << LOW_BITS, floor


@kernel_inline
def _put_trigger(tr_t, tr_v, tr_id, kt, t, value, ident):
    """Write trigger kt: its time, edge value and channel."""
    tr_t[np.uint64(kt)] = t
    tr_v[np.uint64(kt)] = value
    tr_id[np.uint64(kt)] = ident


@kernel_inline
def _other_word(code, counters):
    """Count a word that is neither event, time nor trigger: known extension or reserved."""
    counters[cs.OTHER if code == OTHERS or code == CONTINUED else cs.UNKNOWN] += 1


@kernel_inline
def _open(words, new_packet, odd_bytes, code_shift, value_shift, state, counters):
    """Count the call; (index of the first word to decode, -1: none yet; TIME_HIGH count,
    time of its events, the monotone floor)."""
    cs.count_call(counters, new_packet, odd_bytes, words.shape[0])
    i = 0
    if state[S_HAVE_TH] != 1:
        i = find_time_high(words, code_shift, value_shift, HIGH_BITS, state, counters)
    abs_high = state[S_ABS_HIGH]
    return i, abs_high, abs_high << LOW_BITS, state[_S_FLOOR]


@kernel_inline
def _close(state, counters, abs_high, floor, n_oob, n_clamped, k, kt):
    """Keep the stream state for the next packet and add this one's counts."""
    state[S_ABS_HIGH] = abs_high
    state[_S_FLOOR] = floor
    counters[cs.OOB] += n_oob
    counters[cs.CLAMPED] += n_clamped
    counters[cs.EVENTS] += k
    counters[cs.TRIGGERS] += kt


#: the index of a 32-bit word's single set bit b: _DEBRUIJN_BIT[(b * _DEBRUIJN mod 2**32) >> 27]
#: (a de Bruijn sequence: an EVT 2.1 mask's bits without a branch per bit position)
_DEBRUIJN = 0x077CB531
_DEBRUIJN_BIT = np.zeros(32, np.int64)
_DEBRUIJN_BIT[[((1 << i) * _DEBRUIJN & 0xFFFFFFFF) >> 27 for i in range(32)]] = np.arange(32)


@kernel_inline
def _vector_word(w, t, code, width, height, out_t, out_x, out_y, out_p, k):
    """The events of an EVT 2.1 vector word at time t: mask bit j is (x + j, y); returns
    the new event count and the events out of the sensor."""
    x0 = (w >> 43) & 0x7FF
    yy = (w >> 32) & 0x7FF
    valid = w & 0xFFFFFFFF
    n_oob = 0
    while valid:                   # the set bits, lowest first
        lsb = valid & -valid
        j = _DEBRUIJN_BIT[((lsb * _DEBRUIJN) & 0xFFFFFFFF) >> 27]
        valid ^= lsb
        if x0 + j < width and yy < height:
            _put_event(out_t, out_x, out_y, out_p, k, t, x0 + j, yy, code)
            k += 1
        else:
            n_oob += 1
    return k, n_oob


@kernel_inline
def _evt2x_decode(words, new_packet, odd_bytes, time_base_us, width, height, state, counters,  # noqa: C901, PLR0912, PLR0915 (numba kernel)
                  out_t, out_x, out_y, out_p, tr_t, tr_v, tr_id, wide):
    """Decode native-order EVT 2.0 words (32-bit) or, ``wide``, EVT 2.1 words (64-bit).

    ``time_base_us`` is unused (both keep their own time).
    Events go to ``out_*`` and triggers to ``tr_*`` (capacity: 1 per word,
    32 for EVT 2.1); returns their counts. An event earlier than the latest
    one is held at its time (``time_clamped``, per event); events out of the
    sensor are dropped and do not move the latest time.
    """
    code_at, value_at, low_at = (60, 32, 54) if wide else (28, 0, 22)
    i, abs_high, base, floor = _open(words, new_packet, odd_bytes, code_at, value_at, state,
                                     counters)
    if i < 0:
        return 0, 0
    k = kt = n_oob = n_clamped = 0
    # unsigned indices spare the negative-index checks
    for ii in range(i, words.shape[0]):
        w = np.int64(words[np.uint64(ii)])
        code = (w >> code_at) & 0xF
        if code <= CD_ON:
            t_word = base + ((w >> low_at) & 0x3F)
            t = max(t_word, floor)
            k0 = k
            if wide:
                k, oob = _vector_word(w, t, code, width, height, out_t, out_x, out_y, out_p, k)
                n_oob += oob
            elif ((w >> 11) & 0x7FF) < width and (w & 0x7FF) < height:
                _put_event(out_t, out_x, out_y, out_p, k, t, (w >> 11) & 0x7FF, w & 0x7FF, code)
                k += 1
            else:
                n_oob += 1
            if k > k0:
                n_clamped += (k - k0) if t > t_word else 0
                floor = t
        elif code == TIME_HIGH:
            abs_high, base, floor = _time_high_word(abs_high, floor, (w >> value_at) & HIGH_MASK,
                                                    counters)
        elif code == EXT_TRIGGER:
            _put_trigger(tr_t, tr_v, tr_id, kt, max(base + ((w >> low_at) & 0x3F), floor),
                         (w >> value_at) & 1, (w >> (value_at + 8)) & 0x1F)
            kt += 1
        else:
            _other_word(code, counters)
    _close(state, counters, abs_high, floor, n_oob, n_clamped, k, kt)
    return k, kt


@packet_kernel
def _evt2_decode(words, new_packet, odd_bytes, time_base_us, width, height, state, counters,
                 out_t, out_x, out_y, out_p, tr_t, tr_v, tr_id, wide):
    """:func:`_evt2x_decode` compiled for one word width: ``wide`` is a constant of each
    decoder (``_KERNEL_FLAGS``) and the inlined loop keeps only its branch."""
    if wide:
        return _evt2x_decode(words, new_packet, odd_bytes, time_base_us, width, height, state,
                             counters, out_t, out_x, out_y, out_p, tr_t, tr_v, tr_id, True)
    return _evt2x_decode(words, new_packet, odd_bytes, time_base_us, width, height, state,
                         counters, out_t, out_x, out_y, out_p, tr_t, tr_v, tr_id, False)


class Evt2Decoder(KernelDecoder):
    """Stateful EVT 2.0 decoder for one event stream."""

    encoding = 'evt2'
    MAX_SIZE = EVT2_MAX_SIZE
    EVENTS_PER_WORD = 1
    TRIGGERS = True
    _kernel = staticmethod(_evt2_decode)
    _KERNEL_FLAGS = (False,)

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
