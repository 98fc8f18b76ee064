# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""EVT 2.0 encoder, used by the simulator, tests and benchmarks.

The word stream follows the input order exactly, so that decoding gives back
the same events in the same order:

- ``EV_TIME_HIGH`` whenever bits 33..6 of the time change (the words carry
  the time modulo 2**34, so the wrap is crossed naturally); across a silence
  of ``TIME_HIGH_FILL_STEPS`` or more steps (71 min) intermediate TIME_HIGH
  words are written so that the decoder's wrap tracking (which accepts
  forward steps below 2**27) never becomes ambiguous;
- one ``CD_OFF``/``CD_ON`` word per event and one ``EXT_TRIGGER`` word per
  trigger event, merged by time (a trigger first on equal times).

The encoder is stateful: a stream encoded packet by packet decodes with one
decoder exactly as if it had been encoded at once. The first word of a stream
is a TIME_HIGH.
"""

import numpy as np

from helixtrack_ros.codecs.evt2 import (
    CD_OFF,
    CD_ON,
    EVT2_MAX_SIZE,
    EXT_TRIGGER,
    HIGH_MASK,
    LOW_BITS,
    TIME_HIGH,
)
from helixtrack_ros.core.events import EventArrays
from helixtrack_ros.core.jit import kernel

#: Longest gap between TIME_HIGH words the encoder leaves (TIME_HIGH steps).
TIME_HIGH_FILL_STEPS = 1 << 26

_E_HIGH = 0  # absolute TIME_HIGH last written (-1: none yet)
_E_T = 1     # time last written (-1: none yet)


@kernel
def _evt2_encode(t, x, y, p, tr_t, tr_v, tr_id, state, out):
    """Write EVT 2.0 words of events and triggers into ``out``; returns the count."""
    n = t.shape[0]
    ntr = tr_t.shape[0]
    last_high = state[_E_HIGH]
    k = 0
    i = 0
    j = 0
    while i < n or j < ntr:
        is_trig = j < ntr and (i >= n or tr_t[j] <= t[i])
        ti = tr_t[j] if is_trig else t[i]
        ah = ti >> LOW_BITS
        if ah != last_high:
            if last_high >= 0:
                while ah - last_high >= TIME_HIGH_FILL_STEPS:
                    last_high += TIME_HIGH_FILL_STEPS
                    out[k] = (TIME_HIGH << 28) | (last_high & HIGH_MASK)
                    k += 1
            out[k] = (TIME_HIGH << 28) | (ah & HIGH_MASK)
            k += 1
            last_high = ah
        low = ti & 0x3F
        if is_trig:
            out[k] = ((EXT_TRIGGER << 28) | (low << 22) | ((np.int64(tr_id[j]) & 0x1F) << 8)
                      | (np.int64(tr_v[j]) & 1))
            j += 1
        else:
            code = CD_ON if p[i] != 0 else CD_OFF
            out[k] = (code << 28) | (low << 22) | (np.int64(x[i]) << 11) | np.int64(y[i])
            i += 1
        k += 1
        state[_E_T] = ti
    state[_E_HIGH] = last_high
    return k


def _as_1d(name: str, a: 'np.ndarray | None', n: int, dtype: type, default: int) -> np.ndarray:
    if a is None:
        return np.full(n, default, dtype)
    out = np.ascontiguousarray(a, dtype=dtype).reshape(-1)
    if out.shape[0] != n:
        raise ValueError(f'{name} must have {n} elements, got {out.shape[0]}')
    return out


class Evt2Encoder:
    """Stateful EVT 2.0 encoder of one stream (see the module docstring).

    Examples
    --------
    >>> enc = Evt2Encoder()
    >>> payload = enc.encode(events)  # doctest: +SKIP
    """

    def __init__(self) -> None:
        self._state = np.array([-1, -1], np.int64)

    def reset(self) -> None:
        """Start a new stream (the next packet begins with a TIME_HIGH)."""
        self._state[:] = -1

    @property
    def last_t_us(self) -> int:
        """Time of the last event or trigger written [us], -1 before the first."""
        return int(self._state[_E_T])

    def encode(self, events: EventArrays, trig_t_us: 'np.ndarray | None' = None,
               trig_value: 'np.ndarray | None' = None,
               trig_id: 'np.ndarray | None' = None) -> bytes:
        """Encode one packet of events (and optional trigger events).

        Parameters
        ----------
        events : EventArrays
            Events with non-decreasing ``t_us`` >= 0, not earlier than the
            previous packet's last time; x, y < 2048.
        trig_t_us : numpy.ndarray, optional
            Non-decreasing trigger times [us], same constraint.
        trig_value : numpy.ndarray, optional
            Trigger edges (0/1); default 1.
        trig_id : numpy.ndarray, optional
            Trigger channels (0..31); default 0.

        Returns
        -------
        bytes
            Little-endian 32-bit EVT 2.0 words.

        Raises
        ------
        ValueError
            On inconsistent lengths, decreasing or negative times, or values
            EVT 2.0 cannot hold.
        """
        t = _as_1d('t_us', events.t_us, len(events.t_us), np.int64, 0)
        n = t.shape[0]
        x = _as_1d('x', events.x, n, np.int64, 0)
        y = _as_1d('y', events.y, n, np.int64, 0)
        p = _as_1d('p', events.p, n, np.uint8, 0)
        tr_t = (np.empty(0, np.int64) if trig_t_us is None
                else np.ascontiguousarray(trig_t_us, dtype=np.int64).reshape(-1))
        ntr = tr_t.shape[0]
        tr_v = _as_1d('trig_value', trig_value, ntr, np.uint8, 1)
        tr_id = _as_1d('trig_id', trig_id, ntr, np.uint8, 0)
        if np.any(tr_v > 1) or np.any(tr_id > 31):
            raise ValueError('trigger values must be 0/1 and trigger ids 0..31')
        for name, a in (('x', x), ('y', y)):
            if n and (int(a.min()) < 0 or int(a.max()) >= EVT2_MAX_SIZE):
                raise ValueError(f'EVT 2.0 coordinates must be in 0..{EVT2_MAX_SIZE - 1} ({name})')
        last = int(self._state[_E_T])
        t_max = last
        for name, a in (('t_us', t), ('trig_t_us', tr_t)):
            if a.shape[0] == 0:
                continue
            if int(a[0]) < max(last, 0) or np.any(np.diff(a) < 0):
                raise ValueError(f'{name} must be >= 0, non-decreasing and not before the '
                                 f'previous packet (last time {last} us)')
            t_max = max(t_max, int(a[-1]))
        t_min = min([int(a[0]) for a in (t, tr_t) if a.shape[0]], default=0)
        start = t_min if last < 0 else last
        n_fill = (t_max - start) // (TIME_HIGH_FILL_STEPS << LOW_BITS) + 2
        out = np.empty(2 * (n + ntr) + n_fill + 8, np.uint32)
        k = _evt2_encode(t, x, y, p, tr_t, tr_v, tr_id, self._state, out)
        return out[:k].astype('<u4', copy=False).tobytes()
