# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""``helixtrack demo``: simulate the default quadcopter, track it, report the errors."""

from __future__ import annotations

import argparse
from pathlib import Path

from helixtrack_ros.cli.common import CliError, output_dir, skip_problem
from helixtrack_ros.cli.simulate import simulate_to_dir
from helixtrack_ros.cli.track import track_bag
from helixtrack_ros.cli.track_report import print_track_summary, track_outcome


def cmd_demo(args: argparse.Namespace) -> int:
    """``helixtrack demo``: simulate the default quadcopter, track it, report errors."""
    from helixtrack_ros.sim.scenarios import ROTORLESS
    if args.scenario in ROTORLESS:
        raise CliError(f'scenario {args.scenario} has no rotor to track and score: demo needs '
                       'one with rotors (helixtrack simulate writes this one)')
    problem = skip_problem(args.skip, args.duration, '--duration is')
    if problem is not None:
        raise CliError(problem)
    out = output_dir(Path(args.out))
    print(f'simulating scenario "{args.scenario}" ({args.duration:g} s) ...')
    info = simulate_to_dir(args.scenario, args.duration, args.seed, out / 'scene',
                           quiet=args.quiet)
    print(f'  {info["events"]} events, {info["events"] / info["duration_s"] / 1e6:.1f} M '
          f'events/s sensor rate, written to {info["bag"]}')
    print('tracking ...')
    res = track_bag(str(info['bag']), str(info['params']), out / 'track',
                    ground_truth=str(info['ground_truth']), skip_s=args.skip,
                    quiet=args.quiet)
    print_track_summary(res, args.skip)
    print(f'plot: {out / "track" / "rpm.png"}')
    return track_outcome(res)
