# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""Accuracy and speed of the automatic rotor detector on simulator scenes.

For each scene (scenario, egomotion level, seed) the first 100 ms of events go
through :func:`helixtrack_ros.core.detection.detect_rotors`; the result is compared
with the ground truth at the window end (``scene.initial_rotor_params``). A row
lists true / found / false rotors, the worst centre and radius errors (fraction of
the tip radius), the worst relative shaft-RPM error, the worst relative error of
the perspective vector (compared as R(psi) p, psi being a free gauge of the
circle; informative only), blade-count and direction hits, the event rate and
the wall time of one detection (numba compile excluded).
A scene passes when every rotor is found with centre and radius within 10 % of
the tip radius, RPM within 5 %, blade count and direction right, and nothing
else is reported.

Usage::

    .venv/bin/python benchmarks/bench_detection.py [--seeds 3] [--quick]
"""

import argparse
import math
import time

import numpy as np

from helixtrack_ros.core.detection import DetectionParams, detect_rotors
from helixtrack_ros.sim import Simulator, make_scenario

WINDOW_S = 0.1


def _aligned(psi: float, p) -> np.ndarray:
    """Perspective in the image-aligned rotor frame, w = R(psi) p (psi is a gauge)."""
    c, s = math.cos(psi), math.sin(psi)
    return np.array([c * p[0] - s * p[1], s * p[0] + c * p[1]])


def evaluate(scene, found: list) -> dict:
    """Match detections to the true rotors (nearest centre within half a radius)."""
    t_end = found[0].t_us if found else int(WINDOW_S * 1e6)
    truth = scene.initial_rotor_params(t_end)
    used: set = set()
    row = {'true': len(truth), 'found': 0, 'c_err': 0.0, 'r_err': 0.0, 'rpm_err': 0.0,
           'p_err': 0.0, 'blades_ok': 0, 'dir_ok': 0}
    for g in truth:
        gx, gy = g['center_px']
        best, best_d = None, math.inf
        for i, d in enumerate(found):
            dist = math.hypot(d.center_px[0] - gx, d.center_px[1] - gy)
            if i not in used and dist < best_d:
                best, best_d = i, dist
        if best is None or best_d > 0.5 * g['radius_px']:
            row['c_err'] = math.inf
            continue
        used.add(best)
        d = found[best]
        row['found'] += 1
        row['c_err'] = max(row['c_err'], best_d / g['radius_px'])
        row['r_err'] = max(row['r_err'], abs(d.radius_px / g['radius_px'] - 1.0))
        row['rpm_err'] = max(row['rpm_err'], abs(d.rpm_shaft / g['rpm'] - 1.0))
        w_det = _aligned(d.psi_rad, d.perspective)
        w_gt = _aligned(g['psi_rad'], g['perspective'])
        if np.hypot(*w_gt) > 0.0:
            row['p_err'] = max(row['p_err'],
                               float(np.hypot(*(w_det - w_gt)) / np.hypot(*w_gt)))
        row['blades_ok'] += int(d.blades == g['blades'])
        row['dir_ok'] += int(d.direction == g['direction'])
    row['false'] = len(found) - len(used)
    n = row['true']
    row['pass'] = (row['found'] == n and row['false'] == 0 and row['c_err'] <= 0.1
                   and row['r_err'] <= 0.1 and row['rpm_err'] <= 0.05
                   and row['blades_ok'] == n and row['dir_ok'] == n)
    return row


def run(name: str, level: int, seed: int, params: DetectionParams) -> dict:
    """Simulate one scene and time one detection on its first 100 ms."""
    scene = make_scenario(name, duration_s=WINDOW_S, ego_level=level, seed=seed)
    events = Simulator(scene, seed=seed).all_events()
    t0 = time.perf_counter()
    found = detect_rotors(events, scene.width, scene.height, params)
    wall = time.perf_counter() - t0
    row = evaluate(scene, found)
    row.update(name=name, level=scene.ego_level, seed=seed, events=len(events), wall_s=wall)
    return row


def _fmt(v: float) -> str:
    return '   -  ' if not math.isfinite(v) else f'{v:6.3f}'


def main() -> None:
    """Run the benchmark table."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--seeds', type=int, default=3, help='seeds per scenario and level')
    ap.add_argument('--levels', default='1,2,3,4,5', help='egomotion levels, comma-separated')
    ap.add_argument('--quick', action='store_true', help='levels 1, 3, 5 and one seed')
    args = ap.parse_args()
    levels = [int(v) for v in args.levels.split(',')]
    seeds = list(range(args.seeds))
    if args.quick:
        levels, seeds = [1, 3, 5], [0]
    params = DetectionParams()
    # warm-up: compile (or load) the kernels
    warm = make_scenario('lone_constant', duration_s=0.03, ego_level=1, seed=0)
    detect_rotors(Simulator(warm, seed=0).all_events(), params=params)
    runs = [(n, lv, s) for n in ('quadcopter_2m', 'quadcopter_4m') for lv in levels
            for s in seeds]
    runs += [('lone_3blade', 2, s) for s in seeds]
    runs += [(n, None, s) for n in ('lone_constant', 'low_rpm', 'low_rpm_shake')
             for s in seeds[:1]]
    runs += [('background_only', lv, s) for lv in levels for s in seeds]
    print(f'{"scene":16s} {"lvl":>3s} {"seed":>4s} {"true":>4s} {"found":>5s} {"false":>5s} '
          f'{"c_err":>6s} {"r_err":>6s} {"rpm":>6s} {"p_err":>6s} {"B":>3s} {"dir":>3s} '
          f'{"Mev/s":>6s} {"wall_s":>6s}  pass')
    rows = []
    for name, lv, seed in runs:
        r = run(name, lv, seed, params)
        rows.append(r)
        print(f'{name:16s} {r["level"]:3d} {seed:4d} {r["true"]:4d} {r["found"]:5d} '
              f'{r["false"]:5d} {_fmt(r["c_err"])} {_fmt(r["r_err"])} {_fmt(r["rpm_err"])} '
              f'{_fmt(r["p_err"])} '
              f'{r["blades_ok"]:3d} {r["dir_ok"]:3d} {r["events"] / WINDOW_S / 1e6:6.1f} '
              f'{r["wall_s"]:6.3f}  {"yes" if r["pass"] else "NO"}', flush=True)
    walls = np.array([r['wall_s'] for r in rows])
    rates = np.array([r['events'] / WINDOW_S for r in rows])
    print(f'\npassed {sum(r["pass"] for r in rows)} / {len(rows)} scenes; wall time per '
          f'detection: median {np.median(walls):.3f} s, max {walls.max():.3f} s; '
          f'{np.median(rates / walls) / 1e6:.1f} M events/s of wall time (median)')


if __name__ == '__main__':
    main()
