# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""The part the stateful EVT 2.0 and EVT 3.0 encoders share.

Both write words that carry the time modulo a wrap, with a TIME_HIGH word
whenever the time above the low bits changes, fill TIME_HIGH words across
long silences, and keep the last TIME_HIGH and time between packets so that
a stream encoded packet by packet decodes like one encoded at once. This
class checks the input, sizes the output and keeps that state; a subclass
names its numba kernel and the limits of its encoding.

Every kernel has one signature::

    kernel(t, x, y, p, tr_t, tr_v, tr_id, state, out) -> number of words
"""

from dataclasses import dataclass

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


@dataclass(frozen=True)
class WordFormat:
    """What the shared encoder needs to know of one encoding's words.

    ``encoding`` names it in messages; ``max_size`` bounds x and y;
    ``max_trig_id`` is the largest trigger channel; ``low_bits`` are the time
    bits an event word carries below TIME_HIGH; ``fill_steps`` TIME_HIGH
    steps or more of silence get intermediate TIME_HIGH words; one event or
    trigger needs at most ``words_per_event`` / ``words_per_trigger`` words
    of dtype ``word`` (little-endian); the kernel keeps ``n_state`` slots.
    """

    encoding: str
    max_size: int
    max_trig_id: int
    low_bits: int
    fill_steps: int
    words_per_event: int
    words_per_trigger: int
    word: np.dtype
    n_state: int


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

    Subclasses set ``FORMAT`` (their :class:`WordFormat`; state slots
    ``E_HIGH`` and ``E_T`` come first) and ``_kernel``.

    Examples
    --------
    >>> enc = Evt3Encoder()
    >>> payload = enc.encode(events)  # doctest: +SKIP
    """

    FORMAT: WordFormat

    @staticmethod
    def _kernel(*args):  # pragma: no cover - replaced by every subclass
        raise NotImplementedError

    def __init__(self) -> None:
        self._state = np.full(self.FORMAT.n_state, -1, np.int64)

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
        previous packet's last time, and x, y below ``FORMAT.max_size``; so do the
        trigger times ``trig_t_us``. ``trig_value`` holds the edges (0/1,
        default 1), ``trig_id`` the channels (0..``FORMAT.max_trig_id``, default 0).
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
        fmt = self.FORMAT
        if np.any(tr_v > 1) or np.any(tr_id > fmt.max_trig_id):
            raise ValueError(f'trigger values must be 0/1 and trigger ids 0..{fmt.max_trig_id}')
        n_fill = self._fill_words(t, tr_t)
        out = np.empty(fmt.words_per_event * n + fmt.words_per_trigger * ntr + n_fill + 8,
                       fmt.word.newbyteorder('='))
        k = self._kernel(t, x, y, p, tr_t, tr_v, tr_id, self._state, out)
        return out[:k].astype(fmt.word, copy=False).tobytes()

    def _coordinates(self, name: str, a: np.ndarray, n: int) -> np.ndarray:
        """Coordinates checked against the encoding's range, as contiguous uint16."""
        a = np.asarray(a)
        _check_1d(name, a, n)
        fmt = self.FORMAT
        if n and (int(a.min()) < 0 or int(a.max()) >= fmt.max_size):
            raise ValueError(f'{fmt.encoding} coordinates must be >= 0 and < {fmt.max_size} '
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
        return (t_max - start) // (self.FORMAT.fill_steps << self.FORMAT.low_bits) + 2
