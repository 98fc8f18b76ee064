# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""Tracking with automatic initialisation against correct manual initialisation.

Run by hand::

    .venv/bin/python benchmarks/bench_autoinit.py --out benchmarks/results/autoinit.md

For each quadcopter scene the full pipeline runs twice: once from the true
rotors (manual), once from nothing with ``auto_detect`` (the node's
installed default; rotors found in the first 100 ms of events). Both are
scored per true rotor, shaft-RPM errors after 0.2 s (paper Sec. 4.2).
"""

import argparse
import platform
import sys

from report import emit  # benchmarks/report.py

from helixtrack_ros.evaluation import (
    scale_drift_pct,
    track_scene_autodetect,
    track_scene_pipeline,
)
from helixtrack_ros.sim import Simulator, make_scenario

SCENES = [('quadcopter', None)] + [(n, lv) for n in ('quadcopter_2m', 'quadcopter_4m')
                                   for lv in (1, 2, 3)]


def main() -> int:
    """Run the grid and print / write a markdown table."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--duration', type=float, default=1.0)
    ap.add_argument('--seed', type=int, default=0)
    ap.add_argument('--out', default=None)
    args = ap.parse_args()
    lines = [
        f'Machine: {platform.machine()}, Python {platform.python_version()}; command: '
        f'`{" ".join(sys.argv)}`; {args.duration} s scenes, seed {args.seed}, errors after '
        '0.2 s, full pipeline (health, recovery), states per 1 ms batch.',
        '',
        '| scene | ego | rotor | manual MArE [%] | auto MArE [%] | manual max scale err [%] '
        '| auto max scale err [%] |',
        '|---|---|---|---|---|---|---|',
    ]
    worst = {'manual': 0.0, 'auto': 0.0, 'manual_scale': 0.0, 'auto_scale': 0.0}
    missed = 0
    for name, level in SCENES:
        scene = make_scenario(name, duration_s=args.duration, ego_level=level, seed=args.seed)
        manual, _ = track_scene_pipeline(scene, Simulator(scene, seed=args.seed))
        auto, info = track_scene_autodetect(scene, Simulator(scene, seed=args.seed))
        missed += len(scene.rotors) - info['matched']
        for k, (m, a) in enumerate(zip(manual, auto)):
            ms, as_ = scale_drift_pct(m, scene, k), scale_drift_pct(a, scene, k)
            lines.append(f'| {name} | {scene.ego_level} | {scene.rotors[k].name} | '
                         f'{m.errors.mare_pct:.3f} | {a.errors.mare_pct:.3f} | {ms:.1f} | '
                         f'{as_:.1f} |')
            worst['manual'] = max(worst['manual'], m.errors.mare_pct)
            worst['auto'] = max(worst['auto'], a.errors.mare_pct)
            worst['manual_scale'] = max(worst['manual_scale'], ms)
            worst['auto_scale'] = max(worst['auto_scale'], as_)
        print(lines[-1], file=sys.stderr, flush=True)
    lines += ['', f'Worst rotor MArE: manual {worst["manual"]:.3f} %, automatic '
                  f'{worst["auto"]:.3f} %; worst max scale error: manual '
                  f'{worst["manual_scale"]:.1f} %, automatic {worst["auto_scale"]:.1f} %; '
                  f'rotors not detected: {missed}.']
    emit(lines, args.out)
    return 0


if __name__ == '__main__':
    sys.exit(main())
