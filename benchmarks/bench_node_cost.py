#!/usr/bin/env python3
# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""The node's fixed CPU cost per packet: everything but decoding and tracking events.

An in-process ``HelixtrackNode`` with the real pipeline (4 rotors of a
simulated quadcopter) gets serialized 1 ms EVT3 packets through its
subscription callback, one call per packet (the node keeping up), with a
stream thinned so that events cost little (``--thin``). Reports CPU ms per
packet (process time, all threads) and, with ``--profile``, the top
functions by own time. A second run with the pipeline's tracking replaced
by nothing separates the node's share from the pipeline's.

    .venv/bin/python benchmarks/bench_node_cost.py --packets 2000 --thin 200
"""

from __future__ import annotations

import argparse
from collections import Counter
import cProfile
from pathlib import Path
import pstats
import sys
import time

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / 'test'))

import node_fixtures as F  # noqa: E402, N812  (sets the local-only DDS environment)


def _params(scene) -> dict:
    from helixtrack_ros.evaluation import rotor_inits_from_scene
    tree = {'rotor_names': [], 'rotors': {}}
    for r in rotor_inits_from_scene(scene):
        tree['rotor_names'].append(r.name)
        tree['rotors'][r.name] = {'center_px': list(r.center_px), 'radius_px': r.radius_px,
                                  'rpm': r.rpm_shaft, 'blades': r.blades,
                                  'direction': r.direction}
    return tree


def _count_states(node) -> Counter:
    """A counter of the rotor states the node's pipeline gives from now on (the cost of a
    packet depends on them: a rotor not TRACKING takes the recovery path)."""
    states: Counter = Counter()
    pipe = node._pipe
    process = pipe.process_packets

    def counted(packets):
        results = process(packets)
        states.update(o.state.name for r in results for o in r.rotors)
        return results
    pipe.process_packets = counted
    return states


def run(args: argparse.Namespace) -> None:
    import rclpy
    from rclpy.parameter import Parameter
    from rclpy.serialization import serialize_message

    from helixtrack_ros.io.params_file import flatten
    from helixtrack_ros.pipeline import TrackingPipeline
    from helixtrack_ros.ros.node import HelixtrackNode

    scene, msgs, _ = F.sim_stream(args.scenario, args.packets / 1000.0, seed=1,
                                  ego_level=args.ego_level, thin=args.thin)
    raw = [serialize_message(m) for m in msgs]
    n_events = sum(len(m.events) for m in msgs) // 2
    TrackingPipeline.warmup()
    ctx = rclpy.Context()
    rclpy.init(context=ctx)
    overrides = [Parameter(k, value=v) for k, v in flatten(_params(scene)).items()]
    overrides.append(Parameter('threads', value=args.threads))
    node = HelixtrackNode(context=ctx, parameter_overrides=overrides)
    try:
        warm = len(raw) // 10
        for m in raw[:warm]:
            node._on_packet(m)
        states = _count_states(node)
        prof = cProfile.Profile() if args.profile else None
        c0, w0 = time.process_time(), time.perf_counter()
        if prof:
            prof.enable()
        for m in raw[warm:]:
            node._on_packet(m)
        if prof:
            prof.disable()
        cpu, wall = time.process_time() - c0, time.perf_counter() - w0
        n = len(raw) - warm
        print(f'scenario {args.scenario} ego {args.ego_level}, thin {args.thin}: '
              f'{n_events / len(raw):.0f} events per packet, {n} packets timed, '
              f'threads {args.threads}')
        print(f'CPU {1e3 * cpu / n:.3f} ms per packet, wall {1e3 * wall / n:.3f} ms per packet')
        total = max(sum(states.values()), 1)
        print('rotor outputs of the timed packets: ' + ', '.join(
            f'{name} {100.0 * k / total:.0f} %' for name, k in states.most_common()))
        if prof:
            pstats.Stats(prof).sort_stats('tottime').print_stats(args.profile)
    finally:
        node.destroy_node()
        rclpy.try_shutdown(context=ctx)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--scenario', default='quadcopter_4m')
    ap.add_argument('--ego-level', type=int, default=1)
    ap.add_argument('--packets', type=int, default=2000)
    ap.add_argument('--thin', type=int, default=200, help='keep every k-th event')
    ap.add_argument('--threads', type=int, default=1)
    ap.add_argument('--profile', type=int, default=0, help='print the top N functions')
    run(ap.parse_args())


if __name__ == '__main__':
    main()
