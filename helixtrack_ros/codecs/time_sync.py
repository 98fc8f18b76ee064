# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""Mapping of sensor time (us) to ROS time (ns).

Each EventPacket gives one sample of the clock offset,
``offset = header.stamp - t_first`` (both in ns), where ``t_first`` is the
sensor time of the packet's first event. The stamp is taken by the host when
the packet's first data arrived, so each sample is the true offset plus a
positive, jittery transport latency. The least-delayed packets are therefore
the best ones: the estimate is a *leaky running minimum*

    est_k = min(sample_k, est_{k-1} + creep * (stamp_k - stamp_{k-1})),

Why this choice:

- a minimum rejects the latency jitter (which only ever adds), whereas a mean
  would be biased by the average latency and follow its bursts;
- the slow upward creep (default 100 us per s, i.e. 100 ppm) lets the
  estimate follow a host clock that runs faster than the sensor clock and
  forget a single unusually early sample; a clock drifting the other way is
  followed at once because the minimum takes the lower samples;
- it is O(1) per packet and changes smoothly (no jump when a windowed
  minimum's best sample leaves the window).

The residual error is about the smallest latency seen recently (a constant
bias common to all packets, typically well under a millisecond on USB), plus
the creep accumulated between low-latency packets. A sample more than
``reset_ns`` (default 1 s) off the estimate, either way, is a jump: a header
stamp of 0 or days off (a driver or host clock glitch) is set aside, and
only when such samples, agreeing with one another, went on for
``confirm_us`` of sensor time (the host clock was set, a bag looped) the
estimate restarts from the last one. A sample more than ``drop_ns`` (default
5 ms) below a settled estimate is such a jump too, confirmed only by samples
agreeing within ``drop_ns``: the minimum took one packet whose sensor time a
damaged time word had put 33 ms ahead, and every later output was stamped
33 ms early for minutes (live-node review); a latency floor that really fell
is taken after ``confirm_us``. So is a sample more than ``drop_ns`` below the
estimate of up to ``confirm_us`` before (its anchor): 30 packets of one header
stamp lowered the minimum 1 ms at a time, under the first guard, and every
later output was stamped 29 ms early for minutes (red-team review); a clock
drift moves the offset by well under ``drop_ns`` per ``confirm_us``. A
restarted sensor clock is told by the sensor times themselves (the caller
resets the mapper). While the
estimate is younger than ``confirm_us`` a jump is taken at once (a first
packet that came late, or stamped before a clock ran). A stamp of 0 is no
stamp.
"""

import numpy as np

#: A header stamp of this value is no stamp (e.g. sim time before its clock runs); the
#: readers of files stamp their first packet at least one above it.
NO_STAMP_NS = 0
#: the share of ``drop_ns`` the estimate may fall in one ``confirm_us`` and still move its
#: anchor (a host clock 500 ppm slow falls 0.05 ms in 100 ms)
ANCHOR_FALL = 0.2


class TimeMapper:
    """Sensor-to-ROS time mapping with a leaky running minimum of the offset.

    Parameters
    ----------
    creep_ns_per_s : float
        Upward drift allowed for the offset estimate [ns per s of ROS time].
    reset_ns : int
        A sample this much off the estimate is a jump [ns].
    confirm_us : int
        Sensor time over which jumps in a row, agreeing within ``reset_ns``,
        restart the estimate [us].
    drop_ns : int
        A sample this much below a settled estimate is a jump too (confirmed by
        samples agreeing within it) [ns].
    """

    def __init__(self, creep_ns_per_s: float = 100_000.0, reset_ns: int = 1_000_000_000,
                 confirm_us: int = 100_000, drop_ns: int = 5_000_000) -> None:
        if creep_ns_per_s < 0:
            raise ValueError(f'creep_ns_per_s must be >= 0, got {creep_ns_per_s}')
        if reset_ns <= 0:
            raise ValueError(f'reset_ns must be > 0, got {reset_ns}')
        if confirm_us < 0:
            raise ValueError(f'confirm_us must be >= 0, got {confirm_us}')
        if drop_ns <= 0:
            raise ValueError(f'drop_ns must be > 0, got {drop_ns}')
        self.drop_ns = int(drop_ns)
        self.creep_ns_per_s = float(creep_ns_per_s)
        self.reset_ns = int(reset_ns)
        self.confirm_us = int(confirm_us)
        self.reset()

    def reset(self) -> None:
        """Forget all samples."""
        self._offset_ns: int | None = None
        self._last_stamp_ns = 0
        #: a run of jumps: (its first sensor time, its first sample, its last sample)
        self._jump: tuple[int, int, int] | None = None
        self._start_us = 0                # sensor time at which the estimate (re)started
        #: the estimate as of up to confirm_us ago: (offset, its stamp, its sensor time);
        #: kept for another period when samples were set aside in the last (a slide)
        self._anchor: tuple[int, int, int] | None = None
        self._aside_in_period = False
        self.n_updates = 0
        self.n_restarts = 0
        #: samples set aside as jumps that did not persist
        self.n_set_aside = 0

    @property
    def has_estimate(self) -> bool:
        """True once :meth:`update` was called."""
        return self._offset_ns is not None

    @property
    def offset_ns(self) -> int:
        """Current offset estimate, ROS time minus sensor time [ns]."""
        if self._offset_ns is None:
            raise RuntimeError('TimeMapper has no estimate yet: call update() first')
        return self._offset_ns

    def update(self, stamp_ns: int, t_first_us: int) -> bool:
        """Add one packet's sample; False when it was set aside as a jump (so far).

        Parameters
        ----------
        stamp_ns : int
            The packet's header stamp [ns of ROS time].
        t_first_us : int
            Sensor time of the packet's first event [us].
        """
        stamp_ns = int(stamp_ns)
        t_us = int(t_first_us)
        if stamp_ns == NO_STAMP_NS:
            # no stamp at all (e.g. sim time before the first clock message)
            self.n_set_aside += 1
            return False
        sample = stamp_ns - t_us * 1000
        self.n_updates += 1
        if self._offset_ns is None:
            self._start_us = t_us
            return self._take(sample, stamp_ns, t_us)
        crept = self._crept(self._offset_ns, self._last_stamp_ns, stamp_ns)
        young = t_us - self._start_us < self.confirm_us
        dropped = crept - sample > self.drop_ns or (
            not young and self._anchor is not None
            and self._crept(*self._anchor[:2], stamp_ns) - sample > self.drop_ns)
        if (abs(sample - crept) <= self.reset_ns and not dropped) or (young and sample < crept):
            # (a young estimate follows lower samples at once: a first packet that came
            # late must not hold the offset for confirm_us)
            self._jump = None
            return self._take(min(sample, crept), stamp_ns, t_us)
        if young:
            self.n_restarts += 1
            self._start_us = t_us
            return self._take(sample, stamp_ns, t_us)
        agree = self.drop_ns if abs(sample - crept) <= self.reset_ns else self.reset_ns
        # (a run agrees with its first sample: stamps frozen for 150 ms drift 1 ms a packet,
        # each near the one before, and were followed down 150 ms; review)
        if self._jump is None or abs(sample - self._jump[1]) > agree:
            self._jump = (t_us, sample, sample)    # a new run of jumps
        else:
            self._jump = (self._jump[0], self._jump[1], sample)
        if t_us - self._jump[0] < self.confirm_us:
            self.n_set_aside += 1
            self._aside_in_period = True
            return False
        self.n_restarts += 1
        self._start_us = t_us
        return self._take(sample, stamp_ns, t_us)

    @property
    def lowest_ns(self) -> int:
        """The offset estimate, or the sample of a jump below it still to be confirmed: the
        lowest offset the recent packets say (a packet whose sensor time went this far
        beyond its stamp is no new sign of events lost upstream)."""
        offset = self.offset_ns
        return offset if self._jump is None else min(offset, self._jump[2])

    def _crept(self, offset_ns: int, since_stamp_ns: int, stamp_ns: int) -> int:
        """``offset_ns`` with the upward creep allowed from ``since_stamp_ns`` to
        ``stamp_ns``."""
        return offset_ns + int(self.creep_ns_per_s * max(stamp_ns - since_stamp_ns, 0) * 1e-9)

    def _take(self, offset_ns: int, stamp_ns: int, t_us: int) -> bool:
        """Make ``offset_ns`` the estimate, as of header stamp ``stamp_ns`` and sensor
        time ``t_us``; True. The anchor follows it while young and every confirm_us after,
        unless samples were set aside in the period or the estimate fell more than
        ANCHOR_FALL of drop_ns below it: then the anchor's value holds for another period
        (a slide that began just before a new anchor went 8.8 ms down, not drop_ns;
        review). A clock's drift moves the offset far less in a period."""
        self._offset_ns = offset_ns
        self._jump = None
        self._last_stamp_ns = stamp_ns
        anchor = self._anchor
        if anchor is None or t_us - self._start_us < self.confirm_us:
            self._anchor, self._aside_in_period = (offset_ns, stamp_ns, t_us), False
        elif t_us - anchor[2] >= self.confirm_us:
            fell = self._crept(anchor[0], anchor[1], stamp_ns) - offset_ns
            holds = self._aside_in_period or fell > ANCHOR_FALL * self.drop_ns
            self._anchor = (anchor[0], stamp_ns, t_us) if holds else (offset_ns, stamp_ns, t_us)
            self._aside_in_period = False
        return True

    def to_ros_ns(self, t_us: int) -> int:
        """Return the ROS time [ns] of a sensor time [us]."""
        return int(t_us) * 1000 + self.offset_ns

    def to_ros_ns_array(self, t_us: np.ndarray) -> np.ndarray:
        """Vectorised :meth:`to_ros_ns` (int64 ns)."""
        return np.asarray(t_us, np.int64) * 1000 + np.int64(self.offset_ns)
