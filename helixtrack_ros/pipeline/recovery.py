# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""Recovery of a LOST rotor: search around its last good pose, re-detect, re-initialise.

Beyond the paper, whose tracker "does not perform automatic reinitialization
after failure" (Limitations). When a rotor is LOST its
:class:`RotorRecovery` buffers the events of a search region around the last
good pose (the r_out circle plus ``recovery_margin`` tip radii), runs
:func:`~helixtrack_ros.core.detection.detect_rotors` on it once the buffer
spans enough time (1.5 shaft turns, at least ``recovery_min_us``, at most
``recovery_window_us``) and every ``recovery_retry_us`` after that (twice as long after
each of the attempts beyond :data:`FREE_ATTEMPTS` that left it untracked, up to
:data:`MOST_DOUBLINGS` times), and
re-initialises the tracker from the detection that the drone's layout makes
this rotor, not another tracked one (:mod:`~helixtrack_ros.pipeline.layout_match`;
same name and blade count; the rotation direction it had). While it is searched
for, the rotor's tracker does not run.

A rotor lost because it starved (hidden, occluded, off the sensor) is first
*resumed*: once its search region, quiet while it was hidden, has a rotor's
event rate again, centred where it was, its tracker restarts at the last good
pose and rate, with no detection; if it is not TRACKING within
``RESUME_GRACE_US`` (or its events come back elsewhere) the search goes on by
re-detection.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from concurrent.futures import Future
from dataclasses import replace
import math
from typing import TYPE_CHECKING

import numpy as np

from helixtrack_ros.core.detection import DetectedRotor, detect_rotors
from helixtrack_ros.core.events import EventArrays
from helixtrack_ros.core.health import LOST, R_STARVED, TRACKING
from helixtrack_ros.core.homography import disc_from_core_q
from helixtrack_ros.core.params import RotorInit
from helixtrack_ros.core.routing import search_region_events
from helixtrack_ros.pipeline.layout_match import SIZE_RATIOS, layout_pick
from helixtrack_ros.pipeline.settle import anchor_offsets

if TYPE_CHECKING:  # pragma: no cover
    from helixtrack_ros.core.tracker import HelixTracker
    from helixtrack_ros.pipeline.config import PipelineConfig
    from helixtrack_ros.pipeline.rotors import RotorBank

#: re-detections of a rotor at the usual interval since it was last TRACKING (or its region
#: was last quiet); each later one waits twice as long as the one before, up to
#: 2 ** MOST_DOUBLINGS intervals: a rotor given the wrong blades or direction was re-detected
#: and lost again 23-35 times in 3 s, loading the node to 1.2-1.5 cores, and DDS dropped up
#: to 782 of 3,000 packets, taking the values of the rotors given right (red-team round 5)
FREE_ATTEMPTS = 10
MOST_DOUBLINGS = 4
#: A re-initialised rotor that is not TRACKING this long after the window is searched again.
RESET_GRACE_US = 100_000
#: A resumed rotor (restarted at its last good pose) that is not TRACKING this long is searched.
RESUME_GRACE_US = 60_000
#: A rotor is resumed only if its region's events are centred within this share of its radius.
RESUME_OFFSET = 0.2
#: a rotor's good centres are kept one per PLACES_EVERY_US over PLACES_MEMORY_US (sensor time)
PLACES_EVERY_US = 20_000
PLACES_MEMORY_US = 1_000_000
#: a rotor with no good centre for longer than this was not tracked meanwhile (an offline
#: batch notes one per 64 ms); its centres tell the camera's motion once it was tracked at
#: a stretch of PLACES_STRETCH_US
PLACES_GAP_US = 100_000
PLACES_STRETCH_US = 60_000
#: a background re-detection whose events ended longer ago than this (sensor time) is
#: brought to the present by replaying the region's kept events (:meth:`RotorRecovery._replay`)
STALE_DETECTION_US = 10_000
#: a stale detection's rotor is tracked through the kept events in packets of this span; a
#: step between kept events longer than REPLAY_GAP_US is a loss in transport
REPLAY_PACKET_US = 1_000
REPLAY_GAP_US = 1_000
#: at most this many detections of a stale one are brought to the present
REPLAY_MOST = 6


class RotorRecovery:
    """Recovery state and steps of one rotor (module docstring)."""

    def __init__(self) -> None:
        self.good_q: Sequence[float] | None = None   # last q_core / RPM / direction, TRACKING
        self.good_us = -1                       # its time (-1: never, or not known)
        self.places: deque[tuple[int, float, float]] = deque()   # (t_us, x, y), _note_place
        self.good_rpm = 0.0
        self.good_dir = 0
        self.searching = False                  # LOST: buffering events of the search region
        self.region: tuple[int, int, int, int] = (0, 0, 0, 0)
        self.region_size = (0, 0)      # the image size the region was clipped to
        self.buf: list[EventArrays] = []
        self.next_try_us = 0
        self.reset = False                      # re-initialised, not TRACKING yet
        self.reset_us = 0
        self.resumed = False                    # the reset was a resume (no detection)
        self.may_resume = False                 # lost by starvation: resume when events return
        self.last_centre = (0.0, 0.0)           # where the search is centred
        self.last_radius_px = 0.0               # and the tip radius it looks for
        self.offset_px = math.inf               # centroid of the region's events from there
        self.region_quiet = False               # the search region went quiet (hidden)
        self.recoveries = 0
        self.resumes = 0
        self.attempts = 0
        self.fails = 0                          # attempts since TRACKING or a quiet region
        self.detecting: Future | None = None    # a re-detection running in the background
        self.detecting_end_us = 0               # the time of the last event it detects on
        self.shared = False                     # it is another rotor's (bank.shared_detection)
        self.packet_k = -1                      # the batch's packet of the step running
        # re-initialised, not yet seen at its place among the other rotors (settle.py)
        self.settling = False
        self.settle_t0_us = -1                  # its first TRACKING output since (-1: none)
        self.offsets: dict[int, tuple[float, float, int]] = {}   # per other rotor (settle.py)

    def note_good(self, q_core: Sequence[float], rpm_shaft: float, direction: int,
                  t_us: int) -> None:
        """The rotor is TRACKING at ``t_us``: remember its pose for a later search, stop
        any search.

        ``q_core`` is kept as given (the caller's own list): this runs every packet.
        """
        places = self.places
        if not (places and 0 <= t_us - places[-1][0] < PLACES_EVERY_US):
            self._note_place(q_core, t_us)     # (one packet in PLACES_EVERY_US of them)
        self.good_q = q_core
        self.good_us = t_us
        self.good_rpm = rpm_shaft
        self.good_dir = direction
        self.fails = 0
        if self.searching or self.reset or self.resumed or self.buf or self.detecting is not None:
            self.forget()

    def _note_place(self, q_core: Sequence[float], t_us: int) -> None:
        """Keep the rotor's good centres of the last ``PLACES_MEMORY_US``, one per
        ``PLACES_EVERY_US`` (how far the camera moves the drone: :meth:`prior_reach_px`;
        :meth:`note_good` skips the call between, as this does)."""
        places = self.places
        if places and 0 <= t_us - places[-1][0] < PLACES_EVERY_US:
            return
        if places and t_us < places[-1][0]:
            places.clear()                      # time went back: a new stream
        places.append((t_us, float(q_core[2]), float(q_core[3])))
        while t_us - places[0][0] > PLACES_MEMORY_US:
            places.popleft()

    def excursion_px(self) -> float:
        """The extent [px] of the rotor's good centres kept (0 with fewer than two)."""
        if len(self.places) < 2:
            return 0.0
        xs = [p[1] for p in self.places]
        ys = [p[2] for p in self.places]
        return math.hypot(max(xs) - min(xs), max(ys) - min(ys))

    def prior_reach_px(self, bank: RotorBank, t_us: int) -> float:
        """How far [px] the rotor can be from its last good place now: as far as the camera
        moved the drone lately (:func:`_drone_moved_px`) plus a tip radius (inf when that
        pose is of no known time). A shaking camera moves the drone fast but not far:
        speed times time would say far too much."""
        if self.good_q is None or self.good_us < 0:
            return math.inf
        return _drone_moved_px(bank, self.good_us, t_us) + disc_from_core_q(self.good_q)[2]

    def longest_stretch_us(self) -> int:
        """The longest time the good centres kept cover without a gap longer than
        ``PLACES_GAP_US``: how long the rotor was seen tracked at a stretch lately."""
        best = 0
        start = prev = None
        for t, _, _ in self.places:
            if prev is None or t - prev > PLACES_GAP_US:
                start = t
            prev = t
            best = max(best, t - start)
        return best

    def revert_good(self, q_core: Sequence[float] | None, since_us: int) -> None:
        """The rotor's last good pose is an older one, ``q_core``, of no known time: its
        poses from ``since_us`` on were of another rotor (their centres are dropped)."""
        self.good_q = q_core
        self.good_us = -1
        while self.places and self.places[-1][0] >= since_us:
            self.places.pop()

    def new_clock(self) -> None:
        """Sensor time restarted: the times of its good poses and places mean nothing now."""
        self.good_us = -1
        self.places.clear()
        self.reset = self.resumed = self.settling = False

    def forget(self) -> None:
        """Stop searching (tracking again, or every rotor restarted)."""
        self.searching = False
        self.reset = False
        self.resumed = False
        self.buf = []
        self.detecting = None

    def deadline_us(self, window_us: int) -> int:
        """Sensor time by which a re-initialised rotor must track (-1: none)."""
        if not self.reset:
            return -1
        return self.reset_us + (RESUME_GRACE_US if self.resumed else window_us + RESET_GRACE_US)

    def step(self, bank: RotorBank, r: int, ev: EventArrays, t_last: int, k: int = -1) -> None:
        """Recovery step of rotor r after a packet of events ``ev`` ending at ``t_last``
        (the batch's packet ``k``; -1: not known)."""
        self.packet_k = k
        cfg = bank.config
        tracker = bank.trackers[r]
        # a rotor searched for is LOST whatever its tracker (not run meanwhile) last said:
        # a missed reset deadline leaves the tracker DEGRADED, and the search must go on
        health = LOST if self.searching else tracker.health
        if health == TRACKING:
            self.note_good(tracker.q, tracker.rpm_shaft, tracker.direction, t_last)
            return
        if self.reset and t_last > self.deadline_us(cfg.recovery_window_us):
            # re-initialised but never TRACKING (e.g. no phase lock): search again
            health = LOST
        if health != LOST:
            return
        if not self.searching:
            # search around the last good pose, with events from now on
            self.may_resume = (not (self.reset and self.resumed)
                               and tracker.health_cause == R_STARVED)
            self.searching = True
            self.region_quiet = False
            self.reset = False
            self.resumed = False
            self.buf = []
            last = self.last_good(bank.inits[r])
            self.last_centre = last.center_px
            self.last_radius_px = last.radius_px
            self._clip_region(bank, r)
            # (a rotor re-detected and lost again and again waits longer each time)
            self.next_try_us = t_last + max(_min_span_us(last, cfg), retry_us(cfg, self.fails)
                                            if self.fails > FREE_ATTEMPTS else 0)
            return
        if self.detecting is not None:
            # a re-detection running in the background: apply it once done (the region's
            # events are kept meanwhile, for a stale one)
            self._buffer(bank, r, ev, t_last)
            if self.detecting.done():
                found, self.detecting = self.detecting.result(), None
                last = self.last_good(bank.inits[r])
                if t_last - self.detecting_end_us > STALE_DETECTION_US:
                    self._replay(bank, r, found, last, t_last)
                else:
                    self._reinit(bank, r, self._pick(bank, r, found, last, self.region,
                                                     t_last), t_last)
            return
        if bank.image_size() != self.region_size:
            self._clip_region(bank, r)    # the sensor size changed during the search
        due = self._buffer(bank, r, ev, t_last)
        if self.may_resume and self.region_quiet and self.buf:
            # its events are back: where it was (resume), or elsewhere (re-detect)
            if self.offset_px <= RESUME_OFFSET * bank.inits[r].radius_px:
                self.resume(bank, r, t_last)
                return
            self.may_resume = False
        if not due:
            return
        if cfg.detect_in_background:
            self._detect_in_background(bank, t_last)
            return
        self._count_attempt(bank)
        w, h = bank.image_size()
        self.apply(bank, r, detect_rotors(self._recent(cfg, t_last), w, h, region=self.region),
                   t_last)

    def _detect_in_background(self, bank: RotorBank, t_last: int) -> None:
        """The re-detection on the detector thread: one of another lost rotor, running or
        sent lately, whose region holds this one's centre (every other attempt at most: its
        own region is searched at least every second time), else its own once the thread
        is free (due again at the next packet meanwhile: queued detections come back
        stale). Runs every packet while the thread is busy: nothing is built here."""
        shared = None if self.shared else bank.shared_detection(
            self.last_centre, self.last_radius_px, t_last)
        if shared is None and bank.detector_busy():
            self.next_try_us = t_last
            return
        self._count_attempt(bank)
        self.shared = shared is not None
        if shared is None:
            shared = bank.detect_later(self._recent(bank.config, t_last), self.region)
        self.detecting, self.detecting_end_us = shared

    def _count_attempt(self, bank: RotorBank) -> None:
        """One more re-detection attempt (its counters)."""
        self.attempts += 1
        self.fails += 1
        bank.counters['recovery_attempts'] += 1

    def _replay(self, bank: RotorBank, r: int, found: list[DetectedRotor], last: RotorInit,
                t_last: int) -> None:
        """Rotor r from a background detection done long after its events (the node
        behind real time): each detection is brought to ``t_last`` by rotor r's tracker,
        started where and when it was seen and run through the region's events kept
        since; the layout then reads those poses with the rotors TRACKING now, as it reads
        a fresh detection's.

        Behind real time a detection's events were tens to hundreds of ms old when it was
        done: under camera motion a tracker started there at ``t_last`` lost the rotor
        again at once (live review: 48-61 attempts, no recovery), and detecting again on
        the latest events took over half of the packets' thread. A detection whose
        tracker is LOST by ``t_last`` is dropped.
        """
        kept = _kept_since(self.buf, self.detecting_end_us)
        if kept is None:
            return
        tracker = bank.trackers[r]
        saved = (tracker.hi.copy(), tracker.hs.copy())    # LOST, as the search has it
        now: list[DetectedRotor] = []
        starts: list[RotorInit] = []            # the start of each of ``now``
        for det in found[:REPLAY_MOST]:
            # (each in its own direction: a neighbour turning the other way is brought to
            # the present too, for the layout to read)
            start = _init_of(bank, r, det, replace(last, direction=int(det.direction)))
            tracker.reset(start)
            _replay_events(tracker, kept, t_last)
            if tracker.health != LOST:
                x, y, rad = disc_from_core_q(tracker.q)
                now.append(replace(det, center_px=(x, y), radius_px=rad))
                starts.append(start)
        bank.counters['replays_dropped'] += min(len(found), REPLAY_MOST) - len(now)
        picked = self._pick(bank, r, now, last, self.region, t_last)
        if picked is None or (last.direction and int(picked[1].direction) != last.direction):
            tracker.hi[:], tracker.hs[:] = saved          # still searched for
            return
        init, det = picked
        if det is not now[-1]:                  # (the tracker holds the last one's replay)
            tracker.reset(starts[[id(d) for d in now].index(id(det))])
            _replay_events(tracker, kept, t_last)
        bank.note_detections([(t_last, init.name, det)])
        self._restart_state(t_last, resumed=False)
        anchor_offsets(bank, r, (det.center_px[0], det.center_px[1], det.radius_px),
                       bank.tracking_at(t_last, r, self.packet_k), t_last)
        self.recoveries += 1
        bank.counters['recoveries'] += 1

    def _widen(self, bank: RotorBank, box: tuple[int, int, int, int]) -> None:
        """Search ``box`` too (clipped to the image) from the next attempt on: the layout
        could not tell which rotor a detection was (:mod:`layout_match`)."""
        w, h = bank.image_size()
        x0, y0, x1, y1 = self.region
        grown = (max(0, min(x0, box[0])), max(0, min(y0, box[1])),
                 min(w - 1, max(x1, box[2])), min(h - 1, max(y1, box[3])))
        if grown != self.region:
            self.region = grown
            bank.counters['searches_widened'] += 1

    def _clip_region(self, bank: RotorBank, r: int) -> None:
        """The search region around the last good pose, in the image as it is now."""
        self.region_size = bank.image_size()
        self.region = _search_region(self.last_good(bank.inits[r]), self.region_size,
                                     bank.config.search_reach)

    def _buffer(self, bank: RotorBank, r: int, ev: EventArrays, t_last: int) -> bool:
        """Buffer the search region's events; True when a re-detection attempt is due."""
        cfg = bank.config
        region, n_region, mean_x, mean_y = search_region_events(
            ev.t_us, ev.x, ev.y, ev.p, self.region, _still_tracked(bank, r), bank.stride)
        # (n_region: the region's activity without the discs of the rotors still tracked)
        if self.may_resume and n_region:
            self.offset_px = math.hypot(mean_x - self.last_centre[0],
                                        mean_y - self.last_centre[1])
        span_ms = max((t_last - int(ev.t_us[0])) * 1e-3, 1.0)
        if n_region < 0.25 * bank.trackers[r].rate_ref * span_ms:
            # too few events for a rotor (it is hidden): nothing to detect yet; a
            # detection uses only events since the rotor can be there again
            self.buf = []
            self.region_quiet = True
            self.fails = 0
            self.next_try_us = max(self.next_try_us, t_last + _min_span_us(
                self.last_good(bank.inits[r]), cfg))
            return False
        if n_region:       # (a rotor with no usual rate yet passes the test above empty)
            self.buf.append(EventArrays(*region))
        # (while a background detection runs, its events' end is kept too: a replay starts
        # there; trimmed to the window, detections 100-220 ms stale under load found the
        # rotor and were dropped each time, a restarted motor never re-acquired; review)
        keep_from = t_last - cfg.recovery_window_us
        if self.detecting is not None:
            keep_from = min(keep_from, self.detecting_end_us - 1)
        while self.buf and int(self.buf[0].t_us[-1]) < keep_from:
            self.buf.pop(0)
        if t_last < self.next_try_us or not self.buf:
            return False
        self.next_try_us = t_last + retry_us(cfg, self.fails)
        return True

    def _recent(self, cfg: PipelineConfig, t_last: int) -> EventArrays:
        """The buffered events of the last ``recovery_window_us`` before ``t_last``, in time
        order."""
        events, k = _buffered_from(self.buf, t_last - cfg.recovery_window_us, 'left')
        return events.slice(k, len(events))

    def resume(self, bank: RotorBank, r: int, t_last: int) -> None:
        """Restart rotor r's tracker at its last good pose: its events are back."""
        self.may_resume = False
        self._restart(bank, r, self.last_good(bank.inits[r]), t_last, resumed=True)
        self.resumes += 1
        bank.counters['resumes'] += 1

    def apply(self, bank: RotorBank, r: int, found: list[DetectedRotor], t_last: int) -> None:
        """Re-initialise rotor r from the detection that is it again (if any)."""
        self._reinit(bank, r, self._pick(bank, r, found, self.last_good(bank.inits[r]),
                                         self.region, t_last), t_last)

    def _reinit(self, bank: RotorBank, r: int,
                picked: tuple[RotorInit, DetectedRotor] | None, t_last: int) -> None:
        """Re-initialise rotor r from a picked detection (None: nothing to do)."""
        if picked is None:
            return
        init, det = picked
        bank.note_detections([(t_last, init.name, det)])
        self._restart(bank, r, init, t_last, resumed=False)
        anchor_offsets(bank, r, (det.center_px[0], det.center_px[1], det.radius_px),
                       bank.tracking_at(t_last, r, self.packet_k), t_last)
        self.recoveries += 1
        bank.counters['recoveries'] += 1

    def _restart(self, bank: RotorBank, r: int, init: RotorInit, t_last: int,
                 resumed: bool) -> None:
        """Re-initialise rotor r's tracker from ``init``; the search ends."""
        bank.trackers[r].reset(init)
        self._restart_state(t_last, resumed)

    def _restart_state(self, t_last: int, resumed: bool) -> None:
        """The search ends: the tracker was re-initialised at ``t_last``."""
        self.searching = False
        self.reset = True
        self.resumed = resumed
        self.reset_us = t_last
        self.buf = []
        self.settling = True
        self.settle_t0_us = -1

    def last_good(self, init: RotorInit) -> RotorInit:
        """The rotor as it was when last TRACKING (``init`` if never)."""
        if self.good_q is None:
            return init
        q = self.good_q
        return replace(init, center_px=(float(q[2]), float(q[3])),
                       radius_px=math.exp(float(q[0])), psi_rad=float(q[1]),
                       perspective=(float(q[4]), float(q[5])),
                       rpm_shaft=max(self.good_rpm, 1.0), direction=self.good_dir)

    def _pick(self, bank: RotorBank, r: int, found: list[DetectedRotor],
              last: RotorInit, region: tuple[int, int, int, int],
              t_last: int) -> tuple[RotorInit, DetectedRotor] | None:
        """The detection that is rotor r again and its RotorInit (None if none fits): the
        one the drone's layout makes r (:mod:`~helixtrack_ros.pipeline.layout_match`),
        of r's size, not another tracked rotor (anywhere in the searched region: the layout,
        not the distance from ``last``, says which rotor a detection is), read with the
        rotors TRACKING at the step's packet."""
        reach = bank.config.search_reach

        def may_be_r(j: int) -> bool:
            return _of_size(found[j], last.radius_px) and not _taken(bank, r, found[j])

        pick = layout_pick(r, [(d.center_px[0], d.center_px[1], d.radius_px) for d in found],
                           bank.layout_discs,
                           region, bank.tracking_at(t_last, r, self.packet_k),
                           (last.center_px[0], last.center_px[1], last.radius_px), may_be_r,
                           reach, self.prior_reach_px(bank, t_last))
        if pick.widen_to is not None:
            self._widen(bank, pick.widen_to)
        if pick.index is None:
            return None
        return _init_of(bank, r, found[pick.index], last), found[pick.index]


def _replay_events(tracker: HelixTracker, kept: EventArrays, t_last: int) -> None:
    """Track ``kept`` (time-ordered region events) to ``t_last`` as 1 ms packets (the health
    checks run per packet); a step of over REPLAY_GAP_US between events was a loss in
    transport (dropped packets), skipped as the pipeline skips one."""
    t = kept.t_us
    cuts = np.flatnonzero(np.diff(t) > REPLAY_GAP_US) + 1
    starts = [0, *cuts.tolist()]
    stops = [*cuts.tolist(), len(t)]
    for a, b in zip(starts, stops):
        if a:
            tracker.skip_gap(int(t[a] - t[a - 1]))
        end_us = t_last if b == len(t) else int(t[b - 1])
        grid = np.arange(int(t[a]) + REPLAY_PACKET_US, end_us, REPLAY_PACKET_US, dtype=np.int64)
        ends = np.append(np.searchsorted(t[a:b], grid, side='right'), b - a).astype(np.int64)
        times = np.append(grid, end_us).astype(np.int64)
        tracker.process_packets(kept.slice(a, b), ends, times)


def _drone_moved_px(bank: RotorBank, t0_us: int, t1_us: int) -> float:
    """How far [px] the camera can have moved the drone from ``t0_us`` to ``t1_us``: the
    spread of the rotors' good centres kept, from a rotor seen tracked at a stretch of at
    least ``PLACES_STRETCH_US``, scaled up for the time not seen as a random walk would be
    (sqrt(span / stretch); inf: no such rotor, or a span beyond the memory). Rotors barely
    tracked say nothing of a drone that moves; a shaking camera moves it fast but not
    far."""
    span = t1_us - t0_us
    if not 0 <= span <= PLACES_MEMORY_US:
        return math.inf
    seen = [(rec.excursion_px(), rec.longest_stretch_us()) for rec in bank.recs]
    moved = [px * math.sqrt(max(1.0, span / us)) for px, us in seen if us >= PLACES_STRETCH_US]
    return max(moved) if moved else math.inf


def _init_of(bank: RotorBank, r: int, det: DetectedRotor, last: RotorInit) -> RotorInit:
    """Rotor r re-initialised from detection ``det`` (``last``: as it was last)."""
    blades = bank.inits[r].blades
    # the detector measures the blade-pass frequency; the blade count is configured
    rpm = (det.blade_pass_hz * 60.0 / blades if det.blade_pass_hz > 0
           else det.rpm_shaft * det.blades / blades)
    direction = last.direction if last.direction != 0 else int(det.direction)
    return replace(bank.inits[r], center_px=(float(det.center_px[0]), float(det.center_px[1])),
                   radius_px=float(det.radius_px), rpm_shaft=float(max(rpm, 1.0)),
                   direction=direction, psi_rad=float(det.psi_rad),
                   perspective=(float(det.perspective[0]), float(det.perspective[1])))


def _of_size(det: DetectedRotor, radius_px: float) -> bool:
    """A detection of a rotor of this tip radius (its own within SIZE_RATIOS of it)."""
    return SIZE_RATIOS[0] <= det.radius_px / max(radius_px, 1e-9) <= SIZE_RATIOS[1]


def _still_tracked(bank: RotorBank, r: int) -> list[tuple[float, float, float]]:
    """The discs of the rotors other than r not LOST, as their trackers are now (at the
    batch's end: a search step's packet may be earlier)."""
    return [disc_from_core_q(other.q) for o, other in enumerate(bank.trackers)
            if o != r and other.health != LOST]


def _taken(bank: RotorBank, r: int, det: DetectedRotor) -> bool:
    """Another rotor that is still tracked owns this detection."""
    return any(math.hypot(det.center_px[0] - x, det.center_px[1] - y) < 0.6 * rad
               for x, y, rad in _still_tracked(bank, r))


def retry_us(cfg: PipelineConfig, fails: int) -> int:
    """The wait before a rotor's next re-detection attempt [us of stream time], after
    ``fails`` attempts that left it untracked (the module docstring: ``recovery_retry_us``,
    doubled for each attempt beyond FREE_ATTEMPTS, at most MOST_DOUBLINGS times)."""
    return cfg.recovery_retry_us << min(max(fails - FREE_ATTEMPTS, 0), MOST_DOUBLINGS)


def _kept_since(buf: list[EventArrays], t0_us: int) -> EventArrays | None:
    """The kept region events ``buf`` after ``t0_us`` in time order; None when they do not
    reach back to it (a quiet region emptied the buffer meanwhile)."""
    if not buf:
        return None
    events, k = _buffered_from(buf, t0_us, 'right')
    if k == 0 or k == len(events):
        return None
    return events.slice(k, len(events))


def _buffered_from(buf: list[EventArrays], t0_us: int, side: str) -> tuple[EventArrays, int]:
    """The buffered events in time order (packets may overlap by microseconds, and
    detection and tracking need it), and the index of the first at ``t0_us`` (or the first
    after it, ``side`` 'right')."""
    events = EventArrays.concatenate(buf).time_sorted()
    return events, int(np.searchsorted(events.t_us, t0_us, side=side))


def _search_region(last: RotorInit, size: tuple[int, int],
                   reach: float) -> tuple[int, int, int, int]:
    """Image box around a pose: ``reach`` tip radii (``search_reach``) around it."""
    w, h = size
    half = reach * last.radius_px
    cx, cy = last.center_px
    return (int(max(0, math.floor(cx - half))), int(max(0, math.floor(cy - half))),
            int(min(w - 1, math.ceil(cx + half))), int(min(h - 1, math.ceil(cy + half))))


def _min_span_us(last: RotorInit, cfg) -> int:
    """Events a re-detection needs: 1.5 shaft turns, within the configured bounds."""
    turn_us = 60e6 / max(last.rpm_shaft, 1.0)
    return int(min(cfg.recovery_window_us, max(cfg.recovery_min_us, 1.5 * turn_us)))
