# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""Contested defaults on simulator variants (issue #13 point 4).

Each (variant, scene) is simulated once (``helixtrack_ros.sim.VARIANTS``: blade
shape and taper, rounded tips, contrast, per-pixel threshold spread, ON / OFF
asymmetry, background noise) and replayed to the default and to the contested
switches: q_jerk 400 against 4e6 with and without w_vm in R, the BTO band and
ratio off, the polarity model off. Correct initialisation, bare trackers
(``evaluation.track_scene``), errors after 0.2 s. Rows go to a JSON-lines file
as they finish (a rerun skips the done ones); ``--report`` prints worst MArE and
worst scale error per (variant, configuration) and writes
benchmarks/results/variants.md. Run by hand (tens of minutes)::

    .venv/bin/python benchmarks/bench_variants.py --rows benchmarks/results/variants.jsonl
    .venv/bin/python benchmarks/bench_variants.py --report
"""

import argparse
import json
import math
import os
import sys
import time

from helixtrack_ros.core.presets import DEVIATIONS, apply_preset, deviation_off
from helixtrack_ros.evaluation import scale_drift_pct, track_scene
from helixtrack_ros.sim import VARIANTS, Simulator, make_scenario

_DEV = {d.name: d for d in DEVIATIONS}

#: label -> TrackerParams overrides on the default
CONFIGS: dict[str, dict] = {
    'default': {},
    'q_jerk 400': {'q_jerk': 400.0},
    'q_jerk 400 + R without w_vm': {'q_jerk': 400.0, 'ekf_r_vm': 0},
    'R without w_vm': {'ekf_r_vm': 0},
    'no bto_bounds': deviation_off(_DEV['bto_bounds']),
    'no bto_bands': deviation_off(_DEV['bto_bands']),
    'no bto_ratio': deviation_off(_DEV['bto_ratio']),
    'no pol_adapt': {'pol_adapt': 0},
    'no ekf_polarity': {'ekf_polarity': 0},
}
SCENES = ('lone_sweep:1', 'lone_sweep:5', 'quadcopter_2m:1', 'quadcopter_2m:5',
          'quadcopter_4m:1', 'quadcopter_4m:5')
#: a rotor with a larger shaft-RPM MArE [%] counts as lost
LOST_PCT = 5.0


class _Replay:
    """Simulator stand-in that replays stored chunks (one simulation, many configs)."""

    def __init__(self, chunks: list) -> None:
        self._chunks = chunks

    def chunks(self, chunk_us: int = 1000):
        return iter(self._chunks)


def run_scene(variant: str, name: str, level: int, duration: float, seed: int,
              todo: dict[str, dict], fh) -> None:
    """Simulate one variant of one scene once; one JSON row per configuration and rotor."""
    scene = make_scenario(name, duration_s=duration, ego_level=level, seed=seed,
                          variant=variant)
    t0 = time.perf_counter()
    chunks = list(Simulator(scene, seed=seed).chunks(chunk_us=1000))
    n_ev = sum(len(c) for c in chunks)
    print(variant, name, level, f'{n_ev / duration / 1e6:.1f} M ev/s, simulated in '
          f'{time.perf_counter() - t0:.0f} s', file=sys.stderr, flush=True)
    for label, overrides in todo.items():
        results, _ = track_scene(scene, _Replay(chunks),
                                 params=apply_preset('default', overrides))
        for k, r in enumerate(results):
            row = {'variant': variant, 'scene': name, 'level': level, 'config': label,
                   'rotor': r.name, 'mare': r.errors.mare_pct,
                   'scale_max': scale_drift_pct(r, scene, k), 'duration': duration,
                   'seed': seed, 'mev_s': n_ev / duration / 1e6}
            fh.write(json.dumps(row) + '\n')
        fh.flush()


def _finite(v) -> float:
    return v if v is not None and math.isfinite(v) else math.inf


def cell(rows: list[dict]) -> str:
    """'worst MArE / worst scale error % (lost k)' over rotors (lost: MArE > LOST_PCT)."""
    if not rows:
        return '-'
    mare = max(_finite(r['mare']) for r in rows)
    scale = max(_finite(r['scale_max']) for r in rows)
    lost = sum(_finite(r['mare']) > LOST_PCT for r in rows)
    m = f'{mare:.0f}' if mare > LOST_PCT else f'{mare:.3f}'
    s = f'{scale:.0f}' if scale >= 100 else f'{scale:.1f}'
    return f'{m} / {s}' + (f' ({lost} lost)' if lost else '')


def report(path: str, out: str, command: str) -> str:
    """Markdown tables from the rows (last row wins); also written to ``out``."""
    rows: dict[tuple, dict] = {}
    with open(path) as fh:
        for line in fh:
            r = json.loads(line)
            rows[(r['variant'], r['scene'], r['level'], r['config'], r['rotor'])] = r
    rows_l = list(rows.values())
    variants = [v for v in VARIANTS if any(r['variant'] == v for r in rows_l)]
    configs = [c for c in CONFIGS if any(r['config'] == c for r in rows_l)]
    scenes = sorted({(r['scene'], r['level']) for r in rows_l})
    dur = sorted({r['duration'] for r in rows_l})
    lines = ['# Contested defaults on simulator variants', '',
             f'Command: `{command}`; scenes: '
             + ', '.join(f'{n} ego {lv}' for n, lv in scenes)
             + f'; {", ".join(map(str, dur))} s, seed 0, correct initialisation, bare '
             'trackers, errors after 0.2 s. Each cell: worst shaft-RPM MArE [%] / worst max '
             f'scale error [%] over all rotors of those scenes; (k lost): rotors with MArE > '
             f'{LOST_PCT:g} %. Variants: `helixtrack_ros.sim.VARIANTS`.', '']
    for part in ('all', 'lone', 'quad'):
        sel = [r for r in rows_l if part == 'all' or r['scene'].startswith(
            'lone' if part == 'lone' else 'quadcopter')]
        if not sel:
            continue
        lines += [f'## {"All scenes" if part == "all" else part}', '',
                  '| config | ' + ' | '.join(variants) + ' |',
                  '|---|' + '---|' * len(variants)]
        for c in configs:
            cells = [cell([r for r in sel if r['variant'] == v and r['config'] == c])
                     for v in variants]
            lines.append(f'| {c} | ' + ' | '.join(cells) + ' |')
        lines.append('')
    for v in variants:
        have = {(r['scene'], r['level']) for r in rows_l if r['variant'] == v}
        if have != set(scenes):
            lines += [f'{v}: measured on ' + ', '.join(f'{n} ego {lv}' for n, lv in scenes
                                                       if (n, lv) in have) + ' only.', '']
    rate = {(r['variant'], r['scene'], r['level']): r['mev_s'] for r in rows_l}
    lines += ['Event rates [M events/s] per variant, scenes in the order above: '
              + '; '.join(f'{v}: ' + ', '.join(f'{rate.get((v, *sc), math.nan):.1f}'
                                              for sc in scenes) for v in variants), '']
    text = '\n'.join(lines)
    with open(out, 'w') as fh:
        fh.write(text)
    return text


def main() -> int:
    """Run the missing (variant, scene, configuration) triples, or write the report."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--duration', type=float, default=0.5)
    ap.add_argument('--seed', type=int, default=0)
    ap.add_argument('--variants', default=','.join(VARIANTS))
    ap.add_argument('--scenes', default=','.join(SCENES), help='name:egomotion, comma-separated')
    ap.add_argument('--configs', default=','.join(CONFIGS))
    ap.add_argument('--rows', default='benchmarks/results/variants.jsonl')
    ap.add_argument('--report', action='store_true', help='write the report from --rows')
    ap.add_argument('--out', default='benchmarks/results/variants.md')
    ap.add_argument('--command', default='', help='with --report: the runs behind the rows')
    args = ap.parse_args()
    if args.report:
        print(report(args.rows, args.out, args.command or ' '.join(sys.argv)))
        return 0
    done = set()
    if os.path.exists(args.rows):
        with open(args.rows) as fh:
            done = {(r['variant'], r['scene'], r['level'], r['config'])
                    for r in map(json.loads, fh)}
    configs = {c: CONFIGS[c] for c in args.configs.split(',')}
    with open(args.rows, 'a') as fh:
        for variant in args.variants.split(','):
            for spec in args.scenes.split(','):
                name, level = spec.split(':')
                todo = {k: v for k, v in configs.items()
                        if (variant, name, int(level), k) not in done}
                if todo:
                    run_scene(variant, name, int(level), args.duration, args.seed, todo, fh)
    return 0


if __name__ == '__main__':
    sys.exit(main())
