# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""The node's latency statistics (ROS-free)."""

import math

import numpy as np

from helixtrack_ros.latency import LatencyHistogram, PeriodCounters


def test_latency_histogram_percentiles():
    rng = np.random.default_rng(3)
    lat_us = rng.gamma(2.0, 400.0, 5000).astype(int)
    h = LatencyHistogram()
    assert math.isnan(h.percentile_ms(50))
    for v in lat_us:
        h.add(int(v))
    h.add(25_000_000)                               # beyond the last bin: counted there
    for q in (50, 90, 99):
        exact = np.percentile(np.append(lat_us, 25_000_000), q, method='inverted_cdf') / 1000
        assert exact <= h.percentile_ms(q) <= exact + 0.01
    # the open last bin reads as the largest latency seen, not as its 10 s edge
    assert h.percentile_ms(100) == 25_000.0 and h.max_us == 25_000_000 and h.n == 5001


def test_latencies_beyond_100_ms_keep_their_percentiles_apart():
    """Found by the live-node review: once over half the latencies passed 100 ms (the
    last bin then), p50 = p99 = max (1,163 ms). Beyond 100 ms the bins are 1 ms wide."""
    h = LatencyHistogram()
    for v in range(200_000, 1_200_000, 100):        # 0.2 .. 1.2 s, evenly
        h.add(v)
    exact = np.arange(200_000, 1_200_000, 100)
    for q in (50, 99):
        ref = np.percentile(exact, q, method='inverted_cdf') / 1000
        assert ref <= h.percentile_ms(q) <= ref + 1.0
    assert h.percentile_ms(50) < 800 < h.percentile_ms(99) < h.percentile_ms(100)


def test_a_percentile_never_exceeds_the_largest_latency():
    """Before: the upper edge of a bin (2.62 ms) above the largest latency (2.61 ms)."""
    h = LatencyHistogram()
    for v in (1000, 2000, 2613):
        h.add(v)
    assert h.percentile_ms(99) == 2.613 == h.max_us / 1000
    for v in range(10_000):
        h.add(200_000 + v)
    assert h.percentile_ms(50) == 205.0 and h.percentile_ms(100) == 209.999


def test_period_counters_reset_starts_a_new_period():
    w = PeriodCounters()
    w.packets, w.events, w.cb_s = 3, 400, 0.5
    w.latency.add(120)
    w.reset()
    assert (w.packets, w.events, w.cb_s, w.cb_max_s, w.sensor_us) == (0, 0, 0.0, 0.0, 0)
    assert w.latency.n == 0


def test_pending_latencies_are_binned_before_they_pile_up():
    """Latencies are appended per packet and binned when read: a node whose diagnostics
    are never read still holds at most FLUSH of them, and loses none."""
    h = LatencyHistogram()
    for v in range(LatencyHistogram.FLUSH + 5):
        h.add(v)
    assert len(h._pending) < LatencyHistogram.FLUSH
    assert h.n == LatencyHistogram.FLUSH + 5
    assert h.max_us == LatencyHistogram.FLUSH + 4 and not h._pending
    h.add(-7)                                         # a clock step back counts as 0
    assert h.n == LatencyHistogram.FLUSH + 6 and h.percentile_ms(0.001) == 0.01
