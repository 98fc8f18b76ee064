# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""TrackingPipeline: packets in, per-rotor outputs out, shared by the node and the CLI.

A façade over the pipeline's parts: :mod:`.intake` decodes and checks each
packet, :mod:`.rotors` tracks batches of them (one kernel call per rotor and
batch, the rotors in threads) with :mod:`.recovery` for LOST rotors,
:mod:`.realtime` chooses the live event stride, :mod:`.startup` finds the
rotors when none are configured, :mod:`.diagnostics` reports. It imports no
ROS module, so ``helixtrack track`` and ``helixtrack_node`` give the same
numbers for the same packets.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
import time
from typing import Any

import numpy as np

from helixtrack_ros.codecs import make_decoder
from helixtrack_ros.core.detection import DetectedRotor
from helixtrack_ros.core.detection import warmup as detection_warmup
from helixtrack_ros.core.events import EventArrays
from helixtrack_ros.core.params import TrackerParams
from helixtrack_ros.core.routing import search_region_events
from helixtrack_ros.core.tracker import HelixTracker
from helixtrack_ros.io.packet_record import EventPacketRecord
from helixtrack_ros.pipeline.batching import BatchQueue, Pending
from helixtrack_ros.pipeline.config import PipelineConfig, rotor_shape_problem
from helixtrack_ros.pipeline.diagnostics import pipeline_status, rotor_statuses
from helixtrack_ros.pipeline.intake import PacketIntake
from helixtrack_ros.pipeline.realtime import StridePolicy
from helixtrack_ros.pipeline.records import PacketResult, RotorOutput, StreamBatch
from helixtrack_ros.pipeline.recovery import FREE_ATTEMPTS
from helixtrack_ros.pipeline.rotors import RotorBank
from helixtrack_ros.pipeline.sequence import SeqCounter
from helixtrack_ros.pipeline.startup import StartupDetector, rotor_inits

#: the events of a refused packet
_NO_EVENTS = EventArrays.empty()

#: Every counter of a pipeline, in the order diagnostics list them.
COUNTERS = ('packets', 'packets_refused', 'seq_gaps', 'packets_dropped', 'seq_restarts',
            'events_in', 'events_routed', 'time_backwards', 'time_gaps', 'camera_restarts',
            'decode_errors', 'packets_corrupt', 'resumes', 'recoveries', 'recovery_attempts',
            'searches_widened', 'detections', 'replays_dropped', 'outputs_coarse_time')


class TrackingPipeline:
    """Decode, route and track, one packet at a time (or a batch of them)."""

    def __init__(self, config: PipelineConfig) -> None:
        self.counters: dict[str, int] = dict.fromkeys(COUNTERS, 0)
        self._intake = PacketIntake(self.counters)
        self._bank = RotorBank(config, self.counters, lambda: self._intake.image_size)
        self._policy = StridePolicy(config.realtime_stride, config.max_stride)
        self._startup = StartupDetector()
        self._batches = BatchQueue(self._bank)
        #: wall clock (time.monotonic) when the last call with packets returned (a slow call
        #: is not a stopped stream); None before the first
        self._last_packet_wall: float | None = None

    # ------------------------------------------------------------------ info
    @property
    def config(self) -> PipelineConfig:
        """The configuration in force (detected rotors and changed parameters included)."""
        return self._bank.config

    @property
    def rotor_names(self) -> list[str]:
        """Names of the tracked rotors, in output order."""
        return [r.name for r in self._bank.inits]

    @property
    def sequence(self) -> SeqCounter:
        """The packets' sequence numbers: the last one, gaps and restarts (counted in
        :attr:`counters`)."""
        return self._intake.seq

    @property
    def format_change(self) -> tuple[str, str] | None:
        """The latest change of the stream's encoding or sensor size (before, after)."""
        return self._intake.last_format_change

    @property
    def foreign_source(self) -> tuple[str, str] | None:
        """(the stream's frame_id, another source's) of the latest packet of another camera
        on the topic left out (None: none so far)."""
        return self._intake.sources.last_foreign

    @property
    def time_quantum_us(self) -> int:
        """How far apart the stream's event times are at the finest [us] (1: a sensor's
        microseconds; more: rounded times, whose fast rotors are withheld)."""
        return self._intake.quantum.quantum_us

    @property
    def stride(self) -> int:
        """The event stride k of the real-time policy (1: every event)."""
        return self._policy.stride

    @property
    def load(self) -> float:
        """Processing wall time per second of sensor time, since the start."""
        return self._policy.load

    @property
    def time_mapped(self) -> bool:
        """Whether the sensor-to-ROS time mapping has an estimate (a stamped packet with
        events came): until then the node stamps unstamped packets on arrival."""
        return self._intake.time.has_estimate

    @property
    def detected(self) -> list[DetectedRotor]:
        """What the start-up detection (auto_detect) found."""
        return self._startup.found

    @property
    def detections(self) -> list[tuple[int, str, DetectedRotor]]:
        """Every detection used (start-up and re-detection): (sensor time, rotor name, it)."""
        return self._bank.detections

    def shape_problems(self) -> list[str]:
        """Per rotor whose latest detection found other blades or direction than its
        parameters give (:func:`.config.rotor_shape_problem`), or that never locked though
        re-detected :data:`~.recovery.FREE_ATTEMPTS` times or more, what to say (live, a
        rotor given the wrong blades is never re-detected as itself: none was said)."""
        latest = {name: d for _, name, d in self._bank.detections}
        given = {r.name: (r.blades, r.direction) for r in self._bank.inits}
        found = [rotor_shape_problem(n, given[n], (d.blades, d.direction))
                 for n, d in latest.items() if n in given]
        said = [p for p in found if p is not None]
        for init, rec in zip(self._bank.inits, self._bank.recs):
            if rec.good_q is None and rec.attempts >= FREE_ATTEMPTS and not any(
                    p.startswith(f'rotor {init.name} ') for p in said):
                said.append(f'rotor {init.name} never locked in {rec.attempts} '
                            're-detections: check its blades and direction in the parameters')
        return said

    @staticmethod
    def warmup(encodings: Sequence[str] = ('evt3',), detection: bool = False) -> float:
        """Compile (or load) the tracker's kernels and the decoders of ``encodings``
        (the live node: all, as a camera may send any), and with ``detection`` the
        detector's (the live node: its first re-detection must not load them); return
        seconds taken."""
        t0 = time.perf_counter()
        HelixTracker.warmup()
        if detection:
            detection_warmup()
        # (a lost rotor's search region, per packet: its first call took 8 ms on a warm
        # process, 250 ms on a cold one)
        few = np.zeros(4, np.uint16)
        search_region_events(np.arange(4, dtype=np.int64), few, few, few.astype(np.uint8),
                             (0, 0, 1, 1), [(0.0, 0.0, 1.0)], 2)
        for encoding in encodings:
            # numba compiles writable and read-only payloads apart; packets come as bytes
            make_decoder(encoding, 1280, 720).decode(np.zeros(16, np.uint8))
            make_decoder(encoding, 1280, 720).decode(bytes(16))
        return time.perf_counter() - t0

    def close(self) -> None:
        """Stop the worker threads."""
        self._bank.close()

    # ------------------------------------------------------------------ control
    def update_tracker_params(self, changes: dict[str, Any]) -> None:
        """Apply new tracker parameters to every rotor (ValueError: nothing changed)."""
        merged = self.config.tracker.to_dict()
        merged.update(changes)
        self._bank.set_params(TrackerParams.from_dict(merged))

    def set_stride(self, stride: int) -> None:
        """Fix the event stride k (tests, tools); the real-time policy may change it later."""
        self._policy.stride = int(stride)
        self._bank.set_gn_divisor(self._policy.stride)

    def note_backlog(self, waiting: int) -> None:
        """Live use: how many packets waited behind the ones now processed (the policy's
        sign of falling behind; :meth:`StridePolicy.note_backlog`)."""
        self._policy.note_backlog(waiting)

    def recent_detections(self, span_us: int) -> list[tuple[str, DetectedRotor]]:
        """(rotor name, detection) of the detections of the last ``span_us`` of sensor time."""
        now = self._intake.last_t_us
        if now is None:
            return []
        return [(name, d) for t, name, d in self.detections if 0 <= now - t <= span_us]

    def diagnostics(self) -> list[dict[str, Any]]:
        """Statuses for ``/diagnostics``: one for the pipeline, one per rotor."""
        idle_s = self._idle_s()
        return [pipeline_status(self.counters, self._policy, self._bank, self.detected, idle_s,
                                self.time_quantum_us),
                *rotor_statuses(self._bank, self._policy, self._batches.last_outputs, idle_s)]

    def _idle_s(self) -> float | None:
        """Wall time spent waiting for packets since the last ones (None before the first)."""
        last = self._last_packet_wall
        return None if last is None else time.monotonic() - last

    # ------------------------------------------------------------------ packets
    def process_packet(self, payload: bytes | np.ndarray, encoding: str, width: int,
                       height: int, is_bigendian: bool, stamp_ns: int, seq: int,
                       time_base: int = 0) -> PacketResult:
        """Process one ``EventPacket``: the rotors' states at its last event, or ``error``
        set when it was refused (the pipeline state is unchanged then)."""
        return self.process_packets([EventPacketRecord(stamp_ns, '', height, width, seq,
                                                       time_base, encoding, is_bigendian,
                                                       payload)])[0]

    def process_packets(self, packets: Sequence[EventPacketRecord]) -> list[PacketResult]:
        """Process consecutive packets; one result per packet, in order.

        The same results as :meth:`process_packet` on each in turn, except
        that a LOST rotor's recovery sees the other rotors as they are at the
        end of the batch.
        """
        wall0 = time.perf_counter()
        t_before = self._intake.last_t_us
        try:
            results = self._admit_all(packets)
            self._flush()
        except Exception:
            # (the caller counts the failure and goes on: no queued packet may point into
            # memory the next batch reuses)
            self._batches.drop_queued()
            raise
        self._account_batch(time.perf_counter() - wall0, t_before)
        self._last_packet_wall = time.monotonic()
        return results

    def process_stream(self, batches: Iterable[Sequence[EventPacketRecord]],
                       diagnostics_period_us: int = 0) -> Iterator[StreamBatch]:
        """Process a stream of batches, decoding one while the last is tracked (offline).

        Gives for each batch the same results as :meth:`process_packets`:
        while the rotors of batch k run in the worker threads, the caller's
        iterator reads batch k + 1 and it is decoded, and the caller handles
        the results of batch k - 1. With ``diagnostics_period_us`` > 0 a
        diagnostics snapshot comes with the first batch and then whenever
        that much sensor time has passed.
        """
        prev: tuple[Sequence[EventPacketRecord], list[PacketResult | None]] | None = None
        last_diag_us: int | None = None
        wall0 = time.perf_counter()
        for packets in batches:
            t_before = self._intake.last_t_us
            results = self._admit_all(packets)
            now_us = self._intake.last_t_us
            due = prev is not None and diagnostics_period_us > 0 and (
                last_diag_us is None or now_us is None
                or now_us - last_diag_us >= diagnostics_period_us)
            self._batches.overlap(self.stride, due)
            diag = None
            if due and self._batches.last_t_us:
                diag = self.diagnostics()
                last_diag_us = self._batches.last_t_us
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

    def process_events(self, events: EventArrays) -> list[RotorOutput]:
        """Track decoded, time-sorted sensor events (simulation, evaluation): the same
        per-rotor path without decoding and time mapping; the states at the last event."""
        n = len(events)
        self.counters['events_in'] += n
        if n == 0:
            return self._batches.last_outputs
        wall0 = time.perf_counter()
        t_last = int(events.t_us[-1])
        last = self._intake.last_t_us
        span_us = t_last - (last if last is not None else int(events.t_us[0]))
        self._intake.last_t_us = t_last
        if not self._bank.trackers and self.config.auto_detect:
            self._auto_detect(events)
        self._batches.add(Pending([None], 0, events, t_last, 0))
        self._flush()
        self._account_load(time.perf_counter() - wall0, max(span_us, 1))
        return self._batches.last_outputs

    def _admit_all(self, packets: Sequence[EventPacketRecord]) -> list[PacketResult | None]:
        """Decode and check each packet; refused ones get their result, the rest queue."""
        results: list[PacketResult | None] = [None] * len(packets)
        events = self._batches.new_batch(sum(len(pkt.events) for pkt in packets))
        for i, pkt in enumerate(packets):
            adm = self._intake.admit(events, pkt)
            if adm.dropped is not None:
                results[i] = PacketResult(dropped=adm.dropped)
                continue
            if adm.error is not None:
                # (its outputs say that nothing was measured, in order with the others)
                results[i] = PacketResult(error=adm.error)
                self._batches.add(Pending(results, i, _NO_EVENTS, -1, 0, adm.error))
                continue
            if adm.restart:
                self._flush()
                self._bank.restart()
            if adm.gap_us is not None:
                # events were lost before this packet: track what came before, then
                # tell every rotor, so that the gap is not read as starvation
                self._flush()
                self._bank.skip_gap(adm.gap_us)
            ev = adm.events
            if len(ev.t_us) == 0:
                # the rotors' states of the packet before (filled in when tracked)
                self._batches.add(Pending(results, i, ev, -1, adm.stamp_ns,
                                          silent_ns=adm.silent_ns))
                continue
            if not self._bank.trackers and self.config.auto_detect:
                self._flush()
                self._auto_detect(ev)
            self._batches.add(Pending(results, i, ev, int(ev.t_us[-1]), adm.stamp_ns,
                                      quantum_us=self._intake.quantum.quantum_us))
        return results

    def _auto_detect(self, ev: EventArrays) -> None:
        w, h = self._intake.image_size
        found = self._startup.add(ev, w, h)
        if found is None:
            return
        self.counters['detections'] += 1
        if not found:
            return
        inits = rotor_inits(found)
        t_found = int(ev.t_us[-1])
        self._bank.note_detections([(t_found, i.name, d) for i, d in zip(inits, found)])
        self._bank.set_rotors(inits)
        self._bank.set_gn_divisor(self.stride)

    def _flush(self) -> None:
        """Track every queued packet (and the batch in flight) now."""
        self._batches.flush(self.stride)

    def _account_batch(self, wall_s: float, t_before: int | None) -> None:
        last = self._intake.last_t_us
        if last is None:
            return
        span_us = last - (t_before if t_before is not None else self._intake.first_t_us)
        self._account_load(wall_s, max(span_us, 1))

    def _account_load(self, wall_s: float, span_us: int) -> None:
        self._policy.note_rotor_rate(self._bank.sparsest_rate)
        if self._policy.account(wall_s, span_us):
            self._bank.set_gn_divisor(self._policy.stride)
