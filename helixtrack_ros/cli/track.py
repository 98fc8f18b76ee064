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
from collections.abc import Iterator
from dataclasses import replace
import math
from pathlib import Path
import sys
import time
from typing import Any

import numpy as np

from helixtrack_ros.cli.common import (
    CliError,
    ExitCode,
    Packets,
    damage_line,
    open_or_fail,
    output_dir,
    remove_output,
)
from helixtrack_ros.cli.detect import NAMING, rotor_line
from helixtrack_ros.cli.pictures import Frame, FrameSampler, Mark, draw_frames
from helixtrack_ros.cli.plots import plot_rpm
from helixtrack_ros.cli.progress import Progress, progress_enabled
from helixtrack_ros.cli.truth import (
    error_table,
    match_rotors,
    print_error_table,
    read_ground_truth,
)

#: ``track`` hands the pipeline this many packets at a time (about 64 ms of a driver
#: stream: each batch ends with the rotors waiting for the slowest one, so long batches
#: keep both cores busy; 10-packet batches were 12-17 % slower on a 1 s, 30 M events/s scene)
BATCH_PACKETS = 64
#: ... or fewer, once their payloads hold this many 16-bit EVT3 words (8 MB)
BATCH_WORDS = 4_000_000
#: columns of rpm.csv
CSV_COLUMNS = ['t_us', 'stamp_ns', 'rotor', 'rpm', 'rpm_std', 'phase_rad', 'omega_rad_s',
               *(f'h{i}{j}' for i in range(3) for j in range(3)), 'events', 'level', 'health',
               'state']


def load_config(params_path: str | None, preset: str | None = None) -> Any:
    """The PipelineConfig of a parameter file (auto-detection without one), offline policy;
    ``preset`` replaces the file's ``preset:`` (its ``tracker.*`` values still apply)."""
    from helixtrack_ros.core.presets import apply_preset
    from helixtrack_ros.io.params_file import load_ros_params
    from helixtrack_ros.pipeline import PipelineConfig
    from helixtrack_ros.pipeline.config import known_names, unknown_text
    if params_path is None:
        config = PipelineConfig(auto_detect=True, tracker=apply_preset(preset or 'default', {}))
    else:
        unknown: list[str] = []
        try:
            params = load_ros_params(params_path, 'helixtrack')
            if preset is not None:
                params['preset'] = preset
            config = PipelineConfig.from_ros_params(params, unknown=unknown)
        except FileNotFoundError as exc:
            raise CliError(str(exc)) from None
        except ValueError as exc:
            raise CliError(f'{params_path}: {exc}') from None
        if unknown:
            # the node says the same of the same file
            print(f'helixtrack: ignoring unknown parameters in {params_path} (typo, or rotor '
                  f'not in rotor_names?): {unknown_text(unknown, known_names(params))}',
                  file=sys.stderr)
    if not config.rotors and not config.auto_detect:
        raise CliError(f'{params_path}: rotor_names is empty (list the rotors to track, '
                       'or set auto_detect: true)')
    # offline every event counts: no real-time stride
    return replace(config, realtime_stride=False)


class _TrackRun:
    """What one ``track`` run has processed and written so far."""

    def __init__(self, rotor_names: list[str]) -> None:
        self.rows: dict[str, dict[str, list]] = {n: {'t_us': [], 'rpm': []}
                                                 for n in rotor_names}
        self.t_first_us: int | None = None
        self.t_last_us: int | None = None
        self.last_stamp_ns: int | None = None
        self.n_packets = 0
        self.n_rows = 0
        self.errors: dict[str, int] = {}
        self.interrupted = False
        self.read_error: CliError | None = None
        self.frames = FrameSampler()

    @property
    def sensor_s(self) -> float:
        """Seconds of sensor time from the first packet with events to the last."""
        if self.t_first_us is None or self.t_last_us is None:
            return 0.0
        return (self.t_last_us - self.t_first_us) * 1e-6

    def _batches(self, packets: Packets) -> Iterator[list[Any]]:
        """The packets in batches; a read failure ends them (outputs keep what came before)."""
        try:
            yield from _batches(packets)
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
                fh.writelines(self._write_batch(done, results_bag))
                progress.update(self.n_packets, self.sensor_s, pipe.counters['events_in'])
        except KeyboardInterrupt:
            self.interrupted = True
        finally:
            sys.setswitchinterval(switch_s)

    def _write_batch(self, done: Any, results_bag: Any) -> list[str]:
        """Write a finished batch's results to the bag; its rpm.csv lines."""
        from helixtrack_ros.core.health import health_statuses
        lines: list[str] = []
        for pkt, res in zip(done.packets, done.results):
            self.n_packets += 1
            if res.error:
                self.errors[res.error] = self.errors.get(res.error, 0) + 1
                if self.errors[res.error] == 1:
                    print(f'warning: packet {pkt.seq}: {res.error}', file=sys.stderr)
                continue
            if res.n_events == 0:
                continue
            if self.t_first_us is None:
                self.t_first_us = res.t_us
            self.t_last_us = res.t_us
            self.last_stamp_ns = res.stamp_ns
            self.n_rows += len(res.rotors)
            if res.events is not None and len(res.events):
                self.frames.add(int(res.events.t_us[0]), res.events, res.rotors)
            for r in res.rotors:
                lines.append(_csv_line(r, res.stamp_ns))
                track = self.rows.setdefault(r.name, {'t_us': [], 'rpm': []})
                track['t_us'].append(r.t_us)
                track['rpm'].append(r.rpm_shaft)
            results_bag.write_packet_outputs(res.stamp_ns, [
                {'name': r.name, 'phase_rad': r.phase_rad, 'omega_rad_s': r.omega_rad_s,
                 'rpm_shaft': r.rpm_shaft, 'homography': r.homography}
                for r in res.rotors])
            results_bag.write_diagnostics(res.stamp_ns, health_statuses(
                [r.name for r in res.rotors],
                [(int(r.state), int(r.cause)) for r in res.rotors]),
                topic=results_bag.namespace + '/health')
        if done.diagnostics is not None and self.last_stamp_ns is not None:
            results_bag.write_diagnostics(self.last_stamp_ns, done.diagnostics)
        return lines


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
        Summary: counters, wall time, real-time factor, per-rotor errors.
    """
    from helixtrack_ros.io.bags import ResultBagWriter
    from helixtrack_ros.pipeline import TrackingPipeline
    if not (math.isfinite(skip_s) and skip_s >= 0):
        raise CliError(f'the skip must be >= 0 s, got {skip_s:g}')
    config = load_config(params_path, preset)
    truth = read_ground_truth(Path(ground_truth)) if ground_truth else None
    recording = open_or_fail(bag, topic)
    output_dir(out)
    remove_output(out / 'results.mcap')
    TrackingPipeline.warmup()
    pipe = TrackingPipeline(config)
    run = _TrackRun(pipe.rotor_names)
    wall0 = time.perf_counter()
    progress = Progress(recording.count, 'tracking', enabled=progress_enabled(quiet))
    packets = Packets(recording)
    with (out / 'rpm.csv').open('w', newline='') as fh, \
            ResultBagWriter(out / 'results.mcap', single_file=True) as results_bag:
        fh.write(','.join(CSV_COLUMNS) + '\n')
        run.stream(pipe, packets, fh, results_bag, progress)
        progress.close()
    wall = time.perf_counter() - wall0
    arrays = {n: {'t_us': np.asarray(v['t_us'], np.int64), 'rpm': np.asarray(v['rpm'])}
              for n, v in run.rows.items()}
    sensor_s = run.sensor_s
    detected = _first_detections(pipe)
    match = (match_rotors(_where_seen(arrays, config, detected, run.t_first_us), truth)
             if truth else None)
    truth_rpm = {n: truth.rpm[t] for n, t in match.pairs.items()} if match else None
    table = error_table(arrays, truth_rpm, int(skip_s * 1e6)) if truth_rpm else []
    plot_rpm(out / 'rpm.png', arrays, truth_rpm)
    labels = _draw_overlay(out / 'overlay.png', run.frames, recording, config, detected)
    return {'packets': run.n_packets, 'events': pipe.counters['events_in'], 'wall_s': wall,
            'sensor_s': sensor_s, 'rtf': sensor_s / wall if wall > 0 else float('nan'),
            'counters': dict(pipe.counters), 'errors': run.errors, 'table': table,
            'interrupted': run.interrupted, 'out': out, 'diagnostics': pipe.diagnostics(),
            'rows': run.n_rows, 'topic': recording.topic or str(recording.path),
            'auto_detect': not config.rotors,
            'truncated': packets.truncated, 'read_error': run.read_error,
            'detected': detected, 'match': match, 'overlay_labels': labels}


def _draw_overlay(path: Path, sampler: FrameSampler, recording: Any, config: Any,
                  detected: dict[str, tuple[int, Any]]) -> list[list[Any]]:
    """overlay.png: a few event frames of the run with every tracked rotor then."""
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
    return draw_frames(path, width, height, frames, 'helixtrack track: tracked rotors')


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


def _batches(packets: Any) -> Iterator[list[Any]]:
    """Group packets into about 64 ms of a driver stream (see pipeline.process_stream)."""
    batch: list[Any] = []
    words = 0
    for pkt in packets:
        batch.append(pkt)     # an io.packet_record.EventPacketRecord, taken as it is
        words += len(pkt.events) // 2
        if len(batch) >= BATCH_PACKETS or words >= BATCH_WORDS:
            yield batch
            batch = []
            words = 0
    if batch:
        yield batch


def _nothing_tracked(info: dict[str, Any]) -> str | None:
    """Why ``track`` produced no rotor state (None when it produced some)."""
    if info['rows']:
        return None
    c = info['counters']
    if not info['packets']:
        return f'no EventPacket message on {info["topic"]}'
    if sum(info['errors'].values()) >= info['packets']:
        first = next(iter(info['errors']))
        return f'every one of the {info["packets"]} packets was refused ({first})'
    if not info['events']:
        return f'the {info["packets"]} packets hold no event'
    if info['auto_detect'] and not c['detections']:
        return (f'{info["sensor_s"] * 1e3:.0f} ms of events is too short for the start-up '
                'rotor detection (100 ms); give the rotors with --params')
    if info['auto_detect']:
        return ('no rotor detected in the first 100 ms of events; give the rotors with '
                '--params (helixtrack detect --at-s can look later in the bag)')
    return 'no rotor state came out of the tracker'


def track_outcome(info: dict[str, Any]) -> int:
    """Print the one line for a partial or empty run of ``track``; return its exit code."""
    if info['read_error'] is not None:
        raise info['read_error']
    if info['interrupted']:
        return ExitCode.INTERRUPTED
    if info['truncated'] is not None:
        print(f'helixtrack: {damage_line(info["truncated"], "tracked")}', file=sys.stderr)
        return ExitCode.PARTIAL_INPUT
    reason = _nothing_tracked(info)
    if reason is not None:
        print(f'helixtrack: no rotor tracked: {reason}', file=sys.stderr)
        return ExitCode.NOTHING_FOUND
    return ExitCode.OK


def _print_rotors(info: dict[str, Any]) -> None:
    """The rotors start-up detection found, and how ground truth was matched to them."""
    if info['detected']:
        print(f'{len(info["detected"])} rotor(s) detected at start-up{NAMING}:')
        for name, (_, r) in info['detected'].items():
            print(rotor_line(name, r))
    match = info['match']
    if match is None:
        return
    if match.distance_px:
        print('ground truth matched by position:')
        for name, true_name in match.pairs.items():
            print(f'  {name} = {true_name} (centres {match.distance_px[name]:.1f} px apart)')
    if match.problem:
        print(f'helixtrack: ground truth: {match.problem}', file=sys.stderr)


def print_track_summary(info: dict[str, Any], skip_s: float) -> None:
    """Print the counts, real-time factor, error table and output paths of a run."""
    c = info['counters']
    print(f'{info["events"]} events in {info["packets"]} packets, '
          f'{info["sensor_s"]:.3f} s of sensor time in {info["wall_s"]:.2f} s wall: '
          f'real-time factor {info["rtf"]:.2f}')
    print(f'decode errors {c["decode_errors"]}, refused packets {c["packets_refused"]}, '
          f'seq gaps {c["seq_gaps"]}, time backwards {c["time_backwards"]}')
    if info['interrupted']:
        print('interrupted: outputs hold what was processed so far')
    _print_rotors(info)
    if info['table']:
        print_error_table(info['table'], skip_s)
    out = info['out']
    print(f'outputs: {out / "rpm.csv"}, {out / "results.mcap"}, {out / "rpm.png"}, '
          f'{out / "overlay.png"}')


def cmd_track(args: argparse.Namespace) -> int:
    """``helixtrack track``."""
    info = track_bag(args.bag, args.params, Path(args.out), args.topic, args.ground_truth,
                     args.skip, quiet=args.quiet, preset=args.preset)
    print_track_summary(info, args.skip)
    return track_outcome(info)
