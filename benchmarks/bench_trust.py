#!/usr/bin/env python3
# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""Live node under load: does it keep lock, and is every published number a measurement?

For each quadcopter scene (distance x egomotion level) a simulated EVT3
stream is played into a fresh ``helixtrack_node`` process over loopback DDS
at real pace (this process is the player; the node is another process on
the same cores), with the real-time stride policy on, ``--runs`` times in a
row. Per run, from ``~/rotors`` and ``~/health``:

- losses of lock: a rotor that was TRACKING becomes LOST or STARVED;
- worst rotor's shaft-RPM MArE of the published (finite) values;
- share of NaN (withheld) rotor values after the rotor first locked;
- recovery time of each loss (sensor time until TRACKING again);
- packets lost in transport, the stride, whether the node kept up.

Run by hand (idle machine; DDS stays on loopback)::

    .venv/bin/python benchmarks/bench_trust.py --runs 10 --out benchmarks/results/trust.md
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path
import shutil
import sys
import tempfile
import time

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / 'test'))
sys.path.insert(0, str(ROOT / 'benchmarks'))

import bench_node as B  # noqa: E402, N812
import node_fixtures as F  # noqa: E402, N812

FQN = B.FQN
BASE_NS = B.BASE_NS
LOSS_STATES = ('LOST', 'STARVED')


def _rotor_tracks(joints: list, health: list, names: list[str]) -> dict:
    """Per rotor: sensor times [us], shaft RPM (NaN withheld) and state names."""
    by_stamp = {F.stamp_ns(h): h for h in health}
    t_us = np.array([(F.stamp_ns(j) - BASE_NS) / 1000.0 for j in joints])
    out = {}
    for k, name in enumerate(names):
        rpm = np.array([abs(j.velocity[k]) * 60.0 / (2.0 * math.pi) for j in joints])
        states = [by_stamp[F.stamp_ns(j)].status[k].values[0].value
                  if F.stamp_ns(j) in by_stamp else '?' for j in joints]
        out[name] = (t_us, rpm, states)
    return out


def _episodes(t_us: np.ndarray, states: list[str]) -> tuple[int, list[float]]:
    """Losses of lock after the first TRACKING, and their recovery times [ms] (inf: none)."""
    losses, recovery_ms = 0, []
    locked, lost_at = False, None
    for t, s in zip(t_us.tolist(), states):
        if s == 'TRACKING':
            if lost_at is not None:
                recovery_ms.append((t - lost_at) / 1000.0)
                lost_at = None
            locked = True
        elif locked and s in LOSS_STATES and lost_at is None:
            losses += 1
            lost_at = t
    if lost_at is not None:
        recovery_ms.append(math.inf)
    return losses, recovery_ms


def score_run(scene, joints: list, health: list, skip_us: float = 100_000) -> dict:
    """Losses, worst MArE, NaN share and recovery times of one run's outputs."""
    if not joints:
        return {'losses': 0, 'mare_pct': math.nan, 'nan_pct': math.nan, 'recovery_ms': []}
    names = list(joints[0].name)
    tracks = _rotor_tracks(joints, health, names)
    losses, rec, worst, withheld, counted = 0, [], 0.0, 0, 0
    for rotor in scene.rotors:
        t_us, rpm, states = tracks[rotor.name]
        n, r = _episodes(t_us, states)
        losses += n
        rec += r
        first = next((i for i, s in enumerate(states) if s == 'TRACKING'), len(states))
        counted += len(states) - first
        withheld += int(np.count_nonzero(~np.isfinite(rpm[first:])))
        keep = (t_us >= skip_us) & (t_us <= scene.duration_us) & np.isfinite(rpm)
        if keep.any():
            gt = scene.ground_truth(t_us[keep])[rotor.name]['rpm']
            worst = max(worst, 100.0 * float(np.mean(np.abs(rpm[keep] - gt) / gt)))
        else:
            worst = math.inf
    return {'losses': losses, 'mare_pct': worst,
            'nan_pct': 100.0 * withheld / max(counted, 1), 'recovery_ms': rec}


def one_run(scene, packets, args, tmp: Path) -> dict:
    """A fresh node, one real-pace play of the stream; the run's figures."""
    from diagnostic_msgs.msg import DiagnosticArray
    from sensor_msgs.msg import JointState

    from helixtrack_ros.io.params_file import rotor_params_tree
    tree = rotor_params_tree(scene.initial_rotor_params())
    tree['diagnostics_period_s'] = 0.1
    tree['realtime_stride'] = True
    tree['max_batch_packets'] = int(args.max_batch)
    if args.max_stride is not None:
        tree['max_stride'] = int(args.max_stride)
    params = F.write_params_file(tmp / 'params.yaml', tree)
    proc = F.NodeProcess(['--params-file', str(params), '-r', '__ns:=/bench',
                          '-r', '~/events:=/bench/events'], log_dir=tmp)
    probe = F.Probe('trust_probe')
    try:
        joints = probe.collect(JointState, FQN + '/rotors', depth=100_000)
        health = probe.collect(DiagnosticArray, FQN + '/health', depth=100_000)
        probe.collect(DiagnosticArray, '/diagnostics')
        pub = probe.events_publisher('/bench/events')
        probe.wait_matched(pub, [FQN + '/rotors', FQN + '/health', '/diagnostics'],
                           timeout=120)
        seq = probe.prime(pub, lambda p=probe: int(B._values(p).get('packets', 0)) > 0,
                          start_ns=BASE_NS - 10**9)
        probe.clear(FQN + '/health')
        res = B._one_pace(probe, pub, proc, packets, args.pace, seq, joints, args)
        time.sleep(0.3)
        js, hs = [m for _, m in list(joints)], [m for _, m in list(health)]
        res.update(score_run(scene, js, hs))
        if args.dump and (res['losses'] or not res['mare_pct'] < 0.5):
            _dump(tmp / 'outputs.npz', scene, js, hs)
            print(f'    outputs and node log kept in {tmp}', flush=True)
    finally:
        probe.close()
        proc.stop()
    return res


def _dump(path: Path, scene, joints: list, health: list) -> None:
    """Keep a bad run's outputs (per rotor: time, RPM, state) and the truth for study."""
    names = list(joints[0].name)
    data = {}
    for name, (t_us, rpm, states) in _rotor_tracks(joints, health, names).items():
        data[f'{name}_t_us'] = t_us
        data[f'{name}_rpm'] = rpm
        data[f'{name}_state'] = np.array(states)
        inside = (t_us >= 0) & (t_us <= scene.duration_us)
        data[f'{name}_gt'] = np.where(
            inside, scene.ground_truth(np.clip(t_us, 0, scene.duration_us))[name]['rpm'],
            np.nan)
    np.savez(path, **data)


def _fmt_rec(rec: list[float]) -> str:
    if not rec:
        return '-'
    finite = [r for r in rec if math.isfinite(r)]
    never = len(rec) - len(finite)
    parts = [f'max {max(finite):.0f} ms'] if finite else []
    if never:
        parts.append(f'{never} never')
    return ', '.join(parts)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('--scenes', nargs='+', default=['quadcopter_2m', 'quadcopter_3m',
                                                     'quadcopter_4m'])
    ap.add_argument('--egos', nargs='+', type=int, default=[1, 3, 5])
    ap.add_argument('--runs', type=int, default=10)
    ap.add_argument('--duration', type=float, default=2.0, help='stream length [s]')
    ap.add_argument('--pace', type=float, default=1.0, help='1.0: real pace')
    ap.add_argument('--max-batch', type=int, default=20)
    ap.add_argument('--max-stride', type=int, default=None,
                    help="the node's max_stride (default: the node's default)")
    ap.add_argument('--lag-ms', type=float, default=50.0)
    ap.add_argument('--out', type=Path, default=None, help='append the table to this file')
    ap.add_argument('--dump', action='store_true',
                    help='keep the outputs of runs with a loss or a MArE over 0.5 %%')
    args = ap.parse_args(argv)
    lines = [f'command: bench_trust.py {" ".join(sys.argv[1:] if argv is None else argv)}',
             '', '| scene | ego | runs | runs with a loss | losses | worst MArE [%] | '
             'NaN share [%] (worst run) | recovery | packets lost (worst run) | '
             'stride | kept up |', '|---|---|---|---|---|---|---|---|---|---|---|']
    print('\n'.join(lines), flush=True)
    for scenario in args.scenes:
        for ego in args.egos:
            scene, packets, _ = F.sim_stream(scenario, args.duration, seed=1, ego_level=ego,
                                             base_ns=BASE_NS)
            runs = []
            for i in range(args.runs):
                tmp = Path(tempfile.mkdtemp(prefix='bench_trust_'))
                r = one_run(scene, packets, args, tmp)
                shutil.rmtree(tmp, ignore_errors=True)   # (kept when the run failed)
                runs.append(r)
                print(f'  {scenario} ego {ego} run {i + 1}: losses {r["losses"]}, worst MArE '
                      f'{r["mare_pct"]:.3f} %, NaN {r["nan_pct"]:.2f} %, recovery '
                      f'{_fmt_rec(r["recovery_ms"])}, lost {r["lost"]} packets, stride '
                      f'{r["stride"]}, {"keeps up" if r["kept_up"] else "behind"}', flush=True)
            row = (f'| {scenario} | {ego} | {len(runs)} | '
                   f'{sum(r["losses"] > 0 for r in runs)} | {sum(r["losses"] for r in runs)} | '
                   f'{max(r["mare_pct"] for r in runs):.3f} | '
                   f'{max(r["nan_pct"] for r in runs):.2f} | '
                   f'{_fmt_rec([x for r in runs for x in r["recovery_ms"]])} | '
                   f'{max(r["lost"] for r in runs)} | '
                   f'{"/".join(sorted({str(r["stride"]) for r in runs}))} | '
                   f'{sum(r["kept_up"] for r in runs)} of {len(runs)} |')
            lines.append(row)
            print(row, flush=True)
    if args.out is not None:
        with args.out.open('a') as fh:
            fh.write('\n'.join(lines) + '\n\n')
    return 0


if __name__ == '__main__':
    sys.exit(main())
