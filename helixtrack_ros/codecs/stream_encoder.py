# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""The part the stateful EVT 2.0 and EVT 3.0 encoders share.

Both write words that carry the time modulo a wrap, with a TIME_HIGH word
whenever the time above ``LOW_BITS`` changes, fill TIME_HIGH words across
long silences, and keep the last TIME_HIGH and time between packets so that
a stream encoded packet by packet decodes like one encoded at once. This
class checks the input, sizes the output and keeps that state; a subclass
names its numba kernel and the limits of its encoding.

Every kernel has one signature::

    kernel(t, x, y, p, tr_t, tr_v, tr_id, state, out) -> number of words
"""

import numpy as np

from helixtrack_ros.core.events import EventArrays
from helixtrack_ros.core.jit import kernel

# encoder state slots shared by every encoding (int64 array carried across packets)
E_HIGH = 0  # absolute TIME_HIGH last written (-1: none yet)
E_T = 1     # time last written (-1: none yet)


@kernel
def _sorted_from(a, lo):
    """True if ``a`` is non-decreasing and starts at or after ``lo``."""
    prev = lo
    for i in range(a.shape[0]):
        v = a[np.uint64(i)]
        if v < prev:
            return False
        prev = v
    return True


def _check_1d(name: str, a: np.ndarray, n: int) -> None:
    if a.ndim != 1 or a.shape[0] != n:
        raise ValueError(f'{name} must be 1-D with {n} elements, got shape {a.shape}')


def _column(name: str, a: 'np.ndarray | None', n: int, default: int) -> np.ndarray:
    """``a`` as a contiguous 1-D uint8 array of ``n`` elements (``default`` where None)."""
    if a is None:
        return np.full(n, default, np.uint8)
    out = np.ascontiguousarray(a, dtype=np.uint8)
    _check_1d(name, out, n)
    return out


class StreamEncoder:
    """Stateful encoder of one stream, driven by a subclass's numba kernel.

    Subclasses set ``ENCODING`` (the name in messages), ``MAX_SIZE``,
    ``MAX_TRIG_ID``, ``LOW_BITS`` (time bits below TIME_HIGH),
    ``TIME_HIGH_FILL_STEPS``, ``WORDS_PER_EVENT`` and ``WORDS_PER_TRIGGER``
    (the most words one needs), ``WORD`` (the little-endian word dtype),
    ``N_STATE`` (state slots, ``E_HIGH`` and ``E_T`` first) and ``_kernel``.

    Examples
    --------
    >>> enc = Evt3Encoder()
    >>> payload = enc.encode(events)  # doctest: +SKIP
    """

    ENCODING = ''
    MAX_SIZE = 2048
    MAX_TRIG_ID = 0
    LOW_BITS = 0
    TIME_HIGH_FILL_STEPS = 1
    WORDS_PER_EVENT = 1
    WORDS_PER_TRIGGER = 1
    WORD = np.dtype('<u2')
    N_STATE = 2

    @staticmethod
    def _kernel(*args):  # pragma: no cover - replaced by every subclass
        raise NotImplementedError

    def __init__(self) -> None:
        self._state = np.full(self.N_STATE, -1, np.int64)

    def reset(self) -> None:
        """Start a new stream (the next packet begins with a TIME_HIGH)."""
        self._state[:] = -1

    @property
    def last_t_us(self) -> int:
        """Time of the last event or trigger written [us], -1 before the first."""
        return int(self._state[E_T])

    def encode(self, events: EventArrays, trig_t_us: 'np.ndarray | None' = None,
               trig_value: 'np.ndarray | None' = None,
               trig_id: 'np.ndarray | None' = None) -> bytes:
        """Encode one packet of events (and optional trigger events) as little-endian words.

        ``events`` need non-decreasing ``t_us`` >= 0, not earlier than the
        previous packet's last time, and x, y below ``MAX_SIZE``; so do the
        trigger times ``trig_t_us``. ``trig_value`` holds the edges (0/1,
        default 1), ``trig_id`` the channels (0..``MAX_TRIG_ID``, default 0).
        Raises ValueError on inconsistent lengths, decreasing or negative
        times, or values the encoding cannot hold.
        """
        t = np.ascontiguousarray(events.t_us, dtype=np.int64)
        n = t.shape[0]
        x = self._coordinates('x', events.x, n)
        y = self._coordinates('y', events.y, n)
        p = _column('p', events.p, n, 0)
        _check_1d('t_us', t, n)
        tr_t = (np.empty(0, np.int64) if trig_t_us is None
                else np.ascontiguousarray(trig_t_us, dtype=np.int64).reshape(-1))
        ntr = tr_t.shape[0]
        tr_v = _column('trig_value', trig_value, ntr, 1)
        tr_id = _column('trig_id', trig_id, ntr, 0)
        if np.any(tr_v > 1) or np.any(tr_id > self.MAX_TRIG_ID):
            raise ValueError(f'trigger values must be 0/1 and trigger ids 0..{self.MAX_TRIG_ID}')
        n_fill = self._fill_words(t, tr_t)
        out = np.empty(self.WORDS_PER_EVENT * n + self.WORDS_PER_TRIGGER * ntr + n_fill + 8,
                       self.WORD.newbyteorder('='))
        k = self._kernel(t, x, y, p, tr_t, tr_v, tr_id, self._state, out)
        return out[:k].astype(self.WORD, copy=False).tobytes()

    def _coordinates(self, name: str, a: np.ndarray, n: int) -> np.ndarray:
        """Coordinates checked against the encoding's range, as contiguous uint16."""
        a = np.asarray(a)
        _check_1d(name, a, n)
        if n and (int(a.min()) < 0 or int(a.max()) >= self.MAX_SIZE):
            raise ValueError(f'{self.ENCODING} coordinates must be >= 0 and < {self.MAX_SIZE} '
                             f'({name})')
        return np.ascontiguousarray(a, dtype=np.uint16)

    def _fill_words(self, t: np.ndarray, tr_t: np.ndarray) -> int:
        """Check the times against the stream so far; the most fill TIME_HIGH words needed."""
        last = int(self._state[E_T])
        t_max = last
        for name, a in (('t_us', t), ('trig_t_us', tr_t)):
            if a.shape[0] == 0:
                continue
            if not _sorted_from(a, max(last, 0)):
                raise ValueError(f'{name} must be >= 0, non-decreasing and not before the '
                                 f'previous packet (last time {last} us)')
            t_max = max(t_max, int(a[-1]))
        t_min = min([int(a[0]) for a in (t, tr_t) if a.shape[0]], default=0)
        start = t_min if last < 0 else last
        return (t_max - start) // (self.TIME_HIGH_FILL_STEPS << self.LOW_BITS) + 2
