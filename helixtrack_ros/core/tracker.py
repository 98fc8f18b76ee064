# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""HelixTracker: one rotor's shaft RPM, blade phase and homography from events (Sec. 3).

The paper's two loops, a per-event phase EKF and a batched Gauss-Newton
pose, run in the numba kernels of :mod:`tracker_kernel` on state held in
small numpy arrays (:mod:`tracker_layout`): one kernel call per batch, so
results do not depend on how a stream is split into batches. This module is
the Python face: set-up, parameter changes, samples and state, health, and
packets routed from the whole camera (:mod:`routing`). Beyond the paper:
the fast translation step (:mod:`fast_step`) that keeps the pose on slow or
moving rotors, the one-blade variant and the health monitor
(:mod:`health`). Design notes and measurements: docs/DESIGN.md.
"""

from __future__ import annotations

import math
import time

import numpy as np

from helixtrack_ros.core.events import EventArrays
from helixtrack_ros.core.fast_step import _centroid_step, _fast_step
from helixtrack_ros.core.fastmath import shaft_rpm
from helixtrack_ros.core.gn_layout import (
    ACC_LEN,
    G_COFF,
    G_CON,
    G_FIXT,
    G_POLADAPT,
    G_POLH,
    _set_bands,
    pack_gn_params,
)
from helixtrack_ros.core.health import (
    DEGRADED,
    HI_CAUSE,
    HI_LEVEL,
    HI_LOSSES,
    HI_NOUT,
    HI_NTIP,
    HI_REASON,
    HI_T0,
    HS_CAUSE_REF,
    HS_CAUSE_VAL,
    HS_COS,
    HS_EPS,
    HS_EPS2,
    HS_GOOD_US,
    HS_LAG_EPS,
    HS_LAG_EPS2,
    HS_LAG_W,
    HS_RATE_REF,
    HS_SUPPORT_REF,
    HS_W,
    LOST,
    R_GAP,
    TRACKING,
    new_health_state,
    pack_health_params,
)
from helixtrack_ros.core.health_machine import _health_advance
from helixtrack_ros.core.health_text import health_values, reason_text
from helixtrack_ros.core.homography import _POSE_LEN, _pack_pose, homography
from helixtrack_ros.core.params import RotorInit, TrackerParams
from helixtrack_ros.core.routing import _BBOX_COS, _BBOX_SIN, _bbox, _process_packets
from helixtrack_ros.core.tracker_kernel import _emit, _process
from helixtrack_ros.core.tracker_layout import (
    FS_AC,
    FS_OM,
    FS_P11,
    FS_VX,
    IS_ACCEPT,
    IS_ACQ,
    IS_ACQ_N,
    IS_BACK,
    IS_DEFER,
    IS_FASTON,
    IS_GN_STRIDE,
    IS_IN,
    IS_POSE,
    IS_TMAX,
    IS_USED,
    IS_ZETA,
    MODE_EVERY,
    MODE_LAST,
    MODE_TIMES,
    OUT_LEN,
    PK_LEN,
    TP_GNTARGET,
    new_tracker_state,
    pack_tracker_params,
)
from helixtrack_ros.core.tracker_records import (
    PacketColumns,
    PacketRun,
    TrackerSamples,
    TrackerState,
)
from helixtrack_ros.core.tracker_stack import TrackerStack

# the public API, and the names that code outside core/ imports from this module (they
# moved to tracker_layout / fast_step in issue #12)
__all__ = ['HelixTracker', 'PacketColumns', 'PacketRun', 'TrackerSamples', 'TrackerState',
           'FS_AC', 'FS_VX', 'IS_FASTON', '_centroid_step', '_fast_step']

#: GN-vector slots that the kernels learn from the data (kept across a parameter change)
_GP_LEARNT = (G_CON, G_COFF, G_POLH)


#: the health sums a transport gap clears: the window's (coherence, phase residuals) and
#: the recent residuals' (the lag rule)
_GAP_CLEARED_SUMS = (HS_COS, HS_EPS, HS_EPS2, HS_W, HS_LAG_EPS, HS_LAG_EPS2, HS_LAG_W)


class HelixTracker:
    """Track one rotor's shaft RPM, blade phase and homography from events.

    Parameters
    ----------
    rotor : RotorInit
        Coarse initial state (centre, tip radius, RPM, blades, direction).
    params : TrackerParams
        Tracker parameters.

    Notes
    -----
    The per-event steps and their paper sections: :mod:`tracker_kernel`.
    All state lives in small numpy arrays; :meth:`process` makes one numba
    call per batch, so results do not depend on how a stream is split into
    batches.
    """

    def __init__(self, rotor: RotorInit,
                 params: TrackerParams = TrackerParams()) -> None:  # noqa: B008 (frozen)
        if not isinstance(rotor, RotorInit):
            raise ValueError('rotor must be a RotorInit')
        if not isinstance(params, TrackerParams):
            raise ValueError('params must be a TrackerParams')
        self._params = params
        self._gn_divisor = 1
        #: counts the times the state arrays were replaced (:class:`TrackerStack` restacks)
        self.layout_version = 0
        self.reset(rotor)

    # ------------------------------------------------------------------ set-up
    def reset(self, rotor: RotorInit) -> None:
        """Re-initialise in place from a rotor initialisation (time restarts)."""
        if not isinstance(rotor, RotorInit):
            raise ValueError('rotor must be a RotorInit')
        self.rotor = rotor
        p = self._params
        self.q = np.array([math.log(rotor.radius_px), rotor.psi_rad, rotor.center_px[0],
                           rotor.center_px[1], rotor.perspective[0], rotor.perspective[1]])
        self.pose = np.empty(_POSE_LEN)
        _pack_pose(self.q, self.pose)
        self.fs, self.ist = new_tracker_state(p, rotor)
        self.acc = np.zeros(ACC_LEN)
        self.acq_t = np.zeros(p.sign_events, dtype=np.int64)
        self.acq_a = np.zeros(p.sign_events)
        self.hs, self.hi = new_health_state()
        self._scratch: tuple[np.ndarray, ...] | None = None
        self.gp = None
        self._pack_params()

    def _pack_params(self) -> None:
        """Pack the parameters into the kernels' vectors (learnt GN offsets survive)."""
        p = self._params
        rotor = self.rotor
        B = rotor.blades
        self.tp = pack_tracker_params(p, rotor, self.gn_target_events)
        self.hp = pack_health_params(p, B, rotor.rpm_range)
        zeta = int(self.ist[IS_ZETA]) if self.ist[IS_ZETA] != 0 else 1
        learnt = getattr(self, 'gp', None)
        self.gp = pack_gn_params(p, B, zeta)
        self.gp[G_FIXT] = float(self.ist[IS_FASTON])
        if learnt is not None and p.pol_adapt and learnt[G_POLADAPT] != 0.0:
            # the polarity offsets learnt so far are part of the estimate, not of the
            # configuration: a parameter change must not reset them
            for k in _GP_LEARNT:
                self.gp[k] = learnt[k]
        _set_bands(self.gp, math.exp(self.q[0]))
        if self.acq_t.shape[0] != p.sign_events:
            # a new acquisition buffer size only matters while acquiring
            n = min(int(self.ist[IS_ACQ_N]), p.sign_events)
            t_new = np.zeros(p.sign_events, dtype=np.int64)
            a_new = np.zeros(p.sign_events)
            t_new[:n] = self.acq_t[:n]
            a_new[:n] = self.acq_a[:n]
            self.acq_t, self.acq_a = t_new, a_new
            self.ist[IS_ACQ_N] = n
        self.layout_version += 1

    @property
    def params(self) -> TrackerParams:
        """Tracker parameters; assigning new ones keeps the current estimate."""
        return self._params

    @params.setter
    def params(self, value: TrackerParams) -> None:
        if not isinstance(value, TrackerParams):
            raise ValueError('params must be a TrackerParams')
        self._params = value
        self._pack_params()

    def scale_event_rate(self, factor: float) -> None:
        """The events reaching the tracker per unit time changed by ``factor`` (a new
        real-time stride): the usual in-annulus rate, which starvation is judged
        against, follows at once instead of over ``health_ref_tau_us``."""
        self.hs[HS_RATE_REF] *= float(factor)
        self.hs[HS_SUPPORT_REF] *= float(factor)

    def set_gn_divisor(self, divisor: int) -> None:
        """Divide the Gauss-Newton event target by ``divisor`` (the real-time stride).

        Unlike assigning :attr:`params`, this touches nothing else of the
        tracker, so the stride policy may change it between any two packets;
        it survives :meth:`reset` and parameter changes.
        """
        if int(divisor) < 1:
            raise ValueError('divisor must be >= 1')
        self._gn_divisor = int(divisor)
        self.tp[TP_GNTARGET] = self.gn_target_events

    @property
    def gn_target_events(self) -> int:
        """The Gauss-Newton event target in force (configured / divisor; 0: every event)."""
        target = self._params.gn_target_events
        return max(1, target // self._gn_divisor) if target > 0 else 0

    # ------------------------------------------------------------------ processing
    def process(self, events: EventArrays, sample_t_us: np.ndarray | None = None,
                every_event: bool = False) -> TrackerSamples:
        """Feed a batch of events (any size) and return samples of the state.

        Parameters
        ----------
        events : EventArrays
            Events routed to this rotor, in time order (backward steps are
            tolerated: dt < 0 counts as 0).
        sample_t_us : numpy.ndarray, optional
            int64 sorted sample times; each gets the state after the last
            event at or before it, propagated to it.
        every_event : bool
            One sample per input event (state right after it).

        Returns
        -------
        TrackerSamples
            Without sample times and every_event: one sample at the batch's
            last event (none for an empty batch).
        """
        t_us = np.ascontiguousarray(events.t_us, dtype=np.int64)
        n = t_us.shape[0]
        xs = np.ascontiguousarray(events.x, dtype=np.uint16)
        ys = np.ascontiguousarray(events.y, dtype=np.uint16)
        ps = np.ascontiguousarray(events.p, dtype=np.uint8)
        if t_us.ndim != 1 or xs.shape != (n,) or ys.shape != (n,) or ps.shape != (n,):
            raise ValueError('events: t_us, x, y, p must be 1-D arrays of equal length')
        if every_event and sample_t_us is not None:
            raise ValueError('give either sample_t_us or every_event, not both')
        if every_event:
            mode = MODE_EVERY
            samp = np.empty(0, dtype=np.int64)
            n_out = n
        elif sample_t_us is not None:
            mode = MODE_TIMES
            samp = np.ascontiguousarray(sample_t_us, dtype=np.int64)
            if samp.ndim != 1:
                raise ValueError('sample_t_us must be 1-D')
            if samp.size > 1 and np.any(np.diff(samp) < 0):
                raise ValueError('sample_t_us must be sorted')
            n_out = samp.shape[0]
        else:
            mode = MODE_LAST
            samp = np.empty(0, dtype=np.int64)
            n_out = 1 if n > 0 else 0
        out_t = np.empty(n_out, dtype=np.int64)
        out_v = np.empty((n_out, OUT_LEN))
        k = _process(t_us, xs, ys, ps, self.tp, self.gp, self.fs, self.ist, self.q, self.pose,
                     self.acc, self.acq_t, self.acq_a, self.hp, self.hs, self.hi, mode, samp,
                     out_t, out_v)
        return TrackerSamples.from_rows(out_t[:k], out_v[:k])

    # ------------------------------------------------------------------ outputs
    @property
    def state(self) -> TrackerState:
        """The estimate at the latest input event."""
        t = int(self.ist[IS_TMAX])
        out_t = np.empty(1, dtype=np.int64)
        out_v = np.empty((1, OUT_LEN))
        _emit(0, max(t, 0), self.tp, self.fs, self.ist, self.q, out_t, out_v)
        v = TrackerSamples.from_rows(out_t, out_v)
        return TrackerState(
            t_us=t, rpm_shaft=float(v.rpm_shaft[0]), rpm_shaft_std=float(v.rpm_shaft_std[0]),
            phase_rad=float(v.phase_rad[0]), omega_rad_s=float(v.omega_rad_s[0]),
            homography=homography(self.q), q=v.q[0].copy(), direction=int(self.ist[IS_ZETA]),
            events_in=int(self.ist[IS_IN]), events_used=int(self.ist[IS_USED]),
            pose_updates=int(self.ist[IS_POSE]), health=self.health,
            health_reason=self.health_reason)

    def diagnostics(self) -> dict[str, int | float]:
        """Counters: accepted (in-annulus) events, backward times, deferred solves, ..."""
        return {'events_in': int(self.ist[IS_IN]), 'events_in_annulus': int(self.ist[IS_ACCEPT]),
                'events_used': int(self.ist[IS_USED]), 'pose_updates': int(self.ist[IS_POSE]),
                'time_backwards': int(self.ist[IS_BACK]), 'solves_deferred': int(
                    self.ist[IS_DEFER]), 'locked': int(self.ist[IS_ACQ] == 0),
                'gn_stride': int(self.ist[IS_GN_STRIDE])}

    @property
    def clock_us(self) -> int:
        """The tracker's time: its latest event's [us] (later events come after it)."""
        return int(self.ist[IS_TMAX])

    @property
    def rpm_shaft(self) -> float:
        """Shaft RPM of the EKF state (at its last event, no propagation; cheap)."""
        return float(shaft_rpm(self.fs[FS_OM], self.rotor.blades))

    @property
    def rate_ref(self) -> float:
        """Usual in-annulus event rate [events/ms] (health reference; 0 before lock)."""
        return float(self.hs[HS_RATE_REF])

    @property
    def direction(self) -> int:
        """Rotation direction +1 / -1 (0 while an unknown sign is acquired)."""
        return int(self.ist[IS_ZETA])

    # ------------------------------------------------------------------ health
    @property
    def health(self) -> int:
        """Health level: 0 TRACKING, 1 DEGRADED, 2 LOST (see :mod:`helixtrack_ros.core.health`)."""
        return int(self.hi[HI_LEVEL])

    @property
    def health_cause(self) -> int:
        """Reason code of a DEGRADED / LOST level (core.health R_*; R_OK when TRACKING)."""
        return int(self.hi[HI_CAUSE])

    @property
    def health_reason(self) -> str:
        """Why the rotor is not TRACKING ('tracking' when it is)."""
        return reason_text(self.hi, self.hs)

    def health_values(self) -> dict[str, str]:
        """Health metrics of the last window (strings, for diagnostics)."""
        return health_values(self.hi, self.hs)

    def lose(self, cause: int, value: float = 0.0) -> None:
        """Declare the track failed (LOST with ``cause``), from a check that sees more than
        this rotor (the pipeline's: two trackers on one rotor)."""
        if int(self.hi[HI_LEVEL]) != LOST:
            self.hi[HI_LOSSES] += 1
        self.hi[HI_LEVEL] = LOST
        self.hi[HI_CAUSE] = self.hi[HI_REASON] = cause
        self.hs[HS_CAUSE_VAL] = value
        self.hs[HS_CAUSE_REF] = 0.0

    def advance(self, t_us: int) -> None:
        """Declare that no event of this rotor up to ``t_us`` is still to come.

        Closes the health windows that end at or before ``t_us`` even when no
        event arrived (a starved rotor); later events must not be earlier.
        """
        t = int(t_us)
        if self.hi[HI_T0] < 0 or t <= int(self.ist[IS_TMAX]):
            return
        _health_advance(self.hp, self.hs, self.hi, self.q, bool(self.ist[IS_ACQ] == 0),
                        float(self.fs[FS_OM]), float(self.fs[FS_P11]), int(self.ist[IS_ACCEPT]),
                        t)

    def skip_gap(self, gap_us: int = 0) -> None:
        """Declare that events were lost in transport before the next ones (dropped packets).

        The health window in progress is discarded and the next event opens a
        new one, so the gap is not judged as starvation (no events because
        none arrived, not because the rotor is hidden). The estimate is
        predicted across the gap as usual, but a TRACKING rotor becomes
        DEGRADED until good windows confirm it: ``health_recover_us`` plus a
        quarter of the gap ``gap_us`` (the sensor time lost), since the longer
        the extrapolation (and, under camera motion, the pose's), the longer
        the estimate takes to settle (benchmarks/RESULTS.md, "Trust under
        load"). A loss of at most ``health_gap_ride_us`` leaves a TRACKING rotor
        TRACKING (as a quiet millisecond; re-validating after each cost most of the
        values of a stream with one packet in 20 lost; live review).
        """
        if self.hi[HI_T0] >= 0:
            self.hi[HI_T0] = -1
            self.hi[[HI_NTIP, HI_NOUT]] = 0
            self.hs[list(_GAP_CLEARED_SUMS)] = 0.0
        if self.hi[HI_LEVEL] == TRACKING and 0 < gap_us <= self._params.health_gap_ride_us:
            return
        if self.ist[IS_ACQ] == 0 and self.hi[HI_LEVEL] != LOST:
            # the state was extrapolated over the gap (after 0.1 s the RPM can be off by
            # several %): not measured until good windows confirm it again (also when it
            # was DEGRADED already: the good time before the gap no longer counts)
            if self.hi[HI_LEVEL] == TRACKING:
                self.hi[HI_LEVEL] = DEGRADED
                self.hi[HI_CAUSE] = R_GAP
                self.hi[HI_REASON] = R_GAP
            self.hs[HS_GOOD_US] = -0.25 * max(int(gap_us), 0)

    def process_packets(self, events: EventArrays, pkt_end: np.ndarray, pkt_t_last: np.ndarray,
                        stride: int = 1, reset_deadline_us: int = -1) -> PacketRun:
        """Route and track consecutive packets of decoded events in one call.

        Equivalent, packet by packet, to: take the events inside
        :meth:`bbox_px` (every ``stride``-th), :meth:`process` them with one
        sample at the packet's last event time, then :meth:`advance` to it.

        Parameters
        ----------
        events : EventArrays
            All decoded events of the packets (every event of the camera,
            not only this rotor's), in time order.
        pkt_end : numpy.ndarray
            int64 end offset of each packet in ``events`` (non-decreasing).
        pkt_t_last : numpy.ndarray
            int64 sample time of each packet (its last event) [us].
        stride : int
            Keep every stride-th event inside the box (real-time policy).
        reset_deadline_us : int
            >= 0: stop after a packet past this time while not TRACKING
            (a re-initialised rotor that never locked); -1: off.

        Returns
        -------
        PacketRun
            Rows of the packets done; fewer than given when the rotor
            became LOST (or missed the reset deadline) at the last row.
        """
        t_us = np.ascontiguousarray(events.t_us, dtype=np.int64)
        n = t_us.shape[0]
        xs = np.ascontiguousarray(events.x, dtype=np.uint16)
        ys = np.ascontiguousarray(events.y, dtype=np.uint16)
        ps = np.ascontiguousarray(events.p, dtype=np.uint8)
        ends = np.ascontiguousarray(pkt_end, dtype=np.int64)
        t_last = np.ascontiguousarray(pkt_t_last, dtype=np.int64)
        n_pk = ends.shape[0]
        if xs.shape != (n,) or ys.shape != (n,) or ps.shape != (n,):
            raise ValueError('events: t_us, x, y, p must be 1-D arrays of equal length')
        if t_last.shape != (n_pk,):
            raise ValueError('pkt_end and pkt_t_last must be 1-D arrays of equal length')
        if n_pk and (ends[0] < 0 or ends[-1] > n or np.any(np.diff(ends) < 0)):
            raise ValueError('pkt_end must be non-decreasing offsets into the events')
        if stride < 1:
            raise ValueError('stride must be >= 1')
        longest = int(np.max(np.diff(ends, prepend=0))) if n_pk else 0
        return self.run_packets(t_us, xs, ys, ps, ends, t_last, longest, int(stride),
                                 int(reset_deadline_us))

    def run_packets(self, t_us: np.ndarray, xs: np.ndarray, ys: np.ndarray, ps: np.ndarray,
                    ends: np.ndarray, t_last: np.ndarray, longest: int, stride: int,
                    reset_deadline_us: int) -> PacketRun:
        """:meth:`process_packets` on arrays the caller has checked already.

        The arrays must be contiguous, of the dtypes and shapes that
        :meth:`process_packets` checks (int64 times, uint16 x / y, uint8 p,
        int64 ``ends`` and ``t_last``); ``longest`` is at least the most
        events in one packet. For the pipeline, which holds such arrays: less
        time under the GIL per call. Unchecked arrays may crash the kernel.
        """
        n_pk = ends.shape[0]
        # + 1: the routing loop writes one index past the kept events
        longest += 1
        buf = self._scratch
        if buf is None or buf[0].shape[0] < longest:
            cap = max(longest, 4096)
            buf = (np.empty(cap, np.int64), np.empty(cap, np.int64), np.empty(cap, np.uint16),
                   np.empty(cap, np.uint16), np.empty(cap, np.uint8))
            self._scratch = buf
        out_v = np.empty((n_pk, PK_LEN))
        out_hi = np.empty((n_pk, self.hi.shape[0]), np.int64)
        out_hs = np.empty((n_pk, self.hs.shape[0]))
        done = _process_packets(t_us, xs, ys, ps, ends, t_last, stride,
                                reset_deadline_us, self.tp, self.gp, self.fs, self.ist,
                                self.q, self.pose, self.acc, self.acq_t, self.acq_a, self.hp,
                                self.hs, self.hi, float(self._params.r_out),
                                float(self._params.bbox_margin_px), _BBOX_COS, _BBOX_SIN,
                                buf[0], buf[1], buf[2], buf[3], buf[4], out_v, out_hi, out_hs)
        return PacketRun(int(done), out_v[:done], out_hi[:done], out_hs[:done])

    def bbox_px(self) -> tuple[int, int, int, int]:
        """Image region (x0, y0, x1, y1, inclusive) of the r_out annulus plus a margin."""
        return _bbox(self.q, self._params.r_out, self._params.bbox_margin_px)

    # ------------------------------------------------------------------ warm-up
    @classmethod
    def warmup(cls) -> float:
        """Compile every kernel on a tiny synthetic batch; return the seconds spent."""
        t0 = time.perf_counter()
        rng = np.random.default_rng(0)
        n = 4000
        t_us = np.sort(rng.integers(0, 20_000, n)).astype(np.int64)
        ang = 2.0 * t_us * 1e-6 * 2.0 * math.pi * 50.0 + rng.normal(0, 0.05, n)
        rad = rng.uniform(0.5, 1.0, n) * 20.0
        x = (50.0 + rad * np.cos(ang)).astype(np.uint16)
        y = (50.0 + rad * np.sin(ang)).astype(np.uint16)
        p = rng.integers(0, 2, n).astype(np.uint8)
        ev = EventArrays(t_us, x, y, p)
        prm = TrackerParams(gn_min_events=10, pose_timer_us=2000, sign_events=64)
        tr = cls(RotorInit('warmup', (50.0, 50.0), 20.0, 3000.0, 2), prm)
        tr.process(ev.slice(0, 2000), every_event=True)
        tr.process(ev.slice(2000, 3000), sample_t_us=np.array([15_000, 30_000]))
        tr.process(ev.slice(3000, n))
        tr.advance(int(t_us[-1]) + 50_000)
        _ = tr.state
        tr.bbox_px()
        ends = np.array([n // 2, n], np.int64)
        t_last = np.array([t_us[n // 2 - 1], t_us[-1]], np.int64)
        tr.process_packets(ev, ends, t_last)
        TrackerStack().run([tr, cls(tr.rotor, prm)], [-1, None], *ev, ends, t_last, n, 1)
        return time.perf_counter() - t0
