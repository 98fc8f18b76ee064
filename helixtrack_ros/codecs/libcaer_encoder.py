# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""Encoders of the ``libcaer`` and ``libcaer_cmp`` encodings (tests, tools, benchmarks).

Each packet is encoded on its own with its ``time_base`` (as the libcaer
driver does), so that :mod:`helixtrack_ros.codecs.libcaer` decodes the same
events in the same order:

- ``libcaer``: one 8-byte polarity event per event, marked valid; the
  timestamp is the time after ``time_base`` modulo 2**31 us (a packet may
  cross the counter's rollover).
- ``libcaer_cmp``: an ADDR_X first; TIME_HIGH / TIME_LOW when the time after
  ``time_base`` changes (a packet spans less than 2**24 us);
  ADDR_X when the column changes; consecutive events of one time, column and
  polarity with increasing rows inside one block of 8 rows become
  VECT_BASE_Y + VECT_8, a lone event an ADDR_Y.
"""

import numpy as np

from helixtrack_ros.codecs.libcaer import (
    CMP_ADDR_X,
    CMP_ADDR_Y,
    CMP_TIME_HIGH,
    CMP_TIME_LOW,
    CMP_VECT_8,
    CMP_VECT_BASE_Y,
    LIBCAER_MAX_SIZE,
    LIBCAER_TS_BITS,
)
from helixtrack_ros.core.events import EventArrays
from helixtrack_ros.core.jit import kernel

#: A libcaer_cmp packet spans less than this [us] (24-bit time after time_base).
CMP_MAX_SPAN_US = 1 << 24


@kernel
def _cmp_encode(rel, x, y, p, out):
    """Write libcaer_cmp words of events at times ``rel`` [us after time_base]."""
    n = rel.shape[0]
    k = 0
    high = 0
    low = 0
    cur_x = np.int64(x[0])
    out[k] = (CMP_ADDR_X << 12) | cur_x
    k += 1
    i = 0
    while i < n:
        ti = rel[i]
        ah = ti >> 12
        if ah != high:
            out[k] = (CMP_TIME_HIGH << 12) | ah
            k += 1
            high = ah
        if (ti & 0xFFF) != low:
            low = ti & 0xFFF
            out[k] = (CMP_TIME_LOW << 12) | low
            k += 1
        xi = np.int64(x[i])
        if xi != cur_x:
            cur_x = xi
            out[k] = (CMP_ADDR_X << 12) | xi
            k += 1
        yi = np.int64(y[i])
        pi = np.int64(p[i] != 0)
        block = yi & ~7
        mask = 1 << (yi - block)
        last_y = yi
        j = i + 1
        while (j < n and rel[j] == ti and np.int64(x[j]) == xi and np.int64(p[j] != 0) == pi
               and last_y < np.int64(y[j]) < block + 8):
            last_y = np.int64(y[j])
            mask |= 1 << (last_y - block)
            j += 1
        if j == i + 1:
            out[k] = (CMP_ADDR_Y << 12) | (pi << 11) | yi
            k += 1
        else:
            out[k] = (CMP_VECT_BASE_Y << 12) | (pi << 11) | block
            out[k + 1] = (CMP_VECT_8 << 12) | mask
            k += 2
        i = j
    return k


def _checked(events: EventArrays, time_base_ns: 'int | None',
             default_base_us: 'int | None' = None) -> tuple:
    """Validate events; return (rel_us, x, y, p, time_base_ns)."""
    t = np.ascontiguousarray(events.t_us, np.int64).reshape(-1)
    x = np.ascontiguousarray(events.x, np.int64).reshape(-1)
    y = np.ascontiguousarray(events.y, np.int64).reshape(-1)
    p = np.ascontiguousarray(events.p, np.uint8).reshape(-1)
    if not x.shape == y.shape == p.shape == t.shape:
        raise ValueError('t_us, x, y and p must have the same length')
    if t.size and (np.any(np.diff(t) < 0) or t[0] < 0):
        raise ValueError('event times must be >= 0 and non-decreasing')
    for name, a in (('x', x), ('y', y)):
        if a.size and (a.min() < 0 or a.max() >= LIBCAER_MAX_SIZE):
            raise ValueError(f'{name} must be in 0..{LIBCAER_MAX_SIZE - 1}')
    if time_base_ns is None:
        first = int(t[0]) if t.size else 0
        base_us = first if default_base_us is None else default_base_us
        time_base_ns = base_us * 1000
    time_base_ns = int(time_base_ns)
    rel = t - time_base_ns // 1000
    if rel.size and rel[0] < 0:
        raise ValueError('event times must not be earlier than time_base_ns')
    return rel, x, y, p, time_base_ns


def encode_libcaer(events: EventArrays, time_base_ns: 'int | None' = None,
                   is_bigendian: bool = False) -> tuple[bytes, int]:
    """Encode events as a ``libcaer`` payload; return it and the time base used [ns].

    Times must not decrease, and consecutive events be less than 2**30 us
    apart. ``time_base_ns`` defaults to the first event's time with its low
    31 bits cleared, as the driver sends it. ``is_bigendian`` writes the
    32-bit fields big-endian. ValueError on times or coordinates out of range.
    """
    t0 = int(np.asarray(events.t_us)[0]) if len(events.t_us) else 0
    rel, x, y, p, tb = _checked(events, time_base_ns, t0 & ~((1 << LIBCAER_TS_BITS) - 1))
    if rel.size > 1 and int(np.diff(rel).max()) >= 1 << (LIBCAER_TS_BITS - 1):
        raise ValueError('consecutive events must be less than 2**30 us apart')
    data = (x.astype(np.uint32) << 17) | (y.astype(np.uint32) << 2) \
        | ((p != 0).astype(np.uint32) << 1) | np.uint32(1)
    pairs = np.empty((rel.size, 2), '>u4' if is_bigendian else '<u4')
    pairs[:, 0] = data
    pairs[:, 1] = rel & ((1 << LIBCAER_TS_BITS) - 1)
    return pairs.tobytes(), tb


def encode_libcaer_cmp(events: EventArrays, time_base_ns: 'int | None' = None,
                       is_bigendian: bool = False) -> tuple[bytes, int]:
    """Encode events as a ``libcaer_cmp`` payload; return it and the time base used [ns].

    Times must not decrease and lie less than 2**24 us after ``time_base_ns``
    (default: the first event's time). ``is_bigendian`` writes big-endian
    16-bit words. ValueError on times or coordinates out of range.
    """
    rel, x, y, p, tb = _checked(events, time_base_ns)
    if rel.size == 0:
        return b'', tb
    if int(rel[-1]) >= CMP_MAX_SPAN_US:
        raise ValueError('a libcaer_cmp packet must end less than 2**24 us after time_base')
    out = np.empty(5 * rel.size + 4, np.uint16)
    k = _cmp_encode(rel, x, y, p, out)
    return out[:k].astype('>u2' if is_bigendian else '<u2').tobytes(), tb
