# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""Recordings per minute: ``helixtrack track`` one after another against ``helixtrack batch``.

Run by hand::

    .venv/bin/python benchmarks/bench_batch.py --recordings 8 --duration 0.5

Simulates ``--recordings`` short scenes (``--scenario``, seeds 0, 1, ...,
each with its ground truth), then times, as a user would run them, whole
commands from start to exit (interpreter start, kernel loading, cluster
start-up, outputs and pictures included):

- serial: one ``helixtrack track RECORDING --ground-truth ...`` after the other;
- batch: one ``helixtrack batch RECORDING... --out DIR --workers N`` for each
  ``--workers`` value (the embedded local cluster).

Both detect the rotors at start-up and write the same outputs. Prints a
markdown table (wall seconds, recordings per minute, speed-up over serial,
CPU seconds of all processes) and checks that every recording was tracked
with the same errors.
"""

import argparse
import csv
from pathlib import Path
import platform
import re
import resource
import subprocess
import sys
import tempfile
import time

from helixtrack_ros.cli import simulate_to_dir
from helixtrack_ros.fleet.engine import available_cores

CLI = [sys.executable, '-m', 'helixtrack_ros.cli']
#: a line of track's error table: rotor, MAE, MArE, RMSE, samples
ERROR_LINE = re.compile(r'^\s+(\S+)\s+([\d.nan]+)\s+([\d.nan]+)\s+([\d.nan]+)\s+(\d+)$', re.M)


def children_cpu() -> float:
    """CPU seconds (user + system) of every finished child process so far (the worker
    processes of a batch included: each parent waits for its own)."""
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def run(cmd: list[str]) -> tuple[float, float, str]:
    """Wall and CPU seconds of a command, and its stdout; fails loudly on a non-zero exit."""
    cpu0 = children_cpu()
    t0 = time.perf_counter()
    done = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if done.returncode != 0:
        raise SystemExit(f'{" ".join(cmd)} exited {done.returncode}:\n{done.stderr}')
    return wall, children_cpu() - cpu0, done.stdout


def serial(scenes: list[Path], out: Path) -> tuple[float, float, dict[str, float]]:
    """``track`` on every scene in turn: wall and CPU seconds, scene -> sum of its rotors'
    MArE (as printed, 3 decimals)."""
    wall = cpu = 0.0
    mare = {}
    for scene in scenes:
        w, c, text = run([*CLI, 'track', str(scene / 'events'), '--out', str(out / scene.name),
                          '--ground-truth', str(scene / 'ground_truth.csv'), '--quiet'])
        wall += w
        cpu += c
        mare[scene.name] = sum(float(m[2]) for m in ERROR_LINE.findall(text))
    return wall, cpu, mare


def batch(scenes: list[Path], out: Path, workers: int) -> tuple[float, float, dict[str, float]]:
    """One ``batch`` of every scene: wall and CPU seconds, scene -> sum of its rotors' MArE
    (rounded as ``track`` prints it)."""
    wall, cpu, _ = run([*CLI, 'batch', *(str(s / 'events') for s in scenes), '--out',
                        str(out), '--workers', str(workers), '--quiet'])
    mare: dict[str, float] = {}
    for row in csv.DictReader((out / 'summary.csv').open()):
        if row['status'] != 'ok':
            raise SystemExit(f'batch: {row["name"]} {row["status"]}: {row["message"]}')
        scene = row['name'].split('/')[0]
        mare[scene] = mare.get(scene, 0.0) + round(float(row['mare_pct'] or 'nan'), 3)
    return wall, cpu, mare


def main() -> int:
    """Simulate, time serial and batch runs, print a markdown table."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--recordings', type=int, default=8)
    ap.add_argument('--duration', type=float, default=0.5, help='seconds per recording')
    ap.add_argument('--scenario', default='quadcopter_4m')
    ap.add_argument('--ego-level', type=int, default=2)
    ap.add_argument('--workers', default='1,2', help='batch worker counts (default 1,2)')
    ap.add_argument('--repeat', type=int, default=1, help='runs of each; the best is kept')
    args = ap.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        top = Path(tmp)
        scenes = []
        events = 0
        for seed in range(args.recordings):
            scene = top / f'flight_{seed:02d}'
            info = simulate_to_dir(args.scenario, args.duration, seed, scene,
                                   ego_level=args.ego_level, quiet=True)
            events += info['events']
            scenes.append(scene)
        print(f'{len(scenes)} x {args.scenario} ego {args.ego_level}, {args.duration} s, '
              f'{events / len(scenes) / 1e6:.1f} M events each', file=sys.stderr)
        runs = [('serial track', 0)] + [('batch', int(w)) for w in args.workers.split(',')]
        reference = None
        for mode, workers in runs:
            best = None
            for k in range(args.repeat):
                out = top / f'out_{mode.split()[0]}_{workers}_{k}'
                wall, cpu, mare = (serial(scenes, out) if workers == 0
                                   else batch(scenes, out, workers))
                if best is None or wall < best[0]:
                    best = (wall, cpu)
            reference = reference or mare
            diff = max(abs(mare[s] - reference[s]) for s in reference)
            rows.append((mode, workers, *best, diff))
            print(rows[-1], file=sys.stderr)
    base = rows[0][2]
    print(f'Machine: {platform.machine()}, Python {platform.python_version()}, '
          f'{available_cores()} cores; command: `{" ".join(sys.argv)}`')
    print(f'\n{args.recordings} recordings of {args.duration} s ({args.scenario}, egomotion '
          f'{args.ego_level}, {events / len(scenes) / args.duration / 1e6:.1f} M events/s), '
          'rotors detected at start-up, ground truth beside; whole commands timed, best of '
          f'{args.repeat}.\n')
    print('| run | worker processes | wall [s] | recordings per minute | speed-up over serial '
          '| CPU [s] (all processes) | largest MArE difference to serial [% points] |')
    print('|---|---|---|---|---|---|---|')
    for mode, workers, wall, cpu, diff in rows:
        print(f'| {mode} | {workers or "-"} | {wall:.1f} | {args.recordings / wall * 60:.1f} '
              f'| {base / wall:.2f}x | {cpu:.1f} | {diff:.3f} |')
    return 0


if __name__ == '__main__':
    sys.exit(main())
