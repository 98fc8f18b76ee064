# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""``helixtrack sweep``: a parameter grid on recordings with ground truth, ranked
(:mod:`helixtrack_ros.fleet.sweep`)."""

from __future__ import annotations

import argparse
from pathlib import Path
import sys
from typing import Any

from helixtrack_ros.cli.batch import engine_from, fmt
from helixtrack_ros.cli.common import CliError, output_dir

#: the ranking printed: this many configurations (ranking.csv has all)
SHOWN = 10


def print_ranking(rows: list[dict[str, Any]], axes: list[str]) -> None:
    """The best configurations: their grid values and errors."""
    names = [a.removeprefix('tracker.') for a in axes]
    widths = [max(len(n), 8) for n in names]
    print(f'{"rank":>4} {"config":<7}' + ''.join(f'{n:>{w + 2}}' for n, w in zip(names, widths))
          + f'{"mean MArE":>11}{"worst MArE":>12}{"worst scale":>13}{"TRACKING":>10}'
          f'{"missing":>9}')
    for r in rows[:SHOWN]:
        print(f'{r["rank"]:>4} {r["config"]:<7}'
              + ''.join(f'{fmt(r[a], 3):>{w + 2}}' for a, w in zip(axes, widths))
              + f'{fmt(r["mean_mare_pct"], 4) + " %":>11}'
              f'{fmt(r["worst_mare_pct"], 4) + " %":>12}'
              f'{fmt(r["worst_scale_err_pct"], 2) + " %":>13}'
              f'{fmt(r["mean_tracking_pct"], 0) + " %":>10}{r["missing"]:>9}')
    if len(rows) > SHOWN:
        print(f'... {len(rows) - SHOWN} more in ranking.csv')


def _some_recording(jobs: list[Any]) -> None:
    """Refuse a sweep where no path given is a recording at all (before: "no recording has
    ground truth beside it", as if recordings were found)."""
    from helixtrack_ros.io.recordings import recording_problem
    problems = [recording_problem(j.recording) for j in jobs]
    if all(problems):
        more = f' (and {len(problems) - 1} more)' if len(problems) > 1 else ''
        raise CliError(f'no recording found: {problems[0]}{more}')


def cmd_sweep(args: argparse.Namespace) -> int:
    """``helixtrack sweep``."""
    from helixtrack_ros.fleet.batch import batch_jobs
    from helixtrack_ros.fleet.summary import COLUMNS, write_table
    from helixtrack_ros.fleet.sweep import (
        RANK_COLUMNS,
        cell_rows,
        load_grid,
        plan,
        ranking,
        run_sweep,
        true_rotors,
    )
    engine = engine_from(args)
    grid = load_grid(Path(args.grid))
    out = output_dir(Path(args.out))
    configs = plan(grid, args.params, args.preset)
    jobs = batch_jobs(args.recordings, None, args.topic, args.skip)
    _some_recording(jobs)
    left_out = [j.recording for j in jobs if j.truth is None]
    jobs = [j for j in jobs if j.truth is not None]
    if not jobs:
        raise CliError('no recording has ground truth beside it (ground_truth.csv in its '
                       'directory, or NAME.ground_truth.csv)')
    if left_out:
        print(f'helixtrack: warning: no ground truth beside {", ".join(left_out)}: left out',
              file=sys.stderr)
    truths = true_rotors(jobs)   # (a bad ground-truth file fails before any work)
    print(f'{len(configs)} configuration(s) x {len(jobs)} recording(s) = '
          f'{len(configs) * len(jobs)} cells', flush=True)
    result = run_sweep(configs, jobs, out, engine)
    print(f'{result.computed} cell(s) computed, {result.cached} from the cache '
          f'({out / "cache"})')
    rows = ranking(result, truths, args.rank_by)
    axes = list(grid.axes)
    write_table(out / 'ranking.csv', rows, ['rank', 'config', *axes, *RANK_COLUMNS])
    write_table(out / 'cells.csv', cell_rows(result), ['config', *axes, *COLUMNS])
    print_ranking(rows, axes)
    print(f'ranking: {out / "ranking.csv"}, every cell: {out / "cells.csv"}')
    if result.interrupted:
        print('interrupted: run the same command again to go on where it stopped')
    return result.exit_code
