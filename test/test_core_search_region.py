# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""The search region kernel of a LOST rotor against a naive numpy twin."""

import math

import numpy as np
import pytest

from helixtrack_ros.core.routing import search_region_events


def _twin(t, x, y, p, box, discs, stride):
    """The region's events and its own activity, as the recovery computed them in numpy."""
    t, x, y, p = t[::stride], x[::stride], y[::stride], p[::stride]
    x0, y0, x1, y1 = box
    m = (x >= x0) & (x <= x1) & (y >= y0) & (y <= y1)
    own = m.copy()
    for cx, cy, rad in discs:
        own &= (x - cx) ** 2 + (y - cy) ** 2 > (1.1 * rad) ** 2
    n = int(np.count_nonzero(own))
    mean = (float(np.mean(x[own])), float(np.mean(y[own]))) if n else (math.nan, math.nan)
    return (t[m], x[m], y[m], p[m]), n, mean


@pytest.mark.parametrize('stride', [1, 3, 8])
@pytest.mark.parametrize('discs', [[], [(120.0, 90.0, 25.0)],
                                   [(120.0, 90.0, 25.0), (180.5, 140.25, 30.0),
                                    (60.0, 200.0, 12.0)]])
def test_search_region_events_equal_the_numpy_twin(stride, discs):
    rng = np.random.default_rng(7)
    n = 20_000
    t = np.sort(rng.integers(0, 1000, n)).astype(np.int64)
    x = rng.integers(0, 346, n).astype(np.uint16)
    y = rng.integers(0, 260, n).astype(np.uint16)
    p = rng.integers(0, 2, n).astype(np.uint8)
    box = (70, 40, 230, 200)
    got, n_own, mx, my = search_region_events(t, x, y, p, box, discs, stride)
    want, n_want, (wx, wy) = _twin(t, x, y, p, box, discs, stride)
    for a, b in zip(got, want):
        assert a.dtype == b.dtype and np.array_equal(a, b)
    assert n_own == n_want and 0 < n_own < len(want[0]) + (not discs)
    assert mx == pytest.approx(wx, rel=1e-12) and my == pytest.approx(wy, rel=1e-12)


def test_search_region_events_of_an_empty_packet_and_an_empty_region():
    empty = (np.empty(0, np.int64), np.empty(0, np.uint16), np.empty(0, np.uint16),
             np.empty(0, np.uint8))
    got, n_own, mx, my = search_region_events(*empty, (0, 0, 10, 10), [], 1)
    assert all(len(a) == 0 for a in got) and n_own == 0 and math.isnan(mx) and math.isnan(my)
    t = np.arange(5, dtype=np.int64)
    xy = np.full(5, 50, np.uint16)
    got, n_own, mx, _ = search_region_events(t, xy, xy, np.ones(5, np.uint8), (0, 0, 10, 10),
                                             [], 1)
    assert len(got[0]) == 0 and n_own == 0 and math.isnan(mx)
    # every event inside a tracked rotor's disc: in the region, none its own
    got, n_own, _, _ = search_region_events(t, xy, xy, np.ones(5, np.uint8), (40, 40, 60, 60),
                                            [(50.0, 50.0, 5.0)], 2)
    assert len(got[0]) == 3 and n_own == 0


def test_search_region_events_refuse_bad_input():
    t = np.arange(3, dtype=np.int64)
    with pytest.raises(ValueError, match='equal length'):
        search_region_events(t, np.zeros(2), np.zeros(3), np.zeros(3), (0, 0, 1, 1), [])
    with pytest.raises(ValueError, match='stride'):
        search_region_events(t, np.zeros(3), np.zeros(3), np.zeros(3), (0, 0, 1, 1), [], 0)


def test_the_pipeline_warm_up_loads_the_search_kernel():
    """The live node warms its kernels up before it subscribes: the search of a lost
    rotor runs per packet on the packets' thread, and its first call in a cold process
    took 250 ms. (A process of its own: other tests here call the kernel.)"""
    from fresh_process import assert_runs_fresh

    code = ('from helixtrack_ros.core.routing import _search_region\n'
            'from helixtrack_ros.pipeline.tracking_pipeline import TrackingPipeline\n'
            'TrackingPipeline.warmup(())\n'
            'assert _search_region.signatures, "not loaded"\n')
    assert_runs_fresh(code)
