# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""Speed and accuracy of one HelixTracker on a synthetic lone rotor (run by hand).

Prints the kernel warm-up time, ns per input event and M events/s (best of
``--repeat`` runs, each with a fresh tracker, single thread), the peak
memory a tracker allocates while processing, and the shaft-RPM / scale
accuracy. Default scene: 2-blade rotor, 10,000 shaft RPM, tip radius
125 px, about 33 M events/s, nearly all on the disc.

    .venv/bin/python benchmarks/bench_tracker.py --duration 1.0 --repeat 5
"""

import argparse
from pathlib import Path
import sys
import time
import tracemalloc

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / 'test'))

from reference.synthetic_rotor import make_rotor_events  # noqa: E402

from helixtrack_ros.core.params import RotorInit, TrackerParams  # noqa: E402
from helixtrack_ros.core.tracker import HelixTracker  # noqa: E402


def main() -> None:
    """Run the benchmark."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--duration', type=float, default=1.0, help='stream length [s]')
    ap.add_argument('--rpm', type=float, default=10_000.0, help='shaft RPM')
    ap.add_argument('--radius', type=float, default=125.0, help='tip radius [px]')
    ap.add_argument('--repeat', type=int, default=5, help='timed runs (best is reported)')
    ap.add_argument('--batch', type=int, default=0,
                    help='events per process() call (0 = whole stream in one call)')
    ap.add_argument('--set', nargs='*', default=[], metavar='NAME=VALUE',
                    help='TrackerParams overrides')
    args = ap.parse_args()

    t0 = time.perf_counter()
    warm = HelixTracker.warmup()
    print(f'warm-up (compile or load cache): {warm:.2f} s (import + warm-up '
          f'{time.perf_counter() - t0:.2f} s)')

    t0 = time.perf_counter()
    ev, truth = make_rotor_events(args.duration, args.rpm, blades=2, radius_px=args.radius,
                                  center_px=(640.0, 360.0), jitter_us=5.0, noise_frac=0.02)
    n = len(ev)
    print(f'scene: {n / 1e6:.1f} M events in {args.duration:.2f} s '
          f'({n / args.duration / 1e6:.1f} M events/s), generated in '
          f'{time.perf_counter() - t0:.1f} s')
    overrides = {}
    for item in args.set:
        key, value = item.split('=')
        overrides[key] = float(value)
    params = TrackerParams.from_dict(overrides)
    rotor = RotorInit('bench', (640.0, 360.0), args.radius, args.rpm, 2, 1)
    sample_t = np.arange(ev.t_us[0], ev.t_us[-1], 1000, dtype=np.int64)

    best = float('inf')
    samples = None
    tracker = None
    for _ in range(max(1, args.repeat)):
        tracker = HelixTracker(rotor, params)
        t1 = time.perf_counter()
        if args.batch > 0:
            for start in range(0, n, args.batch):
                tracker.process(ev.slice(start, start + args.batch))
        else:
            samples = tracker.process(ev, sample_t_us=sample_t)
        best = min(best, time.perf_counter() - t1)
    print(f'process: best {best:.3f} s = {best / n * 1e9:.1f} ns/event = '
          f'{n / best / 1e6:.1f} M events/s  (real-time factor {args.duration / best:.2f})')
    print('diagnostics:', tracker.diagnostics())

    tracemalloc.start()
    tr = HelixTracker(rotor, params)
    tr.process(ev.slice(0, min(n, 2_000_000)))
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    state_bytes = sum(a.nbytes for a in (tr.fs, tr.ist, tr.acc, tr.acq_t, tr.acq_a, tr.q,
                                         tr.pose, tr.tp, tr.gp))
    print(f'memory per tracker: state arrays {state_bytes / 1024:.1f} KiB, peak allocated '
          f'while processing {peak / 1024:.1f} KiB (inputs excluded)')

    if samples is None:
        tr = HelixTracker(rotor, params)
        samples = tr.process(ev, sample_t_us=sample_t)
    gt = truth.rpm_shaft(samples.t_us)
    late = (samples.t_us - ev.t_us[0]) >= 200_000
    if np.any(late):
        mare = np.mean(np.abs(samples.rpm_shaft[late] - gt[late]) / gt[late]) * 100
        scale = samples.q[late, 0] / args.radius
        centre = np.hypot(samples.q[late, 2] - 640.0, samples.q[late, 3] - 360.0)
        print(f'accuracy after 0.2 s: shaft-RPM MArE {mare:.4f} %, scale / truth '
              f'{scale.min():.4f} .. {scale.max():.4f}, centre error max {centre.max():.2f} px')


if __name__ == '__main__':
    main()
