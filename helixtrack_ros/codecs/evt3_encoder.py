# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""EVT 3.0 encoder that writes streams shaped like those of an IMX636 sensor.

Used by the simulator, tests and benchmarks. The word stream follows the
input order exactly, so that decoding gives back the same events in the same
order:

- ``EVT_TIME_HIGH`` whenever the high 12 bits of the time change (the words
  carry the time modulo 2**24, so the 24-bit wrap is crossed naturally);
  across a silence of 1024 or more TIME_HIGH steps (4.2 s) intermediate
  TIME_HIGH words are written so that the decoder's wrap tracking (which
  accepts forward steps below 2048) never becomes ambiguous;
- ``EVT_TIME_LOW`` whenever the time changes (always after a TIME_HIGH);
- ``EVT_ADDR_Y`` whenever the row changes;
- consecutive events of one time, row and polarity with increasing x that
  fit in a 12-column window start a vector: ``VECT_BASE_X`` then
  ``VECT_12`` words (``VECT_8`` when the window's events fit in 8 columns),
  continuing while the next events fall in the next window; other events get
  a single ``EVT_ADDR_X``;
- optional ``EXT_TRIGGER`` words, merged in by time.

The encoder is stateful: a stream encoded packet by packet decodes with one
decoder exactly as if it had been encoded at once. The first word of a
stream is a TIME_HIGH.
"""

from collections.abc import Sequence

import numpy as np

from helixtrack_ros.codecs.evt3 import (
    ADDR_X,
    ADDR_Y,
    EVT3_MAX_SIZE,
    EXT_TRIGGER,
    TIME_HIGH,
    TIME_LOW,
    VECT_8,
    VECT_12,
    VECT_BASE_X,
)
from helixtrack_ros.codecs.stream_encoder import E_HIGH, E_T, StreamEncoder, WordFormat
from helixtrack_ros.core.jit import kernel

#: Longest gap between TIME_HIGH words the encoder leaves (TIME_HIGH steps).
TIME_HIGH_FILL_STEPS = 1024

_E_Y = 2     # row the decoder holds (-1: unknown)


@kernel
def _evt3_encode(t, x, y, p, tr_t, tr_v, tr_id, state, out):
    """Write EVT 3.0 words of events and triggers into ``out``; returns the count."""
    n = t.shape[0]
    ntr = tr_t.shape[0]
    last_high = state[E_HIGH]
    last_t = state[E_T]
    cur_y = state[_E_Y]
    k = 0
    i = 0
    j = 0
    # unsigned indices (np.uint64) spare numba's negative-index checks
    while i < n or j < ntr:
        is_trig = j < ntr and (i >= n or tr_t[np.uint64(j)] <= t[np.uint64(i)])
        ti = tr_t[np.uint64(j)] if is_trig else t[np.uint64(i)]
        if ti != last_t:
            ah = ti >> 12
            if ah != last_high:
                if last_high >= 0:
                    while ah - last_high >= TIME_HIGH_FILL_STEPS:
                        last_high += TIME_HIGH_FILL_STEPS
                        out[np.uint64(k)] = (TIME_HIGH << 12) | (last_high & 0xFFF)
                        k += 1
                out[np.uint64(k)] = (TIME_HIGH << 12) | (ah & 0xFFF)
                k += 1
                last_high = ah
            out[np.uint64(k)] = (TIME_LOW << 12) | (ti & 0xFFF)
            k += 1
            last_t = ti
        if is_trig:
            out[np.uint64(k)] = ((EXT_TRIGGER << 12) | ((np.int64(tr_id[np.uint64(j)]) & 0xF) << 8)
                                 | (np.int64(tr_v[np.uint64(j)]) & 1))
            k += 1
            j += 1
            continue
        yi = np.int64(y[np.uint64(i)])
        if yi != cur_y:
            out[np.uint64(k)] = (ADDR_Y << 12) | yi
            k += 1
            cur_y = yi
        xi = np.int64(x[np.uint64(i)])
        pi = np.int64(p[np.uint64(i)] != 0)
        nx = i + 1
        if not (nx < n and t[np.uint64(nx)] == ti and np.int64(y[np.uint64(nx)]) == yi
                and np.int64(p[np.uint64(nx)] != 0) == pi
                and xi < np.int64(x[np.uint64(nx)]) < xi + 12):
            out[np.uint64(k)] = (ADDR_X << 12) | (pi << 11) | xi
            k += 1
            i = nx
            continue
        # a vector run starting at column xi
        out[np.uint64(k)] = (VECT_BASE_X << 12) | (pi << 11) | xi
        k += 1
        base = xi
        last_x = xi - 1
        while True:
            mask = 0
            while (i < n and t[np.uint64(i)] == ti and np.int64(y[np.uint64(i)]) == yi
                   and np.int64(p[np.uint64(i)] != 0) == pi):
                xx = np.int64(x[np.uint64(i)])
                if xx <= last_x or xx >= base + 12:
                    break
                mask |= 1 << (xx - base)
                last_x = xx
                i += 1
            if mask == 0:
                break
            if last_x - base < 8:
                out[np.uint64(k)] = (VECT_8 << 12) | mask
                base += 8
            else:
                out[np.uint64(k)] = (VECT_12 << 12) | mask
                base += 12
            k += 1
    state[E_HIGH] = last_high
    state[E_T] = last_t
    state[_E_Y] = cur_y
    return k


class Evt3Encoder(StreamEncoder):
    """Stateful EVT 3.0 encoder of one stream (see the module docstring): 16-bit words."""

    # an event needs at most TIME_HIGH, TIME_LOW, ADDR_Y, VECT_BASE_X and a vector
    FORMAT = WordFormat('EVT 3.0', max_size=EVT3_MAX_SIZE, max_trig_id=15, low_bits=12,
                        fill_steps=TIME_HIGH_FILL_STEPS, words_per_event=5,
                        words_per_trigger=3, word=np.dtype('<u2'), n_state=3)
    _kernel = staticmethod(_evt3_encode)


def packetize(t_us: np.ndarray, packet_us: int = 1000,
              max_events: 'int | None' = None) -> 'Sequence[tuple[int, int]]':
    """Cut a time-sorted event stream into packets like the metavision driver.

    A packet starts at an event and holds the following events less than
    ``packet_us`` later (and at most ``max_events`` of them).

    Parameters
    ----------
    t_us : numpy.ndarray
        Non-decreasing event times [us].
    packet_us : int
        Packet duration [us] (the driver's default is 1 ms).
    max_events : int, optional
        Largest packet size in events.

    Returns
    -------
    list of tuple of (int, int)
        ``(start, stop)`` index ranges covering all events in order.
    """
    if packet_us <= 0:
        raise ValueError(f'packet_us must be > 0, got {packet_us}')
    if max_events is not None and max_events <= 0:
        raise ValueError(f'max_events must be > 0, got {max_events}')
    t = np.asarray(t_us, dtype=np.int64)
    n = t.shape[0]
    out = []
    i = 0
    while i < n:
        stop = int(np.searchsorted(t, t[i] + packet_us, side='left'))
        if max_events is not None:
            stop = min(stop, i + max_events)
        stop = max(stop, i + 1)
        out.append((i, stop))
        i = stop
    return out
