# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""The ``helixtrack`` command: simulate scenes, decode bags, track offline, demo.

Run ``helixtrack --help`` for the sub-commands. Everything here is plumbing
around :mod:`helixtrack_ros.pipeline` (the same processing as the node),
:mod:`helixtrack_ros.sim` and :mod:`helixtrack_ros.io`.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Iterator
import csv
from dataclasses import replace
from enum import IntEnum
import math
from pathlib import Path
import sys
import tempfile
import time
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np

if TYPE_CHECKING:
    from helixtrack_ros.io.bags import TruncatedBagError

DEFAULT_TOPIC = '/event_camera/events'
#: ``--topic`` and recording help of the offline commands
TOPIC_HELP = 'event topic of a bag; needed only when the bag has several'
RECORDING_HELP = ('recording: rosbag2 directory or .mcap/.db3 file, ROS 1 .bag (EventPacket or '
                  'EventArray), or Metavision .raw file (EVT 2.0/3.0)')
#: ``track`` hands the pipeline this many packets at a time (about 64 ms of a driver
#: stream: each batch ends with the rotors waiting for the slowest one, so long batches
#: keep both cores busy; 10-packet batches were 12-17 % slower on a 1 s, 30 M events/s scene)
BATCH_PACKETS = 64
#: ... or fewer, once their payloads hold this many 16-bit EVT3 words (8 MB)
BATCH_WORDS = 4_000_000


class ExitCode(IntEnum):
    """Exit statuses of ``helixtrack``; the same table is in ``--help`` and the README."""

    #: done
    OK = 0
    #: ran to the end but found nothing: no rotor tracked, no rotor detected, no event
    NOTHING_FOUND = 1
    #: bad command line or input (one line on stderr), nothing or little done
    USAGE = 2
    #: an MCAP file of the bag is cut short: what precedes the damage was processed
    PARTIAL_INPUT = 3
    #: Ctrl-C: the outputs hold what was processed so far
    INTERRUPTED = 130


#: ``helixtrack --help`` epilog (the README's table says the same)
EXIT_STATUS_HELP = """exit status:
  0    done
  1    nothing found: track tracked no rotor (no message or event, every packet
       refused, or no rotor detected without --params), detect found no rotor,
       events decoded no event
  2    bad command line or input, one line on stderr: unknown option, a
       duration <= 0 (--skip, --at-s < 0), missing recording or topic, a topic
       not of type EventPacket or EventArray, a bag with no event topic or with
       several and no --topic, a .raw file without a header or of another
       format than EVT 2.0/3.0, an output that cannot be written or an output
       directory that is an existing file
  3    the input is cut short: the bag's MCAP file (recorder killed; every
       intact message before the damage was processed and written; the message
       says how many and how to repair the file: mcap recover), or a .raw file
       ending inside a word (every whole packet was processed); wins over 1
  130  interrupted (Ctrl-C): the outputs hold what was processed"""


class CliError(Exception):
    """A user-facing failure: printed as one line, exit status 2 (ExitCode.USAGE)."""


class _Parser(argparse.ArgumentParser):
    """An argument parser whose usage errors are one line (exit status 2)."""

    def error(self, message: str) -> None:  # type: ignore[override]
        """Print ``prog: error: message`` and where to find help; exit 2."""
        self.exit(ExitCode.USAGE, f'{self.prog}: error: {message} (see {self.prog} --help)\n')


def _seconds(positive: bool) -> Callable[[str], float]:
    """An argparse type: a finite number of seconds, > 0 (``positive``) or >= 0."""
    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f'expected seconds, got {text!r}') from None
        if not math.isfinite(value) or value < 0 or (positive and value == 0):
            raise argparse.ArgumentTypeError(
                f'must be {"> 0" if positive else ">= 0"} s, got {text}')
        return value
    parse.__name__ = 'seconds'
    return parse


def _unwritable(directory: Path) -> str | None:
    """Why files cannot be made in ``directory`` (created if missing), or None."""
    for above in (directory, *directory.parents):
        if above.exists():
            if not above.is_dir():
                return f'{above} is a file, not a directory'
            break
    try:
        directory.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=directory):
            pass
    except OSError as exc:
        return exc.strerror or str(exc)
    return None


def _output_dir(path: Path) -> Path:
    """Create an output directory, or fail in one line before any work is done."""
    reason = _unwritable(path)
    if reason is not None:
        raise CliError(f'cannot write to output directory {path}: {reason}')
    return path


def _output_file(path: Path) -> Path:
    """Check that an output file can be written (its directory made), in one line if not."""
    reason = 'it is a directory' if path.is_dir() else _unwritable(path.parent)
    if reason is not None:
        raise CliError(f'cannot write {path}: {reason}')
    return path


def _damage_line(exc: TruncatedBagError, what: str) -> str:
    """The one line for a bag cut short: what was done with how many messages, and the fix."""
    from helixtrack_ros.io.bags import repair_hint
    if hasattr(exc, 'repair'):   # a .raw file (io.raw_file.TruncatedRawError)
        return (f'{exc.file} is cut short ({exc.damage}): {what} the {exc.messages_read} '
                f'packets before the damage. {exc.repair}')
    return (f'{exc.file} is cut short ({exc.damage}): {what} the {exc.messages_read} intact '
            f'messages on {exc.topic} before the damage. {repair_hint(exc.file)}')


# ---------------------------------------------------------------------- helpers
class Progress:
    """A one-line progress bar on stderr (silent when stderr is not a terminal)."""

    def __init__(self, total: int, label: str, enabled: bool | None = None) -> None:
        self.total = max(int(total), 1)
        self.label = label
        self.enabled = sys.stderr.isatty() if enabled is None else enabled
        self._last = 0.0

    def update(self, done: int, extra: str = '') -> None:
        """Redraw at most 10 times a second."""
        if not self.enabled:
            return
        now = time.monotonic()
        if now - self._last < 0.1 and done < self.total:
            return
        self._last = now
        frac = min(done / self.total, 1.0)
        bar = '#' * int(frac * 30)
        sys.stderr.write(f'\r{self.label} [{bar:<30}] {100 * frac:5.1f}% {extra}   ')
        sys.stderr.flush()

    def close(self) -> None:
        """End the line."""
        if self.enabled:
            sys.stderr.write('\n')


def _read_ground_truth(path: Path) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Read ``t_us,rotor,rpm`` rows into per-rotor arrays."""
    if not path.is_file():
        raise CliError(f'ground truth file not found: {path}')
    per: dict[str, tuple[list[int], list[float]]] = {}
    with path.open() as fh:
        reader = csv.DictReader(fh)
        if not reader.fieldnames or not {'t_us', 'rotor', 'rpm'} <= set(reader.fieldnames):
            raise CliError(f'{path}: expected columns t_us,rotor,rpm')
        for row in reader:
            ts, rs = per.setdefault(row['rotor'], ([], []))
            ts.append(int(row['t_us']))
            rs.append(float(row['rpm']))
    return {k: (np.asarray(v[0], np.int64), np.asarray(v[1], np.float64))
            for k, v in per.items()}


def _error_table(rows: dict[str, dict[str, np.ndarray]],
                 truth: dict[str, tuple[np.ndarray, np.ndarray]],
                 skip_us: int) -> list[tuple[str, Any]]:
    from helixtrack_ros.core.metrics import rpm_errors
    table = []
    for name, track in rows.items():
        if name not in truth:
            continue
        t0 = int(track['t_us'][0]) + skip_us if len(track['t_us']) else 0
        table.append((name, rpm_errors(track['t_us'], track['rpm'], *truth[name],
                                       t_from_us=t0)))
    return table


def _print_error_table(table: list[tuple[str, Any]], skip_s: float) -> None:
    print(f'shaft-RPM error against ground truth (after the first {skip_s:g} s):')
    print(f'  {"rotor":<14}{"MAE [RPM]":>12}{"MArE [%]":>11}{"RMSE [RPM]":>13}{"samples":>9}')
    for name, e in table:
        print(f'  {name:<14}{e.mae_rpm:>12.2f}{e.mare_pct:>11.3f}{e.rmse_rpm:>13.2f}{e.n:>9d}')


# ---------------------------------------------------------------------- events
def cmd_events(args: argparse.Namespace) -> int:
    """Decode a bag's EventPackets into an npz of arrays."""
    from helixtrack_ros.codecs import UnsupportedEncodingError, make_decoder
    out = _output_file(Path(args.out))
    recording = _open_or_fail(args.bag, args.topic)
    parts, trig = [], []
    decoder = None
    progress = Progress(recording.count or 0, 'decoding')
    packets = _Packets(recording)
    for i, pkt in enumerate(packets):
        if decoder is None:
            try:
                decoder = make_decoder(pkt.encoding, pkt.width, pkt.height)
            except UnsupportedEncodingError as exc:
                raise CliError(str(exc)) from None
        d = decoder.decode(pkt.events, is_bigendian=pkt.is_bigendian, time_base=pkt.time_base)
        parts.append(d.events)
        trig.append((d.trig_t_us, d.trig_value, d.trig_id))
        progress.update(i + 1)
    progress.close()
    from helixtrack_ros.core.events import EventArrays
    ev = EventArrays.concatenate(parts)
    np.savez(out, t_us=ev.t_us, x=ev.x, y=ev.y, p=ev.p,
             trig_t_us=np.concatenate([t[0] for t in trig]) if trig else np.empty(0, np.int64),
             trig_value=np.concatenate([t[1] for t in trig]) if trig else np.empty(0, np.uint8),
             trig_id=np.concatenate([t[2] for t in trig]) if trig else np.empty(0, np.uint8))
    counters = decoder.counters if decoder is not None else {}
    print(f'{len(ev)} events, {sum(len(t[0]) for t in trig)} triggers from {len(trig)} '
          f'packets -> {out}')
    if counters:
        print('decoder counters: ' + ', '.join(f'{k}={v}' for k, v in counters.items() if v))
    if packets.truncated is not None:
        print(f'helixtrack: {_damage_line(packets.truncated, "decoded")}', file=sys.stderr)
        return ExitCode.PARTIAL_INPUT
    if not len(ev) and not sum(len(t[0]) for t in trig):
        print(f'helixtrack: no event decoded from {len(trig)} packets on '
              f'{recording.topic or recording.path}', file=sys.stderr)
        return ExitCode.NOTHING_FOUND
    return ExitCode.OK


class _Packets:
    """The packets of a recording; one cut short ends them, kept in ``truncated``.

    Any other read failure (a corrupt message) becomes a :class:`CliError`.
    """

    def __init__(self, recording: Any) -> None:
        self.recording = recording
        self.truncated: TruncatedBagError | None = None

    def __iter__(self) -> Iterator[Any]:
        from helixtrack_ros.io.bags import TruncatedBagError
        from helixtrack_ros.io.raw_file import TruncatedRawError
        try:
            yield from self.recording.packets()
        except (TruncatedBagError, TruncatedRawError) as exc:
            self.truncated = exc
        except FileNotFoundError as exc:
            raise CliError(str(exc)) from None
        except ValueError as exc:
            raise CliError(str(exc)) from None


def _remove_output(path: Path) -> None:
    """Remove an output of an earlier run (a bag file or directory) before rewriting it."""
    if path.is_dir():
        import shutil
        shutil.rmtree(path)
    elif path.exists():
        path.unlink()


def _open_or_fail(path: str, topic: str | None) -> Any:
    """The recording (``io.recordings.Recording``) at ``path``; a problem as CliError."""
    from helixtrack_ros.io.recordings import open_recording
    try:
        return open_recording(path, topic)
    except (FileNotFoundError, ValueError) as exc:
        raise CliError(str(exc)) from None


# ---------------------------------------------------------------------- simulate
def simulate_to_dir(scenario: str, duration_s: float, seed: int, out: Path,
                    ego_level: int | None = None, packet_us: int = 1000,
                    quiet: bool = False, fmt: str = 'rosbag2',
                    sensor_size: tuple[int, int] = (1280, 720)) -> dict[str, Any]:
    """Simulate a scene and write it as the driver would record it.

    Writes ``out/events`` (rosbag2, mcap, EVT3 EventPackets on
    ``/event_camera/events``; with ``fmt`` ``raw-evt3`` or ``raw-evt2`` a
    Metavision file ``out/events.raw`` instead), ``out/ground_truth.csv``
    (``t_us,rotor,rpm``, shaft RPM every 0.5 ms) and ``out/params.yaml`` (the
    true initial rotors). ``sensor_size`` is (width, height) in pixels.

    Returns
    -------
    dict
        ``events``, ``packets``, ``duration_s``, ``wall_s`` and paths.
    """
    from helixtrack_ros.codecs.evt3_encoder import packetize
    from helixtrack_ros.io.params_file import rotor_params_tree, write_ros_params
    from helixtrack_ros.sim import SCENARIOS, Simulator
    if scenario not in SCENARIOS:
        raise CliError(f'unknown scenario "{scenario}"; choose one of: '
                       + ', '.join(sorted(SCENARIOS)))
    if not (math.isfinite(duration_s) and duration_s > 0):
        raise CliError(f'the duration must be > 0 s, got {duration_s:g}')
    _output_dir(out)
    wall0 = time.perf_counter()
    scene, bag_path, writer, encoder = _scene_and_sink(scenario, duration_s, ego_level, seed,
                                                       out, fmt, sensor_size)
    sim = Simulator(scene, seed=seed)
    n_events = 0
    seq = 0
    # header stamps: host clock at the first word of each packet plus a latency
    stamp0_ns = 1_700_000_000_000_000_000
    rng = np.random.default_rng(seed + 1)
    progress = Progress(scene.duration_us, f'simulating {scenario}', None if not quiet else False)
    pending = None
    chunk_us = 10_000
    last_stamp = 0
    with writer:
        for chunk in sim.chunks(chunk_us=chunk_us):
            from helixtrack_ros.core.events import EventArrays
            ev = chunk if pending is None else EventArrays.concatenate([pending, chunk])
            if len(ev) == 0:
                continue
            # keep the events of the last (incomplete) millisecond for the next chunk
            cut_t = (int(ev.t_us[-1]) // packet_us) * packet_us
            n_keep = int(np.searchsorted(ev.t_us, cut_t, side='left'))
            done, pending = ev.slice(0, n_keep), ev.slice(n_keep, len(ev))
            for start, stop in packetize(done.t_us, packet_us):
                part = done.slice(start, stop)
                payload = encoder.encode(part)
                # host arrival time: sensor time + transfer latency, never decreasing
                latency_ns = int(200_000 + rng.exponential(150_000))
                last_stamp = max(last_stamp + 1, stamp0_ns + int(part.t_us[0]) * 1000
                                 + latency_ns)
                writer.write(last_stamp, seq, payload, width=scene.width, height=scene.height)
                seq += 1
                n_events += len(part)
            progress.update(int(ev.t_us[-1]), f'{n_events / 1e6:.1f} M events')
        if pending is not None and len(pending):
            for start, stop in packetize(pending.t_us, packet_us):
                part = pending.slice(start, stop)
                last_stamp = max(last_stamp + 1, stamp0_ns + int(part.t_us[0]) * 1000 + 300_000)
                writer.write(last_stamp, seq, encoder.encode(part), width=scene.width,
                             height=scene.height)
                seq += 1
                n_events += len(part)
    progress.close()
    _write_ground_truth(out / 'ground_truth.csv', scene)
    tree = rotor_params_tree(scene.initial_rotor_params(0))
    write_ros_params(out / 'params.yaml', tree,
                     header=f'true initial rotors of scenario {scenario} '
                            f'(duration {duration_s} s, seed {seed}, ego level {scene.ego_level})')
    return {'events': n_events, 'packets': seq, 'duration_s': scene.duration_us * 1e-6,
            'wall_s': time.perf_counter() - wall0, 'bag': bag_path,
            'ground_truth': out / 'ground_truth.csv', 'params': out / 'params.yaml'}


def _scene_and_sink(scenario: str, duration_s: float, ego_level: int | None, seed: int,
                    out: Path, fmt: str, sensor_size: tuple[int, int]) -> tuple[Any, ...]:
    """The scene to simulate and where it goes: (scene, path, writer, encoder)."""
    from helixtrack_ros.io.recordings import open_event_sink
    from helixtrack_ros.sim import make_scenario
    try:
        scene = make_scenario(scenario, duration_s=duration_s, ego_level=ego_level, seed=seed,
                              sensor_size=sensor_size)
        path, writer, encoder = open_event_sink(out, fmt, scene.width, scene.height)
    except ValueError as exc:
        raise CliError(str(exc)) from None
    _remove_output(path)
    return scene, path, writer, encoder


def _write_ground_truth(path: Path, scene: Any) -> None:
    """``t_us,rotor,rpm``: every rotor's shaft RPM every 0.5 ms."""
    t_gt = np.arange(0, scene.duration_us + 1, 500, dtype=np.int64)
    with path.open('w', newline='') as fh:
        w = csv.writer(fh)
        w.writerow(['t_us', 'rotor', 'rpm'])
        for rotor in scene.rotors:
            rpm = rotor.rpm_shaft(t_gt)
            for t, v in zip(t_gt.tolist(), rpm.tolist()):
                w.writerow([t, rotor.name, f'{v:.4f}'])


def _sensor_size(text: str) -> tuple[int, int]:
    """An argparse type: ``WIDTHxHEIGHT`` in pixels, each 1..2048."""
    w, sep, h = text.lower().partition('x')
    if not (sep and w.isdigit() and h.isdigit() and 0 < int(w) <= 2048
            and 0 < int(h) <= 2048):
        raise argparse.ArgumentTypeError(f'expected WIDTHxHEIGHT (each 1..2048), got {text!r}')
    return int(w), int(h)


def cmd_simulate(args: argparse.Namespace) -> int:
    """``helixtrack simulate``."""
    info = simulate_to_dir(args.scenario, args.duration, args.seed, Path(args.out),
                           ego_level=args.ego_level, fmt=args.format, sensor_size=args.size)
    rate = info['events'] / max(info['duration_s'], 1e-9)
    print(f'{info["events"]} events ({rate / 1e6:.1f} M events/s of sensor time) in '
          f'{info["packets"]} packets, {info["wall_s"]:.1f} s wall')
    print(f'bag: {info["bag"]}\nground truth: {info["ground_truth"]}\n'
          f'parameters: {info["params"]}')
    return 0


# ---------------------------------------------------------------------- track
def track_bag(bag: str, params_path: str | None, out: Path, topic: str | None = None,
              ground_truth: str | None = None, skip_s: float = 0.2,
              quiet: bool = False) -> dict[str, Any]:
    """Track every rotor of a bag; write rpm.csv, results.mcap and rpm.png.

    Returns
    -------
    dict
        Summary: counters, wall time, real-time factor, per-rotor errors.
    """
    from helixtrack_ros.core.health import health_statuses
    from helixtrack_ros.io.bags import ResultBagWriter
    from helixtrack_ros.pipeline import PipelineConfig, TrackingPipeline
    if not (math.isfinite(skip_s) and skip_s >= 0):
        raise CliError(f'the skip must be >= 0 s, got {skip_s:g}')
    if params_path is None:
        config = PipelineConfig(auto_detect=True)
    else:
        unknown: list[str] = []
        try:
            config = PipelineConfig.from_yaml(params_path, unknown=unknown)
        except FileNotFoundError as exc:
            raise CliError(str(exc)) from None
        except ValueError as exc:
            raise CliError(f'{params_path}: {exc}') from None
        if unknown:
            # the node says the same of the same file
            print(f'helixtrack: ignoring unknown parameters in {params_path} (typo, or rotor '
                  f'not in rotor_names?): {", ".join(sorted(unknown))}', file=sys.stderr)
    if not config.rotors and not config.auto_detect:
        raise CliError(f'{params_path}: rotor_names is empty (list the rotors to track, '
                       'or set auto_detect: true)')
    # offline every event counts: no real-time stride
    config = replace(config, realtime_stride=False)
    truth = _read_ground_truth(Path(ground_truth)) if ground_truth else None
    recording = _open_or_fail(bag, topic)
    _output_dir(out)
    _remove_output(out / 'results.mcap')
    TrackingPipeline.warmup()
    pipe = TrackingPipeline(config)
    rows: dict[str, dict[str, list]] = {n: {'t_us': [], 'rpm': []} for n in pipe.rotor_names}
    wall0 = time.perf_counter()
    interrupted = False
    progress = Progress(recording.count or 0, 'tracking', None if not quiet else False)
    t_first_us = None
    t_last_us = None
    last_stamp_ns = None
    n_packets = 0
    n_rows = 0
    errors: dict[str, int] = {}
    packets = _Packets(recording)
    read_error: CliError | None = None
    hom_cols = [f'h{i}{j}' for i in range(3) for j in range(3)]
    with (out / 'rpm.csv').open('w', newline='') as fh, \
            ResultBagWriter(out / 'results.mcap') as results_bag:
        fh.write(','.join(['t_us', 'stamp_ns', 'rotor', 'rpm', 'rpm_std', 'phase_rad',
                           'omega_rad_s', *hom_cols, 'events', 'level', 'health',
                           'state']) + '\n')
        def batches() -> Iterator[list[Any]]:
            # a read failure ends the stream here: the outputs keep what came before it
            nonlocal read_error
            try:
                yield from _batches(packets)
            except CliError as exc:
                read_error = exc

        # the rotor threads need the GIL briefly at the start and end of each batch; while
        # this thread writes outputs they would wait up to the switch interval (5 ms)
        switch_s = sys.getswitchinterval()
        sys.setswitchinterval(min(switch_s, 0.0005))
        try:
            for done in pipe.process_stream(batches(), diagnostics_period_us=1_000_000):
                lines = []
                for pkt, res in zip(done.packets, done.results):
                    n_packets += 1
                    if res.error:
                        errors[res.error] = errors.get(res.error, 0) + 1
                        if errors[res.error] == 1:
                            print(f'warning: packet {pkt.seq}: {res.error}', file=sys.stderr)
                        continue
                    if res.n_events == 0:
                        continue
                    if t_first_us is None:
                        t_first_us = res.t_us
                    t_last_us = res.t_us
                    last_stamp_ns = res.stamp_ns
                    n_rows += len(res.rotors)
                    for r in res.rotors:
                        h = r.homography.ravel().tolist()   # (floats format faster)
                        lines.append(
                            f'{r.t_us},{res.stamp_ns},{r.name},{r.rpm_shaft:.3f},'
                            f'{r.rpm_shaft_std:.3f},{r.phase_rad:.6f},{r.omega_rad_s:.4f},'
                            f'{h[0]:.8g},{h[1]:.8g},{h[2]:.8g},{h[3]:.8g},{h[4]:.8g},'
                            f'{h[5]:.8g},{h[6]:.8g},{h[7]:.8g},{h[8]:.8g},{r.events},{r.level},'
                            f'{int(r.state)},{r.state.name}\n')
                        track = rows.setdefault(r.name, {'t_us': [], 'rpm': []})
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
                if done.diagnostics is not None and last_stamp_ns is not None:
                    results_bag.write_diagnostics(last_stamp_ns, done.diagnostics)
                fh.writelines(lines)
                progress.update(n_packets, f'{pipe.counters["events_in"] / 1e6:.1f} M events')
        except KeyboardInterrupt:
            interrupted = True
        finally:
            sys.setswitchinterval(switch_s)
        progress.close()
    wall = time.perf_counter() - wall0
    arrays = {n: {'t_us': np.asarray(v['t_us'], np.int64), 'rpm': np.asarray(v['rpm'])}
              for n, v in rows.items()}
    sensor_s = ((t_last_us - t_first_us) * 1e-6) if t_first_us is not None else 0.0
    table = _error_table(arrays, truth, int(skip_s * 1e6)) if truth else []
    _plot_rpm(out / 'rpm.png', arrays, truth)
    return {'packets': n_packets, 'events': pipe.counters['events_in'], 'wall_s': wall,
            'sensor_s': sensor_s, 'rtf': sensor_s / wall if wall > 0 else float('nan'),
            'counters': dict(pipe.counters), 'errors': errors, 'table': table,
            'interrupted': interrupted, 'out': out, 'diagnostics': pipe.diagnostics(),
            'rows': n_rows, 'topic': recording.topic or str(recording.path),
            'auto_detect': not config.rotors,
            'truncated': packets.truncated, 'read_error': read_error}


def _batches(packets: Any) -> Iterator[list[Any]]:
    """Group packets into about 64 ms of a driver stream (see pipeline.process_stream)."""
    from helixtrack_ros.pipeline import RawPacket
    batch: list[RawPacket] = []
    words = 0
    for pkt in packets:
        batch.append(RawPacket(pkt.events, pkt.encoding, pkt.width, pkt.height,
                               pkt.is_bigendian, pkt.stamp_ns, pkt.seq, pkt.time_base))
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


def _track_outcome(info: dict[str, Any]) -> int:
    """Print the one line for a partial or empty run of ``track``; return its exit code."""
    if info['read_error'] is not None:
        raise info['read_error']
    if info['interrupted']:
        return ExitCode.INTERRUPTED
    if info['truncated'] is not None:
        print(f'helixtrack: {_damage_line(info["truncated"], "tracked")}', file=sys.stderr)
        return ExitCode.PARTIAL_INPUT
    reason = _nothing_tracked(info)
    if reason is not None:
        print(f'helixtrack: no rotor tracked: {reason}', file=sys.stderr)
        return ExitCode.NOTHING_FOUND
    return ExitCode.OK


def _plot_rpm(path: Path, arrays: dict[str, dict[str, np.ndarray]],
              truth: dict[str, tuple[np.ndarray, np.ndarray]] | None) -> None:
    import matplotlib
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(10, 5), dpi=100)
    for i, (name, a) in enumerate(arrays.items()):
        color = f'C{i}'
        if len(a['t_us']):
            ax.plot(a['t_us'] * 1e-6, a['rpm'], color=color, lw=1.2, label=f'{name} tracked')
        if truth and name in truth:
            ax.plot(truth[name][0] * 1e-6, truth[name][1], color=color, lw=0.8, ls='--',
                    alpha=0.8, label=f'{name} truth')
    ax.set_xlabel('sensor time [s]')
    ax.set_ylabel('shaft RPM')
    ax.grid(alpha=0.3)
    if ax.get_legend_handles_labels()[0]:   # (nothing tracked: an empty plot, no warning)
        ax.legend(fontsize=8, ncol=2)
    ax.set_title('helixtrack: shaft RPM per rotor')
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def _print_track_summary(info: dict[str, Any], skip_s: float) -> None:
    c = info['counters']
    print(f'{info["events"]} events in {info["packets"]} packets, '
          f'{info["sensor_s"]:.3f} s of sensor time in {info["wall_s"]:.2f} s wall: '
          f'real-time factor {info["rtf"]:.2f}')
    print(f'decode errors {c["decode_errors"]}, refused packets {c["packets_refused"]}, '
          f'seq gaps {c["seq_gaps"]}, time backwards {c["time_backwards"]}')
    if info['interrupted']:
        print('interrupted: outputs hold what was processed so far')
    if info['table']:
        _print_error_table(info['table'], skip_s)
    out = info['out']
    print(f'outputs: {out / "rpm.csv"}, {out / "results.mcap"}, {out / "rpm.png"}')


def cmd_track(args: argparse.Namespace) -> int:
    """``helixtrack track``."""
    info = track_bag(args.bag, args.params, Path(args.out), args.topic, args.ground_truth,
                     args.skip)
    _print_track_summary(info, args.skip)
    return _track_outcome(info)


# ---------------------------------------------------------------------- demo
def cmd_demo(args: argparse.Namespace) -> int:
    """``helixtrack demo``: simulate the default quadcopter, track it, report errors."""
    out = _output_dir(Path(args.out))
    print(f'simulating scenario "{args.scenario}" ({args.duration:g} s) ...')
    info = simulate_to_dir(args.scenario, args.duration, args.seed, out / 'scene')
    print(f'  {info["events"]} events, {info["events"] / info["duration_s"] / 1e6:.1f} M '
          f'events/s sensor rate, written to {info["bag"]}')
    print('tracking ...')
    res = track_bag(str(info['bag']), str(info['params']), out / 'track',
                    ground_truth=str(info['ground_truth']), skip_s=args.skip)
    _print_track_summary(res, args.skip)
    print(f'plot: {out / "track" / "rpm.png"}')
    return _track_outcome(res)


# ---------------------------------------------------------------------- detect
class Detection(NamedTuple):
    """What :func:`detect_in_bag` found."""

    #: list of DetectedRotor
    rotors: list
    #: sensor size from the packets
    width: int
    height: int
    #: the TruncatedBagError when the bag ended at damage before the window did, else None
    truncated: TruncatedBagError | None = None


def detect_in_bag(bag: str, topic: str | None = None, at_s: float = 0.0,
                  window_s: float = 0.1) -> Detection:
    """Detect the rotors in ``window_s`` of events starting ``at_s`` after the first event.

    A bag cut short (damaged MCAP) ends the window at the damage.
    """
    from helixtrack_ros.codecs import UnsupportedEncodingError, make_decoder
    from helixtrack_ros.core.detection import detect_rotors
    from helixtrack_ros.core.events import EventArrays
    recording = _open_or_fail(bag, topic)
    decoder = None
    parts = []
    t_start = None
    width, height = 1280, 720
    packets = _Packets(recording)
    for pkt in packets:
        if decoder is None:
            try:
                decoder = make_decoder(pkt.encoding, pkt.width, pkt.height)
            except UnsupportedEncodingError as exc:
                raise CliError(str(exc)) from None
            width, height = int(pkt.width), int(pkt.height)
        ev = decoder.decode(pkt.events, is_bigendian=pkt.is_bigendian,
                            time_base=pkt.time_base).events
        if not len(ev):
            continue
        if t_start is None:
            t_start = int(ev.t_us[0]) + int(at_s * 1e6)
        if ev.t_us[-1] < t_start:
            continue
        parts.append(ev)
        if ev.t_us[-1] >= t_start + int(window_s * 1e6):
            break
    if not parts:
        if packets.truncated is not None:
            return Detection([], width, height, packets.truncated)
        raise CliError(f'{bag}: no events at {at_s:g} s')
    ev = EventArrays.concatenate(parts)
    a = int(np.searchsorted(ev.t_us, t_start))
    b = int(np.searchsorted(ev.t_us, t_start + int(window_s * 1e6)))
    return Detection(detect_rotors(ev.slice(a, b), width=width, height=height), width, height,
                     packets.truncated)


def cmd_detect(args: argparse.Namespace) -> int:
    """``helixtrack detect``: write a parameter file with the rotors found."""
    from helixtrack_ros.io.params_file import rotor_params_tree, write_ros_params
    _output_file(Path(args.out))
    t0 = time.perf_counter()
    found = detect_in_bag(args.bag, args.topic, args.at_s, args.window)
    rotors = found.rotors
    wall = time.perf_counter() - t0
    names = [f'rotor_{i}' for i in range(len(rotors))]
    print(f'{len(rotors)} rotor(s) found in {args.window * 1e3:.0f} ms of events at '
          f'{args.at_s:g} s ({wall:.2f} s):')
    for name, r in zip(names, rotors):
        print(f'  {name}: centre ({r.center_px[0]:.1f}, {r.center_px[1]:.1f}) px, radius '
              f'{r.radius_px:.1f} px, {r.blades} blades, direction {r.direction:+d}, '
              f'{r.rpm_shaft:.0f} shaft RPM (score {r.score:.2f})')
    tree = rotor_params_tree([r.to_params_dict(n) for n, r in zip(names, rotors)])
    write_ros_params(args.out, tree, header=f'rotors detected by helixtrack detect in {args.bag} '
                                            f'at {args.at_s:g} s')
    print(f'parameters: {args.out}')
    if found.truncated is not None:
        print(f'helixtrack: {_damage_line(found.truncated, "searched")}', file=sys.stderr)
        return ExitCode.PARTIAL_INPUT
    if not rotors:
        print(f'helixtrack: no rotor found in {args.window * 1e3:.0f} ms of events at '
              f'{args.at_s:g} s (try another --at-s or a longer --window)', file=sys.stderr)
        return ExitCode.NOTHING_FOUND
    return ExitCode.OK


# ---------------------------------------------------------------------- main
def build_parser() -> argparse.ArgumentParser:
    """The argument parser of ``helixtrack``."""
    parser = _Parser(
        prog='helixtrack',
        description='Event-camera propeller tracking (HelixTrack): RPM, phase and pose '
                    'per rotor from Prophesee EVT3 rosbags.',
        epilog=EXIT_STATUS_HELP, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest='command', required=True)
    positive_s, nonnegative_s = _seconds(positive=True), _seconds(positive=False)

    p = sub.add_parser('demo', help='simulate the default quadcopter scene, track it, '
                                    'print the error table')
    p.add_argument('--scenario', default='quadcopter')
    p.add_argument('--duration', type=positive_s, default=1.0, help='seconds of scene time')
    p.add_argument('--seed', type=int, default=0)
    p.add_argument('--skip', type=nonnegative_s, default=0.2,
                   help='seconds of convergence left out of the errors')
    p.add_argument('--out', default='demo_out', help='output directory')
    p.set_defaults(func=cmd_demo)

    p = sub.add_parser('simulate', help='write a simulated scene as a rosbag2 or a .raw file')
    p.add_argument('--scenario', default='quadcopter')
    p.add_argument('--duration', type=positive_s, default=1.0, help='seconds of scene time')
    p.add_argument('--seed', type=int, default=0)
    p.add_argument('--ego-level', type=int, default=None, choices=range(0, 8),
                   help="camera egomotion level 0-7 (default: the scenario's)")
    p.add_argument('--size', type=_sensor_size, default=(1280, 720), metavar='WxH',
                   help='sensor size in pixels, e.g. 346x260 or 640x480 (default 1280x720; '
                        'the scene is scaled to fit)')
    p.add_argument('--format', choices=('rosbag2', 'raw-evt3', 'raw-evt2'), default='rosbag2',
                   help='DIR/events as a rosbag2 of EVT3 EventPackets (default), or '
                        'DIR/events.raw, a Metavision RAW file of EVT 3.0 or 2.0')
    p.add_argument('--out', required=True, help='output directory')
    p.set_defaults(func=cmd_simulate)

    p = sub.add_parser('track', help='track the rotors of a bag')
    p.add_argument('bag', help=RECORDING_HELP)
    p.add_argument('--params', default=None,
                   help='ROS 2 parameter file with the rotors (default: detect them in the '
                        'first 100 ms)')
    p.add_argument('--topic', default=None, help=TOPIC_HELP)
    p.add_argument('--out', required=True, help='output directory')
    p.add_argument('--ground-truth', default=None, help='CSV t_us,rotor,rpm (shaft RPM)')
    p.add_argument('--skip', type=nonnegative_s, default=0.2,
                   help='seconds of convergence left out of the errors')
    p.set_defaults(func=cmd_track)

    p = sub.add_parser('detect', help='find the rotors of a bag and write a parameter file')
    p.add_argument('bag', help=RECORDING_HELP)
    p.add_argument('--topic', default=None, help=TOPIC_HELP)
    p.add_argument('--at-s', type=nonnegative_s, default=0.0,
                   help='start of the detection window, seconds after the first event')
    p.add_argument('--window', type=positive_s, default=0.1,
                   help='seconds of events to use')
    p.add_argument('--out', required=True, help='parameter file to write (.yaml)')
    p.set_defaults(func=cmd_detect)

    p = sub.add_parser('events', help="decode a bag's event packets to an npz file")
    p.add_argument('bag', help=RECORDING_HELP)
    p.add_argument('--topic', default=None, help=TOPIC_HELP)
    p.add_argument('--out', required=True, help='output .npz')
    p.set_defaults(func=cmd_events)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``helixtrack`` console script; returns an :class:`ExitCode`."""
    args = build_parser().parse_args(argv)
    try:
        return int(args.func(args))
    except CliError as exc:
        print(f'helixtrack: error: {exc}', file=sys.stderr)
        return ExitCode.USAGE
    except OSError as exc:   # an output that cannot be written after all (disk full, ...)
        print(f'helixtrack: error: {exc}', file=sys.stderr)
        return ExitCode.USAGE
    except KeyboardInterrupt:
        print('helixtrack: interrupted', file=sys.stderr)
        return ExitCode.INTERRUPTED


if __name__ == '__main__':
    sys.exit(main())
