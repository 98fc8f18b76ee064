# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""Simulator throughput and the sensor event rates of the named scenarios.

Prints, per scenario and egomotion level, the sensor event rate (events per second
of scene time, to compare with TQE: ~60 M ev/s on average) and the generation speed
(events generated per second of wall time on one core, numba compile excluded).

Usage::

    .venv/bin/python benchmarks/bench_sim.py [--duration 0.25] [--quick]
"""

import argparse
import time

from helixtrack_ros.sim import SCENARIOS, Simulator, make_scenario


def run(name: str, level: int | None, duration_s: float) -> dict:
    """Simulate one scene, return its rates."""
    scene = make_scenario(name, duration_s=duration_s, ego_level=level, seed=1)
    sim = Simulator(scene, seed=0)
    n = 0
    n_rotor_px = 0
    t0 = time.perf_counter()
    for chunk in sim.chunks(20_000):
        n += len(chunk)
    wall = time.perf_counter() - t0
    for r in scene.rotors:
        n_rotor_px += int(3.14159 * r.radius_px ** 2)
    return {'name': name, 'level': scene.ego_level, 'events': n,
            'scene_rate': n / duration_s, 'gen_rate': n / wall, 'wall_s': wall,
            'hint': sim.event_rate_hint()}


def main() -> None:
    """Run the benchmark table."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--duration', type=float, default=0.25, help='scene length [s]')
    ap.add_argument('--quick', action='store_true', help='only the three headline runs')
    args = ap.parse_args()
    # warm-up: compile (or load) every kernel on tiny scenes
    for name, lvl in (('lone_constant', 0), ('background_only', 3)):
        Simulator(make_scenario(name, 0.02, lvl)).all_events()
    runs = [('quadcopter_2m', 1), ('quadcopter_2m', 7), ('lone_constant', None)]
    if not args.quick:
        runs += [('quadcopter_4m', lv) for lv in (1, 3, 5, 7)]
        runs += [('quadcopter_2m', lv) for lv in (3, 5)]
        runs += [(n, None) for n in SCENARIOS if n not in ('lone_constant',)]
    print(f'{"scenario":16s} {"ego":>3s} {"events":>10s} {"sensor Mev/s":>12s} '
          f'{"hint Mev/s":>10s} {"gen Mev/s":>10s} {"wall s":>7s}')
    for name, lvl in runs:
        r = run(name, lvl, args.duration)
        print(f'{r["name"]:16s} {r["level"]:3d} {r["events"]:10d} {r["scene_rate"] / 1e6:12.1f} '
              f'{r["hint"] / 1e6:10.1f} {r["gen_rate"] / 1e6:10.1f} {r["wall_s"]:7.2f}',
              flush=True)


if __name__ == '__main__':
    main()
