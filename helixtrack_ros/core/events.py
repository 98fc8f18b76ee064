# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""The event array container shared by codecs, simulator, tracker and I/O."""

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
        return int(self.t_us.shape[0])

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
