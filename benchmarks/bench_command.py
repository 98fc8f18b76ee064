#!/usr/bin/env python3
# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""Whole ``helixtrack track`` command against its tracking loop (#16.4).

Simulates one recording (default: 2 s of quadcopter_3m at egomotion 6,
about 38 M events/s), then runs ``helixtrack track`` on it ``--repeat``
times as a fresh process with its parameter and ground-truth files, as a
user would. Per run: the tracking loop's wall time (the command's own
"in X s wall": reading, decoding, tracking, rpm.csv and results.mcap
written as it goes) and the whole command's wall time (start-up, kernel
cache loading, the loop, the error table, rpm.png and overlay.png, exit).
The overhead is whole / loop - 1 (#16's target: at most 15 %).

    .venv/bin/python benchmarks/bench_command.py --repeat 5
"""

from __future__ import annotations

import argparse
from pathlib import Path
import re
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = Path(__file__).resolve().parents[1]
HELIXTRACK = [sys.executable, '-m', 'helixtrack_ros.cli']


def _simulate(out: Path, scenario: str, ego: int, duration: float) -> str:
    """Write the scene; its events-per-second line."""
    res = subprocess.run([*HELIXTRACK, 'simulate', '--scenario', scenario, '--ego-level',
                          str(ego), '--duration', str(duration), '-o', str(out), '-q'],
                         check=True, capture_output=True, text=True)
    return res.stdout.splitlines()[0]


def _track_once(scene: Path, out: Path) -> tuple[float, float, str]:
    """One ``track`` run: (whole wall s, loop wall s, worst MArE line)."""
    t0 = time.perf_counter()
    res = subprocess.run([*HELIXTRACK, 'track', str(scene / 'events'), '--params',
                          str(scene / 'params.yaml'), '--ground-truth',
                          str(scene / 'ground_truth.csv'), '-o', str(out), '-q'],
                         capture_output=True, text=True)
    whole = time.perf_counter() - t0
    if res.returncode != 0:
        raise SystemExit(f'track failed ({res.returncode}): {res.stderr.strip()}')
    loop = float(re.search(r'in ([0-9.]+) s wall', res.stdout).group(1))
    mare = [float(m) for m in re.findall(r'^\s*\S+\s+[0-9.]+\s+([0-9.]+)\s', res.stdout, re.M)]
    return whole, loop, f'worst MArE {max(mare):.3f} %' if mare else 'no error table'


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--scene', type=Path, default=None,
                    help='an existing simulate output directory (skips simulating)')
    ap.add_argument('--scenario', default='quadcopter_3m', help='scene to simulate')
    ap.add_argument('--ego-level', type=int, default=6, help='its egomotion level')
    ap.add_argument('--duration', type=float, default=2.0, help='its length [s]')
    ap.add_argument('--repeat', type=int, default=5, help='timed track runs')
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        scene = args.scene
        if scene is None:
            scene = Path(tmp) / 'scene'
            print(_simulate(scene, args.scenario, args.ego_level, args.duration))
        _track_once(scene, Path(tmp) / 'warm')   # (fills the kernel cache if it is empty)
        rows = []
        for i in range(args.repeat):
            whole, loop, mare = _track_once(scene, Path(tmp) / f'out{i}')
            rows.append((whole, loop))
            print(f'run {i + 1}: whole {whole:.2f} s, tracking loop {loop:.2f} s, '
                  f'overhead {100 * (whole / loop - 1):.0f} %, {mare}', flush=True)
    over = [100 * (w / lp - 1) for w, lp in rows]
    print(f'overhead median {statistics.median(over):.0f} % (best {min(over):.0f} %, '
          f'worst {max(over):.0f} %); whole - loop median '
          f'{statistics.median(w - lp for w, lp in rows):.2f} s')


if __name__ == '__main__':
    main()
