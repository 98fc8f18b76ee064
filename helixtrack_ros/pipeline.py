# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""Packet processing shared by the ROS node and the offline CLI.

One :class:`TrackingPipeline` turns raw ``EventPacket`` payloads into
per-rotor states: decode each packet once, map sensor time to ROS time, route
each event to the rotor(s) whose image region holds it, run one HelixTrack
tracker per rotor, and keep the counters that diagnostics report. It imports
no ROS module, so that ``helixtrack track`` and ``helixtrack_node`` give the
same numbers for the same packets.

Packets are tracked in batches (:meth:`TrackingPipeline.process_packets`):
each rotor runs through all packets of a batch in one numba call, the rotors
in parallel threads, and the results are still one per packet
(``docs/ARCHITECTURE.md``, "Data flow"). The node batches only packets that
have queued up; ``helixtrack track`` batches about 64 ms and decodes the next
batch while the rotors run (:meth:`TrackingPipeline.process_stream`).

Health and recovery (beyond the paper, whose tracker "does not perform
automatic reinitialization after failure", Limitations): each tracker
judges its own health (:mod:`helixtrack_ros.core.health`); each output
carries a ``RotorState`` and numbers only while TRACKING (NaN otherwise),
and its diagnostic status is OK / WARN / ERROR with the reason.
When a rotor is LOST the pipeline buffers the events of a search region
around its last good pose (the r_out circle plus ``recovery_margin`` tip
radii), runs :func:`~helixtrack_ros.core.detection.detect_rotors` on it once
the buffer spans enough time (1.5 shaft turns, at least
``recovery_min_us``, at most ``recovery_window_us``) and every
``recovery_retry_us`` after that, and re-initialises the tracker from the
detection nearest to the last good pose that is not another tracked rotor
(same name and blade count; the rotation direction it had). While it is
searched for, the rotor's tracker does not run.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field, replace
import itertools
import math
import os
import time
from typing import Any, NamedTuple

import numpy as np

from helixtrack_ros.codecs import UnsupportedEncodingError, make_decoder
from helixtrack_ros.codecs.time_sync import TimeMapper
from helixtrack_ros.core.detection import DetectedRotor, detect_rotors
from helixtrack_ros.core.events import EventArrays, EventBuffer
from helixtrack_ros.core.health import (
    HI_CAUSE,
    HI_LEVEL,
    LOST,
    R_STARVED,
    TRACKING,
    RotorState,
    reason_text,
    rotor_state,
)
from helixtrack_ros.core.homography import homography_from_paper_q
from helixtrack_ros.core.params import RotorInit, TrackerParams
from helixtrack_ros.core.tracker import (
    OUT_OMEGA,
    OUT_PHASE,
    OUT_Q,
    OUT_RPM,
    OUT_STD,
    PK_BOX,
    PK_N,
    PK_QCORE,
    PK_RPM_EKF,
    PK_ZETA,
    HelixTracker,
    PacketRun,
)
from helixtrack_ros.io.params_file import load_ros_params

#: Diagnostic levels (diagnostic_msgs/DiagnosticStatus).
OK, WARN, ERROR = 0, 1, 2

#: Start-up detection (auto_detect) uses this much sensor time of events.
DETECT_WINDOW_US = 100_000
#: The pipeline remembers this many detections (for the debug image).
MAX_DETECTIONS_KEPT = 64
#: Packets with more events than this run their rotors in parallel threads.
PARALLEL_MIN_EVENTS = 2000
#: Live: a queue of more than this many packets (smoothed) widens the event stride.
BACKLOG_BEHIND_PACKETS = 3.0
#: A backward jump of sensor time larger than this is a camera restart.
RESTART_JUMP_US = 60_000
#: A forward jump larger than this is a gap: trackers restart their phase lock.
GAP_US = 500_000
#: A packet whose sensor time leaps this much further than its header stamp is garbage
#: (refused however often it happens while the header stamps move).
CORRUPT_LEAP_US = 100_000
#: A packet with more than this fraction of unknown word codes is garbage.
CORRUPT_UNKNOWN_FRACTION = 0.1
#: After this many suspect packets in a row the time leap is taken as real.
CORRUPT_RUN_ACCEPT = 5


def _ordinal(k: int) -> str:
    """2 -> '2nd', 3 -> '3rd', 4 -> '4th', 11 -> '11th', 21 -> '21st'."""
    suffix = 'th' if 10 <= k % 100 <= 20 else {1: 'st', 2: 'nd', 3: 'rd'}.get(k % 10, 'th')
    return f'{k}{suffix}'


def _cores() -> int:
    """CPU cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):    # not Linux
        return os.cpu_count() or 1


@dataclass
class PipelineConfig:
    """Everything a :class:`TrackingPipeline` needs, from one parameter file.

    Attributes
    ----------
    rotors : list of RotorInit
        The rotors to track, in output order.
    tracker : TrackerParams
        Tracker parameters shared by all rotors.
    realtime_stride : bool
        Live mode: when processing falls behind the sensor, feed trackers
        only every k-th routed event (k shown in diagnostics) instead of
        letting a queue grow, and divide the Gauss-Newton event target by k.
        Off for offline processing.
    max_stride : int
        Largest k the real-time policy may choose.
    threads : int
        Threads that run rotors at once (the kernels release the GIL);
        1 = the calling thread only, 0 = one per CPU core (at most one per
        rotor, and 8).
    auto_detect : bool
        Detect rotors from the stream when ``rotors`` is empty (not yet
        available: reported in diagnostics).
    recovery : bool
        Re-detect and re-initialise a LOST rotor (module docstring).
    recovery_min_us, recovery_window_us : int
        Shortest / longest span of buffered events a re-detection uses [us].
    recovery_retry_us : int
        Stream time between re-detection attempts [us].
    recovery_margin : float
        The search region is the r_out circle of the last good pose grown by
        this many tip radii.
    detect_in_background : bool
        Live mode: run re-detections of LOST rotors (~0.1-0.2 s each) in a
        background thread and apply the result at the first packet after it
        is done, so that the other rotors' packets do not wait for it. The
        results then depend on timing; off (detect in line) offline. The
        start-up detection (auto_detect) always runs in line: nothing is
        tracked before it, and the packets queue meanwhile.
    """

    rotors: list[RotorInit] = field(default_factory=list)
    tracker: TrackerParams = field(default_factory=TrackerParams)
    realtime_stride: bool = False
    max_stride: int = 4
    threads: int = 0
    auto_detect: bool = False
    recovery: bool = True
    recovery_min_us: int = 25_000
    recovery_window_us: int = 100_000
    recovery_retry_us: int = 25_000
    recovery_margin: float = 1.0
    detect_in_background: bool = False

    @staticmethod
    def from_ros_params(params: dict[str, Any]) -> PipelineConfig:
        """Build a config from flat ROS parameters (``rotors.<name>.<field>``).

        Raises
        ------
        ValueError
            A rotor is incomplete or a value is out of range; the message
            names the parameter.
        """
        names = list(params.get('rotor_names', []) or [])
        rotors = []
        for name in names:
            prefix = f'rotors.{name}.'

            def get(key: str, default: Any = None, _p: str = prefix,
                    _name: str = name) -> Any:
                value = params.get(_p + key, default)
                if value is None:
                    raise ValueError(f'parameter {_p + key} is missing for rotor "{_name}"')
                return value

            center = get('center_px')
            if len(center) != 2:
                raise ValueError(f'{prefix}center_px must be [x, y]')
            persp = params.get(prefix + 'perspective', [0.0, 0.0])
            rpm_range = params.get(prefix + 'rpm_range', [0.0, 0.0])
            rotors.append(RotorInit(
                name=str(name),
                center_px=(float(center[0]), float(center[1])),
                radius_px=float(get('radius_px')),
                rpm_shaft=float(get('rpm')),
                blades=int(get('blades', 2)),
                direction=int(params.get(prefix + 'direction', 0)),
                psi_rad=float(params.get(prefix + 'psi_rad', 0.0)),
                perspective=(float(persp[0]), float(persp[1])),
                rpm_range=tuple(float(v) for v in rpm_range),
            ))
        tracker_values = {k[len('tracker.'):]: v for k, v in params.items()
                          if k.startswith('tracker.')}
        tracker = TrackerParams.from_dict(tracker_values)
        return PipelineConfig(
            rotors=rotors, tracker=tracker,
            realtime_stride=bool(params.get('realtime_stride', False)),
            max_stride=int(params.get('max_stride', 4)),
            threads=int(params.get('threads', 0)),
            auto_detect=bool(params.get('auto_detect', False)),
            recovery=bool(params.get('recovery', True)),
            recovery_min_us=int(params.get('recovery_min_us', 25_000)),
            recovery_window_us=int(params.get('recovery_window_us', 100_000)),
            recovery_retry_us=int(params.get('recovery_retry_us', 25_000)),
            recovery_margin=float(params.get('recovery_margin', 1.0)),
        )

    @staticmethod
    def from_yaml(path: str, node_name: str = 'helixtrack') -> PipelineConfig:
        """Read a ROS 2 parameter file (see :mod:`helixtrack_ros.io.params_file`)."""
        return PipelineConfig.from_ros_params(load_ros_params(path, node_name))

    @staticmethod
    def parameter_descriptions() -> dict[str, tuple[str, str, float | None, float | None]]:
        """Describe the runtime parameters: name -> (description, unit, min, max)."""
        out = {f'tracker.{k}': v for k, v in TrackerParams.describe().items()}
        out['realtime_stride'] = (
            'feed trackers every k-th event when processing falls behind', '', None, None)
        out['max_stride'] = ('largest event stride of the real-time policy', '', 1, 64)
        out['threads'] = ('threads that run rotors at once (0 = one per CPU core, at most '
                          'one per rotor)', '', 0, 16)
        out['recovery'] = ('re-detect and re-initialise a LOST rotor', '', None, None)
        out['recovery_min_us'] = ('shortest span of events a re-detection uses', 'us', 1000,
                                  1e7)
        out['recovery_window_us'] = ('longest span of events a re-detection uses', 'us', 1000,
                                     1e7)
        out['recovery_retry_us'] = ('stream time between re-detection attempts', 'us', 1000,
                                    1e7)
        out['recovery_margin'] = ('the search region grows the r_out circle by this',
                                  'tip radii', 0.0, 10.0)
        return out


_NAN_HOMOGRAPHY = np.full((3, 3), math.nan)
_NAN_HOMOGRAPHY.flags.writeable = False


@dataclass
class RotorOutput:
    """State of one rotor after a packet.

    The numbers (phase, omega, RPM and its std, homography) are NaN unless
    ``state`` is TRACKING: a value is published only while the tracker
    stands behind it (README "Trusting the numbers").
    """

    name: str
    t_us: int
    phase_rad: float
    omega_rad_s: float
    rpm_shaft: float
    rpm_shaft_std: float
    homography: np.ndarray
    events: int
    level: int = OK
    message: str = 'tracking'
    health: int = TRACKING
    state: RotorState = RotorState.TRACKING
    #: health reason code (core.health R_*) behind a state other than TRACKING
    cause: int = 0


def _withheld(name: str, t_us: int, events: int, level: int, message: str, health: int,
              state: RotorState, cause: int) -> RotorOutput:
    """The output of a rotor that is not TRACKING: every number NaN, the state and why."""
    return RotorOutput(name=name, t_us=t_us, phase_rad=math.nan, omega_rad_s=math.nan,
                       rpm_shaft=math.nan, rpm_shaft_std=math.nan, homography=_NAN_HOMOGRAPHY,
                       events=events, level=level, message=message, health=health,
                       state=state, cause=cause)


@dataclass
class PacketResult:
    """Outcome of one packet: per-rotor states or the reason it was refused."""

    stamp_ns: int = 0
    t_us: int = 0
    n_events: int = 0
    rotors: list[RotorOutput] = field(default_factory=list)
    error: str | None = None
    #: the packet's decoded events (e.g. for the node's debug image)
    events: EventArrays | None = None


class RawPacket(NamedTuple):
    """One ``event_camera_msgs/EventPacket`` as the pipeline needs it."""

    payload: bytes | np.ndarray
    encoding: str
    width: int
    height: int
    is_bigendian: bool
    stamp_ns: int
    seq: int
    time_base: int = 0


@dataclass
class _Pending:
    """A decoded packet waiting to be tracked with the rest of its batch."""

    results: list[PacketResult | None]   # the result list of its batch ...
    index: int                           # ... and its place there
    ev: EventArrays
    t_last: int                          # -1: an empty packet
    stamp_ns: int


class _Jobs:
    """The rotors' kernel calls of one batch, each run by whichever thread is free.

    Worker threads and the waiting caller take the calls one at a time from
    a shared counter: a batch costs one hand-off per helper thread, not one
    per rotor, and no thread waits for a slow rotor while another rotor is
    left undone.
    """

    def __init__(self, calls: list[tuple[int, Callable[..., Any], tuple]]) -> None:
        self.calls = calls
        self.results: list[Any] = [None] * len(calls)
        self._next = itertools.count()      # next() is atomic under the GIL
        self.helpers: list[Future] = []

    def drain(self) -> None:
        """Run calls until none is left."""
        calls = self.calls
        while True:
            k = next(self._next)
            if k >= len(calls):
                return
            _, fn, args = calls[k]
            self.results[k] = fn(*args)

    def wait(self) -> list[tuple[int, Any]]:
        """Help until every call is done; (rotor, result) per call (a call's error is raised)."""
        self.drain()
        for f in self.helpers:
            f.result()
        return [(r, res) for (r, _, _), res in zip(self.calls, self.results)]


@dataclass
class _Inflight:
    """A batch whose rotors are being tracked in the worker threads."""

    pending: list[_Pending]
    ev: EventArrays | None = None
    ends: np.ndarray | None = None
    t_last: np.ndarray | None = None
    stride: int = 1
    runs: list[Any] = field(default_factory=list)   # PacketRun or None per rotor
    jobs: _Jobs | None = None                       # the runs still in the threads


class StreamBatch(NamedTuple):
    """One batch of :meth:`TrackingPipeline.process_stream`."""

    packets: Sequence[RawPacket]
    results: list[PacketResult]
    #: statuses (as :meth:`TrackingPipeline.diagnostics`) right after the batch, when due
    diagnostics: list[dict[str, Any]] | None


@dataclass
class _Recovery:
    """Recovery state of one rotor (see the module docstring)."""

    good_q: np.ndarray | None = None   # last q_core / RPM / direction while TRACKING
    good_rpm: float = 0.0
    good_dir: int = 0
    searching: bool = False            # LOST: buffering events of the search region
    region: tuple[int, int, int, int] = (0, 0, 0, 0)
    buf: list = field(default_factory=list)
    next_try_us: int = 0
    reset: bool = False                # re-initialised, not TRACKING yet
    reset_us: int = 0
    recoveries: int = 0
    attempts: int = 0
    detecting: Future | None = None    # a re-detection running in the background


class TrackingPipeline:
    """Decode, route and track, one packet at a time.

    Parameters
    ----------
    config : PipelineConfig
        Rotors, tracker parameters and the real-time policy.
    """

    def __init__(self, config: PipelineConfig) -> None:
        self.config = config
        self._trackers = [HelixTracker(r, config.tracker) for r in config.rotors]
        self._inits = list(config.rotors)
        self._rec = [_Recovery() for _ in self._trackers]
        self._decoder = None
        self._decoder_key: tuple | None = None
        self._time = TimeMapper()
        self._pool: ThreadPoolExecutor | None = None
        self._pool_size = 0
        self._make_pool()
        self._detect_pool: ThreadPoolExecutor | None = None
        self.stride = 1
        self._load_ema = 0.0
        self._backlog_ema = 0.0
        self._backlog_known = False
        self._last_seq: int | None = None
        #: packets were dropped or refused since the last accepted one
        self._events_lost = False
        self._decoder_stale = False
        self._last_t_us: int | None = None
        self._last_outputs: list[RotorOutput] = []
        self.counters: dict[str, int] = {
            'packets': 0, 'packets_refused': 0, 'seq_gaps': 0, 'packets_dropped': 0,
            'events_in': 0, 'events_routed': 0, 'time_backwards': 0, 'time_gaps': 0,
            'camera_restarts': 0, 'decode_errors': 0, 'packets_corrupt': 0,
            'recoveries': 0, 'recovery_attempts': 0, 'detections': 0,
        }
        self._last_stamp_ns: int | None = None
        self._suspect_run = 0
        self._detect_buffer: list[EventArrays] = []
        self._pending: list[_Pending] = []
        # the decoded events of the batch being admitted, back to back
        self._batch_events = EventBuffer(0)
        self._buffers: list[EventBuffer] = []
        self._inflight: _Inflight | None = None
        self._first_t_us: int | None = None
        self._last_out_t_us = 0
        self._last_out_stamp_ns = 0
        #: rotors found by the start-up detection (auto_detect), for inspection
        self.detected: list[DetectedRotor] = []
        #: every detection used (start-up and re-detection): (sensor time, rotor name, it)
        self.detections: list[tuple[int, str, DetectedRotor]] = []
        self._rate_window: list[tuple[float, int]] = []
        self._wall_s = 0.0
        self._sensor_us = 0

    # ------------------------------------------------------------------ info
    @property
    def rotor_names(self) -> list[str]:
        """Names of the tracked rotors, in output order."""
        return [r.name for r in self._inits]

    @staticmethod
    def warmup() -> float:
        """Compile every numba kernel the pipeline uses; return seconds taken."""
        t0 = time.perf_counter()
        HelixTracker.warmup()
        dec = make_decoder('evt3', 1280, 720)
        dec.decode(np.zeros(2, np.uint8))
        return time.perf_counter() - t0

    def _make_pool(self) -> None:
        """Worker threads for the rotors.

        ``threads`` threads run rotors at once (0: one per core, at most one
        per rotor and 8), the calling thread among them when it waits for
        the batch (the node). Offline the calling thread meanwhile reads,
        decodes and writes (:meth:`process_stream`); with ``threads`` 0 one
        worker per rotor then starts (the operating system shares the cores
        among them), and the caller joins when it waits.

        On this project's 2-vCPU machine one hand-off per batch instead of
        one per rotor took a 1 ms packet of 14,000 events from 1.0 to
        0.73 ms (4 rotors; 0.98 ms on one thread): a hand-off to a sleeping
        thread costs 0.1-0.25 ms of CPU there. Offline, one worker per rotor
        was 4-6 % faster than one per core.
        """
        n_rot = len(self._trackers)
        threads = self.config.threads
        self._workers = max(1, min(threads if threads > 0 else _cores(), n_rot, 8))
        size = min(n_rot, 8) if threads == 0 else min(threads, 8)
        if self._pool is None and self._workers > 1:
            self._pool = ThreadPoolExecutor(max_workers=size,
                                            thread_name_prefix='helixtrack-rotors')
            self._pool_size = size

    def close(self) -> None:
        """Stop the worker threads."""
        if self._pool is not None:
            self._pool.shutdown(wait=True)
            self._pool = None
        if self._detect_pool is not None:
            self._detect_pool.shutdown(wait=True)
            self._detect_pool = None

    # ------------------------------------------------------------------ params
    def update_tracker_params(self, changes: dict[str, Any]) -> None:
        """Apply new tracker parameters to every rotor.

        Raises
        ------
        ValueError
            A name is unknown or a value out of range (nothing is changed).
        """
        merged = self.config.tracker.to_dict()
        merged.update(changes)
        params = TrackerParams.from_dict(merged)
        self.config = replace(self.config, tracker=params)
        self._apply_tracker_params()

    def _apply_tracker_params(self) -> None:
        for tracker in self._trackers:
            tracker.params = self.config.tracker

    def _apply_gn_target(self) -> None:
        """Divide every rotor's Gauss-Newton event target by the stride (a stride saves
        the accumulation's share too); nothing else of the trackers changes."""
        for tracker in self._trackers:
            tracker.set_gn_divisor(self.stride)

    # ------------------------------------------------------------------ packets
    def _get_decoder(self, encoding: str, width: int, height: int):
        key = (encoding, width, height)
        if key != self._decoder_key:
            self._decoder = make_decoder(encoding, width, height)
            self._decoder_key = key
        return self._decoder

    def _restart_trackers(self) -> None:
        """Re-initialise every tracker from its current estimate (time restarted)."""
        for rec in self._rec:
            rec.searching = False
            rec.buf = []
            rec.detecting = None
        for i, tracker in enumerate(self._trackers):
            st = tracker.state
            q = st.q
            init = replace(self._inits[i], center_px=(float(q[2]), float(q[3])),
                           radius_px=float(q[0]), psi_rad=float(q[1]),
                           perspective=(float(q[4]), float(q[5])),
                           rpm_shaft=max(float(st.rpm_shaft), 1.0),
                           direction=int(st.direction))
            tracker.reset(init)

    def process_packet(self, payload: bytes | np.ndarray, encoding: str, width: int,
                       height: int, is_bigendian: bool, stamp_ns: int, seq: int,
                       time_base: int = 0) -> PacketResult:
        """Process one ``EventPacket``.

        Returns
        -------
        PacketResult
            Per-rotor states at the sensor time of the packet's last event,
            or ``error`` set when the packet was refused (the pipeline state
            is unchanged then).
        """
        return self.process_packets([RawPacket(payload, encoding, width, height, is_bigendian,
                                               stamp_ns, seq, time_base)])[0]

    def process_packets(self, packets: Sequence[RawPacket]) -> list[PacketResult]:
        """Process consecutive ``EventPacket`` s; one result per packet, in order.

        The same results as :meth:`process_packet` on each packet in turn,
        except that a rotor's recovery (when one is LOST) sees the other
        rotors as they are at the end of the batch. Each packet is decoded
        and checked on its own; each rotor then runs through all of them in
        one numba call (:meth:`HelixTracker.process_packets`), the rotors in
        parallel threads, with no per-packet synchronisation.
        """
        wall0 = time.perf_counter()
        t_before = self._last_t_us
        results = self._admit_all(packets)
        self._flush()
        self._account_batch(time.perf_counter() - wall0, t_before)
        return results

    def process_stream(self, batches: Iterable[Sequence[RawPacket]],
                       diagnostics_period_us: int = 0) -> Iterator[StreamBatch]:
        """Process a stream of packet batches, decoding one while the last is tracked.

        Gives for each batch the same results as :meth:`process_packets`
        (offline use: while the rotors of batch k run in the worker threads,
        the caller's iterator reads batch k + 1 and it is decoded, and the
        caller handles the results of batch k - 1).

        Parameters
        ----------
        batches : iterable of sequences of RawPacket
            Consecutive batches of one stream.
        diagnostics_period_us : int
            > 0: attach a diagnostics snapshot to the first batch and then
            to a batch whenever this much sensor time has passed.
        """
        prev: tuple[Sequence[RawPacket], list[PacketResult | None]] | None = None
        last_diag_us: int | None = None
        wall0 = time.perf_counter()
        for packets in batches:
            t_before = self._last_t_us
            results = self._admit_all(packets)
            inflight, self._inflight = self._inflight, None
            if inflight is not None and inflight.ev is not None:
                self._collect(inflight)
            due = prev is not None and diagnostics_period_us > 0 and (
                last_diag_us is None or self._last_t_us is None
                or self._last_t_us - last_diag_us >= diagnostics_period_us)
            pending, self._pending = self._pending, []
            if (inflight is not None and inflight.ev is not None and not due and pending
                    and self._all_tracking(inflight)):
                # the next batch's rotors start before this one's outputs are built
                self._inflight = self._start(pending)
                self._finish(inflight)
                pending = []
            elif inflight is not None:
                self._finish(inflight)
            diag = None
            if due and self._last_out_t_us:
                diag = self.diagnostics()
                last_diag_us = self._last_out_t_us
            if pending:
                self._inflight = self._start(pending)
            now = time.perf_counter()
            self._account_batch(now - wall0, t_before)
            wall0 = now
            if prev is not None:
                yield StreamBatch(prev[0], prev[1], diag)
            prev = (packets, results)
        self._flush()
        if prev is not None:
            diag = self.diagnostics() if diagnostics_period_us > 0 else None
            yield StreamBatch(prev[0], prev[1], diag)

    def _admit_all(self, packets: Sequence[RawPacket]) -> list[PacketResult | None]:
        results: list[PacketResult | None] = [None] * len(packets)
        # room for 2 events per 16-bit word (EVT3 streams carry fewer; more, and the
        # packets that do not fit get arrays of their own)
        self._batch_events = self._free_buffer(sum(len(pkt.payload) for pkt in packets))
        for i, pkt in enumerate(packets):
            res = self._admit(results, i, *pkt)
            if res is not None:
                results[i] = res
        return results

    def _free_buffer(self, capacity: int) -> EventBuffer:
        """A batch buffer no result or batch refers to any more, else a new one.

        Reusing the memory matters: fresh memory costs a page fault per 4 KiB
        on first touch (about as much as the decoding itself).
        """
        free = [b for b in self._buffers if not b.in_use()]
        fits = [b for b in free if b.capacity >= capacity]
        if fits:
            buf = fits[0]
            buf.reset()
            # spare ones beyond two are let go (memory)
            spare = [b for b in free if b is not buf][:2]
            self._buffers = [b for b in self._buffers if b.in_use()] + spare + [buf]
            return buf
        # with headroom: the next batches are about as large; free ones too small go
        buf = EventBuffer(capacity + capacity // 4)
        self._buffers = [b for b in self._buffers if b not in free] + [buf]
        return buf

    def _account_batch(self, wall_s: float, t_before: int | None) -> None:
        if self._last_t_us is None:
            return
        span_us = self._last_t_us - (t_before if t_before is not None else self._first_t_us)
        self._account_load(wall_s, max(span_us, 1))

    def _admit(self, results: list[PacketResult | None], index: int,
               payload: bytes | np.ndarray, encoding: str, width: int, height: int,
               is_bigendian: bool, stamp_ns: int, seq: int,
               time_base: int = 0) -> PacketResult | None:
        """Decode and check one packet; queue it for tracking (None) or refuse it."""
        self.counters['packets'] += 1
        if self._last_seq is not None and seq != self._last_seq + 1:
            self.counters['seq_gaps'] += 1
            if seq > self._last_seq:
                self.counters['packets_dropped'] += int(seq - self._last_seq - 1)
                self._events_lost = self._decoder_stale = True
        self._last_seq = int(seq)
        try:
            decoder = self._get_decoder(encoding, int(width), int(height))
        except UnsupportedEncodingError as exc:
            self.counters['packets_refused'] += 1
            return PacketResult(error=str(exc))
        except ValueError as exc:
            self.counters['packets_refused'] += 1
            return PacketResult(error=f'bad packet: {exc}')
        if self._decoder_stale:
            # the stream state of the decoder is stale after lost packets
            decoder.resync()
            self._decoder_stale = False
        before = decoder.counters
        snapshot = decoder.snapshot()
        mark = self._batch_events.n
        try:
            decoded = decoder.decode(payload, is_bigendian=bool(is_bigendian),
                                     time_base=int(time_base), out=self._batch_events)
        except ValueError as exc:
            self.counters['packets_refused'] += 1
            return PacketResult(error=f'undecodable payload: {exc}')
        after = decoder.counters
        self.counters['decode_errors'] += self._decoder_errors(after) - self._decoder_errors(
            before)
        ev = decoded.events
        n = len(ev)
        reason, final = self._corrupt_reason(ev, before, after, int(stamp_ns))
        if reason is not None and (final or self._suspect_run < CORRUPT_RUN_ACCEPT):
            # roll the stream state back so that the garbage does not shift later times
            decoder.restore(snapshot)
            self._batch_events.truncate(mark)
            self.counters['packets_corrupt'] += 1
            self._suspect_run += 1
            self._events_lost = self._decoder_stale = True
            return PacketResult(error=f'corrupt payload dropped (seq {seq}): {reason}')
        if reason is not None:
            # the leap persists over several packets: it is real (camera restart or a
            # clock jump), so start over from here
            self._flush()
            self.counters['camera_restarts'] += 1
            self._time.reset()
            self._last_t_us = None
            self._restart_trackers()
        self._suspect_run = 0
        self.counters['events_in'] += n
        if n == 0:
            # the rotors' states of the packet before (filled in when the batch is tracked)
            self._pending.append(_Pending(results, index, ev, -1, int(stamp_ns)))
            return None
        t_first = int(ev.t_us[0])
        t_last = int(ev.t_us[-1])
        if self._last_t_us is not None:
            if t_first < self._last_t_us - RESTART_JUMP_US:
                # camera restart: sensor time starts again; keep the rotor estimates
                self._flush()
                self.counters['camera_restarts'] += 1
                self._time.reset()
                self._restart_trackers()
            elif t_first < self._last_t_us:
                self.counters['time_backwards'] += 1
            elif t_first > self._last_t_us + GAP_US:
                self._flush()
                self.counters['time_gaps'] += 1
                self._restart_trackers()
        if self._events_lost:
            self._skip_gap(t_first - self._last_t_us if self._last_t_us is not None else 0)
        self._time.update(int(stamp_ns), t_first)
        # the header stamp of the packet whose events ended at _last_t_us (the leap check
        # compares the two over the same packets, however many empty ones came between)
        self._last_stamp_ns = int(stamp_ns)
        self._last_t_us = t_last
        if self._first_t_us is None:
            self._first_t_us = t_first
        if not self._trackers and self.config.auto_detect:
            self._flush()
            self._auto_detect(ev)
        self._pending.append(_Pending(results, index, ev, t_last,
                                      self._time.to_ros_ns(t_last)))
        return None

    def _skip_gap(self, gap_us: int) -> None:
        """Events were lost before this packet (dropped or refused packets): track what
        came before, then tell every rotor, so that the gap is not read as starvation."""
        self._events_lost = False
        self._flush()
        for tracker in self._trackers:
            tracker.skip_gap(gap_us)

    def _auto_detect(self, ev: EventArrays) -> None:
        """Collect the first ``detect_window_us`` of events, then find the rotors.

        Runs once, on start-up, when no rotor is configured and ``auto_detect``
        is set; the rotors are named ``rotor_0``, ``rotor_1``, ... in image
        order (top to bottom, left to right). Retried on the next window when
        nothing is found.
        """
        # a copy: ev is a view into its batch's (much larger) buffer
        self._detect_buffer.append(EventArrays(*(a.copy() for a in ev)))
        t0 = int(self._detect_buffer[0].t_us[0])
        if int(ev.t_us[-1]) - t0 < DETECT_WINDOW_US:
            return
        events = EventArrays.concatenate(self._detect_buffer)
        self._detect_buffer = []
        w, h = self._image_size()
        self.counters['detections'] += 1
        # in line even live: nothing is tracked before it, and packets queue meanwhile
        found, t_found = detect_rotors(events, w, h), int(ev.t_us[-1])
        self.detected = found
        if not found:
            return
        inits = []
        for i, d in enumerate(found):
            r = d.to_params_dict(f'rotor_{i}')
            inits.append(RotorInit(
                name=r['name'], center_px=(float(r['center_px'][0]), float(r['center_px'][1])),
                radius_px=float(r['radius_px']), rpm_shaft=float(r['rpm']),
                blades=int(r['blades']), direction=int(r['direction']),
                psi_rad=float(r['psi_rad']),
                perspective=(float(r['perspective'][0]), float(r['perspective'][1]))))
        self._note_detections([(t_found, init.name, d) for init, d in zip(inits, found)])
        self.config = replace(self.config, rotors=inits)
        self._inits = list(inits)
        self._trackers = [HelixTracker(r, self.config.tracker) for r in inits]
        self._apply_gn_target()
        self._rec = [_Recovery() for _ in self._trackers]
        self._make_pool()

    def process_events(self, events: EventArrays) -> list[RotorOutput]:
        """Track already decoded, time-sorted sensor events (simulation, evaluation).

        The same per-rotor path as :meth:`process_packet` (auto-detection,
        routing, tracking, health, recovery) without decoding and time
        mapping; returns the rotor states at the last event (the previous
        ones for an empty batch).
        """
        n = len(events)
        self.counters['events_in'] += n
        if n == 0:
            return self._last_outputs
        wall0 = time.perf_counter()
        t_last = int(events.t_us[-1])
        span_us = t_last - (self._last_t_us if self._last_t_us is not None
                            else int(events.t_us[0]))
        self._last_t_us = t_last
        if not self._trackers and self.config.auto_detect:
            self._auto_detect(events)
        self._pending.append(_Pending([None], 0, events, t_last, 0))
        self._flush()
        self._account_load(time.perf_counter() - wall0, max(span_us, 1))
        return self._last_outputs

    @staticmethod
    def _decoder_errors(c: dict[str, int]) -> int:
        return int(sum(c.get(k, 0) for k in
                       ('skipped_unknown', 'out_of_bounds', 'odd_bytes', 'before_time_high')))

    def _corrupt_reason(self, ev: EventArrays, before: dict[str, int], after: dict[str, int],
                        stamp_ns: int) -> tuple[str | None, bool]:
        """Say why a decoded packet looks like garbage (None when it looks sane), and
        whether that is final (never to be taken as a restart).

        Two signs: many words of codes no sensor sends (real streams have at
        most a little 0x9 padding), or sensor time leaping more than
        CORRUPT_LEAP_US further ahead than the header stamps moved (random
        TIME_HIGH words). A sensor clock never leaps forward by itself (a
        restarted camera starts again near zero), so while the header stamps
        move such a leap is refused every time: no output can carry a time
        beyond the accepted stream.
        """
        words = after.get('words', 0) - before.get('words', 0)
        unknown = after.get('skipped_unknown', 0) - before.get('skipped_unknown', 0)
        if words >= 16 and unknown > CORRUPT_UNKNOWN_FRACTION * words:
            return f'{unknown} of {words} words have unknown codes', True
        if len(ev) and self._last_t_us is not None and self._last_stamp_ns is not None:
            leap_us = int(ev.t_us[-1]) - self._last_t_us
            host_us = (stamp_ns - self._last_stamp_ns) // 1000
            if leap_us > max(CORRUPT_LEAP_US, host_us + CORRUPT_LEAP_US):
                return (f'sensor time leapt {leap_us / 1e6:.3f} s while the header stamp '
                        f'moved {host_us / 1e6:.3f} s'), host_us > 0
        return None, False

    def _flush(self) -> None:
        """Finish the batch in flight, then track the queued packets."""
        self._finish_inflight()
        pending, self._pending = self._pending, []
        if pending:
            self._finish(self._start(pending, caller_joins=True))

    def _finish_inflight(self) -> None:
        if self._inflight is not None:
            inflight, self._inflight = self._inflight, None
            self._finish(inflight)

    def _start(self, pending: list[_Pending], caller_joins: bool = False) -> _Inflight:
        """Phase 1 of a batch: every rotor that is not searching runs through it.

        Each rotor is one kernel call. Large batches run them in the worker
        threads (:class:`_Jobs`): ``caller_joins`` when the caller waits for
        the results right away (it then takes calls too, and one helper
        fewer is woken), else the helpers start alone and the caller joins
        when it waits (:meth:`_collect`).
        """
        inf = _Inflight(pending, stride=int(self.stride))
        full = [pk for pk in pending if pk.t_last >= 0]
        if not full or not self._trackers:
            return inf
        parts = [pk.ev for pk in full]
        inf.ev = parts[0] if len(parts) == 1 else self._batch_events.joined(parts)
        if inf.ev is None:
            inf.ev = EventArrays.concatenate(parts)
        sizes = [len(pk.ev) for pk in full]
        inf.ends = np.cumsum(sizes, dtype=np.int64)
        inf.t_last = np.array([pk.t_last for pk in full], dtype=np.int64)
        ev = inf.ev
        arrays = (np.ascontiguousarray(ev.t_us, dtype=np.int64),
                  np.ascontiguousarray(ev.x, dtype=np.uint16),
                  np.ascontiguousarray(ev.y, dtype=np.uint16),
                  np.ascontiguousarray(ev.p, dtype=np.uint8), inf.ends, inf.t_last, max(sizes),
                  inf.stride)
        calls = []
        for r, tracker in enumerate(self._trackers):
            inf.runs.append(None)
            if not (self.config.recovery and self._rec[r].searching):
                calls.append((r, tracker._run_packets, (*arrays, self._deadline(r))))
        jobs = _Jobs(calls)
        helpers = (min(self._workers, len(calls)) - 1 if caller_joins
                   else min(self._pool_size, len(calls)))
        if self._pool is not None and len(ev) > PARALLEL_MIN_EVENTS and helpers > 0:
            jobs.helpers = [self._pool.submit(jobs.drain) for _ in range(helpers)]
            inf.jobs = jobs
        else:
            for r, run in jobs.wait():
                inf.runs[r] = run
        return inf

    def _deadline(self, r: int) -> int:
        """Reset deadline of rotor r for the kernel (-1: none; see _recover_one)."""
        rec = self._rec[r]
        if self.config.recovery and rec.reset:
            return rec.reset_us + self.config.recovery_window_us + 100_000
        return -1

    def _collect(self, inf: _Inflight) -> list[PacketRun | None]:
        """Phase 1 results of a batch, once every rotor's call is done (this thread helps)."""
        if inf.jobs is not None:
            jobs, inf.jobs = inf.jobs, None
            for r, run in jobs.wait():
                inf.runs[r] = run
        return inf.runs

    def _all_tracking(self, inf: _Inflight) -> bool:
        """True when phase 1 finished a batch for good: every rotor ran through every
        packet and is TRACKING, none is recovering. Its outputs then change nothing
        the next batch's kernels read, and can be built while they run."""
        n_pk = len(inf.t_last) if inf.t_last is not None else 0
        for run, rec in zip(inf.runs, self._rec):
            if (not isinstance(run, PacketRun) or run.done != n_pk
                    or int(run.health_int[n_pk - 1, HI_LEVEL]) != TRACKING
                    or rec.searching or rec.reset):
                return False
        return True

    def _finish(self, inf: _Inflight) -> None:
        """Phase 2 of a batch, then its results.

        The rotors that stopped early (LOST, or a missed reset deadline) and
        the searching ones run packet by packet from there, with the
        recovery step after each packet.
        """
        rows: list[list[RotorOutput]] = []
        if inf.ev is not None:
            rows = self._phase2(inf, self._collect(inf))
        k = 0
        for pk in inf.pending:
            if pk.t_last < 0:
                # an empty packet: the rotors' states of the packet before, with the time
                # and stamp of that state (nothing new was measured: no fresh stamp)
                pk.results[pk.index] = PacketResult(
                    stamp_ns=self._last_out_stamp_ns, t_us=self._last_out_t_us, n_events=0,
                    rotors=self._last_outputs)
                continue
            outputs = rows[k] if rows else []
            k += 1
            self._last_outputs = outputs
            self._last_out_t_us = pk.t_last
            self._last_out_stamp_ns = pk.stamp_ns
            pk.results[pk.index] = PacketResult(
                stamp_ns=pk.stamp_ns, t_us=pk.t_last, n_events=len(pk.ev), rotors=outputs,
                events=pk.ev)

    def _phase2(self, inf: _Inflight, runs: list[PacketRun | None]) -> list[list[RotorOutput]]:
        """Per packet, per rotor outputs of a batch whose phase-1 runs are done."""
        ev, ends, t_last = inf.ev, inf.ends, inf.t_last
        n_pk = len(t_last)
        n_rot = len(self._trackers)

        def packet(k: int) -> EventArrays:
            return ev.slice(int(ends[k - 1]) if k else 0, int(ends[k]))

        per_rotor: list[list[RotorOutput]] = []
        for r in range(n_rot):
            outs: list[RotorOutput] = []
            if runs[r] is not None:
                last = runs[r].done - 1
                outs = self._outputs_of(r, runs[r], t_last, (packet(last), int(t_last[last])))
            for k in range(len(outs), n_pk):
                # phase 2: packet by packet, with recovery
                if self.config.recovery and self._rec[r].searching:
                    # a lost rotor being searched for is not tracked: a search step only
                    outs.append(self._searching_output(r, packet(k), int(t_last[k])))
                    continue
                e0 = int(ends[k - 1]) if k else 0
                one = self._trackers[r].process_packets(
                    packet(k), ends[k:k + 1] - e0, t_last[k:k + 1], inf.stride,
                    self._deadline(r))
                outs.extend(self._outputs_of(r, one, t_last[k:k + 1],
                                             (packet(k), int(t_last[k]))))
            per_rotor.append(outs)
        self.counters['events_routed'] += int(sum(o.events for outs in per_rotor for o in outs))
        return [[per_rotor[r][k] for r in range(n_rot)] for k in range(n_pk)]

    def _searching_output(self, r: int, ev: EventArrays, t_last: int) -> RotorOutput:
        """Output of a LOST rotor during its search after a packet: NaN, and a search step.

        Its tracker does not run: its estimate is not trusted, and running it
        would cost time that the live node does not have.
        """
        self._recover_one(r, ev, t_last)
        tracker = self._trackers[r]
        cause = int(tracker.hi[HI_CAUSE])
        state = RotorState.STARVED if cause == R_STARVED else RotorState.LOST
        text = f'{tracker.health_reason}; re-detecting'
        if self._rec[r].reset:
            text, state = 'recovering (re-detected)', RotorState.ACQUIRING
        return _withheld(self._inits[r].name, t_last, 0, ERROR, text, tracker.health, state,
                         cause)

    def _outputs_of(self, r: int, run: PacketRun, t_last: np.ndarray,
                    last_packet: tuple[EventArrays, int]) -> list[RotorOutput]:
        """RotorOutputs of a kernel run, with the recovery step of each packet.

        A TRACKING row records the last good pose (for a later search); the
        last row, when not TRACKING, runs :meth:`_recover_one` on
        ``last_packet`` (its events and sample time; earlier rows
        cannot need it: the kernel stops at a LOST rotor) before its status
        is read, as the packet-by-packet order has it.
        """
        rec = self._rec[r]
        name = self._inits[r].name
        recovery = self.config.recovery
        rows = run.values[:run.done].tolist()           # Python floats: cheap to index
        levels = run.health_int[:run.done, HI_LEVEL].tolist()
        outs = []
        for k in range(run.done):
            row = rows[k]
            health = levels[k]
            if recovery and health == TRACKING:
                # the last good pose, for a later search
                if rec.good_q is None:
                    rec.good_q = np.empty(6)
                rec.good_q[:] = row[PK_QCORE:PK_QCORE + 6]
                rec.good_rpm = row[PK_RPM_EKF]
                rec.good_dir = int(row[PK_ZETA])
                rec.searching = False
                rec.reset = False
                rec.buf = []
                rec.detecting = None
            elif recovery and k == run.done - 1:
                self._recover_one(r, *last_packet)
            # (the health reason is text only a rotor not TRACKING needs)
            cause = int(run.health_int[k, HI_CAUSE])
            level, message, state = self._rotor_status(
                row[OUT_Q + 2], row[OUT_Q + 3], row[OUT_RPM], health, cause, int(row[PK_N]),
                '' if health == TRACKING else reason_text(run.health_int[k],
                                                          run.health_float[k]),
                row[PK_BOX:PK_BOX + 4], rec)
            if state != RotorState.TRACKING:
                outs.append(_withheld(name, int(t_last[k]), int(row[PK_N]), level, message,
                                      health, state, cause))
                continue
            hom = homography_from_paper_q(*row[OUT_Q:OUT_Q + 6])
            outs.append(RotorOutput(
                name=name, t_us=int(t_last[k]), phase_rad=row[OUT_PHASE],
                omega_rad_s=row[OUT_OMEGA], rpm_shaft=row[OUT_RPM],
                rpm_shaft_std=row[OUT_STD], homography=hom, events=int(row[PK_N]),
                level=level, message=message, health=health))
        return outs

    def _image_size(self) -> tuple[int, int]:
        return (self._decoder_key[1], self._decoder_key[2]) if self._decoder_key else (1280, 720)

    def _rotor_status(self, cx: float, cy: float, rpm: float, health: int, cause: int,
                      events: int, reason: str, box: Sequence[float],
                      rec: _Recovery | None = None) -> tuple[int, str, RotorState]:
        """Diagnostic level, message and output state: geometry checks, then health."""
        x0, y0, x1, y1 = (int(v) for v in box)
        w, h = self._image_size()
        inside = 0 <= cx < w and 0 <= cy < h
        state = rotor_state(health, cause, inside, events)
        if not inside:
            return ERROR, 'rotor centre left the image', state
        if not math.isfinite(rpm):
            return ERROR, 'state is not finite', RotorState.LOST
        if x1 < 0 or y1 < 0 or x0 >= w or y0 >= h:
            return ERROR, 'rotor region outside the image', RotorState.OUTSIDE
        if health == LOST:
            extra = '; re-detecting' if rec is not None and rec.searching else ''
            return ERROR, reason + extra, state
        if health != TRACKING:
            if rec is not None and rec.reset:
                return WARN, f'recovering (re-detected): {reason}', state
            return WARN, reason, state
        if self.stride > 1:
            return WARN, f'degraded: every {_ordinal(self.stride)} event (real-time policy)', state
        return OK, 'tracking', state

    # ------------------------------------------------------------------ recovery
    def _recover_one(self, r: int, ev: EventArrays, t_last: int) -> None:
        """Recovery step of rotor r after a packet (module docstring).

        Records the last good pose while TRACKING; on LOST buffers the
        events of the search region, re-detects and re-initialises.
        """
        cfg = self.config
        tracker = self._trackers[r]
        rec = self._rec[r]
        health = tracker.health
        if health == TRACKING:
            if rec.good_q is None:
                rec.good_q = np.empty(6)
            rec.good_q[:] = tracker.q
            rec.good_rpm = tracker.rpm_shaft
            rec.good_dir = tracker.direction
            rec.searching = False
            rec.reset = False
            rec.buf = []
            rec.detecting = None
            return
        if rec.reset and t_last - rec.reset_us > cfg.recovery_window_us + 100_000:
            # re-initialised but never TRACKING (e.g. no phase lock): search again
            health = LOST
        if health != LOST:
            return
        if not rec.searching:
            # search around the last good pose, with events from now on
            rec.searching = True
            rec.reset = False
            rec.buf = []
            last = self._last_good(r)
            rec.region = self._search_region(last)
            rec.next_try_us = t_last + self._min_span_us(last)
            return
        if rec.detecting is not None:
            # a re-detection running in the background: apply it once done
            if not rec.detecting.done():
                return
            found = rec.detecting.result()
            rec.detecting = None
            self._apply_redetection(r, found, t_last)
            return
        x0, y0, x1, y1 = rec.region
        m = (ev.x >= x0) & (ev.x <= x1) & (ev.y >= y0) & (ev.y <= y1)
        # activity of the region without the discs of the rotors still tracked
        own = m.copy()
        for o, other in enumerate(self._trackers):
            if o != r and other.health != LOST:
                q = other.q
                rad = 1.1 * math.exp(q[0])
                own &= (ev.x - q[2]) ** 2 + (ev.y - q[3]) ** 2 > rad * rad
        n_region = int(np.count_nonzero(own))
        span_ms = max((t_last - int(ev.t_us[0])) * 1e-3, 1.0)
        if n_region < 0.25 * tracker.rate_ref * span_ms:
            # too few events for a rotor (it is hidden): nothing to detect yet; a
            # detection uses only events since the rotor can be there again
            rec.buf = []
            rec.next_try_us = max(rec.next_try_us,
                                  t_last + self._min_span_us(self._last_good(r)))
            return
        rec.buf.append(EventArrays(ev.t_us[m], ev.x[m], ev.y[m], ev.p[m]))
        while rec.buf and int(rec.buf[0].t_us[-1]) < t_last - cfg.recovery_window_us:
            rec.buf.pop(0)
        if t_last < rec.next_try_us or not rec.buf:
            return
        rec.next_try_us = t_last + cfg.recovery_retry_us
        events = EventArrays.concatenate(rec.buf)
        k = int(np.searchsorted(events.t_us, t_last - cfg.recovery_window_us))
        events = events.slice(k, len(events))
        rec.attempts += 1
        self.counters['recovery_attempts'] += 1
        w, h = self._image_size()
        if cfg.detect_in_background:
            rec.detecting = self._detector().submit(detect_rotors, events, w, h,
                                                    region=rec.region)
            return
        self._apply_redetection(r, detect_rotors(events, w, h, region=rec.region), t_last)

    def _apply_redetection(self, r: int, found: list[DetectedRotor], t_last: int) -> None:
        """Re-initialise rotor r from the detection that is it again (if any)."""
        rec = self._rec[r]
        tracker = self._trackers[r]
        picked = self._pick(r, found, self._last_good(r))
        if picked is None:
            return
        init, det = picked
        self._note_detections([(t_last, init.name, det)])
        tracker.reset(init)
        rec.searching = False
        rec.reset = True
        rec.reset_us = t_last
        rec.buf = []
        rec.recoveries += 1
        self.counters['recoveries'] += 1

    def _last_good(self, r: int) -> RotorInit:
        """Rotor r as it was when last TRACKING (its initialisation if never)."""
        rec = self._rec[r]
        if rec.good_q is None:
            return self._inits[r]
        q = rec.good_q
        return replace(self._inits[r], center_px=(float(q[2]), float(q[3])),
                       radius_px=math.exp(float(q[0])), psi_rad=float(q[1]),
                       perspective=(float(q[4]), float(q[5])),
                       rpm_shaft=max(rec.good_rpm, 1.0), direction=rec.good_dir)

    def _search_region(self, last: RotorInit) -> tuple[int, int, int, int]:
        """Image box around a pose: the r_out circle plus recovery_margin tip radii."""
        w, h = self._image_size()
        half = (self.config.tracker.r_out + self.config.recovery_margin) * last.radius_px
        cx, cy = last.center_px
        return (int(max(0, math.floor(cx - half))), int(max(0, math.floor(cy - half))),
                int(min(w - 1, math.ceil(cx + half))), int(min(h - 1, math.ceil(cy + half))))

    def _min_span_us(self, last: RotorInit) -> int:
        """Events a re-detection needs: 1.5 shaft turns, within the configured bounds."""
        turn_us = 60e6 / max(last.rpm_shaft, 1.0)
        return int(min(self.config.recovery_window_us,
                       max(self.config.recovery_min_us, 1.5 * turn_us)))

    def _pick(self, r: int, found: list[DetectedRotor],
              last: RotorInit) -> tuple[RotorInit, DetectedRotor] | None:
        """The detection that is rotor r again and its RotorInit (None if none fits)."""
        best = None
        best_d = math.inf
        reach = self.config.tracker.r_out + self.config.recovery_margin
        for det in found:
            if not 0.6 <= det.radius_px / max(last.radius_px, 1e-9) <= 1.6:
                continue
            # another rotor that is still tracked owns this detection
            taken = False
            for o, other in enumerate(self._trackers):
                if o == r or other.health == LOST:
                    continue
                q = other.q
                if math.hypot(det.center_px[0] - q[2], det.center_px[1] - q[3]) \
                        < 0.6 * math.exp(q[0]):
                    taken = True
                    break
            if taken:
                continue
            d = math.hypot(det.center_px[0] - last.center_px[0],
                           det.center_px[1] - last.center_px[1]) / last.radius_px
            if d < best_d and d <= reach:
                best, best_d = det, d
        if best is None:
            return None
        blades = self._inits[r].blades
        # the detector measures the blade-pass frequency; the blade count is configured
        rpm = (best.blade_pass_hz * 60.0 / blades if best.blade_pass_hz > 0
               else best.rpm_shaft * best.blades / blades)
        direction = last.direction if last.direction != 0 else int(best.direction)
        init = replace(self._inits[r],
                       center_px=(float(best.center_px[0]), float(best.center_px[1])),
                       radius_px=float(best.radius_px), rpm_shaft=float(max(rpm, 1.0)),
                       direction=direction, psi_rad=float(best.psi_rad),
                       perspective=(float(best.perspective[0]), float(best.perspective[1])))
        return init, best

    def _detector(self) -> ThreadPoolExecutor:
        if self._detect_pool is None:
            self._detect_pool = ThreadPoolExecutor(max_workers=1,
                                                   thread_name_prefix='helixtrack-detect')
        return self._detect_pool

    def _note_detections(self, items: list[tuple[int, str, DetectedRotor]]) -> None:
        self.detections.extend(items)
        del self.detections[:-MAX_DETECTIONS_KEPT]

    def recent_detections(self, span_us: int) -> list[tuple[str, DetectedRotor]]:
        """(rotor name, detection) of the detections of the last ``span_us`` of sensor time."""
        now = self._last_t_us
        if now is None:
            return []
        return [(name, d) for t, name, d in self.detections if 0 <= now - t <= span_us]

    def note_backlog(self, waiting: int) -> None:
        """Live use: how many packets waited in the queue behind the ones now processed.

        The node calls this before each batch; it is the real-time policy's
        sign of falling behind. Without it (a caller that does not know its
        queue) the policy judges from the processing load alone, which also
        reads a replay slower than real time as behind.
        """
        self._backlog_ema = 0.7 * self._backlog_ema + 0.3 * max(int(waiting), 0)
        self._backlog_known = True

    def _account_load(self, wall_s: float, span_us: int) -> None:
        self._wall_s += wall_s
        self._sensor_us += span_us
        load = wall_s / (span_us * 1e-6)
        self._load_ema = 0.9 * self._load_ema + 0.1 * load
        if not self.config.realtime_stride:
            return
        # real-time policy: widen the stride when packets queue up (or, without a
        # queue to look at, when processing lags the sensor); narrow it again when
        # the queue is empty and the load leaves room
        if self._backlog_known:
            behind = self._backlog_ema > BACKLOG_BEHIND_PACKETS
            room = self._backlog_ema < 0.5 and self._load_ema < 0.5
        else:
            behind = self._load_ema > 0.9
            room = self._load_ema < 0.4
        if behind and self.stride < self.config.max_stride:
            self.stride += 1
            self._load_ema = 0.5
            self._backlog_ema = 0.0
            self._apply_gn_target()
        elif room and self.stride > 1:
            self.stride -= 1
            self._load_ema = 0.6
            self._apply_gn_target()

    # ------------------------------------------------------------------ diagnostics
    @property
    def load(self) -> float:
        """Processing wall time per second of sensor time, since the start."""
        return self._wall_s / max(self._sensor_us * 1e-6, 1e-9)

    def diagnostics(self) -> list[dict[str, Any]]:
        """Statuses for ``/diagnostics``: one for the pipeline, one per rotor."""
        c = self.counters
        sensor_s = max(self._sensor_us * 1e-6, 1e-9)
        pipe_level = OK
        msg = 'ok'
        if c['packets_refused'] or c['decode_errors']:
            pipe_level, msg = WARN, 'bad packets seen'
        if self.stride > 1:
            pipe_level, msg = WARN, f'behind real time: every {_ordinal(self.stride)} event'
        if not self._inits:
            pipe_level, msg = WARN, ('detecting rotors' if self.config.auto_detect
                                     else 'no rotors configured')
        values = {k: str(v) for k, v in c.items()}
        values.update({
            'events_per_s_in': f'{c["events_in"] / sensor_s:.0f}',
            'load': f'{self.load:.3f}',
            'stride': str(self.stride),
            'gn_target_events': str(self._trackers[0].gn_target_events if self._trackers else 0),
            'backlog_packets': f'{self._backlog_ema:.1f}',
        })
        for i, d in enumerate(self.detected):
            # what the start-up detection found (auto_detect), for inspection
            values[f'detected_rotor_{i}'] = (
                f'centre ({d.center_px[0]:.1f}, {d.center_px[1]:.1f}) px, radius '
                f'{d.radius_px:.1f} px, {d.blades} blades, direction {d.direction:+d}, '
                f'{d.rpm_shaft:.0f} RPM, score {d.score:.2f}')
        out = [{'name': 'helixtrack: pipeline', 'level': pipe_level, 'message': msg,
                'hardware_id': 'helixtrack', 'values': values}]
        for init, tracker, last, rec in zip(self._inits, self._trackers,
                                            self._last_outputs or [None] * len(self._inits),
                                            self._rec):
            st = tracker.state
            level, message = (last.level, last.message) if last else (WARN, 'no data yet')
            values = {
                'rpm_shaft': f'{st.rpm_shaft:.1f}',
                'rpm_shaft_std': f'{st.rpm_shaft_std:.1f}',
                'events_per_s': f'{st.events_in / sensor_s:.0f}',
                'pose_updates': str(st.pose_updates),
                'direction': str(st.direction),
                'recoveries': str(rec.recoveries),
                'recovery_attempts': str(rec.attempts),
            }
            values.update(tracker.health_values())
            out.append({
                'name': f'helixtrack: rotor {init.name}', 'level': level, 'message': message,
                'hardware_id': init.name, 'values': values})
        return out
