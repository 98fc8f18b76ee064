# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""Packets lost in transport under camera motion: losses of lock and published errors.

Offline and deterministic (run by hand): a 1 s simulated quadcopter scene
goes through the pipeline under the real-time stride (16 at 2 m, 8 at 3 m /
4 m) in batches of 20 packets, the live node's overload regime, with one
run of ``--gaps`` consecutive packets dropped at ``--at`` ms. Per case: the
rotors that went LOST after the gap, the worst published shaft-RPM error
(any single output after 0.1 s, not a mean), and the longest time from the
end of the gap until a rotor is TRACKING again::

    .venv/bin/python benchmarks/bench_gaps.py --out /tmp/gaps.md
"""

import argparse
from pathlib import Path
import sys

import numpy as np
from report import emit  # benchmarks/report.py

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / 'test'))

from trust_scenes import _encoded, _raw  # noqa: E402

from helixtrack_ros.core.health import RotorState  # noqa: E402
from helixtrack_ros.evaluation import rotor_inits_from_scene  # noqa: E402
from helixtrack_ros.pipeline import PipelineConfig, TrackingPipeline  # noqa: E402
from helixtrack_ros.sim import make_scenario  # noqa: E402

SCENES = 'quadcopter_2m:5:0:16,quadcopter_4m:5:0:8,quadcopter_3m:5:1:8'


def run_case(scene, pkts, stride: int, gap: int, at: int) -> dict:
    """One scene with packets at..at+gap dropped: losses, worst error, time back."""
    keep = [i for i in range(len(pkts)) if not at <= i < at + gap]
    pipe = TrackingPipeline(PipelineConfig(rotors=rotor_inits_from_scene(scene), threads=1))
    pipe.set_stride(stride)
    res = []
    for k in range(0, len(keep), 20):
        res += pipe.process_packets(_raw(pkts, keep[k:k + 20]))
    pipe.close()
    t = np.array([r.t_us for r in res])
    gt = scene.ground_truth(t)
    t_gap, t_back = pkts[at][1], pkts[min(at + gap, len(pkts) - 1)][1]
    lost, worst, back = 0, 0.0, 0.0
    for j, rotor in enumerate(scene.rotors):
        state = np.array([int(r.rotors[j].state) for r in res])
        rpm = np.array([r.rotors[j].rpm_shaft for r in res])
        lost += int(np.any(state[t > t_gap] == RotorState.LOST))
        ok = np.nonzero((t > t_gap) & (state == RotorState.TRACKING))[0]
        back = max(back, (t[ok[0]] - t_back) / 1e3 if len(ok) else np.inf)
        m = np.isfinite(rpm) & (t > 100_000)
        truth = gt[rotor.name]['rpm'][m]
        worst = max(worst, float(np.max(np.abs(rpm[m] - truth) / truth)) * 100)
    return {'lost': lost, 'worst_pct': worst, 'back_ms': back}


def main() -> int:
    """Run every scene x gap x position; print a markdown table."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--scenes', default=SCENES, help='scenario:egomotion:seed:stride,...')
    ap.add_argument('--gaps', default='20,35,50', help='packets dropped')
    ap.add_argument('--at', default='300,500,800', help='where the gap starts [packet]')
    ap.add_argument('--out', default=None)
    args = ap.parse_args()
    gaps = [int(v) for v in args.gaps.split(',')]
    ats = [int(v) for v in args.at.split(',')]
    lines = ['| scene | ego | stride | gap [packets] | at [ms] | rotors LOST | worst published '
             'error [%] | back to TRACKING after [ms] |', '|---|---|---|---|---|---|---|---|']
    total = {'cases': 0, 'lost': 0, 'over': 0, 'worst': 0.0}
    for item in args.scenes.split(','):
        name, ego, seed, stride = item.split(':')
        scene = make_scenario(name, duration_s=1.0, ego_level=int(ego), seed=int(seed))
        pkts = _encoded(scene, int(seed))
        for gap in gaps:
            for at in ats:
                c = run_case(scene, pkts, int(stride), gap, at)
                lines.append(f"| {name} | {ego} | {stride} | {gap} | {at} | {c['lost']} | "
                             f"{c['worst_pct']:.3f} | {c['back_ms']:.0f} |")
                print(lines[-1], file=sys.stderr, flush=True)
                total['cases'] += 1
                total['lost'] += c['lost']
                total['over'] += int(c['worst_pct'] > 0.5)
                total['worst'] = max(total['worst'], c['worst_pct'])
    lines.append('')
    lines.append(f"{total['cases']} cases: {total['lost']} rotors LOST; {total['over']} cases "
                 f"with a published value more than 0.5 % off; worst {total['worst']:.3f} %.")
    emit(lines, args.out)
    return 0


if __name__ == '__main__':
    sys.exit(main())
