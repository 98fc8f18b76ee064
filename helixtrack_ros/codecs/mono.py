# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""The ``mono`` encoding of event_camera_msgs: one 64-bit word per CD event.

Layout of each little-endian 64-bit word (ros-event-camera):

======  ==================================================
bits    meaning
======  ==================================================
63      polarity, 1 = ON, 0 = OFF
48..62  y (15 bits)
32..47  x (16 bits)
0..31   dt: time after the packet's ``time_base`` [ns]
======  ==================================================

``time_base`` is sensor time in nanoseconds, so the event's sensor time is
``(time_base + dt) // 1000`` microseconds. The encoding has no trigger
events. As for EVT 3.0, event times are kept non-decreasing within a stream
(a word earlier than the latest event is held at its time and counted as
``time_clamped``), and events outside the sensor are dropped and counted.
"""

import numpy as np

from helixtrack_ros.codecs import counter_slots as cs
from helixtrack_ros.codecs.kernel_decoder import KernelDecoder, checked_time_base
from helixtrack_ros.codecs.types import (
    DecodedPacket,
    payload_as_uint8,
)
from helixtrack_ros.core.events import EventArrays, EventBuffer
from helixtrack_ros.core.jit import packet_kernel

#: Largest sensor size the mono words can address (15-bit y).
MONO_MAX_SIZE = 1 << 15


@packet_kernel
def _mono_decode(words, time_base_ns, width, height, floor_us, counters):
    """Decode 64-bit mono words; returns the arrays, their length and the new floor."""
    n = words.shape[0]
    out_t = np.empty(n, np.int64)
    out_x = np.empty(n, np.uint16)
    out_y = np.empty(n, np.uint16)
    out_p = np.empty(n, np.uint8)
    k = 0
    n_oob = 0
    n_clamped = 0
    for i in range(n):
        w = words[i]
        xx = np.int64((w >> np.uint64(32)) & np.uint64(0xFFFF))
        yy = np.int64((w >> np.uint64(48)) & np.uint64(0x7FFF))
        if xx >= width or yy >= height:
            n_oob += 1
            continue
        t = (time_base_ns + np.int64(w & np.uint64(0xFFFFFFFF))) // 1000
        if t < floor_us:
            t = floor_us
            n_clamped += 1
        floor_us = t
        out_t[k] = t
        out_x[k] = xx
        out_y[k] = yy
        out_p[k] = np.uint8(w >> np.uint64(63))
        k += 1
    counters[cs.EVENTS] += k
    counters[cs.OOB] += n_oob
    counters[cs.CLAMPED] += n_clamped
    return out_t, out_x, out_y, out_p, k, floor_us


class MonoDecoder(KernelDecoder):
    """Stateful decoder of the ``mono`` encoding (its state: the monotone time floor)."""

    encoding = 'mono'
    MAX_SIZE = MONO_MAX_SIZE

    def _new_state(self) -> np.ndarray:
        return np.zeros(1, np.int64)

    def resync(self) -> None:
        """Packets were lost: nothing to do (every mono event carries its full time)."""

    def decode(self, payload: 'bytes | np.ndarray', is_bigendian: bool = False,
               time_base: int = 0, out: EventBuffer | None = None) -> DecodedPacket:
        """Decode one ``mono`` EventPacket (see :meth:`KernelDecoder.decode`).

        An event's time is ``(time_base + dt) // 1000`` [us]; no triggers.
        """
        time_base = checked_time_base(time_base)
        buf = payload_as_uint8(payload)
        n = buf.shape[0] // 8
        self._counters[cs.PACKETS] += 1
        self._counters[cs.WORDS] += n
        self._counters[cs.ODD] += buf.shape[0] - 8 * n
        words = buf[:8 * n].view('>u8' if is_bigendian else '<u8').astype(np.uint64)
        t, x, y, p, k, floor_us = _mono_decode(
            words, time_base, self.width, self.height, int(self._state[0]), self._counters)
        self._state[0] = floor_us
        ev = (EventArrays(t[:k], x[:k], y[:k], p[:k]) if out is None
              else out.put(t[:k], x[:k], y[:k], p[:k]))
        return DecodedPacket(ev, np.empty(0, np.int64), np.empty(0, np.uint8),
                             np.empty(0, np.uint8))


def encode_mono(events: EventArrays, time_base_ns: 'int | None' = None,
                is_bigendian: bool = False) -> tuple[bytes, int]:
    """Encode events as a ``mono`` payload (tests, tools); return it and the time base [ns].

    ``time_base_ns`` defaults to the first event's time; every
    ``t_us * 1000 - time_base_ns`` must fit in 32 bits and y in 15 bits
    (else ValueError). ``is_bigendian`` writes big-endian words.
    """
    t_ns = np.asarray(events.t_us, np.int64) * 1000
    if time_base_ns is None:
        time_base_ns = int(t_ns[0]) if t_ns.size else 0
    dt = t_ns - int(time_base_ns)
    if dt.size and (dt.min() < 0 or dt.max() > 0xFFFFFFFF):
        raise ValueError('event times must lie within 0..2**32-1 ns after time_base_ns')
    x = np.asarray(events.x, np.uint64)
    y = np.asarray(events.y, np.uint64)
    if y.size and y.max() >= MONO_MAX_SIZE:
        raise ValueError(f'y must be < {MONO_MAX_SIZE} in the mono encoding')
    words = mono_words(x, y, np.asarray(events.p), dt)
    return words.astype('>u8' if is_bigendian else '<u8').tobytes(), int(time_base_ns)


def mono_words(x: np.ndarray, y: np.ndarray, p: np.ndarray, dt_ns: np.ndarray) -> np.ndarray:
    """The ``mono`` words (uint64, the module docstring's layout) of events at ``dt_ns``
    (0..2**32-1) after the packet's time base; y in 15 bits, p nonzero = ON."""
    return (((np.asarray(p) != 0).astype(np.uint64) << np.uint64(63))
            | ((np.asarray(y).astype(np.uint64) & np.uint64(0x7FFF)) << np.uint64(48))
            | (np.asarray(x).astype(np.uint64) << np.uint64(32))
            | np.asarray(dt_ns).astype(np.uint64))
