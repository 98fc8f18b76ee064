# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""Decoders of the ``libcaer`` and ``libcaer_cmp`` encodings of iniVation cameras.

Both are written by ros-event-camera's libcaer driver into event_camera_msgs
EventPackets; only polarity (change-detection) events are carried, no
trigger events. Times are in microseconds of the packet's time domain:
``time_base`` [ns] is the driver's ROS start time plus the sensor's elapsed
time, so decoded times are microseconds since the epoch (its sub-microsecond
part, the same for every packet of a stream, is dropped).

``libcaer``: the driver copies libcaer polarity events, 8 bytes each: a
32-bit data word (bit 0 valid mark, bit 1 polarity, bits 16..2 y, bits 31..17
x) and a signed 32-bit timestamp [us], both little-endian. ``time_base``
holds the bits of the sensor time above the 31-bit counter, so an event's
time is ``time_base // 1000 + timestamp``, plus 2**31 us for every rollover
of the counter inside the packet (a timestamp more than 2**30 us below the
one before it; ``time_wraps`` counts them). A smaller backward step is a
glitch, held at the latest time (``time_backwards``, ``time_clamped``).
Events without the valid mark are skipped (``skipped_other``), negative
timestamps are garbage (``skipped_unknown``).

``libcaer_cmp``: 16-bit words, the top 4 bits the type, the time relative to
``time_base`` (the packet's first event):

====  ============  ==========================================================
code  name          payload (bits 11..0)
====  ============  ==========================================================
0x0   TIME_HIGH     bits 23..12 of the time after ``time_base`` [us]
0x1   TIME_LOW      bits 11..0 of that time
0x2   ADDR_X        bits 10..0: the column of the following events
0x3   ADDR_Y        bit 11 polarity, bits 10..0 row: one event
0x4   VECT_BASE_Y   bit 11 polarity, bits 10..0 base row of the next VECT_8
0x5   VECT_8        bits 7..0: events at rows base + i; then base += 8
====  ============  ==========================================================

Other codes are skipped and counted (``skipped_unknown``). Each packet starts
afresh (time 0, no column or base row until sent) and spans less than 2**24 us,
so TIME_HIGH is taken as is; one that steps back is a glitch
(``time_backwards``, later events held at the latest time).

For both, event times are kept non-decreasing across packets (``time_clamped``)
except after a step back of more than ``RESET_US``, taken as a restarted
clock (``time_resets``). Every packet carries its full time, so
:meth:`resync` has nothing to forget.
"""

import numpy as np

from helixtrack_ros.codecs import counter_slots as cs
from helixtrack_ros.codecs.event_out import _put_event
from helixtrack_ros.codecs.kernel_decoder import KernelDecoder, native_words
from helixtrack_ros.core.jit import kernel_inline, packet_kernel

#: Largest sensor size the libcaer encodings address here (11-bit rows in libcaer_cmp;
#: libcaer's 15-bit fields are checked against the geometry).
LIBCAER_MAX_SIZE = 2048
LIBCAER_TS_BITS = 31
#: A backward step of more than this [us] is a restarted clock, not a glitch.
RESET_US = 1 << 16

# libcaer_cmp word type codes
CMP_TIME_HIGH = 0x0
CMP_TIME_LOW = 0x1
CMP_ADDR_X = 0x2
CMP_ADDR_Y = 0x3
CMP_VECT_BASE_Y = 0x4
CMP_VECT_8 = 0x5

_NO_COORD = 1 << 20  # a coordinate no sensor has: events before ADDR_X / VECT_BASE_Y drop

# libcaer state slots
_L_PREV_TS = 0  # last timestamp of the current packet
_L_ROLL = 1     # rollovers inside the current packet
_L_FLOOR = 2    # time of the latest emitted event
# libcaer_cmp state slots
_M_X = 0
_M_BASE_Y = 1
_M_POL = 2
_M_HIGH = 3     # last TIME_HIGH of the packet
_M_LOW = 4
_M_FLOOR = 5


@kernel_inline
def _hold(t, floor, counters):
    """Time ``t`` kept non-decreasing against ``floor`` (a far step back resets it)."""
    if t >= floor:
        return t
    if floor - t > RESET_US:
        counters[cs.RESETS] += 1
        return t
    counters[cs.CLAMPED] += 1
    return floor


@packet_kernel
def _libcaer_decode(words, new_packet, odd_bytes, time_base_us, width, height, state,
                    counters, out_t, out_x, out_y, out_p, tr_t, tr_v, tr_id):
    """Decode libcaer polarity events given as native uint64 (data | timestamp << 32)."""
    n = words.shape[0]
    cs.count_call(counters, new_packet, odd_bytes, n)
    if new_packet:
        state[_L_PREV_TS] = 0
        state[_L_ROLL] = 0
    prev = state[_L_PREV_TS]
    high = time_base_us + (state[_L_ROLL] << LIBCAER_TS_BITS)
    floor = state[_L_FLOOR]
    k = 0
    for ii in range(n):
        w = words[np.uint64(ii)]
        data = np.int64(w & np.uint64(0xFFFFFFFF))
        ts = np.int64(w >> np.uint64(32))
        if ts >> LIBCAER_TS_BITS:  # a negative int32: no camera sends it
            counters[cs.UNKNOWN] += 1
            continue
        if (data & 1) == 0:  # not marked valid
            counters[cs.OTHER] += 1
            continue
        if ts < prev:
            if prev - ts >= 1 << (LIBCAER_TS_BITS - 1):  # the 31-bit counter rolled over
                high += 1 << LIBCAER_TS_BITS
                state[_L_ROLL] += 1
                counters[cs.WRAPS] += 1
            else:
                counters[cs.BACK] += 1
        prev = ts
        xx = data >> 17
        yy = (data >> 2) & 0x7FFF
        if xx < width and yy < height:
            t = _hold(high + ts, floor, counters)
            floor = t
            _put_event(out_t, out_x, out_y, out_p, k, t, xx, yy, (data >> 1) & 1)
            k += 1
        else:
            counters[cs.OOB] += 1
    state[_L_PREV_TS] = prev
    state[_L_FLOOR] = floor
    counters[cs.EVENTS] += k
    return k, 0


@packet_kernel
def _libcaer_cmp_decode(words, new_packet, odd_bytes, time_base_us, width, height, state,  # noqa: C901, PLR0912, PLR0915 (numba kernel)
                        counters, out_t, out_x, out_y, out_p, tr_t, tr_v, tr_id):
    """Decode native-order 16-bit libcaer_cmp words (up to 8 events per word)."""
    n = words.shape[0]
    cs.count_call(counters, new_packet, odd_bytes, n)
    if new_packet:  # every packet starts afresh
        state[_M_X] = state[_M_BASE_Y] = _NO_COORD
        state[_M_POL] = state[_M_HIGH] = state[_M_LOW] = 0
    x, base_y, pol = state[_M_X], state[_M_BASE_Y], state[_M_POL]
    high, low, floor = state[_M_HIGH], state[_M_LOW], state[_M_FLOOR]
    t_ev = _hold(time_base_us + (high << 12) + low, floor, counters)
    x_ok = x < width
    k = 0
    for ii in range(n):
        w = np.int64(words[np.uint64(ii)])
        code = w >> 12
        if code == CMP_ADDR_Y:
            yy = w & 0x7FF
            if x_ok and yy < height:
                _put_event(out_t, out_x, out_y, out_p, k, t_ev, x, yy, (w >> 11) & 1)
                k += 1
                floor = t_ev
            else:
                counters[cs.OOB] += 1
        elif code == CMP_VECT_8:
            m = w & 0xFF
            j = 0
            while m != 0:
                if m & 1:
                    if x_ok and base_y + j < height:
                        _put_event(out_t, out_x, out_y, out_p, k, t_ev, x, base_y + j, pol)
                        k += 1
                        floor = t_ev
                    else:
                        counters[cs.OOB] += 1
                m >>= 1
                j += 1
            base_y = min(base_y + 8, _NO_COORD)
        elif code == CMP_ADDR_X:
            x = w & 0x7FF
            x_ok = x < width
        elif code == CMP_VECT_BASE_Y:
            base_y = w & 0x7FF
            pol = (w >> 11) & 1
        elif code == CMP_TIME_LOW or code == CMP_TIME_HIGH:
            if code == CMP_TIME_LOW:
                low = w & 0xFFF
            else:
                if (w & 0xFFF) < high:  # only a glitch steps back inside one packet
                    counters[cs.BACK] += 1
                high = w & 0xFFF
            t_ev = _hold(time_base_us + (high << 12) + low, floor, counters)
        else:
            counters[cs.UNKNOWN] += 1
    state[_M_X] = x
    state[_M_BASE_Y] = base_y
    state[_M_POL] = pol
    state[_M_HIGH] = high
    state[_M_LOW] = low
    state[_M_FLOOR] = floor
    counters[cs.EVENTS] += k
    return k, 0


class _LibcaerStream(KernelDecoder):
    """What the two libcaer encodings share: their size limit, no triggers, times after
    ``time_base``, and packets that carry their full time."""

    MAX_SIZE = LIBCAER_MAX_SIZE
    TRIGGERS = False
    USES_TIME_BASE = True

    def resync(self) -> None:
        """Packets were lost: nothing to do (every packet carries its full time)."""


class LibcaerDecoder(_LibcaerStream):
    """Stateful decoder of the ``libcaer`` encoding (uncompressed polarity events)."""

    encoding = 'libcaer'
    EVENTS_PER_WORD = 1
    _kernel = staticmethod(_libcaer_decode)

    def _new_state(self) -> np.ndarray:
        return np.zeros(3, np.int64)

    def _words(self, buf: np.ndarray, is_bigendian: bool) -> np.ndarray:
        # pairs of 32-bit fields (data, timestamp) as one native uint64 each
        halves = native_words(buf[:(buf.shape[0] // 8) * 8], 'u4', is_bigendian)
        if not np.little_endian:  # pragma: no cover - big-endian host
            pairs = halves.reshape(-1, 2).astype(np.uint64)
            return pairs[:, 0] | (pairs[:, 1] << np.uint64(32))
        words = halves.view(np.uint64)
        return words if words.flags.aligned else words.copy()


class LibcaerCmpDecoder(_LibcaerStream):
    """Stateful decoder of the ``libcaer_cmp`` encoding (compressed polarity events).

    Every packet starts afresh (no column or base row until sent).
    """

    encoding = 'libcaer_cmp'
    EVENTS_PER_WORD = 8
    _kernel = staticmethod(_libcaer_cmp_decode)

    def _new_state(self) -> np.ndarray:
        s = np.zeros(6, np.int64)
        s[_M_X] = _NO_COORD
        s[_M_BASE_Y] = _NO_COORD
        return s

    def _words(self, buf: np.ndarray, is_bigendian: bool) -> np.ndarray:
        return native_words(buf, 'u2', is_bigendian)
