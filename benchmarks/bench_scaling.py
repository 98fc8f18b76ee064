# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""Offline tracking speed against the number of rotor threads (run by hand).

For each simulated 4-rotor scene, ``helixtrack track``'s loop
(:func:`track_recording`: bag reading, decoding, routing, tracking; with
``--write`` also CSV and mcap writing) runs with ``threads`` 1, 2, 4, 8,
every event tracked, best and median of ``--repeat`` runs after warm-up.
``--cpus N`` pins the process to its first N cores (the "8 cores" figure of
a bigger machine). ``--profile`` adds one run per scene at the most threads
with each rotor's kernel CPU time and the main thread's own CPU time, per
sensor second: which of them sets the ceiling. The machine, its single-core tracker speed
(``bench_tracker.py``'s scene) and the versions are printed first, so that
figures from two machines can be compared::

    .venv/bin/python benchmarks/bench_scaling.py --threads 1,2 --out /tmp/scaling
"""

import argparse
from concurrent.futures import ProcessPoolExecutor
import json
import os
from pathlib import Path
import platform
import statistics
import sys
import tempfile
import threading
import time

import numpy as np

from helixtrack_ros.cli import simulate_to_dir
from helixtrack_ros.cli.track import load_config, track_recording
from helixtrack_ros.cli.truth import read_ground_truth

DEFAULT_SCENES = 'quadcopter_3m:5,quadcopter_2m:5,quadcopter_2m:1'


def machine() -> dict:
    """CPU model, cores usable by this process, versions."""
    import numba
    model = ''
    try:
        for line in Path('/proc/cpuinfo').read_text().splitlines():
            if line.startswith('model name'):
                model = line.split(':', 1)[1].strip()
                break
    except OSError:
        pass
    return {'cpu': model or platform.processor(), 'cores_usable': len(os.sched_getaffinity(0)),
            'cores': os.cpu_count(), 'python': platform.python_version(),
            'numpy': np.__version__, 'numba': numba.__version__}


def simulate(item: tuple[str, int, float, int, str]) -> dict:
    """One scene's bag (in a worker process)."""
    name, level, duration, seed, out = item
    info = simulate_to_dir(name, duration, seed, Path(out), ego_level=level, quiet=True)
    info = {k: str(v) if isinstance(v, Path) else v for k, v in info.items()}
    (Path(out) / 'scene.json').write_text(json.dumps(info))   # (reused with --scenes-dir)
    return info


def kept(out: str) -> dict | None:
    """A scene simulated before into ``out`` (its bag, parameters, truth, rate), or None."""
    path = Path(out) / 'scene.json'
    return json.loads(path.read_text()) if path.exists() else None


def single_core_ns_per_event() -> float:
    """The tracker's ns per event on bench_tracker.py's lone rotor, best of 3 (one thread)."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / 'test'))
    from reference.synthetic_rotor import make_rotor_events

    from helixtrack_ros.core.params import RotorInit, TrackerParams
    from helixtrack_ros.core.tracker import HelixTracker
    ev, _ = make_rotor_events(1.0, 10_000.0, blades=2, radius_px=125.0,
                              center_px=(640.0, 360.0), jitter_us=5.0, noise_frac=0.02)
    rotor = RotorInit('bench', (640.0, 360.0), 125.0, 10_000.0, 2, 1)
    best = float('inf')
    for _ in range(3):
        tracker = HelixTracker(rotor, TrackerParams())
        t0 = time.perf_counter()
        tracker.process(ev)
        best = min(best, time.perf_counter() - t0)
    return best / len(ev) * 1e9


def time_scene(info: dict, threads: int, repeat: int, write: bool) -> dict:
    """Real-time factors of ``repeat`` runs with ``threads`` rotor threads."""
    config = load_config(info['params'], None)
    config.threads = threads
    truth = read_ground_truth(Path(info['ground_truth']))
    rtfs, cpus, worst = [], [], float('nan')
    for _ in range(repeat):
        with tempfile.TemporaryDirectory() as out:
            cpu0 = time.process_time()
            res = track_recording(info['bag'], config, Path(out) if write else None, truth,
                                  quiet=True)
            cpus.append((time.process_time() - cpu0) / res['sensor_s'])
        rtfs.append(res['rtf'])
        worst = max((e.mare_pct for _, e in res['table']), default=float('nan'))
    return {'threads': threads, 'rtf_best': max(rtfs), 'rtf_median': statistics.median(rtfs),
            'rtf_worst': min(rtfs), 'cpu_s_per_sensor_s': statistics.median(cpus),
            'events': res['events'], 'worst_mare_pct': worst}


def profile_scene(info: dict, threads: int) -> dict:
    """CPU seconds per sensor second: each rotor's kernel calls, the main thread's own work
    (its CPU time less the kernel calls it ran itself), the whole process."""
    from helixtrack_ros.core.tracker import HelixTracker
    config = load_config(info['params'], None)
    config.threads = threads
    kernel = HelixTracker.run_packets
    per_rotor: dict[str, float] = {}
    on_main = [0.0]
    lock = threading.Lock()

    def timed(self, *args):
        t0 = time.thread_time()
        try:
            return kernel(self, *args)
        finally:
            dt = time.thread_time() - t0
            with lock:
                per_rotor[self.rotor.name] = per_rotor.get(self.rotor.name, 0.0) + dt
                if threading.current_thread() is threading.main_thread():
                    on_main[0] += dt

    HelixTracker.run_packets = timed
    try:
        main0, cpu0 = time.thread_time(), time.process_time()
        res = track_recording(info['bag'], config, None, None, quiet=True)
        main_s = time.thread_time() - main0 - on_main[0]
        cpu_s = time.process_time() - cpu0
    finally:
        HelixTracker.run_packets = kernel
    sensor_s = res['sensor_s']
    names = {r.name for r in config.rotors} or set(res['arrays'])
    per_rotor = {k: v for k, v in per_rotor.items() if k in names}   # (not the warm-up's)
    return {'threads': threads, 'rtf': res['rtf'], 'main_own_cpu': main_s / sensor_s,
            'process_cpu': cpu_s / sensor_s,
            'rotor_cpu': {k: v / sensor_s for k, v in sorted(per_rotor.items())}}


def main() -> int:
    """Simulate, time, print a markdown table (and scaling.json with --out)."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--threads', default='1,2,4,8')
    ap.add_argument('--scenes', default=DEFAULT_SCENES, help='scenario:egomotion,...')
    ap.add_argument('--duration', type=float, default=1.0)
    ap.add_argument('--seed', type=int, default=0)
    ap.add_argument('--repeat', type=int, default=3)
    ap.add_argument('--cpus', type=int, default=0, help='pin to the first N cores (0: all)')
    ap.add_argument('--write', action='store_true',
                    help='write rpm.csv / results.mcap / plots as helixtrack track does')
    ap.add_argument('--profile', action='store_true',
                    help='per scene, one more run at the most threads: CPU per rotor and main')
    ap.add_argument('--scenes-dir', type=Path, default=None,
                    help='keep the simulated scenes here and reuse those already there')
    ap.add_argument('--out', type=Path, default=None, help='write scaling.json here')
    args = ap.parse_args()
    if args.cpus > 0:
        os.sched_setaffinity(0, sorted(os.sched_getaffinity(0))[:args.cpus])
    threads = [int(v) for v in args.threads.split(',')]
    scenes = [(s.split(':')[0], int(s.split(':')[1])) for s in args.scenes.split(',')]
    t0 = time.perf_counter()
    from helixtrack_ros.pipeline import TrackingPipeline
    TrackingPipeline.warmup()
    warm_s = time.perf_counter() - t0
    info = machine()
    info['warmup_s'] = warm_s
    info['tracker_ns_per_event'] = single_core_ns_per_event()
    print(json.dumps(info), flush=True)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        where = args.scenes_dir or Path(tmp)
        items = [(n, lv, args.duration, args.seed, f'{where}/{n}_{lv}_{args.duration:g}s_'
                  f'{args.seed}') for n, lv in scenes]
        bags = [kept(item[-1]) for item in items]
        todo = [item for item, bag in zip(items, bags) if bag is None]
        if todo:
            with ProcessPoolExecutor(max_workers=min(len(todo),
                                                     max(1, info['cores_usable']))) as ex:
                made = iter(list(ex.map(simulate, todo)))
            bags = [bag if bag is not None else next(made) for bag in bags]
        for (name, level), bag in zip(scenes, bags):
            rate = bag['events'] / bag['duration_s'] / 1e6
            for n in threads:
                timing = time_scene(bag, n, args.repeat, args.write)
                row = {'scene': name, 'ego': level, 'rate_mev_s': rate, **timing}
                rows.append(row)
                print(f"| {name} | {level} | {rate:.1f} | {n} | {row['rtf_best']:.2f} / "
                      f"{row['rtf_median']:.2f} / {row['rtf_worst']:.2f} | "
                      f"{row['cpu_s_per_sensor_s']:.2f} | {row['worst_mare_pct']:.3f} |",
                      flush=True)
            if args.profile:
                prof = profile_scene(bag, max(threads))
                rows.append({'scene': name, 'ego': level, 'profile': prof})
                rotors = ', '.join(f'{k} {v:.2f}' for k, v in prof['rotor_cpu'].items())
                print(f"profile {name} ego {level}, {prof['threads']} threads: real-time "
                      f"factor {prof['rtf']:.2f}; CPU s per sensor s: main thread's own "
                      f"{prof['main_own_cpu']:.2f}, rotors {rotors}, process "
                      f"{prof['process_cpu']:.2f}", flush=True)
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / 'scaling.json').write_text(json.dumps({'machine': info, 'rows': rows,
                                                           'argv': sys.argv[1:]}, indent=1))
    return 0


if __name__ == '__main__':
    sys.exit(main())
