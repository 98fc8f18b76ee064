#!/usr/bin/env python3
# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""CPU per packet of the pipeline under the real-time stride, and the accuracy it keeps.

Drives :class:`TrackingPipeline` with a simulated 4-rotor EVT3 stream in
batches of ``--batch`` packets (as the live node does when it falls behind)
at fixed strides; reports process CPU ms per 1 ms packet, the main thread's
share, and each rotor's shaft-RPM MArE after 0.2 s (NaN share: withheld).

    .venv/bin/python benchmarks/bench_stride.py --scenario quadcopter_2m --ego-level 5 \
        --strides 1 4 8 16
"""

from __future__ import annotations

import argparse
from pathlib import Path
import sys
import time

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / 'test'))

import node_fixtures as F  # noqa: E402, N812


def run(args: argparse.Namespace) -> None:
    from helixtrack_ros.evaluation import rotor_inits_from_scene
    from helixtrack_ros.io.packet_record import EventPacketRecord
    from helixtrack_ros.pipeline import PipelineConfig, TrackingPipeline

    scene, msgs, _ = F.sim_stream(args.scenario, args.duration, seed=1,
                                  ego_level=args.ego_level)
    packets = [EventPacketRecord(F.stamp_ns(m), '', m.height, m.width, m.seq, 0, m.encoding,
                                 False, bytes(m.events)) for m in msgs]
    TrackingPipeline.warmup()
    print(f'{args.scenario} ego {args.ego_level}, {args.duration:g} s, batches of {args.batch}, '
          f'threads {args.threads}')
    for stride in args.strides:
        pipe = TrackingPipeline(PipelineConfig(rotors=rotor_inits_from_scene(scene),
                                               threads=args.threads))
        pipe.set_stride(stride)
        rows = []   # (t_us, rpm per rotor): results keep their batch's events alive
        c0, m0 = time.process_time(), time.thread_time()
        for i in range(0, len(packets), args.batch):
            rows += [(r.t_us, [o.rpm_shaft for o in r.rotors])
                     for r in pipe.process_packets(packets[i:i + args.batch])]
        cpu, main = time.process_time() - c0, time.thread_time() - m0
        pipe.close()
        t = np.array([r[0] for r in rows])
        gt = scene.ground_truth(t)
        sel = t > 200_000
        errs = []
        for k, rotor in enumerate(scene.rotors):
            rpm = np.array([r[1][k] for r in rows])[sel]
            g = gt[rotor.name]['rpm'][sel]
            e = np.abs(rpm - g) / g
            errs.append(f'{100 * np.nanmean(e):.3f} % (NaN {100 * np.isnan(e).mean():.0f} %)')
        n_ev = pipe.counters['events_in'] / len(packets)
        print(f'stride {stride}: {n_ev:.0f} events per packet, CPU {1e3 * cpu / len(packets):.3f}'
              f' ms per packet (main thread {1e3 * main / len(packets):.3f}); MArE '
              + ', '.join(errs), flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--scenario', default='quadcopter_2m')
    ap.add_argument('--ego-level', type=int, default=5)
    ap.add_argument('--duration', type=float, default=1.0)
    ap.add_argument('--batch', type=int, default=20)
    ap.add_argument('--threads', type=int, default=1)
    ap.add_argument('--strides', type=int, nargs='+', default=[1, 4, 8])
    run(ap.parse_args())


if __name__ == '__main__':
    main()
