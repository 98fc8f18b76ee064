# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""Presets paper / release / default and each switchable deviation, on the same scenes.

Each scene is simulated once and replayed to every configuration: the three
presets (``helixtrack_ros.core.presets.PRESETS``) and, per switchable row of
``DEVIATIONS``, the default with that deviation off (its fields set to the
values of its preset, paper or release) and, with ``--paper-on``, that
preset with it on (``presets.deviation_off`` / ``deviation_on``). Scenes:
quadcopter_2m / 4m at the given egomotion levels and the low-RPM scenes of
``bench_low_rpm.py``; correct initialisation, bare trackers
(``evaluation.track_scene``), errors after 0.2 s; ``--only`` selects
presets and deviations. Rows go to a JSON-lines file as they finish (a
rerun skips the done ones; after a change of a preset or switch, run the
changed ones into a new file and append it: the report takes the last row
of each scene, configuration and rotor); ``--report`` writes
benchmarks/results/presets.md and docs/DEVIATIONS.md from it. Run by hand
(tens of minutes)::

    .venv/bin/python benchmarks/bench_presets.py --duration 1 --levels 1-6 \
        --rows benchmarks/results/presets.jsonl
    .venv/bin/python benchmarks/bench_presets.py --report --rows benchmarks/results/presets.jsonl
"""

import argparse
import json
import os
import sys
import time

from helixtrack_ros.core.presets import (
    DEVIATIONS,
    PRESETS,
    apply_preset,
    deviation_off,
    deviation_on,
)
from helixtrack_ros.evaluation import scale_drift_pct, track_scene
from helixtrack_ros.sim import Simulator, make_scenario


class _Replay:
    """Simulator stand-in that replays stored chunks (one simulation, many configs)."""

    def __init__(self, chunks: list) -> None:
        self._chunks = chunks

    def chunks(self, chunk_us: int = 1000):
        return iter(self._chunks)


def configs(deviations: bool, paper_on: bool = False,
            only: set[str] | None = None) -> dict[str, dict]:
    """Label -> TrackerParams overrides on the default: presets, 'no <deviation>' (the
    default with it off) and '<preset>+<deviation>' (the deviation's preset, paper or
    release, with it on); ``only``: these presets and deviations (None: all)."""
    out = {name: dict(PRESETS[name]) for name in PRESETS if only is None or name in only}
    for d in DEVIATIONS:
        if not d.fields or (only is not None and d.name not in only):
            continue
        if deviations:
            out[f'no {d.name}'] = deviation_off(d)
        if paper_on:
            out[f'{d.preset}+{d.name}'] = deviation_on(d)
    return out


SCENES = ('quadcopter_2m', 'quadcopter_4m', 'low_rpm', 'low_rpm_shake')


def scenes(levels: list[int], low_levels: list[int],
           names: tuple[str, ...] = SCENES) -> list[tuple[str, int]]:
    """(scene, egomotion level): quadcopter, then the low-RPM scenes (of ``names``)."""
    out = [(n, lv) for n in ('quadcopter_2m', 'quadcopter_4m') for lv in levels]
    out += [('low_rpm', lv) for lv in (1, 2, 3)]
    out += [('low_rpm_shake', lv) for lv in low_levels]
    return [(n, lv) for n, lv in out if n in names]


def run_scene(name: str, level: int, duration: float, seed: int, todo: dict[str, dict],
              fh) -> None:
    """Simulate one scene once and append one JSON row per configuration and rotor."""
    scene = make_scenario(name, duration_s=duration, ego_level=level, seed=seed)
    chunks = list(Simulator(scene, seed=seed).chunks(chunk_us=1000))
    for label, overrides in todo.items():
        t0 = time.perf_counter()
        results, _ = track_scene(scene, _Replay(chunks), params=apply_preset('default',
                                                                              overrides))
        wall = time.perf_counter() - t0
        for k, r in enumerate(results):
            row = {'scene': name, 'level': level, 'config': label, 'rotor': r.name,
                   'mare': r.errors.mare_pct, 'mae': r.errors.mae_rpm,
                   'rmse': r.errors.rmse_rpm, 'scale_max': scale_drift_pct(r, scene, k),
                   'duration': duration, 'seed': seed, 'wall': wall}
            fh.write(json.dumps(row) + '\n')
        fh.flush()
        print(name, level, label, f'{wall:.1f} s', file=sys.stderr, flush=True)


def _levels(text: str) -> list[int]:
    if '-' in text:
        a, b = text.split('-')
        return list(range(int(a), int(b) + 1))
    return [int(v) for v in text.split(',')]


def main() -> int:
    """Run the missing (scene, configuration) pairs, or write the reports."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--duration', type=float, default=1.0)
    ap.add_argument('--seed', type=int, default=0)
    ap.add_argument('--levels', default='1-6', help='egomotion levels of the quadcopter')
    ap.add_argument('--low-levels', default='3-7', help='egomotion levels of low_rpm_shake')
    ap.add_argument('--dev-levels', default='1-6',
                    help='quadcopter levels that also run the deviations (the low-RPM '
                         'scenes always do)')
    ap.add_argument('--no-deviations', action='store_true', help='presets only')
    ap.add_argument('--paper-on', action='store_true',
                    help='also the paper preset with each deviation on')
    ap.add_argument('--scenes', default=','.join(SCENES), help='comma-separated scenes')
    ap.add_argument('--only', default='',
                    help='comma-separated presets and deviation names to run (default: all)')
    ap.add_argument('--rows', default='benchmarks/results/presets.jsonl')
    ap.add_argument('--report', action='store_true', help='write the reports from --rows')
    ap.add_argument('--command', default='',
                    help='with --report: the runs behind the rows, as the reports name them '
                         '(default: this command line)')
    args = ap.parse_args()
    if args.report:
        from presets_report import write_reports  # benchmarks/presets_report.py
        write_reports(args.rows, args.command or ' '.join(sys.argv))
        return 0
    only = set(args.only.split(',')) if args.only else None
    done = set()
    if os.path.exists(args.rows):
        with open(args.rows) as fh:
            done = {(r['scene'], r['level'], r['config'])
                    for r in map(json.loads, fh)}
    dev_levels = set(_levels(args.dev_levels))
    with open(args.rows, 'a') as fh:
        for name, level in scenes(_levels(args.levels), _levels(args.low_levels),
                                  tuple(args.scenes.split(','))):
            full = not name.startswith('quadcopter') or level in dev_levels
            wanted = configs(full and not args.no_deviations, full and args.paper_on, only)
            todo = {k: v for k, v in wanted.items() if (name, level, k) not in done}
            if todo:
                run_scene(name, level, args.duration, args.seed, todo, fh)
    return 0


if __name__ == '__main__':
    sys.exit(main())
