# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""Run trackers on simulated scenes and score them against ground truth.

Used by the end-to-end tests and ``benchmarks/bench_accuracy.py``. Events go
straight from the simulator to the trackers (no EVT3 round trip: that path
is covered by the CLI and node tests), routed by each tracker's region
exactly as the pipeline does.
"""

from __future__ import annotations

from dataclasses import dataclass
import time

import numpy as np

from helixtrack_ros.core.events import EventArrays
from helixtrack_ros.core.metrics import RpmErrors, rpm_errors
from helixtrack_ros.core.params import RotorInit, TrackerParams
from helixtrack_ros.core.tracker import HelixTracker


@dataclass
class RotorResult:
    """Track and errors of one rotor on one scene."""

    name: str
    t_us: np.ndarray
    rpm_shaft: np.ndarray
    q: np.ndarray
    errors: RpmErrors
    scale_error_pct: float
    center_error_px: float
    events: int


def rotor_inits_from_scene(scene, t_us: int = 0) -> list[RotorInit]:
    """True initial rotors of a simulated scene (correct initialisation)."""
    out = []
    for r in scene.initial_rotor_params(t_us):
        out.append(RotorInit(
            name=r['name'], center_px=(float(r['center_px'][0]), float(r['center_px'][1])),
            radius_px=float(r['radius_px']), rpm_shaft=float(r['rpm']),
            blades=int(r['blades']), direction=int(r.get('direction', 0)),
            psi_rad=float(r.get('psi_rad', 0.0)),
            perspective=tuple(float(v) for v in r.get('perspective', (0.0, 0.0)))))
    return out


def track_scene(scene, sim, inits: list[RotorInit] | None = None,
                params: TrackerParams | None = None, sample_us: int = 100,
                skip_s: float = 0.2, chunk_us: int = 1000) -> tuple[list[RotorResult], dict]:
    """Track every rotor of a simulated scene and score it.

    Parameters
    ----------
    scene, sim
        A :class:`helixtrack_ros.sim.Scene` and its :class:`Simulator`.
    inits : list of RotorInit, optional
        Initial rotors; default: the true ones.
    params : TrackerParams, optional
        Tracker parameters; default: the defaults.
    sample_us : int
        The state of each tracker is sampled on this grid; the errors average
        over those samples (the tracker updates at every event in between).
    skip_s : float
        Seconds of convergence left out of the errors.
    chunk_us : int
        Events are fed in chunks of this duration, like 1 ms driver packets.

    Returns
    -------
    results : list of RotorResult
    info : dict
        ``events``, ``track_wall_s`` (tracking only) and ``sim_wall_s``.
    """
    params = params or TrackerParams()
    inits = inits if inits is not None else rotor_inits_from_scene(scene)
    trackers = [HelixTracker(r, params) for r in inits]
    samples: list[list] = [[] for _ in trackers]
    n_events = 0
    track_wall = 0.0
    sim_wall = 0.0
    next_sample = 0
    t0 = time.perf_counter()
    for chunk in sim.chunks(chunk_us=chunk_us):
        sim_wall += time.perf_counter() - t0
        n = len(chunk)
        n_events += n
        if n:
            t_end = int(chunk.t_us[-1])
            grid = np.arange(next_sample, t_end + 1, sample_us, dtype=np.int64)
            if grid.size:
                next_sample = int(grid[-1]) + sample_us
            t1 = time.perf_counter()
            for k, tracker in enumerate(trackers):
                x0, y0, x1, y1 = tracker.bbox_px()
                m = (chunk.x >= x0) & (chunk.x <= x1) & (chunk.y >= y0) & (chunk.y <= y1)
                sub = EventArrays(chunk.t_us[m], chunk.x[m], chunk.y[m], chunk.p[m])
                s = tracker.process(sub, sample_t_us=grid)
                if len(s.t_us):
                    samples[k].append(s)
            track_wall += time.perf_counter() - t1
        t0 = time.perf_counter()
    results = []
    for k, (tracker, init) in enumerate(zip(trackers, inits)):
        rotor = scene.rotors[k]
        t = np.concatenate([s.t_us for s in samples[k]]) if samples[k] else np.empty(0, np.int64)
        rpm = np.concatenate([s.rpm_shaft for s in samples[k]]) if samples[k] else np.empty(0)
        q = np.concatenate([s.q for s in samples[k]]) if samples[k] else np.empty((0, 6))
        results.append(_score(scene, rotor, init.name, t, rpm, q, skip_s,
                              int(tracker.state.events_in)))
    return results, {'events': n_events, 'track_wall_s': track_wall, 'sim_wall_s': sim_wall}


def _score(scene, rotor, name: str, t: np.ndarray, rpm: np.ndarray, q: np.ndarray,
           skip_s: float, events: int) -> RotorResult:
    """Errors of one rotor's track against the scene's ground truth."""
    gt_t = np.arange(0, scene.duration_us + 1, 100, dtype=np.int64)
    errors = rpm_errors(t, rpm, gt_t, rotor.rpm_shaft(gt_t), t_from_us=int(skip_s * 1e6))
    scale_err = center_err = float('nan')
    measured = np.flatnonzero(np.isfinite(q[:, 0])) if len(t) else np.zeros(0, np.int64)
    if len(measured):
        # true scale and centre at the last measured output, against the estimate
        i = int(measured[-1])
        H = rotor.homography(t[i:i + 1])[0]
        H = H / H[2, 2]
        true_scale = float(np.hypot(H[0, 0], H[1, 0]))
        scale_err = 100.0 * (q[i, 0] - true_scale) / true_scale
        center_err = float(np.hypot(q[i, 2] - H[0, 2], q[i, 3] - H[1, 2]))
    return RotorResult(name, t, rpm, q, errors, scale_err, center_err, events)


def scale_drift_pct(result: RotorResult, scene, rotor_index: int) -> float:
    """Largest relative scale error [%] over the whole track."""
    if not len(result.t_us):
        return float('nan')
    H = scene.rotors[rotor_index].homography(result.t_us)
    true_scale = np.hypot(H[:, 0, 0], H[:, 1, 0]) / H[:, 2, 2]
    rel = np.abs(result.q[:, 0] - true_scale) / true_scale
    rel = rel[np.isfinite(rel)]
    return float(np.max(rel) * 100.0) if len(rel) else float('nan')


def _pipeline_tracks(pipe, sim, chunk_us: int) -> tuple[dict[str, tuple], int, float]:
    """Feed a simulated scene through a pipeline in chunks.

    Returns per rotor name the (t_us, shaft RPM, q) arrays of its states, the
    event count and the wall time.
    """
    rows: dict[str, tuple[list, list, list]] = {}
    n_events = 0
    t0 = time.perf_counter()
    for chunk in sim.chunks(chunk_us=chunk_us):
        n_events += len(chunk)
        if not len(chunk):
            continue
        for out in pipe.process_events(chunk):
            H = np.asarray(out.homography) / out.homography[2][2]
            t, rpm, q = rows.setdefault(out.name, ([], [], []))
            t.append(out.t_us)
            rpm.append(out.rpm_shaft)
            q.append([float(np.hypot(H[0, 0], H[1, 0])), 0.0, H[0, 2], H[1, 2], H[2, 0],
                      H[2, 1]])
    wall = time.perf_counter() - t0
    tracks = {name: (np.asarray(t, np.int64), np.asarray(rpm, np.float64),
                     np.asarray(q, np.float64).reshape(-1, 6))
              for name, (t, rpm, q) in rows.items()}
    return tracks, n_events, wall


_NO_TRACK = (np.zeros(0, np.int64), np.zeros(0), np.zeros((0, 6)))


def track_scene_pipeline(scene, sim, inits: list[RotorInit] | None = None,
                         params: TrackerParams | None = None, skip_s: float = 0.2,
                         chunk_us: int = 1000) -> tuple[list[RotorResult], dict]:
    """Like :func:`track_scene`, through the full pipeline (health, loss recovery).

    States are taken once per ``chunk_us`` batch (like 1 ms driver packets),
    as the node and ``helixtrack track`` report them.
    """
    from helixtrack_ros.pipeline import PipelineConfig, TrackingPipeline
    inits = inits if inits is not None else rotor_inits_from_scene(scene)
    pipe = TrackingPipeline(PipelineConfig(rotors=inits, tracker=params or TrackerParams(),
                                           threads=1))
    tracks, n_events, wall = _pipeline_tracks(pipe, sim, chunk_us)
    results = [_score(scene, scene.rotors[k], init.name, *tracks.get(init.name, _NO_TRACK),
                      skip_s, n_events) for k, init in enumerate(inits)]
    return results, {'events': n_events, 'wall_s': wall,
                     'recoveries': pipe.counters['recoveries']}


def track_scene_autodetect(scene, sim, params: TrackerParams | None = None,
                           skip_s: float = 0.2,
                           chunk_us: int = 1000) -> tuple[list[RotorResult], dict]:
    """Like :func:`track_scene_pipeline`, with the rotors found by start-up detection.

    The pipeline starts with no rotor and ``auto_detect`` (as the node's
    installed default); each detected rotor is scored against the true rotor
    nearest to it in the image (one result per true rotor, in scene order; an
    undetected rotor gets an empty track).
    """
    from helixtrack_ros.pipeline import PipelineConfig, TrackingPipeline
    pipe = TrackingPipeline(PipelineConfig(rotors=[], auto_detect=True,
                                           tracker=params or TrackerParams(), threads=1))
    tracks, n_events, wall = _pipeline_tracks(pipe, sim, chunk_us)
    # match each true rotor to the detected track whose first centre is nearest
    match: dict[int, str] = {}
    for name, (t, _, q) in tracks.items():
        # the first measured (TRACKING) output: before it the values are withheld (NaN)
        first = np.flatnonzero(np.isfinite(q[:, 2]))
        if not len(first):
            continue
        i = int(first[0])
        H = [r.homography(t[i:i + 1])[0] for r in scene.rotors]
        d = [float(np.hypot(*(q[i, 2:4] - h[:2, 2] / h[2, 2]))) for h in H]
        k = int(np.argmin(d))
        if d[k] < 0.5 * scene.rotors[k].radius_px and k not in match:
            match[k] = name
    results = [_score(scene, rotor, match.get(k, rotor.name),
                      *tracks.get(match.get(k, ''), _NO_TRACK), skip_s, n_events)
               for k, rotor in enumerate(scene.rotors)]
    return results, {'events': n_events, 'wall_s': wall, 'detected': len(tracks),
                     'matched': len(match), 'first_output_us': min(
                         (int(v[0][0]) for v in tracks.values()), default=None)}
