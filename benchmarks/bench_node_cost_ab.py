#!/usr/bin/env python3
# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""The node's fixed CPU cost per packet, two source trees A/B in one process.

``bench_node_cost.py`` run on a loaded machine varies by up to 2x from run to
run (it falls into a fast and a slow group), more than a change of 10 % can
show. Here both trees' packages are loaded side by side (each imported with
the other's ``helixtrack_ros`` modules out of ``sys.modules``; their
functions keep their own modules) and an in-process ``HelixtrackNode`` of
each (``--pipeline``: a ``TrackingPipeline`` of each) gets the same
serialized packets through its subscription callback, the trees taking turns
every ``--chunk`` packets: the machine's load falls on both alike. Reports
the main thread's CPU time per packet of each and B/A per chunk (an A/A run
gives 1.00).

    .venv/bin/python benchmarks/bench_node_cost_ab.py /path/to/main .
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import replace
import importlib
from pathlib import Path
import statistics
import sys
import time
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / 'test'))

import node_fixtures as F  # noqa: E402, N812  (sets the local-only DDS environment)

_MODULES = ('helixtrack_ros.ros.node', 'helixtrack_ros.ros.main', 'helixtrack_ros.pipeline',
            'helixtrack_ros.io.params_file', 'helixtrack_ros.io.event_packet_cdr')


def _ours() -> list[str]:
    return [k for k in sys.modules if k == 'helixtrack_ros' or k.startswith('helixtrack_ros.')]


def load_tree(tree: str) -> dict[str, Any]:
    """Import the package of ``tree`` (its modules, by name), compile its kernels."""
    for k in _ours():
        del sys.modules[k]
    sys.path.insert(0, tree)
    try:
        mods = {m: importlib.import_module(m) for m in _MODULES}
    finally:
        sys.path.remove(tree)
    here = Path(mods['helixtrack_ros.ros.node'].__file__).resolve()
    if not here.is_relative_to(Path(tree).resolve()):
        raise SystemExit(f'{tree}: imported {here} instead')
    mods['helixtrack_ros.pipeline'].TrackingPipeline.warmup()
    return {k: sys.modules[k] for k in _ours()}


def make_step(mods: dict[str, Any], name: str, params: dict[str, Any],
              pipeline_only: bool) -> tuple[Callable[[bytes], None], Callable[[], None]]:
    """(feed one serialized packet, close) for a node (or pipeline) of these modules."""
    for k in _ours():
        del sys.modules[k]
    sys.modules.update(mods)              # (for imports made while it is built)
    import rclpy
    from rclpy.parameter import Parameter
    flat = mods['helixtrack_ros.io.params_file'].flatten(params)
    if pipeline_only:
        pipeline = mods['helixtrack_ros.pipeline']
        config = pipeline.PipelineConfig.from_ros_params(flat | {'realtime_stride': True})
        pipe = pipeline.TrackingPipeline(replace(config, detect_in_background=True))
        parse = mods['helixtrack_ros.io.event_packet_cdr'].parse_event_packet
        return (lambda raw: pipe.process_packets([parse(raw)])), pipe.close
    ctx = rclpy.Context()
    rclpy.init(context=ctx)
    overrides = [Parameter(k, value=v) for k, v in flat.items()]
    overrides.append(Parameter('threads', value=1))
    node = mods['helixtrack_ros.ros.node'].HelixtrackNode(name, context=ctx,
                                                         parameter_overrides=overrides)

    def close() -> None:
        node.destroy_node()
        rclpy.try_shutdown(context=ctx)
    return node._on_packet, close


def run(args: argparse.Namespace) -> None:
    from bench_node_cost import _params
    from rclpy.serialization import serialize_message
    scene, msgs, _ = F.sim_stream(args.scenario, args.packets / 1000.0, seed=1,
                                  ego_level=args.ego_level, thin=args.thin)
    raw = [serialize_message(m) for m in msgs]
    params = _params(scene)
    trees = [load_tree(args.a), load_tree(args.b)]
    per_chunk: list[list[float]] = [[], []]
    total = [0, 0]
    timed = 0
    for rep in range(args.reps):
        steps = [make_step(t, f'helixtrack_{i}_{rep}', params, args.pipeline)
                 for i, t in enumerate(trees)]
        warm = len(raw) // 10
        for step, _ in steps:
            for m in raw[:warm]:
                step(m)
        order = (0, 1)
        for c0 in range(warm, len(raw), args.chunk):
            chunk = raw[c0:c0 + args.chunk]
            for i in order:
                step = steps[i][0]
                t0 = time.thread_time_ns()
                for m in chunk:
                    step(m)
                dt = time.thread_time_ns() - t0
                per_chunk[i].append(dt / len(chunk) / 1e3)
                total[i] += dt
            timed += len(chunk)
            order = order[::-1]
        for _, close in steps:
            close()
    for i, tree in enumerate((args.a, args.b)):
        c = sorted(per_chunk[i])
        print(f'{"AB"[i]} {tree}: {total[i] / timed / 1e3:.1f} us per packet (thread CPU), '
              f'per chunk median {statistics.median(c):.1f}, p10 {c[len(c) // 10]:.1f}')
    ratios = [b / a for a, b in zip(*per_chunk)]
    print(f'B/A per chunk: median {statistics.median(ratios):.3f}; '
          f'totals {total[1] / total[0]:.3f}')


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('a', help='source tree A (the repository root)')
    ap.add_argument('b', help='source tree B')
    ap.add_argument('--scenario', default='quadcopter_4m')
    ap.add_argument('--ego-level', type=int, default=1)
    ap.add_argument('--packets', type=int, default=3000)
    ap.add_argument('--thin', type=int, default=200, help='keep every k-th event')
    ap.add_argument('--chunk', type=int, default=50, help='packets per turn')
    ap.add_argument('--reps', type=int, default=1, help='fresh nodes, this many times')
    ap.add_argument('--pipeline', action='store_true', help='the pipelines only, no node')
    run(ap.parse_args())


if __name__ == '__main__':
    main()
