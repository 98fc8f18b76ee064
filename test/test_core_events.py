# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""EventArrays: the time sort the readers of decoded events share."""

import numpy as np

from helixtrack_ros.core.events import EventArrays


def test_time_sorted_is_a_stable_sort_and_keeps_sorted_events_as_they_are():
    rng = np.random.default_rng(5)
    t = rng.integers(0, 50, 400).astype(np.int64)       # many equal times
    ev = EventArrays(t, np.arange(400, dtype=np.uint16), rng.integers(0, 9, 400, np.uint16),
                     rng.integers(0, 2, 400, np.uint8))
    got = ev.time_sorted()
    want = sorted(zip(t.tolist(), range(400)))            # (time, original index)
    assert got.t_us.tolist() == [w[0] for w in want]
    assert got.x.tolist() == [w[1] for w in want]       # x is the index: ties kept in order
    assert got.time_sorted() is got and EventArrays.empty().time_sorted().t_us.size == 0
