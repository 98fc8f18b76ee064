# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""``helixtrack batch``: track many recordings at once on Dask (:mod:`helixtrack_ros.fleet`)."""

from __future__ import annotations

import argparse
import math
from pathlib import Path
from typing import Any

from helixtrack_ros.cli.common import output_dir


def engine_from(args: argparse.Namespace) -> Any:
    """The (not yet started) :class:`~helixtrack_ros.fleet.engine.Engine` of the options."""
    from helixtrack_ros.fleet.engine import Engine
    return Engine(args.scheduler, args.workers, args.retries, args.quiet)


def fmt(value: Any, digits: int = 1) -> str:
    """A table figure: fixed digits, NaN or empty as '-'."""
    if value in ('', None) or (isinstance(value, float) and math.isnan(value)):
        return '-'
    return f'{value:.{digits}f}' if isinstance(value, float) else str(value)


def print_batch(result: Any) -> None:
    """Per recording and rotor: status, shaft RPM, time TRACKING, MArE; then the files."""
    from helixtrack_ros.fleet.summary import summary_rows
    rows = summary_rows(result.outcomes)
    width = max([len(r['name']) for r in rows] + [9])
    print(f'{"recording":<{width}}  {"status":<11}{"rotor":<12}{"mean RPM":>10}'
          f'{"min RPM":>10}{"max RPM":>10}{"TRACKING":>10}{"MArE [%]":>10}')
    for r in rows:
        if r['rotor'] == '':
            print(f'{r["name"]:<{width}}  {r["status"]:<11}{r["message"]}')
            continue
        print(f'{r["name"]:<{width}}  {r["status"]:<11}{r["rotor"]:<12}'
              f'{fmt(r["rpm_mean"]):>10}{fmt(r["rpm_min"]):>10}{fmt(r["rpm_max"]):>10}'
              f'{fmt(r["tracking_pct"], 0) + " %":>10}{fmt(r["mare_pct"], 3):>10}')
    counts: dict[str, int] = {}
    for o in result.outcomes:
        counts[o.status] = counts.get(o.status, 0) + 1
    print(f'{len(result.outcomes)} recording(s): '
          + ', '.join(f'{n} {status}' for status, n in counts.items()))
    print('summary: ' + ', '.join(str(p) for p in result.summary))


def cmd_batch(args: argparse.Namespace) -> int:
    """``helixtrack batch``."""
    from helixtrack_ros.cli.track import load_config
    from helixtrack_ros.fleet.batch import batch_jobs, run_batch
    engine = engine_from(args)
    out = output_dir(Path(args.out))
    config = load_config(args.params, args.preset)
    jobs = batch_jobs(args.recordings, out, args.topic, args.skip)
    with engine:
        print(engine.describe(), flush=True)
        result = run_batch(jobs, config, out, engine)
    print_batch(result)
    return result.exit_code
