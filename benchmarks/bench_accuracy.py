# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""Accuracy table like the paper's Table 1: distance x egomotion level x rotor.

Run by hand (takes minutes)::

    .venv/bin/python benchmarks/bench_accuracy.py --duration 2 --levels 1-7 \
        --out benchmarks/results_accuracy.md

Every cell: shaft-RPM MArE [%] / MAE [RPM] of one rotor with correct
initialisation and the parameters of ``--preset`` (default, paper or
release; ``helixtrack_ros.core.presets``) with ``--set`` on top, errors
after the first 0.2 s; plus the largest scale error over the track. Also
the lone-rotor rows.
"""

import argparse
import platform
import sys
import time

import numpy as np
from report import emit, tracker_params  # benchmarks/report.py

from helixtrack_ros.core.params import TrackerParams
from helixtrack_ros.core.presets import PRESETS
from helixtrack_ros.evaluation import scale_drift_pct, track_scene, track_scene_pipeline
from helixtrack_ros.sim import Simulator, make_scenario


def parse_levels(text: str) -> list[int]:
    """'1-7' or '1,3,5' -> list of ints."""
    if '-' in text:
        a, b = text.split('-')
        return list(range(int(a), int(b) + 1))
    return [int(v) for v in text.split(',')]


def run(name: str, duration: float, level: int | None, seed: int,
        pipeline: bool = False, params: TrackerParams | None = None) -> list[dict]:
    """Track one scene; one row per rotor."""
    scene = make_scenario(name, duration_s=duration, ego_level=level, seed=seed)
    sim = Simulator(scene, seed=seed)
    t0 = time.perf_counter()
    results, info = (track_scene_pipeline if pipeline else track_scene)(scene, sim, params=params)
    wall = time.perf_counter() - t0
    rows = []
    for k, r in enumerate(results):
        rows.append({'scene': name, 'level': scene.ego_level, 'rotor': r.name,
                     'mare': r.errors.mare_pct, 'mae': r.errors.mae_rpm,
                     'rmse': r.errors.rmse_rpm,
                     'scale_max': scale_drift_pct(r, scene, k),
                     'scale_end': r.scale_error_pct, 'center_end': r.center_error_px,
                     'rate': info['events'] / duration, 'wall': wall})
    return rows


def main() -> int:
    """Run the grid and print/write a markdown table."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--duration', type=float, default=2.0)
    ap.add_argument('--levels', default='1-7')
    ap.add_argument('--seed', type=int, default=0)
    ap.add_argument('--out', default=None, help='write the markdown table here too')
    ap.add_argument('--pipeline', action='store_true',
                    help='track through the full pipeline (health, loss recovery), states '
                         'per 1 ms batch, instead of bare trackers')
    ap.add_argument('--no-lone', action='store_true', help='skip the lone-rotor scenes')
    ap.add_argument('--preset', default='default', choices=sorted(PRESETS),
                    help='tracker preset the --set values go on top of')
    ap.add_argument('--set', action='append', default=[], metavar='FIELD=VALUE',
                    help="a tracker parameter other than the preset's (repeatable)")
    args = ap.parse_args()
    params = tracker_params(args.set, args.preset)
    rows = []
    for name in () if args.no_lone else ('lone_constant', 'lone_ramp', 'lone_sweep', 'low_rpm'):
        rows += run(name, args.duration, None, args.seed, args.pipeline, params)
        print(rows[-1], file=sys.stderr)
    for name in ('quadcopter_2m', 'quadcopter_4m'):
        for level in parse_levels(args.levels):
            rows += run(name, args.duration, level, args.seed, args.pipeline, params)
            for r in rows[-4:]:
                print(r, file=sys.stderr)
    lines = [
        f'Machine: {platform.processor() or platform.machine()}, {platform.python_version()}; '
        f'command: `{" ".join(sys.argv)}`; scene duration {args.duration} s, seed {args.seed}, '
        f'correct initialisation, preset {args.preset}'
        f'{"".join(", " + s for s in args.set)}, '
        'errors after 0.2 s.',
        '',
        '| scene | ego | rotor | MArE [%] | MAE [RPM] | RMSE [RPM] | max scale err [%] '
        '| centre err end [px] | sensor rate [Mev/s] |',
        '|---|---|---|---|---|---|---|---|---|',
    ]
    for r in rows:
        lines.append(f'| {r["scene"]} | {r["level"]} | {r["rotor"]} | {r["mare"]:.3f} | '
                     f'{r["mae"]:.1f} | {r["rmse"]:.1f} | {r["scale_max"]:.1f} | '
                     f'{r["center_end"]:.1f} | {r["rate"] / 1e6:.1f} |')
    quad = [r for r in rows if r['scene'].startswith('quadcopter') and r['level'] <= 3]
    if quad:
        worst = max(quad, key=lambda r: r['mare'] if np.isfinite(r['mare']) else 1e9)
        lines += ['', f'Worst MArE at ego levels 1-3: {worst["mare"]:.3f} % '
                      f'({worst["scene"]}, level {worst["level"]}, {worst["rotor"]}).']
    emit(lines, args.out)
    return 0


if __name__ == '__main__':
    sys.exit(main())
