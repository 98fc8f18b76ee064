# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""Packet-in -> publish latency statistics of the node, ROS-free.

A fixed-bin histogram keeps adding a latency O(1) and memory constant for
any run length; percentiles are read off its cumulative counts.
"""

from __future__ import annotations

import math
import time

import numpy as np


class LatencyHistogram:
    """Packet-in -> publish latencies in 10 us bins up to 100 ms, then 1 ms bins up to
    10 s (the last bin open): a node far behind still gets its percentiles apart.

    A latency is only appended per packet; the pending ones are binned together when a
    percentile is read (or ``FLUSH`` are pending): reading no longer walks the ~20,000
    bins in Python, which held the node's packet thread 1 ms per read.
    """

    BIN_US = 10
    FINE = 10_000                 # 10 us bins: 0 .. 100 ms
    COARSE_US = 1000
    BINS = FINE + 9_900           # then 1 ms bins: 100 ms .. 10 s
    FLUSH = 4096                  # pending latencies binned at most this many at a time

    def __init__(self) -> None:
        self._counts = np.zeros(self.BINS, dtype=np.int64)
        self._pending: list[int] = []
        self._n = 0
        self._max_us = 0
        self._cumulative: np.ndarray | None = None     # of _counts, until the next flush

    def add(self, latency_us: int) -> None:
        """Count one latency [us] (per packet: a list append)."""
        self._pending.append(latency_us)
        if len(self._pending) >= self.FLUSH:
            self._flush()

    def _flush(self) -> None:
        """Bin the pending latencies (negative ones count as 0)."""
        if not self._pending:
            return
        us = np.maximum(np.asarray(self._pending, dtype=np.int64), 0)
        self._pending.clear()
        k = us // self.BIN_US
        coarse = k >= self.FINE
        k[coarse] = np.minimum(self.FINE + (us[coarse] - self.FINE * self.BIN_US)
                               // self.COARSE_US, self.BINS - 1)
        self._counts += np.bincount(k, minlength=self.BINS)
        self._cumulative = None
        self._n += len(us)
        self._max_us = max(self._max_us, int(us.max()))

    @property
    def n(self) -> int:
        """Latencies counted."""
        return self._n + len(self._pending)

    @property
    def max_us(self) -> int:
        """The largest latency counted [us] (0 when none)."""
        self._flush()
        return self._max_us

    def percentile_ms(self, q: float) -> float:
        """The q-th percentile [ms]: the upper edge of its bin, at most the largest
        latency seen (so in the open last bin: that largest one); NaN when empty."""
        self._flush()
        if self._n == 0:
            return math.nan
        rank = max(1, math.ceil(q / 100.0 * self._n))
        if self._cumulative is None:
            self._cumulative = np.cumsum(self._counts)
        k = int(np.searchsorted(self._cumulative, rank))
        if k < self.FINE:
            edge_us = (k + 1) * self.BIN_US
        else:
            edge_us = (self.FINE * self.BIN_US + (k - self.FINE + 1) * self.COARSE_US
                       if k < self.BINS - 1 else self._max_us)
        return min(edge_us, self._max_us) / 1000.0


class PeriodCounters:
    """Counters over one diagnostics period (packets, events, callback time, latency)."""

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        """Start a new period: zero every counter, restart its wall clock."""
        self.wall0 = time.monotonic()
        self.packets = 0
        self.events = 0
        self.cb_s = 0.0
        self.cb_max_s = 0.0
        self.sensor_us = 0
        self.latency = LatencyHistogram()

    def count_packet(self, t_us: int, n_events: int, last_t_us: int | None) -> None:
        """A packet published: its events, and the sensor time since the last one."""
        if last_t_us is not None and 0 < t_us - last_t_us < 1_000_000:
            self.sensor_us += int(t_us - last_t_us)
        self.packets += 1
        self.events += int(n_events)

    def values(self, since_start: LatencyHistogram) -> tuple[dict[str, str], float]:
        """The period's rates, load and latency percentiles as diagnostic values, and the
        load (callback time per sensor time)."""
        wall = max(time.monotonic() - self.wall0, 1e-9)
        sensor_s = self.sensor_us * 1e-6
        load = self.cb_s / sensor_s if sensor_s > 0 else 0.0
        return {
            'events_per_s_in': f'{self.events / wall:.0f}',
            'packets_per_s_in': f'{self.packets / wall:.1f}',
            'processing_load': f'{load:.3f}',
            'callback_ms_mean': f'{1e3 * self.cb_s / max(self.packets, 1):.3f}',
            'callback_ms_max': f'{1e3 * self.cb_max_s:.3f}',
            'latency_ms_p50': f'{self.latency.percentile_ms(50):.2f}',
            'latency_ms_p99': f'{self.latency.percentile_ms(99):.2f}',
            'latency_ms_max': f'{self.latency.max_us / 1000:.2f}',
            'latency_ms_p50_since_start': f'{since_start.percentile_ms(50):.2f}',
            'latency_ms_p99_since_start': f'{since_start.percentile_ms(99):.2f}',
        }, load
