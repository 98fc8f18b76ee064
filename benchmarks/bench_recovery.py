# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""Recovery after induced losses: how long until a rotor is TRACKING with the right RPM again.

The paper's tracker never re-initialises after a failure (Sec. 4.4 and
Limitations). Here each simulated scene gets one induced loss of one rotor
(scenario options of :func:`helixtrack_ros.sim.make_scenario`):

- ``hide``: the rotor emits no event for 200 ms (occlusion);
- ``jump30``: its image jumps by 30 % of its tip radius in a random direction;
- ``jump90``: a jump of 90 % of the radius, which needs a re-detection.

The events go through :class:`helixtrack_ros.pipeline.TrackingPipeline`
(health, re-detection, re-initialisation) in 1 ms batches. Reported per
scene and loss: time from the loss start until the rotor is LOST, and the
recovery time, from the end of the loss (the jump, or the end of the
occlusion) until the rotor is TRACKING with a shaft RPM within 2 % of the
truth and stays so for 50 ms; ``redetected`` counts runs that used a
re-detection. Run by hand (a few minutes)::

    .venv/bin/python benchmarks/bench_recovery.py --seeds 4 --out benchmarks/results_recovery.md
"""

import argparse
import math
import platform
import sys
import time

import numpy as np
from report import emit  # benchmarks/report.py

from helixtrack_ros.core.health import LOST, TRACKING
from helixtrack_ros.evaluation import rotor_inits_from_scene
from helixtrack_ros.pipeline import PipelineConfig, TrackingPipeline
from helixtrack_ros.sim import Simulator, make_scenario

SCENES = [('lone_constant', 0), ('lone_sweep', 1), ('quadcopter_4m', 2), ('quadcopter_2m', 1),
          ('low_rpm', 1), ('low_rpm_shake', 4)]
LOSSES = ('hide', 'jump30', 'jump90')
T_LOSS_S = 0.25
HIDE_S = 0.2
TOL = 0.02
HOLD_US = 50_000


def run_one(name: str, level: int, seed: int, loss: str) -> dict:
    """Simulate one scene with one induced loss through the pipeline; return the timings."""
    plain = make_scenario(name, duration_s=0.1, ego_level=level, seed=seed)
    names = [r.name for r in plain.rotors]
    rotor = names[seed % len(names)]
    rng = np.random.default_rng([seed, 99])
    if loss == 'hide':
        opts = {'hide_rotor': (rotor, T_LOSS_S, T_LOSS_S + HIDE_S)}
        t_end_loss = T_LOSS_S + HIDE_S
    else:
        frac = 0.3 if loss == 'jump30' else 0.9
        ang = rng.uniform(0.0, 2.0 * math.pi)
        opts = {'jump': (rotor, T_LOSS_S, frac * math.cos(ang), frac * math.sin(ang))}
        t_end_loss = T_LOSS_S
    duration = t_end_loss + 0.3
    scene = make_scenario(name, duration_s=duration, ego_level=level, seed=seed, **opts)
    k = names.index(rotor)
    truth = scene.rotors[k]
    pipe = TrackingPipeline(PipelineConfig(rotors=rotor_inits_from_scene(scene), threads=1))
    t_rows, ok_rows, lost_rows = [], [], []
    wall = time.perf_counter()
    for chunk in Simulator(scene, seed=seed).chunks(chunk_us=1000):
        outs = pipe.process_events(chunk)
        if not outs:
            continue
        o = outs[k]
        gt = float(truth.rpm_shaft(np.array([o.t_us]))[0])
        t_rows.append(o.t_us)
        ok_rows.append(o.health == TRACKING and abs(o.rpm_shaft - gt) <= TOL * gt)
        lost_rows.append(o.health == LOST)
    wall = time.perf_counter() - wall
    pipe.close()
    t = np.array(t_rows)
    ok = np.array(ok_rows)
    lost = np.array(lost_rows)
    t_loss = int(T_LOSS_S * 1e6)
    t_back = int(t_end_loss * 1e6)
    after_loss = np.nonzero((t >= t_loss) & lost)[0]
    detect_ms = (t[after_loss[0]] - t_loss) / 1e3 if after_loss.size else math.nan
    recover_ms = math.nan
    for i in np.nonzero((t >= t_back) & ok)[0]:
        hold = (t >= t[i]) & (t <= t[i] + HOLD_US)
        if t[i] + HOLD_US <= t[-1] and ok[hold].all():
            recover_ms = (t[i] - t_back) / 1e3
            break
    return {'scene': name, 'level': level, 'seed': seed, 'rotor': rotor, 'loss': loss,
            'lost_ms': detect_ms, 'recover_ms': recover_ms,
            'redetected': pipe.counters['recoveries'] > 0,
            'attempts': pipe.counters['recovery_attempts'], 'wall_s': wall}


def main() -> int:
    """Run the grid, print and optionally write a markdown table."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--seeds', type=int, default=4)
    ap.add_argument('--scenes', default=','.join(f'{n}:{lv}' for n, lv in SCENES),
                    help='comma-separated name:ego_level')
    ap.add_argument('--losses', default=','.join(LOSSES))
    ap.add_argument('--out', default=None)
    args = ap.parse_args()
    scenes = [(s.split(':')[0], int(s.split(':')[1])) for s in args.scenes.split(',')]
    rows = []
    for name, level in scenes:
        for loss in args.losses.split(','):
            for seed in range(args.seeds):
                row = run_one(name, level, seed, loss)
                rows.append(row)
                print(row, file=sys.stderr, flush=True)
    lines = [
        f'Machine: {platform.processor() or platform.machine()}, Python '
        f'{platform.python_version()}; command: `{" ".join(sys.argv)}`.',
        f'Loss at {T_LOSS_S} s; recovery = end of the loss until TRACKING with shaft RPM within '
        f'{100 * TOL:.0f} % for {HOLD_US // 1000} ms (pipeline with health and re-detection, '
        '1 ms batches).',
        '',
        '| scene | ego | loss | runs | LOST after [ms] (median) | recovery [ms] median | p90 '
        '| max | re-detected | not recovered |',
        '|---|---|---|---|---|---|---|---|---|---|',
    ]
    all_rec = []
    for name, level in scenes:
        for loss in args.losses.split(','):
            sel = [r for r in rows if r['scene'] == name and r['loss'] == loss]
            rec = np.array([r['recover_ms'] for r in sel])
            fin = rec[np.isfinite(rec)]
            all_rec += list(rec)
            lost = np.array([r['lost_ms'] for r in sel])
            lost = lost[np.isfinite(lost)]

            def fmt(v: float) -> str:
                return f'{v:.0f}' if np.isfinite(v) else '-'

            lines.append(
                f'| {name} | {level} | {loss} | {len(sel)} | '
                f'{fmt(np.median(lost)) if lost.size else "never"} | '
                f'{fmt(np.median(fin)) if fin.size else "-"} | '
                f'{fmt(np.percentile(fin, 90)) if fin.size else "-"} | '
                f'{fmt(fin.max()) if fin.size else "-"} | '
                f'{sum(r["redetected"] for r in sel)} | {int(np.sum(~np.isfinite(rec)))} |')
    arr = np.array(all_rec)
    fin = arr[np.isfinite(arr)]
    lines += ['', f'All runs: {len(arr)}; recovered {fin.size}; within 150 ms '
                  f'{int(np.sum(fin <= 150))}; median {np.median(fin):.0f} ms, p90 '
                  f'{np.percentile(fin, 90):.0f} ms, max {fin.max():.0f} ms.']
    emit(lines, args.out)
    return 0


if __name__ == '__main__':
    sys.exit(main())
