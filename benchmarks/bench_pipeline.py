# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""End-to-end offline throughput: ``helixtrack track`` on simulated 4-rotor bags.

Run by hand::

    .venv/bin/python benchmarks/bench_pipeline.py --duration 1

For each scene (chosen so that the sensor rate is near 30 and 60 M events/s)
it writes the bag with ``helixtrack simulate`` and times ``helixtrack track``
(bag reading, EVT3 decoding, routing, tracking, CSV / mcap writing) in the
same process after warm-up, best of ``--repeat`` runs. Real-time factor =
sensor seconds / wall seconds (>= 1 means faster than real time); CPU =
process CPU seconds per sensor second (2 cores: at most 2x the wall time);
plus the decode-only rate of the same packets.
"""

import argparse
from pathlib import Path
import platform
import sys
import tempfile
import time

import numpy as np

from helixtrack_ros.cli import simulate_to_dir, track_bag
from helixtrack_ros.codecs import make_decoder
from helixtrack_ros.io.bags import iter_event_packets

SCENES = [('quadcopter_3m', 5), ('quadcopter_3m', 1), ('quadcopter_4m', 5), ('quadcopter_2m', 1),
          ('quadcopter_2m', 5), ('quadcopter_4m', 7)]


def decode_rate(bag: Path) -> float:
    """M events/s of decoding alone (packets already in memory, best of 3)."""
    packets = list(iter_event_packets(bag))
    best = float('inf')
    n = 0
    for _ in range(3):
        dec = make_decoder('evt3', 1280, 720)
        t0 = time.perf_counter()
        n = sum(len(dec.decode(p.events).events) for p in packets)
        best = min(best, time.perf_counter() - t0)
    return n / best / 1e6


def main() -> int:
    """Simulate, track, print a markdown table."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--duration', type=float, default=1.0)
    ap.add_argument('--seed', type=int, default=0)
    ap.add_argument('--repeat', type=int, default=2)
    ap.add_argument('--scenes', default=','.join(f'{n}:{lv}' for n, lv in SCENES),
                    help='scenario:egomotion,... (default: %(default)s)')
    args = ap.parse_args()
    scenes = [(item.split(':')[0], int(item.split(':')[1])) for item in args.scenes.split(',')]
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for name, level in scenes:
            scene_dir = Path(tmp) / f'{name}_{level}'
            info = simulate_to_dir(name, args.duration, args.seed, scene_dir, ego_level=level,
                                   quiet=True)
            rate = info['events'] / info['duration_s']
            best = None
            rtfs = []
            for _ in range(args.repeat):
                cpu0 = time.process_time()
                res = track_bag(str(info['bag']), str(info['params']), scene_dir / 'track',
                                ground_truth=str(info['ground_truth']), quiet=True)
                # CPU of the tracking loop (the plot after it is not timed)
                cpu = time.process_time() - cpu0
                rtfs.append(res['rtf'])
                if best is None or res['wall_s'] < best[0]['wall_s']:
                    best = (res, cpu)
            res, cpu = best
            worst = max((e.mare_pct for _, e in res['table']), default=float('nan'))
            rows.append((name, level, rate / 1e6, res['wall_s'], res['sensor_s'], res['rtf'],
                         decode_rate(info['bag']), worst, cpu / res['sensor_s'],
                         float(np.median(rtfs)), min(rtfs)))
            print(rows[-1], file=sys.stderr)
    print(f'Machine: {platform.machine()}, {platform.python_version()}, 2 cores; '
          f'command: `{" ".join(sys.argv)}`')
    print()
    print('| scene | ego | sensor rate [M ev/s] | wall [s] | sensor [s] | real-time factor '
          '(best / median / worst run) | CPU [s per sensor s] | decode only [M ev/s] '
          '| worst MArE [%] |')
    print('|---|---|---|---|---|---|---|---|---|')
    for r in rows:
        print(f'| {r[0]} | {r[1]} | {r[2]:.1f} | {r[3]:.2f} | {r[4]:.2f} | '
              f'{r[5]:.2f} / {r[9]:.2f} / {r[10]:.2f} | {r[8]:.2f} | {r[6]:.0f} | {r[7]:.3f} |')
    return 0


if __name__ == '__main__':
    sys.exit(main())
