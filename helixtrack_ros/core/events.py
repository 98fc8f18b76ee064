# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""The event array container shared by codecs, simulator, tracker and I/O."""

import sys
from typing import NamedTuple

import numpy as np


class EventArrays(NamedTuple):
    """Parallel arrays of change-detection events.

    Attributes
    ----------
    t_us : numpy.ndarray
        int64 sensor time in microseconds, non-decreasing.
    x, y : numpy.ndarray
        uint16 pixel column and row.
    p : numpy.ndarray
        uint8 polarity, 1 = ON (brighter), 0 = OFF.
    """

    t_us: np.ndarray
    x: np.ndarray
    y: np.ndarray
    p: np.ndarray

    def __len__(self) -> int:  # noqa: D105
        return len(self.t_us)

    @staticmethod
    def empty() -> 'EventArrays':
        """Return a container with no events."""
        return EventArrays(np.empty(0, np.int64), np.empty(0, np.uint16),
                           np.empty(0, np.uint16), np.empty(0, np.uint8))

    @staticmethod
    def concatenate(parts: 'list[EventArrays]') -> 'EventArrays':
        """Join several containers in order."""
        if not parts:
            return EventArrays.empty()
        return EventArrays(*(np.concatenate([getattr(e, f) for e in parts])
                             for f in EventArrays._fields))

    def slice(self, start: int, stop: int) -> 'EventArrays':
        """Return events ``start:stop`` (views, no copy)."""
        return EventArrays(self.t_us[start:stop], self.x[start:stop],
                           self.y[start:stop], self.p[start:stop])

    def time_sorted(self) -> 'EventArrays':
        """The events in time order (a stable sort; itself when already in order)."""
        if not len(self) or not np.any(np.diff(self.t_us) < 0):
            return self
        order = np.argsort(self.t_us, kind='stable')
        return EventArrays(*(a[order] for a in self))

    def late(self) -> tuple[int, int]:
        """(how many, index of the first) events come earlier than an event before them."""
        late = self.t_us < np.maximum.accumulate(self.t_us) if len(self) else self.t_us > 0
        return int(late.sum()), int(np.argmax(late)) if len(late) else 0

    def every(self, k: int) -> 'EventArrays':
        """Every k-th event (0, k, 2k, ...), as contiguous copies."""
        return EventArrays(*(np.ascontiguousarray(a[::k]) for a in self))


class EventBuffer:
    """Preallocated storage that keeps consecutive packets of a batch contiguous.

    Decoders write each packet's events in place (:meth:`free_arrays`,
    :meth:`commit`) or copy them in (:meth:`put`) and hand out views, so a
    batch of packets is one set of arrays without a second copy
    (:meth:`joined`). A packet that does not fit is returned as its own copy
    instead; the batch then falls back to concatenation. The pipeline reuses
    a buffer once no view of it is left (:meth:`in_use`).

    Parameters
    ----------
    capacity : int
        Events the buffer can hold.
    """

    def __init__(self, capacity: int) -> None:
        capacity = max(int(capacity), 0)
        self._arrays = EventArrays(np.empty(capacity, np.int64), np.empty(capacity, np.uint16),
                                   np.empty(capacity, np.uint16), np.empty(capacity, np.uint8))
        self._capacity = capacity
        self.n = 0

    @property
    def capacity(self) -> int:
        """Events the buffer can hold."""
        return self._capacity

    def put(self, t_us: np.ndarray, x: np.ndarray, y: np.ndarray,
            p: np.ndarray) -> EventArrays:
        """Append events; return them as views into the buffer (or as copies when full)."""
        k = int(t_us.shape[0])
        n0 = self.n
        if n0 + k > self.capacity:
            return EventArrays(t_us.copy(), x.copy(), y.copy(), p.copy())
        for dst, src in zip(self._arrays, (t_us, x, y, p)):
            dst[n0:n0 + k] = src
        self.n = n0 + k
        return self._arrays.slice(n0, n0 + k)

    def free_arrays(self, k: int) -> 'EventArrays | None':
        """Room for ``k`` more events as writable views (None when it is not there).

        For a decoder that writes straight into the buffer; :meth:`commit`
        then takes the events it wrote.
        """
        n0 = self.n
        if n0 + k > self.capacity:
            return None
        return self._arrays.slice(n0, n0 + k)

    def commit(self, k: int) -> EventArrays:
        """Take the next ``k`` events written into :meth:`free_arrays`; return them."""
        n0 = self.n
        if n0 + k > self.capacity:
            raise ValueError('commit: more events than the buffer holds')
        self.n = n0 + k
        return self._arrays.slice(n0, n0 + k)

    def in_use(self) -> bool:
        """True while any array handed out (a view) is still referenced somewhere."""
        # references: the tuple's own and getrefcount's argument; any view adds one
        t, x, y, p = self._arrays
        # (unpacked: each name adds one reference)
        return (sys.getrefcount(t) > 3 or sys.getrefcount(x) > 3 or sys.getrefcount(y) > 3
                or sys.getrefcount(p) > 3)

    def reset(self) -> None:
        """Empty the buffer for reuse (only when not :meth:`in_use`)."""
        self.n = 0

    def truncate(self, n: int) -> None:
        """Drop everything after the first ``n`` events (a refused packet)."""
        self.n = min(self.n, max(int(n), 0))

    def joined(self, parts: 'list[EventArrays]') -> 'EventArrays | None':
        """The events of ``parts`` as one view when they lie back to back here, else None."""
        if not parts:
            return None
        base = self._arrays.t_us
        start = _offset_in(base, parts[0].t_us)
        if start is None:
            return None
        pos = start
        for part in parts:
            if _offset_in(base, part.t_us) != pos:
                return None
            pos += len(part)
        return self._arrays.slice(start, pos)


def _offset_in(base: np.ndarray, view: np.ndarray) -> 'int | None':
    """Index of ``view[0]`` in ``base`` when ``view`` is a contiguous slice of it."""
    if view.base is not base and view is not base:
        return None
    offset = view.__array_interface__['data'][0] - base.__array_interface__['data'][0]
    return offset // base.itemsize
