# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""The rotors of a pipeline: one tracker and one recovery each, tracked batch by batch.

A batch is tracked in two phases. Phase 1 (:meth:`RotorBank.start`): every
rotor that is not searched for runs through all packets of the batch in one
kernel call, the rotors in worker threads. Phase 2 (:meth:`RotorBank.rows`):
a rotor whose call stopped early (LOST, or a missed reset deadline) and the
searched-for ones go on packet by packet, with the recovery step after each.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import replace
import itertools

import numpy as np

from helixtrack_ros.core.detection import DetectedRotor, detect_rotors
from helixtrack_ros.core.events import EventArrays, EventBuffer
from helixtrack_ros.core.health import TRACKING, RotorState
from helixtrack_ros.core.homography import disc_from_core_q
from helixtrack_ros.core.params import RotorInit, TrackerParams
from helixtrack_ros.core.tracker import HelixTracker, PacketRun
from helixtrack_ros.core.tracker_stack import TrackerStack
from helixtrack_ros.pipeline.batching import Inflight, Pending, RotorThreads
from helixtrack_ros.pipeline.config import PipelineConfig
from helixtrack_ros.pipeline.identity import (
    any_on_another_rotor,
    layout_discs,
    withhold_other_rotors,
)
from helixtrack_ros.pipeline.layout_roll import LayoutRoll
from helixtrack_ros.pipeline.outputs import outputs_of, searching_output, tracking_discs
from helixtrack_ros.pipeline.packet_times import RESTART_JUMP_US
from helixtrack_ros.pipeline.realtime import gn_divisor
from helixtrack_ros.pipeline.records import RotorOutput
from helixtrack_ros.pipeline.recovery import RotorRecovery
from helixtrack_ros.pipeline.settle import hold_unsettled
from helixtrack_ros.pipeline.time_quantum import hold_coarse_times

#: The pipeline remembers this many detections (for the debug image).
MAX_DETECTIONS_KEPT = 64
_TRACKING_STATE = RotorState.TRACKING
#: a lost rotor shares another's re-detection when its centre is this many of its tip
#: radii inside that one's search region
SHARED_MARGIN = 0.5


class RotorBank:
    """Trackers, recoveries and worker threads of the configured (or detected) rotors."""

    def __init__(self, config: PipelineConfig, counters: dict[str, int],
                 image_size: Callable[[], tuple[int, int]]) -> None:
        self.config = config
        self.counters = counters
        self.image_size = image_size
        self.threads = RotorThreads()
        self._stack = TrackerStack()
        self._detect_pool: ThreadPoolExecutor | None = None
        #: the re-detections sent to the detector thread lately: (it, its region, the time
        #: of its last event), for other lost rotors to share (:meth:`shared_detection`)
        self._sent: list[tuple[Future, tuple[int, int, int, int], int]] = []
        #: every detection used (start-up and re-detection): (sensor time, rotor name, it)
        self.detections: list[tuple[int, str, DetectedRotor]] = []
        #: routed events per us of the TRACKING rotor with the fewest, in the last batch
        self.sparsest_rate: float | None = None
        self._last_batch_t_us = 0
        self._stride = 1                # the event stride the trackers' rates are in
        #: the batch being output (its kernel runs, it, the image size), and each rotor's
        #: TRACKING disc per packet of it (None: not TRACKING), made when first asked
        self._batch: tuple[list, Inflight, tuple[int, int]] | None = None
        self._batch_discs: list[list[tuple | None]] | None = None
        #: the sensor time's LEARN_EVERY_US step of the last offsets learnt (settle.py)
        self.learnt_tick = -1
        self.set_rotors(list(config.rotors))

    def set_rotors(self, inits: list[RotorInit]) -> None:
        """Track these rotors from now on (start-up detection)."""
        self.config = replace(self.config, rotors=inits)
        self.inits = list(inits)
        #: each rotor's initial disc (the drone's layout: identity tests, per packet)
        self.layout_discs = layout_discs(self.inits)
        self.trackers = [HelixTracker(r, self.config.tracker) for r in inits]
        self.recs = [RotorRecovery() for _ in inits]
        #: the layout's turn in the image, in the published RPM stds (layout_roll.py)
        self.roll = LayoutRoll()
        self.threads.resize(self.config.threads, len(inits))

    def set_params(self, params: TrackerParams) -> None:
        """New tracker parameters for every rotor (learnt state kept)."""
        self.config = replace(self.config, tracker=params)
        for tracker in self.trackers:
            tracker.params = params

    def set_gn_divisor(self, stride: int) -> None:
        """Every rotor's Gauss-Newton event target for event stride ``stride``
        (:func:`~helixtrack_ros.pipeline.realtime.gn_divisor`), and its usual event rate
        rescaled when the stride changed (a stride of 8 is not starvation)."""
        divisor = gn_divisor(stride)
        factor = self._stride / max(int(stride), 1)
        self._stride = max(int(stride), 1)
        for tracker in self.trackers:
            tracker.set_gn_divisor(divisor)
            if factor != 1.0:
                tracker.scale_event_rate(factor)

    @property
    def stride(self) -> int:
        """The event stride the trackers run at now."""
        return self._stride

    def restart(self) -> None:
        """Re-initialise every tracker from its current estimate (time restarted)."""
        for i in range(len(self.trackers)):
            self._restart_tracker(i)
        self._sent = []
        self.roll.reset()

    def _restart_tracker(self, i: int) -> None:
        """Re-initialise tracker i from its current estimate; its search ends."""
        rec = self.recs[i]
        rec.searching = False
        rec.buf = []
        rec.detecting = None
        rec.new_clock()
        tracker = self.trackers[i]
        st = tracker.state
        q = st.q
        init = replace(self.inits[i], center_px=(float(q[2]), float(q[3])),
                       radius_px=float(q[0]), psi_rad=float(q[1]),
                       perspective=(float(q[4]), float(q[5])),
                       rpm_shaft=max(float(st.rpm_shaft), 1.0), direction=int(st.direction))
        tracker.reset(init)

    def _restart_clocks_ahead(self, t_first_us: int) -> None:
        """Restart every tracker whose clock is further ahead of the stream than a camera
        restart: its events can never come again (damaged times once took a tracker to
        33.7 s of a 0.5 s stream, and it stayed ACQUIRING; bad-input review)."""
        for i, tracker in enumerate(self.trackers):
            if tracker.clock_us > t_first_us + RESTART_JUMP_US:
                self._restart_tracker(i)

    def skip_gap(self, gap_us: int) -> None:
        """Events were lost: every rotor skips ``gap_us`` (not read as starvation)."""
        for tracker in self.trackers:
            tracker.skip_gap(gap_us)

    def _searched(self, r: int) -> bool:
        return self.config.recovery and self.recs[r].searching

    def _deadline(self, r: int) -> int:
        """Reset deadline of rotor r for the kernel (-1: none)."""
        if not self.config.recovery:
            return -1
        return self.recs[r].deadline_us(self.config.recovery_window_us)

    def _deadlines(self) -> list[int | None]:
        """Per rotor: its reset deadline for the kernel (-1: none), None when searched for."""
        cfg = self.config
        if not cfg.recovery:
            return [-1] * len(self.trackers)
        window = cfg.recovery_window_us
        return [None if rec.searching else rec.deadline_us(window) for rec in self.recs]

    def start(self, pending: list[Pending], stride: int, buffer: EventBuffer,
              caller_joins: bool = False) -> Inflight:
        """Phase 1 of a batch: every rotor that is not searched for runs through it.

        Large batches run in the worker threads: ``caller_joins`` when the
        caller waits for the results right away, else the helpers start alone
        and the caller joins in :meth:`collect`.
        """
        inf = Inflight(pending, stride=int(stride))
        full = [pk for pk in pending if pk.t_last >= 0]
        if not full or not self.trackers:
            return inf
        self._restart_clocks_ahead(int(full[0].ev.t_us[0]))
        parts = [pk.ev for pk in full]
        inf.ev = parts[0] if len(parts) == 1 else buffer.joined(parts)
        if inf.ev is None:
            inf.ev = EventArrays.concatenate(parts)
        sizes = [pk.ev.t_us.shape[0] for pk in full]
        inf.ends = np.array(list(itertools.accumulate(sizes)), dtype=np.int64)
        inf.t_last = np.array([pk.t_last for pk in full], dtype=np.int64)
        inf.decimate()
        ev, ends = inf.tracked, inf.tracked_ends
        # the most events one packet gives a rotor (scratch size): ceil(size / k) at most
        longest = -(-max(sizes) // inf.stride)
        arrays = (np.ascontiguousarray(ev.t_us, dtype=np.int64),
                  np.ascontiguousarray(ev.x, dtype=np.uint16),
                  np.ascontiguousarray(ev.y, dtype=np.uint16),
                  np.ascontiguousarray(ev.p, dtype=np.uint8), ends, inf.t_last, longest, 1)
        deadlines = self._deadlines()
        inf.runs = [None] * len(deadlines)
        n_calls = len(deadlines) - deadlines.count(None)
        if not self.threads.parallel(n_calls, len(ev), caller_joins):
            # one kernel call for every rotor (a Python -> numba call costs about as much
            # as tracking a small packet)
            stacked = self._stack.run(self.trackers, deadlines, *arrays)
            if stacked is not None:
                inf.runs, inf.homographies = stacked
                inf.stacked_rows = self._stack.last_rows
                return inf
        calls = [(r, self.trackers[r].run_packets, (*arrays, d))
                 for r, d in enumerate(deadlines) if d is not None]
        jobs = self.threads.start(calls, len(ev), caller_joins)
        if jobs.helpers:
            inf.jobs = jobs
        else:
            for r, run in jobs.wait():
                inf.runs[r] = run
        return inf

    @staticmethod
    def collect(inf: Inflight) -> list[PacketRun | None]:
        """Phase 1 results of a batch, once every rotor's call is done (this thread helps)."""
        if inf.jobs is not None:
            jobs, inf.jobs = inf.jobs, None
            for r, run in jobs.wait():
                inf.runs[r] = run
        return inf.runs

    def finished_for_good(self, inf: Inflight) -> bool:
        """True when phase 1 finished a batch for good: every rotor ran through every
        packet and is TRACKING, none is recovering, none sits on another rotor's place.
        Its outputs then change nothing the next batch's kernels read, and can be built
        while they run.

        (The identity test of phase 2 declares a tracker on another rotor LOST: run
        while the next batch tracked it in a worker thread, the outcome depended on
        which came first, and offline results differed from run to run.)
        """
        n_pk = len(inf.t_last) if inf.t_last is not None else 0
        for run, rec in zip(inf.runs, self.recs):
            if (not isinstance(run, PacketRun) or run.done != n_pk
                    or int(run.levels[n_pk - 1]) != TRACKING
                    or rec.searching or rec.reset):
                return False
        if len(inf.runs) < 2:
            return True
        size = self.image_size()
        homs = inf.homographies
        discs = [tracking_discs(run, size, None if homs is None else homs[r])
                 for r, run in enumerate(inf.runs)]
        return not any_on_another_rotor(self, discs, [rec.good_q for rec in self.recs])

    def rows(self, inf: Inflight, stride: int) -> list[list[RotorOutput]]:
        """Phase 2 of a batch: per packet with events, the outputs of every rotor."""
        runs = self.collect(inf)
        t_last = inf.t_last
        n_pk = len(t_last)
        size = self.image_size()
        self._batch, self._batch_discs = (runs, inf, size), None      # (tracking_at)
        anchors = [rec.good_q for rec in self.recs]      # (note_good replaces, never edits)
        # every rotor's rows as Python lists in one conversion per array (one kernel ran them)
        times = t_last.tolist()
        stacked = inf.stacked_rows
        lists = ([None] * len(runs) if stacked is None else
                 [(v, hi, times) for v, hi in zip(stacked[0].tolist(), stacked[1].tolist())])
        try:
            per_rotor = [self._rotor_rows(r, run, inf, stride, size, rl)
                         for r, (run, rl) in enumerate(zip(runs, lists))]
        finally:
            self._batch = self._batch_discs = None
        if len(per_rotor) > 1:
            withhold_other_rotors(self, per_rotor, anchors)
            hold_unsettled(self, per_rotor)
        self.counters['outputs_coarse_time'] += hold_coarse_times(
            per_rotor, [pk.quantum_us for pk in inf.pending if pk.t_last >= 0], self.inits)
        self.roll.widen(per_rotor, float(size[0]))
        routed = ([outs[0].events for outs in per_rotor] if n_pk == 1 else
                  [sum([o.events for o in outs]) for outs in per_rotor])
        self.counters['events_routed'] += int(sum(routed))
        # the sparsest rotor still tracked: its events per us of the batch, before the stride
        t_end = int(t_last[-1])
        span_us = t_end - self._last_batch_t_us if self._last_batch_t_us else 0
        self._last_batch_t_us = t_end
        live = [n for n, outs in zip(routed, per_rotor)
                if n and outs[-1].state == _TRACKING_STATE]
        self.sparsest_rate = (min(live) * inf.stride / span_us
                              if live and 0 < span_us < 1_000_000 else None)
        if not per_rotor:
            return [[] for _ in range(n_pk)]
        if n_pk == 1:
            return [[outs[0] for outs in per_rotor]]
        return [list(row) for row in zip(*per_rotor)]

    def tracking_at(self, t_us: int, but: int,
                    k: int = -1) -> dict[int, tuple[float, float, float]]:
        """The discs (centre x, y, tip radius [px]) of the rotors other than ``but`` that
        are TRACKING at the batch's packet ``k`` (-1: the one ending at ``t_us``). A search
        step runs after every tracker ran the whole batch, and must see the others as they
        were at its packet: from the batch's rows (made once per batch, when first asked),
        else (no row of that packet) as the trackers are now."""
        batch = self._batch
        if batch is not None:
            runs, inf, size = batch
            if self._batch_discs is None:
                homs = inf.homographies
                self._batch_discs = [[] if run is None else tracking_discs(
                    run, size, None if homs is None else homs[o]) for o, run in enumerate(runs)]
            if not 0 <= k < len(inf.t_last) or int(inf.t_last[k]) != t_us:
                at = np.flatnonzero(inf.t_last == t_us)    # (times may repeat or go back)
                k = int(at[0]) if len(at) == 1 else -1
            if k >= 0:
                return {o: d[k] for o, d in enumerate(self._batch_discs)
                        if o != but and k < len(d) and d[k] is not None}
        out = {}
        for o, other in enumerate(self.trackers):
            if o != but and other.health == TRACKING:
                q = other.q
                out[o] = disc_from_core_q(q)
        return out

    def _rotor_rows(self, r: int, run: PacketRun | None, inf: Inflight, stride: int,
                    size: tuple[int, int], row_lists: tuple | None = None) -> list[RotorOutput]:
        """Rotor r's outputs of a batch: its phase-1 rows (``row_lists``: as lists already,
        see :func:`outputs_of`), then packet by packet."""
        t_last = inf.t_last
        outs: list[RotorOutput] = []
        if run is not None:
            homs = inf.homographies
            outs = outputs_of(self, r, run, inf, 0, stride, size,
                              None if homs is None else homs[r], row_lists)
            if run.done == len(t_last):
                return outs             # (the usual case: the kernel ran every packet)
        for k in range(len(outs), len(t_last)):
            if self._searched(r):
                # a lost rotor being searched for is not tracked: a search step only
                outs.append(searching_output(self, r, inf.packet(k), int(t_last[k]), k))
                continue
            tracked, e0 = inf.tracked_packet(k)
            one = self.trackers[r].process_packets(
                tracked, inf.tracked_ends[k:k + 1] - e0, t_last[k:k + 1], 1, self._deadline(r))
            outs.extend(outputs_of(self, r, one, inf, k, stride, size))
        return outs

    def detector(self) -> ThreadPoolExecutor:
        """The background thread of re-detections (live)."""
        if self._detect_pool is None:
            self._detect_pool = ThreadPoolExecutor(max_workers=1,
                                                   thread_name_prefix='helixtrack-detect')
        return self._detect_pool

    def detect_later(self, events: EventArrays,
                     region: tuple[int, int, int, int]) -> tuple[Future, int]:
        """A re-detection of ``region`` on ``events`` sent to the detector thread: (its
        future, the time of its last event)."""
        w, h = self.image_size()
        sent = self.detector().submit(detect_rotors, events, w, h, region=region)
        end_us = int(events.t_us[-1])
        self._sent.append((sent, region, end_us))
        return sent, end_us

    def shared_detection(self, centre: tuple[float, float], radius_px: float,
                         t_end_us: int) -> tuple[Future, int] | None:
        """A re-detection still running or sent lately (its events end within
        ``recovery_retry_us`` of ``t_end_us``) whose region holds ``centre``
        SHARED_MARGIN tip radii inside its edges: (its future, the time of its last
        event), or None.

        The search regions of a drone's lost rotors overlap: one detection there finds
        them all. With one detector thread, four lost rotors each sending their own came
        back 0.15-0.45 s stale (live, 346 x 260, egomotion 6), beyond the kept events.
        """
        oldest = t_end_us - self.config.recovery_retry_us
        # (one whose events end after t_end_us: sent at a later packet of the batch, whose
        # rotors step packet by packet one after another; a restarted clock clears them)
        self._sent = [s for s in self._sent if s[2] >= oldest or not s[0].done()]
        x, y = centre
        m = SHARED_MARGIN * radius_px
        for sent, (x0, y0, x1, y1), end_us in reversed(self._sent):
            if x0 + m <= x <= x1 - m and y0 + m <= y <= y1 - m:
                return sent, end_us
        return None

    def detector_busy(self) -> bool:
        """Whether a re-detection sent to the detector thread is not done yet."""
        return any(not sent.done() for sent, _, _ in self._sent)

    def note_detections(self, items: list[tuple[int, str, DetectedRotor]]) -> None:
        """Remember detections used (the last MAX_DETECTIONS_KEPT)."""
        self.detections.extend(items)
        del self.detections[:-MAX_DETECTIONS_KEPT]

    def close(self) -> None:
        """Stop the worker threads."""
        self.threads.close()
        if self._detect_pool is not None:
            self._detect_pool.shutdown(wait=True)
            self._detect_pool = None
        self._sent = []

    def statuses(self) -> list[tuple[RotorInit, HelixTracker, RotorRecovery]]:
        """(init, tracker, recovery) of every rotor, for diagnostics."""
        return list(zip(self.inits, self.trackers, self.recs))

