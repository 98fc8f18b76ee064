# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""``helixtrack track``: every rotor of a recording, offline, with the node's pipeline.

:func:`track_bag` streams the recording through a
:class:`~helixtrack_ros.pipeline.TrackingPipeline` and writes ``rpm.csv``,
``results.mcap`` and ``rpm.png``; :class:`_TrackRun` keeps what one run
has written so far, so that a Ctrl-C or a damaged bag still leaves outputs.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Iterable, Iterator
from dataclasses import replace
import heapq
import math
from pathlib import Path
import re
import sys
import time
from typing import Any

import numpy as np

from helixtrack_ros.cli.common import (
    CliError,
    Packets,
    open_or_fail,
    output_dir,
    output_outside,
    outputs_not_input,
    remove_output,
)
from helixtrack_ros.cli.picture_worker import PictureWorker
from helixtrack_ros.cli.pictures import Frame, FrameSampler, Mark, PlannedFrames
from helixtrack_ros.cli.progress import Progress, progress_enabled
from helixtrack_ros.cli.truth import (
    GroundTruth,
    error_table,
    match_rotors,
    read_ground_truth,
)

#: packets recorded out of order by up to this many places are put back in order
REORDER_WINDOW = 16
#: ``track`` hands the pipeline this many packets at a time (about 64 ms of a driver
#: stream: each batch ends with the rotors waiting for the slowest one, so long batches
#: keep both cores busy; 10-packet batches were 12-17 % slower on a 1 s, 30 M events/s scene)
BATCH_PACKETS = 64
#: ... or fewer, once their payloads hold this many 16-bit EVT3 words (8 MB)
BATCH_WORDS = 4_000_000
#: the files a run writes into its output directory
OUTPUT_NAMES = ('rpm.csv', 'results.mcap', 'rpm.png', 'overlay.png')
#: columns of rpm.csv
CSV_COLUMNS = ['t_us', 'stamp_ns', 'rotor', 'rpm', 'rpm_std', 'phase_rad', 'omega_rad_s',
               *(f'h{i}{j}' for i in range(3) for j in range(3)), 'events', 'level', 'health',
               'state']


def load_config(params_path: str | None, preset: str | None = None,
                overrides: dict[str, Any] | None = None, warn: bool = True) -> Any:
    """The PipelineConfig of a parameter file (auto-detection without one), offline policy.

    ``preset`` replaces the file's ``preset:`` (its ``tracker.*`` values still
    apply); ``overrides`` (flat parameter name -> value, e.g. one configuration
    of a sweep grid) go on top of both. ``warn``: say which names of the file
    are no parameter (a sweep says it once, not per configuration).
    """
    from helixtrack_ros.io.params_file import load_ros_params
    from helixtrack_ros.node_parameters import NODE_NAMES
    from helixtrack_ros.pipeline import PipelineConfig
    from helixtrack_ros.pipeline.config import checks_off, known_names, unknown_text
    origin = params_path or 'parameters'
    params: dict[str, Any] = {'auto_detect': True}
    if params_path is not None:
        try:
            params = load_ros_params(params_path, 'helixtrack')
        except FileNotFoundError as exc:
            raise CliError(str(exc)) from None
        except ValueError as exc:
            text = str(exc)
            raise CliError(text if text.startswith(str(params_path)) else
                           f'{params_path}: {text}') from None
    if preset is not None:
        params['preset'] = preset
    params.update(overrides or {})
    unknown: list[str] = []
    try:
        config = PipelineConfig.from_ros_params(params, unknown=unknown)
    except ValueError as exc:
        raise CliError(f'{origin}: {exc}') from None
    # (the node's own parameters, in the same file, are no typo offline)
    unknown = [key for key in unknown if key not in NODE_NAMES]
    if unknown and warn:
        # the node says the same of the same file
        print(f'helixtrack: warning: ignoring unknown parameters in {params_path} (typo, or rotor '
              f'not in rotor_names?): {unknown_text(unknown, known_names(params))}',
              file=sys.stderr)
    unchecked = checks_off(config.tracker)
    if unchecked and warn:
        print(f'helixtrack: warning: {origin}: {unchecked}', file=sys.stderr)
    if not config.rotors and not config.auto_detect:
        raise CliError(f'{origin}: rotor_names is empty (list the rotors to track, '
                       'or set auto_detect: true)')
    # offline every event counts: no real-time stride
    return replace(config, realtime_stride=False)


#: per rotor and packet, what a run keeps of each output (:meth:`_TrackRun.arrays`): sensor
#: time, shaft RPM, state code, events of the packet on the rotor, tip radius [px]
ROW_FIELDS = ('t_us', 'rpm', 'state', 'events', 'scale_px')


#: refused packets said one by one on stderr before they are only counted (as many as
#: corrupt bag messages)
REFUSALS_SAID = Packets.CORRUPT_SAID
#: kinds of refusal (reasons up to their numbers) whose first packet is said however late
KINDS_SAID = 10


class _TrackRun:
    """What one ``track`` run has processed and written so far."""

    def __init__(self, rotor_names: list[str], frames: bool = True,
                 rotors: list[Any] | None = None, min_radius_px: float = 0.0,
                 count: int | None = None) -> None:
        self.rows: dict[str, dict[str, list]] = {n: {k: [] for k in ROW_FIELDS}
                                                 for n in rotor_names}
        self.t_first_us: int | None = None
        self.t_last_us: int | None = None
        self.last_stamp_ns: int | None = None
        self.n_packets = 0
        self.n_rows = 0
        #: refused packets per kind of reason (numbers as #), and each kind's first reason
        self.errors: dict[str, int] = {}
        self.error_text: dict[str, str] = {}
        self.n_refused = 0
        self.interrupted = False
        self.read_error: CliError | None = None
        #: event frames for overlay.png (None: no pictures drawn), planned when the number
        #: of packets is known (the overlay is then drawn while the run goes on)
        self.frames: FrameSampler | PlannedFrames | None = None
        if frames:
            self.frames = PlannedFrames(count) if count else FrameSampler()
        #: called once when the frames are :attr:`PlannedFrames.ready`
        self.on_frames_ready: Callable[[], None] | None = None
        #: the given rotors (RotorInit), checked against the sensor once its size is known
        self.rotors = list(rotors or [])
        self.min_radius_px = min_radius_px     # (the tracker's health_min_radius_px)
        self.sensor: tuple[int, int] | None = None
        #: given rotor -> why the sensor cannot show it (each said in a warning line)
        self.impossible: dict[str, str] = {}

    def check_sensor(self, width: int, height: int) -> None:
        """Say, once, each given rotor that a ``width`` x ``height`` sensor cannot show."""
        from helixtrack_ros.pipeline.config import rotor_geometry_problem
        if self.sensor is not None:
            return
        self.sensor = (width, height)
        for r in self.rotors:
            problem = rotor_geometry_problem(r, width, height, self.min_radius_px)
            if problem is not None:
                self.impossible[r.name] = problem
                print(f'helixtrack: warning: rotor {r.name}: {problem}; it cannot be tracked '
                      f'(check rotors.{r.name} of the parameter file)', file=sys.stderr)

    def _sized(self, packets: Any) -> Iterator[Any]:
        """The packets; the first that gives a sensor size has the rotors checked against it."""
        for pkt in packets:
            if self.sensor is None and pkt.width and pkt.height:
                self.check_sensor(int(pkt.width), int(pkt.height))
            yield pkt

    @property
    def sensor_s(self) -> float:
        """Seconds of sensor time from the first packet with events to the last."""
        if self.t_first_us is None or self.t_last_us is None:
            return 0.0
        return (self.t_last_us - self.t_first_us) * 1e-6

    def arrays(self) -> dict[str, dict[str, np.ndarray]]:
        """Per rotor, :data:`ROW_FIELDS` as arrays (times and codes int64, the rest float)."""
        kinds = {'t_us': np.int64, 'state': np.int64, 'events': np.int64}
        return {n: {k: np.asarray(v[k], kinds.get(k, np.float64)) for k in ROW_FIELDS}
                for n, v in self.rows.items()}

    def _batches(self, packets: Packets) -> Iterator[list[Any]]:
        """The packets in batches; a read failure ends them (outputs keep what came before)."""
        try:
            yield from _batches(_in_seq_order(self._sized(packets)))
        except CliError as exc:
            self.read_error = exc

    def stream(self, pipe: Any, packets: Packets, fh: Any, results_bag: Any,
               progress: Progress) -> None:
        """Run every packet through ``pipe``, writing rpm.csv lines and results.mcap."""
        # the rotor threads need the GIL briefly at the start and end of each batch; while
        # this thread writes outputs they would wait up to the switch interval (5 ms)
        switch_s = sys.getswitchinterval()
        sys.setswitchinterval(min(switch_s, 0.0005))
        try:
            for done in pipe.process_stream(self._batches(packets),
                                            diagnostics_period_us=1_000_000):
                lines = self._write_batch(done, results_bag)
                if fh is not None:
                    fh.writelines(lines)
                if self.on_frames_ready is not None and self.frames.ready:
                    ready, self.on_frames_ready = self.on_frames_ready, None
                    ready()
                progress.update(self.n_packets, self.sensor_s, pipe.counters['events_in'])
        except KeyboardInterrupt:
            self.interrupted = True
        finally:
            sys.setswitchinterval(switch_s)

    def _write_batch(self, done: Any, results_bag: Any) -> list[str]:
        """Note a finished batch; write its results to the bag (if any); its rpm.csv lines."""
        lines: list[str] = []
        for pkt, res in zip(done.packets, done.results):
            if not self._note(pkt, res) or results_bag is None:
                continue
            lines.extend(_csv_line(r, res.stamp_ns) for r in res.rotors)
            results_bag.write_packet_outputs(res.stamp_ns, [
                {'name': r.name, 'phase_rad': r.phase_rad, 'omega_rad_s': r.omega_rad_s,
                 'rpm_shaft': r.rpm_shaft, 'rpm_shaft_std': r.rpm_shaft_std,
                 'homography': r.homography}
                for r in res.rotors])
            results_bag.write_health(res.stamp_ns, [r.name for r in res.rotors],
                                     [(int(r.state), int(r.cause)) for r in res.rotors])
        if (done.diagnostics is not None and self.last_stamp_ns is not None
                and results_bag is not None):
            results_bag.write_diagnostics(self.last_stamp_ns, done.diagnostics)
        return lines

    def _note(self, pkt: Any, res: Any) -> bool:
        """Count a packet's result and keep its rotor rows; False when it has none."""
        self.n_packets += 1
        if res.error:
            # (counted per kind: a reason's numbers, as its seq, differ from packet to packet)
            kind = re.sub(r'[0-9][0-9.]*', '#', res.error)
            new_kind = kind not in self.errors
            self.errors[kind] = self.errors.get(kind, 0) + 1
            self.error_text.setdefault(kind, res.error)
            self.n_refused += 1
            if self.n_refused <= REFUSALS_SAID or (new_kind and len(self.errors) <= KINDS_SAID):
                print(f'warning: packet {pkt.seq}: {res.error}', file=sys.stderr)
            if self.n_refused == REFUSALS_SAID + 1:
                print('warning: further refused packets are counted, not listed (the summary '
                      'gives their number)', file=sys.stderr)
            return False
        if res.n_events == 0:
            return False
        if self.t_first_us is None:
            self.t_first_us = res.t_us
        self.t_last_us = res.t_us
        self.last_stamp_ns = res.stamp_ns
        self.n_rows += len(res.rotors)
        if self.frames is not None and res.events is not None and len(res.events):
            self.frames.add(int(res.events.t_us[0]), res.events, res.rotors,
                            self.n_packets - 1)
        for r in res.rotors:
            track = self.rows.setdefault(r.name, {k: [] for k in ROW_FIELDS})
            h = r.homography
            track['t_us'].append(r.t_us)
            track['rpm'].append(r.rpm_shaft)
            track['state'].append(int(r.state))
            track['events'].append(r.events)
            track['scale_px'].append(math.hypot(h[0, 0], h[1, 0]) / h[2, 2])
        return True


def _cut_partial_row(path: Path) -> None:
    """Cut a CSV file whose writing failed (a full disk) back to its last whole line: a row
    cut short reads as other numbers (``10001.336,3.3`` of a longer row; review)."""
    try:
        with path.open('r+b') as fh:
            end = fh.seek(0, 2)
            fh.seek(max(end - _TAIL_BYTES, 0))
            tail = fh.read()
            if tail.endswith(b'\n'):
                return
            cut = tail.rfind(b'\n')
            fh.truncate(end - len(tail) + cut + 1 if cut >= 0 else end - len(tail))
    except OSError:
        pass          # (the error being raised says what went wrong)


#: the tail of rpm.csv searched for its last whole line (a row is about 300 bytes)
_TAIL_BYTES = 1 << 16


def _csv_line(r: Any, stamp_ns: int) -> str:
    """One rotor output as a line of rpm.csv (:data:`CSV_COLUMNS`)."""
    h = r.homography.ravel().tolist()   # (floats format faster)
    return (f'{r.t_us},{stamp_ns},{r.name},{r.rpm_shaft:.3f},'
            f'{r.rpm_shaft_std:.3f},{r.phase_rad:.6f},{r.omega_rad_s:.4f},'
            f'{h[0]:.8g},{h[1]:.8g},{h[2]:.8g},{h[3]:.8g},{h[4]:.8g},'
            f'{h[5]:.8g},{h[6]:.8g},{h[7]:.8g},{h[8]:.8g},{r.events},{r.level},'
            f'{int(r.state)},{r.state.name}\n')


def track_bag(bag: str, params_path: str | None, out: Path, topic: str | None = None,
              ground_truth: str | None = None, skip_s: float = 0.2,
              quiet: bool = False, preset: str | None = None) -> dict[str, Any]:
    """Track every rotor of a bag; write rpm.csv, results.mcap and rpm.png.

    Returns
    -------
    dict
        Summary: counters, wall time, real-time factor, per-rotor errors
        (:func:`track_recording`).
    """
    if not (math.isfinite(skip_s) and skip_s >= 0):
        raise CliError(f'the skip must be >= 0 s, got {skip_s:g}')
    config = load_config(params_path, preset)
    truth = read_ground_truth(Path(ground_truth)) if ground_truth else None
    return track_recording(bag, config, out, truth, topic, skip_s, quiet)


def track_recording(bag: str, config: Any, out: Path | None, truth: GroundTruth | None = None,
                    topic: str | None = None, skip_s: float = 0.2,
                    quiet: bool = False) -> dict[str, Any]:
    """Track every rotor of a recording with ``config`` (a PipelineConfig, :func:`load_config`).

    Writes rpm.csv, results.mcap, rpm.png and overlay.png into ``out``; with
    ``out`` None nothing is written (a sweep needs only the errors).

    Returns
    -------
    dict
        Counters, wall time, real-time factor, the per-rotor error ``table``
        against ``truth``, and ``arrays``: per tracked rotor its outputs
        (:data:`ROW_FIELDS`) as arrays, ``truth_rpm`` / ``truth_radius``: the
        true (t_us, values) of each tracked rotor with a match (or None).
    """
    from helixtrack_ros.pipeline import TrackingPipeline
    pictures = PictureWorker()
    if out is not None:
        pictures.start()   # (it imports matplotlib while the kernels load and the rotors run)
    with pictures:
        recording = open_or_fail(bag, topic)
        if out is not None:
            output_outside(out, Path(recording.path))
            outputs_not_input([out / name for name in OUTPUT_NAMES], Path(recording.path))
            output_dir(out)
            remove_output(out / 'results.mcap')
        TrackingPipeline.warmup()
        pipe = TrackingPipeline(config)
        try:
            return _track_with(pipe, recording, config, out, truth, skip_s, quiet, pictures)
        finally:
            pipe.close()


def _track_with(pipe: Any, recording: Any, config: Any, out: Path | None,
                truth: GroundTruth | None, skip_s: float, quiet: bool,
                pictures: PictureWorker) -> dict[str, Any]:
    """The body of :func:`track_recording` once the pipeline is made."""
    from helixtrack_ros.io.bags import ResultBagWriter
    run = _TrackRun(pipe.rotor_names, frames=out is not None, rotors=config.rotors,
                    min_radius_px=config.tracker.health_min_radius_px, count=recording.count)
    early: list[str] = []   # the pictures the worker draws while the run goes on

    def frames_ready() -> None:
        pictures.submit([('frames', _overlay_args(out / 'overlay.png', run.frames, recording,
                                                  config, _first_detections(pipe)))])
        early.append('frames')
    run.on_frames_ready = frames_ready if out is not None else None
    if recording.width and recording.height:   # the header's (else the first packet's)
        run.check_sensor(int(recording.width), int(recording.height))
    wall0 = time.perf_counter()
    progress = Progress(recording.count, 'tracking', enabled=progress_enabled(quiet))
    packets = Packets(recording)
    if out is None:
        run.stream(pipe, packets, None, None, progress)
    else:
        try:
            with (out / 'rpm.csv').open('w', newline='') as fh, \
                    ResultBagWriter(out / 'results.mcap', single_file=True) as results_bag:
                fh.write(','.join(CSV_COLUMNS) + '\n')
                run.stream(pipe, packets, fh, results_bag, progress)
        except OSError:
            _cut_partial_row(out / 'rpm.csv')
            raise
    progress.close()
    wall = time.perf_counter() - wall0
    arrays = run.arrays()
    sensor_s = run.sensor_s
    detected = _first_detections(pipe)
    match = (match_rotors(_where_seen(arrays, config, detected, run.t_first_us), truth)
             if truth else None)
    truth_rpm = {n: truth.rpm[t] for n, t in match.pairs.items()} if match else None
    truth_radius = ({n: truth.radius[t] for n, t in match.pairs.items()}
                    if match and truth.radius else None)
    table = error_table(arrays, truth_rpm, int(skip_s * 1e6)) if truth_rpm else []
    labels: list[list[Any]] = []
    if out is not None:
        jobs = [('rpm', (out / 'rpm.png', arrays, truth_rpm))]
        if not early:
            jobs.append(('frames', _overlay_args(out / 'overlay.png', run.frames, recording,
                                                 config, detected)))
        drawn = dict(zip([*early, *(name for name, _ in jobs)], pictures.draw(jobs)))
        labels = drawn['frames']
    return {'packets': run.n_packets, 'events': pipe.counters['events_in'], 'wall_s': wall,
            'sensor_s': sensor_s, 'rtf': sensor_s / wall if wall > 0 else float('nan'),
            'counters': dict(pipe.counters), 'errors': run.errors,
            'error_text': run.error_text, 'table': table,
            'interrupted': run.interrupted, 'out': out, 'diagnostics': pipe.diagnostics(),
            'format_change': pipe.format_change,
            'time_quantum_us': pipe.time_quantum_us,
            'rows': run.n_rows, 'topic': recording.topic or str(recording.path),
            'kind': recording.kind,
            'size': (f'{recording.width}x{recording.height}' if recording.width
                     else 'declared'),
            'auto_detect': not config.rotors, 'given': [r.name for r in config.rotors],
            'given_shapes': {r.name: (r.blades, r.direction) for r in config.rotors},
            'impossible': run.impossible,
            'truncated': packets.truncated, 'read_error': run.read_error,
            'detected': detected, 'match': match, 'overlay_labels': labels,
            'arrays': arrays, 'truth_rpm': truth_rpm, 'truth_radius': truth_radius,
            't_first_us': run.t_first_us, 't_last_us': run.t_last_us}


def _overlay_args(path: Path, sampler: FrameSampler | PlannedFrames, recording: Any, config: Any,
                  detected: dict[str, tuple[int, Any]]) -> tuple:
    """The :func:`~helixtrack_ros.cli.pictures.draw_frames` arguments of overlay.png: a few
    event frames of the run with every tracked rotor then."""
    blades = {r.name: r.blades for r in config.rotors}
    blades.update({n: d.blades for n, (_, d) in detected.items()})
    frames = []
    for t0, parts, rotors in sampler.pick(3):
        x, y, p = (np.concatenate([part[i] for part in parts]) for i in range(3))
        marks = [Mark(r.name, r.homography, blades.get(r.name, 0),
                      1 if r.omega_rad_s >= 0 else -1, r.rpm_shaft) for r in rotors]
        frames.append(Frame(t0 * 1e-6, x, y, p, marks))
    width = recording.width or max((int(f.x.max()) + 1 for f in frames if len(f.x)),
                                   default=1280)
    height = recording.height or max((int(f.y.max()) + 1 for f in frames if len(f.y)),
                                     default=720)
    return (path, width, height, frames, 'helixtrack track: tracked rotors')


def _first_detections(pipe: Any) -> dict[str, tuple[int, Any]]:
    """Name -> (sensor time [us], DetectedRotor) of each rotor's first detection."""
    first: dict[str, tuple[int, Any]] = {}
    for t_us, name, d in pipe.detections:
        first.setdefault(name, (int(t_us), d))
    return first


def _where_seen(arrays: dict[str, Any], config: Any, detected: dict[str, tuple[int, Any]],
                t_first_us: int | None) -> dict[str, tuple[int, float, float, float]]:
    """Tracked name -> (t_us, x, y, radius) where it was first seen, to match ground truth.

    Detected rotors at their detection, configured ones at the first event.
    """
    inits = {r.name: r for r in config.rotors}
    seen = {}
    for name in arrays:
        if name in detected:
            t_us, r = detected[name]
        elif name in inits:
            t_us, r = t_first_us or 0, inits[name]
        else:
            continue
        seen[name] = (t_us, float(r.center_px[0]), float(r.center_px[1]), float(r.radius_px))
    return seen


def _in_seq_order(packets: Iterable[Any], window: int = REORDER_WINDOW) -> Iterator[Any]:
    """The packets in sequence order where the recording has them out of order by at most
    ``window`` places (a transport that reordered them; live, the node takes such a packet
    for late). Before, offline, each was dropped as late and the one it passed counted lost:
    17 % of the events of a recording with 50 pairs swapped (input review). Packets of equal
    numbers keep their order; a number more than ``window`` below those held (a restart)
    first lets every held packet out. A read failure comes after the packets held."""
    held: list[tuple[int, int, Any]] = []
    last: int | None = None
    try:
        for n, pkt in enumerate(packets):
            seq = int(pkt.seq)
            if held and (seq < held[0][0] - window or (last is not None and seq < last - window)):
                while held:
                    yield heapq.heappop(held)[2]
            heapq.heappush(held, (seq, n, pkt))
            if len(held) > window:
                last, _, out = heapq.heappop(held)
                yield out
    except CliError:
        while held:
            yield heapq.heappop(held)[2]
        raise
    while held:
        yield heapq.heappop(held)[2]


def _batches(packets: Any) -> Iterator[list[Any]]:
    """Group packets into about 64 ms of a driver stream (see pipeline.process_stream).

    A read failure (CliError) comes after the batch of the packets read before it.
    """
    batch: list[Any] = []
    words = 0
    try:
        for pkt in packets:
            batch.append(pkt)     # an io.packet_record.EventPacketRecord, taken as it is
            words += len(pkt.events) // 2
            if len(batch) >= BATCH_PACKETS or words >= BATCH_WORDS:
                yield batch
                batch = []
                words = 0
    except CliError:
        if batch:
            yield batch
        raise
    if batch:
        yield batch


def cmd_track(args: argparse.Namespace) -> int:
    """``helixtrack track``."""
    from helixtrack_ros.cli.track_report import print_track_summary, track_outcome
    info = track_bag(args.bag, args.params, Path(args.out), args.topic, args.ground_truth,
                     args.skip, quiet=args.quiet, preset=args.preset)
    print_track_summary(info, args.skip)
    return track_outcome(info)
