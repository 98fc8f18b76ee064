# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""``helixtrack simulate``: write a simulated scene as the driver would record it."""

from __future__ import annotations

import argparse
import csv
import math
from pathlib import Path
import shutil
import time
from typing import Any

import numpy as np

from helixtrack_ros.cli.common import CliError, output_dir, remove_output
from helixtrack_ros.cli.progress import Progress, progress_enabled

#: The longest scene ``simulate`` writes [s] (an hour of a dense scene is about 100 GB).
MAX_DURATION_S = 3600


def simulate_to_dir(scenario: str, duration_s: float, seed: int, out: Path,
                    ego_level: int | None = None, packet_us: int = 1000,
                    quiet: bool = False, fmt: str = 'rosbag2',
                    sensor_size: tuple[int, int] = (1280, 720),
                    scene_kw: dict[str, Any] | None = None,
                    tachometer: bool = False) -> dict[str, Any]:
    """Simulate a scene and write it as the driver would record it.

    Writes ``out/events`` (rosbag2, mcap, EVT3 EventPackets on
    ``/event_camera/events``; with ``fmt`` ``raw-evt3`` or ``raw-evt2`` a
    Metavision file ``out/events.raw`` instead), ``out/ground_truth.csv``
    (``t_us,rotor,rpm``, shaft RPM every 0.5 ms) and ``out/params.yaml`` (the
    true initial rotors). ``sensor_size`` is (width, height) in pixels;
    ``scene_kw`` are further options of ``sim.make_scenario`` (e.g. an induced
    loss, ``hide_rotor``). With ``tachometer`` each rotor's once-per-turn pulse
    (:class:`TachometerPulses`) goes into the stream's trigger input, channel k for
    rotor k, as on the paper's bench.

    Returns
    -------
    dict
        ``events``, ``packets``, ``duration_s``, ``wall_s`` and paths.
    """
    from helixtrack_ros.io.params_file import rotor_params_tree, write_ros_params
    from helixtrack_ros.sim import SCENARIOS, Simulator
    if scenario not in SCENARIOS:
        raise CliError(f'unknown scenario "{scenario}"; choose one of: '
                       + ', '.join(sorted(SCENARIOS)))
    if not (math.isfinite(duration_s) and 0 < duration_s <= MAX_DURATION_S):
        raise CliError(f'the duration must be > 0 s and at most {MAX_DURATION_S} s, got '
                       f'{duration_s:g}')
    output_dir(out)
    wall0 = time.perf_counter()
    scene, bag_path, writer, encoder = _scene_and_sink(scenario, duration_s, ego_level, seed,
                                                       out, fmt, sensor_size, scene_kw or {})
    sim = Simulator(scene, seed=seed)
    progress = Progress(scene.duration_us // 1000, f'simulating {scenario}', unit='ms',
                        enabled=progress_enabled(quiet))
    pulses = TachometerPulses(scene) if tachometer else None
    with writer:
        n_events, seq = _write_packets(sim.chunks(chunk_us=10_000), writer, encoder, scene,
                                       packet_us, np.random.default_rng(seed + 1), progress,
                                       out, pulses)
    progress.close()
    _write_ground_truth(out / 'ground_truth.csv', scene)
    tree = rotor_params_tree(scene.initial_rotor_params(0))
    write_ros_params(out / 'params.yaml', tree,
                     header=f'{PARAMS_HEADER} {scenario} '
                            f'(duration {duration_s} s, seed {seed}, ego level {scene.ego_level})')
    return {'events': n_events, 'packets': seq, 'duration_s': scene.duration_us * 1e-6,
            'wall_s': time.perf_counter() - wall0, 'bag': bag_path,
            'ground_truth': out / 'ground_truth.csv', 'params': out / 'params.yaml'}


class TachometerPulses:
    """Each rotor's tachometer: a rising edge each time its shaft passes its zero
    (:func:`~helixtrack_ros.tachometer.revolution_times`, on a 10 us grid), falling 100 us
    later, on trigger channel k for rotor k; handed out packet by packet (:meth:`until`),
    made a second of scene time at a time (the whole grid of an hour took 2.9 GB a rotor)."""

    #: how long a pulse stays high [us]
    HIGH_US = 100
    #: the grid's step and the span made at a time [us]
    STEP_US = 10
    BLOCK_US = 1_000_000

    def __init__(self, scene: Any) -> None:
        self._rotors = list(scene.rotors)
        self._end_us = int(scene.duration_us)
        self._made_us = 0                 # pulses are made up to this time
        self._pending = (np.zeros(0, np.int64), np.zeros(0, np.uint8), np.zeros(0, np.uint8))

    def _make_block(self) -> None:
        """The pulses of the next block of the grid (its last point starts the next one)."""
        from helixtrack_ros.tachometer import revolution_times
        stop = min(self._made_us + self.BLOCK_US, self._end_us)
        grid = np.arange(self._made_us, stop + 1, self.STEP_US, dtype=np.int64)
        t, v, k = [self._pending[0]], [self._pending[1]], [self._pending[2]]
        for i, rotor in enumerate(self._rotors):
            up = revolution_times(rotor.shaft_angle(grid), grid)
            t += [up, up + self.HIGH_US]
            v += [np.ones(len(up), np.uint8), np.zeros(len(up), np.uint8)]
            k += [np.full(2 * len(up), i, np.uint8)]
        t_all = np.concatenate(t)
        order = np.argsort(t_all, kind='stable')
        self._pending = (t_all[order], np.concatenate(v)[order], np.concatenate(k)[order])
        self._made_us = int(grid[-1]) if stop < self._end_us else self._end_us + 1

    def until(self, t_us: int | None) -> dict[str, np.ndarray]:
        """The pulses not handed out yet up to ``t_us`` (None: all), as encoder arguments."""
        while self._made_us <= self._end_us and (t_us is None or self._made_us < t_us):
            self._make_block()
        t, v, k = self._pending
        stop = len(t) if t_us is None else int(np.searchsorted(t, t_us, 'right'))
        self._pending = (t[stop:], v[stop:], k[stop:])
        return {'trig_t_us': t[:stop], 'trig_value': v[:stop], 'trig_id': k[:stop]}


def _write_packets(chunks: Any, writer: Any, encoder: Any, scene: Any, packet_us: int,
                   rng: np.random.Generator, progress: Progress,
                   out: Path, pulses: TachometerPulses | None = None) -> tuple[int, int]:
    """Cut the simulated events into ``packet_us`` packets and write them; (events, packets).

    Header stamps are the host clock at each packet's first word plus a random
    transfer latency, never decreasing, as the driver's are. After the first
    chunk the size of the whole recording is estimated; one that would not
    fit on the disk of ``out`` is refused (CliError).
    """
    from helixtrack_ros.codecs.evt3_encoder import packetize
    from helixtrack_ros.core.events import EventArrays
    stamp0_ns = 1_700_000_000_000_000_000
    n_events = seq = last_stamp = n_bytes = 0
    room_checked = False
    pending = None
    for chunk in chunks:
        ev = chunk if pending is None else EventArrays.concatenate([pending, chunk])
        if len(ev) == 0:
            continue
        # keep the events of the last (incomplete) millisecond for the next chunk
        cut_t = (int(ev.t_us[-1]) // packet_us) * packet_us
        n_keep = int(np.searchsorted(ev.t_us, cut_t, side='left'))
        done, pending = ev.slice(0, n_keep), ev.slice(n_keep, len(ev))
        for start, stop in packetize(done.t_us, packet_us):
            part = done.slice(start, stop)
            payload = encoder.encode(part, **_pulses(pulses, int(part.t_us[-1])))
            # host arrival time: sensor time + transfer latency, never decreasing
            latency_ns = int(200_000 + rng.exponential(150_000))
            last_stamp = max(last_stamp + 1, stamp0_ns + int(part.t_us[0]) * 1000
                             + latency_ns)
            writer.write(last_stamp, seq, payload, width=scene.width, height=scene.height)
            seq += 1
            n_events += len(part)
            n_bytes += len(payload)
        t_done = int(ev.t_us[-1])
        if not room_checked and t_done > 0:
            _check_room(out, n_bytes * scene.duration_us / t_done)
            room_checked = True
        progress.update(t_done // 1000, t_done * 1e-6, n_events)
    if pending is not None and len(pending):
        cuts = packetize(pending.t_us, packet_us)
        for j, (start, stop) in enumerate(cuts):
            part = pending.slice(start, stop)
            last_stamp = max(last_stamp + 1, stamp0_ns + int(part.t_us[0]) * 1000 + 300_000)
            till = None if j == len(cuts) - 1 else int(part.t_us[-1])
            writer.write(last_stamp, seq, encoder.encode(part, **_pulses(pulses, till)),
                         width=scene.width, height=scene.height)
            seq += 1
            n_events += len(part)
    return n_events, seq


def _pulses(pulses: TachometerPulses | None, t_us: int | None) -> dict[str, np.ndarray]:
    """The encoder's trigger arguments of a packet ending at ``t_us`` (none without)."""
    return pulses.until(t_us) if pulses is not None else {}


def _check_room(out: Path, bytes_needed: float) -> None:
    """Refuse a recording of about ``bytes_needed`` bytes that would fill the disk of ``out``."""
    free = shutil.disk_usage(out).free
    if bytes_needed > 0.9 * free:
        raise CliError(f'the recording would take about {bytes_needed / 1e9:.1f} GB and '
                       f'{free / 1e9:.1f} GB are free where {out} lies: give a shorter '
                       '--duration')


#: the first words of the parameter file a simulation writes (its mark in a directory)
PARAMS_HEADER = 'true initial rotors of scenario'


def _not_foreign(out: Path, sink: Path) -> None:
    """Refuse to replace ``sink``, ``out/params.yaml`` or ``out/ground_truth.csv`` unless an
    earlier simulation wrote them (its params.yaml begins with PARAMS_HEADER). Found by a
    review: a user's recording in DIR/events, with their notes in it, was deleted without a
    word; a user's own ground_truth.csv is no mark of a simulation (review)."""
    params = out / 'params.yaml'
    try:
        if params.read_text(errors='replace').startswith(f'# {PARAMS_HEADER}'):
            return
    except OSError:
        pass          # (none, or unreadable: nothing of ours)
    for path in (sink, params, out / 'ground_truth.csv'):
        if path.exists():
            raise CliError(f'{path} exists and is no scene helixtrack simulated: give '
                           'another -o')


def _scene_and_sink(scenario: str, duration_s: float, ego_level: int | None, seed: int,
                    out: Path, fmt: str, sensor_size: tuple[int, int],
                    scene_kw: dict[str, Any]) -> tuple[Any, ...]:
    """The scene to simulate and where it goes: (scene, path, writer, encoder).

    The events of an earlier run in ``out`` are replaced; a recording or parameter file
    that no earlier run wrote is refused (:func:`_not_foreign`).
    """
    from helixtrack_ros.io.recordings import event_sink_path, open_event_sink
    from helixtrack_ros.sim import make_scenario
    _not_foreign(out, event_sink_path(out, fmt))
    try:
        scene = make_scenario(scenario, duration_s=duration_s, ego_level=ego_level, seed=seed,
                              sensor_size=sensor_size, **scene_kw)
        remove_output(event_sink_path(out, fmt))
        path, writer, encoder = open_event_sink(out, fmt, scene.width, scene.height)
    except ValueError as exc:
        raise CliError(str(exc)) from None
    return scene, path, writer, encoder


def _write_ground_truth(path: Path, scene: Any) -> None:
    """``t_us,rotor,rpm,x_px,y_px,radius_px``: every rotor's shaft RPM, image centre and tip
    radius every 0.5 ms.

    The centre lets ``track --ground-truth`` match rotors by position when the
    tracked ones have other names (``rotor_0``, ... of the start-up detection);
    the radius (the scale of the true homography) scores the tracked scale.
    """
    t_gt = np.arange(0, scene.duration_us + 1, 500, dtype=np.int64)
    with path.open('w', newline='') as fh:
        w = csv.writer(fh)
        w.writerow(['t_us', 'rotor', 'rpm', 'x_px', 'y_px', 'radius_px'])
        for rotor in scene.rotors:
            rpm = rotor.rpm_shaft(t_gt)
            h = rotor.homography(t_gt.astype(np.float64))
            x, y = h[:, 0, 2] / h[:, 2, 2], h[:, 1, 2] / h[:, 2, 2]
            radius = np.hypot(h[:, 0, 0], h[:, 1, 0]) / h[:, 2, 2]
            for t, v, cx, cy, r in zip(t_gt.tolist(), rpm.tolist(), x.tolist(), y.tolist(),
                                       radius.tolist()):
                w.writerow([t, rotor.name, f'{v:.4f}', f'{cx:.2f}', f'{cy:.2f}', f'{r:.3f}'])


def cmd_simulate(args: argparse.Namespace) -> int:
    """``helixtrack simulate``."""
    info = simulate_to_dir(args.scenario, args.duration, args.seed, Path(args.out),
                           ego_level=args.ego_level, fmt=args.format, sensor_size=args.size,
                           quiet=args.quiet, tachometer=args.tachometer)
    rate = info['events'] / max(info['duration_s'], 1e-9)
    print(f'{info["events"]} events ({rate / 1e6:.1f} M events/s of sensor time) in '
          f'{info["packets"]} packets, {info["wall_s"]:.1f} s wall')
    print(f'bag: {info["bag"]}\nground truth: {info["ground_truth"]}\n'
          f'parameters: {info["params"]}')
    return 0
