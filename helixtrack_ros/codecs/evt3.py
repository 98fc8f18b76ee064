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
adds 16.78 s. Event times are then kept non-decreasing: a time word that
falls behind the latest emitted event time is held at that time
(``time_clamped``). The time of a stream starts in the wrap epoch 0 at its
first TIME_HIGH; words before it are discarded (``before_time_high``).
``time_base`` of the message is not used (the metavision driver sends 0).

State (time, wrap epoch, row, base column, polarity) is carried from one
packet to the next of the same stream; call :meth:`Evt3Decoder.reset` between
streams.
"""

import numpy as np
from numba import njit

from helixtrack_ros.codecs.types import (
    check_geometry, COUNTER_NAMES, DecodedPacket, payload_as_uint8)
from helixtrack_ros.core.events import EventArrays

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
TIME_HIGH = 0x8
EXT_TRIGGER = 0xA
OTHERS = 0xE
CONTINUED_12 = 0xF

# decoder state slots (int64 array carried across packets)
_S_HAVE_TH = 0   # 1 once the first TIME_HIGH was seen
_S_ABS_HIGH = 1  # absolute TIME_HIGH count (wraps included)
_S_LOW = 2       # last TIME_LOW
_S_Y = 3         # current row (_NO_COORD until an ADDR_Y)
_S_BASE_X = 4    # current vector base column (_NO_COORD until a VECT_BASE_X)
_S_POL = 5       # current vector polarity
_S_FLOOR = 6     # time of the latest emitted event (monotone floor)
_S_T_EV = 7      # time given to events now
_N_STATE = 8
_NO_COORD = 1 << 20  # a coordinate no sensor has: events without a row/base are dropped

_C = {name: i for i, name in enumerate(COUNTER_NAMES)}
_C_WORDS = _C['words']
_C_EVENTS = _C['events']
_C_TRIGGERS = _C['triggers']
_C_OTHER = _C['skipped_other']
_C_UNKNOWN = _C['skipped_unknown']
_C_BEFORE = _C['before_time_high']
_C_OOB = _C['out_of_bounds']
_C_BACK = _C['time_backwards']
_C_WRAPS = _C['time_wraps']
_C_CLAMPED = _C['time_clamped']

# number of events a word can produce, indexed by the 16-bit word
_EVENTS_PER_WORD = np.zeros(1 << 16, np.uint8)
_EVENTS_PER_WORD[ADDR_X << 12:(ADDR_X + 1) << 12] = 1
_EVENTS_PER_WORD[VECT_12 << 12:(VECT_12 + 1) << 12] = [bin(m).count('1') for m in range(4096)]
_EVENTS_PER_WORD[VECT_8 << 12:(VECT_8 + 1) << 12] = [bin(m & 0xFF).count('1')
                                                     for m in range(4096)]


def new_state() -> np.ndarray:
    """Return the decoder state of a stream that has not started."""
    s = np.zeros(_N_STATE, np.int64)
    s[_S_Y] = _NO_COORD
    s[_S_BASE_X] = _NO_COORD
    return s


@njit(cache=True, nogil=True)
def _evt3_decode(words, swap, width, height, state, counters, table):
    """Decode 16-bit EVT 3.0 words, updating ``state`` and ``counters`` in place."""
    n = words.shape[0]
    counters[_C_WORDS] += n
    # exact upper bound of the outputs: one pass over the words
    bound = 0
    n_trig = 0
    for i in range(n):
        w = np.int64(words[i])
        if swap:
            w = ((w & 0xFF) << 8) | (w >> 8)
        bound += table[w]
        if (w >> 12) == EXT_TRIGGER:
            n_trig += 1
    out_t = np.empty(bound, np.int64)
    out_x = np.empty(bound, np.uint16)
    out_y = np.empty(bound, np.uint16)
    out_p = np.empty(bound, np.uint8)
    tr_t = np.empty(n_trig, np.int64)
    tr_v = np.empty(n_trig, np.uint8)
    tr_id = np.empty(n_trig, np.uint8)
    k = 0
    kt = 0
    i = 0
    if state[_S_HAVE_TH] == 0:
        while i < n:
            w = np.int64(words[i])
            if swap:
                w = ((w & 0xFF) << 8) | (w >> 8)
            if (w >> 12) == TIME_HIGH:
                break
            i += 1
        counters[_C_BEFORE] += i
        if i == n:
            return out_t, out_x, out_y, out_p, tr_t, tr_v, tr_id, 0, 0
        w = np.int64(words[i])
        if swap:
            w = ((w & 0xFF) << 8) | (w >> 8)
        state[_S_HAVE_TH] = 1
        state[_S_ABS_HIGH] = w & 0xFFF
        state[_S_LOW] = 0
        state[_S_T_EV] = max((w & 0xFFF) << 12, state[_S_FLOOR])
        i += 1
    abs_high = state[_S_ABS_HIGH]
    low = state[_S_LOW]
    y = state[_S_Y]
    base_x = state[_S_BASE_X]
    pol = state[_S_POL]
    floor = state[_S_FLOOR]
    t_ev = state[_S_T_EV]
    y_ok = y < height
    k_mark = 0
    n_oob = 0
    n_other = 0
    n_unknown = 0
    n_back = 0
    n_wraps = 0
    n_clamped = 0
    while i < n:
        w = np.int64(words[i])
        i += 1
        if swap:
            w = ((w & 0xFF) << 8) | (w >> 8)
        code = w >> 12
        if code == ADDR_X:
            xx = w & 0x7FF
            if y_ok and xx < width:
                out_t[k] = t_ev
                out_x[k] = xx
                out_y[k] = y
                out_p[k] = (w >> 11) & 1
                k += 1
            else:
                n_oob += 1
        elif code == VECT_12 or code == VECT_8:
            if code == VECT_12:
                m = w & 0xFFF
                span = 12
            else:
                m = w & 0xFF
                span = 8
            if y_ok and base_x + span <= width:
                j = 0
                while m != 0:
                    if m & 1:
                        out_t[k] = t_ev
                        out_x[k] = base_x + j
                        out_y[k] = y
                        out_p[k] = pol
                        k += 1
                    m >>= 1
                    j += 1
            else:
                j = 0
                while m != 0:
                    if m & 1:
                        if y_ok and base_x + j < width:
                            out_t[k] = t_ev
                            out_x[k] = base_x + j
                            out_y[k] = y
                            out_p[k] = pol
                            k += 1
                        else:
                            n_oob += 1
                    m >>= 1
                    j += 1
            base_x += span
        elif code == TIME_LOW or code == TIME_HIGH:
            if k > k_mark:  # events were emitted at t_ev: it is the new floor
                floor = t_ev
                k_mark = k
            if code == TIME_LOW:
                low = w & 0xFFF
            else:
                d = ((w & 0xFFF) - abs_high) & 0xFFF
                if d < 2048:
                    if ((abs_high + d) >> 12) != (abs_high >> 12):
                        n_wraps += 1
                    abs_high += d
                else:
                    abs_high -= 4096 - d
                    n_back += 1
            t_raw = (abs_high << 12) + low
            if t_raw >= floor:
                t_ev = t_raw
            else:
                t_ev = floor
                n_clamped += 1
        elif code == ADDR_Y:
            y = w & 0x7FF
            y_ok = y < height
        elif code == VECT_BASE_X:
            base_x = w & 0x7FF
            pol = (w >> 11) & 1
        elif code == EXT_TRIGGER:
            tr_t[kt] = t_ev
            tr_v[kt] = w & 1
            tr_id[kt] = (w >> 8) & 0xF
            kt += 1
        elif code == OTHERS or code == CONTINUED_4 or code == CONTINUED_12:
            n_other += 1
        else:
            n_unknown += 1
    if k > k_mark:
        floor = t_ev
    state[_S_ABS_HIGH] = abs_high
    state[_S_LOW] = low
    state[_S_Y] = y
    state[_S_BASE_X] = min(base_x, _NO_COORD)
    state[_S_POL] = pol
    state[_S_FLOOR] = floor
    state[_S_T_EV] = t_ev
    counters[_C_EVENTS] += k
    counters[_C_TRIGGERS] += kt
    counters[_C_OOB] += n_oob
    counters[_C_OTHER] += n_other
    counters[_C_UNKNOWN] += n_unknown
    counters[_C_BACK] += n_back
    counters[_C_WRAPS] += n_wraps
    counters[_C_CLAMPED] += n_clamped
    return out_t, out_x, out_y, out_p, tr_t, tr_v, tr_id, k, kt


def words_from_payload(buf: np.ndarray) -> np.ndarray:
    """Return the whole 16-bit words of a uint8 payload (a view when aligned)."""
    n2 = (buf.shape[0] // 2) * 2
    body = buf[:n2]
    if body.ctypes.data % 2:
        body = body.copy()
    return body.view(np.uint16)


class Evt3Decoder:
    """Stateful EVT 3.0 decoder for one event stream.

    Parameters
    ----------
    width, height : int
        Sensor size in pixels; events outside are dropped and counted.

    Examples
    --------
    >>> dec = Evt3Decoder(1280, 720)
    >>> pkt = dec.decode(msg.events)            # doctest: +SKIP
    >>> pkt.events.t_us, dec.counters['events']  # doctest: +SKIP
    """

    encoding = 'evt3'

    def __init__(self, width: int, height: int) -> None:
        self.width, self.height = check_geometry(width, height, EVT3_MAX_SIZE)
        self._state = new_state()
        self._counters = np.zeros(len(COUNTER_NAMES), np.int64)

    def reset(self) -> None:
        """Forget the stream state and zero the counters (start of a new stream)."""
        self._state = new_state()
        self._counters[:] = 0

    @property
    def counters(self) -> dict[str, int]:
        """Cumulative counters since construction or :meth:`reset`."""
        return {name: int(v) for name, v in zip(COUNTER_NAMES, self._counters)}

    def decode(self, payload: 'bytes | np.ndarray', is_bigendian: bool = False,
               time_base: int = 0) -> DecodedPacket:
        """Decode the payload of one EventPacket.

        Parameters
        ----------
        payload : bytes or numpy.ndarray
            The packet's ``events`` bytes (uint8 array or bytes-like).
        is_bigendian : bool
            True if the 16-bit words are big-endian.
        time_base : int
            Ignored for EVT 3.0 (times come from the stream itself).

        Returns
        -------
        DecodedPacket
            Events and trigger events of this packet.
        """
        del time_base  # EVT 3.0 carries its own time
        buf = payload_as_uint8(payload)
        self._counters[_C['packets']] += 1
        self._counters[_C['odd_bytes']] += buf.shape[0] % 2
        words = words_from_payload(buf)
        t, x, y, p, tt, tv, tid, k, kt = _evt3_decode(
            words, bool(is_bigendian), self.width, self.height, self._state, self._counters,
            _EVENTS_PER_WORD)
        if k < t.shape[0]:
            t, x, y, p = t[:k], x[:k], y[:k], p[:k]
        return DecodedPacket(EventArrays(t, x, y, p), tt[:kt], tv[:kt], tid[:kt])
