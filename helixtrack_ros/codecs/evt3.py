# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""Decoder of the Prophesee EVT 3.0 event stream (IMX636 and similar sensors).

EVT 3.0 is a stream of 16-bit words; the top 4 bits give the word type and
the words update a decoder state (time, row, vector base column, polarity)
from which the change-detection events are emitted:

====  ==============  ===========================================================
code  name            payload (bits 11..0)
====  ==============  ===========================================================
0x0   EVT_ADDR_Y      bit 11 system type (ignored), bits 10..0 row y
0x2   EVT_ADDR_X      bit 11 polarity, bits 10..0 column x: one event
0x3   VECT_BASE_X     bit 11 polarity, bits 10..0 base column for vectors
0x4   VECT_12         12-bit mask: events at base + i; then base += 12
0x5   VECT_8          8-bit mask (bits 7..0): events at base + i; then base += 8
0x6   EVT_TIME_LOW    low 12 bits of the 24-bit microsecond time
0x7   CONTINUED_4     extra data of the previous word (skipped)
0x8   EVT_TIME_HIGH   high 12 bits of the 24-bit microsecond time
0xA   EXT_TRIGGER     bits 11..8 channel id, bit 0 edge value
0xE   OTHERS          vendor sub-types (skipped)
0xF   CONTINUED_12    extra data of the previous word (skipped)
====  ==============  ===========================================================

Other codes (0x1, 0x9 -- padding seen on some cameras --, 0xB, 0xC, 0xD) are
skipped and counted. Words are little-endian unless the packet says
``is_bigendian``.

Time extension. The 24-bit time wraps every 2**24 us (16.78 s). The decoder
keeps an absolute TIME_HIGH count (int64) and moves it by the modular
difference to each new TIME_HIGH: a difference below half the 12-bit range
(2048 steps, 8.4 s) is a step forward (a wrap when it crosses 4095 -> 0),
anything else is a backward step, i.e. a glitch of the sensor, not a wrap
(counted as ``time_backwards``). So a small backward step of TIME_HIGH never
adds 16.78 s. A backward step of more than ``RESET_STEPS`` (16 steps, 65 ms) is
a restarted sensor clock (``time_resets``): the time floor below is reset and
event times decrease there, so that the caller can see the restart. Otherwise
event times are kept non-decreasing: a time word that falls behind the latest
emitted event time is held at that time (``time_clamped``). The time of a
stream starts in the wrap epoch 0 at its first TIME_HIGH; words before it are
discarded (``before_time_high``). ``time_base`` of the message is not used (the
metavision driver sends 0).

State (time, wrap epoch, row, base column, polarity) is carried from one
packet to the next of the same stream; call :meth:`Evt3Decoder.reset` between
streams. Events after the first TIME_HIGH but before the first TIME_LOW get
a low part of 0; events before the first EVT_ADDR_Y (or vectors before the
first VECT_BASE_X) of a stream have no coordinate and count as out of bounds.

Speed. One kernel call per packet (payloads over 2**18 words are cut into
chunks). The kernel writes into output buffers owned by the decoder and
reused for every packet, then exact-size copies are returned: fresh memory
for every packet would cost page faults, which are expensive on virtual
machines. Rarely changing state stays in arrays so that the hot loop keeps
its variables in registers, and unsigned indices spare negative-index
checks. About 4 ns per event on driver-like packets (benchmarks/bench_decode.py).
"""

import numpy as np

from helixtrack_ros.codecs import counter_slots as cs
from helixtrack_ros.codecs.event_out import _put_event
from helixtrack_ros.codecs.kernel_decoder import KernelDecoder
from helixtrack_ros.codecs.time_high import (
    S_ABS_HIGH,
    S_HAVE_TH,
    TIME_HIGH,
    find_time_high,
    step_time_high,
)
from helixtrack_ros.core.jit import packet_kernel

#: Largest sensor size EVT 3.0 can address (11-bit coordinates).
EVT3_MAX_SIZE = 2048

# word type codes
ADDR_Y = 0x0
ADDR_X = 0x2
VECT_BASE_X = 0x3
VECT_12 = 0x4
VECT_8 = 0x5
TIME_LOW = 0x6
CONTINUED_4 = 0x7
EXT_TRIGGER = 0xA
OTHERS = 0xE
CONTINUED_12 = 0xF

#: A backward TIME_HIGH step of more than this many steps (4096 us each, 65 ms) is
#: not a glitch but a restarted sensor clock: times may decrease there.
RESET_STEPS = 16

# decoder state slots (int64 array carried across packets), after those of time_high
_S_LOW = 2       # last TIME_LOW
_S_Y = 3         # current row (_NO_COORD until an ADDR_Y)
_S_BASE_X = 4    # current vector base column (_NO_COORD until a VECT_BASE_X)
_S_POL = 5       # current vector polarity
_S_FLOOR = 6     # time of the latest emitted event (monotone floor)
_S_T_EV = 7      # time given to events now
_N_STATE = 8
_NO_COORD = 1 << 20  # a coordinate no sensor has: events without a row/base are dropped


def new_state() -> np.ndarray:
    """Return the decoder state of a stream that has not started."""
    s = np.zeros(_N_STATE, np.int64)
    s[_S_Y] = _NO_COORD
    s[_S_BASE_X] = _NO_COORD
    return s


@packet_kernel
def _evt3_decode(words, new_packet, odd_bytes, width, height, state, counters, out_t, out_x, out_y,  # noqa: C901, PLR0912, PLR0915 (numba kernel)
                 out_p, tr_t, tr_v, tr_id):
    """Decode native-order 16-bit EVT 3.0 words, updating ``state`` and ``counters``.

    Events go to the scratch arrays ``out_*`` (capacity >= 12 per word) and
    triggers to ``tr_*`` (capacity >= 1 per word); returns their counts.
    """
    n = words.shape[0]
    cs.count_call(counters, new_packet, odd_bytes, n)
    k = 0
    kt = 0
    i = 0
    if state[S_HAVE_TH] != 1:
        i = find_time_high(words, 12, 0, 12, state, counters)
        if i < 0:
            return 0, 0
        state[_S_LOW] = 0
        state[_S_T_EV] = max(state[S_ABS_HIGH] << 12, state[_S_FLOOR])
    # Hot state in locals; rarely changed state and the counters stay in the arrays
    # (fewer live variables: the loop keeps its values in registers).
    y = state[_S_Y]
    x_lim = width if y < height else 0  # columns accepted in the current row
    base_x = state[_S_BASE_X]
    pol = state[_S_POL]
    t_ev = state[_S_T_EV]
    k_mark = 0  # events before k_mark were emitted before the last time word
    # unsigned indices spare the negative-index checks (about 25 % faster)
    for ii in range(i, n):
        w = np.int64(words[np.uint64(ii)])
        code = w >> 12
        if code == ADDR_X:
            xx = w & 0x7FF
            if xx < x_lim:
                _put_event(out_t, out_x, out_y, out_p, k, t_ev, xx, y, (w >> 11) & 1)
                k += 1
            else:
                counters[cs.OOB] += 1
        elif code == ADDR_Y:
            y = w & 0x7FF
            x_lim = width if y < height else 0
        elif code == TIME_LOW or code == TIME_HIGH:
            if k > k_mark:  # events were emitted at t_ev: it is the new floor
                state[_S_FLOOR] = t_ev
                k_mark = k
            if code == TIME_LOW:
                state[_S_LOW] = w & 0xFFF
            else:
                abs_high, restarted = step_time_high(state[S_ABS_HIGH], w & 0xFFF, 12,
                                                     RESET_STEPS, counters)
                if restarted:  # times may decrease here
                    state[_S_FLOOR] = abs_high << 12
                state[S_ABS_HIGH] = abs_high
            t_raw = (state[S_ABS_HIGH] << 12) + state[_S_LOW]
            if t_raw >= state[_S_FLOOR]:
                t_ev = t_raw
            else:
                t_ev = state[_S_FLOOR]
                counters[cs.CLAMPED] += 1
        elif code == VECT_12 or code == VECT_8:
            if code == VECT_12:
                m = w & 0xFFF
                span = 12
            else:
                m = w & 0xFF
                span = 8
            if base_x + span <= x_lim:
                # branch-free: write every position up to the last set bit, keep the set ones
                j = 0
                while m != 0:
                    _put_event(out_t, out_x, out_y, out_p, k, t_ev, base_x + j, y, pol)
                    k += m & 1
                    m >>= 1
                    j += 1
            else:
                j = 0
                while m != 0:
                    if m & 1:
                        if base_x + j < x_lim:
                            _put_event(out_t, out_x, out_y, out_p, k, t_ev, base_x + j, y, pol)
                            k += 1
                        else:
                            counters[cs.OOB] += 1
                    m >>= 1
                    j += 1
            base_x += span
        elif code == VECT_BASE_X:
            base_x = w & 0x7FF
            pol = (w >> 11) & 1
        elif code == EXT_TRIGGER:
            tr_t[np.uint64(kt)] = t_ev
            tr_v[np.uint64(kt)] = w & 1
            tr_id[np.uint64(kt)] = (w >> 8) & 0xF
            kt += 1
        elif code == OTHERS or code == CONTINUED_4 or code == CONTINUED_12:
            counters[cs.OTHER] += 1
        else:
            counters[cs.UNKNOWN] += 1
    if k > k_mark:
        state[_S_FLOOR] = t_ev
    state[_S_Y] = y
    state[_S_BASE_X] = min(base_x, _NO_COORD)
    state[_S_POL] = pol
    state[_S_T_EV] = t_ev
    counters[cs.EVENTS] += k
    counters[cs.TRIGGERS] += kt
    return k, kt


def words_from_payload(buf: np.ndarray, is_bigendian: bool = False) -> np.ndarray:
    """Return the whole 16-bit words of a uint8 payload in native order.

    A view when the payload is aligned little-endian on a little-endian host,
    else a copy.
    """
    n2 = (buf.shape[0] // 2) * 2
    words = buf[:n2].view('>u2' if is_bigendian else '<u2')
    if not words.dtype.isnative or not words.flags.aligned:
        words = words.astype(np.uint16)
    return words


def _evt3_kernel(words, new_packet, odd_bytes, time_base_us, width, height, state, counters,
                 *out):
    """The EVT 3.0 kernel in the shape :class:`KernelDecoder` calls (EVT 3.0 carries its
    own time: ``time_base_us`` is not used)."""
    del time_base_us
    return _evt3_decode(words, new_packet, odd_bytes, width, height, state, counters, *out)


class Evt3Decoder(KernelDecoder):
    """Stateful EVT 3.0 decoder for one event stream."""

    encoding = 'evt3'
    MAX_SIZE = EVT3_MAX_SIZE
    EVENTS_PER_WORD = 12    # a VECT_12 word holds up to 12 events
    TRIGGERS = True
    _kernel = staticmethod(_evt3_kernel)

    def _new_state(self) -> np.ndarray:
        return new_state()

    def _words(self, buf: np.ndarray, is_bigendian: bool) -> np.ndarray:
        return words_from_payload(buf, is_bigendian)

    def resync(self) -> None:
        """Packets of this stream were lost: the time and position state is stale.

        TIME_HIGH is sent only when it changes (every 4096 us), and rows and
        vector bases only when they change, so words after a loss would get
        the time and row of before it. Until the next TIME_HIGH the words are
        skipped (``resync_skipped``); the wrap count continues; rows and bases
        are unknown until sent again.
        """
        if self._state[S_HAVE_TH] == 1:
            self._state[S_HAVE_TH] = 2
        self._state[_S_Y] = _NO_COORD
        self._state[_S_BASE_X] = _NO_COORD
